// A layer chain from a file, with its operands as NumPy .npy files, and results written back as
// .npy (docs/compiler.md, "Layer files"): so that a chain can be checked against NumPy.
//
//   {"x": "x.npy",                                  m x k
//    "layers": [{"w": "w0.npy", "b": "b0.npy", "relu": true},   k x n0, n0
//               {"w": "w1.npy"}]}                   n0 x n1, no bias, no ReLU
//
// Paths are relative to the JSON file. x and the weights are float32 (rounded to bf16, to
// nearest even) or uint16 (bf16 bit patterns); biases float32 (1-D, or 1 x n). Every layer's output but
// the last is rounded to bf16, as on the chip.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "shard.h"

namespace tp::driver {

struct LayerFile {
  Chain chain;
  ChainOperands operands;
  uint64_t rounded = 0;  // float32 values of x and the weights that bf16 does not hold exactly
};
// Throws DriverError naming the file and what is wrong (a missing key, a shape that does not
// chain, a dtype other than float32 or uint16, a file that is not .npy).
LayerFile load_layer_file(const std::filesystem::path&);

// fp32 bit patterns (row-major rows x cols) as a float32 .npy file. Throws DriverError.
void save_npy_fp32(const std::filesystem::path&, uint32_t rows, uint32_t cols, const std::vector<uint32_t>& bits);

}  // namespace tp::driver
