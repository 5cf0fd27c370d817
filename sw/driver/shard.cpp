// The sharding compiler (shard.h, docs/compiler.md "Sharding").
#include "shard.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <utility>

#include "fp.h"
#include "instr_build.h"
#include "segments.h"

namespace tp::driver {

namespace {

using compiler::MatmulLayer;
using compiler::MatrixRef;
using isa::Instr;
using isa::Op;

using seg::ceil_div;

// `beats` beats over q chips: chip i gets [first(i), first(i) + count(i)).
struct Blocks {
  uint32_t total = 0, per = 0;
  uint32_t first(unsigned i) const { return std::min<uint32_t>(total, i * per); }
  uint32_t count(unsigned i) const { return std::min<uint32_t>(total, (i + 1) * per) - first(i); }
};
Blocks blocks(uint32_t beats, unsigned q) { return {beats, static_cast<uint32_t>(ceil_div(beats, q))}; }

// The columns of block i of a `cols`-column matrix: [first, first + count).
std::pair<uint32_t, uint32_t> block_cols(const Blocks& b, unsigned i, uint32_t cols, unsigned n) {
  const uint32_t c0 = std::min<uint32_t>(cols, b.first(i) * n),
                 c1 = std::min<uint32_t>(cols, (b.first(i) + b.count(i)) * n);
  return {c0, c1 - c0};
}

unsigned axis_size(unsigned mask, unsigned w, unsigned h) {
  return ((mask & kAxisX) ? w : 1) * ((mask & kAxisY) ? h : 1);
}

std::string axes_name(unsigned mask) { return std::string(mask & kAxisX ? "x" : "") + (mask & kAxisY ? "y" : ""); }

// Columns [c0, c0 + cn) of a row-major rows x cols matrix.
template <class T>
std::vector<T> sub_cols(const std::vector<T>& m, uint32_t rows, uint32_t cols, uint32_t c0, uint32_t cn) {
  std::vector<T> out(uint64_t{rows} * cn);
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < cn; ++c) out[r * cn + c] = m[r * cols + c0 + c];
  return out;
}
// Rows [r0, r0 + rn) of a row-major matrix of `cols` columns.
template <class T>
std::vector<T> sub_rows(const std::vector<T>& m, uint32_t cols, uint32_t r0, uint32_t rn) {
  return std::vector<T>(m.begin() + static_cast<std::ptrdiff_t>(uint64_t{r0} * cols),
                        m.begin() + static_cast<std::ptrdiff_t>(uint64_t{r0 + rn} * cols));
}

std::vector<uint16_t> low16(const std::vector<uint32_t>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<uint16_t>(v[i]);
  return out;
}

}  // namespace

// ---- chains and shardings -------------------------------------------------------------------

Chain mlp_chain(const std::vector<uint32_t>& dims) {
  if (dims.size() < 3)
    throw DriverError(fmt::format("an MLP needs M, K and at least one layer's N ({} numbers)", dims.size()));
  Chain c;
  c.m = dims[0];
  c.k = dims[1];
  for (size_t i = 2; i < dims.size(); ++i) c.layers.push_back({dims[i], true, i + 1 < dims.size()});
  return c;
}

std::string chain_name(const Chain& c) {
  std::string s = fmt::format("mlp {}x{}", c.m, c.k);
  for (const auto& l : c.layers) s += fmt::format("x{}", l.n);
  return s;
}

std::string_view split_name(Split s) { return s == Split::cols ? "cols" : "k"; }

Sharding parse_sharding(std::string_view text) {
  Sharding s;
  auto axes = [&](std::string_view a, std::string_view part) {
    unsigned m = 0;
    for (const char ch : a) {
      const unsigned bit = ch == 'x' ? kAxisX : ch == 'y' ? kAxisY : 0;
      if (bit == 0 || (m & bit))
        throw DriverError(fmt::format("--shard '{}': '{}': the axes are x, y or xy", text, part));
      m |= bit;
    }
    if (m == 0) throw DriverError(fmt::format("--shard '{}': '{}' names no axis", text, part));
    return m;
  };
  if (!text.empty() && (text.back() == ',' || text.front() == ','))
    throw DriverError(fmt::format("--shard '{}': an empty part", text));
  size_t at = 0;
  while (at < text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view part = text.substr(at, comma - at);
    at = comma + 1;
    if (part == "overlap" || part == "overlap=on" || part == "overlap=off" || part == "overlap=auto") {
      s.overlap = part == "overlap=off" ? Overlap::off : part == "overlap=auto" ? Overlap::automatic : Overlap::on;
      continue;
    }
    const size_t eq = part.find('=');
    const std::string_view key = part.substr(0, eq);
    if (eq == std::string_view::npos)
      throw DriverError(fmt::format(
          "--shard '{}': '{}': expected batch=AXES, model=AXES[:SPLITS] or overlap[=on|off|auto]", text, part));
    std::string_view val = part.substr(eq + 1);
    if (key == "batch") {
      if (s.batch) throw DriverError(fmt::format("--shard '{}': batch given twice", text));
      s.batch = axes(val, part);
    } else if (key == "model") {
      if (s.model) throw DriverError(fmt::format("--shard '{}': model given twice", text));
      const size_t colon = val.find(':');
      s.model = axes(val.substr(0, colon), part);
      if (colon != std::string_view::npos) {
        std::string_view list = val.substr(colon + 1);
        if (list == "cols" || list == "k") {
          s.every = list == "k" ? Split::k : Split::cols;
        } else if (list != "megatron") {
          size_t p = 0;
          while (p <= list.size()) {
            const size_t slash = std::min(list.find('/', p), list.size());
            const std::string_view one = list.substr(p, slash - p);
            if (one != "cols" && one != "k")
              throw DriverError(
                  fmt::format("--shard '{}': split '{}': expected cols, k, megatron or a list like cols/k", text, one));
            s.splits.push_back(one == "k" ? Split::k : Split::cols);
            p = slash + 1;
          }
        }
      }
    } else {
      throw DriverError(fmt::format("--shard '{}': unknown key '{}' (batch or model)", text, key));
    }
  }
  if (s.batch & s.model) throw DriverError(fmt::format("--shard '{}': an axis is both batch and model", text));
  return s;
}

std::string sharding_name(const Sharding& s) {
  std::string out;
  if (s.batch) out += "batch=" + axes_name(s.batch);
  if (s.model) {
    out += fmt::format("{}model={}", out.empty() ? "" : ",", axes_name(s.model));
    if (s.every) {
      out += fmt::format(":{}", split_name(*s.every));
    } else if (!s.splits.empty()) {
      out += ":";
      for (size_t i = 0; i < s.splits.size(); ++i) out += fmt::format("{}{}", i ? "/" : "", split_name(s.splits[i]));
    }
  }
  if (s.overlap != Overlap::automatic) {
    if (!out.empty()) out += ",";
    out += s.overlap == Overlap::on ? "overlap" : "overlap=off";
  }
  return out.empty() ? "none" : out;
}

ChainOperands random_operands(const Chain& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  ChainOperands o;
  o.x = random_bf16s(rng, uint64_t{c.m} * c.k);
  uint32_t k = c.k;
  for (const auto& l : c.layers) {
    o.w.push_back(random_bf16s(rng, uint64_t{k} * l.n));
    o.b.push_back(l.bias ? random_fp32s(rng, l.n) : std::vector<uint32_t>{});
    k = l.n;
  }
  return o;
}

void check_chain(const Preset& p, const Chain& c) {
  if (c.m == 0 || c.k == 0 || c.layers.empty()) throw DriverError(fmt::format("{}: an empty chain", chain_name(c)));
  // Every operand at least once in a chip's HBM (a sharded chip holds less, but x and one layer's
  // weights or activations at least): more than that cannot run on any slice.
  uint64_t words = uint64_t{c.m} * c.k, k = c.k;
  for (size_t i = 0; i < c.layers.size(); ++i) {
    if (c.layers[i].n == 0) throw DriverError(fmt::format("{}: layer {} has no columns", chain_name(c), i));
    words = std::max(words, k * c.layers[i].n);
    k = c.layers[i].n;
  }
  if (words > p.chip.hbm_beats * uint64_t{p.mxu.n})
    throw DriverError(fmt::format("{}: a matrix of {} words does not fit the {} HBM beats of preset '{}'",
                                  chain_name(c), words, p.chip.hbm_beats, p.name));
}

void check_operands(const Chain& c, const ChainOperands& o) {
  if (c.m == 0 || c.k == 0 || c.layers.empty()) throw DriverError(fmt::format("{}: an empty chain", chain_name(c)));
  if (o.x.size() != uint64_t{c.m} * c.k)
    throw DriverError(
        fmt::format("{}: x has {} values, {}x{} needs {}", chain_name(c), o.x.size(), c.m, c.k, uint64_t{c.m} * c.k));
  if (o.w.size() != c.layers.size() || o.b.size() != c.layers.size())
    throw DriverError(fmt::format("{}: {} weight matrices and {} biases for {} layers", chain_name(c), o.w.size(),
                                  o.b.size(), c.layers.size()));
  uint32_t k = c.k;
  for (size_t i = 0; i < c.layers.size(); ++i) {
    const auto& l = c.layers[i];
    if (l.n == 0) throw DriverError(fmt::format("{}: layer {} has no columns", chain_name(c), i));
    if (o.w[i].size() != uint64_t{k} * l.n)
      throw DriverError(fmt::format("{}: layer {}'s W has {} values, {}x{} needs {}", chain_name(c), i, o.w[i].size(),
                                    k, l.n, uint64_t{k} * l.n));
    if (o.b[i].size() != (l.bias ? l.n : 0u))
      throw DriverError(fmt::format("{}: layer {}'s bias has {} values, needs {}", chain_name(c), i, o.b[i].size(),
                                    l.bias ? l.n : 0u));
    k = l.n;
  }
}

std::vector<uint32_t> chain_reference(const Preset& p, const Chain& c, const ChainOperands& o) {
  check_operands(c, o);
  std::vector<uint16_t> act = o.x;
  uint32_t k = c.k;
  std::vector<uint32_t> out;
  for (size_t i = 0; i < c.layers.size(); ++i) {
    const auto& l = c.layers[i];
    const bool last = i + 1 == c.layers.size();
    out = reference_layer(p, c.m, k, l.n, act, o.w[i], o.b[i], l.relu, !last);
    act = low16(out);
    k = l.n;
  }
  return out;
}

// ---- the sharding compiler ------------------------------------------------------------------

namespace {

class ShardBuilder {
 public:
  ShardBuilder(const Preset& pr, const Chain& c, const Sharding& s, unsigned w, unsigned h, const ChainOperands& o)
      : pr_(pr), data_pr_(pr), c_(c), o_(o), n_(pr.mxu.n) {
    data_pr_.chip.vmem_rows = seg::data_vmem(pr);
    out_.chain = c;
    out_.sharding = s;
    out_.sharding.every.reset();  // resolved into splits
    out_.w = w;
    out_.h = h;
    resolve(s, w, h);
  }

  ShardProgram build() {
    const unsigned chips = out_.w * out_.h;
    code_.assign(chips, {});
    for (auto& code : code_) isa::build::seg_program_start(code);
    pending_.assign(chips, {});
    cur_.assign(chips, {});
    acts_.assign(out_.groups, {});
    final_.assign(out_.groups, {});
    // The input: every chip of batch group b gets its rows of x, whole (a cols first layer) or
    // its K-block (a k first layer).
    const Blocks kb = blocks(static_cast<uint32_t>(ceil_div(c_.k, n_)), out_.group_size);
    const uint64_t x_beat = alloc(compiler::padded_beats(pr_, mmax_, c_.k));
    for (unsigned k = 0; k < chips; ++k) {
      const auto [rows0, rows] = group_rows(batch_[k]);
      auto x = sub_rows(o_.x, c_.k, rows0, rows);
      if (out_.sharding.splits[0] == Split::k) {
        const auto [c0, cn] = block_cols(kb, model_[k], c_.k, n_);
        cur_[k] = {x_beat, rows, cn};
        if (cn) write(k, x_beat, compiler::pack_bf16(pr_, rows, cn, sub_cols(x, rows, c_.k, c0, cn)));
      } else {
        cur_[k] = {x_beat, rows, c_.k};
        write(k, x_beat, compiler::pack_bf16(pr_, rows, c_.k, x));
      }
    }
    for (unsigned b = 0; b < out_.groups; ++b) {
      const auto [rows0, rows] = group_rows(b);
      acts_[b] = sub_rows(o_.x, c_.k, rows0, rows);
    }
    uint32_t k_in = c_.k;
    for (size_t i = 0; i < c_.layers.size(); ++i) {
      const bool last = i + 1 == c_.layers.size();
      if (out_.sharding.splits[i] == Split::cols)
        layer_cols(i, k_in, last);
      else
        layer_k(i, k_in, last);
      k_in = c_.layers[i].n;
    }
    flush_all();
    for (unsigned k = 0; k < chips; ++k) {
      code_[k].push_back(isa::build::halt());
      if (code_[k].size() > pr_.chip.imem_words)
        throw DriverError(fmt::format("{} sharded {} on {}x{}: chip {} has {} instructions, preset '{}' holds {}",
                                      chain_name(c_), sharding_name(out_.sharding), out_.w, out_.h, k, code_[k].size(),
                                      pr_.name, pr_.chip.imem_words));
      out_.programs.push_back(isa::build::program(pr_, code_[k]));
    }
    out_.hbm_beats = next_beat_;
    // The sharded reference: the groups' rows one after another.
    for (unsigned b = 0; b < out_.groups; ++b)
      out_.expected.insert(out_.expected.end(), final_[b].begin(), final_[b].end());
    return std::move(out_);
  }

 private:
  // The mesh: each chip's batch group and model index, the model groups' members.
  void resolve(const Sharding& s, unsigned w, unsigned h) {
    const std::string what = fmt::format("{} sharded {} on a {}x{} slice", chain_name(c_), sharding_name(s), w, h);
    for (const unsigned axis : {kAxisX, kAxisY}) {
      const unsigned size = axis == kAxisX ? w : h;
      if (size > 1 && !((s.batch | s.model) & axis))
        throw DriverError(fmt::format("{}: axis {} ({} chips) is neither batch nor model; give it to one of them", what,
                                      axes_name(axis), size));
    }
    out_.groups = axis_size(s.batch, w, h);
    out_.group_size = axis_size(s.model, w, h);
    if (c_.m < out_.groups)
      throw DriverError(fmt::format("{}: {} rows cannot be split over {} batch groups", what, c_.m, out_.groups));
    // Splits, one per layer.
    auto& sp = out_.sharding.splits;
    const size_t layers = c_.layers.size();
    if (s.model == 0 || out_.group_size == 1) {
      sp.assign(layers, Split::cols);  // a model group of one chip: every layer is whole
    } else if (s.every) {
      sp.assign(layers, *s.every);
    } else if (sp.empty()) {
      for (size_t i = 0; i < layers; ++i) sp.push_back(i % 2 == 0 ? Split::cols : Split::k);
    } else if (sp.size() != layers) {
      throw DriverError(fmt::format("{}: {} splits for {} layers", what, sp.size(), layers));
    }
    const unsigned chips = w * h;
    batch_.resize(chips);
    model_.resize(chips);
    members_.assign(out_.groups, std::vector<unsigned>(out_.group_size));
    CollectivePlan snake;
    snake.w = w;
    snake.h = h;
    for (unsigned k = 0; k < chips; ++k) {
      const unsigned i = k % w, j = k / w;
      const unsigned b = s.batch == kAxisX ? i : s.batch == kAxisY ? j : s.batch ? k : 0;
      const unsigned q = s.model == kAxisX ? i : s.model == kAxisY ? j : s.model ? snake.ring_of(k) : 0;
      batch_[k] = b;
      model_[k] = q;
      members_[b][q] = k;
    }
    mmax_ = static_cast<uint32_t>(ceil_div(c_.m, out_.groups));
  }

  std::pair<uint32_t, uint32_t> group_rows(unsigned b) const {
    const uint32_t a = static_cast<uint32_t>(uint64_t{b} * c_.m / out_.groups),
                   e = static_cast<uint32_t>(uint64_t{b + 1} * c_.m / out_.groups);
    return {a, e - a};
  }

  uint64_t alloc(uint64_t beats) {
    const uint64_t at = next_beat_;
    next_beat_ += std::max<uint64_t>(beats, 1);
    if (next_beat_ > pr_.chip.hbm_beats)
      throw DriverError(fmt::format("{} sharded {}: needs more than the {} HBM beats of preset '{}'", chain_name(c_),
                                    sharding_name(out_.sharding), pr_.chip.hbm_beats, pr_.name));
    return at;
  }
  void write(unsigned k, uint64_t beat, std::vector<uint32_t> words) {
    if (!words.empty()) out_.writes.push_back({k, beat, std::move(words)});
  }

  // Compute waiting to be compiled (consecutive layers without communication are one program).
  void flush(unsigned k) {
    if (pending_[k].empty()) return;
    const auto seg = seg::compute(data_pr_, pending_[k], code_[k].size());
    code_[k].insert(code_[k].end(), seg.begin(), seg.end());
    pending_[k].clear();
  }
  void flush_all() {
    for (unsigned k = 0; k < code_.size(); ++k) flush(k);
  }
  void append(unsigned k, const std::vector<Instr>& seg) { code_[k].insert(code_[k].end(), seg.begin(), seg.end()); }

  // ---- a layer split by output columns ----
  void layer_cols(size_t i, uint32_t kin, bool last) {
    const auto& L = c_.layers[i];
    const uint32_t nb = static_cast<uint32_t>(ceil_div(L.n, n_));
    const unsigned q = out_.group_size;
    const Blocks bl = blocks(nb, q);
    const bool gather = q > 1 && !last && out_.sharding.splits[i + 1] == Split::cols;
    const uint64_t w_beat = alloc(compiler::padded_beats(pr_, compiler::padded_rows(pr_, kin), bl.per * n_));
    const uint64_t b_beat = L.bias ? alloc(bl.per) : 0;
    const uint64_t c_beat = alloc(uint64_t{mmax_} * bl.per);
    for (unsigned k = 0; k < code_.size(); ++k) {
      const auto [c0, cn] = block_cols(bl, model_[k], L.n, n_);
      const uint32_t rows = cur_[k].rows;
      MatrixRef c{c_beat, rows, cn};
      if (cn) {
        MatmulLayer l;
        l.m = rows;
        l.k = kin;
        l.n = cn;
        l.bias = L.bias;
        l.relu = L.relu;
        l.out_bf16 = !last;
        l.a = cur_[k];
        l.w = {w_beat, kin, cn};
        write(k, w_beat, compiler::pack_bf16(pr_, kin, cn, sub_cols(o_.w[i], kin, L.n, c0, cn), true));
        if (L.bias) {
          l.b = {b_beat, 1, cn};
          write(k, b_beat, compiler::pack_fp32(pr_, 1, cn, sub_cols(o_.b[i], 1, L.n, c0, cn)));
        }
        l.c = c;
        pending_[k].push_back(l);
      }
      cur_[k] = c;  // a k layer next: exactly its input block
      if (last && cn) {
        const auto [rows0, rn] = group_rows(batch_[k]);
        out_.reads.push_back({k, c_beat, rows0, rn, c0, cn});
      }
    }
    // The reference: each group's columns, one block per model index.
    for (unsigned b = 0; b < out_.groups; ++b) {
      const uint32_t rows = group_rows(b).second;
      std::vector<uint32_t> full(uint64_t{rows} * L.n);
      for (unsigned m = 0; m < q; ++m) {
        const auto [c0, cn] = block_cols(bl, m, L.n, n_);
        if (!cn) continue;
        const auto part =
            reference_layer(pr_, rows, kin, cn, acts_[b], sub_cols(o_.w[i], kin, L.n, c0, cn),
                            L.bias ? sub_cols(o_.b[i], 1, L.n, c0, cn) : std::vector<uint32_t>{}, L.relu, !last);
        for (uint64_t r = 0; r < rows; ++r)
          for (uint64_t cc = 0; cc < cn; ++cc) full[r * L.n + c0 + cc] = part[r * cn + cc];
      }
      if (last) final_[b] = full;
      acts_[b] = low16(full);
    }
    if (!gather) {
      layer_summary(i, q > 1 && !last ? "its column blocks are the next layer's K blocks" : "");
      return;
    }
    // The all-gather of the column blocks into the full activation, in row chunks.
    flush_all();
    const uint64_t f_beat = alloc(uint64_t{mmax_} * nb);
    const uint64_t cap = seg::data_vmem(pr_) / (q + 1);  // input R + q blocks of R
    const uint32_t mr_max = static_cast<uint32_t>(std::min<uint64_t>(cap / bl.per, 0x7fff / bl.per));
    if (mr_max == 0)
      throw DriverError(
          fmt::format("layer {}: an all-gather of {}-beat column blocks does not fit the VMEM of preset '{}'", i,
                      bl.per, pr_.name));
    unsigned segs = 0;
    for (unsigned b = 0; b < out_.groups; ++b) {
      const uint32_t rows = group_rows(b).second;
      unsigned count = 0;
      for (uint32_t r0 = 0; r0 < rows; r0 += mr_max, ++count) {
        const uint32_t mr = std::min(mr_max, rows - r0);
        CollectivePlan p;
        p.kind = Collective::all_gather;
        p.w = out_.w;
        p.h = out_.h;
        p.lanes = n_;
        p.rows = mr * bl.per;
        p.members = members_[b];
        p.out_beat = f_beat + uint64_t{r0} * nb;
        CollectivePlan::Placement pl;
        pl.rows = mr;
        pl.stride = nb;
        for (unsigned m = 0; m < q; ++m) {
          pl.cols.push_back(bl.count(m));
          pl.offset.push_back(bl.first(m));
        }
        p.placement = pl;
        for (unsigned m = 0; m < q; ++m) {
          const unsigned k = members_[b][m];
          p.in_beat = c_beat + uint64_t{r0} * bl.count(m);
          append(k, collective_segment(pr_, p, k));
        }
      }
      segs = std::max(segs, count);
    }
    out_.collectives += segs;
    for (unsigned k = 0; k < code_.size(); ++k) cur_[k] = {f_beat, cur_[k].rows, L.n};
    layer_summary(i, fmt::format("all-gather of the column blocks ({} segment(s))", segs));
  }

  // ---- a layer split by the contraction dimension ----
  void layer_k(size_t i, uint32_t kin, bool last) {
    const auto& L = c_.layers[i];
    const unsigned q = out_.group_size;
    const uint32_t nb = static_cast<uint32_t>(ceil_div(L.n, n_));
    const Blocks kb = blocks(static_cast<uint32_t>(ceil_div(kin, n_)), q);
    const uint64_t prows = std::max<uint64_t>(uint64_t{mmax_} * nb, q);
    const uint64_t w_beat = alloc(compiler::padded_beats(pr_, kb.per * n_, L.n));
    const uint64_t p_beat = alloc(prows), s_beat = alloc(prows);
    const uint64_t b_beat = L.bias ? alloc(nb) : 0;
    for (unsigned k = 0; k < code_.size(); ++k) {
      const auto [c0, cn] = block_cols(kb, model_[k], kin, n_);
      if (cn) write(k, w_beat, compiler::pack_bf16(pr_, cn, L.n, sub_rows(o_.w[i], L.n, c0, cn), true));
      // The partial sums' buffer is whole beats of zeros beyond what the chip computes (a chip
      // without a K block adds zeros).
      write(k, p_beat, std::vector<uint32_t>(prows * n_, 0u));
      if (L.bias) write(k, b_beat, compiler::pack_fp32(pr_, 1, L.n, o_.b[i]));
    }
    // The matmul of rows [r0, r0 + rn) of chip k's partial sums (none without a K block).
    auto matmul = [&](unsigned k, uint32_t r0, uint32_t rn) {
      const auto [c0, cn] = block_cols(kb, model_[k], kin, n_);
      std::vector<MatmulLayer> out;
      if (!cn || !rn) return out;
      MatmulLayer l;
      l.m = rn;
      l.k = cn;
      l.n = L.n;
      l.a = {cur_[k].beat + uint64_t{r0} * ceil_div(cur_[k].cols, n_), rn, cur_[k].cols};
      l.w = {w_beat, cn, L.n};
      l.c = {p_beat + uint64_t{r0} * nb, rn, L.n};
      out.push_back(l);
      return out;
    };
    // The all-reduce of the partial sums, and its reference in the same order.
    unsigned segs = 0;
    std::vector<std::vector<uint32_t>> sums(out_.groups);
    for (unsigned b = 0; b < out_.groups; ++b) {
      const uint32_t rows = group_rows(b).second;
      const uint64_t r_all = std::max<uint64_t>(uint64_t{rows} * nb, q);
      // Each model index's partial sums, as padded words (r_all beats).
      std::vector<std::vector<uint32_t>> parts(q);
      for (unsigned m = 0; m < q; ++m) {
        const auto [c0, cn] = block_cols(kb, m, kin, n_);
        parts[m].assign(r_all * n_, 0u);
        if (!cn) continue;
        const auto pm = reference_layer(pr_, rows, cn, L.n, sub_cols(acts_[b], rows, kin, c0, cn),
                                        sub_rows(o_.w[i], L.n, c0, cn), {}, false, false);
        const auto packed = compiler::pack_fp32(pr_, rows, L.n, pm);
        std::copy(packed.begin(), packed.end(), parts[m].begin());
      }
      sums[b].assign(r_all * n_, 0u);
      // The all-reduce of beats [r0, r0 + rn) of the partial sums: a group that is the whole
      // slice runs the torus where it fits (its streams use every link), otherwise the group's ring.
      auto plan = [&](uint64_t r0, uint64_t rn) {
        CollectivePlan p;
        p.kind = Collective::all_reduce;
        p.w = out_.w;
        p.h = out_.h;
        p.lanes = n_;
        p.rows = static_cast<uint32_t>(rn);
        p.members = members_[b];
        p.in_beat = p_beat + r0;
        p.out_beat = s_beat + r0;
        if (q == out_.w * out_.h) {
          CollectivePlan t = p;
          t.members.clear();
          torus_if_it_fits(pr_, t);
          if (t.algorithm == Algorithm::torus) p = t;
        }
        return p;
      };
      // Row blocks: with overlap, blocks of rows whose all-reduce fits half of VMEM (two at least),
      // each all-reduced beside the next block's matmul, where every block has a row per chip and
      // keeps the algorithm of the unsplit all-reduce's first chunk; otherwise the whole matmul,
      // then the all-reduce in VMEM-sized chunks.
      std::vector<std::pair<uint32_t, uint32_t>> rblocks;  // (first row, rows)
      const auto whole_chunks = seg::reduce_chunks(pr_, r_all, q);
      if (out_.sharding.overlap == Overlap::on && uint64_t{rows} * nb >= 2 * uint64_t{q}) {
        Preset half = pr_;
        half.chip.vmem_rows = seg::data_vmem(pr_) / 2 + 1;
        const uint64_t per = seg::reduce_chunks(half, uint64_t{rows} * nb, q).front().second / nb;
        const uint64_t count = per ? std::max<uint64_t>(2, ceil_div(rows, per)) : 0;
        for (uint64_t j = 0; j < count; ++j) {
          const auto a = static_cast<uint32_t>(j * rows / count), e = static_cast<uint32_t>((j + 1) * rows / count);
          rblocks.push_back({a, e - a});
        }
        const Algorithm want = plan(whole_chunks.front().first, whole_chunks.front().second).algorithm;
        for (const auto& [r0, rn] : rblocks)
          if (uint64_t{rn} * nb < q || plan(uint64_t{r0} * nb, uint64_t{rn} * nb).algorithm != want) {
            rblocks.clear();
            break;
          }
      }
      std::vector<std::pair<uint64_t, uint64_t>> chunks;  // beats of the partial sums
      if (rblocks.empty()) {
        for (const unsigned k : members_[b]) {
          const auto all = matmul(k, 0, rows);
          pending_[k].insert(pending_[k].end(), all.begin(), all.end());
          flush(k);
        }
        for (const auto& [r0, rn] : whole_chunks) chunks.push_back({r0, rn});
      } else {
        for (const auto& [r0, rn] : rblocks) chunks.push_back({uint64_t{r0} * nb, uint64_t{rn} * nb});
      }
      segs = std::max<unsigned>(segs, static_cast<unsigned>(chunks.size()));
      for (size_t j = 0; j < chunks.size(); ++j) {
        const auto [r0, rn] = chunks[j];
        const CollectivePlan p = plan(r0, rn);
        for (const unsigned k : members_[b]) {
          if (rblocks.empty()) {
            append(k, collective_segment(pr_, p, k));
            continue;
          }
          if (j == 0) {  // the first block's matmul (after the layers before it, as one program)
            auto& pend = pending_[k];
            const auto first = matmul(k, rblocks[0].first, rblocks[0].second);
            pend.insert(pend.end(), first.begin(), first.end());
            flush(k);
          }
          if (j + 1 < chunks.size())
            append(k,
                   seg::overlapped(pr_, matmul(k, rblocks[j + 1].first, rblocks[j + 1].second), p, k, code_[k].size()));
          else
            append(k, collective_segment(pr_, p, k));
        }
        // The reference: the chunk's rows of every model index, reduced in the collective's order
        // (the torus's by slice index, the ring's by model index).
        const bool torus = p.algorithm == Algorithm::torus;
        CollectivePlan ref = p;
        if (!torus) {
          ref.members.clear();
          for (unsigned m = 0; m < q; ++m) ref.members.push_back(m);
        }
        std::vector<std::vector<uint32_t>> in(q);
        for (unsigned x = 0; x < q; ++x) {
          const auto& part = parts[torus ? model_[x] : x];
          in[x].assign(part.begin() + static_cast<std::ptrdiff_t>(r0 * n_),
                       part.begin() + static_cast<std::ptrdiff_t>((r0 + rn) * n_));
        }
        const auto red = collective_reference(ref, in);
        std::copy(red[0].begin(), red[0].end(), sums[b].begin() + static_cast<std::ptrdiff_t>(r0 * n_));
      }
    }
    out_.collectives += segs;
    // The epilogue: bias, ReLU, bf16 on the sums; the next layer's K block when it is a k layer
    // too, the whole output otherwise.
    const bool next_k = !last && out_.sharding.splits[i + 1] == Split::k;
    const bool ops = L.bias || L.relu || !last;
    const Blocks nbl = blocks(nb, q);
    const uint64_t e_beat = next_k ? alloc(uint64_t{mmax_} * nbl.per) : ops ? alloc(uint64_t{mmax_} * nb) : s_beat;
    for (unsigned k = 0; k < code_.size(); ++k) {
      const uint32_t rows = cur_[k].rows;
      if (next_k) {
        const auto [c0, cn] = block_cols(nbl, model_[k], L.n, n_);
        if (cn)
          append(k, seg::epilogue(pr_, s_beat, rows, nb, L.bias ? std::optional<uint64_t>(b_beat) : std::nullopt,
                                  L.relu, !last, e_beat, nbl.first(model_[k]), nbl.count(model_[k])));
        cur_[k] = {e_beat, rows, cn};
      } else {
        if (ops)
          append(k, seg::epilogue(pr_, s_beat, rows, nb, L.bias ? std::optional<uint64_t>(b_beat) : std::nullopt,
                                  L.relu, !last, e_beat, 0, nb));
        cur_[k] = {e_beat, rows, L.n};
        if (last) {
          const auto [rows0, rn] = group_rows(batch_[k]);
          out_.reads.push_back({k, e_beat, rows0, rn, 0, L.n});
        }
      }
    }
    // The reference of the epilogue.
    for (unsigned b = 0; b < out_.groups; ++b) {
      const uint32_t rows = group_rows(b).second;
      const auto s = compiler::unpack(pr_, rows, L.n, sums[b]);
      std::vector<uint32_t> v(s.size());
      for (uint64_t r = 0; r < rows; ++r)
        for (uint64_t j = 0; j < L.n; ++j)
          v[r * L.n + j] = seg::epilogue_ref(s[r * L.n + j], L.bias ? &o_.b[i][j] : nullptr, L.relu, !last);
      if (last) final_[b] = v;
      acts_[b] = low16(v);
    }
    std::vector<std::string> what;
    if (L.bias) what.push_back("bias");
    if (L.relu) what.push_back("ReLU");
    if (!last) what.push_back("bf16");
    layer_summary(i, fmt::format("all-reduce of the partial sums ({} segment(s)){}", segs,
                                 ops ? fmt::format(", then the epilogue ({})", fmt::join(what, ", ")) : ""));
  }

  void layer_summary(size_t i, const std::string& comm) {
    const auto& L = c_.layers[i];
    out_.summary += fmt::format("  layer {} ({} columns): {}{}\n", i, L.n,
                                out_.group_size > 1 ? fmt::format("split {}", split_name(out_.sharding.splits[i]))
                                                    : std::string("whole on every chip"),
                                comm.empty() ? "" : "; " + comm);
  }

  const Preset& pr_;
  Preset data_pr_;  // the preset with VMEM's last row kept for the ready tokens
  const Chain& c_;
  const ChainOperands& o_;
  const unsigned n_;
  ShardProgram out_;
  std::vector<unsigned> batch_, model_;         // per slice index
  std::vector<std::vector<unsigned>> members_;  // per batch group: slice indices by model index
  uint32_t mmax_ = 0;                           // rows of the largest batch group
  uint64_t next_beat_ = 0;
  std::vector<std::vector<Instr>> code_;
  std::vector<std::vector<MatmulLayer>> pending_;
  std::vector<MatrixRef> cur_;                // per chip: its input to the next layer
  std::vector<std::vector<uint16_t>> acts_;   // per group: the reference's activation
  std::vector<std::vector<uint32_t>> final_;  // per group: the reference's output
};

}  // namespace

namespace {

// A run's cycle limit: every MXU row pass and every beat moved, with a wide margin.
uint64_t default_timeout(const Preset& pr, const Chain& c) {
  uint64_t work = 0, kin = c.k;
  for (const auto& l : c.layers) {
    work += uint64_t{c.m} * ceil_div(kin, pr.mxu.n) * ceil_div(l.n, pr.mxu.n) * 4 +
            uint64_t{c.m} * ceil_div(l.n, pr.mxu.n) * 64;
    kin = l.n;
  }
  return 500'000 + 20 * work;
}

void load(Slice& slice, const ShardProgram& sp) {
  for (unsigned k = 0; k < sp.w * sp.h; ++k) slice.load(k % sp.w, k / sp.w, sp.programs[k]);
  for (const auto& wr : sp.writes) slice.write(wr.k % sp.w, wr.k / sp.w, wr.beat, wr.words);
}

// A sharded program's cycles on a golden pod of its slice's shape (the timing estimate); the
// largest uint64_t when it does not finish.
uint64_t estimate_cycles(const Preset& pr, const Chain& c, const ShardProgram& sp) {
  auto slice = Slice::open(torus_pod(pr, sp.w, sp.h), {0, 0, sp.w, sp.h}, Backend::golden);
  load(*slice, sp);
  const auto st = slice->run(default_timeout(pr, c));
  return st.ok() ? st.cycles : UINT64_MAX;
}

}  // namespace

ShardProgram compile_sharded(const Preset& pr, const Chain& c, const Sharding& s, unsigned w, unsigned h,
                             const ChainOperands& o) {
  check_chain(pr, c);
  check_operands(c, o);
  if (w == 0 || h == 0) throw DriverError("an empty slice");
  if (s.overlap != Overlap::automatic) return ShardBuilder(pr, c, s, w, h, o).build();
  // Automatic: without overlap, and with it where it compiles; the second only if it differs
  // and the golden pod's timing estimate gives it fewer cycles.
  Sharding off = s, on = s;
  off.overlap = Overlap::off;
  on.overlap = Overlap::on;
  ShardProgram a = ShardBuilder(pr, c, off, w, h, o).build();
  ShardProgram b;
  try {
    b = ShardBuilder(pr, c, on, w, h, o).build();
  } catch (const DriverError&) {  // (longer than the instruction memory, VMEM too small)
    return a;
  } catch (const compiler::CompileError&) {
    return a;
  }
  if (b.summary == a.summary) return a;  // no layer was split
  const uint64_t ca = estimate_cycles(pr, c, a), cb = estimate_cycles(pr, c, b);
  ShardProgram& pick = cb < ca ? b : a;
  pick.summary += fmt::format("  overlap {}: {} cycles with it, {} without (the golden pod's estimate)\n",
                              cb < ca ? "kept" : "left out", cb, ca);
  return pick;
}

ShardRun run_sharded(Slice& slice, const Chain& c, const Sharding& s, const ChainOperands& o, uint64_t timeout) {
  const Preset& pr = slice.preset();
  const unsigned w = slice.shape().w, h = slice.shape().h;
  ShardProgram sp = compile_sharded(pr, c, s, w, h, o);
  ShardRun run;
  run.what = fmt::format("{} sharded {} on a {}x{} slice", chain_name(c), sharding_name(sp.sharding), w, h);
  run.summary = sp.summary;
  run.collectives = sp.collectives;
  for (unsigned k = 0; k < w * h; ++k)
    run.instructions = std::max<uint64_t>(run.instructions, sp.programs[k].code.size());
  load(slice, sp);
  run.status = slice.run(timeout ? timeout : default_timeout(pr, c));
  if (!run.status.ok()) return run;
  const uint32_t nout = c.layers.back().n;
  std::vector<uint32_t> out(uint64_t{c.m} * nout, 0x7fbadbadu);
  for (const auto& rd : sp.reads) {
    const auto words = slice.read(rd.k % w, rd.k / w, rd.beat, compiler::padded_beats(pr, rd.rows, rd.cols));
    const auto m = compiler::unpack(pr, rd.rows, rd.cols, words);
    for (uint64_t r = 0; r < rd.rows; ++r)
      for (uint64_t j = 0; j < rd.cols; ++j) {
        uint32_t& dst = out[(rd.row0 + r) * nout + rd.col0 + j];
        const uint32_t v = m[r * rd.cols + j];
        // Replicated outputs (every chip of a model group holds them): each copy must agree.
        if (dst != 0x7fbadbadu && dst != v) ++run.mismatches;
        dst = v;
      }
  }
  for (size_t i = 0; i < out.size(); ++i) run.mismatches += out[i] != sp.expected[i];
  const auto one = chain_reference(pr, c, o);
  double largest = 0, diff = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const double a = golden::fp32_value(out[i]), b = golden::fp32_value(one[i]);
    largest = std::max(largest, std::abs(b));
    if (out[i] == one[i]) continue;
    ++run.one_chip_differences;
    diff = std::max(diff, std::abs(a - b));
  }
  run.one_chip_max_rel = largest > 0 ? diff / largest : diff;
  run.output = std::move(out);
  run.pass = run.mismatches == 0;
  return run;
}

}  // namespace tp::driver
