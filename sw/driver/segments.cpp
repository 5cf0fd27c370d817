// Segments of chip programs (segments.h).
#include "segments.h"

#include <fmt/format.h>

#include <algorithm>

#include "driver.h"
#include "fp.h"
#include "instr_build.h"
#include "mxu_model.h"
#include "vpu_ops.h"

namespace tp::driver::seg {

namespace {

using compiler::MatmulLayer;
using isa::Instr;
using isa::Op;

}  // namespace

uint32_t data_vmem(const Preset& p) { return p.chip.vmem_rows - 1; }

// Row ranges (first, rows) of an all-reduce over `rows` rows on p chips, each fitting VMEM.
std::vector<std::pair<uint64_t, uint32_t>> reduce_chunks(const Preset& pr, uint64_t rows, unsigned p) {
  // Layout: input R, p - 1 receive buffers of ceil(R / p), output R (collectives.cpp).
  uint64_t cap = std::min<uint64_t>(0x7fff, data_vmem(pr));
  while (cap > 0 && 2 * cap + (p - 1) * ceil_div(cap, p) > data_vmem(pr)) --cap;
  if (cap < 2 * uint64_t{p})
    throw DriverError(fmt::format("an all-reduce over {} chips does not fit the {} VMEM rows of preset '{}'", p,
                                  pr.chip.vmem_rows, pr.name));
  const uint64_t count = ceil_div(rows, cap);
  std::vector<std::pair<uint64_t, uint32_t>> out;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t a = i * rows / count, b = (i + 1) * rows / count;
    out.push_back({a, static_cast<uint32_t>(b - a)});
  }
  return out;
}

// The reference of the vector epilogue on one element: + bias, ReLU, the bf16 rounding.
uint32_t epilogue_ref(uint32_t v, const uint32_t* bias, bool relu, bool bf16) {
  if (bias) v = golden::fp32_add(v, *bias);
  if (relu) v = reference_relu(v);
  if (bf16) v = golden::fp32_to_bf16(v);
  return v;
}

// The epilogue segment: from S (m x nb beats, fp32) the beats [c0, c0 + cw) of every row, + the
// bias row's beat (bias: nb beats at bias_beat), ReLU, bf16, to dst (m x cw beats). Column beat
// by column beat (a strided dma.ld of one beat per row), in chunks of rows, double buffered.
std::vector<Instr> epilogue(const Preset& pr, uint64_t s_beat, uint32_t m, uint32_t nb,
                            std::optional<uint64_t> bias_beat, bool relu, bool bf16, uint64_t dst_beat, uint32_t c0,
                            uint32_t cw) {
  constexpr unsigned kFull = 1, kDone = 2, kFree = 3, kBias = 4;
  constexpr unsigned kLoad = isa::build::kUnitLoad, kVec = isa::build::kUnitVec;
  const uint64_t base = bias_beat ? nb : 0;
  const uint64_t mc = base + 2 > data_vmem(pr) ? 0 : std::min<uint64_t>({m, (data_vmem(pr) - base) / 2, 0x7fff});
  if (mc == 0)
    throw DriverError(fmt::format("the epilogue of a {}-beat row does not fit the VMEM of preset '{}'", nb, pr.name));
  std::vector<Instr> code;
  isa::build::seg_begin(code);
  code.push_back(isa::build::fence(kLoad, 0, kFree));
  code.push_back(isa::build::fence(kLoad, 0, kFree));
  if (bias_beat) {
    code.push_back(isa::build::dma(Op::dma_ld, 0, *bias_beat, nb, 1, 1, 0, kBias));
    code.push_back(isa::build::fence(kVec, kBias, 0));
  }
  unsigned t = 0;
  for (uint32_t c = c0; c < c0 + cw; ++c) {
    for (uint64_t r0 = 0; r0 < m; r0 += mc, ++t) {
      const uint64_t rows = std::min<uint64_t>(mc, m - r0), buf = base + (t % 2) * mc;
      code.push_back(isa::build::dma(Op::dma_ld, buf, s_beat + r0 * nb + c, rows, 1, nb, kFree, kFull));
      std::vector<Instr> ops;
      if (bias_beat) {
        Instr a = isa::build::vec(Op::vadd, buf, buf, rows, 0, 0);
        a.f.b = c;
        a.f.b_bcast = 1;
        ops.push_back(a);
      }
      if (relu) ops.push_back(isa::build::vec(Op::vrelu, buf, buf, rows, 0, 0));
      if (bf16) ops.push_back(isa::build::vec(Op::vcvtbf, buf, buf, rows, 0, 0));
      if (ops.empty()) ops.push_back(isa::build::vec(Op::vmov, buf, buf, rows, 0, 0));
      ops.front().wait = kFull;
      ops.back().signal = kDone;
      code.insert(code.end(), ops.begin(), ops.end());
      code.push_back(isa::build::dma(Op::dma_st, buf, dst_beat + r0 * cw + (c - c0), rows, 1, cw, kDone, kFree));
    }
  }
  isa::build::seg_end(code, {{kLoad, kFree, 2}});
  return code;
}

// A compiled run of layers as a segment: the program without its halt, between seg_begin and
// seg_end (which takes the compiler's leftover tokens).
std::vector<Instr> compute(const Preset& data_preset, const std::vector<MatmulLayer>& layers, uint64_t at,
                           compiler::Form form) {
  std::vector<Instr> body = isa::build::instrs(compiler::compile(data_preset, layers, {.form = form}));
  if (body.empty() || body.back().op != Op::halt)
    throw DriverError("compute segment: the program does not end in halt");
  body.pop_back();
  std::vector<Instr> code;
  isa::build::seg_begin(code);
  isa::build::relocate(body, at + code.size());
  code.insert(code.end(), body.begin(), body.end());
  isa::build::seg_end(code, compiler::leftover_tokens());
  return code;
}

std::vector<Instr> overlapped(const Preset& pr, const std::vector<MatmulLayer>& layers, CollectivePlan plan, unsigned k,
                              uint64_t at, compiler::Form form) {
  // VMEM: the collective's buffers at the top of the segment's rows, the layers below them.
  plan.vmem_base = 0;
  const uint64_t need = collective_vmem_rows(plan), top = data_vmem(pr);
  if (need >= top)
    throw DriverError(fmt::format("an overlapped {} of {} rows needs {} VMEM rows, preset '{}' has {}",
                                  collective_name(plan.kind), plan.rows, need, pr.name, top));
  plan.vmem_base = top - need;
  Preset lp = pr;
  lp.chip.vmem_rows = static_cast<uint32_t>(plan.vmem_base);
  std::vector<Instr> a;
  if (!layers.empty()) {
    a = isa::build::instrs(compiler::compile(lp, layers, {.form = form}));
    if (a.empty() || a.back().op != Op::halt) throw DriverError("overlapped segment: the program does not end in halt");
    a.pop_back();
  }
  SegmentParts b = collective_parts(pr, plan, k);

  // The collective's semaphores (wait, signal, rsem) onto those past the compiler's by a fixed
  // table, the same on every chip whatever it computes or which of them its part of the collective
  // uses (a chip without rows to compute runs the collective alone, and its neighbours' sends
  // must name the semaphores it waits on): kCollectiveSems in order from compiler::kSemaphores + 1;
  // the protocol's own (the ready tokens' kSegReady) stay.
  constexpr unsigned kFirst = compiler::kSemaphores + 1;
  static_assert(kFirst + kCollectiveSems.size() <= isa::build::kSegFirst, "they fit below the protocol's");
  for (const Instr& i : a)
    if (i.wait >= kFirst || i.signal >= kFirst)
      throw DriverError("overlapped segment: the compiled layers use a semaphore past the compiler's");
  auto map = [&](unsigned s) -> unsigned {
    if (s == 0 || s >= isa::build::kSegFirst) return s;
    const auto it = std::find(kCollectiveSems.begin(), kCollectiveSems.end(), s);
    if (it == kCollectiveSems.end())
      throw DriverError(fmt::format("overlapped segment: the {} uses semaphore {}, which has no place beside a layer",
                                    collective_name(plan.kind), s));
    return kFirst + static_cast<unsigned>(it - kCollectiveSems.begin());
  };
  auto remap = [&](std::vector<Instr>& code) {
    for (Instr& i : code) {
      i.wait = map(i.wait);
      i.signal = map(i.signal);
      if (i.op == Op::ici_send) i.f.rsem = map(static_cast<unsigned>(i.f.rsem));
    }
  };
  remap(b.head);
  remap(b.body);
  // The compiler's tokens come back only where there are layers.
  std::vector<isa::build::Drain> drains = a.empty() ? std::vector<isa::build::Drain>{} : compiler::leftover_tokens();
  for (auto d : b.drains) {
    d.sem = map(d.sem);
    drains.push_back(d);
  }

  // Where the collective's instructions may go between the layers': not inside a branch's range
  // (a loop body, or what a forward branch skips). cut[i]: a collective instruction may go just
  // before layer instruction i (i = |a|: after the last).
  std::vector<int> span(a.size() + 2, 0);
  for (size_t j = 0; j < a.size(); ++j)
    if (isa::find_field(isa::desc(a[j].op), "target") != nullptr) {
      const uint64_t t = a[j].f.target;  // compile() numbers from 0
      if (t > a.size()) throw DriverError("overlapped segment: a branch out of the compiled layers");
      const size_t lo = std::min<size_t>(t, j), hi = std::max<size_t>(t, j);
      ++span[lo + 1];  // cuts lo + 1 .. hi are inside
      --span[hi + 1];
    }
  std::vector<bool> cut(a.size() + 1);
  for (size_t i = 0, depth = 0; i <= a.size(); ++i) {
    depth += span[i];
    cut[i] = depth == 0;
  }

  // The hand-shake, then both streams, each in its own order, in proportion.
  std::vector<Instr> code;
  isa::build::seg_begin(code);
  code.insert(code.end(), b.head.begin(), b.head.end());
  std::vector<size_t> where(a.size() + 1);  // layer instruction i's index in code (|a|: just after the last)
  // Collective instruction j goes before the layers' first round(j |a| / |b|): the first at once,
  // then after each its share of the layers.
  auto share = [&](size_t j) { return (j * a.size() + b.body.size() / 2) / b.body.size(); };
  size_t ib = 0;
  for (size_t i = 0; i <= a.size(); ++i) {
    if (cut[i])
      while (ib < b.body.size() && share(ib) <= i) code.push_back(b.body[ib++]);
    where[i] = code.size();
    if (i < a.size()) code.push_back(a[i]);
  }
  while (ib < b.body.size()) code.push_back(b.body[ib++]);
  // The layers' branch targets, to where their instructions went (the segment placed at `at`).
  for (size_t i = 0; i < a.size(); ++i)
    if (isa::find_field(isa::desc(a[i].op), "target") != nullptr) code[where[i]].f.target = at + where[a[i].f.target];
  isa::build::seg_end(code, drains);
  return code;
}

std::vector<Instr> transpose(const Preset& pr, uint64_t src, uint32_t rows, uint32_t cols, uint64_t dst,
                             uint64_t ident) {
  // Semaphores (below the protocol's, instr_build.h): 1 a tile is in VMEM (load -> mxu), 2 its
  // transpose is in the accumulators (mxu -> vec), 3 its VMEM slot is free (mxu -> load), 4 an
  // accumulator slot is free (vec -> mxu), 5 the bf16 rows are ready (vec -> store), 7 an output
  // slot is free (store -> vec), 8 the identity is in VMEM (load -> mxu).
  constexpr unsigned kLd = 1, kMm = 2, kSFree = 3, kAccF = 4, kVc = 5, kOFree = 7, kId = 8;
  constexpr unsigned kLoad = isa::build::kUnitLoad, kVec = isa::build::kUnitVec,
                     kMxu = static_cast<unsigned>(isa::Unit::mxu);
  const uint64_t n = pr.mxu.n, rt = ceil_div(rows, n), ct = ceil_div(cols, n);
  if (5 * n > data_vmem(pr) || 2 * n > pr.mxu.acc_rows)
    throw DriverError(
        fmt::format("a transpose needs {} VMEM rows, preset '{}' has {}", 5 * n, pr.name, pr.chip.vmem_rows));
  const uint64_t v_id = 0, v_src = n, v_out = 3 * n;
  std::vector<Instr> code;
  isa::build::seg_begin(code);
  for (int i = 0; i < 2; ++i) {
    code.push_back(isa::build::fence(kLoad, 0, kSFree));
    code.push_back(isa::build::fence(kMxu, 0, kAccF));
    code.push_back(isa::build::fence(kVec, 0, kOFree));
  }
  code.push_back(isa::build::dma(Op::dma_ld, v_id, ident, n, 1, 1, 0, kId));
  code.push_back(isa::build::fence(kMxu, kId, 0));
  uint64_t t = 0;
  for (uint64_t rb = 0; rb < rt; ++rb)
    for (uint64_t cb = 0; cb < ct; ++cb, ++t) {
      const uint64_t s = t % 2;
      // The tile's n rows (beat cb of rows rb*n ..), loaded transposed, through the identity.
      code.push_back(isa::build::dma(Op::dma_ld, v_src + s * n, src + rb * n * ct + cb, n, 1, ct, kSFree, kLd));
      Instr lw;
      lw.op = Op::mxu_lw;
      lw.f.vaddr = v_src + s * n;
      lw.f.t = 1;
      lw.wait = kLd;
      lw.signal = kSFree;
      code.push_back(lw);
      Instr mm;
      mm.op = Op::mxu_mm;
      mm.f.vaddr = v_id;
      mm.f.acc = s * n;
      mm.f.rows = n;
      mm.wait = kAccF;
      mm.signal = kMm;
      code.push_back(mm);
      code.push_back(isa::build::fence(kVec, kOFree, 0));
      Instr cv = isa::build::vec(Op::vcvtbf, v_out + s * n, s * n, n, kMm, kVc);
      cv.f.a_acc = 1;
      code.push_back(cv);
      code.push_back(isa::build::fence(kVec, 0, kAccF));
      // Row i of the result is row cb*n + i of dst, its beat rb.
      code.push_back(isa::build::dma(Op::dma_st, v_out + s * n, dst + cb * n * rt + rb, n, 1, rt, kVc, kOFree));
    }
  isa::build::seg_end(code, {{kLoad, kSFree, 2}, {kMxu, kAccF, 2}, {kVec, kOFree, 2}});
  return code;
}

std::vector<uint16_t> transpose_ref(unsigned n, uint32_t rows, uint32_t cols, const std::vector<uint16_t>& src) {
  const uint64_t rt = ceil_div(rows, n), ct = ceil_div(cols, n);
  std::vector<uint16_t> out(uint64_t{cols} * rows);
  golden::MxuModel mxu(n, 1);
  std::vector<uint16_t> eye(n), tile(std::size_t{n} * n);
  for (uint64_t rb = 0; rb < rt; ++rb)
    for (uint64_t cb = 0; cb < ct; ++cb) {
      // W[i][j] = src[rb*n + j][cb*n + i] (zero outside the matrix), as mxu.lw t=1 loads it.
      for (unsigned i = 0; i < n; ++i)
        for (unsigned j = 0; j < n; ++j) {
          const uint64_t r = rb * n + j, c = cb * n + i;
          tile[std::size_t{i} * n + j] = r < rows && c < cols ? src[r * cols + c] : 0;
        }
      mxu.load_weights(tile);
      mxu.switch_tile();
      for (unsigned i = 0; i < n; ++i) {
        std::fill(eye.begin(), eye.end(), 0);
        eye[i] = 0x3f80;  // bf16 1.0
        const auto row = mxu.row(eye);
        for (unsigned j = 0; j < n; ++j) {
          const uint64_t r = cb * n + i, c = rb * n + j;  // the element's place in dst (cols x rows)
          if (r < cols && c < rows)
            out[r * rows + c] = static_cast<uint16_t>(golden::vpu_lane(Op::vcvtbf, row[j], 0, 0, 0));
        }
      }
    }
  return out;
}

std::vector<Instr> colsum(const Preset& pr, uint64_t src, uint32_t rows, uint32_t nb, uint64_t dst) {
  // 1 the beat's rows are in VMEM (load -> vec), 2 its sum is ready (vec -> store), 3 the buffer
  // is free again (store -> load, 1 initial token).
  constexpr unsigned kLd = 1, kSum = 2, kFree = 3;
  if (rows == 0 || rows > data_vmem(pr) || rows > 0x7fff)
    throw DriverError(fmt::format("a column sum over {} rows does not fit the VMEM of preset '{}'", rows, pr.name));
  std::vector<Instr> code;
  isa::build::seg_begin(code);
  code.push_back(isa::build::fence(isa::build::kUnitLoad, 0, kFree));
  for (uint32_t c = 0; c < nb; ++c) {
    code.push_back(isa::build::dma(Op::dma_ld, 0, src + c, rows, 1, nb, kFree, kLd));
    std::vector<Instr> ops;
    for (uint32_t len = rows; len > 1;) {
      const uint32_t half = (len + 1) / 2;
      Instr a = isa::build::vec(Op::vadd, 0, 0, len - half, 0, 0);
      a.f.b = half;
      ops.push_back(a);
      len = half;
    }
    if (ops.empty()) ops.push_back(isa::build::vec(Op::vmov, 0, 0, 1, 0, 0));
    ops.front().wait = kLd;
    ops.back().signal = kSum;
    code.insert(code.end(), ops.begin(), ops.end());
    code.push_back(isa::build::dma(Op::dma_st, 0, dst + c, 1, 1, 1, kSum, kFree));
  }
  isa::build::seg_end(code, {{isa::build::kUnitLoad, kFree, 1}});
  return code;
}

std::vector<uint32_t> colsum_ref(uint32_t rows, uint32_t cols, const std::vector<uint32_t>& m) {
  std::vector<uint32_t> out(cols);
  std::vector<uint32_t> v(rows);
  for (uint32_t c = 0; c < cols; ++c) {
    for (uint32_t r = 0; r < rows; ++r) v[r] = m[uint64_t{r} * cols + c];
    for (uint32_t len = rows; len > 1;) {
      const uint32_t half = (len + 1) / 2;
      for (uint32_t i = 0; i + half < len; ++i) v[i] = golden::fp32_add(v[i], v[i + half]);
      len = half;
    }
    out[c] = v[0];
  }
  return out;
}

std::vector<Instr> flat(const Preset& pr, const Flat& f, uint64_t rows) {
  // 1 every load is in (load -> vec: a load fence after them), 2 the ops are done (vec -> store:
  // a vec fence after them).
  constexpr unsigned kIn = 1, kDone = 2;
  uint64_t top = 0;
  for (const auto& l : f.loads) top = std::max(top, l.vbuf + (l.rows ? l.rows : rows));
  for (const auto& op : f.ops) top = std::max(top, op.f.dst + rows);
  if (rows == 0 || rows > 0x7fff || top > data_vmem(pr))
    throw DriverError(fmt::format("a vector segment of {} rows needs {} VMEM rows, preset '{}' has {}", rows, top,
                                  pr.name, pr.chip.vmem_rows));
  std::vector<Instr> code;
  isa::build::seg_begin(code);
  for (const auto& l : f.loads)
    code.push_back(isa::build::dma(Op::dma_ld, l.vbuf, l.beat, l.rows ? l.rows : rows, 1, 1, 0, 0));
  code.push_back(isa::build::fence(isa::build::kUnitLoad, 0, kIn));
  code.push_back(isa::build::fence(isa::build::kUnitVec, kIn, 0));
  for (Instr op : f.ops) {
    op.f.rows = rows;
    code.push_back(op);
  }
  code.push_back(isa::build::fence(isa::build::kUnitVec, 0, kDone));
  code.push_back(isa::build::fence(isa::build::kUnitStore, kDone, 0));
  for (const auto& s : f.stores) {
    Instr st = isa::build::dma(Op::dma_st, s.vbuf, s.beat, rows, 1, 1, 0, 0);
    st.f.haddr_r = s.haddr_r;
    code.push_back(st);
  }
  isa::build::seg_end(code, {});
  return code;
}

}  // namespace tp::driver::seg
