// The golden numerics policy itself (docs/numerics.md), independent of the RTL.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "fp.h"

namespace {
using namespace tp::golden;

TEST(Numerics, Fp32ToBf16RoundsToNearestEven) {
  EXPECT_EQ(fp32_to_bf16(0x3f800000u), 0x3f80);  // 1.0 exact
  EXPECT_EQ(fp32_to_bf16(0x3f808000u), 0x3f80);  // tie, even stays
  EXPECT_EQ(fp32_to_bf16(0x3f818000u), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(fp32_to_bf16(0x3f808001u), 0x3f81);  // above the tie
  EXPECT_EQ(fp32_to_bf16(0x3f807fffu), 0x3f80);  // below the tie
  EXPECT_EQ(fp32_to_bf16(0xbf818000u), 0xbf82);  // sign symmetric
  EXPECT_EQ(fp32_to_bf16(0x7f7fffffu), 0x7f80);  // max fp32 rounds to infinity
  EXPECT_EQ(fp32_to_bf16(0x7f7f7fffu), 0x7f7f);  // just below the overflow tie
}

TEST(Numerics, Fp32ToBf16Specials) {
  EXPECT_EQ(fp32_to_bf16(0x7f800000u), 0x7f80);
  EXPECT_EQ(fp32_to_bf16(0xff800000u), 0xff80);
  EXPECT_EQ(fp32_to_bf16(0x7f800001u), kBf16QNaN);  // signalling NaN -> canonical
  EXPECT_EQ(fp32_to_bf16(0xffffffffu), kBf16QNaN);  // negative NaN -> canonical
  EXPECT_EQ(fp32_to_bf16(0x00000000u), 0x0000);
  EXPECT_EQ(fp32_to_bf16(0x80000000u), 0x8000);
  EXPECT_EQ(fp32_to_bf16(0x007fffffu), 0x0000);  // denormal -> +0
  EXPECT_EQ(fp32_to_bf16(0x80000001u), 0x8000);  // denormal -> -0
}

TEST(Numerics, Bf16WidensExactly) {
  for (uint32_t x = 0; x < 0x10000; ++x) {
    const auto b = static_cast<uint16_t>(x);
    if (bf16_is_nan(b)) continue;
    const uint32_t w = bf16_to_fp32(b);
    if (fp32_is_denormal(w)) continue;
    EXPECT_EQ(fp32_to_bf16(w), b) << std::hex << x;  // round trip is exact for non-denormals
  }
}

TEST(Numerics, MulPolicy) {
  EXPECT_EQ(bf16_mul(0x3f80, 0x4000), 0x40000000u);                         // 1 * 2
  EXPECT_EQ(bf16_mul(0x7f80, 0x0000), kFp32QNaN);                           // inf * 0
  EXPECT_EQ(bf16_mul(0x7f80, 0x0001), kFp32QNaN);                           // inf * denormal (= 0)
  EXPECT_EQ(bf16_mul(0xff80, 0x3f80), 0xff800000u);                         // -inf * 1
  EXPECT_EQ(bf16_mul(0x8000, 0x3f80), 0x80000000u);                         // -0 * 1 = -0
  EXPECT_EQ(bf16_mul(0x0040, 0x3f80), 0x00000000u);                         // denormal reads as +0
  EXPECT_EQ(bf16_mul(0x7f00, 0x7f00), 0x7f800000u);                         // overflow -> inf
  EXPECT_EQ(bf16_mul(0x0080, 0x0080), 0x00000000u);                         // underflow -> +0
  EXPECT_EQ(bf16_mul(0x8080, 0x0080), 0x80000000u);                         // underflow -> -0
  EXPECT_EQ(bf16_mul(0x3fff, 0x3fff), fp32_bits(1.9921875f * 1.9921875f));  // exact product
}

TEST(Numerics, Bf16TypeRoundTrip) {
  EXPECT_EQ(Bf16::from_float(1.0f).bits, 0x3f80);
  EXPECT_EQ(Bf16::from_float(-2.5f).to_float(), -2.5f);
  EXPECT_TRUE(std::isinf(Bf16::from_float(std::numeric_limits<float>::infinity()).to_float()));
  EXPECT_EQ(Bf16::from_float(std::numeric_limits<float>::quiet_NaN()).bits, kBf16QNaN);
}

}  // namespace
