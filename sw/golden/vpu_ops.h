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
