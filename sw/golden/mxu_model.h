// Golden model of the MXU (rtl/mxu): the same fp32 additions in the same order as the RTL.
//
// A row's result for column j is ((((+0 + a0*w0j) + a1*w1j) + ...) + a(n-1)*w(n-1)j); a result
// either overwrites its accumulator row or is added to it element-wise. A matmul larger than the
// array is tiled by the host: K and the output columns in tiles of n (zero padded), tiles over K
// summed in increasing order (the first overwrites, the rest accumulate).
//
// The kernels behind rows() (mxu_model.cpp) work on many columns at once with SIMD, but each
// column's sum is still the sequence above, one rounding per addition, so every variant gives the
// bits of bf16_mac applied one MAC at a time (fp.h).
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "lazy_zero.h"

namespace tp::golden {

namespace detail {
// 16 columns of one weight row, fp32 with denormals already flushed: the unit the kernels load.
// 64-byte aligned (one cache line, one AVX-512 vector); std::vector honours the alignment.
struct alignas(64) MxuWeightLine {
  float w[16];
};
}  // namespace detail

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
  // Whole rows at once, without allocating per row: `a` holds count rows of n bf16 (row-major),
  // `out` receives their count rows of n results. Same bits as row() on each row.
  void rows(std::span<const uint16_t> a, std::span<uint32_t> out) const;

  // Write a result row to the accumulator memory (overwrite or accumulate).
  void write_acc(unsigned addr, std::span<const uint32_t> result, bool accumulate);
  std::span<const uint32_t> read_acc(unsigned addr) const;

 private:
  unsigned n_, acc_rows_;
  // The two tiles (shadow and current) as the kernels read them, converted once by load_weights:
  // column block b (columns 16b..16b+15, zero padded) is n lines, line i at b * n + i.
  std::vector<detail::MxuWeightLine> weights_[2];
  int current_ = 1;
  bool has_tile_ = false;
  LazyZeroWords acc_;  // untouched rows cost no memory (lazy_zero.h)
};

// Reference matmul C = A x B as the tiled MXU computes it: A is m x k bf16 (row-major),
// B is k x ncols bf16 (row-major), C is m x ncols fp32 bit patterns.
std::vector<uint32_t> mxu_matmul(unsigned n, unsigned m, unsigned k, unsigned ncols, std::span<const uint16_t> a,
                                 std::span<const uint16_t> b);

// The arithmetic kernels behind MxuModel::rows (and so row() and mxu_matmul), all bit-identical:
// "scalar" (one MAC at a time through fp.h, any host) and, on x86-64, "default" (the baseline
// SSE2), "avx2" and "avx512f" (SIMD across output columns). The fastest one the host supports is
// used unless one is selected. For tests and benchmarks; the selection is process-wide.
std::vector<std::string_view> mxu_kernels();       // every variant built in, slowest first
bool mxu_kernel_supported(std::string_view name);  // built in and runnable on this host
void mxu_select_kernel(std::string_view name);     // "" = the automatic choice; throws
                                                   // std::invalid_argument if not supported
std::string_view mxu_kernel();                     // the variant rows() uses now

}  // namespace tp::golden
