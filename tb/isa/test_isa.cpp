// The ISA library: encode/decode against an independent bit-by-bit reference, the assembler and
// disassembler, .tpb files and preset fingerprints (docs/isa.md).
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
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

// vscale's format (vsc) keeps dst, a, rows and a_acc at the vector format's bits: the vector
// unit reads them alike for every vector instruction (rtl/chip/tp_vpu.sv). And the semaphore
// fields are as wide as ici.send's rsem, for kNumSems semaphores.
TEST(IsaTable, VscaleSharesTheVectorFieldsAndSemaphoresAreOneWidth) {
  const InstrDesc &vec = desc(Op::vadd), &vsc = desc(Op::vscale);
  for (std::string_view name : {"dst", "dst_r", "a", "a_r", "rows", "rows_r", "a_acc"}) {
    ASSERT_NE(find_field(vsc, name), nullptr) << name;
    EXPECT_EQ(find_field(vsc, name)->lsb, find_field(vec, name)->lsb) << name;
    EXPECT_EQ(find_field(vsc, name)->width, find_field(vec, name)->width) << name;
  }
  EXPECT_EQ(find_field(vsc, "imm")->width, 32u);
  EXPECT_EQ(find_field(vec, "imm")->width, 15u);
  EXPECT_EQ(find_field(vsc, "b"), nullptr);
  EXPECT_EQ(kWaitWidth, kSignalWidth);
  EXPECT_EQ(find_field(desc(Op::ici_send), "rsem")->width, kWaitWidth);
  EXPECT_EQ(kNumSems, 1u << kWaitWidth);
  EXPECT_EQ(kNumSems, 32u);
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
  EXPECT_EQ(error_of([] { encode(make(Op::halt, {}, 32)); }), "halt: field wait = 32 (0x20) does not fit its 5 bits");
  EXPECT_EQ(error_of([] { encode(make(Op::halt, {}, 0, 99)); }),
            "halt: field signal = 99 (0x63) does not fit its 5 bits");
  // vsel's mask row is a VMEM row (15 bits); only vscale's imm is a 32-bit fp32 scalar.
  EXPECT_EQ(error_of([] {
              encode(make(Op::vsel, {{FieldId::rows, 1}, {FieldId::imm, 1 << 15}}));
            }),
            "vsel: field imm = 32768 (0x8000) does not fit its 15 bits");
  EXPECT_EQ(error_of([] {
              encode(make(Op::mxu_lw, {{FieldId::rows, 3}}));
            }),
            "mxu.lw: has no field rows (format 'lw'), but it is set to 3");
  EXPECT_EQ(error_of([] {
              encode(make(Op::dma_ld, {{FieldId::vaddr, 1 << 15}}));
            }),
            "dma.ld: field vaddr = 32768 (0x8000) does not fit its 15 bits");
  EXPECT_EQ(error_of([] {
              encode(make(Op::dma_ld, {{FieldId::vaddr_r, 32}}));
            }),
            "dma.ld: field vaddr_r = 32 (0x20) does not fit its 5 bits");
  EXPECT_EQ(error_of([] {
              encode(make(Op::vadd, {{FieldId::rows, 1 << 15}}));
            }),
            "vadd: field rows = 32768 (0x8000) does not fit its 15 bits");
  EXPECT_EQ(error_of([] {
              encode(make(Op::beq, {{FieldId::target, 1 << 20}}));
            }),
            "beq: field target = 1048576 (0x100000) does not fit its 20 bits");
  EXPECT_EQ(error_of([] {
              encode(make(Op::add, {{FieldId::rd, 32}}));
            }),
            "add: field rd = 32 (0x20) does not fit its 5 bits");
  // The largest values do fit.
  EXPECT_NO_THROW(encode(make(Op::dma_ld,
                              {{FieldId::vaddr, 0x7fff},
                               {FieldId::vaddr_r, 31},
                               {FieldId::haddr, 0xfffffff},
                               {FieldId::haddr_r, 31},
                               {FieldId::rows, 0xffff},
                               {FieldId::rows_r, 31},
                               {FieldId::cols, 0xfff},
                               {FieldId::hstride, 0xffffff}},
                              31, 31)));
  EXPECT_NO_THROW(encode(make(Op::vscale,
                              {{FieldId::dst_r, 31},
                               {FieldId::a_r, 31},
                               {FieldId::rows_r, 31},
                               {FieldId::a_acc, 1},
                               {FieldId::imm, 0xffffffff}},
                              31, 31)));
  EXPECT_NO_THROW(encode(make(Op::li, {{FieldId::rd, 31}, {FieldId::simm, uint64_t{0} - 0x80000000}})));
  EXPECT_NO_THROW(encode(make(Op::loop, {{FieldId::rd, 31}, {FieldId::target, 0xfffff}})));
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
  vrelu 1, 2, 3 wait=31 signal=31
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
  vexp 1, 2, 3
  vrcp 1, 2, 3, a_acc=1
  vmov end, w, start+1
  fence vec signal=4
  fence 3
  fence ici wait=5
  ici.send 0, 64, 8, -1, 0, rsem=3 signal=2
  ici.send vaddr=X, raddr=W, rows=1, dx=31, dy=-32, abs=1
  ici.send 1, 2, 3, -W+33, W-65
top: add r1, r2, r3                            ; the scalar unit
  sub r31, r0, r1
  and r4, r5, r6
  or r7, r8, r9
  xor r10, r11, r12
  sll r13, r14, r15
  srl r16, r17, r18
  slt r19, r20, r21
  sltu r22, r23, r24
  addi r25, r26, -1
  slli r27, r28, 31
  srli r29, r30, 0
  li r1, 0x7fffffff
  li rd=r2, simm=-0x80000000
  beq r1, r2, top                              ; labels as branch targets, backward
  bne r3, r4, halt_here                        ; ... and forward
  blt r5, r6, end-1
  bge r7, r0, 0
  loop r31, top
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
      make(Op::vrelu, {{F::dst, 1}, {F::a, 2}, {F::rows, 3}}, 31, 31),
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
      make(Op::vexp, {{F::dst, 1}, {F::a, 2}, {F::rows, 3}}),
      make(Op::vrcp, {{F::dst, 1}, {F::a, 2}, {F::rows, 3}, {F::a_acc, 1}}),
      make(Op::vmov, {{F::dst, 57}, {F::a, 2}, {F::rows, 1}}),  // end = 57 (after halt), w = 2, start = 0
      make(Op::fence, {{F::unit, 2}}, 0, 4),
      make(Op::fence, {{F::unit, 3}}),
      make(Op::fence, {{F::unit, 4}}, 5, 0),
      make(Op::ici_send, {{F::vaddr, 0}, {F::raddr, 64}, {F::rows, 8}, {F::dx, neg(1)}, {F::dy, 0}, {F::rsem, 3}}, 0,
           2),
      make(Op::ici_send, {{F::vaddr, 72}, {F::raddr, 64}, {F::rows, 1}, {F::dx, 31}, {F::dy, neg(32)}, {F::abs, 1}}),
      make(Op::ici_send, {{F::vaddr, 1}, {F::raddr, 2}, {F::rows, 3}, {F::dx, neg(31)}, {F::dy, neg(1)}}),
      make(Op::add, {{F::rd, 1}, {F::rs1, 2}, {F::rs2, 3}}),  // top = 37
      make(Op::sub, {{F::rd, 31}, {F::rs1, 0}, {F::rs2, 1}}),
      make(Op::and_, {{F::rd, 4}, {F::rs1, 5}, {F::rs2, 6}}),
      make(Op::or_, {{F::rd, 7}, {F::rs1, 8}, {F::rs2, 9}}),
      make(Op::xor_, {{F::rd, 10}, {F::rs1, 11}, {F::rs2, 12}}),
      make(Op::sll, {{F::rd, 13}, {F::rs1, 14}, {F::rs2, 15}}),
      make(Op::srl, {{F::rd, 16}, {F::rs1, 17}, {F::rs2, 18}}),
      make(Op::slt, {{F::rd, 19}, {F::rs1, 20}, {F::rs2, 21}}),
      make(Op::sltu, {{F::rd, 22}, {F::rs1, 23}, {F::rs2, 24}}),
      make(Op::addi, {{F::rd, 25}, {F::rs1, 26}, {F::simm, neg(1)}}),
      make(Op::slli, {{F::rd, 27}, {F::rs1, 28}, {F::simm, 31}}),
      make(Op::srli, {{F::rd, 29}, {F::rs1, 30}, {F::simm, 0}}),
      make(Op::li, {{F::rd, 1}, {F::simm, 0x7fffffff}}),
      make(Op::li, {{F::rd, 2}, {F::simm, neg(0x80000000)}}),
      make(Op::beq, {{F::rs1, 1}, {F::rs2, 2}, {F::target, 37}}),
      make(Op::bne, {{F::rs1, 3}, {F::rs2, 4}, {F::target, 56}}),
      make(Op::blt, {{F::rs1, 5}, {F::rs2, 6}, {F::target, 56}}),
      make(Op::bge, {{F::rs1, 7}, {F::rs2, 0}, {F::target, 0}}),
      make(Op::loop, {{F::rd, 31}, {F::target, 37}}),
      make(Op::halt, {}),  // halt_here = 56
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
  // bf16 two per lane (ISA v7): an mm's high halves, a packed weight tile (transposed too).
  EXPECT_EQ(disassemble(make(Op::mxu_mm, {{F::vaddr, 72}, {F::acc, 8}, {F::rows, 8}, {F::hi, 1}})),
            "mxu.mm 72, 8, 8, hi=1");
  EXPECT_EQ(disassemble(make(Op::mxu_lw, {{F::vaddr, 4}, {F::t, 1}, {F::packed, 1}})), "mxu.lw 4, t=1, packed=1");
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
  for (const InstrDesc& other : kInstrs)  // only dx, dy and the scalar immediate are signed
    for (unsigned k = 0; k < other.nfields; ++k)
      EXPECT_EQ(other.fields[k].is_signed,
                other.fields[k].id == F::dx || other.fields[k].id == F::dy || other.fields[k].id == F::simm)
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
              encode(make(Op::ici_send, {{F::rsem, 32}}));
            }),
            "ici.send: field rsem = 32 (0x20) does not fit its 5 bits");
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
ici.send 8, 72, 1, -32, 31, abs=1, rsem=31
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
  EXPECT_NE(text.find("ici.send 8, 72, 1, -32, 31, rsem=31, abs=1\n"), std::string::npos) << text;
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
      {"mxu.lw 1, 0, 1, 2", "t.s:1:17: too many operands for mxu.lw (it takes 3) '2'"},
      {"mxu.lw 1, 0, 2", "t.s:1:14: value 2 does not fit packed (1 bits) '2'"},
      {"a: halt\na: halt", "t.s:2:1: redefinition of 'a'"},
      {".set a, 1\na: halt", "t.s:1:6: redefinition of 'a'"},
      {".set inf, 1", "t.s:1:6: bad constant name 'inf'"},
      {"dma.ld 0, 0, 4", "t.s:1:1: missing operand cols of 'dma.ld'"},
      {"mxu.mm 0, 0, 70000", "t.s:1:14: value 70000 does not fit rows (16 bits) '70000'"},
      {"halt wait=32", "t.s:1:11: value 32 does not fit wait (5 bits: semaphores are 0..31) '32'"},
      {"ici.send 0, 0, 1, 0, 0, rsem=32", "t.s:1:30: value 32 does not fit rsem (5 bits: semaphores are 0..31) '32'"},
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
// The scalar unit and register fields (ISA v3)

// The fields with a scalar register, per format, and the widths of the address fields.
TEST(IsaScalar, RegisterFieldsHaveTheirRegisterJustBelow) {
  using F = FieldId;
  const std::map<std::string_view, std::set<F>> want = {
      {"dma", {F::vaddr, F::haddr, F::rows}}, {"lw", {F::vaddr}},
      {"mm", {F::vaddr, F::acc, F::rows}},    {"vec", {F::dst, F::a, F::b, F::rows}},
      {"vsc", {F::dst, F::a, F::rows}},       {"ici", {F::vaddr, F::raddr, F::rows}},
  };
  for (const InstrDesc& d : kInstrs) {
    std::set<F> with_reg;
    unsigned companions = 0;
    for (unsigned k = 0; k < d.nfields; ++k) {
      const FieldDesc& f = d.fields[k];
      if (f.is_reg) {
        ++companions;
        EXPECT_TRUE(f.optional) << d.name << "." << f.name;
        EXPECT_TRUE(f.names_reg) << d.name << "." << f.name;
        EXPECT_FALSE(f.has_reg) << d.name << "." << f.name;
        EXPECT_EQ(f.width, kRegBits) << d.name << "." << f.name;
      }
      if (!f.has_reg) continue;
      with_reg.insert(f.id);
      ASSERT_GT(k, 0u) << d.name << "." << f.name;
      const FieldDesc& r = d.fields[k - 1];  // the register comes just before it, in the bits just below
      EXPECT_EQ(r.id, f.reg) << d.name << "." << f.name;
      EXPECT_EQ(std::string(r.name), std::string(f.name) + "_r") << d.name;
      EXPECT_TRUE(r.is_reg) << d.name << "." << f.name;
      EXPECT_EQ(r.lsb + r.width, f.lsb) << d.name << "." << f.name;
      EXPECT_EQ(find_field(d, r.name), &r) << d.name << "." << f.name;
    }
    EXPECT_EQ(companions, with_reg.size()) << d.name;
    const auto it = want.find(d.format);
    EXPECT_EQ(with_reg, it == want.end() ? std::set<F>{} : it->second) << d.name;
  }
  // Widths: VMEM and accumulator addresses 15 bits, HBM beats 28, hstride 24, vector rows 15,
  // the other rows 16; branch targets 20; the scalar immediate 32, signed.
  auto width = [](Op op, std::string_view name) { return find_field(desc(op), name)->width; };
  for (Op op : {Op::dma_ld, Op::dma_st, Op::mxu_lw, Op::mxu_mm, Op::ici_send}) EXPECT_EQ(width(op, "vaddr"), 15u);
  for (std::string_view name : {"dst", "a", "b", "rows"}) EXPECT_EQ(width(Op::vadd, name), 15u) << name;
  EXPECT_EQ(width(Op::mxu_mm, "acc"), 15u);
  EXPECT_EQ(width(Op::ici_send, "raddr"), 15u);
  EXPECT_EQ(width(Op::dma_ld, "haddr"), 28u);
  EXPECT_EQ(width(Op::dma_ld, "hstride"), 24u);
  for (Op op : {Op::dma_ld, Op::mxu_mm, Op::ici_send}) EXPECT_EQ(width(op, "rows"), 16u);
  for (Op op : {Op::beq, Op::bne, Op::blt, Op::bge, Op::loop}) EXPECT_EQ(width(op, "target"), 20u);
  for (Op op : {Op::addi, Op::slli, Op::srli, Op::li}) {
    EXPECT_EQ(width(op, "simm"), 32u);
    EXPECT_TRUE(find_field(desc(op), "simm")->is_signed);
  }
  EXPECT_EQ(kNumRegs, 32u);
  // The scalar instructions are the front end's; 58..63 are reserved (illegal).
  for (const InstrDesc& d : kInstrs) {
    const std::string_view fmt = d.format;
    if (fmt == "alu" || fmt == "alui" || fmt == "li" || fmt == "br" || fmt == "loop") {
      EXPECT_EQ(d.unit, Unit::front) << d.name;
    }
  }
  for (unsigned op = 58; op < 64; ++op) {
    Word w{};
    put_bits(w, kOpcodeLsb, kOpcodeWidth, op);
    EXPECT_EQ(decode(w).err, Err::illegal_opcode) << op;
  }
}

TEST(IsaScalar, DisassemblyOfEveryNewInstruction) {
  using F = FieldId;
  const auto neg = [](uint64_t v) { return uint64_t{0} - v; };
  const std::pair<Instr, std::string_view> cases[] = {
      {make(Op::add, {{F::rd, 1}, {F::rs1, 2}, {F::rs2, 3}}), "add r1, r2, r3"},
      {make(Op::sub, {{F::rd, 31}, {F::rs1, 0}, {F::rs2, 31}}), "sub r31, r0, r31"},
      {make(Op::and_, {{F::rd, 4}, {F::rs1, 5}, {F::rs2, 6}}), "and r4, r5, r6"},
      {make(Op::or_, {{F::rd, 7}, {F::rs1, 8}, {F::rs2, 9}}), "or r7, r8, r9"},
      {make(Op::xor_, {{F::rd, 10}, {F::rs1, 11}, {F::rs2, 12}}), "xor r10, r11, r12"},
      {make(Op::sll, {{F::rd, 13}, {F::rs1, 14}, {F::rs2, 15}}), "sll r13, r14, r15"},
      {make(Op::srl, {{F::rd, 16}, {F::rs1, 17}, {F::rs2, 18}}), "srl r16, r17, r18"},
      {make(Op::slt, {{F::rd, 19}, {F::rs1, 20}, {F::rs2, 21}}), "slt r19, r20, r21"},
      {make(Op::sltu, {{F::rd, 22}, {F::rs1, 23}, {F::rs2, 24}}), "sltu r22, r23, r24"},
      {make(Op::addi, {{F::rd, 1}, {F::rs1, 1}, {F::simm, neg(1)}}), "addi r1, r1, -1"},
      {make(Op::addi, {{F::rd, 2}, {F::rs1, 0}, {F::simm, 0x7fffffff}}), "addi r2, r0, 2147483647"},
      {make(Op::slli, {{F::rd, 3}, {F::rs1, 4}, {F::simm, 31}}), "slli r3, r4, 31"},
      {make(Op::srli, {{F::rd, 5}, {F::rs1, 6}, {F::simm, 0}}), "srli r5, r6, 0"},
      {make(Op::li, {{F::rd, 7}, {F::simm, neg(0x80000000)}}), "li r7, -2147483648"},
      {make(Op::beq, {{F::rs1, 1}, {F::rs2, 2}, {F::target, 0}}), "beq r1, r2, 0"},
      {make(Op::bne, {{F::rs1, 3}, {F::rs2, 0}, {F::target, 0xfffff}}), "bne r3, r0, 1048575"},
      {make(Op::blt, {{F::rs1, 4}, {F::rs2, 5}, {F::target, 17}}), "blt r4, r5, 17"},
      {make(Op::bge, {{F::rs1, 6}, {F::rs2, 7}, {F::target, 18}}), "bge r6, r7, 18"},
      {make(Op::loop, {{F::rd, 31}, {F::target, 5}}), "loop r31, 5"},
      // Register fields: rN+VALUE, rN alone, VALUE alone; optional ones named.
      {make(Op::dma_ld, {{F::vaddr, 16}, {F::vaddr_r, 3}, {F::haddr_r, 4}, {F::rows, 2}, {F::cols, 1}}),
       "dma.ld r3+16, r4, 2, 1, 0"},
      {make(Op::dma_st, {{F::vaddr, 1}, {F::haddr, 9}, {F::rows_r, 31}, {F::cols, 1}, {F::hstride, 2}}, 1, 2),
       "dma.st 1, 9, r31, 1, 2 wait=1 signal=2"},
      {make(Op::mxu_lw, {{F::vaddr_r, 1}}), "mxu.lw r1"},
      {make(Op::mxu_mm,
            {{F::vaddr_r, 1}, {F::acc, 8}, {F::acc_r, 2}, {F::rows, 1}, {F::rows_r, 3}, {F::accumulate, 1}}),
       "mxu.mm r1, r2+8, r3+1, accumulate=1"},
      {make(Op::vadd, {{F::dst_r, 1}, {F::a, 2}, {F::a_r, 2}, {F::rows, 3}, {F::b_r, 4}}), "vadd r1, r2+2, 3, b=r4"},
      {make(Op::vsub, {{F::dst, 1}, {F::a, 2}, {F::rows_r, 5}, {F::b, 7}, {F::b_r, 4}}), "vsub 1, 2, r5, b=r4+7"},
      {make(Op::ici_send, {{F::vaddr_r, 6}, {F::raddr, 64}, {F::raddr_r, 7}, {F::rows, 8}, {F::dx, neg(1)}}),
       "ici.send r6, r7+64, 8, -1, 0"},
  };
  for (const auto& [in, text] : cases) {
    EXPECT_EQ(disassemble(in), text);
    const Program p = assemble(std::string(text) + "\n", "d.s", tiny());
    ASSERT_EQ(p.code.size(), 1u) << text;
    const Decoded dec = decode(p.code[0]);
    EXPECT_EQ(dec.err, Err::none) << text;
    EXPECT_EQ(dec.instr, in) << text << ": reassembled as " << disassemble(dec.instr);
  }
}

// Every register field of every instruction in every form: rN+VALUE, rN, VALUE, rN+NAME, and
// r0+VALUE (the same as VALUE), positional or named.
TEST(IsaScalar, EveryRegisterFieldInEveryForm) {
  struct Form {
    std::string text;
    uint64_t reg, value;
    std::string disasm;  // how the disassembler writes it back
  };
  const Form forms[] = {
      {"r5+16", 5, 16, "r5+16"}, {"r31", 31, 0, "r31"},  {"r0", 0, 0, "0"},
      {"12", 0, 12, "12"},       {"r3+K", 3, 7, "r3+7"}, {"r0+9", 0, 9, "9"},
      {"r1+0", 1, 0, "r1"},      {"K+1", 0, 8, "8"},     {"r2+0x7fff", 2, 0x7fff, "r2+32767"},
  };
  unsigned checked = 0;
  for (const InstrDesc& d : kInstrs)
    for (unsigned k = 0; k < d.nfields; ++k) {
      const FieldDesc& f = d.fields[k];
      if (!f.has_reg) continue;
      for (const Form& form : forms)
        for (const bool named : {false, true}) {
          if (f.optional && !named) continue;  // optional fields come after every required one: named
          // The other required fields 0, then this one.
          std::string text = std::string(d.name), sep = " ", want = std::string(d.name);
          for (unsigned j = 0; j < d.nfields; ++j) {
            const FieldDesc& g = d.fields[j];
            if (g.optional || g.is_reg) continue;
            const std::string v = g.id == f.id ? form.text : "0";
            text += sep + (named ? std::string(g.name) + "=" : "") + v;
            want += sep + (g.id == f.id ? form.disasm : "0");
            sep = ", ";
          }
          if (named && f.optional) text += sep + std::string(f.name) + "=" + form.text;
          SCOPED_TRACE(text);
          const Program p = assemble(".set K, 7\n" + text + "\n", "f.s", tiny());
          ASSERT_EQ(p.code.size(), 1u);
          const Decoded dec = decode(p.code[0]);
          ASSERT_EQ(dec.err, Err::none);
          Instr expect;
          expect.op = d.op;
          field(expect.f, f.id) = form.value;
          field(expect.f, f.reg) = form.reg;
          EXPECT_EQ(dec.instr, expect) << disassemble(dec.instr);
          // The disassembler writes required fields positionally and a nonzero optional one named
          // (vscale's comment with its float aside).
          std::string dis = disassemble(dec.instr);
          dis = dis.substr(0, dis.find("  #"));
          if (!f.optional) {
            EXPECT_EQ(dis, want);
          } else if (form.reg != 0 || form.value != 0) {
            EXPECT_EQ(dis, want + sep + std::string(f.name) + "=" + form.disasm);
          }
          EXPECT_EQ(assemble(disassemble(dec.instr), "back.s", tiny()), p);
          ++checked;
        }
    }
  EXPECT_GT(checked, 200u);  // 5 formats, 14 register fields, 9 forms
}

TEST(IsaScalar, LabelsAsBranchTargetsForwardAndBackward) {
  const Program p = assemble(R"(
        li r1, 3                ; 0
outer:  li r2, 4                ; 1
inner:  addi r3, r3, 1          ; 2
        blt r3, r4, skip        ; 3: forward
        sub r3, r3, r4          ; 4
skip:   loop r2, inner          ; 5: backward
        bne r1, r0, next        ; 6: forward, to the next line
next:   loop r1, outer          ; 7: backward
        beq r0, r0, end-1       ; 8: forward with an offset
        halt                    ; 9
end:
)",
                             "l.s", tiny());
  ASSERT_EQ(p.code.size(), 10u);
  const auto target = [&](size_t i) { return decode(p.code.at(i)).instr.f.target; };
  EXPECT_EQ(target(3), 5u);
  EXPECT_EQ(target(5), 2u);
  EXPECT_EQ(target(6), 7u);
  EXPECT_EQ(target(7), 1u);
  EXPECT_EQ(target(8), 9u);
  EXPECT_EQ(decode(p.code[5]).instr.f.rd, 2u);
  EXPECT_EQ(decode(p.code[7]).instr.f.rd, 1u);
  // The disassembly writes the targets as numbers; it assembles back to the same words.
  const std::string text = disassemble(p);
  EXPECT_NE(text.find("loop r2, 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("blt r3, r4, 5\n"), std::string::npos) << text;
  EXPECT_EQ(assemble(text, "back.s", tiny()), p);
}

TEST(IsaScalar, AssemblyErrors) {
  const BadInput cases[] = {
      // Registers: r0 .. r31, written rN where the field is one.
      {"add r32, r1, r2", "t.s:1:5: expected a scalar register (r0 .. r31) for rd, got 'r32'"},
      {"add r1, 5, r2", "t.s:1:9: expected a scalar register (r0 .. r31) for rs1, got '5'"},
      {"add r1, r2, r3+1", "t.s:1:13: expected a scalar register (r0 .. r31) for rs2, got 'r3+1'"},
      {"li r01, 1", "t.s:1:4: expected a scalar register (r0 .. r31) for rd, got 'r01'"},
      {"loop rd=x, 0", "t.s:1:9: expected a scalar register (r0 .. r31) for rd, got 'x'"},
      {"add r1, r2", "t.s:1:1: missing operand rs2 of 'add'"},
      {"mxu.lw r32", "t.s:1:8: unknown name 'r32'"},
      {"mxu.lw r32+1", "t.s:1:8: unknown name 'r32'"},
      // A register where the field has none.
      {"li r1, r2", "t.s:1:8: a scalar register is not allowed here: 'r2'"},
      {"addi r1, r1, r2", "t.s:1:14: a scalar register is not allowed here: 'r2'"},
      {"dma.ld 0, 0, 1, r3, 1", "t.s:1:17: a scalar register is not allowed here: 'r3'"},
      {"dma.ld 0, 0, 1, 1, hstride=r3+1", "t.s:1:28: a scalar register is not allowed here: 'r3'"},
      {"mxu.mm 0, 0, 1, accumulate=r1", "t.s:1:28: a scalar register is not allowed here: 'r1'"},
      {"ici.send 0, 0, 1, r1, 0", "t.s:1:19: a scalar register is not allowed here: 'r1'"},
      {"vsel 0, 1, 1, imm=r4", "t.s:1:19: a scalar register is not allowed here: 'r4'"},
      {"beq r1, r2, r3", "t.s:1:13: a scalar register is not allowed here: 'r3'"},
      {"fence r1", "t.s:1:7: a scalar register is not allowed here: 'r1'"},
      {".set X, r1", "t.s:1:9: a scalar register is not allowed here: 'r1'"},
      {"halt wait=r1", "t.s:1:11: a scalar register is not allowed here: 'r1'"},
      // A field's register is written with the field, and only as rN or rN+VALUE.
      {"mxu.lw vaddr_r=3",
       "t.s:1:8: a field's register is written with the field (vaddr=r3+16), not on its own: 'vaddr_r'"},
      {"mxu.mm 0, 0, 1, rows_r=r2",
       "t.s:1:17: a field's register is written with the field (rows=r3+16), not on its own: 'rows_r'"},
      {"mxu.lw r3-1", "t.s:1:8: expected a value of the form rN, rN+VALUE or VALUE, got 'r3-1'"},
      {"mxu.lw r3+", "t.s:1:8: expected a value of the form rN, rN+VALUE or VALUE, got 'r3+'"},
      {"mxu.lw r3+r4", "t.s:1:11: a scalar register is not allowed here: 'r4'"},
      {"mxu.lw 4+r3", "t.s:1:8: expected a value of the form NUMBER, NAME, NAME+NUMBER or NAME-NUMBER, got '4+r3'"},
      {"mxu.lw r3+0x8000", "t.s:1:8: value 32768 does not fit vaddr (15 bits) 'r3+0x8000'"},
      {"vadd 0, 1, r2+32768", "t.s:1:12: value 32768 does not fit rows (15 bits) 'r2+32768'"},
      // Register names are reserved.
      {"r3: halt", "t.s:1:1: a register name cannot be a label name: 'r3'"},
      {".set r31, 4", "t.s:1:6: a register name cannot be a constant name: 'r31'"},
      // Values.
      {"slli r1, r2, 0x100000000",
       "t.s:1:14: value 4294967296 does not fit simm (32 bits, signed: -2147483648 .. 2147483647) '0x100000000'"},
      {"li r1, 0x80000000",
       "t.s:1:8: value 2147483648 does not fit simm (32 bits, signed: -2147483648 .. 2147483647) '0x80000000'"},
      {"beq r1, r2, 1048576", "t.s:1:13: value 1048576 does not fit target (20 bits) '1048576'"},
      {"loop r1, -1", "t.s:1:10: negative values are not allowed here: '-1'"},
      {"loop r1, nowhere", "t.s:1:10: unknown name 'nowhere'"},
      {"bne r1, r2, 3 wait=1, signal=2, x=1", "t.s:1:33: bne has no field 'x'"},
  };
  for (const BadInput& c : cases) {
    const std::string got = error_of<AsmError>([&] { assemble(c.text, "t.s", tiny()); });
    EXPECT_EQ(got, c.error) << "input: " << c.text;
  }
  // r32 and r01 are not registers, so they are ordinary names.
  const Program p = assemble("r32: mxu.lw r32+1\nr01: mxu.lw r01\n", "n.s", tiny());
  EXPECT_EQ(decode(p.code[0]).instr.f.vaddr, 1u);
  EXPECT_EQ(decode(p.code[0]).instr.f.vaddr_r, 0u);
  EXPECT_EQ(decode(p.code[1]).instr.f.vaddr, 1u);
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

// The fuzz regression of a preset name with a newline (tb/fuzz/regressions/tpb) is refused for
// that, not for something its header says earlier: its ISA version must follow the ISA's.
TEST(IsaFile, FuzzRegressionIsRefusedForItsPresetName) {
  const std::string path = std::string(TP_SOURCE_DIR) + "/tb/fuzz/regressions/tpb/preset_name_newline.tpb";
  std::ifstream f(path, std::ios::binary);
  ASSERT_TRUE(f) << path;
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::string err = error_of([&] { deserialize(bytes, "r.tpb"); });
  EXPECT_NE(err.find("preset name in the header has byte 0x0a"), std::string::npos) << err;
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
