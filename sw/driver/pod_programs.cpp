// Programs for pods (pod_programs.h).
#include "pod_programs.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <random>

#include "compiler.h"
#include "instr_build.h"

namespace tp::driver {

namespace {

using isa::Instr;
using isa::Op;

// Semaphores of the random traffic: 1 the own block is in VMEM; 2..7 arrivals; 15 "sent".
constexpr unsigned kSemLoaded = 1, kSemFirstArrival = 2, kArrivalSems = 6, kSemSent = 15;
// Semaphores of the demo's gather (the compiler uses 1..10): 11 C is in HBM, 12 the own block
// of C is in VMEM, 13 a block arrived, 14 the own block is in place for the final store.
constexpr unsigned kSemStored = 11, kSemOwn = 12, kSemArrived = 13, kSemOwnReady = 14;

using namespace isa::build;

unsigned wrap(unsigned at, int d, unsigned m) {
  const int r = (static_cast<int>(at) + d) % static_cast<int>(m);
  return static_cast<unsigned>(r < 0 ? r + static_cast<int>(m) : r);
}

}  // namespace

IciTraffic random_ici_traffic(const Preset& p, unsigned w, unsigned h, uint64_t seed, unsigned max_sends,
                              uint32_t block_rows) {
  IciTraffic t;
  t.w = w;
  t.h = h;
  t.lanes = p.mxu.n;
  t.block_rows = block_rows;
  const unsigned n = w * h;
  std::mt19937_64 rng(seed);
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<uint32_t> slots(n, 0);
  // VMEM: the own block at 0, arrival slot s at block_rows * (1 + s).
  const uint32_t max_slots = static_cast<uint32_t>(p.chip.vmem_rows / block_rows) - 1;
  for (unsigned k = 0; k < n; ++k) {
    t.own.emplace_back(std::size_t{block_rows} * t.lanes);
    for (auto& v : t.own.back()) v = static_cast<uint32_t>(rng());
    const int sends = uni(0, static_cast<int>(max_sends));
    for (int s = 0; s < sends; ++s) {
      IciTraffic::Transfer x;
      x.src = k;
      x.abs = uni(0, 3) == 0;
      const unsigned i = k % w, j = k / w;
      unsigned di, dj;
      if (x.abs) {
        x.dx = uni(0, static_cast<int>(w) - 1);
        x.dy = uni(0, static_cast<int>(h) - 1);
        di = static_cast<unsigned>(x.dx);
        dj = static_cast<unsigned>(x.dy);
      } else {  // offsets past the slice's size too: they wrap
        // (the field is 6 bits, signed: -32 .. 31)
        x.dx = uni(std::max(-static_cast<int>(w) - 1, -32), std::min(static_cast<int>(w) + 1, 31));
        x.dy = uni(std::max(-static_cast<int>(h) - 1, -32), std::min(static_cast<int>(h) + 1, 31));
        di = wrap(i, x.dx, w);
        dj = wrap(j, x.dy, h);
      }
      x.dst = di + dj * w;
      if (slots[x.dst] >= max_slots) continue;
      x.dst_slot = slots[x.dst]++;
      x.rows = static_cast<uint32_t>(uni(1, static_cast<int>(block_rows)));
      x.src_row = static_cast<uint32_t>(uni(0, static_cast<int>(block_rows - x.rows)));
      x.rsem = kSemFirstArrival + static_cast<unsigned>(uni(0, kArrivalSems - 1));
      x.local_signal = uni(0, 1) == 1;
      t.transfers.push_back(x);
    }
  }
  t.out_beat = std::max<uint64_t>(4096, uint64_t{block_rows} * 2);
  return t;
}

isa::Program ici_traffic_program(const Preset& p, const IciTraffic& t, unsigned k) {
  std::vector<Instr> code;
  const uint32_t R = t.block_rows;
  code.push_back(dma(Op::dma_ld, 0, 0, R, 1, 1, 0, kSemLoaded));
  code.push_back(fence(kUnitIci, kSemLoaded, 0));
  unsigned sent_signals = 0;
  std::map<unsigned, unsigned> arrivals;  // rsem -> count
  std::vector<const IciTraffic::Transfer*> incoming;
  for (const auto& x : t.transfers) {
    if (x.src == k) {
      code.push_back(
          send(x.src_row, R * (1 + x.dst_slot), x.rows, x.dx, x.dy, x.abs, x.rsem, 0, x.local_signal ? kSemSent : 0));
      sent_signals += x.local_signal;
    }
    if (x.dst == k) {
      ++arrivals[x.rsem];
      incoming.push_back(&x);
    }
  }
  for (unsigned s = 0; s < sent_signals; ++s) code.push_back(fence(kUnitStore, kSemSent, 0));
  for (const auto& [sem, count] : arrivals)
    for (unsigned c = 0; c < count; ++c) code.push_back(fence(kUnitStore, sem, 0));
  for (const auto* x : incoming)
    code.push_back(dma(Op::dma_st, R * (1 + x->dst_slot), t.out_beat + uint64_t{R} * x->dst_slot, x->rows, 1, 1, 0, 0));
  code.push_back(halt());
  return program(p, code);
}

void setup_ici_traffic(Slice& s, const IciTraffic& t) {
  for (unsigned k = 0; k < t.w * t.h; ++k) {
    s.write(k % t.w, k / t.w, 0, t.own[k]);
    s.load(k % t.w, k / t.w, ici_traffic_program(s.preset(), t, k));
  }
}

std::vector<std::string> check_ici_traffic(Slice& s, const IciTraffic& t, unsigned limit) {
  std::vector<std::string> out;
  uint64_t bad = 0;
  for (const auto& x : t.transfers) {
    const auto got = s.read(x.dst % t.w, x.dst / t.w, t.out_beat + uint64_t{t.block_rows} * x.dst_slot, x.rows);
    for (uint32_t r = 0; r < x.rows; ++r) {
      for (unsigned l = 0; l < t.lanes; ++l) {
        const uint32_t want = t.own[x.src][std::size_t{x.src_row + r} * t.lanes + l];
        const uint32_t have = got[std::size_t{r} * t.lanes + l];
        if (want == have) continue;
        if (bad++ < limit)
          out.push_back(
              fmt::format("transfer {} -> {} (slot {}, {} rows from row {}): row {} lane {}: {:#010x}, "
                          "expected {:#010x}",
                          x.src, x.dst, x.dst_slot, x.rows, x.src_row, r, l, have, want));
      }
    }
  }
  if (bad > limit) out.push_back(fmt::format("... {} mismatching words in all", bad));
  return out;
}

PodMatmulRun run_pod_matmul(Slice& slice, const MatmulSpec& s, uint64_t seed, uint64_t timeout) {
  const Preset& p = slice.preset();
  const unsigned chips = slice.chips(), lanes = p.mxu.n;
  PodMatmulRun run;
  run.what =
      fmt::format("data-parallel matmul {}x{}x{} on a {}x{} slice", s.m, s.k, s.n, slice.shape().w, slice.shape().h);
  if (s.m % chips != 0)
    throw DriverError(fmt::format("pod matmul: m = {} is not a multiple of the slice's {} chips", s.m, chips));
  const uint32_t mc = s.m / chips;
  std::mt19937_64 rng(seed);
  const auto a = random_bf16s(rng, uint64_t{s.m} * s.k);
  const auto w = random_bf16s(rng, uint64_t{s.k} * s.n);
  const auto bias = s.bias ? random_fp32s(rng, s.n) : std::vector<uint32_t>{};
  const auto expected = reference_layer(p, s.m, s.k, s.n, a, w, bias, s.relu, false);

  // The same HBM layout on every chip: A block, W, bias, C block, then the whole C.
  compiler::MatmulLayer layer;
  layer.m = mc;
  layer.k = s.k;
  layer.n = s.n;
  layer.bias = s.bias;
  layer.relu = s.relu;
  uint64_t next = 0;
  auto ref = [&](uint32_t rows, uint32_t cols, uint64_t beats) {
    compiler::MatrixRef r{next, rows, cols};
    next += beats;
    return r;
  };
  layer.a = ref(mc, s.k, compiler::padded_beats(p, mc, s.k));
  layer.w = ref(s.k, s.n, compiler::padded_beats(p, compiler::padded_rows(p, s.k), s.n));
  if (s.bias) layer.b = ref(1, s.n, compiler::padded_beats(p, 1, s.n));
  layer.c = ref(mc, s.n, compiler::padded_beats(p, mc, s.n));
  const uint32_t bpr = static_cast<uint32_t>(compiler::padded_beats(p, 1, s.n));  // beats per row of C
  const uint64_t block = uint64_t{mc} * bpr;
  const compiler::MatrixRef whole = ref(s.m, s.n, block * chips);
  if (next > p.chip.hbm_beats)
    throw DriverError(
        fmt::format("pod matmul: {} HBM beats needed, {} on preset '{}'", next, p.chip.hbm_beats, p.name));
  // VMEM rows the matmul does not use hold the gathered C: blocks may arrive while it runs.
  const uint32_t gbase = compiler::plan(p, layer).vmem_rows;
  if (gbase + block * chips > p.chip.vmem_rows)
    throw DriverError(
        fmt::format("pod matmul: the gathered output ({} rows) does not fit VMEM above the matmul's {} "
                    "rows ({} rows on preset '{}')",
                    block * chips, gbase, p.chip.vmem_rows, p.name));

  const auto wpad = compiler::pack_bf16(p, s.k, s.n, w, true);
  const auto bpad = s.bias ? compiler::pack_fp32(p, 1, s.n, bias) : std::vector<uint32_t>{};
  const std::vector<uint32_t> poison(whole.rows * std::size_t{bpr} * lanes, 0x7fbadbadu);
  const auto matmul = compiler::compile(p, {layer});
  for (unsigned k = 0; k < chips; ++k) {
    const unsigned i = k % slice.shape().w, j = k / slice.shape().w;
    const std::span<const uint16_t> ak(a.data() + std::size_t{k} * mc * s.k, std::size_t{mc} * s.k);
    slice.write(i, j, layer.a.beat, compiler::pack_bf16(p, mc, s.k, ak));
    slice.write(i, j, layer.w.beat, wpad);
    if (s.bias) slice.write(i, j, layer.b.beat, bpad);
    slice.write(i, j, whole.beat, poison);
    // The matmul (without its halt), then the gather.
    std::vector<Instr> code;
    for (std::size_t pc = 0; pc + 1 < matmul.code.size(); ++pc) code.push_back(isa::decode(matmul.code[pc]).instr);
    const auto own = static_cast<uint32_t>(gbase + k * block);
    code.push_back(fence(kUnitStore, 0, kSemStored));  // C's stores complete
    code.push_back(dma(Op::dma_ld, own, layer.c.beat, mc, bpr, bpr, kSemStored, kSemOwn));
    code.push_back(fence(kUnitIci, kSemOwn, kSemOwnReady));
    for (unsigned o = 0; o < chips; ++o)
      if (o != k)
        code.push_back(send(own, own, static_cast<uint32_t>(block), static_cast<int>(o % slice.shape().w),
                            static_cast<int>(o / slice.shape().w), true, kSemArrived, 0, 0));
    code.push_back(fence(kUnitStore, kSemOwnReady, 0));
    for (unsigned o = 1; o < chips; ++o) code.push_back(fence(kUnitStore, kSemArrived, 0));
    code.push_back(dma(Op::dma_st, gbase, whole.beat, s.m, bpr, bpr, 0, 0));
    code.push_back(halt());
    const auto prog = program(p, code);
    if (k == 0) run.instructions = prog.code.size();
    slice.load(i, j, prog);
  }
  run.status = slice.run(timeout ? timeout : 2'000'000);
  for (unsigned k = 0; k < chips; ++k)
    run.counters.push_back(
        slice.counters(slice.shape().x0 + k % slice.shape().w, slice.shape().y0 + k / slice.shape().w));
  if (!run.status.ok()) return run;
  for (unsigned k = 0; k < chips; ++k) {
    const auto got =
        compiler::unpack(p, s.m, s.n, slice.read(k % slice.shape().w, k / slice.shape().w, whole.beat, block * chips));
    for (std::size_t e = 0; e < got.size(); ++e) run.mismatches += got[e] != expected[e];
    if (k == 0) run.output = got;
  }
  run.pass = run.mismatches == 0;
  return run;
}

}  // namespace tp::driver
