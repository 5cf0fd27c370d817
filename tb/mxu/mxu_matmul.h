// Host-side tiling of a matmul onto the MXU: K and the output columns in tiles of n (zero
// padded), rows streamed into accumulator rows, tiles over K accumulated in increasing order,
// the accumulator read back when full. Mirrors tp::golden::mxu_matmul, which does the same
// additions in the same order.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include "mxu_harness.h"

namespace tp::tb {

struct MatmulShape {
  unsigned m = 0, k = 0, ncols = 0;
};

// The weight tile (kt, ct) of B (k x ncols, row-major), zero padded to n x n.
inline std::vector<uint16_t> weight_tile(unsigned n, const MatmulShape& s, std::span<const uint16_t> b, unsigned kt,
                                         unsigned ct) {
  std::vector<uint16_t> w(std::size_t{n} * n, 0);
  for (unsigned i = 0; i < n && kt * n + i < s.k; ++i)
    for (unsigned j = 0; j < n && ct * n + j < s.ncols; ++j)
      w[std::size_t{i} * n + j] = b[std::size_t{kt * n + i} * s.ncols + ct * n + j];
  return w;
}

// Row r of A (m x k), K tile kt, zero padded to n.
inline std::vector<uint16_t> act_row(unsigned n, const MatmulShape& s, std::span<const uint16_t> a, unsigned r,
                                     unsigned kt) {
  std::vector<uint16_t> row(n, 0);
  for (unsigned i = 0; i < n && kt * n + i < s.k; ++i) row[i] = a[std::size_t{r} * s.k + kt * n + i];
  return row;
}

// C = A x B on the MXU; returns C (m x ncols fp32 bit patterns).
template <class Top>
std::vector<uint32_t> run_matmul(MxuHarness<Top>& h, unsigned acc_rows, const MatmulShape& s,
                                 std::span<const uint16_t> a, std::span<const uint16_t> b) {
  const unsigned n = h.n();
  if (s.m == 0 || s.k == 0 || s.ncols == 0) throw std::invalid_argument("run_matmul: empty shape");
  if (a.size() != std::size_t{s.m} * s.k || b.size() != std::size_t{s.k} * s.ncols)
    throw std::invalid_argument(fmt::format("run_matmul: operands do not match {}x{}x{}", s.m, s.k, s.ncols));
  const unsigned ktiles = (s.k + n - 1) / n, ctiles = (s.ncols + n - 1) / n;
  const unsigned chunk = std::min(s.m, acc_rows);
  std::vector<uint32_t> c(std::size_t{s.m} * s.ncols, 0u);

  struct Pass {
    unsigned ct, m0, rows, base;
  };
  std::vector<Pass> pending;
  unsigned base = 0;
  auto flush = [&] {
    for (const Pass& p : pending) {
      const auto rows = h.read_rows(p.base, p.rows);
      for (unsigned r = 0; r < p.rows; ++r)
        for (unsigned j = 0; j < n && p.ct * n + j < s.ncols; ++j)
          c[std::size_t{p.m0 + r} * s.ncols + p.ct * n + j] = rows[r][j];
    }
    pending.clear();
    base = 0;
  };

  for (unsigned ct = 0; ct < ctiles; ++ct) {
    for (unsigned m0 = 0; m0 < s.m; m0 += chunk) {
      const unsigned rows = std::min(chunk, s.m - m0);
      if (base + rows > acc_rows) flush();
      for (unsigned kt = 0; kt < ktiles; ++kt) {
        h.queue_weights(weight_tile(n, s, b, kt, ct));
        for (unsigned r = 0; r < rows; ++r) h.queue_row(act_row(n, s, a, m0 + r, kt), r == 0, base + r, kt > 0);
      }
      pending.push_back({ct, m0, rows, base});
      base += rows;
    }
  }
  flush();
  return c;
}

}  // namespace tp::tb
