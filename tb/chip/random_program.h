// Random valid chip programs (docs/verification.md, "ChipRandom"), shared by the chip tests
// (tb/chip/test_chip.cpp) and the scale benchmark's calibration (tb/chip/scale_bench.cpp).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <random>
#include <vector>

#include "config.h"
#include "driver.h"
#include "isa.h"

namespace tp::tb {

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
  // The choices added after the generator's first version (an mxu.lw's packed, an mxu.mm's hi)
  // come from a stream of their own, seeded from rng's state without advancing it, so that a
  // seed's other choices (and the calibration's programs) stay what they were.
  std::mt19937_64 side;
  std::vector<tp::isa::Instr> code;
  unsigned n, R, w0, in0, t0, u0, c0;
  unsigned acc_rows_written[2] = {0, 0};
  // HBM: random words everywhere below kOutBase; kConstBeat.. holds C, half its words zero (a
  // mask for vsel that picks both ways); outputs from kOutBase on.
  static constexpr uint64_t kConstBeat = 4000, kOutBase = 8192, kOutStride = 512;

  Gen(const tp::Preset& pr, std::mt19937_64& r) : p(pr), rng(r), side(r), n(pr.mxu.n) {
    side.seed(side() ^ 0x7061636b6564ull);
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
    static constexpr Op kUnary[] = {Op::vrelu, Op::vcvtbf, Op::vcvtf, Op::vredsum, Op::vredmax,
                                    Op::vmov,  Op::vscale, Op::vexp,  Op::vrcp};
    for (unsigned i = 0; i < iters; ++i) {
      const unsigned s = i % 2, in = in0 + s * R, t = t0 + s * R, u = u0 + s * R, acc = s * R;
      // load
      // A quarter of the loads are packed (bf16 two per word): each beat fills two rows of IN.
      const bool packed_ld = R >= 2 && pick(0, 3) == 0;
      const unsigned cols = pick(1, 3), rows = std::max(1u, pick(1, packed_ld ? R / 2 : R) / cols);
      const unsigned k = rows * cols << packed_ld;  // IN's rows
      if (i >= 2) fence(0, kFreeInM, 0);
      auto& ld = emit(Op::dma_ld, i >= 2 ? kFreeInV : kNone, kLdV).f;
      ld.vaddr = in, ld.haddr = pick(0, 4000), ld.rows = rows, ld.cols = cols, ld.hstride = pick(cols, cols + 5);
      ld.packed = packed_ld;
      fence(0, 0, kLdM);
      // MXU
      {
        auto& lw = emit(Op::mxu_lw, i == 0 ? kW : kNone).f;
        lw.vaddr = w0 + n * pick(0, 1);
        lw.t = pick(0, 1);  // plain or transposed
        // A quarter packed: rows w0 .. w0 + h - 1 (or from w0 + n) give the tile's low and high halves.
        lw.packed = side() % 4 == 0;
      }
      if (i >= 2) fence(1, kFreeAcc, 0);
      auto& mm = emit(Op::mxu_mm, kLdM, kMmV).f;
      mm.vaddr = in, mm.acc = acc, mm.rows = k;
      mm.hi = side() % 2;  // bits 31:16: random words after a plain load, zero after a packed one
      // Accumulators start undefined: accumulate only onto rows an earlier mm wrote.
      mm.accumulate = k <= acc_rows_written[s] && pick(0, 1);
      acc_rows_written[s] = std::max(acc_rows_written[s], k);
      fence(1, 0, kFreeInM);
      // vector: T from IN, U from ACC, then a few in-place steps
      if (i >= 2) fence(2, kFreeT, 0);
      const Op op1 = kBinary[pick(0, std::size(kBinary) - 1)];
      const bool bcast = pick(0, 1);
      vec(op1, t, in, bcast ? c0 + pick(0, R - 1) : c0 + pick(0, R - k), k, false, bcast, 0, kLdV);
      static constexpr Op kFromAcc[] = {Op::vadd, Op::vmov, Op::vexp, Op::vrcp};
      vec(kFromAcc[pick(0, 3)], u, acc, in, k, true, true, 0, kMmV);
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
      // A quarter of T's stores are packed: rows t + j and t + k/2 + j (their low halves) in one
      // word, j < k/2 (an odd k's last row is not stored).
      const bool packed_st = k >= 2 && pick(0, 3) == 0;
      auto& st = emit(Op::dma_st, kVS).f;
      st.vaddr = t, st.haddr = kOutBase + i * kOutStride, st.rows = packed_st ? k / 2 : k, st.cols = 1, st.hstride = 2;
      st.packed = packed_st;
      auto& st2 = emit(Op::dma_st).f;
      st2.vaddr = u, st2.haddr = kOutBase + i * kOutStride + 1, st2.rows = k, st2.cols = 1, st2.hstride = 2;
      fence(3, 0, kFreeT);
    }
    emit(Op::halt);
    // The semaphores get random numbers out of all of them (the names above are only labels), from
    // a copy of the generator, so that the program's work is what the seed gave before.
    std::vector<unsigned> label(tp::isa::kNumSems);
    for (unsigned s = 0; s < label.size(); ++s) label[s] = s;
    auto shuffle_rng = rng;
    std::shuffle(label.begin() + 1, label.end(), shuffle_rng);
    for (auto& ins : code) ins.wait = label[ins.wait], ins.signal = label[ins.signal];
    tp::isa::Program prog{p.name, tp::isa::fingerprint(p), {}};
    for (const auto& ins : code) prog.code.push_back(tp::isa::encode(ins));
    return prog;
  }
};

// One random program of Gen (1 to 8 iterations, from seed) on a chip of the driver: random words
// in HBM below Gen::kOutBase, Gen's constants at Gen::kConstBeat, then the program; the outputs
// are compared with the golden interpreter's on the same memory (pass). what, status, cycles,
// instructions and run_seconds (Chip::run alone) are set as run_matmul sets them.
inline driver::MatmulRun run_random_program(driver::Chip& chip, uint64_t seed, uint64_t timeout = 2'000'000) {
  const tp::Preset& p = chip.preset();
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> mem(std::size_t{4100} * p.mxu.n), consts(std::size_t{64} * p.mxu.n);
  for (auto& x : mem) x = static_cast<uint32_t>(rng());
  for (auto& x : consts) x = rng() % 2 ? static_cast<uint32_t>(rng()) : 0u;
  Gen gen(p, rng);
  const unsigned iters = gen.pick(1, 8);
  const auto prog = gen.program(iters);
  const uint64_t out_beats = iters * Gen::kOutStride;
  const auto run_on = [&](driver::Chip& c, driver::MatmulRun* r) {
    c.write(0, mem);
    c.write(Gen::kConstBeat, consts);
    c.write(Gen::kOutBase, std::vector<uint32_t>(out_beats * p.mxu.n, 0u));
    c.load(prog);
    const auto t0 = std::chrono::steady_clock::now();
    const auto st = c.run(timeout);
    if (r) {
      r->run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      r->status = st;
      r->cycles = st.cycles;
    }
    return st.ok() ? c.read(Gen::kOutBase, out_beats) : std::vector<uint32_t>{};
  };
  driver::MatmulRun run;
  run.what = fmt::format("random program (seed {}, {} iterations)", seed, iters);
  run.seed = seed;
  run.instructions = prog.code.size();
  const auto got = run_on(chip, &run);
  const auto gold = driver::make_golden_chip(p);
  const auto want = run_on(*gold, nullptr);
  run.pass = run.status.ok() && !want.empty() && got == want;
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) run.mismatches += got[i] != want[i];
  return run;
}

}  // namespace tp::tb
