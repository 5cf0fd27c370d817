// Golden SECDED (72,64), the code of rtl/common/tp_secded_pkg.sv: an extended Hamming code.
// Codeword bit 0 is the overall parity, bits 1..71 Hamming positions (powers of two hold the
// check bits, the other 64 positions the data bits in order).
#pragma once

#include <bitset>
#include <cstdint>

namespace tp::golden {

using Codeword = std::bitset<72>;

struct SecdedResult {
  uint64_t data = 0;
  bool corrected = false;  // one bit was wrong and has been corrected
  bool fatal = false;      // two bits were wrong: detected, not correctable
};

inline Codeword secded_encode(uint64_t data) {
  Codeword c;
  unsigned k = 0;
  for (unsigned pos = 1; pos < 72; ++pos)
    if (pos & (pos - 1)) c[pos] = (data >> k++) & 1u;
  // Check bit 2^i makes the XOR of every position with bit i set zero: the syndrome of a valid
  // word is zero.
  unsigned syn = 0;
  for (unsigned pos = 1; pos < 72; ++pos)
    if (c[pos]) syn ^= pos;
  for (unsigned i = 0; i < 7; ++i) c[1u << i] = (syn >> i) & 1u;
  c[0] = c.count() % 2;  // overall parity: even number of ones in all 72 bits
  return c;
}

inline SecdedResult secded_decode(Codeword c) {
  unsigned syn = 0;
  for (unsigned pos = 1; pos < 72; ++pos)
    if (c[pos]) syn ^= pos;
  const bool odd = c.count() % 2;
  SecdedResult r;
  if (odd && syn < 72) {
    r.corrected = true;
    if (syn != 0) c.flip(syn);
  } else if (odd || syn != 0) {
    r.fatal = true;
  }
  unsigned k = 0;
  for (unsigned pos = 1; pos < 72; ++pos)
    if (pos & (pos - 1)) r.data |= uint64_t{c[pos]} << k++;
  return r;
}

}  // namespace tp::golden
