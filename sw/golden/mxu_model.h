// Golden model of the MXU (rtl/mxu): the same fp32 additions in the same order as the RTL.
//
// A row's result for column j is ((((+0 + a0*w0j) + a1*w1j) + ...) + a(n-1)*w(n-1)j); a result
// either overwrites its accumulator row or is added to it element-wise. A matmul larger than the
// array is tiled by the host: K and the output columns in tiles of n (zero padded), tiles over K
// summed in increasing order (the first overwrites, the rest accumulate).
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

namespace tp::golden {

class MxuModel {
 public:
  MxuModel(unsigned n, unsigned acc_rows);

  unsigned n() const { return n_; }
  unsigned acc_rows() const { return acc_rows_; }

  // Load an n x n weight tile (row-major, W[i][j] at i*n+j) into the shadow buffer.
  void load_weights(std::span<const uint16_t> tile);
  // Make the shadow tile the current one (what a row flagged "first" does).
  void switch_tile();
  bool has_tile() const { return has_tile_; }

  // One activation row (n bf16) through the current tile: n fp32 column sums.
  std::vector<uint32_t> row(std::span<const uint16_t> a) const;

  // Write a result row to the accumulator memory (overwrite or accumulate).
  void write_acc(unsigned addr, std::span<const uint32_t> result, bool accumulate);
  std::span<const uint32_t> read_acc(unsigned addr) const;

 private:
  unsigned n_, acc_rows_;
  std::vector<uint16_t> weights_[2];
  int current_ = 1;
  bool has_tile_ = false;
  std::vector<uint32_t> acc_;
};

// Reference matmul C = A x B as the tiled MXU computes it: A is m x k bf16 (row-major),
// B is k x ncols bf16 (row-major), C is m x ncols fp32 bit patterns.
std::vector<uint32_t> mxu_matmul(unsigned n, unsigned m, unsigned k, unsigned ncols, std::span<const uint16_t> a,
                                 std::span<const uint16_t> b);

}  // namespace tp::golden
