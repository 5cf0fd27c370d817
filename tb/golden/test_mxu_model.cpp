// The golden MXU model's own consistency: the tile-level transaction API and the whole-matmul
// reference agree, and simple products are right.
#include <gtest/gtest.h>

#include <random>

#include "fp.h"
#include "mxu_model.h"

namespace {
using namespace tp::golden;

TEST(MxuModel, IdentityTileReturnsTheRow) {
  constexpr unsigned n = 4;
  MxuModel m(n, 8);
  std::vector<uint16_t> eye(n * n, 0);
  for (unsigned i = 0; i < n; ++i) eye[i * n + i] = 0x3f80;
  m.load_weights(eye);
  m.switch_tile();
  const std::vector<uint16_t> a = {0x3f80, 0xc040, 0x0000, 0x4120};
  const auto out = m.row(a);
  for (unsigned j = 0; j < n; ++j) EXPECT_EQ(out[j], bf16_to_fp32(a[j]));
}

TEST(MxuModel, MatmulAgreesWithTiledTransactions) {
  constexpr unsigned n = 4, m = 5, k = 9, ncols = 6;
  std::mt19937 rng(7);
  std::vector<uint16_t> a(m * k), b(k * ncols);
  for (auto& x : a) x = Bf16::from_float(std::uniform_real_distribution<float>(-4, 4)(rng)).bits;
  for (auto& x : b) x = Bf16::from_float(std::uniform_real_distribution<float>(-4, 4)(rng)).bits;
  const auto c = mxu_matmul(n, m, k, ncols, a, b);

  MxuModel model(n, m);
  const unsigned ktiles = (k + n - 1) / n, ctiles = (ncols + n - 1) / n;
  for (unsigned ct = 0; ct < ctiles; ++ct) {
    for (unsigned kt = 0; kt < ktiles; ++kt) {
      std::vector<uint16_t> w(n * n, 0);
      for (unsigned i = 0; i < n; ++i)
        for (unsigned j = 0; j < n; ++j)
          if (kt * n + i < k && ct * n + j < ncols) w[i * n + j] = b[(kt * n + i) * ncols + ct * n + j];
      model.load_weights(w);
      model.switch_tile();
      for (unsigned r = 0; r < m; ++r) {
        std::vector<uint16_t> row(n, 0);
        for (unsigned i = 0; i < n; ++i)
          if (kt * n + i < k) row[i] = a[r * k + kt * n + i];
        model.write_acc(r, model.row(row), kt > 0);
      }
    }
    for (unsigned r = 0; r < m; ++r)
      for (unsigned j = 0; j < n && ct * n + j < ncols; ++j)
        EXPECT_EQ(model.read_acc(r)[j], c[r * ncols + ct * n + j]) << r << "," << ct * n + j;
  }
}

TEST(MxuModel, SmallIntegersAreExact) {
  // Small integers multiply and add exactly, so the result is the integer matmul.
  constexpr unsigned n = 4, m = 3, k = 7, ncols = 5;
  std::vector<uint16_t> a(m * k), b(k * ncols);
  std::vector<float> af(m * k), bf(k * ncols);
  for (unsigned i = 0; i < m * k; ++i) a[i] = Bf16::from_float(af[i] = static_cast<float>(int(i % 7) - 3)).bits;
  for (unsigned i = 0; i < k * ncols; ++i) b[i] = Bf16::from_float(bf[i] = static_cast<float>(int(i % 5) - 2)).bits;
  const auto c = mxu_matmul(n, m, k, ncols, a, b);
  for (unsigned r = 0; r < m; ++r)
    for (unsigned col = 0; col < ncols; ++col) {
      float want = 0;
      for (unsigned i = 0; i < k; ++i) want += af[r * k + i] * bf[i * ncols + col];
      EXPECT_EQ(fp32_value(c[r * ncols + col]), want);
    }
}

TEST(MxuModel, RejectsBadArguments) {
  MxuModel m(4, 2);
  EXPECT_THROW(m.load_weights(std::vector<uint16_t>(15)), std::invalid_argument);
  EXPECT_THROW(m.write_acc(2, std::vector<uint32_t>(4), false), std::out_of_range);
  EXPECT_THROW(m.read_acc(9), std::out_of_range);
}

}  // namespace
