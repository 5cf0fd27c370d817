// The sharding compiler (docs/compiler.md, "Sharding"): a layer chain, a mesh (the slice's
// shape) and a sharding to one program per chip of the slice, with the collectives inserted, as
// GSPMD does it for JAX:
//   batch=AXES   the batch (the rows of x) split over those mesh axes, the weights replicated
//                (data parallel): no collective;
//   model=AXES   the weights split over those axes (model parallel), layer by layer:
//                cols  by output columns: each chip computes its columns, and an all-gather
//                      joins them when the next layer needs the whole activation;
//                k     by the contraction dimension: each chip multiplies its block of the
//                      input's columns by its rows of W, an all-reduce sums the partial
//                      products, and a vector epilogue adds the bias, applies ReLU and rounds;
//                the default (megatron) alternates cols and k, so that a cols layer's column
//                blocks are exactly the next k layer's input blocks and only the k layers
//                communicate.
// Both at once on a 2D slice (batch=x,model=y): every row of the slice is a batch group, its
// chips a model group. Blocks are whole beats (n = mxu.n columns): the chip at model index q
// gets the beats [q*B, (q+1)*B) of the split dimension, B = ceil(beats / group size), so the
// last chips may get fewer columns or none.
//
// Arithmetic: data parallel and cols give the 1-chip result bit for bit (every element is the
// same sum in the same order). k changes the order: each chip sums its K-tiles, and the
// all-reduce adds the partial sums in ring order (docs/collectives.md); the reference below
// computes that order, so the golden pod and the RTL pod give its bits, and the run reports how
// far it is from the 1-chip result.
//
// A chip program is a row of segments (isa::build's segment protocol, instr_build.h): a compiled
// run of layers that need no communication, the collective, the epilogue, and so on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectives.h"
#include "compiler.h"
#include "slice.h"

namespace tp::driver {

// One layer of a chain: n output columns, a bias and ReLU; every layer's output but the last is
// rounded to bf16, the next layer's A operand (as run_mlp does).
struct ChainLayer {
  uint32_t n = 0;
  bool bias = true, relu = true;
};
// x[m, k] through the layers.
struct Chain {
  uint32_t m = 0, k = 0;
  std::vector<ChainLayer> layers;
};
// The chain of the tool's --mlp D0xD1x...xDn: m = D0, k = D1, then a layer of D(i) columns for
// each further dimension, with a bias everywhere and ReLU on all layers but the last.
Chain mlp_chain(const std::vector<uint32_t>& dims);
std::string chain_name(const Chain&);  // "mlp 64x32x48x16"

enum class Split { cols, k };
std::string_view split_name(Split);  // "cols", "k"

// Mesh axes as a mask: bit 0 the slice's x (its width), bit 1 its y.
inline constexpr unsigned kAxisX = 1, kAxisY = 2;
// A k layer's all-reduce in row blocks, each beside the next block's matmul (docs/compiler.md
// "Sharding"), where the blocks keep the algorithm: off, on, or automatic (the default: both
// compiled, the one with fewer cycles on the golden pod's timing estimate kept; it reloads the
// weights for every block and may need more segments, so it is not always faster).
enum class Overlap { off, on, automatic };

struct Sharding {
  unsigned batch = 0, model = 0;  // disjoint masks
  std::vector<Split> splits;      // per layer (model != 0); empty: megatron (cols, k, cols, ...)
  std::optional<Split> every;     // instead of splits: every layer split the same way
  Overlap overlap = Overlap::automatic;
};
// "batch=x", "model=y", "batch=x,model=y", "model=xy:cols", "model=y:cols/k/k", "" (every chip
// computes everything), each with ",overlap" (on), ",overlap=off" or ",overlap=auto" (the default)
// too. Throws DriverError naming the bad part.
Sharding parse_sharding(std::string_view);
std::string sharding_name(const Sharding&);

// The operands: x (m x k bf16), per layer W (k_i x n_i bf16) and the bias (n_i fp32, empty
// without bias), row-major.
struct ChainOperands {
  std::vector<uint16_t> x;
  std::vector<std::vector<uint16_t>> w;
  std::vector<std::vector<uint32_t>> b;
};
// Throws DriverError for an empty chain or one with a matrix larger than a chip's HBM (checked
// before any operand is drawn).
void check_chain(const Preset&, const Chain&);
ChainOperands random_operands(const Chain&, uint64_t seed);  // as run_mlp draws them
// Throws DriverError when the sizes do not match the chain.
void check_operands(const Chain&, const ChainOperands&);

// The 1-chip result (row-major m x n_last; bf16 in bits 15:0 for all but the last layer).
std::vector<uint32_t> chain_reference(const Preset&, const Chain&, const ChainOperands&);

// The programs and where everything lives. Every chip has the same HBM layout.
struct ShardProgram {
  Chain chain;
  Sharding sharding;  // splits resolved, one per layer; overlap resolved (on or off)
  unsigned w = 1, h = 1;
  unsigned groups = 1, group_size = 1;  // batch groups and model group size
  std::vector<isa::Program> programs;   // by slice index i + j * w
  uint64_t hbm_beats = 0;               // HBM every chip uses
  uint64_t collectives = 0;             // collective segments per chip (the most any chip has)
  std::string summary;                  // one line per layer: its split and its communication
  // Internal (shard.cpp): what the host writes and reads.
  struct Write {
    unsigned k;
    uint64_t beat;
    std::vector<uint32_t> words;
  };
  std::vector<Write> writes;
  struct Read {
    unsigned k;           // slice index
    uint64_t beat;        // a rows x cols matrix (padded beats) at beat
    uint32_t row0, rows;  // its place in the output: rows [row0, row0 + rows)
    uint32_t col0, cols;  // and columns [col0, col0 + cols)
  };
  std::vector<Read> reads;         // the output's pieces; each element read from one chip
  std::vector<uint32_t> expected;  // the sharded reference (row-major m x n_last)
};
// Throws DriverError (a sharding that does not fit the mesh, a batch smaller than its groups, a
// program longer than the instruction memory, VMEM or HBM too small) or CompileError.
ShardProgram compile_sharded(const Preset&, const Chain&, const Sharding&, unsigned w, unsigned h,
                             const ChainOperands&);

struct ShardRun {
  std::string what;
  SliceStatus status;
  bool pass = false;        // status.ok() and the output bit-exact with the sharded reference
  uint64_t mismatches = 0;  // elements that differ from it
  // Against the 1-chip result: elements that differ (0 for data parallel and cols) and the
  // largest difference over the largest magnitude of the 1-chip result.
  uint64_t one_chip_differences = 0;
  double one_chip_max_rel = 0;
  uint64_t instructions = 0;  // the longest chip program
  uint64_t collectives = 0;
  std::string summary;
  std::vector<uint32_t> output;  // row-major m x n_last, empty when the run failed
};
ShardRun run_sharded(Slice&, const Chain&, const Sharding&, const ChainOperands&, uint64_t timeout_cycles = 0);

}  // namespace tp::driver
