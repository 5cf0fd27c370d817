#include "mxu_model.h"

#include <fmt/format.h>

#include "fp.h"

namespace tp::golden {

MxuModel::MxuModel(unsigned n, unsigned acc_rows) : n_(n), acc_rows_(acc_rows), acc_(std::size_t{acc_rows} * n, 0u) {
  if (n == 0 || acc_rows == 0) throw std::invalid_argument("MxuModel: n and acc_rows must be positive");
  weights_[0].assign(std::size_t{n} * n, 0);
  weights_[1].assign(std::size_t{n} * n, 0);
}

void MxuModel::load_weights(std::span<const uint16_t> tile) {
  if (tile.size() != std::size_t{n_} * n_)
    throw std::invalid_argument(fmt::format("MxuModel: weight tile has {} values, expected {}", tile.size(), n_ * n_));
  auto& shadow = weights_[1 - current_];
  shadow.assign(tile.begin(), tile.end());
}

void MxuModel::switch_tile() {
  current_ = 1 - current_;
  has_tile_ = true;
}

std::vector<uint32_t> MxuModel::row(std::span<const uint16_t> a) const {
  if (a.size() != n_)
    throw std::invalid_argument(fmt::format("MxuModel: row has {} values, expected {}", a.size(), n_));
  const auto& w = weights_[current_];
  std::vector<uint32_t> out(n_, 0u);
  for (unsigned j = 0; j < n_; ++j) {
    uint32_t acc = 0;
    for (unsigned i = 0; i < n_; ++i) acc = bf16_mac(acc, a[i], w[std::size_t{i} * n_ + j]);
    out[j] = acc;
  }
  return out;
}

void MxuModel::write_acc(unsigned addr, std::span<const uint32_t> result, bool accumulate) {
  if (addr >= acc_rows_) throw std::out_of_range(fmt::format("MxuModel: accumulator row {} >= {}", addr, acc_rows_));
  uint32_t* dst = &acc_[std::size_t{addr} * n_];
  for (unsigned j = 0; j < n_; ++j) dst[j] = accumulate ? fp32_add(dst[j], result[j]) : result[j];
}

std::span<const uint32_t> MxuModel::read_acc(unsigned addr) const {
  if (addr >= acc_rows_) throw std::out_of_range(fmt::format("MxuModel: accumulator row {} >= {}", addr, acc_rows_));
  return {&acc_[std::size_t{addr} * n_], n_};
}

std::vector<uint32_t> mxu_matmul(unsigned n, unsigned m, unsigned k, unsigned ncols, std::span<const uint16_t> a,
                                 std::span<const uint16_t> b) {
  if (a.size() != std::size_t{m} * k || b.size() != std::size_t{k} * ncols)
    throw std::invalid_argument("mxu_matmul: operand sizes do not match m, k, ncols");
  std::vector<uint32_t> c(std::size_t{m} * ncols, 0u);
  const unsigned ktiles = (k + n - 1) / n;
  for (unsigned r = 0; r < m; ++r) {
    for (unsigned col = 0; col < ncols; ++col) {
      uint32_t total = 0;
      for (unsigned kt = 0; kt < ktiles; ++kt) {
        // One tile's column sum over all n rows of the tile; padding adds (+0 * +0) = +0 terms.
        uint32_t sum = 0;
        for (unsigned i = 0; i < n; ++i) {
          const unsigned kk = kt * n + i;
          const uint16_t av = kk < k ? a[std::size_t{r} * k + kk] : 0;
          const uint16_t bv = kk < k ? b[std::size_t{kk} * ncols + col] : 0;
          sum = bf16_mac(sum, av, bv);
        }
        total = kt == 0 ? sum : fp32_add(total, sum);
      }
      c[std::size_t{r} * ncols + col] = total;
    }
  }
  return c;
}

}  // namespace tp::golden
