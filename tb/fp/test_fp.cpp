// The RTL arithmetic (rtl/common/tp_fp_pkg.sv through tp_fp_unit) against the golden numerics
// (sw/golden/fp.h), bit for bit.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <random>
#include <vector>

#include "Vfp_unit.h"
#include "coverage.h"
#include "fp.h"
#include "tb_util.h"

namespace {

using namespace tp::golden;

class FpUnit : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = std::make_unique<VerilatedContext>();
    ctx_->randReset(tp::tb::kRandReset);
    dut_ = std::make_unique<Vfp_unit>(ctx_.get(), "fp");
    seed_ = tp::tb::test_seed(tp::tb::current_test_name());
    rng_.seed(seed_);
  }
  void TearDown() override {
    dut_->final();
    tp::tb::write_coverage(*ctx_);
  }

  uint32_t mul(uint16_t a, uint16_t b) {
    dut_->mul_a_i = a;
    dut_->mul_b_i = b;
    dut_->eval();
    return dut_->mul_o;
  }
  uint32_t add(uint32_t a, uint32_t b) {
    dut_->add_a_i = a;
    dut_->add_b_i = b;
    dut_->eval();
    return dut_->add_o;
  }
  uint32_t mac(uint32_t acc, uint16_t a, uint16_t b) {
    dut_->add_a_i = acc;
    dut_->mul_a_i = a;
    dut_->mul_b_i = b;
    dut_->eval();
    return dut_->mac_o;
  }
  // The array's way (tp_mxu_array): bf16_mac_fast where bf16_mac_is_fast holds; fast: whether it did.
  uint32_t mac_array(uint32_t acc, uint16_t a, uint16_t b, bool& fast) {
    mac(acc, a, b);
    fast = dut_->mac_fast_ok_o;
    return dut_->mac_fast_o;
  }

  // Count a mismatch; report the first few with everything needed to reproduce them.
  void check(bool ok, const std::string& what) {
    if (ok) return;
    if (++failures_ <= 10) ADD_FAILURE() << what << " (seed " << seed_ << ")";
  }

  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Vfp_unit> dut_;
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  unsigned failures_ = 0;
};

// bf16 values that exercise the policy: zeros, denormals, the normal extremes, infinities, NaNs.
std::vector<uint16_t> bf16_specials() {
  std::vector<uint16_t> v;
  for (unsigned sign : {0x0000u, 0x8000u}) {
    for (unsigned mag : {0x0000u, 0x0001u, 0x0040u, 0x007fu, 0x0080u, 0x0081u, 0x00ffu, 0x3f80u, 0x3fffu, 0x7f00u,
                         0x7f7fu, 0x7f80u, 0x7f81u, 0x7fc0u, 0x7fffu})
      v.push_back(static_cast<uint16_t>(sign | mag));
  }
  return v;
}

TEST_F(FpUnit, MulEveryExponentPairRandomFractions) {
  const uint64_t kSamples = 4 * tp::tb::soak_scale();  // make soak: TP_SOAK times as many
  uint64_t n = 0;
  for (uint32_t ea = 0; ea < 256; ++ea) {
    for (uint32_t eb = 0; eb < 256; ++eb) {
      for (uint64_t s = 0; s < kSamples; ++s) {
        const uint64_t r = rng_();
        const auto a = static_cast<uint16_t>(((r & 1) << 15) | (ea << 7) | ((r >> 1) & 0x7f));
        const auto b = static_cast<uint16_t>((((r >> 8) & 1) << 15) | (eb << 7) | ((r >> 9) & 0x7f));
        const uint32_t got = mul(a, b), want = bf16_mul(a, b);
        check(got == want, fmt::format("bf16_mul({:#06x}, {:#06x}) = {:#010x}, golden {:#010x}", a, b, got, want));
        ++n;
      }
    }
  }
  EXPECT_EQ(failures_, 0u) << failures_ << " of " << n << " products differ";
  tp::tb::soak_report("fp", n, n, "random bf16 products bit-exact with the golden model");
}

TEST_F(FpUnit, MulSpecialsAgainstEveryValue) {
  uint64_t n = 0;
  for (uint16_t s : bf16_specials()) {
    for (uint32_t x = 0; x < 0x10000; ++x) {
      const auto v = static_cast<uint16_t>(x);
      for (auto [a, b] : {std::pair{s, v}, std::pair{v, s}}) {
        const uint32_t got = mul(a, b), want = bf16_mul(a, b);
        check(got == want, fmt::format("bf16_mul({:#06x}, {:#06x}) = {:#010x}, golden {:#010x}", a, b, got, want));
        ++n;
      }
    }
  }
  EXPECT_EQ(failures_, 0u) << failures_ << " of " << n << " products differ";
}

// Random fp32 operands drawn from the cases that break adders.
class AddCases {
 public:
  enum Kind { kRandomBits, kCloseExponents, kCancellation, kTie, kOverflow, kDenormal, kSpecial, kKinds };
  static constexpr std::array<const char*, kKinds> kNames = {
      "random bits", "close exponents", "cancellation", "rounding tie", "overflow", "denormal", "special"};

  explicit AddCases(std::mt19937_64& rng) : rng_(rng) {}

  std::pair<uint32_t, uint32_t> draw(Kind k) {
    const uint32_t r = static_cast<uint32_t>(rng_()), q = static_cast<uint32_t>(rng_());
    switch (k) {
      case kRandomBits:
        return {r, q};
      case kCloseExponents: {
        const uint32_t e = 1 + r % 253;
        const uint32_t d = q % 5;
        const uint32_t eb = e > d ? e - d : e;
        return {(r & 0x80000000u) | (e << 23) | (q & 0x7fffffu), (q & 0x80000000u) | (eb << 23) | (r & 0x7fffffu)};
      }
      case kCancellation: {
        const uint32_t a = (1 + r % 253) << 23 | (q & 0x7fffffu);
        const uint32_t b = (a ^ 0x80000000u) + (r >> 28) - 8;  // -a nudged by a few ulps
        return {a | (q & 0x80000000u), b ^ (q & 0x80000000u)};
      }
      case kTie: {
        // b is exactly half an ulp of a (or 1.5 ulp etc.): the sum is a rounding tie.
        const uint32_t e = 30 + r % 200;
        const uint32_t a = (e << 23) | (q & 0x7fffffu);
        const uint32_t sh = 24 + (r >> 28) % 2;
        const uint32_t b = ((e - sh) << 23) | (((q >> 23) & 1u) ? 0x400000u : 0u);
        return {a | (r & 0x80000000u), b | (((r >> 1) & 1u) ? (r & 0x80000000u) : 0u)};
      }
      case kOverflow: {
        const uint32_t e = 250 + r % 5;
        return {(e << 23) | (q & 0x7fffffu), ((250 + q % 5) << 23) | (r & 0x7fffffu) | (q & 0x80000000u)};
      }
      case kDenormal: {
        const uint32_t den = (r & 0x807fffffu) | 1u;
        const uint32_t other = (q % 4 == 0) ? ((q & 0x80800000u) | (r >> 9 & 0x7fffffu)) : q;
        return (q & 1u) ? std::pair{den, other} : std::pair{other, den};
      }
      case kSpecial:
      default: {
        static constexpr std::array<uint32_t, 12> s = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u,
                                                       0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x00800000u,
                                                       0x80800000u, 0x7f7fffffu, 0xff7fffffu, 0x3f800000u};
        const uint32_t a = s[r % s.size()];
        return (q % 3 == 0) ? std::pair{a, s[q % s.size()]} : std::pair{a, q};
      }
    }
  }

 private:
  std::mt19937_64& rng_;
};

TEST_F(FpUnit, AddMillionRandom) {
  const uint64_t kPerKind = 200'000 * tp::tb::soak_scale();  // make soak: TP_SOAK times as many
  AddCases cases(rng_);
  for (int k = 0; k < AddCases::kKinds; ++k) {
    for (uint64_t i = 0; i < kPerKind; ++i) {
      const auto [a, b] = cases.draw(static_cast<AddCases::Kind>(k));
      const uint32_t got = add(a, b), want = fp32_add(a, b);
      check(got == want, fmt::format("fp32_add({:#010x}, {:#010x}) [{}] = {:#010x}, golden {:#010x}", a, b,
                                     AddCases::kNames[k], got, want));
    }
  }
  EXPECT_EQ(failures_, 0u) << failures_ << " of " << kPerKind * AddCases::kKinds << " sums differ";
  tp::tb::soak_report("fp", kPerKind * AddCases::kKinds, kPerKind * AddCases::kKinds,
                      "random fp32 additions bit-exact with the golden model");
}

TEST_F(FpUnit, AddDirected) {
  struct Case {
    uint32_t a, b, want;
  };
  const Case cases[] = {
      {0x3f800000u, 0x3f800000u, 0x40000000u},  // 1 + 1 = 2
      {0x3f800000u, 0xbf800000u, 0x00000000u},  // 1 - 1 = +0
      {0x80000000u, 0x80000000u, 0x80000000u},  // -0 + -0 = -0
      {0x80000000u, 0x00000000u, 0x00000000u},  // -0 + +0 = +0
      {0x7f7fffffu, 0x7f7fffffu, 0x7f800000u},  // max + max = inf
      {0x7f800000u, 0xff800000u, kFp32QNaN},    // inf - inf = NaN
      {0xffc12345u, 0x3f800000u, kFp32QNaN},    // NaN is canonical
      {0x00000001u, 0x00000000u, 0x00000000u},  // denormal in: zero
      {0x80400000u, 0x3f800000u, 0x3f800000u},  // -denormal + 1 = 1
      {0x00c00000u, 0x80800000u, 0x00000000u},  // 1.5 min - min = denormal: flushed to +0
      {0x80c00000u, 0x00800000u, 0x80000000u},  // ... and to -0
      {0x3f800000u, 0x33800000u, 0x3f800000u},  // 1 + 2^-24 (tie) = 1 (even)
      {0x3f800001u, 0x33800000u, 0x3f800002u},  // 1+ulp + 2^-24 (tie) = 1+2ulp (even)
      {0x3f800000u, 0xb3800000u, 0x3f7fffffu},  // 1 - 2^-24 is exact
  };
  for (const auto& c : cases) {
    EXPECT_EQ(fp32_add(c.a, c.b), c.want) << fmt::format("golden {:#010x} + {:#010x}", c.a, c.b);
    EXPECT_EQ(add(c.a, c.b), c.want) << fmt::format("rtl {:#010x} + {:#010x}", c.a, c.b);
    EXPECT_EQ(add(c.b, c.a), c.want) << fmt::format("rtl {:#010x} + {:#010x}", c.b, c.a);
  }
}

TEST_F(FpUnit, MacMatchesMulThenAdd) {
  constexpr uint64_t kCount = 300'000;
  const auto specials = bf16_specials();
  uint64_t fast_count = 0;
  for (uint64_t i = 0; i < kCount; ++i) {
    const uint64_t r = rng_();
    auto a = static_cast<uint16_t>(r), b = static_cast<uint16_t>(r >> 16);
    if ((r >> 60) == 0) a = specials[(r >> 32) % specials.size()];
    // Keep most products near the accumulator so additions round and cancel.
    const uint32_t acc =
        (r >> 61) ? (bf16_mul(a, b) ^ static_cast<uint32_t>((r >> 32) & 0x807fffffu)) : static_cast<uint32_t>(r >> 32);
    const uint32_t got = mac(acc, a, b), want = bf16_mac(acc, a, b);
    check(got == want,
          fmt::format("mac({:#010x}, {:#06x}, {:#06x}) = {:#010x}, golden {:#010x}", acc, a, b, got, want));
    // And as the array computes it (bf16_mac_fast, branch-free, where its case holds).
    bool fast = false;
    const uint32_t arr = mac_array(acc, a, b, fast);
    fast_count += fast;
    check(arr == want, fmt::format("array mac({:#010x}, {:#06x}, {:#06x}) = {:#010x} ({} path), golden {:#010x}", acc,
                                   a, b, arr, fast ? "fast" : "general", want));
  }
  EXPECT_EQ(failures_, 0u);
  // Not vacuous: most MACs take the array's fast path, and some do not.
  EXPECT_GT(fast_count, kCount / 2);
  EXPECT_LT(fast_count, kCount);
}

}  // namespace
