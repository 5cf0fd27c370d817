// The Verilated chip against the golden ISA interpreter (docs/chip.md, docs/verification.md):
// the same program and memory on both, then the same status (error code and PC) and the same
// final memory, bit for bit.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>

#include TP_CHIP_HEADER
#include "chip_harness.h"
#include "chip_model.h"
#include "config.h"
#include "driver.h"
#include "fp.h"
#include "isa.h"
#include "matmul_shapes.h"
#include "tb_util.h"

namespace {

using tp::isa::Err;

const tp::Preset& preset() {
  static const tp::Preset p = tp::load_preset(TP_PRESET);
  return p;
}

// One program on both backends.
struct Both {
  tp::tb::ChipHarness<TP_CHIP_CLASS> rtl;
  tp::golden::ChipModel gold;
  tp::tb::ChipRun rtl_run;
  tp::golden::ChipModel::Result gold_run;

  explicit Both(const tp::tb::ChipStimulus& stim) : rtl(preset(), stim), gold(preset()) {}

  void write(uint64_t beat, std::span<const uint32_t> words) {
    rtl.write_mem(beat, words);
    gold.write_hbm(beat, words);
  }
  void run(const tp::isa::Program& prog, uint64_t timeout = 2'000'000) {
    rtl.load(prog.code);
    rtl_run = rtl.run(timeout);
    gold.load(prog);
    gold_run = gold.run();
  }
  // What the chip was doing: for a watchdog's message.
  std::string rtl_state() {
    namespace c = tp::tb::ctr;
    std::string s = fmt::format("status {:#x}; ", rtl.csr_read(0x004));
    for (unsigned u = 0; u < 4; ++u) {
      s += fmt::format("{}:", c::kUnits[u]);
      for (unsigned k = 0; k < 4; ++k) s += fmt::format(" {} {}", c::kKinds[k], rtl.counter(c::kUnitBase + 4 * u + k));
      s += "; ";
    }
    s += fmt::format("bytes loaded {}, stored {}", rtl.counter(c::kBytesLoaded), rtl.counter(c::kBytesStored));
    for (const auto& [name, value] : rtl.hbm_counters()) s += fmt::format(", {} {}", name, value);
    return s;
  }

  // Status equal on both, and the memory in [0, beats) equal when the run succeeded.
  void expect_same(uint64_t beats, const std::string& what) {
    ASSERT_FALSE(rtl_run.timed_out) << what << ": the chip neither finished nor reported an error (watchdog); "
                                    << rtl_state();
    ASSERT_TRUE(gold_run.done) << what << ": the interpreter did not finish";
    EXPECT_EQ(tp::isa::err_name(static_cast<Err>(rtl_run.err)), tp::isa::err_name(gold_run.err)) << what;
    if (rtl_run.err != 0 || gold_run.err != Err::none) {
      EXPECT_EQ(rtl_run.pc, gold_run.pc) << what << ": error PC";
      return;
    }
    const auto a = rtl.read_mem(0, beats), b = gold.read_hbm(0, beats);
    const unsigned n = preset().mxu.n;
    for (std::size_t k = 0; k < a.size(); ++k) {
      if (a[k] != b[k]) {
        ADD_FAILURE() << fmt::format("{}: memory differs first at beat {} lane {}: rtl {:#010x}, golden {:#010x}", what,
                                     k / n, k % n, a[k], b[k]);
        return;
      }
    }
  }
};

tp::tb::ChipStimulus stimulus(uint64_t seed, double stall = 0.0) {
  tp::tb::ChipStimulus s;
  s.latency = preset().chip.mem_latency;
  s.req_stall = stall;
  s.rsp_stall = stall;
  s.seed = seed;
  s.wave_file = tp::tb::wave_path(std::string(TP_PRESET) + "." + tp::tb::current_test_name());
  return s;
}

tp::isa::Program assemble(const std::string& text) {
  return tp::isa::assemble(text, tp::tb::current_test_name() + ".s", preset());
}

std::vector<uint32_t> random_words(std::mt19937_64& rng, std::size_t count) {
  std::vector<uint32_t> v(count);
  for (auto& x : v) x = static_cast<uint32_t>(rng());
  return v;
}

TEST(Chip, LoadAddStore) {
  const uint64_t seed = tp::tb::test_seed(tp::tb::current_test_name(), TP_PRESET);
  std::mt19937_64 rng(seed);
  Both both(stimulus(seed));
  const unsigned n = preset().mxu.n;
  both.write(0, random_words(rng, 16 * n));
  const auto prog = assemble(R"(
    dma.ld 0, 0, 4, 2, 4 signal=1      # rows 0..7 from beats 0,1,4,5,8,9,12,13
    vadd 16, 0, 4, 4 wait=1 signal=2    # rows 16..19 = rows 0..3 + rows 4..7
    dma.st 16, 100, 4, 1, 3 wait=2      # to beats 100, 103, 106, 109
    halt
  )");
  both.run(prog);
  both.expect_same(128, "load-add-store");
  // Not vacuous: the stored rows are the sums, computed here from the inputs.
  const auto in = both.rtl.read_mem(0, 16), out = both.rtl.read_mem(100, 10);
  for (unsigned r = 0; r < 4; ++r)
    for (unsigned j = 0; j < n; ++j) {
      const unsigned src = r / 2 * 4 + r % 2;  // beat of VMEM row r
      const unsigned src_b = (r + 4) / 2 * 4 + (r + 4) % 2;
      ASSERT_EQ(out[(3 * r) * n + j], tp::golden::fp32_add(in[src * n + j], in[src_b * n + j])) << r << "," << j;
    }
}

// ---- random valid programs -------------------------------------------------------------------
//
// A software pipeline of random iterations over double-buffered VMEM regions. Iteration i, slot
// s = i % 2: the load queue brings a random 2D block into IN[s]; the MXU streams IN[s] through
// one of two weight tiles into ACC[s]; the vector queue runs a random chain of operations over
// IN[s] and ACC[s] into T[s] and U[s]; the store queue writes T[s] and U[s] out. Every reuse of a
// buffer waits, through its own semaphore, for the queue that last read or wrote it, so the
// program has no race while the queues overlap across iterations.
enum Sem : unsigned { kNone = 0, kW = 1, kLdV, kLdM, kFreeInV, kFreeInM, kMmV, kFreeAcc, kVS, kFreeT };

struct Gen {
  const tp::Preset& p;
  std::mt19937_64& rng;
  std::vector<tp::isa::Instr> code;
  unsigned n, R, w0, in0, t0, u0, c0;
  unsigned acc_rows_written[2] = {0, 0};
  // HBM: random words everywhere below kOutBase; kConstBeat.. holds C, half its words zero (a
  // mask for vsel that picks both ways); outputs from kOutBase on.
  static constexpr uint64_t kConstBeat = 4000, kOutBase = 8192, kOutStride = 512;

  Gen(const tp::Preset& pr, std::mt19937_64& r) : p(pr), rng(r), n(pr.mxu.n) {
    R = std::min<unsigned>({p.mxu.acc_rows / 2, (p.chip.vmem_rows - 2 * n) / 7, 48});
    w0 = 0;  // two weight tiles
    in0 = 2 * n;
    t0 = in0 + 2 * R;
    u0 = t0 + 2 * R;
    c0 = u0 + 2 * R;  // C: R constant rows, operand b and the vsel mask
  }
  unsigned pick(unsigned lo, unsigned hi) { return std::uniform_int_distribution<unsigned>(lo, hi)(rng); }
  tp::isa::Instr& emit(tp::isa::Op op, unsigned wait = 0, unsigned signal = 0) {
    code.push_back(tp::isa::Instr{op, wait, signal, {}});
    return code.back();
  }
  void fence(unsigned unit, unsigned wait, unsigned signal) { emit(tp::isa::Op::fence, wait, signal).f.unit = unit; }
  void vec(tp::isa::Op op, unsigned dst, unsigned a, unsigned b, unsigned rows, bool a_acc = false, bool bcast = false,
           uint32_t imm = 0, unsigned wait = 0) {
    auto& f = emit(op, wait).f;
    f.dst = dst, f.a = a, f.b = b, f.rows = rows, f.a_acc = a_acc, f.b_bcast = bcast, f.imm = imm;
  }

  tp::isa::Program program(unsigned iters) {
    using tp::isa::Op;
    // C, then both weight tiles, once. The load queue completes in order, so an IN load's
    // signal also says that C is in.
    auto& cl = emit(Op::dma_ld).f;
    cl.vaddr = c0, cl.haddr = kConstBeat, cl.rows = R, cl.cols = 1, cl.hstride = 1;
    auto& wl = emit(Op::dma_ld, 0, kW).f;
    wl.vaddr = w0, wl.haddr = 0, wl.rows = 2 * n, wl.cols = 1, wl.hstride = 1;
    static constexpr Op kBinary[] = {Op::vadd, Op::vsub,   Op::vmul,   Op::vmax,
                                     Op::vmin, Op::vcmplt, Op::vcmple, Op::vcmpeq};
    static constexpr Op kUnary[] = {Op::vrelu, Op::vcvtbf, Op::vcvtf, Op::vredsum, Op::vredmax, Op::vmov, Op::vscale};
    for (unsigned i = 0; i < iters; ++i) {
      const unsigned s = i % 2, in = in0 + s * R, t = t0 + s * R, u = u0 + s * R, acc = s * R;
      // load
      const unsigned cols = pick(1, 3), rows = std::max(1u, pick(1, R) / cols), k = rows * cols;
      if (i >= 2) fence(0, kFreeInM, 0);
      auto& ld = emit(Op::dma_ld, i >= 2 ? kFreeInV : kNone, kLdV).f;
      ld.vaddr = in, ld.haddr = pick(0, 4000), ld.rows = rows, ld.cols = cols, ld.hstride = pick(cols, cols + 5);
      fence(0, 0, kLdM);
      // MXU
      emit(Op::mxu_lw, i == 0 ? kW : kNone).f.vaddr = w0 + n * pick(0, 1);
      if (i >= 2) fence(1, kFreeAcc, 0);
      auto& mm = emit(Op::mxu_mm, kLdM, kMmV).f;
      mm.vaddr = in, mm.acc = acc, mm.rows = k;
      // Accumulators start undefined: accumulate only onto rows an earlier mm wrote.
      mm.accumulate = k <= acc_rows_written[s] && pick(0, 1);
      acc_rows_written[s] = std::max(acc_rows_written[s], k);
      fence(1, 0, kFreeInM);
      // vector: T from IN, U from ACC, then a few in-place steps
      if (i >= 2) fence(2, kFreeT, 0);
      const Op op1 = kBinary[pick(0, std::size(kBinary) - 1)];
      const bool bcast = pick(0, 1);
      vec(op1, t, in, bcast ? c0 + pick(0, R - 1) : c0 + pick(0, R - k), k, false, bcast, 0, kLdV);
      vec(pick(0, 1) ? Op::vadd : Op::vmov, u, acc, in, k, true, true, 0, kMmV);
      fence(2, 0, kFreeAcc);
      for (unsigned j = pick(0, 3); j > 0; --j) {
        const Op op = kUnary[pick(0, std::size(kUnary) - 1)];
        const unsigned dst = pick(0, 1) ? t : u;
        vec(op, dst, dst, 0, k, false, false, op == Op::vscale ? static_cast<uint32_t>(rng()) : 0);
      }
      if (pick(0, 1)) vec(Op::vsel, t, u, in, k, false, false, c0 + pick(0, R - k));  // mask: C rows
      fence(2, 0, kFreeInV);
      fence(2, 0, kVS);
      // store
      auto& st = emit(Op::dma_st, kVS).f;
      st.vaddr = t, st.haddr = kOutBase + i * kOutStride, st.rows = k, st.cols = 1, st.hstride = 2;
      auto& st2 = emit(Op::dma_st).f;
      st2.vaddr = u, st2.haddr = kOutBase + i * kOutStride + 1, st2.rows = k, st2.cols = 1, st2.hstride = 2;
      fence(3, 0, kFreeT);
    }
    emit(Op::halt);
    tp::isa::Program prog{p.name, tp::isa::fingerprint(p), {}};
    for (const auto& ins : code) prog.code.push_back(tp::isa::encode(ins));
    return prog;
  }
};

class ChipRandom : public ::testing::TestWithParam<double> {};

TEST_P(ChipRandom, ProgramsMatchTheInterpreter) {
  if (tp::tb::ChipHarness<TP_CHIP_CLASS>::kHbm && GetParam() > 0.0)
    GTEST_SKIP() << "memory stalls are the memory model's; on HBM the DRAM timing varies the latency";
  const uint64_t seed = tp::tb::test_seed(tp::tb::current_test_name(), TP_PRESET);
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 6; ++trial) {
    Both both(stimulus(seed + trial, GetParam()));
    both.write(0, random_words(rng, 4100 * preset().mxu.n));
    auto c = random_words(rng, 64 * preset().mxu.n);
    for (auto& x : c) x = rng() % 2 ? x : 0u;
    both.write(Gen::kConstBeat, c);
    Gen gen(preset(), rng);
    const unsigned iters = gen.pick(1, 8);
    const auto prog = gen.program(iters);
    both.run(prog);
    both.expect_same(Gen::kOutBase + iters * Gen::kOutStride, fmt::format("trial {} ({} iterations)", trial, iters));
    if (HasFailure()) {
      ADD_FAILURE() << "program:\n" << tp::isa::disassemble(prog);
      return;
    }
  }
}
INSTANTIATE_TEST_SUITE_P(Stalls, ChipRandom, ::testing::Values(0.0, 0.3),
                         [](const auto& p) { return p.param == 0.0 ? std::string("none") : "memory"; });

// ---- bad programs: the same error code and PC on both backends, never a hang ----------------
struct BadProgram {
  const char* name;
  Err err;
  uint32_t pc;
  std::string text;  // may use the constants fill() defines
};
void PrintTo(const BadProgram& b, std::ostream* os) { *os << b.name; }

// The preset's sizes as assembler constants V (VMEM rows), A (accumulator rows), H (HBM beats),
// N (lanes) and LW (the first VMEM row a weight tile does not fit at).
std::string fill(const std::string& t) {
  const auto& p = preset();
  return fmt::format(".set V, {}\n.set A, {}\n.set H, {}\n.set N, {}\n.set LW, {}\n", p.chip.vmem_rows, p.mxu.acc_rows,
                     p.chip.hbm_beats, p.mxu.n, p.chip.vmem_rows - p.mxu.n + 1) +
         t;
}

class ChipErrors : public ::testing::TestWithParam<BadProgram> {};

TEST_P(ChipErrors, SameErrorOnBothBackends) {
  const BadProgram& bad = GetParam();
  const uint64_t seed = tp::tb::test_seed(tp::tb::current_test_name(), TP_PRESET);
  Both both(stimulus(seed));
  both.run(assemble(fill(bad.text)), 200'000);
  both.expect_same(16, bad.name);
  EXPECT_EQ(tp::isa::err_name(static_cast<Err>(both.rtl_run.err)), tp::isa::err_name(bad.err)) << bad.name;
  EXPECT_EQ(both.rtl_run.pc, bad.pc) << bad.name;
}

const BadProgram kBad[] = {
    {"illegal_opcode", Err::illegal_opcode, 1, "dma.ld 0, 0, 1, 1, 1\n.word 0, 0xfc00000000000000\nhalt\n"},
    {"reserved_bits", Err::bad_field, 0, ".word 0x100000, 0x0400000000000000\nhalt\n"},  // mxu.lw, bit 20 set
    {"zero_rows", Err::bad_field, 1, "fence load\ndma.ld 0, 0, 0, 1, 1\nhalt\n"},
    {"zero_cols", Err::bad_field, 0, "dma.st 0, 0, 1, 0, 1\nhalt\n"},
    {"vmem_range_dma", Err::vmem_range, 0, "dma.ld V-4, 0, 2, 3, 3\nhalt\n"},
    {"hbm_range_dma", Err::hbm_range, 0, "dma.st 0, H-10, 2, 1, 10\nhalt\n"},
    {"hbm_range_huge_stride", Err::hbm_range, 0, "dma.ld 0, 0, 3, 1, 0xffffffff\nhalt\n"},
    {"vmem_range_lw", Err::vmem_range, 0, "mxu.lw LW\nhalt\n"},
    {"acc_range_mm", Err::acc_range, 1, "mxu.lw 0\nmxu.mm 0, A-1, 2\nhalt\n"},
    {"acc_range_vec", Err::acc_range, 0, "vmov 0, A, 1, a_acc=1\nhalt\n"},
    {"vmem_range_vec_b", Err::vmem_range, 0, "vadd 0, 8, 4, b=V-3\nhalt\n"},
    {"vmem_range_mask", Err::vmem_range, 0, "vsel 0, 8, 4, b=16, imm=V\nhalt\n"},
    {"overlap", Err::overlap, 0, "vadd 10, 8, 4, b=20\nhalt\n"},
    {"overlap_bcast", Err::overlap, 0, "vadd 8, 0, 4, b=9, b_bcast=1\nhalt\n"},
    {"mxu_no_weights", Err::mxu_no_weights, 0, "mxu.mm 0, 0, 4\nhalt\n"},
    {"mxu_weights_unused", Err::mxu_weights_unused, 1, "mxu.lw 0\nmxu.lw 0\nhalt\n"},
    {"no_halt", Err::no_halt, 2, "dma.ld 0, 0, 1, 1, 1\nvmov 8, 0, 1\n"},
    {"deadlock_never_signalled", Err::deadlock, 1, "dma.ld 0, 0, 1, 1, 1 signal=1\nvmov 8, 0, 1 wait=2\nhalt\n"},
    // Unbalanced: two waits, one signal. The second wait never gets a count.
    {"deadlock_unbalanced", Err::deadlock, 2,
     "dma.ld 0, 0, 1, 1, 1 signal=3\nvmov 8, 0, 1 wait=3\nvmov 9, 0, 1 wait=3\nhalt\n"},
    // The store queue waits on the vector queue, which waits on the store queue.
    {"deadlock_cycle", Err::deadlock, 0, "vmov 8, 0, 1 wait=1 signal=2\ndma.st 8, 0, 1, 1, 1 wait=2 signal=1\nhalt\n"},
};
INSTANTIATE_TEST_SUITE_P(Bad, ChipErrors, ::testing::ValuesIn(kBad),
                         [](const auto& p) { return std::string(p.param.name); });

// Deadlock while the front end is stalled on a full queue (not halted): queue + 1 vector
// instructions wait on semaphore 1, whose only signal comes after them and never gets fetched.
// With one waiter fewer, the signal is fetched, the first waiter goes and the second waits
// forever behind a halted front end.
TEST(Chip, DeadlockWithTheFrontEndStalledOnAFullQueue) {
  const uint64_t seed = tp::tb::test_seed(tp::tb::current_test_name(), TP_PRESET);
  for (const unsigned waiters : {preset().chip.queue + 1, preset().chip.queue}) {
    std::string text;
    for (unsigned i = 0; i < waiters; ++i) text += fmt::format("vmov {}, 0, 1 wait=1\n", 8 + i);
    text += "dma.ld 0, 0, 1, 1, 1 signal=1\nhalt\n";
    Both both(stimulus(seed));
    both.run(assemble(text), 100'000);
    const std::string what = fmt::format("{} waiters on a queue of {}", waiters, preset().chip.queue);
    both.expect_same(16, what);
    EXPECT_EQ(tp::isa::err_name(static_cast<Err>(both.rtl_run.err)), "deadlock") << what;
    EXPECT_EQ(both.rtl_run.pc, waiters > preset().chip.queue ? 0u : 1u) << what;
  }
}

// A memory error on a DMA read stops the chip with mem_error at the DMA's PC (RTL only: the
// interpreter's memory has no faults).
TEST(Chip, MemoryErrorStopsTheChip) {
  const uint64_t seed = tp::tb::test_seed(tp::tb::current_test_name(), TP_PRESET);
  tp::tb::ChipHarness<TP_CHIP_CLASS> rtl(preset(), stimulus(seed));
  rtl.fail_beat(5);
  rtl.load(assemble("dma.ld 0, 0, 4, 1, 1\ndma.ld 8, 2, 4, 1, 1 signal=1\nfence vec wait=1\nhalt\n").code);
  const auto r = rtl.run(100'000);
  ASSERT_TRUE(r.done);
  EXPECT_EQ(tp::isa::err_name(static_cast<Err>(r.err)), "mem_error");
  EXPECT_EQ(r.pc, 1u);
}

// The host's beat access through the chip's memory port agrees with the backdoor both ways, and
// an address past the end of memory is refused, not sent.
TEST(Chip, HostBeatAccessThroughTheMemoryPort) {
  const uint64_t seed = tp::tb::test_seed(tp::tb::current_test_name(), TP_PRESET);
  std::mt19937_64 rng(seed);
  tp::tb::ChipHarness<TP_CHIP_CLASS> rtl(preset(), stimulus(seed));
  const unsigned n = preset().mxu.n;
  for (int i = 0; i < 8; ++i) {
    const uint64_t beat = rng() % preset().chip.hbm_beats;
    const auto a = random_words(rng, n), b = random_words(rng, n);
    ASSERT_TRUE(rtl.host_write_beat(beat, a));
    EXPECT_EQ(rtl.read_mem(beat, 1), a) << "beat " << beat;
    rtl.write_mem(beat, b);
    const auto got = rtl.host_read_beat(beat);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(*got, b) << "beat " << beat;
  }
  EXPECT_FALSE(rtl.host_read_beat(preset().chip.hbm_beats).has_value());
  EXPECT_FALSE(rtl.host_write_beat(preset().chip.hbm_beats + 7, random_words(rng, n)));
}

// Counters: every cycle of every unit is counted once, the bytes are the program's, and the
// MXU rows are the program's.
TEST(Chip, CountersAddUp) {
  const uint64_t seed = tp::tb::test_seed(tp::tb::current_test_name(), TP_PRESET);
  std::mt19937_64 rng(seed);
  tp::tb::ChipHarness<TP_CHIP_CLASS> rtl(preset(), stimulus(seed));
  const unsigned n = preset().mxu.n;
  rtl.write_mem(0, random_words(rng, 64 * n));
  rtl.load(assemble(fill(R"(
    dma.ld 0, 0, N, 1, 1 signal=1
    dma.ld 64, 32, 20, 1, 1 signal=2
    mxu.lw 0 wait=1
    mxu.mm 64, 0, 20 wait=2 signal=3
    vmov 128, 0, 20, a_acc=1 wait=3 signal=4
    dma.st 128, 1000, 20, 1, 1 wait=4
    halt
  )"))
               .code);
  const auto r = rtl.run(100'000);
  ASSERT_TRUE(r.done);
  ASSERT_EQ(r.err, 0);
  namespace c = tp::tb::ctr;
  const uint64_t cycles = rtl.counter(c::kCycles);
  EXPECT_GT(cycles, 20u);
  for (unsigned u = 0; u < 4; ++u) {
    uint64_t sum = 0;
    for (unsigned k = 0; k < 4; ++k) sum += rtl.counter(c::kUnitBase + 4 * u + k);
    EXPECT_EQ(sum, cycles) << c::kUnits[u];
  }
  EXPECT_EQ(rtl.counter(c::kBytesLoaded), uint64_t{n + 20} * n * 4);
  EXPECT_EQ(rtl.counter(c::kBytesStored), uint64_t{20} * n * 4);
  EXPECT_EQ(rtl.counter(c::kMxuRows), 20u);
  EXPECT_EQ(rtl.counter(c::kVpuRows), 20u);
  EXPECT_EQ(rtl.counter(c::kInstrs), 7u);
  EXPECT_GT(rtl.counter(c::kUnitBase + 4 * 2 + 1), 0u) << "the vector queue waited on its semaphore";
}

// ---- matmul programs from the compiler, on the RTL, bit-exact with the host reference -------
std::unique_ptr<tp::driver::Chip> rtl_chip() { return tp::driver::Chip::open(TP_PRESET, tp::driver::Backend::rtl); }

void expect_pass(const tp::driver::MatmulRun& run) {
  EXPECT_TRUE(run.pass) << run.what << " (seed " << run.seed << "): " << tp::driver::describe(run.status) << ", "
                        << run.mismatches << " elements differ"
                        << (run.first_mismatch ? fmt::format(", first at ({}, {}): {:#010x}, expected {:#010x}",
                                                             run.first_mismatch->row, run.first_mismatch->col,
                                                             run.first_mismatch->got, run.first_mismatch->expected)
                                               : "");
}

TEST(ChipMatmul, EdgeShapes) {
  auto chip = rtl_chip();
  uint64_t seed = tp::tb::test_seed(tp::tb::current_test_name(), TP_PRESET);
  for (const auto& s : tp::tb::edge_shapes(chip->lanes())) {
    const auto run = tp::driver::run_matmul(*chip, {s.m, s.k, s.n, s.bias, s.relu}, seed++);
    expect_pass(run);
    EXPECT_EQ(run.mxu_rows, uint64_t{s.m} * ((s.k + chip->lanes() - 1) / chip->lanes()) *
                                ((s.n + chip->lanes() - 1) / chip->lanes()));
  }
}

TEST(ChipMatmul, RandomShapes) {
  auto chip = rtl_chip();
  const uint32_t n = chip->lanes();
  const uint64_t seed = tp::tb::test_seed(tp::tb::current_test_name(), TP_PRESET);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 8; ++i) {
    const tp::driver::MatmulSpec s{static_cast<uint32_t>(1 + rng() % 200), static_cast<uint32_t>(1 + rng() % (5 * n)),
                                   static_cast<uint32_t>(1 + rng() % (3 * n)), rng() % 2 == 0, rng() % 2 == 0};
    expect_pass(tp::driver::run_matmul(*chip, s, rng()));
  }
}

TEST(ChipMatmul, Mlp) {
  auto chip = rtl_chip();
  const uint32_t n = chip->lanes();
  uint64_t seed = tp::tb::test_seed(tp::tb::current_test_name(), TP_PRESET);
  expect_pass(tp::driver::run_mlp(*chip, {2 * n + 3, 2 * n + 1, n + 5, n - 1}, seed++));
  expect_pass(tp::driver::run_mlp(*chip, {120, n, 3 * n, 2}, seed++));
}

}  // namespace
