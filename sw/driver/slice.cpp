// The slice driver (slice.h): what every backend shares, and the golden backend on the golden pod.
#include "slice.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>

#include "interrupt.h"
#include "pod_comm.h"
#include "pod_model.h"

namespace tp::driver {

namespace {

std::map<std::string, SliceFactory>& slice_registry() {
  static std::map<std::string, SliceFactory> r;
  return r;
}

// The golden pod behind the Slice interface. Its "cycles" are the chips' timing estimates and
// its timeout counts executed instructions (unit and scalar), as the golden chip's does: timeout
// times the loaded chips, pooled (one chip in an endless loop can use all of it).
class GoldenSlice final : public Slice {
 public:
  GoldenSlice(const PodSpec& pod, const SliceShape& shape, const SliceOptions& opt, bool fast)
      : Slice(pod, shape), model_(pod.preset, {pod.kx, pod.ky, pod.link_latency}, slices(shape, opt)), fast_(fast) {
    if (opt.comm) model_.distribute(opt.comm);
    if (!fast) return;
    model_.model_contention(golden::fast_ici_figures(model_.preset()));  // the links, with the fast model's figures
    for (unsigned y = 0; y < pod.ky; ++y)
      for (unsigned x = 0; x < pod.kx; ++x)  // the pod's preset: its torus and link latency
        if (model_.owns(x, y)) model_.chip(x, y).set_timing(golden::make_fast_timing(model_.preset()));
  }

  std::string backend_name() const override { return fast_ ? "fast" : "golden"; }

  void write_pod_chip(unsigned x, unsigned y, uint64_t beat, std::span<const uint32_t> words) override {
    check_pod_chip(x, y);
    auto& c = model_.chip(x, y);
    if (words.size() % c.lanes() != 0)
      throw DriverError(fmt::format("write: {} words is not a whole number of {}-lane beats", words.size(), c.lanes()));
    try {
      if (model_.owns(x, y))
        c.write_hbm(beat, words);
      else  // distributed: the owner writes; every rank refuses a bad range alike
        c.check_hbm_range("write_hbm", beat, words.size() / c.lanes());
    } catch (const std::out_of_range& e) {
      throw DriverError(fmt::format("write on chip ({},{}): {}", x, y, e.what()));
    }
  }
  std::vector<uint32_t> read_pod_chip(unsigned x, unsigned y, uint64_t beat, uint64_t beats) override {
    check_pod_chip(x, y);
    const auto read = [&] {
      try {
        return model_.chip(x, y).read_hbm(beat, beats);
      } catch (const std::out_of_range& e) {
        throw DriverError(fmt::format("read on chip ({},{}): {}", x, y, e.what()));
      }
    };
    const auto& comm = model_.comm();
    if (!comm) return read();
    // Distributed: the owner reads and sends the words (or its error) to every rank.
    const unsigned owner = model_.owner(model_.index(x, y));
    golden::ByteWriter w;
    if (comm->rank() == owner) {
      try {
        const auto words = read();
        w.put<uint8_t>(1);
        w.put_span(std::span<const uint32_t>(words));
      } catch (const DriverError& e) {
        w.put<uint8_t>(0);
        w.put_string(e.what());
      }
    }
    const auto got = comm->broadcast(std::move(w.bytes()), owner);
    golden::ByteReader rd(got);
    if (rd.get<uint8_t>() == 0) throw DriverError(rd.get_string());
    return rd.get_vector<uint32_t>();
  }

  SliceStatus run(uint64_t timeout) override {
    if (ran_) throw DriverError("slice: run() once per slice");
    ran_ = true;
    const auto& comm = model_.comm();
    if (comm && tracing())
      throw DriverError("slice: a distributed pod records no timelines (run it in one process to trace it)");
    const unsigned kx = pod().kx;
    for (unsigned idx = 0; idx < programs_.size(); ++idx)
      if (programs_[idx]) {
        model_.load(idx % kx, idx / kx, *programs_[idx]);
        model_.chip(idx % kx, idx / kx).timeline().keep_events(tracing());
      }
    // The timeout scales with the chips: the pod's budget is that many instructions for each loaded
    // chip, pooled (a 32x32 pod runs a thousand times the instructions of one chip); distributed,
    // each rank's for the loaded chips it owns, so R ranks have the budget of one process.
    uint64_t loaded = 0;
    for (unsigned idx = 0; idx < programs_.size(); ++idx)
      loaded += programs_[idx] && model_.owns(idx % kx, idx / kx) ? 1 : 0;
    const uint64_t budget =
        timeout > UINT64_MAX / std::max<uint64_t>(1, loaded) ? UINT64_MAX : timeout * std::max<uint64_t>(1, loaded);
    // Distributed: the ranks start together, so the host's work before the run (which differs
    // between ranks) is not counted as the run's synchronisation.
    if (comm) (void)comm->all_gather({});
    const double sync0 = comm ? comm->sync_seconds() : 0.0;
    const uint64_t bytes0 = comm ? comm->bytes_out() : 0;
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = model_.run(budget);
    SliceStatus st;
    st.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    st.rounds = r.rounds;
    if (comm) {
      st.ranks = comm->ranks();
      st.sync_seconds = comm->sync_seconds() - sync0;
      st.bytes_between_ranks = comm->bytes_out() - bytes0;
    }
    st.deadlock = r.deadlock;
    st.timed_out = !r.done && !r.deadlock;
    st.interrupted = st.timed_out && tp::interrupted();
    st.cycles = r.pod_est_cycles;
    for (unsigned idx = 0; idx < programs_.size(); ++idx) {
      if (!programs_[idx]) continue;
      const auto& c = r.chips[idx];
      ChipOutcome o;
      o.x = idx % kx;
      o.y = idx / kx;
      o.status.done = c.done || c.err != isa::Err::none;
      o.status.timed_out = !o.status.done && !r.deadlock;
      o.status.err = c.err;
      o.status.pc = c.pc;
      o.status.cycles = r.est_cycles[idx];
      o.waiting = c.waiting;
      o.wait_pc = c.wait_pc;
      o.wait_sem = c.wait_sem;
      st.chips.push_back(o);
      if (!model_.owns(o.x, o.y)) continue;  // its owner's counters arrive below
      const auto& s = model_.chip(o.x, o.y).stats();
      counters_[idx] = {{std::string(kCycles), r.est_cycles[idx]},
                        {"est_cycles", r.est_cycles[idx]},
                        {std::string(kInstructions), s.instructions},
                        {std::string(kBytesLoaded), s.bytes_loaded},
                        {std::string(kBytesStored), s.bytes_stored},
                        {std::string(kMxuRows), s.mxu_rows},
                        {"vec_rows", s.vec_rows}};
      const auto& tl = model_.chip(o.x, o.y).finish_timeline();
      trace::add_unit_counters(counters_[idx], tl);
      if (tracing()) {
        timelines_.push_back(tl);
        timelines_.back().set_name(fmt::format("chip ({}, {})", o.x, o.y));
        timelines_.back().set_group("golden");
      }
    }
    if (comm) gather_counters(st);
    st.report = describe_outcomes(st);
    return st;
  }

  std::map<std::string, uint64_t> counters(unsigned x, unsigned y) override {
    if (x >= pod().kx || y >= pod().ky) throw DriverError(fmt::format("counters: no chip ({},{}) in the pod", x, y));
    const auto it = counters_.find(x + y * pod().kx);
    return it == counters_.end() ? std::map<std::string, uint64_t>{} : it->second;
  }

 private:
  // Distributed: every rank's chips' counters on every rank; the wall time and the share of it
  // spent synchronising, the worst over the ranks.
  void gather_counters(SliceStatus& st) {
    const auto& comm = model_.comm();
    golden::ByteWriter w;
    w.put<double>(st.wall_seconds);
    w.put<double>(st.wall_seconds > 0 ? st.sync_seconds / st.wall_seconds : 0.0);
    w.put<uint64_t>(st.bytes_between_ranks);
    for (const auto& [idx, m] : counters_) {
      w.put<uint32_t>(idx);
      w.put<uint64_t>(m.size());
      for (const auto& [k, v] : m) {
        w.put_string(k);
        w.put<uint64_t>(v);
      }
    }
    uint64_t total_bytes = 0;
    for (const auto& in : comm->all_gather(w.bytes())) {
      golden::ByteReader rd(in);
      st.wall_seconds = std::max(st.wall_seconds, rd.get<double>());
      st.max_sync_fraction = std::max(st.max_sync_fraction, rd.get<double>());
      total_bytes += rd.get<uint64_t>();
      while (!rd.done()) {
        auto& m = counters_[rd.get<uint32_t>()];
        for (uint64_t k = rd.get<uint64_t>(); k > 0; --k) {
          std::string name = rd.get_string();
          m[name] = rd.get<uint64_t>();
        }
      }
    }
    st.bytes_between_ranks = total_bytes;
  }

  static std::vector<golden::Slice> slices(const SliceShape& s, const SliceOptions& opt) {
    std::vector<golden::Slice> out{{s.x0, s.y0, s.w, s.h}};
    for (const auto& o : opt.others) out.push_back({o.x0, o.y0, o.w, o.h});
    return out;
  }
  golden::PodModel model_;
  bool fast_ = false;
  bool ran_ = false;
  std::map<unsigned, std::map<std::string, uint64_t>> counters_;
};

}  // namespace

PodSpec torus_pod(const Preset& preset, unsigned kx, unsigned ky) {
  PodSpec p;
  p.name = fmt::format("{}x{}", kx, ky);
  p.preset = preset;
  p.kx = kx;
  p.ky = ky;
  p.link_latency = 1;
  p.board_x = std::gcd(kx, 2u);
  p.board_y = std::gcd(ky, 2u);
  return p;
}

PodSpec pod_spec(const PodConfig& c) {
  PodSpec p;
  p.name = c.name;
  p.preset = load_preset(c.preset);
  p.kx = c.torus_x;
  p.ky = c.torus_y;
  p.link_latency = c.link_latency;
  p.board_x = c.board_x;
  p.board_y = c.board_y;
  return p;
}

bool SliceStatus::ok() const {
  if (deadlock || timed_out) return false;
  return std::all_of(chips.begin(), chips.end(), [](const ChipOutcome& c) { return c.status.ok(); });
}

void check_slice(const PodSpec& pod, const SliceShape& s) {
  if (s.w < 1 || s.h < 1 || s.x0 + s.w > pod.kx || s.y0 + s.h > pod.ky)
    throw DriverError(fmt::format("slice {}x{} at ({},{}) does not fit the {}x{} pod '{}'", s.w, s.h, s.x0, s.y0,
                                  pod.kx, pod.ky, pod.name));
}

IciSetting ici_setting(const PodSpec& pod, const SliceShape& s, unsigned x, unsigned y) {
  return {pod.kx, pod.ky, x, y, s.x0, s.y0, s.w, s.h};
}

std::unique_ptr<Slice> Slice::open(const PodSpec& pod, const SliceShape& shape, Backend b, const SliceOptions& opt) {
  if (pod.kx < 1 || pod.ky < 1 || pod.kx > 32 || pod.ky > 32)
    throw DriverError(fmt::format("pod '{}': a torus of {}x{} (1..32 per side)", pod.name, pod.kx, pod.ky));
  check_slice(pod, shape);
  for (const auto& o : opt.others) check_slice(pod, o);
  if (b == Backend::golden || b == Backend::fast) return make_golden_slice(pod, shape, opt, b == Backend::fast);
  if (opt.comm) throw DriverError("a distributed pod (several ranks) runs on the golden or fast backend, not on rtl");
  const auto& r = slice_registry();
  const auto it = r.find(pod.preset.name);
  if (it == r.end()) {
    std::string have;
    for (const auto& [name, f] : r) have += (have.empty() ? "" : ", ") + name;
    throw DriverError(fmt::format("no RTL pod is built for preset '{}' in this binary (built: {})", pod.preset.name,
                                  have.empty() ? "none" : have));
  }
  return it->second(pod, shape, opt);
}

void Slice::check_chip(unsigned i, unsigned j) const {
  if (i >= shape_.w || j >= shape_.h)
    throw DriverError(fmt::format("chip ({},{}) is outside the {}x{} slice", i, j, shape_.w, shape_.h));
}

void Slice::check_pod_chip(unsigned x, unsigned y) const {
  if (x >= pod_.kx || y >= pod_.ky)
    throw DriverError(fmt::format("chip ({},{}) is outside the {}x{} pod '{}'", x, y, pod_.kx, pod_.ky, pod_.name));
}

void Slice::write(unsigned i, unsigned j, uint64_t beat, std::span<const uint32_t> words) {
  check_chip(i, j);
  write_pod_chip(shape_.x0 + i, shape_.y0 + j, beat, words);
}

std::vector<uint32_t> Slice::read(unsigned i, unsigned j, uint64_t beat, uint64_t beats) {
  check_chip(i, j);
  return read_pod_chip(shape_.x0 + i, shape_.y0 + j, beat, beats);
}

void Slice::load(unsigned i, unsigned j, const isa::Program& p) {
  check_chip(i, j);
  load_pod_chip(shape_.x0 + i, shape_.y0 + j, p);
}

void Slice::load_all(const isa::Program& p) {
  for (unsigned j = 0; j < shape_.h; ++j)
    for (unsigned i = 0; i < shape_.w; ++i) load(i, j, p);
}

void Slice::load_pod_chip(unsigned x, unsigned y, const isa::Program& p) {
  if (x >= pod_.kx || y >= pod_.ky)
    throw DriverError(fmt::format("load: no chip ({},{}) in the {}x{} pod", x, y, pod_.kx, pod_.ky));
  try {
    isa::check_preset(p, pod_.preset);
  } catch (const isa::IsaError& e) {
    throw DriverError(e.what());
  }
  if (p.code.size() > pod_.preset.chip.imem_words)
    throw DriverError(fmt::format("load on chip ({},{}): {} instructions do not fit the {}-word instruction memory", x,
                                  y, p.code.size(), pod_.preset.chip.imem_words));
  if (programs_.empty()) programs_.resize(std::size_t{pod_.kx} * pod_.ky);
  programs_[x + y * pod_.kx] = p;
}

void Slice::scatter_rows(uint64_t beat, std::span<const uint32_t> m, uint32_t rows, uint32_t cols) {
  const unsigned lanes = preset().mxu.n, n = chips();
  if (cols % lanes != 0 || m.size() != std::size_t{rows} * cols)
    throw DriverError(fmt::format("scatter_rows: a {}x{} matrix in {} words (cols must be a multiple of {})", rows,
                                  cols, m.size(), lanes));
  for (unsigned k = 0; k < n; ++k) {
    const uint64_t r0 = uint64_t{k} * rows / n, r1 = uint64_t{k + 1} * rows / n;
    if (r1 > r0) write(k % shape_.w, k / shape_.w, beat, m.subspan(r0 * cols, (r1 - r0) * cols));
  }
}

std::vector<uint32_t> Slice::gather_rows(uint64_t beat, uint32_t rows, uint32_t cols) {
  const unsigned lanes = preset().mxu.n, n = chips();
  if (cols % lanes != 0) throw DriverError(fmt::format("gather_rows: cols {} is not a multiple of {}", cols, lanes));
  std::vector<uint32_t> out;
  out.reserve(std::size_t{rows} * cols);
  for (unsigned k = 0; k < n; ++k) {
    const uint64_t r0 = uint64_t{k} * rows / n, r1 = uint64_t{k + 1} * rows / n;
    if (r1 == r0) continue;
    const auto part = read(k % shape_.w, k / shape_.w, beat, (r1 - r0) * cols / lanes);
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

void register_slice_backend(const std::string& preset, SliceFactory f) { slice_registry()[preset] = std::move(f); }

std::vector<std::string> registered_slice_presets() {
  std::vector<std::string> out;
  for (const auto& [name, f] : slice_registry()) out.push_back(name);
  return out;
}

std::unique_ptr<Slice> make_golden_slice(const PodSpec& pod, const SliceShape& s, const SliceOptions& opt, bool fast) {
  return std::make_unique<GoldenSlice>(pod, s, opt, fast);
}

std::string describe_outcomes(const SliceStatus& st) {
  std::string out;
  for (const auto& c : st.chips) {
    if (c.status.ok()) continue;
    if (c.status.err != isa::Err::none)
      out += fmt::format("chip ({},{}): error {} at pc {}\n", c.x, c.y, isa::err_name(c.status.err), c.status.pc);
    else if (c.waiting)
      out += fmt::format("chip ({},{}): waits at pc {} on semaphore {}\n", c.x, c.y, c.wait_pc, c.wait_sem);
    else
      out += fmt::format("chip ({},{}): {}\n", c.x, c.y, c.status.timed_out ? "not done at the timeout" : "not done");
  }
  if (st.deadlock) out += "pod: deadlock (every chip left waits and no ICI traffic is in flight)\n";
  if (st.timed_out) out += "pod: timed out\n";
  return out;
}

void claim_systemc_kernel() {
  static std::atomic<bool> claimed{false};
  if (claimed.exchange(true))
    throw DriverError(
        "rtl slice: SystemC cannot reset its kernel, so a process holds one RTL pod (run each pod test in its own "
        "process, e.g. ctest or --gtest_filter)");
}

energy::Estimate slice_energy(Slice& s, const SliceStatus& st, const energy::EnergyModel& model, bool rtl) {
  energy::Estimate total;
  for (const auto& c : st.chips) total += energy::estimate(model, s.counters(c.x, c.y));
  const auto& sh = s.shape();
  for (unsigned y = sh.y0; rtl && y < sh.y0 + sh.h; ++y)
    for (unsigned x = sh.x0; x < sh.x0 + sh.w; ++x)
      if (std::none_of(st.chips.begin(), st.chips.end(), [&](const ChipOutcome& c) { return c.x == x && c.y == y; }))
        total += energy::estimate(model, s.counters(x, y));
  total.cycles = st.cycles;
  total.cycles_estimated = !rtl;
  return total;
}

}  // namespace tp::driver
