// One lane of the vector unit (rtl/vpu/tp_vpu_pkg.sv through tp_vpu_lane) against the golden
// vector numerics (sw/golden/vpu_ops.h), bit for bit, for every vector op.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "Vvpu_lane.h"
#include "coverage.h"
#include "isa_gen.h"
#include "tb_util.h"
#include "vpu_ops.h"

namespace {

using tp::isa::Op;
using namespace tp::golden;

// Every opcode the vector unit executes (the reductions as one fold step: a op b).
std::vector<Op> vector_ops() {
  std::vector<Op> ops;
  for (const auto& d : tp::isa::kInstrs)
    if (d.unit == tp::isa::Unit::vec) ops.push_back(d.op);
  return ops;
}

std::string op_name(Op op) {
  for (const auto& d : tp::isa::kInstrs)
    if (d.op == op) return std::string(d.name);
  return fmt::format("op{}", static_cast<unsigned>(op));
}

// Both signs of: zero, denormals, the smallest normals, 1 and its neighbours, the largest
// finite, infinity, NaNs (quiet, signalling, all-ones payload); and values whose products land
// on both sides of 2^-126 (e.g. (1 - 2^-24) x 2^-126 is a tie on the denormal grid that rounds
// up to 2^-126; 2^-64 x 2^-63 = 2^-127 flushes) and of the overflow threshold.
std::vector<uint32_t> specials() {
  const uint32_t mags[] = {
      0x00000000, 0x00000001, 0x00400000, 0x007fffff,                          // zero, denormals
      0x00800000, 0x00800001, 0x00ffffff, 0x01000000,                          // smallest normals
      0x3f800000, 0x3f7fffff, 0x3f7ffffe, 0x3f800001, 0x3f000000, 0x40000000,  // 1 and around
      0x3fffffff, 0x3fc00000, 0x3f400000,                                      // (2 - ulp), 1.5, 0.75
      0x1f800000, 0x1f800001, 0x1fffffff, 0x1fbfffff, 0x20000000, 0x1f3504f3,  // squares near 2^-126
      0x1fb504f3, 0x1f7fffff, 0x20800000, 0x0c000000, 0x33000000, 0x34000000,  // products near 2^-126
      0x5f800000, 0x5f7fffff, 0x5fb504f3, 0x5f3504f3, 0x7f000000, 0x7effffff,  // products near 2^128
      0x7f7fffff, 0x7f7ffffe,                                                  // largest finite
      0x7f800000,                                                              // infinity
      0x7fc00000, 0x7f800001, 0x7fffffff, 0x7fa00000,                          // NaNs
  };
  std::vector<uint32_t> v;
  for (uint32_t m : mags) {
    v.push_back(m);
    v.push_back(m | 0x80000000u);
  }
  return v;
}

class VpuLane : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = std::make_unique<VerilatedContext>();
    ctx_->randReset(tp::tb::kRandReset);
    dut_ = std::make_unique<Vvpu_lane>(ctx_.get(), "vpu");
    seed_ = tp::tb::test_seed(tp::tb::current_test_name());
    rng_.seed(seed_);
  }
  void TearDown() override {
    dut_->final();
    tp::tb::write_coverage(*ctx_);
  }

  uint32_t rtl(Op op, uint32_t a, uint32_t b, uint32_t m, uint32_t imm) {
    dut_->op_i = static_cast<uint8_t>(op);
    dut_->a_i = a;
    dut_->b_i = b;
    dut_->m_i = m;
    dut_->imm_i = imm;
    dut_->eval();
    return dut_->d_o;
  }

  // Compares one lane; reports the first ten mismatches with everything needed to reproduce.
  void check(Op op, uint32_t a, uint32_t b, uint32_t m, uint32_t imm) {
    ++checked_;
    const uint32_t want = vpu_lane(op, a, b, m, imm);
    const uint32_t got = rtl(op, a, b, m, imm);
    if (got == want) return;
    if (++failures_ <= 10)
      ADD_FAILURE() << fmt::format(
          "{} a=0x{:08x} b=0x{:08x} m=0x{:08x} imm=0x{:08x}: rtl 0x{:08x}, golden 0x{:08x} "
          "(seed {})",
          op_name(op), a, b, m, imm, got, want, seed_);
  }

  uint32_t random_bits() { return static_cast<uint32_t>(rng_()); }

  // A value with a random sign and fraction and the given biased exponent.
  uint32_t with_exp(uint32_t e) { return (random_bits() & 0x807fffffu) | ((e & 0xffu) << 23); }

  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Vvpu_lane> dut_;
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  uint64_t checked_ = 0;
  unsigned failures_ = 0;
};

// Every vector op on every pair of specials (vscale: the second one as imm; vsel: masks of
// zero and non-zero lanes, including -0 and a NaN pattern, which are non-zero bits).
TEST_F(VpuLane, EveryOpOnEveryPairOfSpecials) {
  const auto s = specials();
  const uint32_t masks[] = {0u, 1u, 0x80000000u, 0xffffffffu, 0x7fc00000u};
  for (Op op : vector_ops())
    for (std::size_t i = 0; i < s.size(); ++i)
      for (std::size_t j = 0; j < s.size(); ++j) check(op, s[i], s[j], masks[(i + j) % 5], s[j]);
  fmt::print("{} lanes checked\n", checked_);
  EXPECT_EQ(failures_, 0u);
}

// 2 million random operand pairs, spread over the ops: random bit patterns, operands of nearby
// exponents (rounding and cancellation in add/sub, equal exponents in compares and max/min),
// products near the underflow and overflow thresholds, and specials against random values.
TEST_F(VpuLane, TwoMillionRandomPairs) {
  const auto ops = vector_ops();
  const auto s = specials();
  constexpr uint64_t kPairs = 2'000'000;
  for (uint64_t k = 0; k < kPairs; ++k) {
    const Op op = ops[k % ops.size()];
    uint32_t a = 0, b = 0;
    switch ((k / ops.size()) % 5) {
      case 0:  // random bits
        a = random_bits();
        b = random_bits();
        break;
      case 1: {  // nearby exponents
        const uint32_t e = 1 + static_cast<uint32_t>(rng_() % 254);
        const int d = static_cast<int>(rng_() % 7) - 3;
        a = with_exp(e);
        b = with_exp(static_cast<uint32_t>(std::clamp(static_cast<int>(e) + d, 1, 254)));
        if (rng_() % 4 == 0) b = (a ^ 0x80000000u) + static_cast<uint32_t>(rng_() % 5) - 2u;  // cancellation
        break;
      }
      case 2: {  // products around 2^-126: ea + eb near 127 (the denormal grid and its boundary)
        const uint32_t ea = 1 + static_cast<uint32_t>(rng_() % 126);
        const int eb = 127 - static_cast<int>(ea) + static_cast<int>(rng_() % 5) - 3;
        a = with_exp(ea);
        b = with_exp(static_cast<uint32_t>(std::clamp(eb, 1, 254)));
        if (rng_() % 2) a |= 0x007fff00u;  // many fractions of ones: products just below a power of two
        break;
      }
      case 3: {  // products around 2^128: ea + eb near 254 + 127
        const uint32_t ea = 128 + static_cast<uint32_t>(rng_() % 127);
        const int eb = 381 - static_cast<int>(ea) + static_cast<int>(rng_() % 3) - 1;
        a = with_exp(ea);
        b = with_exp(static_cast<uint32_t>(std::clamp(eb, 1, 254)));
        break;
      }
      default:  // a special against a random value, either order
        a = s[rng_() % s.size()];
        b = random_bits();
        if (rng_() % 2) std::swap(a, b);
        break;
    }
    const uint32_t m = rng_() % 2 ? 0u : random_bits();
    check(op, a, b, m, op == Op::vscale ? b : random_bits());
  }
  fmt::print("{} lanes checked\n", checked_);
  EXPECT_EQ(failures_, 0u);
}

// vexp and vrcp over their whole working range, where random bit patterns rarely land: a random
// one of every 256 fp32 values of exp's range [-104, 100] (both signs, the many values below
// 2^-25 included), the boundaries of the range and of the flush to zero, and about every 8th
// significand of the reciprocal at five exponents (1, 2^-126 and 2^126, where 1/a is at the
// flush threshold): about 13.7 million lanes.
TEST_F(VpuLane, ExpAndReciprocalOverTheirRange) {
  for (uint32_t mag = 0; mag <= 0x42d00000u; mag += 256) {
    const uint32_t x = mag + static_cast<uint32_t>(rng_() % 256);
    check(Op::vexp, x, 0, 0, 0);
    check(Op::vexp, x | 0x80000000u, 0, 0, 0);
  }
  // the thresholds: 100 and -104 (the bounds of the algorithm), ln(2^128) ~ 88.72 (overflow),
  // ln(2^-126) ~ -87.34 (flush), with their neighbours
  for (uint32_t c : {0x42c80000u, 0xc2d00000u, 0x42b17218u, 0xc2aeac50u, 0xc2aeac4fu, 0x42b17217u})
    for (uint32_t d = 0; d < 256; ++d) check(Op::vexp, c - 128 + d, 0, 0, 0);
  for (uint32_t e : {127u, 1u, 126u, 253u, 254u})
    for (uint32_t f = 0; f < (1u << 23); f += 1u + static_cast<uint32_t>(rng_() % 16))
      check(Op::vrcp, (e << 23) | f | (rng_() % 2 ? 0x80000000u : 0u), 0, 0, 0);
  fmt::print("{} lanes checked\n", checked_);
  EXPECT_EQ(failures_, 0u);
}

}  // namespace
