// The golden MXU model's own consistency: the tile-level transaction API and the whole-matmul
// reference agree, and simple products are right. Its SIMD kernels (every variant this host runs)
// against the definition, bf16_mac one MAC at a time, on random and hand-made tiles.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "bf16_random.h"
#include "fp.h"
#include "mxu_model.h"
#include "tb_util.h"

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
  EXPECT_THROW(m.row(std::vector<uint16_t>(5)), std::invalid_argument);
  std::vector<uint32_t> out(8);
  EXPECT_THROW(m.rows(std::vector<uint16_t>(6), std::span(out).first(6)), std::invalid_argument);  // not whole rows
  EXPECT_THROW(m.rows(std::vector<uint16_t>(8), std::span(out).first(4)), std::invalid_argument);  // too few results
  EXPECT_NO_THROW(m.rows({}, {}));
}

// The kernels behind rows() against the definition. Each variant the build has is a parameter;
// the ones this host cannot run are skipped, so on an AVX-512 machine the portable variants
// ("scalar", "default") are tested alongside the one the machine would pick.

// The definition: bf16_mac down each column from +0, weight row 0 first (what row() computed
// before the SIMD kernels). w is the n x n tile (row-major), a holds whole rows of n.
std::vector<uint32_t> reference_rows(unsigned n, const std::vector<uint16_t>& w, const std::vector<uint16_t>& a) {
  std::vector<uint32_t> out(a.size());
  for (std::size_t r = 0; r < a.size() / n; ++r)
    for (unsigned j = 0; j < n; ++j) {
      uint32_t acc = 0;
      for (unsigned i = 0; i < n; ++i) acc = bf16_mac(acc, a[r * n + i], w[std::size_t{i} * n + j]);
      out[r * n + j] = acc;
    }
  return out;
}

// What the random tiles exercised, counted on the definition's intermediate values, so that a
// change to the value generator cannot quietly leave a case out.
struct Events {
  uint64_t denormal_input = 0;      // a bf16 operand with a zero exponent and a nonzero fraction
  uint64_t nan_payload_input = 0;   // a NaN operand other than the canonical one
  uint64_t inf_times_zero = 0;      // inf x (+-0 or denormal): NaN
  uint64_t denormal_product = 0;    // an IEEE product below 2^-126 (flushed)
  uint64_t product_min_normal = 0;  // a product of exactly +-2^-126 (kept)
  uint64_t denormal_sum = 0;        // an IEEE partial sum below 2^-126 (flushed)
  uint64_t sum_min_normal = 0;      // a partial sum of exactly +-2^-126
  uint64_t daz_matters = 0;         // the next step differs if that denormal sum were not flushed
  uint64_t cancellation = 0;        // nonzero partial sum + nonzero product = +0
  uint64_t overflow = 0;            // finite partial sum + finite product = +-inf
  uint64_t neg_zero_result = 0;     // a column ending in -0
  uint64_t nan_result = 0;          // a column ending in NaN
};

void count_events(unsigned n, const std::vector<uint16_t>& w, const std::vector<uint16_t>& a, Events& ev) {
  auto finite = [](uint32_t x) { return (x & kFp32Inf) != kFp32Inf; };
  for (std::size_t r = 0; r < a.size() / n; ++r)
    for (unsigned j = 0; j < n; ++j) {
      uint32_t acc = 0, prev_sum = 0;
      for (unsigned i = 0; i < n; ++i) {
        const uint16_t x = a[r * n + i], y = w[std::size_t{i} * n + j];
        const uint32_t fx = fp32_flush(bf16_to_fp32(x)), fy = fp32_flush(bf16_to_fp32(y));
        ev.denormal_input += fp32_is_denormal(bf16_to_fp32(x)) + fp32_is_denormal(bf16_to_fp32(y));
        ev.nan_payload_input += (bf16_is_nan(x) && x != kBf16QNaN) + (bf16_is_nan(y) && y != kBf16QNaN);
        const bool inf_x = (fx & 0x7fffffffu) == kFp32Inf, inf_y = (fy & 0x7fffffffu) == kFp32Inf;
        ev.inf_times_zero += (inf_x && (fy << 1) == 0) || (inf_y && (fx << 1) == 0);
        const uint32_t raw_product = fp32_bits(fp32_value(fx) * fp32_value(fy));
        ev.denormal_product += fp32_is_denormal(raw_product);
        ev.product_min_normal += (raw_product & 0x7fffffffu) == 0x00800000u;
        const uint32_t p = bf16_mul(x, y);
        const uint32_t raw_sum = fp32_bits(fp32_value(acc) + fp32_value(p));
        const uint32_t next = bf16_mac(acc, x, y);
        if (fp32_is_denormal(prev_sum))
          ev.daz_matters += fp32_canon(fp32_bits(fp32_value(prev_sum) + fp32_value(p))) != next;
        ev.denormal_sum += fp32_is_denormal(raw_sum);
        ev.sum_min_normal += (raw_sum & 0x7fffffffu) == 0x00800000u;
        ev.cancellation += (acc << 1) != 0 && (p << 1) != 0 && raw_sum == 0;
        ev.overflow += finite(acc) && finite(p) && (next & 0x7fffffffu) == kFp32Inf;
        prev_sum = raw_sum;
        acc = next;
      }
      ev.neg_zero_result += acc == 0x80000000u;
      ev.nan_result += fp32_is_nan(acc);
    }
}

// The kinds of random operands.
enum class Mix { ordinary, exact, underflow, specials, any_bits };
constexpr std::array kMixes = {Mix::ordinary, Mix::exact, Mix::underflow, Mix::specials, Mix::any_bits};
const char* mix_name(Mix m) {
  constexpr std::array names = {"ordinary", "exact", "underflow", "specials", "any_bits"};
  return names[static_cast<unsigned>(m)];
}

uint16_t draw(std::mt19937_64& rng, Mix mix, unsigned n) {
  // 1, 1.5, 2, 3 and 0.5: products of these cancel exactly now and then.
  constexpr std::array<uint16_t, 5> kSmall = {0x3f80, 0x3fc0, 0x4000, 0x4040, 0x3f00};
  const double x = std::uniform_real_distribution<double>(0, 1)(rng);
  const auto sign = static_cast<uint16_t>((rng() & 1u) << 15);
  switch (mix) {
    case Mix::ordinary:  // moderate values, some from the small set, some zeros
      if (x < 0.10) return sign | kSmall[rng() % kSmall.size()];
      if (x < 0.15) return sign;
      return tp::tb::random_bf16(rng, tp::tb::ValueMix{120, 134, 0.0});
    case Mix::exact:  // the small set and zeros only: sums are exact, and often cancel to +0
      return x < 0.2 ? sign : static_cast<uint16_t>(sign | kSmall[rng() % kSmall.size()]);
    case Mix::underflow:
      // Around 2^-63 (0x2000), so that products and partial sums fall on both sides of 2^-126.
      if (x < 0.10) return sign | 0x2000;
      if (x < 0.15) return sign | static_cast<uint16_t>(1 + rng() % 0x7f);  // denormal
      if (x < 0.20) return sign;
      return tp::tb::random_bf16(rng, tp::tb::ValueMix{58, 69, 0.0});
    case Mix::specials:  // ordinary values and, about three times per row or column, a special one
      if (x < 1.0 / n) return tp::tb::kBf16Specials[rng() % tp::tb::kBf16Specials.size()];
      if (x < 1.5 / n) return sign | 0x7f80 | static_cast<uint16_t>(1 + rng() % 0x7f);    // NaN, any payload
      if (x < 3.0 / n) return tp::tb::random_bf16(rng, tp::tb::ValueMix{185, 254, 0.0});  // products overflow
      return draw(rng, Mix::ordinary, n);
    case Mix::any_bits:
      return static_cast<uint16_t>(rng());
  }
  return 0;
}

std::vector<uint16_t> draw_many(std::mt19937_64& rng, Mix mix, unsigned n, std::size_t count) {
  std::vector<uint16_t> v(count);
  for (auto& x : v) x = draw(rng, mix, n);
  return v;
}

// rows() on the tile, and row() on the first rows, against the definition: the first difference.
testing::AssertionResult matches_definition(unsigned n, const std::vector<uint16_t>& w,
                                            const std::vector<uint16_t>& a) {
  MxuModel m(n, 1);
  m.load_weights(w);
  m.switch_tile();
  std::vector<uint32_t> got(a.size());
  m.rows(a, got);
  const auto want = reference_rows(n, w, a);
  for (std::size_t k = 0; k < got.size(); ++k) {
    if (got[k] == want[k]) continue;
    const std::size_t r = k / n, j = k % n;
    std::string column;
    for (unsigned i = 0; i < std::min(n, 16u); ++i)
      column += fmt::format(" {:04x}*{:04x}", a[r * n + i], w[std::size_t{i} * n + j]);
    return testing::AssertionFailure() << fmt::format("rows(): row {} column {}: got {:#010x}, want {:#010x}", r, j,
                                                      got[k], want[k])
                                       << "; a*w down the column:" << column << (n > 16 ? " ..." : "");
  }
  for (std::size_t r = 0; r < std::min<std::size_t>(a.size() / n, 2); ++r) {
    const auto one = m.row(std::span(a).subspan(r * n, n));
    if (!std::equal(one.begin(), one.end(), want.begin() + static_cast<std::ptrdiff_t>(r * n)))
      return testing::AssertionFailure() << "row() differs from the definition on row " << r;
  }
  return testing::AssertionSuccess();
}

uint64_t seed_of_this_test() {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  return tp::tb::test_seed(fmt::format("{}.{}", info->test_suite_name(), info->name()));
}

class MxuKernelVariant : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!mxu_kernel_supported(GetParam())) GTEST_SKIP() << "this host cannot run the " << GetParam() << " kernel";
    mxu_select_kernel(GetParam());
  }
  void TearDown() override { mxu_select_kernel(""); }
};

TEST_P(MxuKernelVariant, MatchesTheDefinitionOnRandomTiles) {
  const uint64_t seed = seed_of_this_test();
  std::mt19937_64 rng(seed);
  Events ev;
  // The preset sizes (8, 12, 32, 128), one column, and a block and a half (the kernels' blocks are
  // 16 columns); up to 19 rows, so that every grouping of rows the kernels use is taken.
  for (unsigned n : {1u, 8u, 12u, 16u, 17u, 32u, 33u, 128u})
    for (Mix mix : kMixes)
      for (unsigned trial = 0; trial < (n >= 128 ? 3u : 12u); ++trial) {
        SCOPED_TRACE(fmt::format("seed {} n {} mix {} trial {}", seed, n, mix_name(mix), trial));
        const auto count = static_cast<unsigned>(1 + rng() % 19);
        const auto w = draw_many(rng, mix, n, std::size_t{n} * n);
        const auto a = draw_many(rng, mix, n, std::size_t{count} * n);
        count_events(n, w, a, ev);
        ASSERT_TRUE(matches_definition(n, w, a));
      }
  SCOPED_TRACE(fmt::format("seed {}", seed));
  EXPECT_GT(ev.denormal_input, 0u);
  EXPECT_GT(ev.nan_payload_input, 0u);
  EXPECT_GT(ev.inf_times_zero, 0u);
  EXPECT_GT(ev.denormal_product, 0u);
  EXPECT_GT(ev.product_min_normal, 0u);
  EXPECT_GT(ev.denormal_sum, 0u);
  EXPECT_GT(ev.sum_min_normal, 0u);
  EXPECT_GT(ev.daz_matters, 0u);
  EXPECT_GT(ev.cancellation, 0u);
  EXPECT_GT(ev.overflow, 0u);
  EXPECT_GT(ev.neg_zero_result, 0u);
  EXPECT_GT(ev.nan_result, 0u);
}

// Hand-made columns with their results worked out by hand (docs/numerics.md), each placed in one
// column of a tile among random ones, in a row among random ones.
TEST_P(MxuKernelVariant, HandMadeColumns) {
  auto bf = [](float v) { return Bf16::from_float(v).bits; };  // v is a bf16 value
  auto p2 = [](int e) { return std::ldexp(1.0f, e); };
  const uint16_t one = 0x3f80, m_one = 0xbf80, zero = 0x0000, inf = 0x7f80, m_inf = 0xff80;
  const uint16_t t62 = bf(p2(-62)), t63 = bf(p2(-63)), t64 = bf(p2(-64));
  using Pairs = std::vector<std::pair<uint16_t, uint16_t>>;  // (a[i], W[i][j]) from i = 0
  // Products -2^-125 and 1.5 x 2^-126: a negative denormal sum, read as (and flushed to) -0.
  const Pairs to_neg_zero = {{bf(-p2(-62)), t63}, {bf(1.5f * p2(-63)), t63}};
  auto then = [](Pairs p, const Pairs& more) {
    p.insert(p.end(), more.begin(), more.end());
    return p;
  };
  struct Column {
    const char* what;
    Pairs aw;
    uint32_t want;
  };
  const std::vector<Column> columns = {
      {"-0 products only: the +0 start wins", {{m_one, zero}, {one, 0x8000}}, 0x00000000},
      {"a negative denormal sum flushes to -0", to_neg_zero, 0x80000000},
      {"a positive denormal product onto -0 gives +0", then(to_neg_zero, {{t64, t64}}), 0x00000000},
      {"a negative denormal product onto -0 stays -0", then(to_neg_zero, {{bf(-p2(-64)), t64}}), 0x80000000},
      {"a denormal sum reads as zero", {{t62, t63}, {bf(-1.5f * p2(-63)), t63}, {t63, t63}}, 0x00800000},
      {"a product of exactly 2^-126 is kept", {{bf(-p2(-63)), t63}}, 0x80800000},
      {"a product just below 2^-126 is flushed", {{bf(0.99609375f * p2(-63)), t63}, {t63, t63}}, 0x00800000},
      {"a sum of exactly 2^-126 is kept", {{t62, t63}, {bf(-p2(-63)), t63}}, 0x00800000},
      {"a sum just below 2^-126 is flushed", {{t62, t63}, {bf(-1.0078125f * p2(-63)), t63}}, 0x00000000},
      {"a denormal operand is a zero of its sign", then(to_neg_zero, {{0x807f, one}}), 0x80000000},
      {"a denormal operand and +0", then(to_neg_zero, {{0x0001, one}}), 0x00000000},
      {"inf x 0 is NaN", {{inf, zero}}, kFp32QNaN},
      {"inf x denormal is NaN", {{0x0001, m_inf}}, kFp32QNaN},
      {"inf - inf is NaN", {{inf, one}, {m_inf, one}}, kFp32QNaN},
      {"a negative NaN with a payload", {{0xffc1, one}}, kFp32QNaN},
      {"a signalling NaN", {{one, 0x7f81}}, kFp32QNaN},
      {"NaN then inf stays NaN", {{0x7fc1, one}, {inf, one}}, kFp32QNaN},
      {"inf absorbs finite terms", {{m_inf, one}, {one, one}}, 0xff800000},
      {"a product overflows to inf", {{bf(-p2(100)), bf(p2(100))}}, 0xff800000},
      {"a sum overflows to inf", {{bf(p2(127)), one}, {bf(p2(127)), one}}, 0x7f800000},
      {"an exact cancellation is +0", {{bf(-3.0f), one}, {bf(3.0f), one}}, 0x00000000},
      {"ties to even, weight row 0 first", {{one, one}, {bf(p2(-24)), one}, {bf(p2(-24)), one}}, 0x3f800000},
      {"ties to even, the small terms first", {{bf(p2(-24)), one}, {bf(p2(-24)), one}, {one, one}}, 0x3f800001},
      {"a rounded-away term stays away", {{bf(p2(24)), one}, {one, one}, {bf(-p2(24)), one}}, 0x00000000},
  };
  const uint64_t seed = seed_of_this_test();
  std::mt19937_64 rng(seed);
  for (const auto& c : columns)
    for (unsigned n : {8u, 128u})
      for (unsigned count : {1u, 11u}) {
        SCOPED_TRACE(fmt::format("{}: seed {} n {} rows {}", c.what, seed, n, count));
        const unsigned col = n == 8 ? 5 : 37, row = count == 1 ? 0 : 9;
        auto w = draw_many(rng, Mix::ordinary, n, std::size_t{n} * n);
        auto a = draw_many(rng, Mix::ordinary, n, std::size_t{count} * n);
        // Past the listed pairs the column's products are -0 (-1 x +0), which leave any sum as it is.
        for (unsigned i = 0; i < n; ++i) {
          const bool listed = i < c.aw.size();
          a[std::size_t{row} * n + i] = listed ? c.aw[i].first : m_one;
          w[std::size_t{i} * n + col] = listed ? c.aw[i].second : zero;
        }
        ASSERT_TRUE(matches_definition(n, w, a));
        MxuModel m(n, 1);
        m.load_weights(w);
        m.switch_tile();
        EXPECT_EQ(m.row(std::span(a).subspan(std::size_t{row} * n, n))[col], c.want);
      }
}

TEST_P(MxuKernelVariant, MatmulMatchesTheDefinition) {
  const uint64_t seed = seed_of_this_test();
  std::mt19937_64 rng(seed);
  for (unsigned n : {8u, 12u, 32u})
    for (Mix mix : {Mix::ordinary, Mix::underflow, Mix::specials})
      for (unsigned trial = 0; trial < 4; ++trial) {
        const auto m = static_cast<unsigned>(1 + rng() % 13), k = static_cast<unsigned>(1 + rng() % (3 * n)),
                   ncols = static_cast<unsigned>(1 + rng() % (2 * n + 5));
        SCOPED_TRACE(fmt::format("seed {} n {} mix {} m {} k {} ncols {}", seed, n, mix_name(mix), m, k, ncols));
        const auto a = draw_many(rng, mix, n, std::size_t{m} * k), b = draw_many(rng, mix, n, std::size_t{k} * ncols);
        const auto c = mxu_matmul(n, m, k, ncols, a, b);
        // The definition: per K tile a zero-padded column sum from +0, the tiles added in order.
        for (unsigned r = 0; r < m; ++r)
          for (unsigned col = 0; col < ncols; ++col) {
            uint32_t total = 0;
            for (unsigned kt = 0; kt * n < k; ++kt) {
              uint32_t sum = 0;
              for (unsigned i = 0; i < n; ++i) {
                const unsigned kk = kt * n + i;
                sum = bf16_mac(sum, kk < k ? a[std::size_t{r} * k + kk] : uint16_t{0},
                               kk < k ? b[std::size_t{kk} * ncols + col] : uint16_t{0});
              }
              total = kt == 0 ? sum : fp32_add(total, sum);
            }
            ASSERT_EQ(c[std::size_t{r} * ncols + col], total) << "C[" << r << "][" << col << "]";
          }
      }
}

#if defined(__x86_64__)
// A caller may run with FTZ, DAZ or another rounding mode (-ffast-math sets FTZ and DAZ at
// start-up): rows() sets its own mode and gives the caller's back.
TEST_P(MxuKernelVariant, IgnoresTheCallersFloatingPointMode) {
  const uint64_t seed = seed_of_this_test();
  std::mt19937_64 rng(seed);
  for (unsigned n : {8u, 32u})
    for (Mix mix : {Mix::ordinary, Mix::underflow}) {
      SCOPED_TRACE(fmt::format("seed {} n {} mix {}", seed, n, mix_name(mix)));
      const auto w = draw_many(rng, mix, n, std::size_t{n} * n), a = draw_many(rng, mix, n, std::size_t{9} * n);
      const auto want = reference_rows(n, w, a);
      MxuModel m(n, 1);
      m.load_weights(w);
      m.switch_tile();
      std::vector<uint32_t> got(a.size());
      // Exceptions masked, FTZ (bit 15), DAZ (bit 6), round toward zero (bits 13-14).
      const unsigned callers = 0x1f80u | 0x8000u | 0x0040u | 0x6000u, saved = _mm_getcsr();
      _mm_setcsr(callers);
      m.rows(a, got);
      const unsigned after = _mm_getcsr();
      _mm_setcsr(saved);
      EXPECT_EQ(after & ~0x3fu, callers);  // the mode given back (bits 0-5 are sticky flags)
      EXPECT_EQ(got, want);
    }
}
#endif

std::vector<std::string> kernel_names() {
  const auto names = mxu_kernels();
  return {names.begin(), names.end()};
}

INSTANTIATE_TEST_SUITE_P(Kernels, MxuKernelVariant, testing::ValuesIn(kernel_names()),
                         [](const testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(MxuKernel, SelectionByName) {
  const auto names = mxu_kernels();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "scalar");
  EXPECT_TRUE(mxu_kernel_supported("scalar"));
  EXPECT_FALSE(mxu_kernel_supported("avx1024"));
  EXPECT_THROW(mxu_select_kernel("avx1024"), std::invalid_argument);
  for (auto name : names) {
    if (!mxu_kernel_supported(name)) {
      EXPECT_THROW(mxu_select_kernel(name), std::invalid_argument) << name;
    }
  }
  std::string_view fastest;
  for (auto name : names)
    if (mxu_kernel_supported(name)) fastest = name;
  EXPECT_EQ(mxu_kernel(), fastest);  // the automatic choice
  mxu_select_kernel("scalar");
  EXPECT_EQ(mxu_kernel(), "scalar");
  mxu_select_kernel("");
  EXPECT_EQ(mxu_kernel(), fastest);
#if defined(__x86_64__)
  EXPECT_TRUE(mxu_kernel_supported("default"));  // the x86-64 baseline runs everywhere
  if (__builtin_cpu_supports("avx512f")) {
    EXPECT_EQ(fastest, "avx512f");
  }
#endif
}

}  // namespace
