// The ISA library: encode/decode against an independent bit-by-bit reference, the assembler and
// disassembler, .tpb files and preset fingerprints (docs/isa.md).
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <random>
#include <set>
#include <utility>

#include "config.h"
#include "isa.h"
#include "tb_util.h"

namespace tp::isa {
namespace {

const Preset& tiny() {
  static const Preset p = load_preset("tiny");
  return p;
}

// Runs fn and returns the message of the exception it throws (fails the test if none).
template <class E = IsaError>
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

uint64_t random_bits(std::mt19937_64& rng, unsigned width) {
  const uint64_t v = rng();
  switch (rng() % 4) {  // bias towards the edges of the range
    case 0:
      return 0;
    case 1:
      return width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
    default:
      return width >= 64 ? v : v & ((uint64_t{1} << width) - 1);
  }
}

// A signed field holds its value sign-extended to 64 bits: bits of `width`, bit width-1 copied up.
uint64_t sign_extended(uint64_t bits, unsigned width) {
  return ((bits >> (width - 1)) & 1) ? bits | ~((uint64_t{1} << width) - 1) : bits;
}

Instr random_instr(std::mt19937_64& rng, const InstrDesc& d) {
  Instr in;
  in.op = d.op;
  in.wait = static_cast<unsigned>(random_bits(rng, kWaitWidth));
  in.signal = static_cast<unsigned>(random_bits(rng, kSignalWidth));
  for (unsigned k = 0; k < d.nfields; ++k) {
    const FieldDesc& f = d.fields[k];
    const uint64_t bits = random_bits(rng, f.width);
    field(in.f, f.id) = f.is_signed ? sign_extended(bits, f.width) : bits;
  }
  return in;
}

Instr random_instr(std::mt19937_64& rng) { return random_instr(rng, kInstrs[rng() % kInstrs.size()]); }

// The reference encoder: one bit at a time, straight from the table's lsb and width.
void put_bits(Word& w, unsigned lsb, unsigned width, uint64_t v) {
  for (unsigned j = 0; j < width; ++j)
    if ((v >> j) & 1) w[(lsb + j) / 64] |= uint64_t{1} << ((lsb + j) % 64);
}
Word reference_encode(const Instr& in) {
  Word w{};
  put_bits(w, kOpcodeLsb, kOpcodeWidth, static_cast<unsigned>(in.op));
  put_bits(w, kWaitLsb, kWaitWidth, in.wait);
  put_bits(w, kSignalLsb, kSignalWidth, in.signal);
  const InstrDesc& d = desc(in.op);
  for (unsigned k = 0; k < d.nfields; ++k) put_bits(w, d.fields[k].lsb, d.fields[k].width, field(in.f, d.fields[k].id));
  return w;
}

// Bits an op's encoding uses (common fields and its format's fields).
std::vector<bool> used_bits(const InstrDesc& d) {
  std::vector<bool> used(kInstrBits, false);
  auto mark = [&](unsigned lsb, unsigned width) {
    for (unsigned j = lsb; j < lsb + width; ++j) used.at(j) = true;
  };
  mark(kOpcodeLsb, kOpcodeWidth);
  mark(kWaitLsb, kWaitWidth);
  mark(kSignalLsb, kSignalWidth);
  for (unsigned k = 0; k < d.nfields; ++k) mark(d.fields[k].lsb, d.fields[k].width);
  return used;
}

// An instruction built from (field, value) pairs.
Instr make(Op op, std::initializer_list<std::pair<FieldId, uint64_t>> fields, unsigned wait = 0, unsigned signal = 0) {
  Instr in;
  in.op = op;
  in.wait = wait;
  in.signal = signal;
  for (const auto& [id, v] : fields) field(in.f, id) = v;
  return in;
}

// ---------------------------------------------------------------------------------------------
// The table and encode/decode

TEST(IsaTable, FieldsDoNotOverlapAndStayBelowTheCommonFields) {
  for (const InstrDesc& d : kInstrs) {
    std::vector<int> owner(kInstrBits, -1);
    for (unsigned k = 0; k < d.nfields; ++k) {
      const FieldDesc& f = d.fields[k];
      ASSERT_LE(f.lsb + f.width, kFormatBits) << d.name << "." << f.name;
      ASSERT_LE(f.width, 64u) << d.name << "." << f.name;
      for (unsigned j = f.lsb; j < f.lsb + f.width; ++j) {
        EXPECT_EQ(owner[j], -1) << d.name << ": bit " << j << " in two fields";
        owner[j] = static_cast<int>(k);
      }
    }
    EXPECT_EQ(desc(d.op).name, d.name);
    EXPECT_EQ(find_mnemonic(d.name), &desc(d.op));
  }
  EXPECT_EQ(kSignalLsb, kFormatBits);
  EXPECT_EQ(kWaitLsb, kSignalLsb + kSignalWidth);
  EXPECT_EQ(kOpcodeLsb + kOpcodeWidth, kInstrBits);
}

TEST(IsaTable, LookUps) {
  ASSERT_NE(find_mnemonic("dma.ld"), nullptr);
  EXPECT_EQ(find_mnemonic("dma.ld")->op, Op::dma_ld);
  EXPECT_EQ(find_mnemonic("dma_ld"), nullptr);
  EXPECT_EQ(find_mnemonic(""), nullptr);
  EXPECT_EQ(err_name(Err::vmem_range), "vmem_range");
  EXPECT_EQ(err_name(Err::overlap), "overlap");
  EXPECT_EQ(err_name(static_cast<Err>(200)), "unknown");
  EXPECT_TRUE(uses_b(Op::vadd));
  EXPECT_TRUE(uses_b(Op::vsel));
  EXPECT_FALSE(uses_b(Op::vrelu));
  EXPECT_FALSE(uses_b(Op::vscale));
  EXPECT_TRUE(uses_mask(Op::vsel));
  EXPECT_FALSE(uses_mask(Op::vadd));
  EXPECT_EQ(find_field(desc(Op::mxu_mm), "accumulate")->width, 1u);
  EXPECT_EQ(find_field(desc(Op::mxu_mm), "dst"), nullptr);
  EXPECT_EQ(error_of([] { desc(static_cast<Op>(6)); }), "opcode 6 is not in the ISA table");
}

TEST(IsaTable, UnitOf) {
  EXPECT_EQ(unit_of(make(Op::fence, {{FieldId::unit, 0}})), Unit::load);
  EXPECT_EQ(unit_of(make(Op::fence, {{FieldId::unit, 2}})), Unit::vec);
  EXPECT_EQ(unit_of(make(Op::fence, {{FieldId::unit, 3}})), Unit::store);
  EXPECT_EQ(unit_of(make(Op::fence, {{FieldId::unit, 4}})), Unit::ici);
  EXPECT_EQ(unit_of(make(Op::halt, {})), Unit::front);
  EXPECT_EQ(unit_of(make(Op::ici_send, {})), Unit::ici);
  EXPECT_EQ(unit_of(make(Op::dma_ld, {})), Unit::load);
  EXPECT_EQ(unit_of(make(Op::dma_st, {})), Unit::store);
  EXPECT_EQ(unit_of(make(Op::mxu_mm, {})), Unit::mxu);
  EXPECT_EQ(unit_of(make(Op::vmov, {})), Unit::vec);
  EXPECT_EQ(kQueues, 5u);
  EXPECT_EQ(error_of([] { unit_of(make(Op::fence, {{FieldId::unit, 5}})); }), "fence: unit 5 is not a queue (0..4)");
  EXPECT_EQ(error_of([] { unit_of(make(Op::fence, {{FieldId::unit, 7}})); }), "fence: unit 7 is not a queue (0..4)");
}

TEST(IsaEncode, HaltIsOnlyTheCommonFields) {
  const Word w = encode(make(Op::halt, {}, 5, 9));
  EXPECT_EQ(w[0], 0u);
  EXPECT_EQ(w[1],
            (uint64_t{1} << (kOpcodeLsb - 64)) | (uint64_t{5} << (kWaitLsb - 64)) | (uint64_t{9} << (kSignalLsb - 64)));
}

TEST(IsaEncode, RandomRoundTripOfEveryInstruction) {
  std::mt19937_64 rng(tb::test_seed(tb::current_test_name()));
  for (const InstrDesc& d : kInstrs) {
    for (int trial = 0; trial < 300; ++trial) {
      const Instr in = random_instr(rng, d);
      const Word w = encode(in);
      ASSERT_EQ(w, reference_encode(in)) << disassemble(in);
      const Decoded dec = decode(w);
      ASSERT_EQ(dec.err, Err::none) << disassemble(in);
      ASSERT_EQ(dec.instr, in) << disassemble(in);
    }
  }
}

TEST(IsaEncode, ValuesThatDoNotFitAreErrors) {
  EXPECT_EQ(error_of([] {
              encode(make(Op::dma_ld, {{FieldId::rows, 1 << 16}}));
            }),
            "dma.ld: field rows = 65536 (0x10000) does not fit its 16 bits");
  EXPECT_EQ(error_of([] {
              encode(make(Op::vscale, {{FieldId::imm, uint64_t{1} << 32}}));
            }),
            "vscale: field imm = 4294967296 (0x100000000) does not fit its 32 bits");
  EXPECT_EQ(error_of([] {
              encode(make(Op::mxu_mm, {{FieldId::accumulate, 2}}));
            }),
            "mxu.mm: field accumulate = 2 (0x2) does not fit its 1 bits");
  EXPECT_EQ(error_of([] { encode(make(Op::halt, {}, 16)); }), "halt: field wait = 16 (0x10) does not fit its 4 bits");
  EXPECT_EQ(error_of([] { encode(make(Op::halt, {}, 0, 99)); }),
            "halt: field signal = 99 (0x63) does not fit its 4 bits");
  EXPECT_EQ(error_of([] {
              encode(make(Op::mxu_lw, {{FieldId::rows, 3}}));
            }),
            "mxu.lw: has no field rows (format 'lw'), but it is set to 3");
  // The largest values do fit.
  EXPECT_NO_THROW(encode(make(Op::dma_ld, {{FieldId::rows, 0xffff}, {FieldId::hstride, 0xffffffff}}, 15, 15)));
}

TEST(IsaDecode, IllegalOpcodes) {
  std::set<unsigned> legal;
  for (const InstrDesc& d : kInstrs) legal.insert(static_cast<unsigned>(d.op));
  unsigned illegal = 0;
  for (unsigned op = 0; op < (1u << kOpcodeWidth); ++op) {
    Word w{};
    put_bits(w, kOpcodeLsb, kOpcodeWidth, op);
    put_bits(w, kWaitLsb, kWaitWidth, 3);
    const Decoded dec = decode(w);
    if (legal.count(op)) {
      EXPECT_EQ(dec.err, Err::none) << op;
      EXPECT_EQ(static_cast<unsigned>(dec.instr.op), op);
    } else {
      ++illegal;
      EXPECT_EQ(dec.err, Err::illegal_opcode) << op;
      EXPECT_EQ(dec.instr.wait, 3u) << op;
    }
  }
  EXPECT_EQ(illegal, 64 - kInstrs.size());
  // ici.send is 32; the rest of the ICI range is reserved, so illegal.
  EXPECT_EQ(static_cast<unsigned>(Op::ici_send), 32u);
  for (unsigned op = 33; op <= 39; ++op) {
    Word w{};
    put_bits(w, kOpcodeLsb, kOpcodeWidth, op);
    EXPECT_EQ(decode(w).err, Err::illegal_opcode) << op;
  }
}

TEST(IsaDecode, EverySetReservedBitIsBadField) {
  std::mt19937_64 rng(tb::test_seed(tb::current_test_name()));
  for (const InstrDesc& d : kInstrs) {
    const std::vector<bool> used = used_bits(d);
    unsigned reserved = 0;
    for (unsigned j = 0; j < kInstrBits; ++j) {
      const Instr in = random_instr(rng, d);
      Word w = encode(in);
      w[j / 64] |= uint64_t{1} << (j % 64);
      const Decoded dec = decode(w);
      if (used[j]) {
        if (j < kFormatBits) {
          EXPECT_EQ(dec.err, Err::none) << d.name << " bit " << j;
        }
      } else {
        ++reserved;
        EXPECT_EQ(dec.err, Err::bad_field) << d.name << " bit " << j;
        EXPECT_EQ(dec.instr, in) << d.name << " bit " << j << ": the fields still decode";
      }
    }
    unsigned width = 0;
    for (unsigned k = 0; k < d.nfields; ++k) width += d.fields[k].width;
    EXPECT_EQ(reserved, kFormatBits - width) << d.name;
  }
  // Spot checks that do not depend on the loop above.
  EXPECT_EQ(decode({1, uint64_t{1} << (kOpcodeLsb - 64)}).err, Err::bad_field);  // halt with bit 0
  EXPECT_EQ(decode({uint64_t{1} << 3, 0}).err, Err::bad_field);                  // fence with bit 3
  EXPECT_EQ(decode({uint64_t{3}, 0}).err, Err::none);                            // fence unit 3
  EXPECT_EQ(decode({uint64_t{4}, 0}).err, Err::none);                            // fence unit 4 (ici)
  EXPECT_EQ(decode({uint64_t{7}, 0}).instr.f.unit, 7u);  // no queue, but decodes: the chip's check refuses it
}

// ---------------------------------------------------------------------------------------------
// The assembler

constexpr std::string_view kEveryMnemonic = R"(# Every mnemonic, labels, .set, comments, optional fields and floats.
.preset tiny
.set W, 64          ; weight tile rows
.set X, W+8         # activations after it
.set MASK, 0x300
.set HALF, 0.5      ; a float constant is its bit pattern

start:
  dma.ld 0, 0x100, 4, 2, 16 signal=1          ; rows=4 cols=2
  dma.st 0b1010, 1, 1, 1, 0, wait=2
w: mxu.lw W wait=1
  mxu.mm X, 0, 8
  mxu.mm X, 8, 8, 1
  mxu.mm X, 16, 8, accumulate=1, signal=3
  vadd 100, 0, 8, b=200, a_acc=1, b_bcast=1
  vsub 100, 0, 8, 200
  vmul 100, 101, 1, b=102
  vmax dst=1, a=2, rows=3, b=4
  vmin 1, 2, 3, b=X-2
  vrelu 1, 2, 3 wait=15 signal=15
  vcmplt 1, 2, 3, b=4
  vcmple 1, 2, 3, b=4
  vcmpeq 1, 2, 3, b=4
  vsel 100, 200, 8, b=300, imm=MASK
  vcvtbf 1, 2, 3
  vcvtf 1, 2, 3
  vredsum 1, 0, 1, a_acc=1
  vredmax 1, 2, 1
  vscale 100, 100, 8, imm=1.5
  vscale 100, 100, 8, imm=-0.25
  vscale 100, 100, 8, imm=1e-3
  vscale 100, 100, 8, imm=-inf
  vscale 100, 100, 8, imm=nan
  vscale 100, 100, 8, imm=HALF
  vscale 100, 100, 8, imm=0x3f800000
  vmov 1, 2, 3
  vmov end, w, start+1
  fence vec signal=4
  fence 3
  fence ici wait=5
  ici.send 0, 64, 8, -1, 0, rsem=3 signal=2
  ici.send vaddr=X, raddr=W, rows=1, dx=31, dy=-32, abs=1
  ici.send 1, 2, 3, -W+33, W-65
halt_here: halt
end:
)";

TEST(IsaAsm, EveryMnemonic) {
  using F = FieldId;
  const Program p = assemble(kEveryMnemonic, "every.s", tiny());
  EXPECT_EQ(p.preset, "tiny");
  EXPECT_EQ(p.fingerprint, fingerprint(tiny()));
  auto imm = [](float f) { return uint64_t{std::bit_cast<uint32_t>(f)}; };
  auto neg = [](uint64_t v) { return uint64_t{0} - v; };  // a signed field's value, sign-extended
  const std::vector<Instr> want = {
      make(Op::dma_ld, {{F::vaddr, 0}, {F::haddr, 0x100}, {F::rows, 4}, {F::cols, 2}, {F::hstride, 16}}, 0, 1),
      make(Op::dma_st, {{F::vaddr, 10}, {F::haddr, 1}, {F::rows, 1}, {F::cols, 1}, {F::hstride, 0}}, 2, 0),
      make(Op::mxu_lw, {{F::vaddr, 64}}, 1, 0),
      make(Op::mxu_mm, {{F::vaddr, 72}, {F::acc, 0}, {F::rows, 8}}),
      make(Op::mxu_mm, {{F::vaddr, 72}, {F::acc, 8}, {F::rows, 8}, {F::accumulate, 1}}),
      make(Op::mxu_mm, {{F::vaddr, 72}, {F::acc, 16}, {F::rows, 8}, {F::accumulate, 1}}, 0, 3),
      make(Op::vadd, {{F::dst, 100}, {F::a, 0}, {F::rows, 8}, {F::b, 200}, {F::a_acc, 1}, {F::b_bcast, 1}}),
      make(Op::vsub, {{F::dst, 100}, {F::a, 0}, {F::rows, 8}, {F::b, 200}}),
      make(Op::vmul, {{F::dst, 100}, {F::a, 101}, {F::rows, 1}, {F::b, 102}}),
      make(Op::vmax, {{F::dst, 1}, {F::a, 2}, {F::rows, 3}, {F::b, 4}}),
      make(Op::vmin, {{F::dst, 1}, {F::a, 2}, {F::rows, 3}, {F::b, 70}}),
      make(Op::vrelu, {{F::dst, 1}, {F::a, 2}, {F::rows, 3}}, 15, 15),
      make(Op::vcmplt, {{F::dst, 1}, {F::a, 2}, {F::rows, 3}, {F::b, 4}}),
      make(Op::vcmple, {{F::dst, 1}, {F::a, 2}, {F::rows, 3}, {F::b, 4}}),
      make(Op::vcmpeq, {{F::dst, 1}, {F::a, 2}, {F::rows, 3}, {F::b, 4}}),
      make(Op::vsel, {{F::dst, 100}, {F::a, 200}, {F::rows, 8}, {F::b, 300}, {F::imm, 0x300}}),
      make(Op::vcvtbf, {{F::dst, 1}, {F::a, 2}, {F::rows, 3}}),
      make(Op::vcvtf, {{F::dst, 1}, {F::a, 2}, {F::rows, 3}}),
      make(Op::vredsum, {{F::dst, 1}, {F::a, 0}, {F::rows, 1}, {F::a_acc, 1}}),
      make(Op::vredmax, {{F::dst, 1}, {F::a, 2}, {F::rows, 1}}),
      make(Op::vscale, {{F::dst, 100}, {F::a, 100}, {F::rows, 8}, {F::imm, 0x3fc00000}}),
      make(Op::vscale, {{F::dst, 100}, {F::a, 100}, {F::rows, 8}, {F::imm, 0xbe800000}}),
      make(Op::vscale, {{F::dst, 100}, {F::a, 100}, {F::rows, 8}, {F::imm, imm(1e-3f)}}),
      make(Op::vscale, {{F::dst, 100}, {F::a, 100}, {F::rows, 8}, {F::imm, 0xff800000}}),
      make(Op::vscale, {{F::dst, 100}, {F::a, 100}, {F::rows, 8}, {F::imm, 0x7fc00000}}),
      make(Op::vscale, {{F::dst, 100}, {F::a, 100}, {F::rows, 8}, {F::imm, 0x3f000000}}),
      make(Op::vscale, {{F::dst, 100}, {F::a, 100}, {F::rows, 8}, {F::imm, 0x3f800000}}),
      make(Op::vmov, {{F::dst, 1}, {F::a, 2}, {F::rows, 3}}),
      make(Op::vmov, {{F::dst, 36}, {F::a, 2}, {F::rows, 1}}),  // end = 36 (after halt), w = 2, start = 0
      make(Op::fence, {{F::unit, 2}}, 0, 4),
      make(Op::fence, {{F::unit, 3}}),
      make(Op::fence, {{F::unit, 4}}, 5, 0),
      make(Op::ici_send, {{F::vaddr, 0}, {F::raddr, 64}, {F::rows, 8}, {F::dx, neg(1)}, {F::dy, 0}, {F::rsem, 3}}, 0,
           2),
      make(Op::ici_send, {{F::vaddr, 72}, {F::raddr, 64}, {F::rows, 1}, {F::dx, 31}, {F::dy, neg(32)}, {F::abs, 1}}),
      make(Op::ici_send, {{F::vaddr, 1}, {F::raddr, 2}, {F::rows, 3}, {F::dx, neg(31)}, {F::dy, neg(1)}}),
      make(Op::halt, {}),
  };
  ASSERT_EQ(p.code.size(), want.size());
  std::set<Op> seen;
  for (size_t i = 0; i < want.size(); ++i) {
    const Decoded dec = decode(p.code[i]);
    EXPECT_EQ(dec.err, Err::none) << "instruction " << i;
    EXPECT_EQ(dec.instr, want[i]) << "instruction " << i << ": got " << disassemble(dec.instr) << ", want "
                                  << disassemble(want[i]);
    seen.insert(dec.instr.op);
  }
  EXPECT_EQ(seen.size(), kInstrs.size()) << "the program does not use every mnemonic";
}

TEST(IsaAsm, DisassemblyLines) {
  using F = FieldId;
  EXPECT_EQ(disassemble(make(Op::halt, {})), "halt");
  EXPECT_EQ(disassemble(make(Op::fence, {{F::unit, 2}}, 0, 4)), "fence vec signal=4");
  EXPECT_EQ(
      disassemble(make(Op::dma_ld, {{F::vaddr, 1}, {F::haddr, 2}, {F::rows, 3}, {F::cols, 4}, {F::hstride, 5}}, 6)),
      "dma.ld 1, 2, 3, 4, 5 wait=6");
  EXPECT_EQ(disassemble(make(Op::mxu_mm, {{F::vaddr, 72}, {F::acc, 8}, {F::rows, 8}, {F::accumulate, 1}})),
            "mxu.mm 72, 8, 8, accumulate=1");
  EXPECT_EQ(disassemble(make(Op::vadd, {{F::dst, 100}, {F::a, 0}, {F::rows, 8}, {F::b, 200}, {F::b_bcast, 1}}, 1, 2)),
            "vadd 100, 0, 8, b=200, b_bcast=1 wait=1 signal=2");
  EXPECT_EQ(disassemble(make(Op::vsel, {{F::dst, 1}, {F::a, 2}, {F::rows, 3}, {F::b, 4}, {F::imm, 0x300}})),
            "vsel 1, 2, 3, b=4, imm=0x300");
  EXPECT_EQ(disassemble(make(Op::vscale, {{F::dst, 1}, {F::a, 1}, {F::rows, 3}, {F::imm, 0xbe800000}})),
            "vscale 1, 1, 3, imm=0xbe800000  # imm = -0.25");
}

// ---------------------------------------------------------------------------------------------
// ici.send and signed fields

TEST(IsaIci, SendEncodesSignedFieldsInTwosComplement) {
  using F = FieldId;
  const InstrDesc& d = desc(Op::ici_send);
  EXPECT_EQ(d.unit, Unit::ici);
  EXPECT_EQ(d.format, "ici");
  const FieldDesc* dx = find_field(d, "dx");
  const FieldDesc* dy = find_field(d, "dy");
  ASSERT_NE(dx, nullptr);
  ASSERT_NE(dy, nullptr);
  EXPECT_TRUE(dx->is_signed);
  EXPECT_TRUE(dy->is_signed);
  EXPECT_FALSE(find_field(d, "rows")->is_signed);
  EXPECT_TRUE(find_field(d, "rsem")->optional);
  EXPECT_TRUE(find_field(d, "abs")->optional);
  for (const InstrDesc& other : kInstrs)  // only dx and dy are signed
    for (unsigned k = 0; k < other.nfields; ++k)
      EXPECT_EQ(other.fields[k].is_signed, other.fields[k].id == F::dx || other.fields[k].id == F::dy)
          << other.name << "." << other.fields[k].name;

  const Instr in = make(Op::ici_send,
                        {{F::vaddr, 5},
                         {F::raddr, 6},
                         {F::rows, 7},
                         {F::dx, uint64_t{0} - 1},
                         {F::dy, uint64_t{0} - 32},
                         {F::rsem, 9},
                         {F::abs, 1}},
                        3, 4);
  const Word w = encode(in);
  EXPECT_EQ(w, reference_encode(in));
  // The field bits are the low 6 bits of the value: -1 is 0b111111, -32 is 0b100000.
  auto bits = [&](const FieldDesc* f) {
    uint64_t v = 0;
    for (unsigned j = 0; j < f->width; ++j) v |= ((w[(f->lsb + j) / 64] >> ((f->lsb + j) % 64)) & 1) << j;
    return v;
  };
  EXPECT_EQ(bits(dx), 0x3fu);
  EXPECT_EQ(bits(dy), 0x20u);
  const Decoded dec = decode(w);
  ASSERT_EQ(dec.err, Err::none);
  EXPECT_EQ(dec.instr, in);
  EXPECT_EQ(static_cast<int64_t>(dec.instr.f.dx), -1);
  EXPECT_EQ(static_cast<int64_t>(dec.instr.f.dy), -32);
  EXPECT_EQ(disassemble(in), "ici.send 5, 6, 7, -1, -32, rsem=9, abs=1 wait=3 signal=4");
  EXPECT_EQ(disassemble(make(Op::ici_send, {{F::rows, 1}, {F::dx, 31}})), "ici.send 0, 0, 1, 31, 0");
}

TEST(IsaIci, SignedRangeIsCheckedByEncode) {
  using F = FieldId;
  EXPECT_NO_THROW(encode(make(Op::ici_send, {{F::rows, 1}, {F::dx, 31}, {F::dy, uint64_t{0} - 32}})));
  EXPECT_EQ(error_of([] {
              encode(make(Op::ici_send, {{F::rows, 1}, {F::dx, 32}}));
            }),
            "ici.send: field dx = 32 does not fit its 6 bits (signed: -32 .. 31)");
  EXPECT_EQ(error_of([] {
              encode(make(Op::ici_send, {{F::rows, 1}, {F::dy, uint64_t{0} - 33}}));
            }),
            "ici.send: field dy = -33 does not fit its 6 bits (signed: -32 .. 31)");
  // The raw field bits are not the value: 0x3f is 63, out of range (write -1).
  EXPECT_EQ(error_of([] {
              encode(make(Op::ici_send, {{F::rows, 1}, {F::dx, 0x3f}}));
            }),
            "ici.send: field dx = 63 does not fit its 6 bits (signed: -32 .. 31)");
  EXPECT_EQ(error_of([] {
              encode(make(Op::ici_send, {{F::rsem, 16}}));
            }),
            "ici.send: field rsem = 16 (0x10) does not fit its 4 bits");
  EXPECT_EQ(error_of([] {
              encode(make(Op::fence, {{F::unit, 8}}));
            }),
            "fence: field unit = 8 (0x8) does not fit its 3 bits");
  EXPECT_NO_THROW(encode(make(Op::fence, {{F::unit, 7}})));  // encodable; the chip's check refuses it
}

TEST(IsaIci, AssembleDisassembleRoundTrip) {
  constexpr std::string_view src = R"(.set RIGHT, 1
.set ROWS, 8
fence ici wait=1
ici.send 0, 64, ROWS, RIGHT, 0, rsem=3 signal=2
ici.send vaddr=0, raddr=64, rows=8, dx=-1, dy=0, rsem=3 signal=2
ici.send 8, 72, 1, -32, 31, abs=1, rsem=15
ici.send 8, 72, 1, dy=-RIGHT, dx=RIGHT-2
ici.send 0, 0, 1, -0, 0
fence unit=4 signal=1
halt
)";
  const Program p = assemble(src, "ici.s", tiny());
  ASSERT_EQ(p.code.size(), 8u);
  std::vector<Instr> got;
  for (const Word& w : p.code) {
    const Decoded dec = decode(w);
    ASSERT_EQ(dec.err, Err::none);
    got.push_back(dec.instr);
  }
  EXPECT_EQ(got[0].op, Op::fence);
  EXPECT_EQ(unit_of(got[0]), Unit::ici);
  using F = FieldId;
  EXPECT_EQ(got[1], make(Op::ici_send,
                         {{F::vaddr, 0}, {F::raddr, 64}, {F::rows, 8}, {F::dx, 1}, {F::dy, 0}, {F::rsem, 3}}, 0, 2));
  EXPECT_EQ(static_cast<int64_t>(got[2].f.dx), -1);
  EXPECT_EQ(static_cast<int64_t>(got[3].f.dx), -32);
  EXPECT_EQ(static_cast<int64_t>(got[3].f.dy), 31);
  EXPECT_EQ(got[3].f.abs, 1u);
  EXPECT_EQ(static_cast<int64_t>(got[4].f.dx), -1);
  EXPECT_EQ(static_cast<int64_t>(got[4].f.dy), -1);
  EXPECT_EQ(got[5].f.dx, 0u);
  EXPECT_EQ(unit_of(got[6]), Unit::ici);
  const std::string text = disassemble(p);
  EXPECT_NE(text.find("ici.send 0, 64, 8, -1, 0, rsem=3 signal=2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("ici.send 8, 72, 1, -32, 31, rsem=15, abs=1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("fence ici wait=1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("fence ici signal=1\n"), std::string::npos) << text;
  EXPECT_EQ(assemble(text, "back.s", tiny()), p);

  // Every dx, dy value round-trips through the text.
  for (int v = -32; v <= 31; ++v) {
    const std::string line = fmt::format("ici.send 1, 2, 3, {}, {}\n", v, -1 - v);
    const Program q = assemble(line, "v.s", tiny());
    const Instr in = decode(q.code.at(0)).instr;
    EXPECT_EQ(static_cast<int64_t>(in.f.dx), v);
    EXPECT_EQ(static_cast<int64_t>(in.f.dy), -1 - v);
    EXPECT_EQ(disassemble(in) + "\n", line);
  }
}

TEST(IsaAsm, RandomProgramsRoundTripBitExact) {
  std::mt19937_64 rng(tb::test_seed(tb::current_test_name()));
  for (int prog = 0; prog < 30; ++prog) {
    Program p;
    p.preset = tiny().name;
    p.fingerprint = fingerprint(tiny());
    const size_t n = rng() % 80;
    for (size_t i = 0; i < n; ++i) {
      if (rng() % 10 == 0) {
        p.code.push_back({rng(), rng()});  // mostly illegal opcodes or reserved bits: a .word line
      } else {
        p.code.push_back(encode(random_instr(rng)));
      }
    }
    const std::string text = disassemble(p);
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), static_cast<std::ptrdiff_t>(n + 1));
    const Program back = assemble(text, "roundtrip.s", tiny());
    ASSERT_EQ(back, p) << text;
  }
}

TEST(IsaAsm, LabelsMayBeUsedBeforeTheirLine) {
  const Program p = assemble("mxu.lw end  # forward\nhalt\n\nend:\n", "f.s", tiny());
  ASSERT_EQ(p.code.size(), 2u);
  EXPECT_EQ(decode(p.code[0]).instr.f.vaddr, 2u);
  EXPECT_TRUE(assemble("", "empty.s", tiny()).code.empty());
  EXPECT_EQ(assemble(".word 0x5, 0x6\n", "w.s", tiny()).code, (std::vector<Word>{{5, 6}}));
}

struct BadInput {
  const char* text;
  const char* error;
};

TEST(IsaAsm, ErrorsNameFileLineColumnAndToken) {
  const BadInput cases[] = {
      {"  vfoo 1, 2", "t.s:1:3: unknown mnemonic 'vfoo'"},
      {"halt\nmxu.lw 0x", "t.s:2:8: bad number '0x'"},
      {"mxu.lw foo", "t.s:1:8: unknown name 'foo'"},
      {"mxu.lw W+1", "t.s:1:8: unknown name 'W'"},
      {"mxu.lw 1, 2", "t.s:1:11: too many operands for mxu.lw (it takes 1) '2'"},
      {"a: halt\na: halt", "t.s:2:1: redefinition of 'a'"},
      {".set a, 1\na: halt", "t.s:1:6: redefinition of 'a'"},
      {".set inf, 1", "t.s:1:6: bad constant name 'inf'"},
      {"dma.ld 0, 0, 4", "t.s:1:1: missing operand cols of 'dma.ld'"},
      {"mxu.mm 0, 0, 70000", "t.s:1:14: value 70000 does not fit rows (16 bits) '70000'"},
      {"halt wait=16", "t.s:1:11: value 16 does not fit wait (4 bits: semaphores are 0..15) '16'"},
      {"mxu.lw -1", "t.s:1:8: negative values are not allowed here: '-1'"},
      {".set A, 2\nmxu.lw A-3", "t.s:2:8: negative values are not allowed here: 'A-3'"},
      {"vscale 0, 0, 1, imm=-2", "t.s:1:21: a negative imm must be a float literal (like -2.0), not '-2'"},
      {"vscale 0, 0, 1, imm=1.5.5", "t.s:1:21: bad number '1.5.5'"},
      {"vscale 0, 0, 1, imm=1e39", "t.s:1:21: float literal out of the fp32 range: '1e39'"},
      {"mxu.lw 1.5", "t.s:1:8: bad number '1.5'"},
      {"mxu.lw 99999999999999999999", "t.s:1:8: number does not fit 64 bits: '99999999999999999999'"},
      {".preset small", "t.s:1:9: source is for another preset than the one assembled for ('tiny'): 'small'"},
      {"mxu.lw 0 @", "t.s:1:10: unexpected character '@'"},
      {"mxu.mm 0, 0, 1, bogus=1", "t.s:1:17: mxu.mm has no field 'bogus'"},
      {"mxu.mm 0, 0, 1, rows=2", "t.s:1:17: field rows given twice: 'rows=2'"},
      {"mxu.mm acc=1, 0", "t.s:1:15: positional operand after a named one: '0'"},
      {"mxu.lw 0,,", "t.s:1:10: expected an operand before ','"},
      {"mxu.lw 0,", "t.s:1:9: expected an operand before ','"},
      {"# comment\n\nhalt ; ok\n  mxu.lw 1 2",
       "t.s:4:10: expected a value of the form NUMBER, NAME, NAME+NUMBER or NAME-NUMBER, got '1 2'"},
      {".bogus 1", "t.s:1:1: unknown directive '.bogus'"},
      {"fence 8", "t.s:1:7: value 8 does not fit unit (3 bits) '8'"},
      {"fence ici, 1", "t.s:1:12: too many operands for fence (it takes 1) '1'"},
      {"ici.send 0, 0, 1, 32, 0", "t.s:1:19: value 32 does not fit dx (6 bits, signed: -32 .. 31) '32'"},
      {"ici.send 0, 0, 1, 0, -33", "t.s:1:22: value -33 does not fit dy (6 bits, signed: -32 .. 31) '-33'"},
      {".set K, 40\nici.send 0, 0, 1, dx=-K, dy=0",
       "t.s:2:22: value -40 does not fit dx (6 bits, signed: -32 .. 31) '-K'"},
      {".set K, 40\nici.send 0, 0, 1, K-80, 0",
       "t.s:2:19: value -40 does not fit dx (6 bits, signed: -32 .. 31) 'K-80'"},
      {"ici.send 0, 0, 1, 0x3f, 0", "t.s:1:19: value 63 does not fit dx (6 bits, signed: -32 .. 31) '0x3f'"},
      {"ici.send 0, 0, 1, -99999999999999999999, 0", "t.s:1:20: number does not fit 64 bits: '99999999999999999999'"},
      {"ici.send 0, 0, 1, -9223372036854775808, 0", "t.s:1:19: value does not fit 64 bits: '-9223372036854775808'"},
      {"ici.send 0, 0, 1, 0, 0, rsem=-1", "t.s:1:30: negative values are not allowed here: '-1'"},
      {"ici.send -1, 0, 1, 0, 0", "t.s:1:10: negative values are not allowed here: '-1'"},
      {"ici.send 0, 0, 1, 0", "t.s:1:1: missing operand dy of 'ici.send'"},
      {"ici.send 0, 0, 1, 0, 0, abs=2", "t.s:1:29: value 2 does not fit abs (1 bits) '2'"},
      {"ici.send 0, 0, 1, -, 0", "t.s:1:19: expected a number after '-'"},
      {"3: halt", "t.s:1:1: expected a mnemonic or directive, got '3'"},
  };
  for (const BadInput& c : cases) {
    const std::string got = error_of<AsmError>([&] { assemble(c.text, "t.s", tiny()); });
    EXPECT_EQ(got, c.error) << "input: " << c.text;
  }
  // The parts are available separately too.
  try {
    assemble("halt\n  vfoo", "t.s", tiny());
    FAIL() << "no error";
  } catch (const AsmError& e) {
    EXPECT_EQ(e.file(), "t.s");
    EXPECT_EQ(e.line(), 2u);
    EXPECT_EQ(e.col(), 3u);
    EXPECT_EQ(e.message(), "unknown mnemonic");
    EXPECT_EQ(e.token(), "vfoo");
  }
}

// ---------------------------------------------------------------------------------------------
// Program files and presets

Program sample_program() { return assemble("dma.ld 0, 0, 1, 1, 0 signal=1\nmxu.lw 0 wait=1\nhalt\n", "s.s", tiny()); }

TEST(IsaFile, SerializeRoundTripAndLayout) {
  const Program p = sample_program();
  const std::vector<uint8_t> bytes = serialize(p);
  ASSERT_EQ(bytes.size(), 56 + 16 * p.code.size());
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 4), "TPOD");
  EXPECT_EQ(bytes[4], kIsaVersion);
  EXPECT_EQ(bytes[8], p.code.size());
  uint64_t fp = 0;
  for (unsigned k = 0; k < 8; ++k) fp |= uint64_t{bytes[16 + k]} << (8 * k);
  EXPECT_EQ(fp, p.fingerprint);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(&bytes[24])), "tiny");
  uint64_t hi = 0;
  for (unsigned k = 0; k < 8; ++k) hi |= uint64_t{bytes[56 + 8 + k]} << (8 * k);
  EXPECT_EQ(hi, p.code[0][1]);
  EXPECT_EQ(deserialize(bytes, "mem"), p);

  const auto path = std::filesystem::temp_directory_path() / ("test_isa_" + std::to_string(::getpid()) + ".tpb");
  write_program(path, p);
  EXPECT_EQ(read_program(path), p);
  std::filesystem::remove(path);
  EXPECT_EQ(error_of([&] { read_program(path); }), "cannot open program file '" + path.string() + "'");
}

TEST(IsaFile, CorruptFilesAreErrorsNamingTheOrigin) {
  const std::vector<uint8_t> good = serialize(sample_program());
  auto with = [&](size_t at, uint8_t v) {
    auto b = good;
    b[at] = v;
    return b;
  };
  EXPECT_EQ(error_of([&] { deserialize(with(0, 'X'), "p.tpb"); }),
            "p.tpb: not a tensorpod program: magic 0x444f5058, expected 0x444f5054 (\"TPOD\")");
  EXPECT_EQ(error_of([&] { deserialize(with(4, kIsaVersion + 1), "p.tpb"); }),
            fmt::format("p.tpb: program is for ISA version {}, this build implements version {}", kIsaVersion + 1,
                        kIsaVersion));
  EXPECT_EQ(error_of([&] { deserialize(with(13, 1), "p.tpb"); }),
            "p.tpb: reserved header word is 0x00000100, must be 0");
  EXPECT_EQ(error_of([&] { deserialize(with(8, 4), "p.tpb"); }),
            "p.tpb: truncated program: header says 4 instructions (120 bytes), file has 104 bytes");
  EXPECT_EQ(error_of([&] { deserialize(std::span(good).first(good.size() - 1), "p.tpb"); }),
            "p.tpb: truncated program: header says 3 instructions (104 bytes), file has 103 bytes");
  EXPECT_EQ(error_of([&] { deserialize(std::span(good).first(20), "p.tpb"); }),
            "p.tpb: truncated program: 20 bytes, the header alone is 56");
  auto longer = good;
  longer.push_back(0);
  EXPECT_EQ(error_of([&] { deserialize(longer, "p.tpb"); }),
            "p.tpb: 1 bytes after the 3 instructions the header counts");
  EXPECT_EQ(error_of([&] { deserialize(with(24 + 6, 'x'), "p.tpb"); }),
            "p.tpb: preset name in the header is not NUL padded");
  Program named = sample_program();
  named.preset = std::string(33, 'a');
  EXPECT_THROW(serialize(named), IsaError);
}

TEST(IsaPreset, CheckPresetNamesBothPresets) {
  const Preset small = load_preset("small");
  const Program p = sample_program();
  EXPECT_NO_THROW(check_preset(p, tiny()));
  EXPECT_EQ(error_of([&] { check_preset(p, small); }),
            fmt::format("program built for preset 'tiny' (fingerprint 0x{:016x}) cannot run on preset 'small' "
                        "(fingerprint 0x{:016x})",
                        fingerprint(tiny()), fingerprint(small)));
}

// FNV-1a 64 over the bytes docs/isa.md defines, written out independently of the library.
uint64_t reference_fingerprint(const Preset& p) {
  const uint64_t words[][2] = {{kIsaVersion, 4},      {p.mxu.n, 4},           {p.mxu.acc_rows, 4},
                               {p.chip.vmem_rows, 4}, {p.chip.imem_words, 4}, {p.chip.hbm_beats, 8}};
  uint64_t h = 14695981039346656037ull;
  for (const auto& [v, n] : words)
    for (unsigned k = 0; k < n; ++k) h = (h ^ ((v >> (8 * k)) & 0xff)) * 1099511628211ull;
  return h;
}

TEST(IsaPreset, FingerprintsDifferAndFollowTheDefinition) {
  std::set<uint64_t> seen;
  for (const char* name : {"tiny", "small", "odd", "v2"}) {
    const Preset p = load_preset(name);
    EXPECT_EQ(fingerprint(p), reference_fingerprint(p)) << name;
    EXPECT_TRUE(seen.insert(fingerprint(p)).second) << name << " has the fingerprint of another preset";
  }
  // Each input changes it; the name and the fields outside the definition do not.
  const uint64_t base = fingerprint(tiny());
  std::vector<std::function<void(Preset&)>> edits = {
      [](Preset& p) { p.mxu.n += 1; },          [](Preset& p) { p.mxu.acc_rows += 1; },
      [](Preset& p) { p.chip.vmem_rows += 1; }, [](Preset& p) { p.chip.imem_words += 1; },
      [](Preset& p) { p.chip.hbm_beats += 1; },
  };
  for (size_t k = 0; k < edits.size(); ++k) {
    Preset p = tiny();
    edits[k](p);
    EXPECT_NE(fingerprint(p), base) << "edit " << k;
  }
  Preset renamed = tiny();
  renamed.name = "other";
  renamed.chip.queue += 1;
  EXPECT_EQ(fingerprint(renamed), base);
}

}  // namespace
}  // namespace tp::isa
