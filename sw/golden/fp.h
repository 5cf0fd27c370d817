// Golden bf16/fp32 numerics. The policy (docs/numerics.md) in one place:
//  - fp32 -> bf16 rounds to nearest even; overflow rounds to infinity;
//  - denormal inputs to arithmetic read as signed zero (DAZ), denormal results become signed
//    zero (FTZ);
//  - every NaN result is the canonical quiet NaN (sign clear);
//  - bf16 x bf16 products are exact in fp32 (8-bit x 8-bit significands);
//  - addition is IEEE fp32 addition, round to nearest even.
// Arithmetic is done by the host's IEEE float unit, then the policy is applied around it, so
// this model is independent of the RTL's bit-level algorithm (rtl/common/tp_fp_pkg.sv).
#pragma once

#include <bit>
#include <cstdint>

namespace tp::golden {

inline constexpr uint32_t kFp32QNaN = 0x7fc00000u;
inline constexpr uint16_t kBf16QNaN = 0x7fc0u;
inline constexpr uint32_t kFp32Inf = 0x7f800000u;

constexpr bool fp32_is_nan(uint32_t x) { return (x & 0x7fffffffu) > kFp32Inf; }
constexpr bool fp32_is_denormal(uint32_t x) { return (x & 0x7f800000u) == 0 && (x & 0x007fffffu) != 0; }
constexpr bool bf16_is_nan(uint16_t x) { return (x & 0x7fffu) > 0x7f80u; }

// Denormals are read as (and results flushed to) zero of the same sign.
constexpr uint32_t fp32_flush(uint32_t x) { return fp32_is_denormal(x) ? (x & 0x80000000u) : x; }

// Canonical form of a result: NaN -> canonical NaN, denormal -> signed zero.
constexpr uint32_t fp32_canon(uint32_t x) { return fp32_is_nan(x) ? kFp32QNaN : fp32_flush(x); }

inline float fp32_value(uint32_t x) { return std::bit_cast<float>(x); }
inline uint32_t fp32_bits(float f) { return std::bit_cast<uint32_t>(f); }

// bf16 widens to fp32 exactly (the low 16 bits are zero).
constexpr uint32_t bf16_to_fp32(uint16_t x) { return uint32_t{x} << 16; }

// fp32 -> bf16, round to nearest even; NaN -> canonical NaN; denormal -> signed zero.
constexpr uint16_t fp32_to_bf16(uint32_t x) {
  if (fp32_is_nan(x)) return kBf16QNaN;
  x = fp32_flush(x);
  const uint32_t lsb = (x >> 16) & 1u;
  return static_cast<uint16_t>((x + 0x7fffu + lsb) >> 16);
}

// bf16 x bf16 -> fp32 (exact, then the policy).
inline uint32_t bf16_mul(uint16_t a, uint16_t b) {
  const float fa = fp32_value(fp32_flush(bf16_to_fp32(a)));
  const float fb = fp32_value(fp32_flush(bf16_to_fp32(b)));
  return fp32_canon(fp32_bits(fa * fb));
}

// fp32 + fp32 (IEEE round to nearest even, then the policy).
inline uint32_t fp32_add(uint32_t a, uint32_t b) {
  const float fa = fp32_value(fp32_flush(a));
  const float fb = fp32_value(fp32_flush(b));
  return fp32_canon(fp32_bits(fa + fb));
}

// One MXU step: acc + a * w, the product exact, one rounding in the addition.
inline uint32_t bf16_mac(uint32_t acc, uint16_t a, uint16_t w) { return fp32_add(acc, bf16_mul(a, w)); }

// A bf16 value as a type, for code that works with numbers rather than bit patterns.
struct Bf16 {
  uint16_t bits = 0;
  static Bf16 from_float(float f) { return Bf16{fp32_to_bf16(fp32_bits(f))}; }
  float to_float() const { return fp32_value(bf16_to_fp32(bits)); }
  friend bool operator==(Bf16, Bf16) = default;
};

}  // namespace tp::golden
