// Training a small MLP data parallel (train.h, docs/compiler.md "Training").
#include "train.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <random>

#include "collectives.h"
#include "compiler.h"
#include "fp.h"
#include "instr_build.h"
#include "segments.h"
#include "vpu_ops.h"

namespace tp::driver {

namespace {

using compiler::MatmulLayer;
using isa::Instr;
using isa::Op;

using seg::ceil_div;

uint32_t f32(float f) { return std::bit_cast<uint32_t>(f); }

std::vector<uint16_t> to_bf16(const std::vector<uint32_t>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<uint16_t>(golden::vpu_lane(Op::vcvtbf, v[i], 0, 0, 0));
  return out;
}
std::vector<uint16_t> low16(const std::vector<uint32_t>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<uint16_t>(v[i]);
  return out;
}

// The problem and its initial state, drawn from the seed: inputs x (B x K bf16), the teacher's
// outputs t (B x N fp32), the initial masters W1 (K x H), b1, W2 (H x N), b2 (fp32).
struct Problem {
  std::vector<uint16_t> x;
  std::vector<uint32_t> t, w1, b1, w2, b2;
};

// Uniform in [-a, a], as fp32 bits.
uint32_t uniform(std::mt19937_64& rng, float a) {
  return f32(static_cast<float>((static_cast<double>(rng() >> 11) / 9007199254740992.0 * 2 - 1) * a));
}

Problem problem(const Preset& p, const TrainSpec& s) {
  std::mt19937_64 rng(s.seed);
  Problem pr;
  pr.x.resize(uint64_t{s.batch} * s.in);
  for (auto& v : pr.x) v = static_cast<uint16_t>(golden::vpu_lane(Op::vcvtbf, uniform(rng, 1.0f), 0, 0, 0));
  // The teacher: a fixed random network of the same shape (its weights at the scale that keeps
  // activations near 1), evaluated with the chip's own arithmetic.
  auto layer_init = [&](uint32_t k, uint32_t n, float scale) {
    std::vector<uint32_t> w(uint64_t{k} * n);
    for (auto& v : w) v = uniform(rng, scale / std::sqrt(static_cast<float>(k)));
    return w;
  };
  auto bias_init = [&](uint32_t n, float a) {
    std::vector<uint32_t> b(n);
    for (auto& v : b) v = uniform(rng, a);
    return b;
  };
  const auto tw1 = layer_init(s.in, s.hidden, 2.0f), tb1 = bias_init(s.hidden, 0.1f);
  const auto tw2 = layer_init(s.hidden, s.out, 2.0f), tb2 = bias_init(s.out, 0.1f);
  const auto th = reference_layer(p, s.batch, s.in, s.hidden, pr.x, to_bf16(tw1), tb1, true, true);
  pr.t = reference_layer(p, s.batch, s.hidden, s.out, low16(th), to_bf16(tw2), tb2, false, false);
  // The student starts elsewhere.
  pr.w1 = layer_init(s.in, s.hidden, 1.0f);
  pr.b1 = std::vector<uint32_t>(s.hidden, 0u);
  pr.w2 = layer_init(s.hidden, s.out, 1.0f);
  pr.b2 = std::vector<uint32_t>(s.out, 0u);
  return pr;
}

void check_spec(const Preset& p, const TrainSpec& s, unsigned chips) {
  const std::string what = train_name(s);
  if (s.batch == 0 || s.in == 0 || s.hidden == 0 || s.out == 0 || s.steps == 0)
    throw DriverError(fmt::format("{}: every size and the steps must be at least 1", what));
  if (s.batch % chips != 0)
    throw DriverError(fmt::format("{}: the batch of {} does not divide over {} chips", what, s.batch, chips));
  if (!(s.lr > 0) || s.lr > 10) throw DriverError(fmt::format("{}: the learning rate must be in (0, 10]", what));
  if (s.steps > 100000) throw DriverError(fmt::format("{}: at most 100000 steps", what));
  // The flat vector segments hold 5 buffers of a matrix's beats (B/chips x max(N, H) beats).
  const uint64_t rows = uint64_t{s.batch / chips} * ceil_div(std::max(s.hidden, s.out), p.mxu.n);
  if (5 * rows + 1 > seg::data_vmem(p) || s.batch / chips > seg::data_vmem(p))
    throw DriverError(fmt::format("{}: {} rows per vector buffer do not fit the VMEM of preset '{}' ({} rows)", what,
                                  rows, p.name, p.chip.vmem_rows));
}

// The per-chip shapes and the HBM layout (the same on every chip).
struct Layout {
  uint32_t bc = 0, n = 0;                   // rows per chip, lanes
  uint64_t kb = 0, hb = 0, nb = 0, bb = 0;  // beats per row of K, H, N, Bc columns
  uint64_t ident = 0, zero = 0, x = 0, t = 0, xt = 0;
  uint64_t w1m = 0, w1b = 0, b1 = 0, w2m = 0, w2b = 0, b2 = 0;
  uint64_t h = 0, y = 0, dy = 0, dyb = 0, ht = 0, w2t = 0, dh = 0, dz = 0, dzb = 0;
  uint64_t g = 0, g_dw1 = 0, g_db1 = 0, g_dw2 = 0, g_db2 = 0, g_rows = 0;
  uint64_t elog = 0, e_rows = 0;  // per step: e (bc x nb beats)
  uint64_t end = 0;
};

Layout layout(const Preset& p, const TrainSpec& s, unsigned chips) {
  Layout l;
  l.n = p.mxu.n;
  l.bc = s.batch / chips;
  l.kb = ceil_div(s.in, l.n);
  l.hb = ceil_div(s.hidden, l.n);
  l.nb = ceil_div(s.out, l.n);
  l.bb = ceil_div(l.bc, l.n);
  const uint64_t kp = compiler::padded_rows(p, s.in), hp = compiler::padded_rows(p, s.hidden),
                 np = compiler::padded_rows(p, s.out), bp = compiler::padded_rows(p, l.bc);
  uint64_t at = 0;
  auto alloc = [&](uint64_t beats) {
    const uint64_t a = at;
    at += std::max<uint64_t>(beats, 1);
    return a;
  };
  l.ident = alloc(l.n);
  l.zero = alloc(1);
  l.x = alloc(bp * l.kb);
  l.t = alloc(uint64_t{l.bc} * l.nb);
  l.xt = alloc(kp * l.bb);
  l.w1m = alloc(kp * l.hb);
  l.w1b = alloc(kp * l.hb);
  l.b1 = alloc(l.hb);
  l.w2m = alloc(hp * l.nb);
  l.w2b = alloc(hp * l.nb);
  l.b2 = alloc(l.nb);
  l.h = alloc(bp * l.hb);
  l.y = alloc(uint64_t{l.bc} * l.nb);
  l.dy = alloc(uint64_t{l.bc} * l.nb);
  l.dyb = alloc(bp * l.nb);
  l.ht = alloc(hp * l.bb);
  l.w2t = alloc(np * l.hb);
  l.dh = alloc(uint64_t{l.bc} * l.hb);
  l.dz = alloc(uint64_t{l.bc} * l.hb);
  l.dzb = alloc(bp * l.hb);
  // The gradients, one block for the all-reduce, in the masters' layouts.
  l.g = at;
  l.g_dw1 = alloc(kp * l.hb);
  l.g_db1 = alloc(l.hb);
  l.g_dw2 = alloc(hp * l.nb);
  l.g_db2 = alloc(l.nb);
  l.g_rows = std::max<uint64_t>(at - l.g, chips);
  at = l.g + l.g_rows;
  l.e_rows = uint64_t{l.bc} * l.nb;
  l.elog = alloc(l.e_rows * s.steps);
  l.end = at;
  if (l.end > p.chip.hbm_beats)
    throw DriverError(
        fmt::format("{}: needs {} HBM beats, preset '{}' has {}", train_name(s), l.end, p.chip.hbm_beats, p.name));
  return l;
}

// A flat vector segment over `rows` beats.
using Flat = seg::Flat;

}  // namespace

std::string train_name(const TrainSpec& s) {
  return fmt::format("mlp {}x{}x{}x{}, {} steps, lr {}", s.batch, s.in, s.hidden, s.out, s.steps, s.lr);
}

// ---- the host's mirror ------------------------------------------------------------------------

namespace {

// A weight matrix (rows padded to a multiple of n) or a bias row (not padded) as padded words.
std::vector<uint32_t> pad_words(const Preset& p, uint32_t rows, uint32_t cols, const std::vector<uint32_t>& m,
                                bool weight) {
  return compiler::pack_fp32(p, rows, cols, m, weight);
}

// The gradient block's all-reduce, as the program runs it and the reference mirrors it: chunks
// of rows [r0, r0 + rows) of the block, each the torus where it fits, else the ring. With
// overlap (and every part at least a row per chip), first the dW2 and db2 rows (ready before
// dW1's matmul) in chunks that fit half of VMEM, the first of them overlapped with that matmul,
// then the dW1 and db1 rows; otherwise the whole block after the gradients.
struct GradChunk {
  CollectivePlan plan;
  bool overlapped = false;
};
std::vector<GradChunk> grad_chunks(const Preset& p, const Layout& l, unsigned w, unsigned h, bool overlap) {
  const unsigned chips = w * h;
  std::vector<GradChunk> out;
  auto add = [&](const Preset& cap, uint64_t first, uint64_t rows, bool overlap_first) {
    for (const auto& [r0, rn] : seg::reduce_chunks(cap, rows, chips)) {
      GradChunk c;
      c.plan.kind = Collective::all_reduce;
      c.plan.w = w;
      c.plan.h = h;
      c.plan.lanes = l.n;
      c.plan.rows = rn;
      c.plan.in_beat = c.plan.out_beat = l.g + first + r0;
      torus_if_it_fits(p, c.plan);
      c.overlapped = overlap_first && out.empty();
      out.push_back(c);
    }
  };
  if (chips < 2) return out;
  add(p, 0, l.g_rows, false);
  const uint64_t late = l.g_dw2 - l.g;  // dW1, db1: rows [0, late); dW2, db2: [late, g_rows)
  if (!overlap || late < chips || l.g_rows - late < chips) return out;
  // Split only where no chunk falls back from the torus to the ring (a ring of a few rows on many
  // chips costs more than the overlap saves: measured on 4x4, 4,822 -> 5,467 cycles per step).
  const Algorithm whole = out.front().plan.algorithm;
  std::vector<GradChunk> keep;
  keep.swap(out);
  Preset half = p;
  half.chip.vmem_rows = seg::data_vmem(p) / 2 + 1;
  add(half, late, l.g_rows - late, true);
  add(p, 0, late, false);
  for (const GradChunk& c : out)
    if (c.plan.algorithm != whole) return keep;
  return out;
}

}  // namespace

TrainResult train_reference(const Preset& p, const TrainSpec& s, unsigned w, unsigned h) {
  const unsigned chips = w * h;
  check_spec(p, s, chips);
  const Layout l = layout(p, s, chips);
  const Problem pb = problem(p, s);
  const uint32_t K = s.in, H = s.hidden, N = s.out, B = s.batch, bc = l.bc;
  const uint32_t scale = f32(2.0f / static_cast<float>(uint64_t{B} * N)), lr = f32(s.lr);
  TrainResult r;
  std::vector<uint32_t> w1 = pb.w1, b1 = pb.b1, w2 = pb.w2, b2 = pb.b2;
  // x^T per chip, once.
  std::vector<std::vector<uint16_t>> xs(chips), xts(chips);
  for (unsigned c = 0; c < chips; ++c) {
    xs[c].assign(pb.x.begin() + static_cast<std::ptrdiff_t>(uint64_t{c} * bc * K),
                 pb.x.begin() + static_cast<std::ptrdiff_t>(uint64_t{c + 1} * bc * K));
    xts[c] = seg::transpose_ref(l.n, bc, K, xs[c]);
  }
  // The all-reduce's chunks and algorithms, as the program runs them.
  const auto chunks = grad_chunks(p, l, w, h, s.overlap);
  for (unsigned step = 0; step < s.steps; ++step) {
    const auto w1b = to_bf16(w1), w2b = to_bf16(w2);
    const auto w2t = seg::transpose_ref(l.n, H, N, w2b);
    std::vector<std::vector<uint32_t>> blocks(chips);
    double loss = 0;
    for (unsigned c = 0; c < chips; ++c) {
      const auto hh = reference_layer(p, bc, K, H, xs[c], w1b, b1, true, true);
      const auto hb = low16(hh);
      const auto y = reference_layer(p, bc, H, N, hb, w2b, b2, false, false);
      std::vector<uint32_t> e(y.size()), dy(y.size());
      const uint32_t* t = &pb.t[uint64_t{c} * bc * N];
      for (size_t i = 0; i < y.size(); ++i) {
        e[i] = golden::vpu_lane(Op::vsub, y[i], t[i], 0, 0);
        dy[i] = golden::vpu_lane(Op::vscale, e[i], 0, 0, scale);
        const double d = golden::fp32_value(e[i]);
        loss += d * d;
      }
      const auto dyb = to_bf16(dy);
      const auto ht = seg::transpose_ref(l.n, bc, H, hb);
      const auto dw2 = reference_layer(p, H, bc, N, ht, dyb, {}, false, false);
      const auto dh = reference_layer(p, bc, N, H, dyb, w2t, {}, false, false);
      std::vector<uint32_t> dz(dh.size());
      for (size_t i = 0; i < dh.size(); ++i) dz[i] = golden::vpu_lane(Op::vsel, dh[i], 0u, hb[i], 0);
      const auto dw1 = reference_layer(p, K, bc, H, xts[c], to_bf16(dz), {}, false, false);
      const auto db1 = seg::colsum_ref(bc, H, dz), db2 = seg::colsum_ref(bc, N, dy);
      // The block: dW1, db1, dW2, db2 in their padded layouts, then zeros to g_rows.
      auto& g = blocks[c];
      for (const auto& part : {pad_words(p, K, H, dw1, true), pad_words(p, 1, H, db1, false),
                               pad_words(p, H, N, dw2, true), pad_words(p, 1, N, db2, false)})
        g.insert(g.end(), part.begin(), part.end());
      g.resize(l.g_rows * l.n, 0u);
    }
    r.loss.push_back(loss / (static_cast<double>(B) * N));
    std::vector<uint32_t> sum = blocks[0];
    for (const GradChunk& ch : chunks) {
      const uint64_t r0 = ch.plan.in_beat - l.g, rn = ch.plan.rows;
      std::vector<std::vector<uint32_t>> in(chips);
      for (unsigned c = 0; c < chips; ++c)
        in[c].assign(blocks[c].begin() + static_cast<std::ptrdiff_t>(r0 * l.n),
                     blocks[c].begin() + static_cast<std::ptrdiff_t>((r0 + rn) * l.n));
      const auto red = collective_reference(ch.plan, in);
      std::copy(red[0].begin(), red[0].end(), sum.begin() + static_cast<std::ptrdiff_t>(r0 * l.n));
    }
    // The update, on the padded words, then back to row-major.
    auto update = [&](std::vector<uint32_t>& m, uint32_t rows, uint32_t cols, uint64_t g_off, bool weight) {
      auto pm = pad_words(p, rows, cols, m, weight);
      for (size_t i = 0; i < pm.size(); ++i)
        pm[i] = golden::vpu_lane(Op::vsub, pm[i], golden::vpu_lane(Op::vscale, sum[g_off * l.n + i], 0, 0, lr), 0, 0);
      m = compiler::unpack(p, rows, cols, pm);
    };
    update(w1, K, H, l.g_dw1 - l.g, true);
    update(b1, 1, H, l.g_db1 - l.g, false);
    update(w2, H, N, l.g_dw2 - l.g, true);
    update(b2, 1, N, l.g_db2 - l.g, false);
  }
  r.w1 = w1;
  r.b1 = b1;
  r.w2 = w2;
  r.b2 = b2;
  return r;
}

// ---- the chip programs ------------------------------------------------------------------------

namespace {

constexpr unsigned kStepReg = 1, kElogReg = 2;

std::vector<Instr> chip_program(const Preset& p, const TrainSpec& s, const Layout& l, unsigned w, unsigned h,
                                unsigned k) {
  Preset dp = p;
  dp.chip.vmem_rows = seg::data_vmem(p);
  const uint32_t K = s.in, H = s.hidden, N = s.out, bc = l.bc;
  std::vector<Instr> code;
  auto add = [&](const std::vector<Instr>& seg) { code.insert(code.end(), seg.begin(), seg.end()); };
  auto compute = [&](const std::vector<MatmulLayer>& layers) {
    add(seg::compute(dp, layers, code.size(), compiler::Form::unrolled));
  };
  isa::build::seg_program_start(code);
  // x^T once.
  add(seg::transpose(p, l.x, bc, K, l.xt, l.ident));
  Instr li;
  li.op = Op::li;
  li.f.rd = kStepReg;
  li.f.simm = s.steps;
  code.push_back(li);
  li.f.rd = kElogReg;
  li.f.simm = 0;
  code.push_back(li);
  const uint64_t body = code.size();
  // Forward.
  {
    MatmulLayer l1, l2;
    l1.m = bc, l1.k = K, l1.n = H, l1.bias = l1.relu = l1.out_bf16 = true;
    l1.a = {l.x, bc, K}, l1.w = {l.w1b, K, H}, l1.b = {l.b1, 1, H}, l1.c = {l.h, bc, H};
    l2.m = bc, l2.k = H, l2.n = N, l2.bias = true;
    l2.a = l1.c, l2.w = {l.w2b, H, N}, l2.b = {l.b2, 1, N}, l2.c = {l.y, bc, N};
    compute({l1, l2});
  }
  // The loss's errors and dy: e = y - t (kept per step), dy = e * 2/(B N), dyb = bf16(dy).
  {
    const uint64_t R = l.e_rows;
    Flat f;
    f.loads = {{0, l.y, 0}, {R, l.t, 0}};
    Instr sub = isa::build::vec(Op::vsub, 2 * R, 0, 0, 0, 0);
    sub.f.b = R;
    Instr sc = isa::build::vec(Op::vscale, 3 * R, 2 * R, 0, 0, 0);
    sc.f.imm = f32(2.0f / static_cast<float>(uint64_t{s.batch} * N));
    f.ops = {sub, sc, isa::build::vec(Op::vcvtbf, 4 * R, 3 * R, 0, 0, 0)};
    f.stores = {{2 * R, l.elog, kElogReg}, {3 * R, l.dy, 0}, {4 * R, l.dyb, 0}};
    add(seg::flat(p, f, R));
  }
  // Transposes: h^T and W2^T.
  add(seg::transpose(p, l.h, bc, H, l.ht, l.ident));
  add(seg::transpose(p, l.w2b, H, N, l.w2t, l.ident));
  // dW2 = h^T dyb and dh = dyb W2^T.
  {
    MatmulLayer m1, m2;
    m1.m = H, m1.k = bc, m1.n = N;
    m1.a = {l.ht, H, bc}, m1.w = {l.dyb, bc, N}, m1.c = {l.g_dw2, H, N};
    m2.m = bc, m2.k = N, m2.n = H;
    m2.a = {l.dyb, bc, N}, m2.w = {l.w2t, N, H}, m2.c = {l.dh, bc, H};
    compute({m1, m2});
  }
  // The all-reduce's chunks; when the first overlaps dW1's matmul, db2 (the column sums of dy) is
  // summed here already, with dW2 the rows it starts with. (Only then: moved for the 1x1 slice
  // too, it cost 553 cycles a step there, measured on the RTL at B = 64.)
  const auto chunks = s.allreduce ? grad_chunks(p, l, w, h, s.overlap) : std::vector<GradChunk>{};
  const bool overlap = !chunks.empty() && chunks.front().overlapped;
  if (overlap) add(seg::colsum(p, l.dy, bc, static_cast<uint32_t>(l.nb), l.g_db2));
  // dz = h != 0 ? dh : 0 (the ReLU mask), dzb = bf16(dz).
  {
    const uint64_t R = uint64_t{bc} * l.hb;
    Flat f;
    f.loads = {{0, l.dh, 0}, {R, l.h, 0}, {2 * R, l.zero, 1}};
    Instr sel = isa::build::vec(Op::vsel, 3 * R, 0, 0, 0, 0);
    sel.f.b = 2 * R;
    sel.f.b_bcast = 1;
    sel.f.imm = R;  // the mask rows: h
    f.ops = {sel, isa::build::vec(Op::vcvtbf, 4 * R, 3 * R, 0, 0, 0)};
    f.stores = {{3 * R, l.dz, 0}, {4 * R, l.dzb, 0}};
    add(seg::flat(p, f, R));
  }
  // dW1 = x^T dzb, beside the first chunk of the all-reduce when it overlaps (grad_chunks); the
  // bias gradients; the rest of the all-reduce.
  {
    MatmulLayer m3;
    m3.m = K, m3.k = bc, m3.n = H;
    m3.a = {l.xt, K, bc}, m3.w = {l.dzb, bc, H}, m3.c = {l.g_dw1, K, H};
    // When the matmul does not fit the VMEM the collective leaves it (the chunk was sized by the
    // ring's buffers; the torus's round up), the chunk runs after it instead: the same sums, as
    // every chip has the same shapes and so decides the same.
    bool beside = overlap;
    if (overlap) {
      try {
        add(seg::overlapped(p, {m3}, chunks.front().plan, k, code.size(), compiler::Form::unrolled));
      } catch (const compiler::CompileError&) {
        beside = false;
      }
    }
    if (!beside) compute({m3});
    add(seg::colsum(p, l.dz, bc, static_cast<uint32_t>(l.hb), l.g_db1));
    if (!overlap) add(seg::colsum(p, l.dy, bc, static_cast<uint32_t>(l.nb), l.g_db2));
    for (const GradChunk& ch : chunks)
      if (!ch.overlapped || !beside) add(collective_segment(p, ch.plan, k));
  }
  // The update: M -= lr * G, W = bf16(M) for the weights.
  auto update = [&](uint64_t m, uint64_t g, uint64_t rows, std::optional<uint64_t> wb) {
    const uint64_t cap = seg::data_vmem(p) / 3;
    for (uint64_t r0 = 0; r0 < rows; r0 += cap) {
      const uint64_t R = std::min(cap, rows - r0);
      Flat f;
      f.loads = {{0, m + r0, 0}, {R, g + r0, 0}};
      Instr sc = isa::build::vec(Op::vscale, R, R, 0, 0, 0);
      sc.f.imm = f32(s.lr);
      Instr sub = isa::build::vec(Op::vsub, 0, 0, 0, 0, 0);
      sub.f.b = R;
      f.ops = {sc, sub};
      f.stores = {{0, m + r0, 0}};
      if (wb) {
        f.ops.push_back(isa::build::vec(Op::vcvtbf, 2 * R, 0, 0, 0, 0));
        f.stores.push_back({2 * R, *wb + r0, 0});
      }
      add(seg::flat(p, f, R));
    }
  };
  update(l.w1m, l.g_dw1, compiler::padded_rows(p, K) * l.hb, l.w1b);
  update(l.b1, l.g_db1, l.hb, std::nullopt);
  update(l.w2m, l.g_dw2, compiler::padded_rows(p, H) * l.nb, l.w2b);
  update(l.b2, l.g_db2, l.nb, std::nullopt);
  // The next step.
  Instr addi;
  addi.op = Op::addi;
  addi.f.rd = kElogReg;
  addi.f.rs1 = kElogReg;
  addi.f.simm = static_cast<int64_t>(l.e_rows);
  code.push_back(addi);
  Instr loop;
  loop.op = Op::loop;
  loop.f.rd = kStepReg;
  loop.f.target = body;
  code.push_back(loop);
  code.push_back(isa::build::halt());
  return code;
}

}  // namespace

TrainRun run_training(Slice& slice, const TrainSpec& s, uint64_t timeout) {
  const Preset& p = slice.preset();
  const unsigned w = slice.shape().w, h = slice.shape().h, chips = w * h;
  check_spec(p, s, chips);
  const Layout l = layout(p, s, chips);
  TrainRun run;
  run.what = fmt::format("{} on a {}x{} slice", train_name(s), w, h);
  // Programs first: everything that can be refused is refused before any simulation.
  std::vector<isa::Program> progs;
  for (unsigned k = 0; k < chips; ++k) {
    std::vector<Instr> code;
    try {
      code = chip_program(p, s, l, w, h, k);
    } catch (const compiler::CompileError& e) {
      throw DriverError(fmt::format("{}: {}", run.what, e.what()));
    }
    if (code.size() > p.chip.imem_words)
      throw DriverError(fmt::format("{}: a step's program has {} instructions, preset '{}' holds {}", run.what,
                                    code.size(), p.name, p.chip.imem_words));
    progs.push_back(isa::build::program(p, code));
    run.instructions = std::max<uint64_t>(run.instructions, code.size());
  }
  const Problem pb = problem(p, s);
  const TrainResult want = s.allreduce ? train_reference(p, s, w, h) : TrainResult{};
  const uint32_t K = s.in, H = s.hidden, N = s.out, bc = l.bc;
  // The host's writes: constants, the chip's rows of x and t, the initial weights.
  std::vector<uint32_t> ident(uint64_t{l.n} * l.n, 0u);
  for (unsigned i = 0; i < l.n; ++i) ident[uint64_t{i} * l.n + i] = 0x3f80u;
  const auto w1p = compiler::pack_fp32(p, K, H, pb.w1, true), w2p = compiler::pack_fp32(p, H, N, pb.w2, true);
  auto bf16_words = [](const std::vector<uint32_t>& m) {
    std::vector<uint32_t> out(m.size());
    for (size_t i = 0; i < m.size(); ++i) out[i] = golden::vpu_lane(Op::vcvtbf, m[i], 0, 0, 0);
    return out;
  };
  for (unsigned k = 0; k < chips; ++k) {
    const unsigned i = k % w, j = k / w;
    slice.write(i, j, 0, std::vector<uint32_t>(l.end * l.n, 0u));  // every buffer (and padding) zero
    slice.write(i, j, l.ident, ident);
    std::vector<uint16_t> xr(pb.x.begin() + static_cast<std::ptrdiff_t>(uint64_t{k} * bc * K),
                             pb.x.begin() + static_cast<std::ptrdiff_t>(uint64_t{k + 1} * bc * K));
    slice.write(i, j, l.x, compiler::pack_bf16(p, bc, K, xr));
    std::vector<uint32_t> tr(pb.t.begin() + static_cast<std::ptrdiff_t>(uint64_t{k} * bc * N),
                             pb.t.begin() + static_cast<std::ptrdiff_t>(uint64_t{k + 1} * bc * N));
    slice.write(i, j, l.t, compiler::pack_fp32(p, bc, N, tr));
    slice.write(i, j, l.w1m, w1p);
    slice.write(i, j, l.w1b, bf16_words(w1p));
    slice.write(i, j, l.b1, compiler::pack_fp32(p, 1, H, pb.b1));
    slice.write(i, j, l.w2m, w2p);
    slice.write(i, j, l.w2b, bf16_words(w2p));
    slice.write(i, j, l.b2, compiler::pack_fp32(p, 1, N, pb.b2));
    slice.load(i, j, progs[k]);
  }
  if (timeout == 0) {
    // Each step: every MXU row pass, every beat moved, every instruction, with a wide margin.
    const uint64_t step =
        20 * (run.instructions + uint64_t{bc} * (l.kb + l.hb + l.nb) * (l.kb + l.hb + l.nb) + l.g_rows * 8 * chips);
    timeout = 1'000'000 + step * s.steps;
  }
  run.status = slice.run(timeout);
  run.cycles_per_step = static_cast<double>(run.status.cycles) / s.steps;
  if (!run.status.ok()) return run;
  // Read back: every chip's errors (the loss) and final weights.
  std::vector<double> loss(s.steps, 0.0);
  double mxu = 0;
  for (unsigned k = 0; k < chips; ++k) {
    const unsigned i = k % w, j = k / w;
    const auto e = slice.read(i, j, l.elog, l.e_rows * s.steps);
    for (unsigned st = 0; st < s.steps; ++st) {
      const auto es =
          compiler::unpack(p, bc, N,
                           std::vector<uint32_t>(e.begin() + static_cast<std::ptrdiff_t>(st * l.e_rows * l.n),
                                                 e.begin() + static_cast<std::ptrdiff_t>((st + 1) * l.e_rows * l.n)));
      for (const uint32_t v : es) {
        const double d = golden::fp32_value(v);
        loss[st] += d * d;
      }
    }
    auto rd = [&](uint64_t beat, uint32_t rows, uint32_t cols) {
      return compiler::unpack(p, rows, cols, slice.read(i, j, beat, compiler::padded_beats(p, rows, cols)));
    };
    const auto w1 = rd(l.w1m, K, H), b1 = rd(l.b1, 1, H), w2 = rd(l.w2m, H, N), b2 = rd(l.b2, 1, N);
    auto cmp = [&](const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
      for (size_t x = 0; x < a.size(); ++x) run.mismatches += a[x] != b[x];
    };
    if (s.allreduce) {
      cmp(w1, want.w1);
      cmp(b1, want.b1);
      cmp(w2, want.w2);
      cmp(b2, want.b2);
    }
    if (k == 0) run.result = {{}, w1, b1, w2, b2};
    const auto c = slice.counters(i, j);
    const auto cyc = c.count(std::string(kCycles)) ? c.at(std::string(kCycles)) : 0;
    if (cyc && c.count(std::string(kMxuRows)))
      mxu += static_cast<double>(c.at(std::string(kMxuRows))) / static_cast<double>(cyc) / chips;
  }
  for (auto& v : loss) v /= static_cast<double>(s.batch) * N;
  run.result.loss = loss;
  if (s.allreduce)
    for (unsigned st = 0; st < s.steps; ++st) run.mismatches += loss[st] != want.loss[st];
  run.mxu_utilization = mxu;
  run.checked = s.allreduce;
  run.pass = s.allreduce && run.mismatches == 0;
  return run;
}

double golden_collective_fraction(const PodSpec& pod, const SliceShape& shape, const TrainSpec& s) {
  if (shape.w * shape.h == 1) return 0;
  TrainSpec without = s;
  without.allreduce = false;
  auto a = Slice::open(pod, shape, Backend::golden);
  const auto with_ar = run_training(*a, s);
  auto b = Slice::open(pod, shape, Backend::golden);
  const auto no_ar = run_training(*b, without);
  if (!with_ar.status.ok() || !no_ar.status.ok() || with_ar.status.cycles == 0) return 0;
  return 1.0 - static_cast<double>(no_ar.status.cycles) / static_cast<double>(with_ar.status.cycles);
}

}  // namespace tp::driver
