// SECDED (72,64): the RTL encoder bit-exact with the golden one, and the code's promise on
// both: every single-bit error corrected, every double-bit error detected.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <memory>
#include <numeric>
#include <random>

#include "Vecc_unit.h"
#include "coverage.h"
#include "secded.h"
#include "tb_util.h"

namespace {

using tp::golden::Codeword;

class Ecc : public ::testing::Test {
 protected:
  void SetUp() override {
    dut_ = std::make_unique<Vecc_unit>(&ctx_, "ecc");
    seed_ = tp::tb::test_seed(tp::tb::current_test_name());
    rng_.seed(seed_);
  }
  void TearDown() override {
    dut_->final();
    tp::tb::write_coverage(ctx_);
  }

  Codeword encode(uint64_t d) {
    dut_->enc_data_i = d;
    dut_->eval();
    Codeword c;
    for (unsigned i = 0; i < 72; ++i) c[i] = (dut_->enc_code_o[i / 32] >> (i % 32)) & 1u;
    return c;
  }
  struct Dec {
    uint64_t data;
    bool corrected, fatal;
  };
  Dec decode(const Codeword& c) {
    for (unsigned w = 0; w < 3; ++w) dut_->dec_code_i[w] = 0;
    for (unsigned i = 0; i < 72; ++i)
      if (c[i]) dut_->dec_code_i[i / 32] |= 1u << (i % 32);
    dut_->eval();
    return {dut_->dec_data_o, static_cast<bool>(dut_->dec_corrected_o), static_cast<bool>(dut_->dec_fatal_o)};
  }

  VerilatedContext ctx_;
  std::unique_ptr<Vecc_unit> dut_;
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

TEST_F(Ecc, EncoderMatchesGolden) {
  for (int i = 0; i < 20000; ++i) {
    const uint64_t d = (i < 64) ? (uint64_t{1} << i) : rng_();
    ASSERT_EQ(encode(d), tp::golden::secded_encode(d)) << fmt::format("data {:#018x} (seed {})", d, seed_);
  }
}

TEST_F(Ecc, CleanWordsDecodeUnchanged) {
  for (int i = 0; i < 5000; ++i) {
    const uint64_t d = rng_();
    const auto r = decode(encode(d));
    ASSERT_EQ(r.data, d);
    ASSERT_FALSE(r.corrected);
    ASSERT_FALSE(r.fatal);
  }
}

TEST_F(Ecc, EverySingleBitErrorIsCorrected) {
  for (int w = 0; w < 500; ++w) {
    const uint64_t d = rng_();
    const Codeword c = encode(d);
    for (unsigned b = 0; b < 72; ++b) {
      Codeword bad = c;
      bad.flip(b);
      const auto r = decode(bad);
      ASSERT_EQ(r.data, d) << fmt::format("data {:#018x}, bit {} flipped (seed {})", d, b, seed_);
      ASSERT_TRUE(r.corrected) << "bit " << b;
      ASSERT_FALSE(r.fatal) << "bit " << b;
      const auto g = tp::golden::secded_decode(bad);
      ASSERT_EQ(g.data, d);
      ASSERT_TRUE(g.corrected);
    }
  }
}

TEST_F(Ecc, EveryDoubleBitErrorIsDetected) {
  for (int w = 0; w < 20; ++w) {
    const uint64_t d = rng_();
    const Codeword c = encode(d);
    for (unsigned a = 0; a < 72; ++a) {
      for (unsigned b = a + 1; b < 72; ++b) {
        Codeword bad = c;
        bad.flip(a);
        bad.flip(b);
        const auto r = decode(bad);
        ASSERT_TRUE(r.fatal) << fmt::format("data {:#018x}, bits {} and {} flipped (seed {})", d, a, b, seed_);
        ASSERT_FALSE(r.corrected);
        ASSERT_TRUE(tp::golden::secded_decode(bad).fatal);
      }
    }
  }
}

// Three or more flipped bits are past the code's promise: they may look like a single-bit error
// (and be "corrected" wrongly), a double, or nothing. The RTL must still decode exactly as the
// golden decoder does (data and both flags), so that the chip and the interpreter agree on a
// memory's fault whatever it is; and every one of them must be flagged one way or the other
// unless it happens to be a codeword.
TEST_F(Ecc, ThreeOrMoreFlipsDecodeAsTheGoldenDecoder) {
  uint64_t corrected = 0, fatal = 0;
  for (int i = 0; i < 20000; ++i) {
    const uint64_t d = rng_();
    Codeword bad = encode(d);
    const unsigned flips = 3 + static_cast<unsigned>(rng_() % 6);  // 3 .. 8 distinct bits
    std::array<unsigned, 72> bits;
    std::iota(bits.begin(), bits.end(), 0u);
    std::shuffle(bits.begin(), bits.end(), rng_);
    for (unsigned k = 0; k < flips; ++k) bad.flip(bits[k]);
    const auto r = decode(bad);
    const auto g = tp::golden::secded_decode(bad);
    ASSERT_EQ(r.data, g.data) << fmt::format("data {:#018x}, {} flips (seed {})", d, flips, seed_);
    ASSERT_EQ(r.corrected, g.corrected) << fmt::format("data {:#018x}, {} flips (seed {})", d, flips, seed_);
    ASSERT_EQ(r.fatal, g.fatal) << fmt::format("data {:#018x}, {} flips (seed {})", d, flips, seed_);
    corrected += r.corrected;
    fatal += r.fatal;
  }
  EXPECT_GT(corrected, 0u) << "no odd-weight error mistaken for a single: the draw is wrong";
  EXPECT_GT(fatal, 0u) << "no even-weight error detected: the draw is wrong";
}

}  // namespace
