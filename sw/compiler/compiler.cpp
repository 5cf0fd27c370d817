// The tensorpod compiler: matmul layers to one chip program.
//
// DESIGN
//
// Tiling. A layer is C[m, nn] = A[m, k] x W[k, nn] (+ bias) (ReLU) (-> bf16), with n = mxu.n.
//   Kb = ceil(k / n) weight tiles along K, Nb = ceil(nn / n) along N (the host zero-pads K and N).
//   M is cut into Mb blocks of TM rows (the last one may be shorter; M is not padded). For each M
//   block mb, for each column tile nb, for each kb: the n x n tile W[kb, nb] goes through the MXU
//   over the block's TM rows of A's K-tile kb, the first kb overwriting the accumulator rows, the
//   others adding to them (the K order of docs/mxu.md). A (mb, nb) pair is a "group": its result
//   is one accumulator buffer of TM rows, which the vector unit turns into C rows.
//
// VMEM layout of a layer (rows):
//   A[2]    2 x TM*Kb  the A block, double buffered; K-tile kb of a block is the TM contiguous
//                      rows Abuf + kb*TM (loaded by one strided dma.ld per kb), so mxu.mm can
//                      stream it as is; with a bf16x2 A, K-tile pair j's rows at Abuf + j*rows,
//                      two bf16 a lane (one dma.ld per pair, docs/compiler.md)
//   W[R]    R x n      a ring of R = 4 weight slots
//   OUT[2]  2 x TM     output staging, double buffered
//   BIAS    Nb         the bias row (only with bias), loaded once per layer
// and the accumulators hold ACC[2] = 2 x TM rows. TM is the largest that fits both
// (2*TM <= acc_rows; 2*TM*Kb + R*n + 2*TM + Nb <= vmem_rows), then evened out over the blocks
// (m = 100 with room for 64 gives two blocks of 50, not 64 + 36), which keeps the pipeline even.
//
// Queues and semaphores (docs/chip.md: one wait and one signal per instruction; a fence adds one
// more in its queue). Every semaphore is taken by one queue only, so its takes happen in program
// order:
//   A_FULL   load  -> mxu   each K-tile's dma.ld; the block's first pass takes one per K-tile (an
//                           mxu fence before K-tile 0, the mm itself for the others); with a
//                           bf16x2 A one per K-tile pair, taken by the even K-tile's
//   A_FREE   mxu   -> load  an mxu fence after the block's last mm (every mm reading it complete);
//                           the first dma.ld of the block after next takes it. 2 initial tokens
//   W_FULL   load  -> mxu   each weight tile's dma.ld; its mxu.lw takes it
//   W_FREE   mxu   -> load  each mxu.lw (complete = its weights are in the MXU, the slot may be
//                           overwritten); the tile R later takes it. R initial tokens
//   ACC_FULL mxu   -> vec   the group's last mm; the vector op reading the accumulators takes it
//   ACC_FREE vec   -> mxu   that vector op; the first mm (overwrite) of the group 2 later takes it.
//                           2 initial tokens
//   OUT_FULL vec   -> store the group's last vector op; its dma.st takes it
//   OUT_FREE store -> vec   the dma.st; a vec fence before the group 2 later takes it. 2 tokens
//   BIAS     load  -> vec   the bias dma.ld; a vec fence before the layer's first vector op
//   LAYER    store -> load  a store fence after a layer's last store; a load fence before the next
//                           layer's first load. Everything a layer does to VMEM and the
//                           accumulators is complete before the next layer loads anything, so
//                           each layer lays out VMEM afresh.
// The initial tokens are fences at the start of the program, in the queue that takes them; the
// rest is balanced, so no count exceeds its buffer count (far below 65535).
//
// Program order. The front end dispatches in program order into bounded queues, so a wait whose
// signal comes later in program order could deadlock (the queue holding it fills and the signal is
// never fetched). The compiler therefore keeps one invariant: each wait is covered by initial
// tokens plus signals of instructions EARLIER in the program. With single-taker semaphores that
// makes the program deadlock-free at any queue depth. Within it, loads are emitted as early as the
// invariant allows (a weight tile right after the mxu.lw of the tile R before it; the first
// block's K-tiles each just ahead of the weight tile that first uses it; the next block's K-tiles
// one per weight tile once the current block's first pass is out, so their A_FULL counts follow
// the current block's and no long run of loads fills the load queue), so the load queue runs
// ahead of the MXU, and
// each group's vector ops and store are emitted one group late (after the next group's first mm),
// so a vector op waiting for its accumulators never keeps the front end from feeding the MXU.
// The MXU sequence check (every mxu.lw followed by an mxu.mm) holds: the MXU stream is lw, mm,
// lw, mm, ...
#include "compiler.h"

#include "builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>

namespace tp::compiler {

namespace {

using namespace detail;
using isa::Instr;
using isa::Op;

void check_layer(const Preset& p, size_t index, const MatmulLayer& l) {
  const std::string name = layer_name(index, l);
  if (l.m == 0 || l.k == 0 || l.n == 0)
    throw CompileError(fmt::format("{}: every dimension must be at least 1 (m={}, k={}, n={})", name, l.m, l.k, l.n));
  struct Ref {
    const char* what;
    const MatrixRef& ref;
    uint32_t rows, cols;
    uint64_t beats;
  };
  if (l.c.bf16x2 || l.b.bf16x2)
    throw CompileError(
        fmt::format("{}: {} cannot be bf16x2 (only A and W are read packed)", name, l.c.bf16x2 ? "C" : "bias"));
  if (l.w.bf16x2 && p.mxu.n % 2 != 0)
    throw CompileError(
        fmt::format("{}: W cannot be bf16x2 at n = {} (a tile's packed beats pair rows i and i + n/2)", name, p.mxu.n));
  std::vector<Ref> refs = {
      {"A", l.a, l.m, l.k, matrix_beats(p, l.a, false)},
      {"W", l.w, l.k, l.n, matrix_beats(p, l.w, true)},
      {"C", l.c, l.m, l.n, matrix_beats(p, l.c, false)},
  };
  if (l.bias) refs.push_back({"bias", l.b, 1, l.n, matrix_beats(p, l.b, false)});
  for (const auto& r : refs) {
    if (r.ref.rows != r.rows || r.ref.cols != r.cols)
      throw CompileError(
          fmt::format("{}: {} is {}x{}, the layer needs {}x{}", name, r.what, r.ref.rows, r.ref.cols, r.rows, r.cols));
    if (r.ref.beat > p.chip.hbm_beats || r.beats > p.chip.hbm_beats - r.ref.beat)
      throw CompileError(fmt::format("{}: {} at beats {}..{} runs past the end of HBM ({} beats in preset '{}')", name,
                                     r.what, r.ref.beat, r.ref.beat + r.beats - 1, p.chip.hbm_beats, p.name));
  }
  for (size_t i = 0; i < refs.size(); ++i) {
    for (size_t j = i + 1; j < refs.size(); ++j) {
      const auto& x = refs[i];
      const auto& y = refs[j];
      if (x.ref.beat < y.ref.beat + y.beats && y.ref.beat < x.ref.beat + x.beats)
        throw CompileError(fmt::format("{}: {} (beats {}..{}) and {} (beats {}..{}) overlap in HBM", name, x.what,
                                       x.ref.beat, x.ref.beat + x.beats - 1, y.what, y.ref.beat,
                                       y.ref.beat + y.beats - 1));
    }
  }
}

Tiling plan_checked(const Preset& p, size_t index, const MatmulLayer& l) {
  const uint64_t n = p.mxu.n;
  Tiling t;
  t.kb = static_cast<uint32_t>(ceil_div(l.k, n));
  t.nb = static_cast<uint32_t>(ceil_div(l.n, n));
  if (t.nb > 0xffff)  // the bias row is one dma.ld of nb beats (a 16-bit rows field)
    throw CompileError(fmt::format("{}: {} output columns are {} tiles of {}, more than one bias load takes (65535)",
                                   layer_name(index, l), l.n, t.nb, n));
  const uint64_t fixed = kWeightSlots * n + (l.bias ? t.nb : 0);
  const uint64_t per_row = 2 * uint64_t{t.kb} + 2;  // two A buffers and two output buffers
  const uint64_t by_vmem = p.chip.vmem_rows > fixed ? (p.chip.vmem_rows - fixed) / per_row : 0;
  // rows of dma and mm are 16-bit fields.
  const uint64_t tm_max = std::min({by_vmem, uint64_t{p.mxu.acc_rows} / 2, uint64_t{0xffff}});
  if (tm_max == 0) {
    throw CompileError(fmt::format(
        "{}: does not fit preset '{}' even with 1-row blocks: VMEM needs {} rows ({} weight slots of {} rows{}, "
        "2 A buffers of {} K-tiles, 2 output rows), the preset has {}; the accumulators need 2 rows, the preset has {}",
        layer_name(index, l), p.name, fixed + per_row, kWeightSlots, n,
        l.bias ? fmt::format(", {} bias rows", t.nb) : "", t.kb, p.chip.vmem_rows, p.mxu.acc_rows));
  }
  t.mb = static_cast<uint32_t>(ceil_div(l.m, tm_max));
  t.tm = static_cast<uint32_t>(ceil_div(l.m, t.mb));
  t.vmem_rows = static_cast<uint32_t>(fixed + per_row * t.tm);
  return t;
}

}  // namespace

namespace detail {

void program_start(Lines& lines, const Preset& p, const std::vector<MatmulLayer>& layers,
                   const std::vector<Tiling>& plans) {
  auto comment = [&](std::string text) { lines.push_back({std::nullopt, std::move(text), {}, {}}); };
  auto emit = [&](const Instr& i, std::string text) { lines.push_back({i, std::move(text), {}, {}}); };
  comment(fmt::format("tensorpod compiler: {} layer(s) for preset '{}' (n={}, vmem_rows={}, acc_rows={})",
                      layers.size(), p.name, p.mxu.n, p.chip.vmem_rows, p.mxu.acc_rows));
  comment("semaphores: 1 A_FULL, 2 A_FREE, 3 W_FULL, 4 W_FREE, 5 ACC_FULL, 6 ACC_FREE, 7 OUT_FULL, 8 OUT_FREE,");
  comment("            9 BIAS, 10 LAYER (the scheme is described in sw/compiler/compiler.cpp)");
  for (size_t i = 0; i < layers.size(); ++i) {
    const auto& l = layers[i];
    const auto& t = plans[i];
    comment(fmt::format("{}: A@{} W@{}{} -> C@{}{}{}; Kb={} Nb={}, {} M block(s) of {} rows, {} VMEM rows",
                        layer_name(i, l), l.a.beat, l.w.beat, l.bias ? fmt::format(" bias@{}", l.b.beat) : "", l.c.beat,
                        l.relu ? " relu" : "", l.out_bf16 ? " bf16" : "", t.kb, t.nb, t.mb, t.tm, t.vmem_rows));
  }
  comment("initial tokens: each queue owns its free buffers");
  for (const auto& t : leftover_tokens())
    for (unsigned c = 0; c < t.count; ++c)
      emit(isa::build::fence(t.unit, 0, t.sem), c == 0 ? fmt::format("{} {} free", t.count, kSemNames[t.sem]) : "");
}

}  // namespace detail

namespace {

// Builds one program; the same lines give the binary and the assembly text.
class Builder {
 public:
  explicit Builder(const Preset& p) : p_(p) {}

  Lines build(const std::vector<MatmulLayer>& layers, const std::vector<Tiling>& plans) {
    program_start(lines_, p_, layers, plans);
    for (size_t i = 0; i < layers.size(); ++i) layer(i, layers[i], plans[i], i + 1 == layers.size());
    program_end(lines_);
    return std::move(lines_);
  }

  // One layer alone (the loops form writes a short layer out: build_looped).
  Lines build_layer(size_t index, const MatmulLayer& l, const Tiling& t, bool last) {
    layer(index, l, t, last);
    return std::move(lines_);
  }

 private:
  // A load to emit once the compute stream has reached its dependency.
  struct LoadItem {
    Lines lines;
    uint64_t after_lw = 0;     // emit once this many mxu.lw of the layer are emitted
    uint64_t after_afree = 0;  // ... and this many A_FREE fences of the layer
  };

  void comment(std::string text) { lines_.push_back({std::nullopt, std::move(text), {}, {}}); }
  void emit(const Instr& i, std::string text) { lines_.push_back({i, std::move(text), {}, {}}); }

  void layer(size_t index, const MatmulLayer& l, const Tiling& t, bool last) {
    const Layout lay = layout(p_, t);
    const uint64_t n = p_.mxu.n;
    const uint64_t tiles_per_block = uint64_t{t.nb} * t.kb;
    auto block_rows = [&](uint64_t mb) { return std::min<uint64_t>(t.tm, l.m - mb * t.tm); };

    comment("");
    comment(fmt::format("{}: VMEM A[0]@{} A[1]@{} ({} rows each), W slots@{} ({} x {} rows), OUT@{},{}{}; ACC@0,{}",
                        layer_name(index, l), lay.a_buf[0], lay.a_buf[1], uint64_t{t.tm} * t.kb, lay.w_slot0,
                        kWeightSlots, n, lay.out_buf[0], lay.out_buf[1],
                        l.bias ? fmt::format(", BIAS@{}", lay.bias_buf) : "", lay.acc_buf[1]));

    // The load stream, in load-queue order, each item with the point of the compute stream after
    // which it may be emitted (see "Program order" above).
    std::vector<LoadItem> loads;
    if (index > 0) {
      loads.push_back({{{fence(Queue::load, kLayer, 0), "barrier: the previous layer's stores are complete"}}, 0, 0});
    }
    if (l.bias) {
      loads.push_back({{{dma(Op::dma_ld, lay.bias_buf, l.b.beat, t.nb, 1, 1, 0, kBias), "bias row"}}, 0, 0});
    }
    // K-tile kb of A block mb: one strided dma.ld, signalling A_FULL (one count per K-tile, so
    // the first pass over a block starts as soon as its first K-tile is in).
    // With A in bf16x2, K-tiles 2j and 2j + 1 come in one load of the block's rows, stored as
    // they are, two bf16 a lane (to rows buf + j * rows: pair after pair, so the block's rows,
    // not TM, apart), with one A_FULL count for both: the even K-tile's mm reads the low halves,
    // the odd one's (mxu.mm hi) the high halves and takes no count (the pair's load is complete
    // before the even one's mm starts, and the MXU queue runs in order). An odd Kb's last pair
    // has zero high halves. a_tile adds the load of K-tile kb, if any.
    auto a_tile = [&](Lines& out, uint64_t mb, uint64_t kb) {
      const uint64_t rows = block_rows(mb);
      const uint64_t buf = lay.a_buf[mb % 2];
      std::string text =
          fmt::format("A block {} (rows {}..{}) K-tile {} -> A[{}]", mb, mb * t.tm, mb * t.tm + rows - 1, kb, mb % 2);
      if (!l.a.bf16x2) {
        out.push_back({dma(Op::dma_ld, buf + kb * t.tm, l.a.beat + mb * t.tm * t.kb + kb, rows, 1, t.kb,
                           kb == 0 ? kAFree : 0, kAFull),
                       std::move(text)});
        return;
      }
      if (kb % 2) return;  // loaded with K-tile kb - 1
      const uint64_t pairs = ceil_div(t.kb, 2);
      const Instr ld = dma(Op::dma_ld, buf + kb / 2 * rows, l.a.beat + mb * t.tm * pairs + kb / 2, rows, 1, pairs,
                           kb == 0 ? kAFree : 0, kAFull);
      out.push_back({ld, kb + 1 < t.kb ? text + fmt::format(" and {} (bf16x2)", kb + 1) : text + " (bf16x2, alone)"});
    };
    uint64_t j = 0;  // weight tile index in the layer
    for (uint64_t mb = 0; mb < t.mb; ++mb) {
      for (uint64_t i = 0; i < tiles_per_block; ++i, ++j) {
        const uint64_t nb = i / t.kb, kb = i % t.kb;
        LoadItem item;
        item.after_lw = j >= kWeightSlots ? j - kWeightSlots + 1 : 0;
        // The first block's K-tiles go just ahead of the weight tiles that first use them, so
        // the MXU starts after one K-tile and one weight tile, not after the whole block.
        if (mb == 0 && nb == 0) a_tile(item.lines, 0, kb);
        item.lines.push_back(
            {w_load(p_, l, t.nb, lay.w_slot0 + (j % kWeightSlots) * n, l.w.beat + kb * w_kstep(p_, l, t.nb) + nb),
             fmt::format("W tile (k {}, n {}) -> slot {}", kb, nb, j % kWeightSlots)});
        // The next block's K-tiles, one per s weight tiles (a_stream_spacing) from the first
        // pass's last weight tile (a_stream_first; so its A_FULL counts come after this block's,
        // and no long run of loads fills the load queue and stalls the front end); whatever is
        // left goes with the block's last tile.
        const uint64_t first = a_stream_first(t);
        if (mb + 1 < t.mb && i >= first) {
          const uint64_t s = a_stream_spacing(t), from = ceil_div(i - first, s);
          const uint64_t upto = i + 1 == tiles_per_block ? t.kb - 1 : std::min<uint64_t>((i - first) / s, t.kb - 1);
          for (uint64_t p = from; p <= upto && p < t.kb; ++p) a_tile(item.lines, mb + 1, p);
          if (i == first) item.after_afree = mb;  // the block's first K-tile waits A_FREE of block mb - 1
        } else if (mb + 1 < t.mb && i + 1 == tiles_per_block) {  // one pass only (nb = 1)
          for (uint64_t p = 0; p < t.kb; ++p) a_tile(item.lines, mb + 1, p);
          item.after_afree = mb;
        }
        loads.push_back(std::move(item));
      }
    }

    size_t next_load = 0;
    uint64_t lw_done = 0, afree_done = 0, w_loaded = 0, a_loads = 0;
    // The K-tiles of A the emitted loads bring: one a load, or with a bf16x2 A two (an odd Kb's
    // last one).
    const auto a_loaded = [&] {
      if (!l.a.bf16x2) return a_loads;
      const uint64_t per_block = ceil_div(t.kb, 2);
      return a_loads / per_block * t.kb + std::min<uint64_t>(t.kb, 2 * (a_loads % per_block));
    };
    auto drain = [&]() {
      for (; next_load < loads.size(); ++next_load) {
        const auto& item = loads[next_load];
        if (item.after_lw > lw_done || item.after_afree > afree_done) break;
        for (const auto& line : item.lines) {
          lines_.push_back(line);
          if (line.instr->op == Op::dma_ld && line.instr->signal == kWFull) ++w_loaded;
          if (line.instr->signal == kAFull) ++a_loads;
        }
      }
    };

    bool first_epilogue = true;
    // chunked: the layer's last group (emit_epilogue).
    auto epilogue = [&](uint64_t g, bool chunked) {
      const uint64_t mb = g / t.nb, nb = g % t.nb, rows = block_rows(mb), buf = lay.out_buf[g % 2];
      if (first_epilogue && l.bias) emit(fence(Queue::vec, kBias, 0), "bias row loaded");
      first_epilogue = false;
      Epilogue e;
      e.free_text = g >= 2 ? fmt::format("OUT[{}] free: the store of group {} is complete", g % 2, g - 2)
                           : fmt::format("OUT[{}] free (initial token)", g % 2);
      e.first = vec(l.bias ? Op::vadd : Op::vmov, buf, lay.acc_buf[g % 2], rows, true);
      if (l.bias) {
        e.first.f.b = lay.bias_buf + nb;
        e.first.f.b_bcast = 1;
      }
      e.first.wait = kAccFull;
      e.first.signal = kAccFree;
      e.first_text =
          fmt::format("block {} cols tile {}: ACC[{}]{} -> OUT[{}]", mb, nb, g % 2, l.bias ? " + bias" : "", g % 2);
      if (l.relu) e.in_place.push_back({vec(Op::vrelu, buf, buf, rows, false), "relu"});
      if (l.out_bf16) e.in_place.push_back({vec(Op::vcvtbf, buf, buf, rows, false), "to bf16"});
      e.store = dma(Op::dma_st, buf, l.c.beat + mb * t.tm * t.nb + nb, rows, 1, t.nb, kOutFull, kOutFree);
      e.store_text = fmt::format("C rows {}..{}, cols tile {}", mb * t.tm, mb * t.tm + rows - 1, nb);
      emit_epilogue([&](const Instr& i, std::string text) { emit(i, std::move(text)); }, e, rows,
                    chunked ? last_epilogue_chunks(l, rows) : 1, chunked);
    };

    drain();
    j = 0;
    for (uint64_t mb = 0; mb < t.mb; ++mb) {
      const uint64_t rows = block_rows(mb);
      const uint64_t abuf = lay.a_buf[mb % 2];
      for (uint64_t i = 0; i < tiles_per_block; ++i, ++j) {
        const uint64_t nb = i / t.kb, kb = i % t.kb, g = mb * t.nb + nb;
        if (nb == 0) {  // the block's first pass takes each K-tile's A_FULL
          if (a_loaded() <= mb * t.kb + kb) throw std::logic_error("compiler: A tile used before its load was emitted");
          if (kb == 0) emit(fence(Queue::mxu, kAFull, 0), fmt::format("A block {} K-tile 0 loaded", mb));
        }
        if (w_loaded <= j) throw std::logic_error("compiler: weight tile used before its load was emitted");
        Instr lw = weights_lw(l);
        lw.f.vaddr = lay.w_slot0 + (j % kWeightSlots) * n;
        emit(lw, fmt::format("weights (k {}, n {})", kb, nb));
        ++lw_done;
        Instr mm;
        mm.op = Op::mxu_mm;
        mm.f.vaddr = abuf + (l.a.bf16x2 ? kb / 2 * rows : kb * t.tm);
        mm.f.hi = l.a.bf16x2 ? kb % 2 : 0;
        mm.f.acc = lay.acc_buf[g % 2];
        mm.f.rows = rows;
        mm.f.accumulate = kb > 0 ? 1 : 0;
        const bool pair_loaded = l.a.bf16x2 && kb % 2 == 1;  // with K-tile kb - 1, whose count an mm took
        mm.wait = kb == 0 ? kAccFree : (nb == 0 && !pair_loaded ? kAFull : 0);
        mm.signal = kb + 1 == t.kb ? kAccFull : 0;
        const std::string mm_text =
            fmt::format("A[{}] K-tile {} -> ACC[{}]{}", mb % 2, kb, g % 2, kb > 0 ? " (accumulate)" : "");
        if (mb + 1 == t.mb && i + 1 == tiles_per_block)  // the layer's last: in its epilogue's chunks
          emit_mm_chunks([&](const Instr& c, std::string text) { emit(c, std::move(text)); }, mm, mm_text, rows,
                         last_epilogue_chunks(l, rows));
        else
          emit(mm, mm_text);
        if (kb == 0 && g > 0) epilogue(g - 1, false);
        if (i + 1 == tiles_per_block) {
          emit(fence(Queue::mxu, 0, kAFree), fmt::format("A[{}] read by every mm", mb % 2));
          ++afree_done;
        }
        drain();
      }
    }
    epilogue(uint64_t{t.mb} * t.nb - 1, true);
    if (next_load != loads.size()) throw std::logic_error("compiler: loads left over at the end of a layer");
    if (!last) emit(fence(Queue::store, 0, kLayer), "barrier: this layer's stores are complete");
  }

  const Preset& p_;
  Lines lines_;
};

}  // namespace

namespace detail {

Lines unrolled_layer(const Preset& p, size_t index, const MatmulLayer& l, const Tiling& t, bool last) {
  return Builder(p).build_layer(index, l, t, last);
}

}  // namespace detail

namespace {

// Resolves the branch targets; returns the number of instructions.
uint64_t finish(Lines& lines) {
  std::map<std::string, uint64_t, std::less<>> at;
  uint64_t count = 0;
  for (const Line& l : lines) {
    if (!l.label.empty() && !at.emplace(l.label, count).second)
      throw std::logic_error(fmt::format("compiler: label {} defined twice", l.label));
    if (l.instr) ++count;
  }
  for (Line& l : lines) {
    if (l.target.empty()) continue;
    const auto it = at.find(l.target);
    if (it == at.end()) throw std::logic_error(fmt::format("compiler: branch to undefined label {}", l.target));
    l.instr->f.target = it->second;
  }
  return count;
}

struct Built {
  Lines lines;
  CompileInfo info;
};

// Checks and plans every layer, builds the program in the chosen form (automatic: both, then
// picks), resolves the branch targets and checks that it fits the instruction memory.
Built build(const Preset& p, const std::vector<MatmulLayer>& layers, const Options& opts) {
  if (layers.empty()) throw CompileError("compile: no layers");
  std::vector<Tiling> plans;
  for (size_t i = 0; i < layers.size(); ++i) {
    check_layer(p, i, layers[i]);
    plans.push_back(plan_checked(p, i, layers[i]));
  }
  Built out;
  Lines looped, unrolled;
  if (opts.form != Form::unrolled) {
    LoopCost cost;
    looped = build_looped(p, layers, plans, opts.form != Form::nests, &cost);
    out.info.layers_written_out = cost.written_out;
    out.info.looped_instructions = finish(looped);
    out.info.front_per_mxu =
        cost.mxu_cycles ? static_cast<double>(cost.front_cycles) / static_cast<double>(cost.mxu_cycles) : 0.0;
  }
  // Every tile takes at least its weight load, mxu.lw and mxu.mm unrolled: automatic does not
  // build an unrolled program that cannot fit (a large layer would take seconds and gigabytes).
  uint64_t min_unrolled = 0;
  for (const auto& t : plans) min_unrolled += 3 * uint64_t{t.mb} * t.nb * t.kb;
  if (opts.form == Form::unrolled || (opts.form == Form::automatic && min_unrolled <= p.chip.imem_words)) {
    unrolled = Builder(p).build(layers, plans);
    out.info.unrolled_instructions = finish(unrolled);
  } else if (opts.form == Form::automatic) {
    out.info.unrolled_instructions = min_unrolled;  // a lower bound, past the instruction memory
  }
  const uint64_t cap = p.chip.imem_words;
  Form form = opts.form;
  if (form == Form::automatic) {
    const uint64_t u = out.info.unrolled_instructions;
    // The loops keep the MXU as fed as the unrolled program (dual issue; docs/compiler.md), so
    // the shorter program wins.
    form = u <= cap && u <= out.info.looped_instructions ? Form::unrolled : Form::loops;
  }
  if (out.info.unrolled_instructions > cap) out.info.unrolled_instructions = 0;  // "does not fit"
  out.info.form = form;
  const bool loops = form != Form::unrolled;
  out.lines = std::move(loops ? looped : unrolled);
  out.info.instructions = loops
                              ? out.info.looped_instructions
                              : static_cast<uint64_t>(std::count_if(out.lines.begin(), out.lines.end(),
                                                                    [](const Line& l) { return l.instr.has_value(); }));
  if (out.info.instructions > cap)
    throw CompileError(fmt::format("compile: the program has {} instructions ({}), preset '{}' holds {} (imem_words)",
                                   out.info.instructions, form_name(form), p.name, cap));
  return out;
}

}  // namespace

std::string_view form_name(Form f) {
  switch (f) {
    case Form::automatic:
      return "automatic";
    case Form::loops:
      return "loops";
    case Form::unrolled:
      return "unrolled";
    case Form::nests:
      return "nests";
  }
  return "?";
}

CompileInfo compile_info(const Preset& p, const std::vector<MatmulLayer>& layers, const Options& opts) {
  return build(p, layers, opts).info;
}

uint64_t padded_beats(const Preset& p, uint32_t rows, uint32_t cols) {
  return uint64_t{rows} * ceil_div(cols, p.mxu.n);
}

uint32_t padded_rows(const Preset& p, uint32_t rows) {
  return static_cast<uint32_t>(ceil_div(rows, p.mxu.n) * p.mxu.n);
}

uint64_t bf16x2_beats(const Preset& p, uint32_t rows, uint32_t cols, bool weights) {
  const uint64_t tiles = ceil_div(cols, p.mxu.n);
  return weights ? uint64_t{padded_rows(p, rows)} / 2 * tiles : uint64_t{rows} * ceil_div(tiles, 2);
}

uint64_t matrix_beats(const Preset& p, const MatrixRef& r, bool weights) {
  if (r.bf16x2) return bf16x2_beats(p, r.rows, r.cols, weights);
  return padded_beats(p, weights ? padded_rows(p, r.rows) : r.rows, r.cols);
}

std::vector<uint32_t> pack_bf16x2(const Preset& p, uint32_t rows, uint32_t cols, std::span<const uint16_t> row_major,
                                  bool weights) {
  if (row_major.size() != uint64_t{rows} * cols)
    throw CompileError(fmt::format("pack_bf16x2: {} values for a {}x{} matrix", row_major.size(), rows, cols));
  const uint64_t n = p.mxu.n, tiles = ceil_div(cols, n);
  if (weights && n % 2 != 0)
    throw CompileError(fmt::format("pack_bf16x2: weights need an even n, the preset has {}", n));
  std::vector<uint32_t> out(bf16x2_beats(p, rows, cols, weights) * n, 0u);
  auto at = [&](uint64_t r, uint64_t c) -> uint32_t { return r < rows && c < cols ? row_major[r * cols + c] : 0u; };
  if (weights) {
    const uint64_t half = n / 2, beat_rows = uint64_t{padded_rows(p, rows)} / 2;
    for (uint64_t br = 0; br < beat_rows; ++br) {
      const uint64_t lo = br / half * n + br % half;  // row kb n + i, and its partner n/2 rows on
      for (uint64_t c = 0; c < tiles * n; ++c) out[(br * tiles) * n + c] = at(lo, c) | at(lo + half, c) << 16;
    }
  } else {
    const uint64_t pairs = ceil_div(tiles, 2);
    for (uint64_t r = 0; r < rows; ++r)
      for (uint64_t j = 0; j < pairs; ++j)
        for (uint64_t l = 0; l < n; ++l)
          out[(r * pairs + j) * n + l] = at(r, 2 * j * n + l) | at(r, (2 * j + 1) * n + l) << 16;
  }
  return out;
}

namespace {
// A, W, the bias (with one) and C one after another from HBM beat 0, each as its ref says.
void place_from_zero(const Preset& p, MatmulLayer& l) {
  uint64_t beat = 0;
  for (auto [ref, weights] : {std::pair{&l.a, false}, {&l.w, true}, {&l.b, false}, {&l.c, false}}) {
    if (ref == &l.b && !l.bias) continue;
    ref->beat = beat;
    beat += matrix_beats(p, *ref, weights);
  }
}
}  // namespace

MatmulLayer prefer_bf16x2(const Preset& p, MatmulLayer l, const Options& opts) {
  l.w.bf16x2 = p.mxu.n % 2 == 0;
  // A probe placed from beat 0 with both flags: does it compile?
  MatmulLayer probe = l;
  probe.a.bf16x2 = true;
  place_from_zero(p, probe);
  try {
    (void)build(p, {probe}, opts);
    l.a.bf16x2 = true;
  } catch (const CompileError&) {
    l.a.bf16x2 = false;
  }
  return l;
}

MatmulLayer packed_layer(const Preset& p, uint32_t m, uint32_t k, uint32_t n, bool bias) {
  MatmulLayer l;
  l.m = m;
  l.k = k;
  l.n = n;
  l.bias = bias;
  l.a = {0, m, k};
  l.w = {0, k, n};
  if (bias) l.b = {0, 1, n};
  l.c = {0, m, n};
  place_from_zero(p, l);
  return l;
}

std::vector<isa::build::Drain> leftover_tokens() {
  // program_start's initial tokens.
  return {{static_cast<unsigned>(Queue::load), kAFree, 2},
          {static_cast<unsigned>(Queue::load), kWFree, kWeightSlots},
          {static_cast<unsigned>(Queue::mxu), kAccFree, 2},
          {static_cast<unsigned>(Queue::vec), kOutFree, 2}};
}

Tiling plan(const Preset& p, const MatmulLayer& l) {
  check_layer(p, 0, l);
  return plan_checked(p, 0, l);
}

isa::Program compile(const Preset& p, const std::vector<MatmulLayer>& layers, const Options& opts, CompileInfo* info) {
  const Built b = build(p, layers, opts);
  isa::Program prog;
  prog.preset = p.name;
  prog.fingerprint = isa::fingerprint(p);
  for (const auto& line : b.lines)
    if (line.instr) prog.code.push_back(isa::encode(*line.instr));
  if (info) *info = b.info;
  return prog;
}

std::string compile_asm(const Preset& p, const std::vector<MatmulLayer>& layers, const Options& opts) {
  const Built b = build(p, layers, opts);
  std::string text = fmt::format(
      "{} form: {} ({} instructions; loops {}, unrolled {})\n", kCommentLead, form_name(b.info.form),
      b.info.instructions, b.info.looped_instructions ? fmt::format("{}", b.info.looped_instructions) : "not built",
      b.info.unrolled_instructions ? fmt::format("{}", b.info.unrolled_instructions) : "does not fit or not built");
  for (const auto& line : b.lines) {
    if (!line.label.empty()) {
      text += line.label + ":\n";
      continue;
    }
    if (!line.instr) {
      text += line.comment.empty() ? "\n" : fmt::format("{} {}\n", kCommentLead, line.comment);
      continue;
    }
    std::string ins = isa::disassemble(*line.instr);
    if (!line.target.empty()) {  // the target by its label: the disassembly ends with the number
      ins.erase(ins.rfind(' ') + 1);
      ins += line.target;
    }
    if (line.comment.empty() && line.instr->wait == 0 && line.instr->signal == 0) {
      text += ins + "\n";
      continue;
    }
    // Name the semaphores, which the instruction text gives as numbers.
    std::string sems;
    if (line.instr->wait) sems += fmt::format("wait {}", kSemNames[line.instr->wait]);
    if (line.instr->signal) sems += fmt::format("{}signal {}", sems.empty() ? "" : ", ", kSemNames[line.instr->signal]);
    const std::string sep = line.comment.empty() || sems.empty() ? "" : "; ";
    text += fmt::format("{:<72} {} {}{}{}\n", ins, kCommentLead, line.comment, sep, sems);
  }
  return text;
}

namespace {

template <class T>
std::vector<uint32_t> pack(const Preset& p, uint32_t rows, uint32_t cols, std::span<const T> row_major, bool pad_rows,
                           const char* what) {
  if (row_major.size() != uint64_t{rows} * cols)
    throw CompileError(fmt::format("{}: {} values for a {}x{} matrix", what, row_major.size(), rows, cols));
  const uint64_t n = p.mxu.n;
  const uint64_t row_words = ceil_div(cols, n) * n;
  const uint64_t out_rows = pad_rows ? padded_rows(p, rows) : rows;
  std::vector<uint32_t> out(out_rows * row_words, 0u);
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < cols; ++c) out[r * row_words + c] = row_major[r * cols + c];
  return out;
}

}  // namespace

std::vector<uint32_t> pack_bf16(const Preset& p, uint32_t rows, uint32_t cols, std::span<const uint16_t> row_major,
                                bool pad_rows) {
  return pack(p, rows, cols, row_major, pad_rows, "pack_bf16");
}

std::vector<uint32_t> pack_fp32(const Preset& p, uint32_t rows, uint32_t cols, std::span<const uint32_t> row_major,
                                bool pad_rows) {
  return pack(p, rows, cols, row_major, pad_rows, "pack_fp32");
}

std::vector<uint32_t> unpack(const Preset& p, uint32_t rows, uint32_t cols, std::span<const uint32_t> padded) {
  const uint64_t n = p.mxu.n;
  const uint64_t row_words = ceil_div(cols, n) * n;
  if (padded.size() < rows * row_words)
    throw CompileError(fmt::format("unpack: {} words for a {}x{} matrix, which needs {}", padded.size(), rows, cols,
                                   rows * row_words));
  std::vector<uint32_t> out(uint64_t{rows} * cols);
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < cols; ++c) out[r * cols + c] = padded[r * row_words + c];
  return out;
}

}  // namespace tp::compiler
