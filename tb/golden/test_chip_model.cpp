// The golden chip interpreter (sw/golden/chip_model) on hand-built programs, and the golden
// vector numerics (sw/golden/vpu_ops.h) against hand-written expectations and host math.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "calendar.h"
#include "chip_model.h"
#include "config.h"
#include "fp.h"
#include "isa.h"
#include "lazy_zero.h"
#include "mxu_model.h"
#include "pod_network.h"
#include "vpu_ops.h"

namespace {

using namespace tp::golden;
using tp::isa::Err;
using tp::isa::Instr;
using tp::isa::Op;
using tp::isa::Word;

// ---------------------------------------------------------------------------------------------
// vpu_ops.h

constexpr uint32_t kOne = 0x3f800000u, kNegZero = 0x80000000u, kMinNormal = 0x00800000u;

TEST(VpuOps, MulMatchesHostMathOnNormals) {
  // The exact product of two floats fits a double (48 significant bits); one rounding to float
  // is the correctly rounded fp32 product.
  std::mt19937_64 rng(11);
  for (int k = 0; k < 200000; ++k) {
    const uint32_t ea = 64 + static_cast<uint32_t>(rng() % 127), eb = 64 + static_cast<uint32_t>(rng() % 127);
    const uint32_t a = (static_cast<uint32_t>(rng()) & 0x807fffffu) | ea << 23;
    const uint32_t b = (static_cast<uint32_t>(rng()) & 0x807fffffu) | eb << 23;
    const double exact = static_cast<double>(fp32_value(a)) * static_cast<double>(fp32_value(b));
    const auto want = fp32_bits(static_cast<float>(exact));
    ASSERT_EQ(fp32_mul(a, b), want) << std::hex << a << " * " << b;
  }
}

TEST(VpuOps, MulPolicy) {
  EXPECT_EQ(fp32_mul(kOne, 0x40000000u), 0x40000000u);         // 1 * 2
  EXPECT_EQ(fp32_mul(0x7f800000u, 0x00000000u), kFp32QNaN);    // inf * 0
  EXPECT_EQ(fp32_mul(0x7f800000u, 0x80000001u), kFp32QNaN);    // inf * denormal (= -0)
  EXPECT_EQ(fp32_mul(0xff800000u, 0x40000000u), 0xff800000u);  // -inf * 2
  EXPECT_EQ(fp32_mul(kNegZero, kOne), kNegZero);               // -0 * 1 = -0
  EXPECT_EQ(fp32_mul(0x00400000u, kOne), 0u);                  // denormal reads as +0
  EXPECT_EQ(fp32_mul(0x7f7fffffu, 0x40000000u), 0x7f800000u);  // overflow -> inf
  EXPECT_EQ(fp32_mul(0xff7fffffu, 0x40000000u), 0xff800000u);  // overflow -> -inf
  EXPECT_EQ(fp32_mul(0xffc00001u, kOne), kFp32QNaN);           // NaN -> canonical
  EXPECT_EQ(fp32_mul(0x1f800000u, 0x20000000u), 0u);           // 2^-64 * 2^-63 = 2^-127: flushed
  EXPECT_EQ(fp32_mul(0x9f800000u, 0x20000000u), kNegZero);     // ... to -0
  // (1 - 2^-24) * 2^-126 is a tie on the denormal grid (2^-149) and rounds up to 2^-126.
  EXPECT_EQ(fp32_mul(0x3f7fffffu, kMinNormal), kMinNormal);
  EXPECT_EQ(fp32_mul(0xbf7fffffu, kMinNormal), kMinNormal | kNegZero);
  EXPECT_EQ(fp32_mul(0x3f7ffffeu, kMinNormal), 0u);            // (1 - 2^-23) * 2^-126: flushed
  EXPECT_EQ(fp32_mul(0x40400000u, 0x40400000u), 0x41100000u);  // 3 * 3 = 9
}

TEST(VpuOps, MaxMinSignedZerosAndNaN) {
  EXPECT_EQ(fp32_max(0u, kNegZero), 0u);
  EXPECT_EQ(fp32_max(kNegZero, 0u), 0u);
  EXPECT_EQ(fp32_min(0u, kNegZero), kNegZero);
  EXPECT_EQ(fp32_min(kNegZero, 0u), kNegZero);
  EXPECT_EQ(fp32_max(kNegZero, kNegZero), kNegZero);
  EXPECT_EQ(fp32_max(0x7f800001u, kOne), kFp32QNaN);
  EXPECT_EQ(fp32_min(kOne, 0xffc00000u), kFp32QNaN);
  EXPECT_EQ(fp32_max(0x00000001u, 0xbf800000u), 0u);           // a denormal reads (and comes out) as +0
  EXPECT_EQ(fp32_min(0x80000001u, kOne), kNegZero);            // ... or -0
  EXPECT_EQ(fp32_max(0x80000001u, 0x00000001u), 0u);           // -0 vs +0
  EXPECT_EQ(fp32_max(0xbf800000u, 0xc0000000u), 0xbf800000u);  // -1 > -2
  EXPECT_EQ(fp32_min(0xbf800000u, 0xc0000000u), 0xc0000000u);
  EXPECT_EQ(fp32_max(0xff800000u, 0x7f800000u), 0x7f800000u);
}

TEST(VpuOps, ReluAndCompares) {
  EXPECT_EQ(fp32_relu(kNegZero), 0u);
  EXPECT_EQ(fp32_relu(0x00000001u), 0u);
  EXPECT_EQ(fp32_relu(0xbf800000u), 0u);
  EXPECT_EQ(fp32_relu(0x40000000u), 0x40000000u);
  EXPECT_EQ(fp32_relu(0x7f800000u), 0x7f800000u);
  EXPECT_EQ(fp32_relu(0xff800001u), kFp32QNaN);
  const auto lane = [](Op op, uint32_t a, uint32_t b) { return vpu_lane(op, a, b, 0, 0); };
  EXPECT_EQ(lane(Op::vcmpeq, 0u, kNegZero), 0xffffffffu);
  EXPECT_EQ(lane(Op::vcmpeq, 0x00000001u, 0u), 0xffffffffu);  // a denormal equals zero
  EXPECT_EQ(lane(Op::vcmplt, kNegZero, 0u), 0u);
  EXPECT_EQ(lane(Op::vcmple, kNegZero, 0u), 0xffffffffu);
  EXPECT_EQ(lane(Op::vcmplt, 0xbf800000u, kOne), 0xffffffffu);
  EXPECT_EQ(lane(Op::vcmplt, kOne, kOne), 0u);
  EXPECT_EQ(lane(Op::vcmple, kOne, kOne), 0xffffffffu);
  for (Op op : {Op::vcmplt, Op::vcmple, Op::vcmpeq}) {
    EXPECT_EQ(lane(op, kFp32QNaN, kFp32QNaN), 0u);
    EXPECT_EQ(lane(op, kOne, 0x7f800001u), 0u);
  }
}

TEST(VpuOps, ConvertAndBitOps) {
  EXPECT_EQ(vpu_lane(Op::vcvtbf, 0x3f808000u, 0, 0, 0), 0x3f80u);  // tie to even
  EXPECT_EQ(vpu_lane(Op::vcvtbf, 0x3f818000u, 0, 0, 0), 0x3f82u);
  EXPECT_EQ(vpu_lane(Op::vcvtbf, 0xff800001u, 0, 0, 0), 0x7fc0u);
  EXPECT_EQ(vpu_lane(Op::vcvtbf, 0x80000001u, 0, 0, 0), 0x8000u);
  EXPECT_EQ(vpu_lane(Op::vcvtf, 0xdead3fc0u, 0, 0, 0), 0x3fc00000u);  // bits 31:16 ignored
  EXPECT_EQ(vpu_lane(Op::vcvtf, 0x00000001u, 0, 0, 0), 0x00010000u);  // exact: no flush
  for (uint32_t x = 0; x < 0x10000; ++x) {  // every non-NaN, non-denormal bf16 survives a round trip
    const uint32_t w = x << 16;
    if (fp32_is_nan(w) || fp32_is_denormal(w)) continue;
    ASSERT_EQ(vpu_lane(Op::vcvtbf, vpu_lane(Op::vcvtf, x, 0, 0, 0), 0, 0, 0), x);
  }
  EXPECT_EQ(vpu_lane(Op::vsel, 1, 2, 0x80000000u, 0), 1u);  // -0 bits are a non-zero mask
  EXPECT_EQ(vpu_lane(Op::vsel, 1, 2, 0, 0), 2u);
  EXPECT_EQ(vpu_lane(Op::vmov, 0x7f800001u, 0, 0, 0), 0x7f800001u);  // bits unchanged
  EXPECT_EQ(vpu_lane(Op::vsub, kOne, kOne, 0, 0), 0u);
  EXPECT_EQ(vpu_lane(Op::vsub, kNegZero, 0u, 0, 0), kNegZero);                   // -0 - +0 = -0 + -0
  EXPECT_EQ(vpu_lane(Op::vscale, 0x40000000u, 0, 0, 0x40400000u), 0x40c00000u);  // 2 * 3
  EXPECT_THROW(vpu_lane(Op::dma_ld, 0, 0, 0, 0), std::invalid_argument);
}

TEST(VpuOps, ReductionsFoldLeftToRight) {
  const std::vector<uint32_t> a = {fp32_bits(1e8f), kOne, fp32_bits(-1e8f), kOne, 0x00000001u, kOne, kOne, kOne};
  uint32_t want = a[0];
  for (std::size_t j = 1; j < a.size(); ++j) want = fp32_add(want, a[j]);
  EXPECT_EQ(want, 0x40800000u);  // (1e8 + 1) rounds to 1e8, so the sum is 4, not 5
  std::vector<uint32_t> out(a.size());
  vpu_row(Op::vredsum, a, {}, {}, 0, out);
  for (uint32_t x : out) EXPECT_EQ(x, want);
  vpu_row(Op::vredmax, a, {}, {}, 0, out);
  for (uint32_t x : out) EXPECT_EQ(x, fp32_bits(1e8f));
  std::vector<uint32_t> with_nan = a;
  with_nan[3] = 0xffc00001u;
  vpu_row(Op::vredmax, with_nan, {}, {}, 0, out);
  EXPECT_EQ(out[0], kFp32QNaN);
  // n = 1: canon(a0).
  std::vector<uint32_t> one = {0x80000001u}, o1(1);
  vpu_row(Op::vredsum, one, {}, {}, 0, o1);
  EXPECT_EQ(o1[0], kNegZero);
  one[0] = 0x7f800001u;
  vpu_row(Op::vredmax, one, {}, {}, 0, o1);
  EXPECT_EQ(o1[0], kFp32QNaN);
}

// ---------------------------------------------------------------------------------------------
// ChipModel: programs

class ChipModelTest : public ::testing::Test {
 protected:
  ChipModelTest() : preset_(tp::load_preset("tiny")), chip_(preset_), n_(preset_.mxu.n) {}

  static Instr dma(Op op, uint64_t vaddr, uint64_t haddr, uint64_t rows, uint64_t cols, uint64_t hstride,
                   unsigned wait = 0, unsigned signal = 0) {
    Instr i;
    i.op = op;
    i.wait = wait;
    i.signal = signal;
    i.f.vaddr = vaddr;
    i.f.haddr = haddr;
    i.f.rows = rows;
    i.f.cols = cols;
    i.f.hstride = hstride;
    return i;
  }
  static Instr lw(uint64_t vaddr, unsigned wait = 0, unsigned signal = 0) {
    Instr i;
    i.op = Op::mxu_lw;
    i.wait = wait;
    i.signal = signal;
    i.f.vaddr = vaddr;
    return i;
  }
  static Instr mm(uint64_t vaddr, uint64_t acc, uint64_t rows, bool accumulate, unsigned wait = 0,
                  unsigned signal = 0) {
    Instr i;
    i.op = Op::mxu_mm;
    i.wait = wait;
    i.signal = signal;
    i.f.vaddr = vaddr;
    i.f.acc = acc;
    i.f.rows = rows;
    i.f.accumulate = accumulate ? 1 : 0;
    return i;
  }
  struct VecArgs {
    uint64_t dst = 0, a = 0, b = 0, rows = 1, imm = 0;
    bool a_acc = false, b_bcast = false;
    unsigned wait = 0, signal = 0;
  };
  static Instr vec(Op op, const VecArgs& v) {
    Instr i;
    i.op = op;
    i.wait = v.wait;
    i.signal = v.signal;
    i.f.dst = v.dst;
    i.f.a = v.a;
    i.f.b = v.b;
    i.f.rows = v.rows;
    i.f.imm = v.imm;
    i.f.a_acc = v.a_acc ? 1 : 0;
    i.f.b_bcast = v.b_bcast ? 1 : 0;
    return i;
  }
  static Instr fence(unsigned unit, unsigned wait = 0, unsigned signal = 0) {
    Instr i;
    i.op = Op::fence;
    i.wait = wait;
    i.signal = signal;
    i.f.unit = unit;
    return i;
  }
  static Instr halt() {
    Instr i;
    i.op = Op::halt;
    return i;
  }

  tp::isa::Program program(const std::vector<Word>& code) const {
    tp::isa::Program p;
    p.preset = preset_.name;
    p.fingerprint = tp::isa::fingerprint(preset_);
    p.code = code;
    return p;
  }
  tp::isa::Program program(const std::vector<Instr>& instrs) const {
    std::vector<Word> code;
    for (const Instr& i : instrs) code.push_back(tp::isa::encode(i));
    return program(code);
  }
  ChipModel::Result run(const std::vector<Instr>& instrs) {
    chip_.load(program(instrs));
    return chip_.run(1'000'000);
  }
  void expect_error(const std::vector<Instr>& instrs, Err err, uint32_t pc) {
    const auto r = run(instrs);
    EXPECT_TRUE(r.done);
    EXPECT_EQ(tp::isa::err_name(r.err), tp::isa::err_name(err));
    EXPECT_EQ(r.pc, pc);
  }
  void expect_ok(const ChipModel::Result& r) {
    EXPECT_TRUE(r.done);
    EXPECT_EQ(tp::isa::err_name(r.err), "none");
  }

  std::span<const uint32_t> vrow(uint64_t r) const { return chip_.vmem().subspan(r * n_, n_); }
  std::vector<uint32_t> random_words(std::size_t count, bool with_specials = false) {
    static constexpr uint32_t kSpecials[] = {0u,          0x80000000u, 0x00000001u, 0x807fffffu, 0x00800000u,
                                             0x7f7fffffu, 0xff7fffffu, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                             0x7f800001u, 0xffffffffu, kOne,        0xbf800000u};
    std::vector<uint32_t> v(count);
    for (auto& x : v) {
      if (with_specials && rng_() % 6 == 0) {
        x = kSpecials[rng_() % std::size(kSpecials)];
      } else {
        const uint32_t e = 110 + static_cast<uint32_t>(rng_() % 30);
        x = (static_cast<uint32_t>(rng_()) & 0x807fffffu) | e << 23;
      }
    }
    return v;
  }

  tp::Preset preset_;
  ChipModel chip_;
  unsigned n_;
  std::mt19937_64 rng_{2024};
};

TEST_F(ChipModelTest, DmaRoundTripWithStrides) {
  // 3 rows of 2 beats, 5 beats apart in HBM -> 6 contiguous VMEM rows -> 3 rows of 2 beats, 3 apart.
  const auto src = random_words(std::size_t{16} * n_);
  chip_.write_hbm(10, src);
  const auto r = run({dma(Op::dma_ld, 4, 10, 3, 2, 5, 0, 1), dma(Op::dma_st, 4, 100, 3, 2, 3, 1, 0), halt()});
  expect_ok(r);
  EXPECT_EQ(r.steps, 2u);
  for (unsigned row = 0; row < 3; ++row)
    for (unsigned c = 0; c < 2; ++c) {
      const auto want = std::span<const uint32_t>(src).subspan((row * 5 + c) * n_, n_);
      const auto vm = vrow(4 + row * 2 + c);
      EXPECT_TRUE(std::equal(vm.begin(), vm.end(), want.begin())) << "vmem row " << row * 2 + c;
      const auto back = chip_.read_hbm(100 + row * 3 + c, 1);
      EXPECT_TRUE(std::equal(back.begin(), back.end(), want.begin())) << "hbm row " << row << " col " << c;
    }
  for (uint32_t x : chip_.read_hbm(102, 1)) EXPECT_EQ(x, 0u);  // the gaps of the stride stay unwritten
  for (uint32_t x : vrow(3)) EXPECT_EQ(x, 0u);
  EXPECT_EQ(chip_.stats().bytes_loaded, 6ull * 4 * n_);
  EXPECT_EQ(chip_.stats().bytes_stored, 6ull * 4 * n_);
  EXPECT_EQ(chip_.stats().instructions, 3u);
  // Timing estimate: the store waits for the load: two DMAs of 6 beats plus the latency, each.
  EXPECT_GE(chip_.stats().est_cycles, 2ull * (6 + preset_.chip.mem_latency));
}

TEST_F(ChipModelTest, MatmulTwoKTilesMatchesMxuMatmul) {
  // C (m x n) = A (m x 2n) x B (2n x n), as two K tiles: overwrite, then accumulate.
  const unsigned m = 5, k = 2 * n_;
  std::vector<uint16_t> a(std::size_t{m} * k), b(std::size_t{k} * n_);
  for (auto& x : a) x = Bf16::from_float(std::uniform_real_distribution<float>(-4, 4)(rng_)).bits;
  for (auto& x : b) x = Bf16::from_float(std::uniform_real_distribution<float>(-4, 4)(rng_)).bits;
  // HBM: A's K tile t at beat 10*t (m rows), B's tile t at 100 + 10*t (n rows); garbage in
  // bits 31:16, which the MXU ignores.
  for (unsigned t = 0; t < 2; ++t) {
    std::vector<uint32_t> at(std::size_t{m} * n_), bt(std::size_t{n_} * n_);
    for (unsigned i = 0; i < m; ++i)
      for (unsigned j = 0; j < n_; ++j) at[i * n_ + j] = 0xabcd0000u | a[std::size_t{i} * k + t * n_ + j];
    for (unsigned i = 0; i < n_; ++i)
      for (unsigned j = 0; j < n_; ++j) bt[i * n_ + j] = 0x12340000u | b[std::size_t{t * n_ + i} * n_ + j];
    chip_.write_hbm(10 * t, at);
    chip_.write_hbm(100 + 10 * t, bt);
  }
  const auto r = run({
      dma(Op::dma_ld, 0, 0, 1, m, 0),            // A0 -> VMEM 0..
      dma(Op::dma_ld, 16, 100, 1, n_, 0, 0, 1),  // B0 -> VMEM 16..
      dma(Op::dma_ld, 32, 10, 1, m, 0),          // A1 -> VMEM 32..
      dma(Op::dma_ld, 48, 110, 1, n_, 0, 0, 1),  // B1 -> VMEM 48..
      lw(16, 1),                                 //
      mm(0, 3, m, false),                        // ACC[3..] = A0 x B0
      lw(48, 1),                                 // loads while the tile streams
      mm(32, 3, m, true, 0, 2),                  // ACC[3..] += A1 x B1
      mm(32, 20, m, false),                      // ACC[20..] = A1 x B1: same tile, no switch
      vec(Op::vmov, {.dst = 64, .a = 3, .rows = m, .a_acc = true, .wait = 2, .signal = 3}),
      dma(Op::dma_st, 64, 200, 1, m, 0, 3),  //
      halt(),
  });
  expect_ok(r);
  const auto c = mxu_matmul(n_, m, k, n_, a, b);
  const auto out = chip_.read_hbm(200, m);
  EXPECT_EQ(out, c);
  for (unsigned i = 0; i < m; ++i) {
    const auto acc = chip_.acc_row(3 + i);
    EXPECT_TRUE(std::equal(acc.begin(), acc.end(), c.begin() + i * n_));
  }
  std::vector<uint16_t> a1(std::size_t{m} * n_), b1(b.begin() + std::ptrdiff_t{n_} * n_, b.end());
  for (unsigned i = 0; i < m; ++i)
    for (unsigned j = 0; j < n_; ++j) a1[i * n_ + j] = a[std::size_t{i} * k + n_ + j];
  const auto c1 = mxu_matmul(n_, m, n_, n_, a1, b1);
  for (unsigned i = 0; i < m; ++i) {
    const auto acc = chip_.acc_row(20 + i);
    EXPECT_TRUE(std::equal(acc.begin(), acc.end(), c1.begin() + i * n_)) << "second mm on one tile, row " << i;
  }
  EXPECT_EQ(chip_.stats().mxu_rows, 3ull * m);
  EXPECT_EQ(chip_.stats().vec_rows, m);
}

// Every vector op, 3 rows, against vpu_row; b plain or broadcast, a from VMEM or the
// accumulators, one in-place case.
TEST_F(ChipModelTest, EveryVectorOpMatchesVpuRow) {
  const unsigned rows = 3;
  // VMEM: a at 0.., b at 8.., the mask at 16.., dst at 24..; accumulators: set with one matmul
  // by the identity so that ACC[0..2] hold known values.
  auto data = random_words(std::size_t{24} * n_, true);
  for (unsigned j = 0; j < n_; ++j) data[(16 + 1) * n_ + j] = j % 3 == 0 ? 0u : data[(16 + 1) * n_ + j];
  chip_.write_hbm(0, data);
  std::vector<uint32_t> eye(std::size_t{n_} * n_, 0u);
  for (unsigned i = 0; i < n_; ++i) eye[i * n_ + i] = 0x3f80u;
  chip_.write_hbm(1000, eye);
  std::vector<uint32_t> act(std::size_t{rows} * n_);
  for (auto& x : act) x = Bf16::from_float(std::uniform_real_distribution<float>(-8, 8)(rng_)).bits;
  chip_.write_hbm(2000, act);
  expect_ok(run({dma(Op::dma_ld, 100, 1000, 1, n_, 0), dma(Op::dma_ld, 200, 2000, 1, rows, 0, 0, 1), lw(100, 1),
                 mm(200, 0, rows, false), halt()}));

  const uint32_t imm = 0x3fc00000u;  // 1.5: the vscale factor
  for (const auto& d : tp::isa::kInstrs) {
    if (d.unit != tp::isa::Unit::vec) continue;
    for (int variant = 0; variant < 3; ++variant) {
      SCOPED_TRACE(std::string(d.name) + " variant " + std::to_string(variant));
      const bool bcast = variant == 1, from_acc = variant == 2, vsc = d.op == Op::vscale;  // vscale has no b
      VecArgs v{.dst = 24, .b = vsc ? 0u : 8u, .rows = rows, .a_acc = from_acc, .b_bcast = bcast && !vsc};
      v.imm = d.op == Op::vsel ? 16 : vsc ? imm : 0;
      v.wait = 1;
      expect_ok(run({dma(Op::dma_ld, 0, 0, 1, 24, 0, 0, 1), vec(d.op, v), halt()}));
      for (unsigned i = 0; i < rows; ++i) {
        const auto a = from_acc ? chip_.acc_row(i) : std::span<const uint32_t>(data).subspan(i * n_, n_);
        const auto b = std::span<const uint32_t>(data).subspan((8 + (bcast ? 0 : i)) * n_, n_);
        const auto m = std::span<const uint32_t>(data).subspan((16 + i) * n_, n_);
        std::vector<uint32_t> want(n_);
        vpu_row(d.op, a, b, m, static_cast<uint32_t>(v.imm), want);
        const auto got = vrow(24 + i);
        EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin())) << "row " << i;
      }
    }
  }
  // In place: a = dst.
  expect_ok(run({dma(Op::dma_ld, 0, 0, 1, 24, 0, 0, 1),
                 vec(Op::vadd, {.dst = 0, .a = 0, .b = 8, .rows = rows, .wait = 1}), halt()}));
  for (unsigned i = 0; i < rows; ++i) {
    std::vector<uint32_t> want(n_);
    vpu_row(Op::vadd, std::span<const uint32_t>(data).subspan(i * n_, n_),
            std::span<const uint32_t>(data).subspan((8 + i) * n_, n_), {}, 0, want);
    const auto got = vrow(i);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin())) << "in place, row " << i;
  }
}

// A vector op that comes first in program order waits for a later load through a semaphore;
// a fence orders two queues; a semaphore counts.
TEST_F(ChipModelTest, SemaphoresOrderQueues) {
  const auto x = random_words(std::size_t{4} * n_);
  chip_.write_hbm(0, x);
  const auto r = run({
      vec(Op::vmov, {.dst = 20, .a = 0, .rows = 2, .wait = 1, .signal = 2}),  // needs both loads
      vec(Op::vmov, {.dst = 22, .a = 2, .rows = 2, .wait = 1, .signal = 2}),
      dma(Op::dma_ld, 0, 0, 1, 2, 0, 0, 1),  // signals 1 (count 1)
      dma(Op::dma_ld, 2, 2, 1, 2, 0, 0, 1),  // signals 1 (count 2)
      fence(3, 2),                           // store queue: takes 2
      fence(3, 2, 3),                        // ... and again, then 3
      dma(Op::dma_st, 20, 50, 1, 4, 0, 3),   // after both vmovs
      halt(),
  });
  expect_ok(r);
  EXPECT_EQ(r.steps, 7u);
  EXPECT_EQ(chip_.read_hbm(50, 4), x);
}

TEST_F(ChipModelTest, WatchdogStopsAndResumes) {
  chip_.write_hbm(0, random_words(n_));
  chip_.load(program(std::vector<Instr>{dma(Op::dma_ld, 0, 0, 1, 1, 0), dma(Op::dma_st, 0, 9, 1, 1, 0), halt()}));
  const auto r1 = chip_.run(1);
  EXPECT_FALSE(r1.done);
  EXPECT_EQ(r1.steps, 1u);
  const auto r2 = chip_.run();
  expect_ok(r2);
  EXPECT_EQ(r2.steps, 2u);
  EXPECT_EQ(r2.pc, 2u);  // the halt
  EXPECT_EQ(chip_.read_hbm(9, 1), chip_.read_hbm(0, 1));
}

// ---------------------------------------------------------------------------------------------
// ChipModel: errors, each with its PC

TEST_F(ChipModelTest, IllegalOpcode) {
  Word bad = tp::isa::encode(halt());
  bad[1] = (bad[1] & ~(uint64_t{0x3f} << 58)) | (uint64_t{6} << 58);  // opcode 6 is not in the table
  chip_.load(program(std::vector<Word>{tp::isa::encode(fence(0)), bad, tp::isa::encode(halt())}));
  const auto r = chip_.run();
  EXPECT_EQ(r.err, Err::illegal_opcode);
  EXPECT_EQ(r.pc, 1u);
}

TEST_F(ChipModelTest, BadField) {
  Word bad = tp::isa::encode(halt());
  bad[0] |= 1;  // halt has no fields: bit 0 is reserved
  chip_.load(program(std::vector<Word>{bad}));
  EXPECT_EQ(chip_.run().err, Err::bad_field);
  expect_error({fence(1), dma(Op::dma_ld, 0, 0, 1, 0, 0), halt()}, Err::bad_field, 1);  // cols == 0
  expect_error({dma(Op::dma_st, 0, 0, 0, 1, 0), halt()}, Err::bad_field, 0);            // rows == 0
  // rows == 0 comes before the range checks.
  expect_error({vec(Op::vadd, {.dst = (1u << 15) - 1, .a = 0, .b = 0, .rows = 0}), halt()}, Err::bad_field, 0);
}

TEST_F(ChipModelTest, VmemRange) {
  const uint64_t vr = preset_.chip.vmem_rows;
  expect_ok(run({dma(Op::dma_ld, vr - 2, 0, 1, 2, 0), halt()}));  // exactly fits
  expect_error({fence(0), dma(Op::dma_ld, vr - 2, 0, 1, 3, 0), halt()}, Err::vmem_range, 1);
  expect_error({lw(vr - n_ + 1), halt()}, Err::vmem_range, 0);
  expect_error({vec(Op::vadd, {.dst = 0, .a = 8, .b = vr - 1, .rows = 2}), halt()}, Err::vmem_range, 0);
  expect_error({vec(Op::vsel, {.dst = 0, .a = 8, .b = 16, .rows = 2, .imm = vr - 1}), halt()}, Err::vmem_range, 0);
  // b is not checked for an op that does not use it; a broadcast b is one row.
  expect_ok(run({vec(Op::vrelu, {.dst = 0, .a = 8, .b = vr + 5, .rows = 2}), halt()}));
  expect_ok(run({vec(Op::vadd, {.dst = 0, .a = 8, .b = vr - 1, .rows = 2, .b_bcast = true}), halt()}));
  // The range checks come before overlap.
  expect_error({vec(Op::vadd, {.dst = vr - 1, .a = vr - 2, .b = 0, .rows = 2}), halt()}, Err::vmem_range, 0);
}

TEST_F(ChipModelTest, HbmRange) {
  const uint64_t hb = preset_.chip.hbm_beats;
  expect_ok(run({dma(Op::dma_ld, 0, hb - 1 - 2 * 7, 3, 1, 7), halt()}));  // last beat is hb - 1
  expect_error({dma(Op::dma_ld, 0, hb - 2 * 7, 3, 1, 7), halt()}, Err::hbm_range, 0);
  expect_error({dma(Op::dma_st, 0, hb - 1, 1, 2, 0), halt()}, Err::hbm_range, 0);
  // vmem_range is checked first.
  expect_error({dma(Op::dma_st, preset_.chip.vmem_rows, hb, 1, 1, 0), halt()}, Err::vmem_range, 0);
}

TEST_F(ChipModelTest, AccRange) {
  const uint64_t ar = preset_.mxu.acc_rows;
  expect_error({lw(0), mm(0, ar - 1, 2, false), halt()}, Err::acc_range, 1);
  expect_error({vec(Op::vmov, {.dst = 0, .a = ar - 1, .rows = 2, .a_acc = true}), halt()}, Err::acc_range, 0);
  expect_ok(run({vec(Op::vmov, {.dst = 0, .a = ar - 2, .rows = 2, .a_acc = true}), halt()}));
}

TEST_F(ChipModelTest, Overlap) {
  expect_error({vec(Op::vadd, {.dst = 10, .a = 12, .b = 40, .rows = 4}), halt()}, Err::overlap, 0);
  expect_error({vec(Op::vadd, {.dst = 10, .a = 40, .b = 13, .rows = 4}), halt()}, Err::overlap, 0);
  expect_error({vec(Op::vadd, {.dst = 10, .a = 40, .b = 11, .rows = 4, .b_bcast = true}), halt()}, Err::overlap, 0);
  expect_error({vec(Op::vsel, {.dst = 10, .a = 40, .b = 50, .rows = 4, .imm = 7}), halt()}, Err::overlap, 0);
  expect_error({vec(Op::vadd, {.dst = 10, .a = 10, .b = 10, .rows = 1, .b_bcast = false}), fence(0),
                vec(Op::vadd, {.dst = 10, .a = 10, .b = 11, .rows = 2})},
               Err::overlap, 2);
  // Exactly in place or disjoint is fine; a from the accumulators is no VMEM source.
  expect_ok(run({vec(Op::vadd, {.dst = 10, .a = 10, .b = 10, .rows = 4}), halt()}));
  expect_ok(run({vec(Op::vadd, {.dst = 10, .a = 14, .b = 6, .rows = 4}), halt()}));
  expect_ok(run({vec(Op::vadd, {.dst = 10, .a = 10, .b = 10, .rows = 1, .b_bcast = true}), halt()}));
  expect_ok(run({vec(Op::vmov, {.dst = 10, .a = 11, .rows = 4, .a_acc = true}), halt()}));
  expect_ok(run({vec(Op::vrelu, {.dst = 10, .a = 0, .b = 11, .rows = 4}), halt()}));  // b unused
}

TEST_F(ChipModelTest, MxuSequence) {
  expect_error({fence(1), mm(0, 0, 1, false), halt()}, Err::mxu_no_weights, 1);
  expect_error({lw(0), mm(0, 0, 1, false), lw(0), lw(0), halt()}, Err::mxu_weights_unused, 3);
  expect_ok(run({lw(0), mm(0, 0, 1, false), mm(0, 1, 1, false), lw(0), mm(0, 0, 1, true), halt()}));
  // An lw that is out of range is a vmem_range, not a sequence error (the range checks come first).
  expect_error({lw(0), lw(preset_.chip.vmem_rows), halt()}, Err::vmem_range, 1);
}

TEST_F(ChipModelTest, Deadlock) {
  // Two queue heads wait on semaphores nobody signals; the PC is the smaller of the two.
  expect_error({dma(Op::dma_ld, 0, 0, 1, 1, 0), dma(Op::dma_st, 0, 0, 1, 1, 0, 5), vec(Op::vmov, {.wait = 4}), halt()},
               Err::deadlock, 1);
  // The front end stalled on a full queue counts too: queue+1 vector instructions wait on a
  // semaphore that only the load after them signals, so the load is never fetched.
  std::vector<Instr> prog;
  for (unsigned k = 0; k <= preset_.chip.queue; ++k) prog.push_back(vec(Op::vmov, {.dst = 10 + k, .wait = 1}));
  prog.push_back(dma(Op::dma_ld, 0, 0, 1, 1, 0, 0, 1));
  prog.push_back(halt());
  expect_error(prog, Err::deadlock, 0);
  // With one vector instruction fewer, the load is dispatched and signals once: the first
  // vector instruction runs, the next one waits forever.
  prog.erase(prog.begin());
  expect_error(prog, Err::deadlock, 1);
}

TEST_F(ChipModelTest, NoHalt) {
  expect_error({fence(0), fence(2)}, Err::no_halt, 2);
  chip_.load(program(std::vector<Word>{}));
  const auto r = chip_.run();
  EXPECT_EQ(r.err, Err::no_halt);
  EXPECT_EQ(r.pc, 0u);
}

TEST_F(ChipModelTest, LoadChecksPresetAndLength) {
  tp::isa::Program p = program(std::vector<Instr>{halt()});
  p.fingerprint ^= 1;
  EXPECT_THROW(chip_.load(p), tp::isa::IsaError);
  p = program(std::vector<Instr>(preset_.chip.imem_words + 1, halt()));
  EXPECT_THROW(chip_.load(p), std::invalid_argument);
  EXPECT_THROW(chip_.run(), std::logic_error);  // nothing loaded
}

// ---------------------------------------------------------------------------------------------
// ChipModel: the scalar unit, loops and register fields (docs/isa.md, docs/chip.md)

class ChipModelScalar : public ChipModelTest {
 protected:
  ChipModel::Result run_asm(const std::string& text, uint64_t budget = 1'000'000) {
    chip_.load(tp::isa::assemble(text, "t.s", preset_));
    return chip_.run(budget);
  }
  void expect_asm_error(const std::string& text, Err err, uint32_t pc) {
    SCOPED_TRACE(text);
    const auto r = run_asm(text);
    EXPECT_TRUE(r.done);
    EXPECT_EQ(tp::isa::err_name(r.err), tp::isa::err_name(err));
    EXPECT_EQ(r.pc, pc);
  }
  // The preset's sizes as assembler constants, as in tb/chip/test_chip.cpp.
  std::string sizes() const {
    return fmt::format(".set V, {}\n.set A, {}\n.set H, {}\n.set N, {}\n", preset_.chip.vmem_rows, preset_.mxu.acc_rows,
                       preset_.chip.hbm_beats, n_);
  }
  static std::string s32(uint32_t v) { return std::to_string(static_cast<int32_t>(v)); }
};

TEST_F(ChipModelScalar, EveryAluOperation) {
  struct Case {
    const char* op;
    uint32_t a, b, want;
  };
  const Case cases[] = {
      {"add", 5, 7, 12},
      {"add", 0xffffffffu, 1, 0},  // wraps mod 2^32
      {"add", 0x7fffffffu, 1, 0x80000000u},
      {"sub", 3, 5, 0xfffffffeu},
      {"sub", 0, 0x80000000u, 0x80000000u},
      {"and", 0xf0f0f0f0u, 0xff00ff00u, 0xf000f000u},
      {"or", 0xf0f0f0f0u, 0xff00ff00u, 0xfff0fff0u},
      {"xor", 0xf0f0f0f0u, 0xff00ff00u, 0x0ff00ff0u},
      {"sll", 1, 31, 0x80000000u},
      {"sll", 3, 33, 6},  // the amount is rs2 & 31
      {"sll", 1, 32, 1},
      {"sll", 0x12345678u, 0, 0x12345678u},
      {"srl", 0x80000000u, 31, 1},  // logical: zeros come in
      {"srl", 0xffffffffu, 36, 0x0fffffffu},
      {"srl", 0xffffffffu, 0xffffffe0u, 0xffffffffu},
      {"slt", 0xffffffffu, 1, 1},  // signed: -1 < 1
      {"slt", 1, 0xffffffffu, 0},
      {"slt", 0x80000000u, 0x7fffffffu, 1},
      {"slt", 5, 5, 0},
      {"sltu", 0xffffffffu, 1, 0},  // unsigned
      {"sltu", 1, 0xffffffffu, 1},
      {"sltu", 5, 5, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("{} {:#x}, {:#x}", c.op, c.a, c.b));
    expect_ok(run_asm(fmt::format("li r1, {}\nli r2, {}\n{} r3, r1, r2\nhalt\n", s32(c.a), s32(c.b), c.op)));
    EXPECT_EQ(chip_.reg(3), c.want);
    EXPECT_EQ(chip_.reg(1), c.a);
    EXPECT_EQ(chip_.reg(2), c.b);
  }
  struct ImmCase {
    const char* op;
    uint32_t a;
    int64_t imm;
    uint32_t want;
  };
  const ImmCase imms[] = {
      {"addi", 5, -7, 0xfffffffeu},          {"addi", 0xffffffffu, 1, 0},  {"addi", 0x7fffffffu, 1, 0x80000000u},
      {"addi", 1, -2147483648, 0x80000001u}, {"slli", 3, 31, 0x80000000u}, {"slli", 0xabcdu, 0, 0xabcdu},
      {"slli", 0xffffffffu, 4, 0xfffffff0u}, {"srli", 0x80000000u, 31, 1}, {"srli", 0xffffffffu, 1, 0x7fffffffu},
      {"srli", 0xabcdu, 0, 0xabcdu},
  };
  for (const ImmCase& c : imms) {
    SCOPED_TRACE(fmt::format("{} {:#x}, {}", c.op, c.a, c.imm));
    expect_ok(run_asm(fmt::format("li r1, {}\n{} r3, r1, {}\nhalt\n", s32(c.a), c.op, c.imm)));
    EXPECT_EQ(chip_.reg(3), c.want);
  }
  // li, rd = rs, r0 stays 0 (a write to it is dropped), and the registers start at 0.
  expect_ok(
      run_asm("li r1, -1\nli r2, -2147483648\nli r3, 2147483647\nli r0, 5\naddi r4, r0, 0\n"
              "addi r5, r5, 1\naddi r5, r5, 1\nadd r6, r7, r8\nhalt\n"));
  EXPECT_EQ(chip_.reg(1), 0xffffffffu);
  EXPECT_EQ(chip_.reg(2), 0x80000000u);
  EXPECT_EQ(chip_.reg(3), 0x7fffffffu);
  EXPECT_EQ(chip_.reg(0), 0u);
  EXPECT_EQ(chip_.reg(4), 0u);
  EXPECT_EQ(chip_.reg(5), 2u);
  EXPECT_EQ(chip_.reg(6), 0u);
  EXPECT_EQ(chip_.stats().instructions, 9u);  // the scalar instructions and halt
  // load() resets the registers.
  chip_.load(tp::isa::assemble("halt\n", "t.s", preset_));
  EXPECT_EQ(chip_.reg(5), 0u);
}

TEST_F(ChipModelScalar, BranchesTakenAndNotTaken) {
  struct Case {
    const char* op;
    uint32_t a, b;
    bool taken;
  };
  const Case cases[] = {
      {"beq", 5, 5, true},
      {"beq", 5, 6, false},
      {"bne", 5, 6, true},
      {"bne", 5, 5, false},
      {"blt", 0xffffffffu, 1, true},  // signed: -1 < 1
      {"blt", 1, 0xffffffffu, false},
      {"blt", 0x80000000u, 0x7fffffffu, true},
      {"blt", 5, 5, false},
      {"bge", 5, 5, true},
      {"bge", 0xffffffffu, 1, false},
      {"bge", 1, 0xffffffffu, true},
      {"bge", 0x7fffffffu, 0x80000000u, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("{} {:#x}, {:#x}", c.op, c.a, c.b));
    const auto r = run_asm(fmt::format(
        "li r1, {}\nli r2, {}\n{} r1, r2, taken\nli r3, 1\nhalt\ntaken: li r3, 2\nhalt\n", s32(c.a), s32(c.b), c.op));
    expect_ok(r);
    EXPECT_EQ(chip_.reg(3), c.taken ? 2u : 1u);
    EXPECT_EQ(r.pc, c.taken ? 6u : 4u);  // the halt
  }
}

// loop: rd -= 1, then back while rd != 0, so a count of c runs the body c times.
TEST_F(ChipModelScalar, LoopCountRunsTheBodyThatManyTimes) {
  for (const uint32_t c : {1u, 2u, 3u, 10u, 1000u}) {
    SCOPED_TRACE(c);
    const auto r = run_asm(fmt::format("li r1, {}\ntop: addi r2, r2, 1\nloop r1, top\nhalt\n", c));
    expect_ok(r);
    EXPECT_EQ(chip_.reg(2), c);
    EXPECT_EQ(chip_.reg(1), 0u);
    EXPECT_EQ(r.steps, 1 + 2ull * c);
    EXPECT_EQ(chip_.stats().instructions, 2 + 2ull * c);
    // li and the first addi pair, the first loop issues alone, then each iteration's addi and
    // loop pair (the loop reads r1, the addi writes r2): one front-end cycle per iteration.
    EXPECT_EQ(chip_.stats().est_cycles, 2 + uint64_t{c});
  }
  // A count of 0 runs 2^32 times: the budget stops it after 500 iterations, and it goes on.
  auto r = run_asm("top: addi r2, r2, 1\nloop r1, top\nhalt\n", 1000);
  EXPECT_FALSE(r.done);
  EXPECT_EQ(r.steps, 1000u);
  EXPECT_EQ(chip_.reg(2), 500u);
  EXPECT_EQ(chip_.reg(1), static_cast<uint32_t>(-500));
  r = chip_.run(1000);
  EXPECT_FALSE(r.done);
  EXPECT_EQ(chip_.reg(2), 1000u);
  // Nested loops with counts from registers, and a loop written with a compare and a branch.
  expect_ok(run_asm(R"(
        li r10, 4               ; the inner count
        li r1, 3
outer:  add r2, r10, r0
inner:  addi r3, r3, 1
        loop r2, inner
        addi r4, r4, 1
        loop r1, outer
        li r5, 6
count:  addi r6, r6, 1
        blt r6, r5, count
        halt
)"));
  EXPECT_EQ(chip_.reg(3), 12u);
  EXPECT_EQ(chip_.reg(4), 3u);
  EXPECT_EQ(chip_.reg(6), 6u);
}

// Register fields: the unit sees R[reg] + field. A loop walks HBM and VMEM with strides.
TEST_F(ChipModelScalar, RegisterFieldsComputeAddressesAndRows) {
  const auto src = random_words(std::size_t{40} * n_);
  chip_.write_hbm(10, src);
  const auto r = run_asm(R"(
        li r1, 5            ; iterations
        li r2, 10           ; HBM source, +3 a step
        li r3, 4            ; VMEM, +2 a step
        li r4, 200          ; HBM destination, +1 a step
top:    dma.ld r3, r2, 1, 1, 0 signal=1
        dma.st r3, r4+1, 1, 1, 0 wait=1
        addi r2, r2, 3
        addi r3, r3, 2
        addi r4, r4, 1
        loop r1, top
        li r5, 3            ; rows from a register: 3 rows, hstride 2, to VMEM 100..
        li r6, 96
        dma.ld r6+4, 10, r5, 1, 2 signal=2
        li r7, 2
        vadd r7+300, r6+4, r5, b=r6+6, wait=2 signal=3   ; rows 302.. = rows 100.. + rows 102..
        dma.st 300, 500, r7+3, 1, 1 wait=3
        halt
)");
  expect_ok(r);
  for (unsigned i = 0; i < 5; ++i) {
    const auto want = std::span<const uint32_t>(src).subspan(3 * i * n_, n_);
    const auto vm = vrow(4 + 2 * i);
    EXPECT_TRUE(std::equal(vm.begin(), vm.end(), want.begin())) << "vmem row of iteration " << i;
    const auto back = chip_.read_hbm(201 + i, 1);
    EXPECT_TRUE(std::equal(back.begin(), back.end(), want.begin())) << "hbm row of iteration " << i;
  }
  for (uint32_t x : chip_.read_hbm(200, 1)) EXPECT_EQ(x, 0u);
  for (unsigned i = 0; i < 3; ++i) {
    const auto want = std::span<const uint32_t>(src).subspan(2 * i * n_, n_);
    const auto vm = vrow(100 + i);
    EXPECT_TRUE(std::equal(vm.begin(), vm.end(), want.begin())) << "row " << i << " of the 3-row load";
  }
  const auto out = chip_.read_hbm(500, 5);
  for (unsigned i = 0; i < 3; ++i) {
    std::vector<uint32_t> want(n_);
    vpu_row(Op::vadd, vrow(100 + i), vrow(102 + i), {}, 0, want);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), out.begin() + (2 + i) * n_)) << "vadd row " << i;
  }
  EXPECT_EQ(chip_.stats().bytes_stored, (5ull + 5) * 4 * n_);
  EXPECT_EQ(chip_.stats().vec_rows, 3u);
}

TEST_F(ChipModelScalar, BranchRange) {
  // The target must lie inside the program, taken or not; target = length - 1 is fine.
  expect_asm_error("li r1, 1\nbeq r1, r1, 3\nhalt\n", Err::branch_range, 1);
  expect_asm_error("li r1, 1\nbne r1, r1, 3\nhalt\n", Err::branch_range, 1);  // not taken
  expect_asm_error("fence 0\nblt r0, r0, 1048575\nhalt\n", Err::branch_range, 1);
  expect_asm_error("bge r0, r0, 4\nhalt\nhalt\nhalt\n", Err::branch_range, 0);
  expect_asm_error("li r1, 2\nli r2, 2\nloop r1, 4\nhalt\n", Err::branch_range, 2);
  expect_ok(run_asm("bge r0, r0, 3\nhalt\nhalt\nhalt\n"));
  expect_ok(run_asm("li r1, 2\nloop r1, 2\nhalt\n"));
}

TEST_F(ChipModelScalar, ScalarBadField) {
  // The front end has no semaphores; shift amounts are 0..31; loop needs a counter.
  expect_asm_error("li r1, 1\naddi r1, r0, 1 wait=1\nhalt\n", Err::bad_field, 1);
  expect_asm_error("add r1, r2, r3 signal=15\nhalt\n", Err::bad_field, 0);
  expect_asm_error("fence 0\nbeq r0, r0, 2 wait=2\nhalt\n", Err::bad_field, 1);
  expect_asm_error("slli r1, r1, 32\nhalt\n", Err::bad_field, 0);
  expect_asm_error("srli r1, r1, -1\nhalt\n", Err::bad_field, 0);
  expect_asm_error("li r1, 3\nloop r0, 0\nhalt\n", Err::bad_field, 1);
  // bad_field comes before branch_range.
  expect_asm_error("loop r0, 100\nhalt\n", Err::bad_field, 0);
  expect_asm_error("bne r0, r0, 100 signal=1\nhalt\n", Err::bad_field, 0);
  // A reserved bit of a scalar instruction (alu uses bits 14:0).
  tp::isa::Instr add;
  add.op = Op::add;
  Word w = tp::isa::encode(add);
  w[0] |= uint64_t{1} << 15;
  chip_.load(program(std::vector<Word>{tp::isa::encode(fence(0)), w, tp::isa::encode(halt())}));
  const auto r = chip_.run();
  EXPECT_EQ(r.err, Err::bad_field);
  EXPECT_EQ(r.pc, 1u);
}

// A register-computed field is exact: R + field in 64 bits, checked like an immediate.
TEST_F(ChipModelScalar, RegisterComputedFieldsAreChecked) {
  const std::string s = sizes();
  // rows that do not fit the field: bad_field.
  expect_asm_error(s + "li r1, 65536\ndma.ld 0, 0, r1, 1, 1\nhalt\n", Err::bad_field, 1);
  expect_asm_error(s + "li r1, 65535\nfence 0\ndma.st 0, 0, r1+1, 1, 1\nhalt\n", Err::bad_field, 2);
  expect_asm_error(s + "li r1, 32767\nvmov 0, 8, r1+1\nhalt\n", Err::bad_field, 1);
  expect_asm_error(s + "li r1, 65536\nmxu.lw 0\nmxu.mm 0, 0, r1\nhalt\n", Err::bad_field, 2);
  expect_asm_error(s + "li r1, 65536\nici.send 0, 0, r1, 0, 0\nhalt\n", Err::bad_field, 1);
  expect_asm_error(s + "li r1, -1\nvmov 0, 8, r1+1\nhalt\n", Err::bad_field, 1);  // 2^32, not 0
  expect_asm_error(s + "dma.ld 0, 0, r1, 1, 1\nhalt\n", Err::bad_field, 0);       // 0 rows
  // rows that fit the field but not the memory: the range check.
  expect_asm_error(s + "li r1, 65535\ndma.ld 0, 0, r1, 1, 1\nhalt\n", Err::vmem_range, 1);
  // Addresses past the memory: the range checks, with the exact sum (no wrap, no truncation).
  expect_asm_error(s + "li r1, V\ndma.ld r1, 0, 1, 1, 1\nhalt\n", Err::vmem_range, 1);
  expect_asm_error(s + "li r1, V-4\ndma.ld r1+2, 0, 3, 1, 1\nhalt\n", Err::vmem_range, 1);
  expect_asm_error(s + "li r1, 0x8000\nmxu.lw r1\nhalt\n", Err::vmem_range, 1);         // 15 bits would be 0
  expect_asm_error(s + "li r1, -32767\nmxu.lw r1+0x7fff\nhalt\n", Err::vmem_range, 1);  // 2^32 would be 0
  expect_asm_error(s + "li r1, 0x10000\nvmov r1, 8, 1\nhalt\n", Err::vmem_range, 1);
  expect_asm_error(s + "li r1, V\nvmov 0, r1, 1\nhalt\n", Err::vmem_range, 1);
  expect_asm_error(s + "li r1, V\nvadd 0, 8, 1, b=r1\nhalt\n", Err::vmem_range, 1);
  expect_asm_error(s + "li r1, V\nici.send r1, 0, 1, 0, 0\nhalt\n", Err::vmem_range, 1);
  expect_asm_error(s + "li r1, V\nici.send 0, r1, 1, 0, 0\nhalt\n", Err::vmem_range, 1);
  expect_asm_error(s + "li r1, H\ndma.st 0, r1, 1, 1, 1\nhalt\n", Err::hbm_range, 1);
  expect_asm_error(s + "li r1, 0x10000000\ndma.st 0, r1, 1, 1, 1\nhalt\n", Err::hbm_range, 1);  // 28 bits: 0
  expect_asm_error(s + "li r1, A\nmxu.lw 0\nmxu.mm 0, r1, 1\nhalt\n", Err::acc_range, 2);
  expect_asm_error(s + "li r1, 0x8000\nmxu.lw 0\nmxu.mm 0, r1, 1\nhalt\n", Err::acc_range, 2);
  expect_asm_error(s + "li r1, A-1\nvmov 0, r1, 2, a_acc=1\nhalt\n", Err::acc_range, 1);
  // The computed ranges are what the overlap check sees.
  expect_asm_error(s + "li r1, 2\nvadd r1+8, 8, 4, b=20\nhalt\n", Err::overlap, 1);
  expect_ok(run_asm(s + "li r1, 4\nvadd r1+4, 8, 4, b=20\nhalt\n"));  // in place
  // In a loop: the address grows past VMEM at the fifth iteration; the registers say so.
  const auto r = run_asm(s + "li r2, 100\ntop: mxu.lw r1\nmxu.mm 0, 0, 1\naddi r1, r1, 512\nloop r2, top\nhalt\n");
  EXPECT_EQ(tp::isa::err_name(r.err), "vmem_range");
  EXPECT_EQ(r.pc, 1u);
  EXPECT_EQ(chip_.reg(1), 2048u);  // tiny: 2048 VMEM rows
  EXPECT_EQ(chip_.reg(2), 96u);
}

// A loop that never ends stops at run()'s step budget: the scalar instructions count.
TEST_F(ChipModelScalar, EndlessLoopStopsAtTheBudget) {
  auto r = run_asm("top: beq r0, r0, top\nhalt\n", 5000);
  EXPECT_FALSE(r.done);
  EXPECT_EQ(r.err, Err::none);
  EXPECT_EQ(r.steps, 5000u);
  EXPECT_EQ(r.pc, 0u);
  r = chip_.run(100);
  EXPECT_FALSE(r.done);
  EXPECT_EQ(r.steps, 5100u);
  // With a queue head waiting forever behind it: the front end still runs, so no deadlock.
  r = run_asm("vmov 8, 0, 1 wait=1\nli r1, 0\ntop: addi r1, r1, 1\nbne r0, r1, top\nhalt\n", 20'000);
  EXPECT_FALSE(r.done);
  EXPECT_EQ(r.err, Err::none);
  EXPECT_EQ(chip_.reg(1), 10000u);  // li, then addi and bne: the 20000th step is an addi
  // The units run while the front end loops: a send's error at execution still stops the chip.
  r = run_asm("ici.send 0, 0, 1, 5, 0, abs=1\ntop: beq r0, r0, top\nhalt\n", 20'000);
  EXPECT_TRUE(r.done);
  EXPECT_EQ(tp::isa::err_name(r.err), "ici_slice");
  EXPECT_EQ(r.pc, 0u);
  EXPECT_LT(r.steps, 10u);
  // ... and so does a load's data: it is in VMEM while the loop still runs.
  chip_.write_hbm(3, random_words(n_));
  r = run_asm("dma.ld 5, 3, 1, 1, 1\ntop: beq r0, r0, top\nhalt\n", 1000);
  EXPECT_FALSE(r.done);
  const auto row = vrow(5);
  const auto want = chip_.read_hbm(3, 1);
  EXPECT_TRUE(std::equal(row.begin(), row.end(), want.begin()));
}

TEST(ChipModel, SparseHbmOnALargePreset) {
  const tp::Preset v2 = tp::load_preset("v2");
  ChipModel chip(v2);
  const unsigned n = chip.lanes();
  const uint64_t last = v2.chip.hbm_beats - 1;
  std::vector<uint32_t> beat(n);
  for (unsigned j = 0; j < n; ++j) beat[j] = 0x1000u + j;
  chip.write_hbm(last, beat);
  EXPECT_EQ(chip.read_hbm(last, 1), beat);
  EXPECT_EQ(chip.read_hbm(last - 1, 1), std::vector<uint32_t>(n, 0u));  // unwritten
  EXPECT_EQ(chip.read_hbm(8000000, 2), std::vector<uint32_t>(2 * n, 0u));
  EXPECT_THROW(chip.write_hbm(last, std::vector<uint32_t>(2 * n)), std::out_of_range);
  EXPECT_THROW(chip.read_hbm(last, 2), std::out_of_range);
  EXPECT_THROW(chip.read_hbm(~uint64_t{0}, 2), std::out_of_range);
  EXPECT_THROW(chip.write_hbm(0, std::vector<uint32_t>(n + 1)), std::invalid_argument);
}

// The fast pod's links (pod_network.h) on a 4x4 torus, 1 flit per row + a head per 4 rows, 3
// cycles a hop: an idle path keeps the timing model's arrival; a transfer sharing a link with an
// earlier one waits for its flits; one on other links, or in the gap after it, does not.
TEST(PodNetwork, TransfersTakeTurnsOnSharedLinks) {
  using tp::golden::Coord;
  const tp::golden::Torus t{4, 4};
  const tp::golden::Slice all{0, 0, 4, 4};
  const tp::golden::FastIciFigures f{3, 1, 4};
  tp::golden::PodNetwork net(t, f);
  EXPECT_EQ(f.flits(8), 10u);
  EXPECT_EQ(f.flits(9), 12u);
  // (0,0) -> (2,0): two hops east. Idle: the arrival stays.
  EXPECT_EQ(net.book(all, {0, 0}, {2, 0}, 8, 100, 1000), 1000u);
  // (1,0) -> (2,0) at the same time shares the second link, which the first transfer's flits hold
  // from 103 to 113: 3 of its 10 flits go before, 7 after; its last leaves at 120, not 110.
  EXPECT_EQ(net.book(all, {1, 0}, {2, 0}, 8, 100, 500), 510u);
  // Another link (north from (0,0)): no wait; the same link after the others: no wait either.
  EXPECT_EQ(net.book(all, {0, 0}, {0, 1}, 8, 100, 700), 700u);
  EXPECT_EQ(net.book(all, {1, 0}, {2, 0}, 8, 200, 900), 900u);
  // To itself, or nothing: no link.
  EXPECT_EQ(net.book(all, {3, 3}, {3, 3}, 8, 0, 5), 5u);
  EXPECT_EQ(net.book(all, {0, 0}, {2, 0}, 0, 0, 5), 5u);
  // Booked later but earlier in time: it takes the free cycles before the first booking (0..100),
  // then spills past the others.
  tp::golden::PodNetwork later(t, f);
  EXPECT_EQ(later.book(all, {0, 0}, {1, 0}, 8, 10, 50), 50u);
  EXPECT_EQ(later.book(all, {0, 0}, {1, 0}, 8, 5, 40), 40u + 10u);  // 5 of its 10 flits before 10, 5 after 20
  // A delay on the first link of two carries to the arrival: (0,0)E is busy 5..15, so a transfer
  // from 0 puts 5 flits before and 5 after it; the second link, free, would take all 10 from 3,
  // but the last flit reaches it only a hop after it left the first (at 20): 10 cycles late.
  tp::golden::PodNetwork two(t, f);
  EXPECT_EQ(two.book(all, {0, 0}, {1, 0}, 8, 5, 100), 100u);
  EXPECT_EQ(two.book(all, {0, 0}, {2, 0}, 8, 0, 200), 210u);
}

// A VC's credits limit a stream (FastIciFigures::stream_cycles): 3 flits in flight and a loop of
// 6 cycles send bursts of 3 flits every 6 cycles; with the loop inside the buffer, a flit a cycle.
// On the fast pod's links the stream's last flit leaves no sooner than that after its first, a
// sender's engine sends its transfers one after another, and a transfer holds its VC on each
// link from head to tail (wormhole).
TEST(PodNetwork, CreditsEnginesAndVcsHoldStreams) {
  using tp::golden::Coord;
  const tp::golden::FastIciFigures f{3, 1, 4, 0, 3, 6};
  EXPECT_EQ(f.stream_cycles(0), 0u);
  EXPECT_EQ(f.stream_cycles(1), 1u);
  EXPECT_EQ(f.stream_cycles(3), 3u);
  EXPECT_EQ(f.stream_cycles(4), 7u);
  EXPECT_EQ(f.stream_cycles(7), 13u);
  EXPECT_EQ(f.stream_cycles(2050), 683u * 6 + 1);
  const tp::golden::FastIciFigures full{3, 1, 4, 0, 4, 4};
  EXPECT_EQ(full.stream_cycles(10), 10u);
  const tp::golden::Torus t{4, 4};
  const tp::golden::Slice all{0, 0, 4, 4};
  tp::golden::PodNetwork net(t, f);
  // 8 rows: 10 flits over 19 cycles. Idle: the arrival stays.
  EXPECT_EQ(net.book(all, {0, 0}, {0, 2}, 8, 100, 1000), 1000u);
  // (3,0) -> (0,1) goes east, then north on (0,0)'s north link at 100 too: its flits go after the
  // first's 10 (100..110), its stream 19 cycles from there: it ends at 129, not 119 (10 late).
  EXPECT_EQ(net.book(all, {3, 0}, {0, 1}, 8, 97, 500), 510u);
  // The first one's engine sends again at 108: not before the first's tail left (119), and its
  // flits after the two others' on that link (from 120): 12 late.
  EXPECT_EQ(net.book(all, {0, 0}, {0, 1}, 8, 108, 300), 312u);
  // With the router's VCs (2: one lane, two classes) and its class choice: (0,1) -> (0,2) enters
  // the Y ring at an odd coordinate, class 1; so does (3,1) -> (0,2) after its hop east, on the
  // same link: its head waits at (0,1)'s north link for the first's tail (119), and its tail holds
  // the link behind it: 19 late. (0,0) -> (0,2) enters at 0, class 0: the other VC; it shares
  // only the link's cycles (9 of its flits between the others', one after: 8 late).
  tp::golden::FastIciFigures fv = f;
  fv.vcs = 2;
  fv.class_choice = true;
  tp::golden::PodNetwork vn(t, fv);
  EXPECT_EQ(vn.book(all, {0, 1}, {0, 2}, 8, 100, 1000), 1000u);
  EXPECT_EQ(vn.book(all, {3, 1}, {0, 2}, 8, 97, 500), 519u);
  EXPECT_EQ(vn.book(all, {0, 0}, {0, 2}, 8, 100, 700), 708u);
}

// A transfer whose flits wait on a link for another VC's flits (wormhole, pod_network.h): its
// tail leaves that link after its last flit, so it holds the links behind it, its sender's
// engine and its sender (late: the lag PodModel adds). The 4x4 demo's gather went from 27.4% to
// 7.1% fast against the RTL pod with this (docs/scale.md, "Pods against the RTL pods").
TEST(PodNetwork, FlitsHeldOnALinkHoldTheSender) {
  tp::golden::FastIciFigures f{3, 1, 4, 0, 3, 6};
  f.vcs = 2;
  f.class_choice = true;
  const tp::golden::Torus t{4, 4};
  const tp::golden::Slice all{0, 0, 4, 4};
  tp::golden::PodNetwork net(t, f);
  uint64_t late = 99;
  // (0,1) -> (0,2), class 1 on (0,1)'s north link: idle, on time.
  EXPECT_EQ(net.book(all, {0, 1}, {0, 2}, 8, 100, 1000, &late), 1000u);
  EXPECT_EQ(late, 0u);
  // (0,0) -> (0,2), class 0: the other VC on (0,1)'s north link, so only its cycles are shared.
  // 10 flits in a stream of 19 cycles: on (0,0)'s north link 100..110, its head at (0,1) at 103,
  // where the first's flits hold the link until 110: its flits go 110..120, and with the stream's
  // pace its last crosses at 128 (129 against an idle 122: the arrival 7 late, as before). Its
  // tail leaves that link at 129, so the first link no sooner than a hop and a VC buffer (3 + 3)
  // before, 123 against its own stream's 119; the router took its last flit a VC buffer before
  // that, 120 against 119: its sender is 1 cycle late (0 before the tail waited for the flits).
  EXPECT_EQ(net.book(all, {0, 0}, {0, 2}, 8, 100, 700, &late), 707u);
  EXPECT_EQ(late, 1u);
  // Its engine's next transfer, (0,0) -> (0,1) on the same VC at 110, starts at that tail, 123
  // (119 before), and streams to 142 against an idle 129: 13 late (9 before).
  EXPECT_EQ(net.book(all, {0, 0}, {0, 1}, 8, 110, 300, &late), 313u);
  EXPECT_EQ(late, 13u);
}

// The fast model's calendar of busy intervals (calendar.h): appending merges, an earlier booking
// fills the gaps and spills past the end, prune drops what ended, empty bookings book nothing.
TEST(Calendar, FillsGapsInTimeOrder) {
  tp::golden::Calendar c;
  EXPECT_EQ(c.book(0, 10, 1), std::make_pair(uint64_t{0}, uint64_t{10}));
  EXPECT_EQ(c.book(10, 2, 3), std::make_pair(uint64_t{10}, uint64_t{16}));  // touches: merged
  EXPECT_EQ(c.intervals(), 1u);
  EXPECT_EQ(c.book(20, 5, 1), std::make_pair(uint64_t{20}, uint64_t{25}));
  EXPECT_EQ(c.intervals(), 2u);
  // From 5: the first free slot is 16; four slots of 1 fill [16, 20), two more go at [25, 27).
  EXPECT_EQ(c.book(5, 6, 1), std::make_pair(uint64_t{16}, uint64_t{27}));
  EXPECT_EQ(c.intervals(), 1u);
  // Slots of 3 do not fit a gap of 2: [30, 32) stays free, the slot goes at 32.
  (void)c.book(27, 3, 1);  // [27, 30)
  (void)c.book(32, 1, 1);  // [32, 33)
  EXPECT_EQ(c.book(0, 1, 3), std::make_pair(uint64_t{33}, uint64_t{36}));
  EXPECT_EQ(c.book(30, 1, 2), std::make_pair(uint64_t{30}, uint64_t{32}));  // exactly fits
  EXPECT_EQ(c.intervals(), 1u);
  EXPECT_EQ(c.book(7, 0, 5), std::make_pair(uint64_t{7}, uint64_t{7}));
  EXPECT_EQ(c.book(7, 5, 0), std::make_pair(uint64_t{7}, uint64_t{7}));
  EXPECT_EQ(c.intervals(), 1u);
  c.prune(35);  // [0, 36) ends after 35: kept
  EXPECT_EQ(c.intervals(), 1u);
  c.prune(36);
  EXPECT_EQ(c.intervals(), 0u);
  // first_fit finds a gap without booking; reserve marks a span busy over whatever is there.
  tp::golden::Calendar d;
  (void)d.book(10, 5, 1);  // [10, 15)
  (void)d.book(20, 5, 1);  // [20, 25)
  EXPECT_EQ(d.first_fit(0, 10), 0u);
  EXPECT_EQ(d.first_fit(5, 6), 25u);  // [5, 10) and [15, 20) are too short
  EXPECT_EQ(d.first_fit(15, 5), 15u);
  EXPECT_EQ(d.intervals(), 2u);
  d.reserve(12, 22);  // joins both
  EXPECT_EQ(d.intervals(), 1u);
  EXPECT_EQ(d.first_fit(0, 11), 25u);
  d.reserve(30, 32);
  d.reserve(25, 30);  // touches both sides
  EXPECT_EQ(d.intervals(), 1u);
  EXPECT_EQ(d.first_fit(11, 1), 32u);
  d.reserve(40, 40);  // empty
  EXPECT_EQ(d.intervals(), 1u);
}

// VMEM's and the accumulators' storage (lazy_zero.h): zero without being written, on both of its
// allocation paths (calloc below 2 MiB, fresh mapped pages from 2 MiB on), and copied whole.
TEST(LazyZero, ReadsZeroUntilWrittenAndCopies) {
  for (const std::size_t words : {std::size_t{1000}, std::size_t{3} << 20}) {
    SCOPED_TRACE(words);
    tp::golden::LazyZeroWords v(words);
    ASSERT_EQ(v.size(), words);
    for (std::size_t i = 0; i < words; i += 4093) EXPECT_EQ(v[i], 0u) << i;
    EXPECT_EQ(v.back(), 0u);
    v[words / 2] = 7;
    v.back() = 9;
    const tp::golden::LazyZeroWords copy = v;
    EXPECT_EQ(copy[words / 2], 7u);
    EXPECT_EQ(copy.back(), 9u);
    EXPECT_EQ(copy[1], 0u);
    tp::golden::LazyZeroWords moved = std::move(v);
    EXPECT_EQ(moved.back(), 9u);
  }
}

}  // namespace
