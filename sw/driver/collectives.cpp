// Ring collectives (collectives.h, docs/collectives.md).
#include "collectives.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
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
// A segment's ICI gate: a token from the load queue once it is past its go token, taken by the
// ICI queue's first instruction, which sends this chip's ready tokens. It is kAgArrived, which only
// the ICI queue takes and no transfer can have counted before (the chips that send to this one
// send nothing until they have its ready token).
constexpr unsigned kIciGate = kAgArrived;
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
  l.in = c.vmem_base;
  const bool reduces = c.kind == Collective::all_reduce || c.kind == Collective::reduce_scatter;
  l.cmax = (c.rows + p - 1) / p;
  l.recv = l.in + c.rows;
  l.out = l.recv + (reduces ? (p - 1) * l.cmax : 0);
  l.end = l.out + (c.kind == Collective::all_gather   ? uint64_t{p} * c.rows
                   : c.kind == Collective::all_to_all ? uint64_t{p} * l.cmax
                                                      : c.rows);
  return l;
}

// ---- The torus all-reduce (docs/collectives.md "The torus all-reduce") ----------------------

// A stream of the torus all-reduce: a part of the rows, reduce-scattered along its dimensions in
// order, each dimension a ring run in direction dir, then all-gathered back in reverse order.
struct Stream {
  std::array<unsigned, 2> dims{};  // 0: x, 1: y
  unsigned ndims = 0;
  int dir = 1;  // +1: each chip sends to the next higher coordinate (wrapping), -1: lower
  uint32_t first = 0, rows = 0;
};

// The streams of a w x h slice: on a 2D slice four, (x then y) and (y then x), each both ways, so
// that every phase keeps the four links of every chip busy; on a ring (one side 1) two, both
// ways; none on one chip. Their rows: near-equal consecutive parts of the plan's (an all-gather's:
// part t of every block, below).
std::vector<Stream> torus_streams(const CollectivePlan& c) {
  std::vector<Stream> s;
  if (c.w > 1 && c.h > 1) {
    s = {{{0, 1}, 2, 1}, {{0, 1}, 2, -1}, {{1, 0}, 2, 1}, {{1, 0}, 2, -1}};
  } else if (c.w > 1 || c.h > 1) {
    const unsigned d = c.w > 1 ? 0 : 1;
    s = {{{d, d}, 1, 1}, {{d, d}, 1, -1}};
  }
  const auto n = static_cast<uint32_t>(s.size());
  if (c.kind == Collective::all_gather) {
    // The gathered rows (p blocks): stream t takes part t of every chip's block (the blocks' R
    // rows cut into near-equal parts), p parts of the same size, so that every chunk of every
    // phase divides evenly and each chip owns exactly its own block's part at the end of the
    // reduce-scatter that this all-gather undoes.
    uint32_t at = 0;
    for (uint32_t t = 0; t < n; ++t) {
      const uint32_t part = static_cast<uint32_t>(uint64_t{t + 1} * c.rows / n - uint64_t{t} * c.rows / n);
      s[t].first = at;
      s[t].rows = part * c.p();
      at += s[t].rows;
    }
    return s;
  }
  for (uint32_t t = 0; t < n; ++t) {
    s[t].first = static_cast<uint32_t>(uint64_t{t} * c.rows / n);
    s[t].rows = static_cast<uint32_t>(uint64_t{t + 1} * c.rows / n) - s[t].first;
  }
  return s;
}

// Extent of the slice in dimension d, and chip k's coordinate along it (slice-relative).
unsigned extent(const CollectivePlan& c, unsigned d) { return d == 0 ? c.w : c.h; }
unsigned coord(const CollectivePlan& c, unsigned k, unsigned d) { return d == 0 ? k % c.w : k / c.w; }
// Ring position of coordinate u in a ring of kd run in direction dir, and back.
unsigned ring_pos(unsigned u, unsigned kd, int dir) { return dir > 0 ? u : kd - 1 - u; }
// The slice index of chip k moved to coordinate u along d.
unsigned with_coord(const CollectivePlan& c, unsigned k, unsigned d, unsigned u) {
  return d == 0 ? u + (k / c.w) * c.w : k % c.w + u * c.w;
}

// Chunk i of n of the rows [first, first + rows).
std::pair<uint32_t, uint32_t> chunk_of(std::pair<uint32_t, uint32_t> r, unsigned i, unsigned n) {
  const auto a = static_cast<uint32_t>(uint64_t{i} * r.second / n),
             b = static_cast<uint32_t>(uint64_t{i + 1} * r.second / n);
  return {r.first + a, b - a};
}

// The rows stream t works on in its phase ph on chip k: phase 0 the stream's rows, phase 1 the
// chunk chip k owns after phase 0 (its position in the phase-0 ring; every chip of its phase-1
// ring has the same).
std::pair<uint32_t, uint32_t> region(const CollectivePlan& c, const Stream& t, unsigned ph, unsigned k) {
  std::pair<uint32_t, uint32_t> r{t.first, t.rows};
  for (unsigned i = 0; i < ph; ++i) {
    const unsigned d = t.dims[i], kd = extent(c, d);
    r = chunk_of(r, ring_pos(coord(c, k, d), kd, t.dir), kd);
  }
  return r;
}

// A torus chunk's pieces: up to c.pieces, but none smaller than a packet's rows where the chunk
// allows, since every piece costs the vector unit an addition's fixed cycles (a 2-row addition
// takes about as long as a 2-row send's flits, and four streams share the unit).
std::vector<std::pair<uint32_t, uint32_t>> torus_pieces(const CollectivePlan& c, uint32_t rows) {
  constexpr uint32_t kMin = isa::hw::ici::kPacketRows;
  return pieces(rows, std::min<uint32_t>(c.pieces, std::max<uint32_t>(1, rows / kMin)));
}

// The semaphore index of a ring direction: x+ 0, x- 1, y+ 2, y- 3.
unsigned dir_index(unsigned d, int dir) { return 2 * d + (dir > 0 ? 0 : 1); }

// VMEM of the torus all-reduce: the input at 0, then per stream, phase and reduce-scatter step a
// receive buffer of the phase's largest chunk, then the output (a reduce-scatter's and an
// all-gather's: below).
struct TorusLayout {
  uint64_t in = 0, out = 0, end = 0;
  std::vector<std::array<uint64_t, 2>> recv;  // per stream and phase: the first step's buffer
  std::vector<std::array<uint64_t, 2>> cmax;  // ... and the buffers' rows
};
// A reduce-scatter stores each stream's own chunk from the input (no output rows); an all-gather
// has no input or receive buffers: each chip loads its block's parts into their places in the
// output, where the others' arrive.
TorusLayout torus_layout(const CollectivePlan& c, const std::vector<Stream>& streams) {
  TorusLayout l;
  if (c.kind == Collective::all_gather) {
    l.recv.assign(streams.size(), {});
    l.cmax.assign(streams.size(), {});
    l.in = l.out = c.vmem_base;
    l.end = l.out + uint64_t{c.p()} * c.rows;
    return l;
  }
  l.in = c.vmem_base;
  uint64_t at = l.in + c.rows;
  for (const Stream& t : streams) {
    std::array<uint64_t, 2> recv{}, cmax{};
    uint64_t rows = t.rows;
    for (unsigned ph = 0; ph < t.ndims; ++ph) {
      const unsigned kd = extent(c, t.dims[ph]);
      cmax[ph] = (rows + kd - 1) / kd;
      recv[ph] = at;
      at += (kd - 1) * cmax[ph];
      rows = cmax[ph];
    }
    l.recv.push_back(recv);
    l.cmax.push_back(cmax);
  }
  l.out = at;
  l.end = c.kind == Collective::reduce_scatter ? at : at + c.rows;
  return l;
}

// The torus all-reduce's instructions for slice chip k, without halt, or its first half (a
// reduce-scatter: each stream's own chunk stored from the input) or its second (an all-gather:
// the block's parts loaded into their places). Per stream, reduce-scatter
// phases (a ring along each of its dimensions in turn: at step s a chip sends its partial chunk
// pos - s - 1 of the phase's rows to the next chip of the ring and adds the chunk pos - s - 2 that
// arrives into its own, as the ring all-reduce does), the own finished chunk copied into the
// output, then all-gather phases in the reverse order. The streams' instructions interleave piece
// by piece (phase, step, piece, stream), so that the four streams, each on its own links, move
// together; every chip runs the same order, which is what lets one semaphore per direction
// count the arrivals of all streams that come that way. Semaphores:
//   RS[dir] reduce-scatter pieces that came in direction dir (the vector queue takes them),
//   AG[dir] all-gather pieces (the ICI queue takes them: forwarding sends, fences),
//   kAdded every addition (the ICI queue takes them in order: the sends of added pieces, fences
//   for the counts in between), kOwnOut each stream's own chunk in the output (the ICI queue
//   takes it; a reduce-scatter's: its store, after a vector fence; an all-gather's: one count of
//   the load fence, for the first send), kLoaded, kLoadDone the input loaded (ICI, vector queue),
//   kAllIn everything in (the store).
//   As a segment, kIciGate: the ICI queue's gate (above), as the ring's. So the torus uses 13
//   semaphores (1-5, 7-14), which an overlapped segment can renumber above the compiler's ten.
constexpr std::array<unsigned, 4> kRsSem = {kRsArrived, 9, 10, 11}, kAgSem = {kAgArrived, 12, 13, 14};
constexpr bool listed(unsigned s) {
  for (const unsigned c : kCollectiveSems)
    if (c == s) return true;
  return false;
}
static_assert(listed(kLoaded) && listed(kRsArrived) && listed(kAdded) && listed(kAgArrived) && listed(kOwnOut) &&
                  listed(kLoadDone) && listed(kAllIn) && listed(kRsSem[1]) && listed(kRsSem[2]) && listed(kRsSem[3]) &&
                  listed(kAgSem[1]) && listed(kAgSem[2]) && listed(kAgSem[3]),
              "collectives.h's kCollectiveSems lists every semaphore the programs use");

std::vector<Instr> torus_code(const Preset& pr, const CollectivePlan& c, unsigned k, SegmentParts* segment) {
  const std::vector<Stream> streams = torus_streams(c);
  const TorusLayout l = torus_layout(c, streams);
  const auto ns = static_cast<unsigned>(streams.size());
  const bool rs = c.kind != Collective::all_gather, ag = c.kind != Collective::reduce_scatter;
  std::vector<Instr> code;
  auto add = [&](const Instr& i) { code.push_back(i); };

  // The next chip of stream t's phase-ph ring, as absolute slice coordinates.
  auto next = [&](const Stream& t, unsigned ph) {
    const unsigned d = t.dims[ph], kd = extent(c, d);
    const unsigned u = (coord(c, k, d) + kd + static_cast<unsigned>(t.dir > 0 ? 1 : kd - 1)) % kd;
    const unsigned n = with_coord(c, k, d, u);
    return std::pair<unsigned, unsigned>{n % c.w, n / c.w};
  };
  // Stream t's phase-ph ring on this chip: its size, this chip's position, the phase's rows.
  struct Ring {
    unsigned kd, pos, di;
    std::pair<uint32_t, uint32_t> reg;
  };
  auto ring = [&](const Stream& t, unsigned ph) {
    const unsigned d = t.dims[ph], kd = extent(c, d);
    return Ring{kd, ring_pos(coord(c, k, d), kd, t.dir), dir_index(d, t.dir), region(c, t, ph, k)};
  };
  unsigned phases = 0;
  for (const Stream& t : streams) phases = std::max(phases, t.ndims);

  if (segment) {
    // The chips this one sends to and those that send to it (each once: on a side of 2 both
    // directions reach the same chip). Once the load queue is past its go token (this chip's
    // VMEM is free), a ready token to each sender; then the ICI queue, and with it every send
    // below, waits for a ready token from each receiver (as the ring's segment does with one).
    std::vector<unsigned> to, from;
    for (const Stream& t : streams)
      for (unsigned ph = 0; ph < t.ndims; ++ph) {
        const unsigned d = t.dims[ph], kd = extent(c, d), u = coord(c, k, d);
        const unsigned fwd = with_coord(c, k, d, (u + (t.dir > 0 ? 1 : kd - 1)) % kd),
                       back = with_coord(c, k, d, (u + (t.dir > 0 ? kd - 1 : 1)) % kd);
        if (std::find(to.begin(), to.end(), fwd) == to.end()) to.push_back(fwd);
        if (std::find(from.begin(), from.end(), back) == from.end()) from.push_back(back);
      }
    auto& head = segment->head;
    head.push_back(fence(kLoad, 0, kIciGate));
    const uint64_t tok = isa::build::seg_token_row(pr);
    for (size_t i = 0; i < from.size(); ++i)
      head.push_back(send(tok, tok, 1, from[i] % c.w, from[i] / c.w, isa::build::kSegReady, i == 0 ? kIciGate : 0));
    for (size_t i = 0; i < to.size(); ++i) head.push_back(fence(kIci, isa::build::kSegReady, 0));
  }

  // kAdded and kOwnOut counts: the vector queue signals one per addition (and per own-chunk copy)
  // in order; the ICI queue consumes them in order, with fences for those it does not wait for
  // itself. take(sem, counter, upto): the wait of the send that needs the upto-th (1-based).
  uint64_t adds = 0, added_taken = 0, owns = 0, own_taken = 0;
  auto take = [&](unsigned sem, uint64_t& taken, uint64_t upto) {
    if (upto <= taken) return 0u;
    while (taken + 1 < upto) {
      add(fence(kIci, sem, 0));
      ++taken;
    }
    ++taken;
    return sem;
  };
  auto take_added = [&](uint64_t upto) { return take(kAdded, added_taken, upto); };
  // Per (stream, phase, step, piece): the addition that made the piece.
  std::vector<std::array<std::vector<std::vector<uint64_t>>, 2>> made(ns);
  // Per (stream, phase): the last step's additions, {first row, rows, addition} (they finish the
  // chunk the chip owns after the phase); the next phase's first sends wait for those that wrote
  // their rows. Per stream: its own-chunk copy's place among the copies (kOwnOut, 1-based).
  struct Made {
    uint32_t first, rows;
    uint64_t add;
  };
  std::vector<std::array<std::vector<Made>, 2>> last_step(ns);
  auto made_rows = [&](unsigned ti, unsigned ph, uint32_t first, uint32_t rows) {
    uint64_t need = 0;
    for (const Made& m : last_step[ti][ph])
      if (m.first < first + rows && first < m.first + m.rows) need = std::max(need, m.add);
    return need;
  };
  std::vector<uint64_t> own_copy(ns, 0);
  // Each stream's own rows at the end of the reduce-scatter, and where a reduce-scatter stores
  // them (the streams' in stream order) or where an all-gather's block has them (its parts).
  std::vector<std::pair<uint32_t, uint32_t>> own(ns);
  std::vector<uint32_t> own_at(ns, 0);
  for (unsigned ti = 0; ti < ns; ++ti) {
    own[ti] = region(c, streams[ti], streams[ti].ndims, k);
    if (ti + 1 < ns) own_at[ti + 1] = own_at[ti] + own[ti].second;
  }

  // The input first (the vector queue takes a second token of it), the output last: the memory
  // transfers do not overlap the network (docs/collectives.md says why).
  if (rs) {
    add(dma(Op::dma_ld, l.in, c.in_beat, c.rows, 0, kLoaded));
    add(fence(kLoad, 0, kLoadDone));
  } else {
    // An all-gather's block, part by part into its places in the output; every stream's first
    // send waits for all of them (one count: the load queue's fence).
    for (unsigned ti = 0; ti < ns; ++ti) {
      add(dma(Op::dma_ld, l.out + own[ti].first, c.in_beat + own_at[ti], own[ti].second, 0, 0));
      own_copy[ti] = 1;
    }
    add(fence(kLoad, 0, kOwnOut));
  }
  bool first_send = true;

  // Reduce-scatter: phase, step, piece, stream.
  for (unsigned ph = 0; rs && ph < phases; ++ph) {
    unsigned steps = 0;
    for (const Stream& t : streams)
      if (ph < t.ndims) steps = std::max(steps, extent(c, t.dims[ph]) - 1);
    for (unsigned s = 0; s < steps; ++s) {
      for (unsigned g = 0; g < c.pieces; ++g) {
        for (unsigned ti = 0; ti < ns; ++ti) {
          const Stream& t = streams[ti];
          if (ph >= t.ndims) continue;
          const Ring rg = ring(t, ph);
          if (s + 1 >= rg.kd) continue;
          const auto cs = chunk_of(rg.reg, mod(int64_t{rg.pos} - s - 1, rg.kd), rg.kd);
          const auto ca = chunk_of(rg.reg, mod(int64_t{rg.pos} - s - 2, rg.kd), rg.kd);
          const auto ps = torus_pieces(c, cs.second), pa = torus_pieces(c, ca.second);
          const uint64_t buf = l.recv[ti][ph] + uint64_t{s} * l.cmax[ti][ph];
          if (g < ps.size()) {
            // Its rows: the input (phase 0, step 0), else the additions that made them.
            unsigned wait = 0;
            if (ph == 0 && s == 0) {
              wait = first_send ? kLoaded : 0;
              first_send = false;
            } else if (s > 0)
              wait = take_added(made[ti][ph].at(s - 1).at(g));
            else  // the previous phase's last additions made the region
              wait = take_added(made_rows(ti, ph - 1, cs.first + ps[g].first, ps[g].second));
            const auto [nx, ny] = next(t, ph);
            add(send(l.in + cs.first + ps[g].first, buf + ps[g].first, ps[g].second, nx, ny, kRsSem[rg.di], wait));
          }
          if (g < pa.size()) {
            if (adds == 0) add(fence(kVec, kLoadDone, 0));  // the input is in
            Instr a =
                vec(Op::vadd, l.in + ca.first + pa[g].first, buf + pa[g].first, pa[g].second, kRsSem[rg.di], kAdded);
            a.f.b = l.in + ca.first + pa[g].first;
            add(a);
            auto& m = made[ti][ph];
            if (m.size() <= s) m.resize(s + 1);
            if (m[s].size() <= g) m[s].resize(g + 1);
            m[s][g] = ++adds;
            if (s + 2 == rg.kd) last_step[ti][ph].push_back({ca.first + pa[g].first, pa[g].second, adds});
            // The stream's own chunk is finished with its last phase's last addition: into the
            // output at once (the vector queue runs in order, so after the additions that made it),
            // or, ending a reduce-scatter, stored once the vector queue is past those additions.
            if (s + 2 == rg.kd && ph + 1 == t.ndims && g + 1 == pa.size()) {
              const auto& o = own[ti];
              if (ag) {
                add(vec(Op::vmov, l.out + o.first, l.in + o.first, o.second, 0, kOwnOut));
                own_copy[ti] = ++owns;
              } else {
                add(fence(kVec, 0, kOwnOut));
                add(dma(Op::dma_st, l.in + o.first, c.out_beat + own_at[ti], o.second, kOwnOut, 0));
              }
            }
          }
        }
      }
    }
  }

  // All-gather: phases in reverse order, step, piece, stream. At step s a chip forwards the chunk
  // pos - s of the phase's rows (its own at step 0) to the same rows of the next chip's output;
  // the last step's arrivals are taken by fences, and the next phase starts from the whole region.
  for (unsigned phr = ag ? phases : 0; phr-- > 0;) {
    unsigned steps = 0;
    for (const Stream& t : streams)
      if (phr < t.ndims) steps = std::max(steps, extent(c, t.dims[phr]) - 1);
    for (unsigned s = 0; s < steps; ++s) {
      for (unsigned g = 0; g < c.pieces; ++g) {
        for (unsigned ti = 0; ti < ns; ++ti) {
          const Stream& t = streams[ti];
          if (phr >= t.ndims) continue;
          const Ring rg = ring(t, phr);
          if (s + 1 >= rg.kd) continue;
          const auto cb = chunk_of(rg.reg, mod(int64_t{rg.pos} - s, rg.kd), rg.kd);
          const auto pb = torus_pieces(c, cb.second);
          if (g >= pb.size()) continue;
          // Its rows: the own chunk (step 0 of the stream's last phase), what the step before
          // brought, or (step 0 of an earlier phase) the region the later phase gathered.
          unsigned wait = 0;
          if (s > 0)
            wait = kAgSem[rg.di];
          else if (phr == t.ndims - 1)
            wait = take(kOwnOut, own_taken, own_copy[ti]);
          const auto [nx, ny] = next(t, phr);
          const uint64_t at = l.out + cb.first + pb[g].first;
          add(send(at, at, pb[g].second, nx, ny, kAgSem[rg.di], wait));
        }
      }
    }
    // The last step's arrivals (not forwarded), in the order they come; the last of all lets the
    // store go.
    std::vector<unsigned> fences;
    for (unsigned g = 0; g < c.pieces; ++g) {
      for (unsigned ti = 0; ti < ns; ++ti) {
        const Stream& t = streams[ti];
        if (phr >= t.ndims) continue;
        const Ring rg = ring(t, phr);
        const auto cb = chunk_of(rg.reg, mod(int64_t{rg.pos} + 1, rg.kd), rg.kd);
        if (g < torus_pieces(c, cb.second).size()) fences.push_back(kAgSem[rg.di]);
      }
    }
    for (size_t i = 0; i < fences.size(); ++i)
      add(fence(kIci, fences[i], phr == 0 && i + 1 == fences.size() ? kAllIn : 0));
  }
  if (c.kind == Collective::all_reduce) {
    add(dma(Op::dma_st, l.out, c.out_beat, c.rows, kAllIn, 0));
  } else if (ag) {
    // The blocks in ring order, as the ring's all-gather stores them: block r's parts from
    // where its chip owns them.
    unsigned wait = kAllIn;
    for (unsigned r = 0; r < c.p(); ++r) {
      uint32_t at = 0;
      for (const Stream& t : streams) {
        const auto o = region(c, t, t.ndims, c.at_ring(r));
        add(dma(Op::dma_st, l.out + o.first, c.out_beat + uint64_t{r} * c.rows + at, o.second, wait, 0));
        wait = 0;
        at += o.second;
      }
    }
  }
  if (segment) {
    // The counts no send took: the last additions' (kAdded) and own-chunk copies' (kOwnOut).
    if (adds > added_taken) segment->drains.push_back({kIci, kAdded, static_cast<unsigned>(adds - added_taken)});
    if (owns > own_taken) segment->drains.push_back({kIci, kOwnOut, static_cast<unsigned>(owns - own_taken)});
  }
  return code;
}

// The torus all-reduce's result, in its order of additions: for each stream, row and lane, the
// ring sums of its phases in turn (the later phase adds up the earlier phase's results of the
// chips of its ring), each ring sum in ring order starting after the chunk's owner.
std::vector<uint32_t> torus_reference(const CollectivePlan& c, const std::vector<std::vector<uint32_t>>& in) {
  const unsigned n = c.lanes;
  std::vector<uint32_t> out(std::size_t{c.rows} * n);
  for (const Stream& t : torus_streams(c)) {
    // The phase-(ndims-1) result of the chips with the given coordinate along dims[1] (a 2D
    // stream), or of the whole ring: sum over positions after the owner of the row's chunk.
    for (uint32_t row = t.first; row < t.first + t.rows; ++row) {
      // The row's chunk in each phase: its owners' positions.
      std::array<unsigned, 2> owner{};
      std::pair<uint32_t, uint32_t> reg{t.first, t.rows};
      for (unsigned ph = 0; ph < t.ndims; ++ph) {
        const unsigned kd = extent(c, t.dims[ph]);
        for (unsigned i = 0; i < kd; ++i) {
          const auto ch = chunk_of(reg, i, kd);
          if (row >= ch.first && row < ch.first + ch.second) {
            owner[ph] = i;
            reg = ch;
            break;
          }
        }
      }
      for (unsigned lane = 0; lane < n; ++lane) {
        const std::size_t at = std::size_t{row} * n + lane;
        // Phase 0's ring sum on the ring through chip k (its dims[0] line).
        auto ring0 = [&](unsigned k) {
          const unsigned d = t.dims[0], kd = extent(c, d);
          auto chip = [&](unsigned pos) {
            return with_coord(c, k, d, ring_pos(pos % kd, kd, t.dir));  // ring_pos is its own inverse
          };
          uint32_t acc = in[chip(owner[0] + 1)][at];
          for (unsigned s = 2; s <= kd; ++s) acc = golden::fp32_add(acc, in[chip(owner[0] + s)][at]);
          return acc;
        };
        if (t.ndims == 1) {
          out[at] = ring0(0);
          continue;
        }
        const unsigned d = t.dims[1], kd = extent(c, d);
        auto chip = [&](unsigned pos) { return with_coord(c, 0, d, ring_pos(pos % kd, kd, t.dir)); };
        uint32_t acc = ring0(chip(owner[1] + 1));
        for (unsigned s = 2; s <= kd; ++s) acc = golden::fp32_add(acc, ring0(chip(owner[1] + s)));
        out[at] = acc;
      }
    }
  }
  return out;
}

}  // namespace

std::string_view algorithm_name(Algorithm a) { return a == Algorithm::torus ? "torus" : "ring"; }
std::string_view algorithm_name(Collective c, Algorithm a) {
  return c == Collective::all_to_all ? "direct" : has_torus(c) ? algorithm_name(a) : "ring";
}

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
      if (algorithm == Algorithm::torus && p() > 1) {
        uint32_t n = 0;
        for (const Stream& t : torus_streams(*this)) n += region(*this, t, t.ndims, k).second;
        return n;
      }
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

namespace {

// Why the torus cannot run plan c (empty: it can): every chunk of every phase needs a row (an
// all-gather: every stream a row of each block), and the buffers must fit `vmem` rows.
std::string torus_refusal(const Preset& pr, const CollectivePlan& c, uint64_t vmem) {
  CollectivePlan t = c;
  t.algorithm = Algorithm::torus;
  const auto ns = static_cast<unsigned>(torus_streams(t).size());
  const uint64_t need = collective_vmem_rows(t);
  const uint64_t min_rows = c.kind == Collective::all_gather ? ns : uint64_t{ns} * c.p();
  if (c.rows < min_rows)
    return c.kind == Collective::all_gather
               ? fmt::format("needs {} rows at least (a row per stream)", ns)
               : fmt::format("needs {} rows at least ({} streams x {} chips)", ns * c.p(), ns, c.p());
  if (need > vmem)
    return fmt::format("needs {} VMEM rows (input, receive buffers, output), preset '{}' has {}", need, pr.name,
                       vmem == pr.chip.vmem_rows ? fmt::format("{}", vmem) : fmt::format("{} for a segment", vmem));
  return {};
}

}  // namespace

void torus_if_it_fits(const Preset& pr, CollectivePlan& c) {
  c.algorithm = Algorithm::ring;
  if (has_torus(c.kind) && c.p() > 1 && c.members.empty() && !c.placement &&
      torus_refusal(pr, c, pr.chip.vmem_rows - 1).empty())
    c.algorithm = Algorithm::torus;
}

CollectivePlan plan_collective(const Preset& pr, Collective kind, unsigned w, unsigned h, uint32_t rows,
                               std::optional<Algorithm> algorithm) {
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
  if (algorithm == Algorithm::torus && !has_torus(kind))
    throw DriverError(
        fmt::format("{}: the torus algorithm is an all-reduce's, a reduce-scatter's or an all-gather's", what));
  if (has_torus(kind) && c.p() > 1 && algorithm != Algorithm::ring) {
    const std::string why = torus_refusal(pr, c, pr.chip.vmem_rows);
    if (why.empty())
      c.algorithm = Algorithm::torus;
    else if (algorithm == Algorithm::torus)
      throw DriverError(fmt::format("{}, torus algorithm: {}", what, why));
  }
  const Layout l = layout(c);
  const uint64_t vmem = collective_vmem_rows(c);
  if (vmem > pr.chip.vmem_rows)
    throw DriverError(fmt::format("{}: needs {} VMEM rows (input, {} receive buffers, output), preset '{}' has {}",
                                  what, vmem, l.out > l.recv ? c.p() - 1 : 0u, pr.name, pr.chip.vmem_rows));
  c.out_beat = rows;  // the output right after the input in HBM
  if (c.out_beat + l.end - l.out > pr.chip.hbm_beats)
    throw DriverError(
        fmt::format("{}: does not fit the {} HBM beats of preset '{}'", what, pr.chip.hbm_beats, pr.name));
  // A broadcast's pipeline fills and drains over p - 1 hops: more pieces make that cheaper.
  if (kind == Collective::broadcast) c.pieces = std::min(64u, 4 * c.p());
  // Program length: a few instructions per step (torus: per stream and step, pieces x (send,
  // addition, forward and a fence at most)).
  const uint64_t length = kind == Collective::broadcast     ? uint64_t{c.pieces} + 16
                          : c.algorithm == Algorithm::torus ? uint64_t{4} * 4 * c.pieces * (w + h) + 4 * c.p() + 32
                                                            : uint64_t{4} * c.pieces * c.p() + 16;
  if (length > pr.chip.imem_words)
    throw DriverError(fmt::format("{}: the program is longer than the {}-word instruction memory of preset '{}'", what,
                                  pr.chip.imem_words, pr.name));
  return c;
}

uint64_t collective_vmem_rows(const CollectivePlan& c) {
  if (c.algorithm == Algorithm::torus && c.p() > 1) return torus_layout(c, torus_streams(c)).end;
  return layout(c).end;
}

namespace {

// The collective's instructions for slice chip k, without halt. segment: as the body of a
// segment of a larger program, its head and drains written there (collective_parts).
std::vector<Instr> collective_code(const Preset& pr, const CollectivePlan& c, unsigned k, SegmentParts* segment) {
  if (c.algorithm == Algorithm::torus && c.p() > 1) return torus_code(pr, c, k, segment);
  const unsigned p = c.p(), r = c.ring_of(k);
  const unsigned nxt = c.at_ring((r + 1) % p), prv = c.at_ring((r + p - 1) % p);
  const unsigned nx = nxt % c.w, ny = nxt / c.w;
  const Layout l = layout(c);
  const bool gather = c.kind == Collective::all_gather;
  std::vector<Instr> code;
  auto add = [&](const Instr& i) { code.push_back(i); };
  if (segment) {
    if (p > 1) {
      // The ICI queue's gate (kIciGate), then ready: this chip's VMEM is free for the chip that
      // sends to it; and wait until the chip it sends to says the same (the ICI queue runs in
      // order: every send below waits too).
      const uint64_t tok = isa::build::seg_token_row(pr);
      segment->head = {fence(kLoad, 0, kIciGate),
                       send(tok, tok, 1, prv % c.w, prv / c.w, isa::build::kSegReady, kIciGate),
                       fence(kIci, isa::build::kSegReady, 0)};
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
    if (p > 1 && !gather)
      segment->drains.push_back({kIci, kAdded, static_cast<unsigned>(pieces(c.chunk_rows(r), c.pieces).size())});
  }
  return code;
}

}  // namespace

isa::Program collective_program(const Preset& pr, const CollectivePlan& c, unsigned k) {
  std::vector<Instr> code = collective_code(pr, c, k, nullptr);
  code.push_back(isa::build::halt());
  const isa::Program prog = isa::build::program(pr, code);
  if (prog.code.size() > pr.chip.imem_words)
    throw DriverError(fmt::format("{}: {} instructions, more than preset '{}' holds", collective_name(c.kind),
                                  prog.code.size(), pr.name));
  return prog;
}

SegmentParts collective_parts(const Preset& pr, const CollectivePlan& c, unsigned k) {
  if (c.kind == Collective::broadcast || c.kind == Collective::all_to_all)
    throw DriverError(fmt::format("{}: not available as a segment yet", collective_name(c.kind)));
  if (c.algorithm == Algorithm::torus && c.p() > 1 && (!c.members.empty() || c.placement))
    throw DriverError(
        fmt::format("{}: the torus algorithm runs on a whole slice, without a placement", collective_name(c.kind)));
  if (collective_vmem_rows(c) >= pr.chip.vmem_rows)
    throw DriverError(
        fmt::format("{} of {} rows: needs {} VMEM rows, and a segment leaves the last of preset '{}''s {} free",
                    collective_name(c.kind), c.rows, collective_vmem_rows(c), pr.name, pr.chip.vmem_rows));
  SegmentParts parts;
  parts.body = collective_code(pr, c, k, &parts);
  return parts;
}

std::vector<Instr> collective_segment(const Preset& pr, const CollectivePlan& c, unsigned k) {
  const SegmentParts parts = collective_parts(pr, c, k);
  std::vector<Instr> code;
  isa::build::seg_begin(code);
  code.insert(code.end(), parts.head.begin(), parts.head.end());
  code.insert(code.end(), parts.body.begin(), parts.body.end());
  isa::build::seg_end(code, parts.drains);
  return code;
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
  if (c.algorithm == Algorithm::torus && p > 1) {  // an all-reduce or a reduce-scatter
    const auto reduced = torus_reference(c, in);
    const auto streams = torus_streams(c);
    for (unsigned r = 0; r < p; ++r) {
      const unsigned k = c.at_ring(r);
      if (c.kind == Collective::all_reduce) {
        out[k] = reduced;
        continue;
      }
      for (const Stream& t : streams) {  // the chip's own rows of each stream, in stream order
        const auto o = region(c, t, t.ndims, k);
        out[k].insert(out[k].end(), reduced.begin() + static_cast<std::ptrdiff_t>(uint64_t{o.first} * n),
                      reduced.begin() + static_cast<std::ptrdiff_t>(uint64_t{o.first + o.second} * n));
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

CollectiveRun run_collective(Slice& slice, Collective kind, uint32_t rows, uint64_t seed, uint64_t timeout_cycles,
                             std::optional<Algorithm> algorithm) {
  const Preset& pr = slice.preset();
  const unsigned w = slice.shape().w, h = slice.shape().h;
  const CollectivePlan c = plan_collective(pr, kind, w, h, rows, algorithm);
  CollectiveRun run;
  run.what = fmt::format("{} of {} rows x {} lanes on a {}x{} slice ({}), seed {}", collective_name(kind), rows,
                         c.lanes, w, h, algorithm_name(kind, c.algorithm), seed);
  run.bytes = uint64_t{rows} * c.lanes * 4 * (kind == Collective::all_gather ? c.p() : 1);
  run.algorithm = c.algorithm;
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
