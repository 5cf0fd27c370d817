// Golden vector-unit numerics: what one lane of the vector unit computes (docs/chip.md, "Vector
// operations, per lane"), and a whole row including the reductions.
//
// Like fp.h, the arithmetic is the host's IEEE float unit with the policy around it: inputs are
// read with DAZ (fp32_flush), results pass through fp32_canon (NaN -> 0x7fc00000, denormal ->
// signed zero). The RTL twin (rtl/vpu/tp_vpu_pkg.sv) is a bit-level algorithm; the tests compare
// the two bit for bit. Needs -ffp-contract=off and the default FP environment (see fp.h).
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

#include "fp.h"
#include "isa_gen.h"

namespace tp::golden {

inline constexpr uint32_t kFp32Sign = 0x80000000u;

constexpr bool fp32_is_zero_daz(uint32_t x) { return (x & 0x7f800000u) == 0; }  // zero or denormal

// fp32 x fp32, IEEE round to nearest even (the host rounds a tiny product at the denormal
// precision, gradual underflow), then the policy: a denormal result becomes a signed zero.
inline uint32_t fp32_mul(uint32_t a, uint32_t b) {
  const float fa = fp32_value(fp32_flush(a));
  const float fb = fp32_value(fp32_flush(b));
  return fp32_canon(fp32_bits(fa * fb));
}

// IEEE comparisons after DAZ: false when either is a NaN; +0 == -0.
inline bool fp32_lt(uint32_t a, uint32_t b) {
  if (fp32_is_nan(a) || fp32_is_nan(b)) return false;
  return fp32_value(fp32_flush(a)) < fp32_value(fp32_flush(b));
}
inline bool fp32_le(uint32_t a, uint32_t b) {
  if (fp32_is_nan(a) || fp32_is_nan(b)) return false;
  return fp32_value(fp32_flush(a)) <= fp32_value(fp32_flush(b));
}
inline bool fp32_eq(uint32_t a, uint32_t b) {
  if (fp32_is_nan(a) || fp32_is_nan(b)) return false;
  return fp32_value(fp32_flush(a)) == fp32_value(fp32_flush(b));
}

// NaN if either is a NaN; else the larger (DAZ inputs, so the result is never denormal);
// max(+0, -0) = +0 in either order.
inline uint32_t fp32_max(uint32_t a, uint32_t b) {
  if (fp32_is_nan(a) || fp32_is_nan(b)) return kFp32QNaN;
  a = fp32_flush(a);
  b = fp32_flush(b);
  if (fp32_is_zero_daz(a) && fp32_is_zero_daz(b)) return a & b & kFp32Sign;
  return fp32_value(a) < fp32_value(b) ? b : a;
}

// NaN if either is a NaN; else the smaller; min(+0, -0) = -0 in either order.
inline uint32_t fp32_min(uint32_t a, uint32_t b) {
  if (fp32_is_nan(a) || fp32_is_nan(b)) return kFp32QNaN;
  a = fp32_flush(a);
  b = fp32_flush(b);
  if (fp32_is_zero_daz(a) && fp32_is_zero_daz(b)) return (a | b) & kFp32Sign;
  return fp32_value(b) < fp32_value(a) ? b : a;
}

// NaN if a is a NaN; a if a > 0 (after DAZ); else +0 (so relu(-0) = relu(denormal) = +0).
inline uint32_t fp32_relu(uint32_t a) {
  if (fp32_is_nan(a)) return kFp32QNaN;
  a = fp32_flush(a);
  return fp32_value(a) > 0.0f ? a : 0u;
}

// ---- exp and reciprocal (docs/numerics.md, "exp and reciprocal") ----------------------------
// Each is a fixed sequence of the operations above (fp32_mul, fp32_add: round to nearest even,
// DAZ/FTZ) and of exponent arithmetic on the bits, so that the RTL (rtl/vpu/tp_vpu_pkg.sv,
// vpu_x1 .. vpu_x4) gives the same bits with its own fp32 units; the host's libm would not. The RTL runs
// each in four pipeline stages; the comments mark them.
namespace vpu_math {
inline constexpr uint32_t kOne = 0x3f800000u;
inline constexpr uint32_t kLog2e = 0x3fb8aa3bu;  // log2(e)
inline constexpr uint32_t kMagic = 0x4b400000u;  // 1.5 x 2^23: t + kMagic - kMagic rounds t to an integer
inline constexpr uint32_t kLn2Hi = 0x3f318000u;  // 0.693359375 (9 bits: k x kLn2Hi is exact)
inline constexpr uint32_t kLn2Lo = 0xb95e8083u;  // ln 2 - kLn2Hi
inline constexpr uint32_t kExpHi = 0x42c80000u;  // 100: above, exp overflows (> 88.73)
inline constexpr uint32_t kExpLo = 0xc2d00000u;  // -104: below, exp flushes (< -87.34)
// e^r on |r| <= ln(2)/2: 1 + r + r^2 (P5 + r (P4 + r (P3 + r (P2 + r (P1 + r P0))))) (Cephes expf)
inline constexpr uint32_t kExpP[6] = {0x39506967u, 0x3ab743ceu, 0x3c088908u, 0x3d2aa9c1u, 0x3e2aaaaau, 0x3f000000u};
inline constexpr uint32_t kRcpC1 = 0x3fb4b4b5u;  // 24/17
inline constexpr uint32_t kRcpC2 = 0x3ef0f0f1u;  // 8/17: 1/m ~ 24/17 - 8/17 m on [1, 2), relative error <= 1/17
constexpr uint32_t neg(uint32_t x) { return x ^ kFp32Sign; }
// x with its biased exponent raised by k (k may be negative): FTZ below the normal range,
// infinity above it. x is normal and positive.
constexpr uint32_t scale_exp(uint32_t x, int k) {
  const int e = static_cast<int>((x >> 23) & 0xffu) + k;
  if (e <= 0) return 0u;
  if (e >= 255) return kFp32Inf;
  return (static_cast<uint32_t>(e) << 23) | (x & 0x007fffffu);
}
}  // namespace vpu_math

// e^a. NaN -> NaN, +inf -> +inf, -inf -> +0, a zero or denormal -> 1; a > 100 -> +inf, a < -104
// -> +0; otherwise a = k ln 2 + r (k the nearest integer to a log2 e, r by Cody and Waite's two
// constants), e^r by a degree-7 polynomial, scaled by 2^k (FTZ when it falls below 2^-126).
inline uint32_t fp32_exp(uint32_t a) {
  using namespace vpu_math;
  if (fp32_is_nan(a)) return kFp32QNaN;
  a = fp32_flush(a);
  if ((a & 0x7fffffffu) == 0) return kOne;
  if (!(a >> 31) && a > kExpHi) return kFp32Inf;  // positive: bigger bits, bigger value
  if ((a >> 31) && a > kExpLo) return 0u;         // negative: bigger bits, more negative
  // stage 1: k
  const uint32_t t = fp32_mul(a, kLog2e);
  const uint32_t kf = fp32_add(fp32_add(t, kMagic), neg(kMagic));  // k as fp32, exactly
  const int k = static_cast<int>(fp32_value(kf));
  // stage 2: r and r^2
  uint32_t r = fp32_add(a, neg(fp32_mul(kf, kLn2Hi)));
  r = fp32_add(r, neg(fp32_mul(kf, kLn2Lo)));
  const uint32_t z = fp32_mul(r, r);
  // stage 3: the polynomial
  uint32_t y = kExpP[0];
  for (int i = 1; i < 6; ++i) y = fp32_add(fp32_mul(y, r), kExpP[i]);
  // stage 4: 1 + r + r^2 y, times 2^k
  y = fp32_add(fp32_add(fp32_mul(y, z), r), kOne);
  return vpu_math::scale_exp(y, k);
}

// 1 / a. NaN -> NaN, +-0 (and denormals) -> +-inf, +-inf -> +-0; otherwise a = +-m 2^E with m in
// [1, 2): r = 24/17 - 8/17 m, three Newton steps r += r (1 - m r), then the sign and 2^-E
// (FTZ when 1/a falls below 2^-126).
inline uint32_t fp32_rcp(uint32_t a) {
  using namespace vpu_math;
  if (fp32_is_nan(a)) return kFp32QNaN;
  a = fp32_flush(a);
  const uint32_t sign = a & kFp32Sign;
  const uint32_t ea = (a >> 23) & 0xffu;
  if (ea == 0) return sign | kFp32Inf;
  if (ea == 0xffu) return sign;
  const uint32_t m = kOne | (a & 0x007fffffu);
  // stage 1: the first estimate
  uint32_t r = fp32_add(kRcpC1, neg(fp32_mul(kRcpC2, m)));
  // stages 2 to 4: one Newton step each (the last also scales)
  for (int i = 0; i < 3; ++i) r = fp32_add(r, fp32_mul(r, fp32_add(kOne, neg(fp32_mul(m, r)))));
  return sign | vpu_math::scale_exp(r, 127 - static_cast<int>(ea));
}

// From the ISA table: the opcodes the vector unit executes, and which of them read b.
constexpr bool vpu_is_vector_op(isa::Op op) {
  for (const auto& d : isa::kInstrs)
    if (d.op == op) return d.unit == isa::Unit::vec;
  return false;
}
constexpr bool vpu_uses_b(isa::Op op) {
  for (const auto& d : isa::kInstrs)
    if (d.op == op) return d.uses_b;
  return false;
}
constexpr bool vpu_is_reduction(isa::Op op) { return op == isa::Op::vredsum || op == isa::Op::vredmax; }

// One lane of a vector op: a, b the operand lanes, m the mask lane (vsel), imm the instruction's
// 32-bit field (vscale). For the reductions this is one step of the fold, acc (a) with the next
// lane (b): vredsum -> fp32_add(a, b), vredmax -> fp32_max(a, b); vpu_row does the whole fold.
// Throws std::invalid_argument for an opcode that is not a vector op.
inline uint32_t vpu_lane(isa::Op op, uint32_t a, uint32_t b, uint32_t m, uint32_t imm) {
  constexpr uint32_t kTrue = 0xffffffffu;
  switch (op) {
    case isa::Op::vadd:
      return fp32_add(a, b);
    case isa::Op::vsub:
      return fp32_add(a, b ^ kFp32Sign);
    case isa::Op::vmul:
      return fp32_mul(a, b);
    case isa::Op::vmax:
      return fp32_max(a, b);
    case isa::Op::vmin:
      return fp32_min(a, b);
    case isa::Op::vrelu:
      return fp32_relu(a);
    case isa::Op::vcmplt:
      return fp32_lt(a, b) ? kTrue : 0u;
    case isa::Op::vcmple:
      return fp32_le(a, b) ? kTrue : 0u;
    case isa::Op::vcmpeq:
      return fp32_eq(a, b) ? kTrue : 0u;
    case isa::Op::vsel:
      return m != 0 ? a : b;
    case isa::Op::vcvtbf:
      return fp32_to_bf16(a);
    case isa::Op::vcvtf:
      return (a & 0xffffu) << 16;
    case isa::Op::vredsum:
      return fp32_add(a, b);
    case isa::Op::vredmax:
      return fp32_max(a, b);
    case isa::Op::vscale:
      return fp32_mul(a, imm);
    case isa::Op::vmov:
      return a;
    case isa::Op::vexp:
      return fp32_exp(a);
    case isa::Op::vrcp:
      return fp32_rcp(a);
    default:
      break;
  }
  throw std::invalid_argument("vpu_lane: opcode " + std::to_string(static_cast<unsigned>(op)) + " is not a vector op");
}

// One row of a vector op (n = a.size() lanes) into out (n lanes). b is read only by ops that
// use it and m only by vsel (either may be empty otherwise). The reductions write the fold
// ((a0 op a1) op a2) ... op a(n-1) into every lane; for n = 1 that is canon(a0).
inline void vpu_row(isa::Op op, std::span<const uint32_t> a, std::span<const uint32_t> b, std::span<const uint32_t> m,
                    uint32_t imm, std::span<uint32_t> out) {
  const std::size_t n = a.size();
  if (n == 0 || out.size() != n) throw std::invalid_argument("vpu_row: a and out must have the same, nonzero size");
  if (vpu_uses_b(op) && b.size() != n) throw std::invalid_argument("vpu_row: b must have as many lanes as a");
  if (op == isa::Op::vsel && m.size() != n)
    throw std::invalid_argument("vpu_row: the mask must have as many lanes as a");
  if (vpu_is_reduction(op)) {
    uint32_t acc = fp32_canon(a[0]);
    for (std::size_t j = 1; j < n; ++j) acc = vpu_lane(op, acc, a[j], 0, 0);
    for (auto& x : out) x = acc;
    return;
  }
  for (std::size_t j = 0; j < n; ++j)
    out[j] = vpu_lane(op, a[j], vpu_uses_b(op) ? b[j] : 0u, op == isa::Op::vsel ? m[j] : 0u, imm);
}

}  // namespace tp::golden
