// Ring collectives (collectives.h, docs/collectives.md).
#include "collectives.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "fp.h"
#include "instr_build.h"

namespace tp::driver {

namespace {

using isa::Instr;
using isa::Op;

// Semaphores (one taking queue each, docs/collectives.md):
//   1 the input is in VMEM (the first send, or the copy to the output, takes it); 7 a second
//   token of it (a load-queue fence; the vector queue's fence before the first addition);
//   2 a reduce-scatter chunk arrived (rsem; the additions take it, in order);
//   3 a piece's addition is done (the next step's send of that piece takes it; the last step's
//     counts are left over: the copy of the own chunk follows those additions in the vector
//     queue, which runs in order);
//   4 an all-gather chunk arrived (rsem; the ICI queue takes it: the forwarding sends, then a
//     fence for the last); 5 the own chunk is in the output (the first all-gather send, or the
//     store); 8 every chunk is in (the store).
constexpr unsigned kLoaded = 1, kRsArrived = 2, kAdded = 3, kAgArrived = 4, kOwnOut = 5, kLoadDone = 7, kAllIn = 8;
constexpr unsigned kLoad = isa::build::kUnitLoad, kVec = isa::build::kUnitVec, kIci = isa::build::kUnitIci,
                   kStore = isa::build::kUnitStore;

using isa::build::fence;
using isa::build::vec;
// A whole-row transfer (cols 1, hstride 1), and a send to absolute slice coordinates.
Instr dma(Op op, uint64_t vaddr, uint64_t haddr, uint64_t rows, unsigned wait, unsigned signal) {
  return isa::build::dma(op, vaddr, haddr, rows, 1, 1, wait, signal);
}
Instr send(uint64_t vaddr, uint64_t raddr, uint64_t rows, unsigned x, unsigned y, unsigned rsem, unsigned wait) {
  return isa::build::send(vaddr, raddr, rows, static_cast<int>(x), static_cast<int>(y), true, rsem, wait, 0);
}

// rows cut into min(count, rows) near-equal pieces: (first row, rows) each.
std::vector<std::pair<uint32_t, uint32_t>> pieces(uint32_t rows, unsigned count) {
  const uint32_t n = std::max(1u, std::min<uint32_t>(count, rows));
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (uint32_t g = 0; g < n; ++g) {
    const uint32_t a = static_cast<uint32_t>(uint64_t{g} * rows / n),
                   b = static_cast<uint32_t>(uint64_t{g + 1} * rows / n);
    out.push_back({a, b - a});
  }
  return out;
}

unsigned mod(int64_t a, unsigned p) {
  const int64_t m = p;
  return static_cast<unsigned>(((a % m) + m) % m);
}

// VMEM of a chip: the input at 0 (R rows), the reduce-scatter receive buffers after it (p - 1 of
// the largest chunk), the output after those (all-gather: p blocks).
struct Layout {
  uint64_t in = 0, recv = 0, cmax = 0, out = 0, end = 0;
};
Layout layout(const CollectivePlan& c) {
  Layout l;
  const unsigned p = c.p();
  l.in = 0;
  const bool reduces = c.kind == Collective::all_reduce || c.kind == Collective::reduce_scatter;
  l.cmax = (c.rows + p - 1) / p;
  l.recv = c.rows;
  l.out = l.recv + (reduces ? (p - 1) * l.cmax : 0);
  l.end = l.out + (c.kind == Collective::all_gather   ? uint64_t{p} * c.rows
                   : c.kind == Collective::all_to_all ? uint64_t{p} * l.cmax
                                                      : c.rows);
  return l;
}

}  // namespace

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::all_reduce:
      return "all_reduce";
    case Collective::reduce_scatter:
      return "reduce_scatter";
    case Collective::all_gather:
      return "all_gather";
    case Collective::broadcast:
      return "broadcast";
    case Collective::all_to_all:
      return "all_to_all";
  }
  return "?";
}

double busbw_factor(Collective c, unsigned p) {
  const double n = p;
  switch (c) {
    case Collective::all_reduce:
      return 2.0 * (n - 1) / n;
    case Collective::broadcast:
      return 1.0;
    default:
      return (n - 1) / n;
  }
}

unsigned CollectivePlan::at_ring(unsigned r) const {
  if (!members.empty()) return members.at(r);
  const unsigned j = r / w, i = (j % 2 == 0) ? r % w : w - 1 - r % w;
  return i + j * w;
}
unsigned CollectivePlan::ring_of(unsigned k) const {
  if (!members.empty()) {
    const auto it = std::find(members.begin(), members.end(), k);
    if (it == members.end())
      throw DriverError(fmt::format("{}: chip {} of the slice is not in the ring", collective_name(kind), k));
    return static_cast<unsigned>(it - members.begin());
  }
  const unsigned i = k % w, j = k / w;
  return j * w + ((j % 2 == 0) ? i : w - 1 - i);
}
uint32_t CollectivePlan::chunk_first(unsigned c) const { return static_cast<uint32_t>(uint64_t{c} * rows / p()); }
uint32_t CollectivePlan::chunk_rows(unsigned c) const { return chunk_first(c + 1) - chunk_first(c); }
uint32_t CollectivePlan::out_rows(unsigned k) const {
  switch (kind) {
    case Collective::all_reduce:
      return rows;
    case Collective::reduce_scatter:
      return chunk_rows(ring_of(k));
    case Collective::all_gather:
      return p() * rows;
    case Collective::broadcast:
      return rows;
    case Collective::all_to_all:
      return p() * chunk_rows(ring_of(k));
  }
  return 0;
}

CollectivePlan plan_collective(const Preset& pr, Collective kind, unsigned w, unsigned h, uint32_t rows) {
  CollectivePlan c;
  c.kind = kind;
  c.w = w;
  c.h = h;
  c.lanes = pr.mxu.n;
  c.rows = rows;
  const std::string what = fmt::format("{} of {} rows on a {}x{} slice", collective_name(kind), rows, w, h);
  if (w == 0 || h == 0) throw DriverError(fmt::format("{}: an empty slice", what));
  const bool per_chip = kind != Collective::all_gather && kind != Collective::broadcast;
  if (per_chip ? rows < c.p() : rows == 0)
    throw DriverError(
        fmt::format("{}: {}", what, per_chip ? fmt::format("needs a row per chip at least ({})", c.p()) : "no rows"));
  if (rows > 0x7fff) throw DriverError(fmt::format("{}: more than 32767 rows per chip", what));
  const Layout l = layout(c);
  if (l.end > pr.chip.vmem_rows)
    throw DriverError(fmt::format("{}: needs {} VMEM rows (input, {} receive buffers, output), preset '{}' has {}",
                                  what, l.end, l.out > l.recv ? c.p() - 1 : 0u, pr.name, pr.chip.vmem_rows));
  c.out_beat = rows;  // the output right after the input in HBM
  if (c.out_beat + l.end - l.out > pr.chip.hbm_beats)
    throw DriverError(
        fmt::format("{}: does not fit the {} HBM beats of preset '{}'", what, pr.chip.hbm_beats, pr.name));
  // A broadcast's pipeline fills and drains over p - 1 hops: more pieces make that cheaper.
  if (kind == Collective::broadcast) c.pieces = std::min(64u, 4 * c.p());
  // Program length: a few instructions per step.
  const uint64_t length = kind == Collective::broadcast ? uint64_t{c.pieces} + 16 : uint64_t{4} * c.pieces * c.p() + 16;
  if (length > pr.chip.imem_words)
    throw DriverError(fmt::format("{}: the program is longer than the {}-word instruction memory of preset '{}'", what,
                                  pr.chip.imem_words, pr.name));
  return c;
}

uint64_t collective_vmem_rows(const CollectivePlan& c) { return layout(c).end; }

namespace {

// The collective's instructions for slice chip k, without halt. segment: as a segment of a
// larger program (collective_segment).
std::vector<Instr> collective_code(const Preset& pr, const CollectivePlan& c, unsigned k, bool segment) {
  const unsigned p = c.p(), r = c.ring_of(k);
  const unsigned nxt = c.at_ring((r + 1) % p), prv = c.at_ring((r + p - 1) % p);
  const unsigned nx = nxt % c.w, ny = nxt / c.w;
  const Layout l = layout(c);
  const bool gather = c.kind == Collective::all_gather;
  std::vector<Instr> code;
  auto add = [&](const Instr& i) { code.push_back(i); };
  if (segment) {
    isa::build::seg_begin(code);
    if (p > 1) {
      // The ICI queue's gate: a token from the load queue, once past its go token. It is
      // kAgArrived, which only the ICI queue takes and no transfer can have counted yet (the chip
      // before sends nothing until it has this chip's ready token). Then ready: this chip's VMEM
      // is free for the chip that sends to it; and wait until the chip it sends to says the same
      // (the ICI queue runs in order: every send below waits too).
      constexpr unsigned kIciGate = kAgArrived;
      add(fence(kLoad, 0, kIciGate));
      const uint64_t tok = isa::build::seg_token_row(pr);
      add(send(tok, tok, 1, prv % c.w, prv / c.w, isa::build::kSegReady, kIciGate));
      add(fence(kIci, isa::build::kSegReady, 0));
    }
  }
  add(dma(Op::dma_ld, l.in, c.in_beat, c.rows, 0, kLoaded));
  // The final store of `rows` output rows at l.out (an all-gather with a placement: one strided
  // store per block).
  auto store_out = [&](uint64_t rows, unsigned wait) {
    if (!c.placement || !gather) {
      add(dma(Op::dma_st, l.out, c.out_beat, rows, wait, 0));
      return;
    }
    const auto& pl = *c.placement;
    for (unsigned b = 0; b < p; ++b) {
      if (pl.cols[b] == 0) continue;
      add(isa::build::dma(Op::dma_st, l.out + uint64_t{b} * c.rows, c.out_beat + pl.offset[b], pl.rows, pl.cols[b],
                          pl.stride, wait, 0));
      wait = 0;
    }
    if (wait != 0) add(fence(isa::build::kUnitStore, wait, 0));  // no block has columns
  };
  if (p == 1) {
    // One chip: the output is the input.
    add(vec(Op::vmov, l.out, l.in, c.rows, kLoaded, kOwnOut));
    store_out(c.rows, kOwnOut);
  } else if (c.kind == Collective::broadcast) {
    // A pipeline along the ring: the root sends its rows piece by piece; every other chip forwards
    // each piece as soon as it is in (but the last chip of the ring), then stores them.
    const auto parts = pieces(c.rows, c.pieces);
    if (r == 0) {
      add(vec(Op::vmov, l.out, l.in, c.rows, kLoaded, kOwnOut));
      for (size_t g = 0; g < parts.size(); ++g)
        add(send(l.out + parts[g].first, l.out + parts[g].first, parts[g].second, nx, ny, kAgArrived,
                 g == 0 ? kOwnOut : 0));
      add(fence(kIci, 0, kAllIn));  // every send complete: the rows may be stored
    } else {
      for (size_t g = 0; g < parts.size(); ++g) {
        if (r + 1 < p) {
          add(send(l.out + parts[g].first, l.out + parts[g].first, parts[g].second, nx, ny, kAgArrived, kAgArrived));
        } else {
          add(fence(kIci, kAgArrived, 0));
        }
      }
      add(fence(kIci, 0, kAllIn));
      add(fence(kLoad, kLoaded, 0));  // the (unused) input's load is complete
    }
    store_out(c.rows, kAllIn);
  } else if (c.kind == Collective::all_to_all) {
    // Direct sends through the routers: chunk j to the chip at ring position j, into block r of
    // its output (its chunks are all chunk_rows(j) rows), the chips after this one first so that
    // the sends spread over the links; the own chunk by a copy. Then a fence for each arrival.
    const uint32_t own = c.chunk_rows(r);
    add(vec(Op::vmov, l.out + uint64_t{r} * own, l.in + c.chunk_first(r), own, kLoaded, 0));
    add(fence(kLoad, 0, kLoaded));  // a second token of the input for the ICI queue
    for (unsigned d = 1; d < p; ++d) {
      const unsigned j = (r + d) % p, dst = c.at_ring(j);
      add(send(l.in + c.chunk_first(j), l.out + uint64_t{r} * c.chunk_rows(j), c.chunk_rows(j), dst % c.w, dst / c.w,
               kAgArrived, d == 1 ? kLoaded : 0));
    }
    for (unsigned d = 1; d + 1 < p; ++d) add(fence(kIci, kAgArrived, 0));
    add(fence(kIci, kAgArrived, kAllIn));
    add(fence(kVec, 0, kOwnOut));
    add(fence(kStore, kOwnOut, 0));  // the own chunk's copy is complete too
    store_out(uint64_t{p} * own, kAllIn);
  } else if (gather) {
    // The own block into its place in the output, then p - 1 steps: forward block r - s (the own
    // one first, then the one that arrived at the step before), piece by piece, each piece as
    // soon as it is in; then fences for the last step's arrivals.
    add(vec(Op::vmov, l.out + uint64_t{r} * c.rows, l.in, c.rows, kLoaded, kOwnOut));
    const auto parts = pieces(c.rows, c.pieces);
    for (unsigned s = 0; s + 1 < p; ++s) {
      const uint64_t at = l.out + uint64_t{mod(int64_t{r} - s, p)} * c.rows;
      for (size_t g = 0; g < parts.size(); ++g)
        add(send(at + parts[g].first, at + parts[g].first, parts[g].second, nx, ny, kAgArrived,
                 s > 0 ? kAgArrived : (g == 0 ? kOwnOut : 0)));
    }
    for (size_t g = 0; g + 1 < parts.size(); ++g) add(fence(kIci, kAgArrived, 0));
    add(fence(kIci, kAgArrived, kAllIn));
    store_out(uint64_t{p} * c.rows, kAllIn);
  } else {
    // Reduce-scatter: at step s send the partial chunk r - s - 1 (the input at s = 0, then the
    // chunk the step before added into) and add the chunk r - s - 2 that arrives from the
    // previous chip into the own one: d = received + own. Chunks move in pieces, each sent as
    // soon as its addition is done and added as soon as it arrives, so sending, receiving and
    // adding overlap.
    add(fence(kLoad, 0, kLoadDone));  // a second token of the input, for the vector queue
    for (unsigned s = 0; s + 1 < p; ++s) {
      const unsigned cs = mod(int64_t{r} - s - 1, p), ca = mod(int64_t{r} - s - 2, p);
      const auto ps = pieces(c.chunk_rows(cs), c.pieces);
      for (size_t g = 0; g < ps.size(); ++g)
        add(send(l.in + c.chunk_first(cs) + ps[g].first, l.recv + uint64_t{s} * l.cmax + ps[g].first, ps[g].second, nx,
                 ny, kRsArrived, s > 0 ? kAdded : (g == 0 ? kLoaded : 0)));
      if (s == 0) add(fence(kVec, kLoadDone, 0));
      const auto pa = pieces(c.chunk_rows(ca), c.pieces);
      for (const auto& [off, n] : pa) {
        Instr a =
            vec(Op::vadd, l.in + c.chunk_first(ca) + off, l.recv + uint64_t{s} * l.cmax + off, n, kRsArrived, kAdded);
        a.f.b = l.in + c.chunk_first(ca) + off;
        add(a);
      }
    }
    // The last step's additions made chunk r, the chip's own; the vector queue runs in order, so
    // the copy after them sees it complete (their kAdded counts are left: no send takes them).
    const uint32_t own = c.chunk_rows(r);
    if (c.kind == Collective::reduce_scatter) {
      add(vec(Op::vmov, l.out, l.in + c.chunk_first(r), own, 0, kOwnOut));
      add(dma(Op::dma_st, l.out, c.out_beat, own, kOwnOut, 0));
    } else {
      // All-reduce: the own chunk into the output, then the all-gather of the chunks, in pieces.
      add(vec(Op::vmov, l.out + c.chunk_first(r), l.in + c.chunk_first(r), own, 0, kOwnOut));
      for (unsigned s = 0; s + 1 < p; ++s) {
        const unsigned b = mod(int64_t{r} - s, p);
        const auto pb = pieces(c.chunk_rows(b), c.pieces);
        for (size_t g = 0; g < pb.size(); ++g)
          add(send(l.out + c.chunk_first(b) + pb[g].first, l.out + c.chunk_first(b) + pb[g].first, pb[g].second, nx, ny,
                   kAgArrived, s > 0 ? kAgArrived : (g == 0 ? kOwnOut : 0)));
      }
      // The last step's arrivals (chunk r + 1) are not forwarded: fences take them.
      const size_t last = pieces(c.chunk_rows(mod(int64_t{r} + 1, p)), c.pieces).size();
      for (size_t g = 0; g + 1 < last; ++g) add(fence(kIci, kAgArrived, 0));
      add(fence(kIci, kAgArrived, kAllIn));
      add(dma(Op::dma_st, l.out, c.out_beat, c.rows, kAllIn, 0));
    }
  }
  if (segment) {
    // The last step's additions (chunk r, in its pieces) signalled kAdded, which no send takes.
    std::vector<isa::build::Drain> left;
    if (p > 1 && !gather)
      left.push_back({kIci, kAdded, static_cast<unsigned>(pieces(c.chunk_rows(r), c.pieces).size())});
    isa::build::seg_end(code, left);
  }
  return code;
}

}  // namespace

isa::Program collective_program(const Preset& pr, const CollectivePlan& c, unsigned k) {
  std::vector<Instr> code = collective_code(pr, c, k, false);
  code.push_back(isa::build::halt());
  const isa::Program prog = isa::build::program(pr, code);
  if (prog.code.size() > pr.chip.imem_words)
    throw DriverError(fmt::format("{}: {} instructions, more than preset '{}' holds", collective_name(c.kind),
                                  prog.code.size(), pr.name));
  return prog;
}

std::vector<Instr> collective_segment(const Preset& pr, const CollectivePlan& c, unsigned k) {
  if (c.kind == Collective::broadcast || c.kind == Collective::all_to_all)
    throw DriverError(fmt::format("{}: not available as a segment yet", collective_name(c.kind)));
  if (collective_vmem_rows(c) >= pr.chip.vmem_rows)
    throw DriverError(
        fmt::format("{} of {} rows: needs {} VMEM rows, and a segment leaves the last of preset '{}''s {} free",
                    collective_name(c.kind), c.rows, collective_vmem_rows(c), pr.name, pr.chip.vmem_rows));
  return collective_code(pr, c, k, true);
}

std::vector<std::vector<uint32_t>> collective_reference(const CollectivePlan& c,
                                                        const std::vector<std::vector<uint32_t>>& in) {
  const unsigned p = c.p(), n = c.lanes;
  unsigned slots = 0;  // outputs by slice index: every chip of the ring has one
  for (unsigned r = 0; r < p; ++r) slots = std::max(slots, c.at_ring(r) + 1);
  std::vector<std::vector<uint32_t>> out(slots);
  if (c.kind == Collective::all_gather) {
    std::vector<uint32_t> all;
    if (c.placement) {
      // The blocks' matrices in their places; beats no block writes are 0 here.
      const auto& pl = *c.placement;
      all.assign(pl.rows * pl.stride * n, 0u);
      for (unsigned b = 0; b < p; ++b)
        for (uint64_t row = 0; row < pl.rows; ++row)
          for (uint64_t cb = 0; cb < pl.cols[b]; ++cb)
            for (unsigned lane = 0; lane < n; ++lane)
              all[((row * pl.stride) + pl.offset[b] + cb) * n + lane] =
                  in[c.at_ring(b)][(row * pl.cols[b] + cb) * n + lane];
    } else {
      for (unsigned r = 0; r < p; ++r) {
        const auto& x = in[c.at_ring(r)];
        all.insert(all.end(), x.begin(), x.end());
      }
    }
    for (unsigned r = 0; r < p; ++r) out[c.at_ring(r)] = all;
    return out;
  }
  if (c.kind == Collective::broadcast) {
    for (unsigned r = 0; r < p; ++r) out[c.at_ring(r)] = in[c.at_ring(0)];
    return out;
  }
  if (c.kind == Collective::all_to_all) {
    for (unsigned j = 0; j < p; ++j) {
      auto& o = out[c.at_ring(j)];
      for (unsigned r = 0; r < p; ++r) {
        const auto& x = in[c.at_ring(r)];
        o.insert(o.end(), x.begin() + static_cast<std::ptrdiff_t>(uint64_t{c.chunk_first(j)} * n),
                 x.begin() + static_cast<std::ptrdiff_t>(uint64_t{c.chunk_first(j) + c.chunk_rows(j)} * n));
      }
    }
    return out;
  }
  // Chunk ch summed in ring order starting after its owner: ((x[ch+1] + x[ch+2]) + ...) + x[ch].
  std::vector<uint32_t> reduced(std::size_t{c.rows} * n);
  for (unsigned ch = 0; ch < p; ++ch) {
    for (uint64_t row = c.chunk_first(ch); row < c.chunk_first(ch) + c.chunk_rows(ch); ++row) {
      for (unsigned lane = 0; lane < n; ++lane) {
        const std::size_t at = row * n + lane;
        uint32_t acc = in[c.at_ring((ch + 1) % p)][at];
        for (unsigned t = 2; t <= p; ++t) acc = golden::fp32_add(acc, in[c.at_ring((ch + t) % p)][at]);
        reduced[at] = acc;
      }
    }
  }
  for (unsigned r = 0; r < p; ++r) {
    const unsigned k = c.at_ring(r);
    if (c.kind == Collective::all_reduce) {
      out[k] = reduced;
    } else {
      out[k].assign(reduced.begin() + static_cast<std::ptrdiff_t>(uint64_t{c.chunk_first(r)} * n),
                    reduced.begin() + static_cast<std::ptrdiff_t>(uint64_t{c.chunk_first(r) + c.chunk_rows(r)} * n));
    }
  }
  return out;
}

CollectiveRun run_collective(Slice& slice, Collective kind, uint32_t rows, uint64_t seed, uint64_t timeout_cycles) {
  const Preset& pr = slice.preset();
  const unsigned w = slice.shape().w, h = slice.shape().h;
  const CollectivePlan c = plan_collective(pr, kind, w, h, rows);
  CollectiveRun run;
  run.what = fmt::format("{} of {} rows x {} lanes on a {}x{} slice, seed {}", collective_name(kind), rows, c.lanes, w,
                         h, seed);
  run.bytes = uint64_t{rows} * c.lanes * 4 * (kind == Collective::all_gather ? c.p() : 1);
  std::mt19937_64 rng(seed);
  std::vector<std::vector<uint32_t>> in(c.p());
  for (auto& x : in) {
    x.resize(std::size_t{rows} * c.lanes);
    for (auto& v : x) {
      // Both signs, exponents 124..131 (magnitudes 1/8 .. 16): sums cancel and round.
      const uint32_t e = 124 + static_cast<uint32_t>(rng() % 8);
      v = (static_cast<uint32_t>(rng() & 1) << 31) | (e << 23) | static_cast<uint32_t>(rng() & 0x7fffff);
    }
  }
  for (unsigned k = 0; k < c.p(); ++k) {
    slice.write(k % w, k / w, 0, in[k]);
    slice.load(k % w, k / w, collective_program(pr, c, k));
  }
  run.status = slice.run(timeout_cycles ? timeout_cycles : 2'000'000);
  const auto want = collective_reference(c, in);
  run.pass = run.status.ok();
  for (unsigned k = 0; k < c.p(); ++k) {
    const uint32_t n = c.out_rows(k);
    run.outputs.push_back(n ? slice.read(k % w, k / w, c.out_beat, n) : std::vector<uint32_t>{});
    if (!run.status.ok()) continue;
    for (std::size_t i = 0; i < want[k].size(); ++i)
      if (run.outputs[k][i] != want[k][i]) ++run.mismatches;
  }
  run.pass = run.pass && run.mismatches == 0;
  return run;
}

}  // namespace tp::driver
