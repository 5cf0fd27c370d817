// Bit-field helpers on a 128-bit Word, shared by isa.cpp and asm.cpp (internal to tp_isa).
#pragma once

#include <cstdint>

#include "isa.h"

namespace tp::isa {

inline bool fits(uint64_t value, unsigned width) { return width >= 64 || (value >> width) == 0; }

// A signed field's value is held sign-extended to 64 bits (an int64_t cast to uint64_t); it fits
// `width` bits of two's complement when it lies in -2^(width-1) .. 2^(width-1)-1.
inline int64_t signed_min(unsigned width) { return width >= 64 ? INT64_MIN : -(int64_t{1} << (width - 1)); }
inline int64_t signed_max(unsigned width) { return width >= 64 ? INT64_MAX : (int64_t{1} << (width - 1)) - 1; }
inline bool fits_signed(uint64_t value, unsigned width) {
  const auto v = static_cast<int64_t>(value);
  return width > 0 && v >= signed_min(width) && v <= signed_max(width);
}
// The value a field of `width` bits holds as a signed field: bit width-1 extended.
inline uint64_t sign_extend(uint64_t bits, unsigned width) {
  if (width == 0 || width >= 64) return bits;
  const uint64_t sign = uint64_t{1} << (width - 1);
  return (bits ^ sign) - sign;
}

inline uint64_t low_mask(unsigned width) { return width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1; }

// Bits lsb .. lsb+width-1 (width <= 64); a field may straddle the two 64-bit halves.
inline uint64_t get_bits(const Word& w, unsigned lsb, unsigned width) {
  const unsigned i = lsb / 64, sh = lsb % 64;
  uint64_t v = w[i] >> sh;
  if (sh != 0 && sh + width > 64) v |= w[i + 1] << (64 - sh);
  return v & low_mask(width);
}

// ORs the low `width` bits of value into bits lsb.. (the field must be zero before).
inline void set_bits(Word& w, unsigned lsb, unsigned width, uint64_t value) {
  value &= low_mask(width);
  const unsigned i = lsb / 64, sh = lsb % 64;
  w[i] |= value << sh;
  if (sh != 0 && sh + width > 64) w[i + 1] |= value >> (64 - sh);
}

}  // namespace tp::isa
