// The RTL backend of the slice driver for one preset (compiled once per preset with TP_PRESET,
// TP_CHIP_HEADER, TP_CHIP_CLASS and the preset's router model TP_ICI_HEADER, TP_ICI_CLASS): the
// SystemC pod of Verilated chips (pod_sim.h) behind tp::driver::Slice; the chips named in
// SliceOptions::golden_chips are golden chips behind Verilated routers (golden_pod_chip.h), and those in
// SliceOptions::fast_chips the same with the fast chip model's timing on pod time. It registers itself from a
// static initializer; it is built as an object library so the linker keeps it. One pod per process (SystemC cannot
// reset its kernel).
//
// Waves: SliceOptions::wave_dir, one FST per chip, <dir>/<preset>.<test>.chip<x>_<y>.fst.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>

#include TP_CHIP_HEADER
#include TP_ICI_HEADER
#include "golden_pod_chip.h"
#include "interrupt.h"
#include "pod_sim.h"
#include "progress.h"
#include "slice.h"

namespace {

using tp::driver::DriverError;
using Chip = tp::tb::PodChip<TP_CHIP_CLASS>;
using Node = tp::tb::PodNode<Chip::Link, Chip::RevWord>;
using GoldenChip = tp::tb::GoldenPodChip<TP_ICI_CLASS, Chip::Link, Chip::RevWord>;

// Link word and reverse word widths (hw.json "ici"): the bit-error hook flips only real bits.
tp::tb::FlitLayout layout(const tp::IciConfig& c) {
  return {c.vcs > 2 ? static_cast<unsigned>(std::bit_width(c.vcs - 1)) : 1u, c.flit_bits};
}
unsigned link_bits(const tp::IciConfig& c) { return layout(c).link_bits(); }
unsigned rev_bits(const tp::IciConfig& c) { return layout(c).rev_bits(c.vcs); }

class PodTop : public sc_core::sc_module {
 public:
  sc_core::sc_clock clk;
  std::vector<std::unique_ptr<Node>> chips;  // by pod index x + y * kx
  std::vector<std::unique_ptr<tp::tb::PodHost>> hosts;
  std::vector<std::vector<unsigned>> host_chips;       // pod indices of each host's chips
  std::vector<std::pair<unsigned, unsigned>> host_of;  // by pod index: (host, its socket)

  PodTop(sc_core::sc_module_name name, const tp::driver::PodSpec& pod, const tp::driver::SliceOptions& opt)
      : sc_core::sc_module(name), clk("clk", 1, sc_core::SC_NS), pod_(pod), opt_(opt) {
    const unsigned kx = pod.kx, ky = pod.ky;
    if (!opt.wave_dir.empty()) std::filesystem::create_directories(opt.wave_dir);
    for (unsigned y = 0; y < ky; ++y) {
      for (unsigned x = 0; x < kx; ++x) {
        tp::tb::ChipStimulus stim;
        stim.latency = pod.preset.chip.mem_latency;
        stim.seed = opt.seed + x + y * kx;
        const bool wave =
            !opt.wave_dir.empty() && (opt.wave_chips.empty() || std::find(opt.wave_chips.begin(), opt.wave_chips.end(),
                                                                          std::pair{x, y}) != opt.wave_chips.end());
        if (wave)
          stim.wave_file =
              fmt::format("{}/{}.{}.chip{}_{}.fst", opt.wave_dir, pod.preset.name, tp::tb::current_test_name(), x, y);
        const auto listed = [&](const auto& v) { return std::find(v.begin(), v.end(), std::pair{x, y}) != v.end(); };
        const bool golden = listed(opt.golden_chips), fast = listed(opt.fast_chips);
        if (golden && fast)
          throw DriverError(fmt::format("chip ({},{}) is both a golden chip and a fast chip of the mixed pod", x, y));
        std::unique_ptr<Node> c;
        if (golden || fast)
          c = std::make_unique<GoldenChip>(fmt::format("chip{}_{}", x, y).c_str(), pod.preset, x, y, fast);
        else
          c = std::make_unique<Chip>(fmt::format("chip{}_{}", x, y).c_str(), pod.preset, stim);
        c->clk(clk);
        const double flip = opt.link_bit_error;
        for (unsigned p = 0; p < 4; ++p) {
          c->fwd[p] = std::make_unique<Node::Fwd>(fmt::format("fwd{}_{}_{}", x, y, p).c_str(), pod.link_latency, flip,
                                                  link_bits(pod.preset.ici), opt.seed * 131 + 4 * (x + y * kx) + p);
          c->rev[p] = std::make_unique<Node::Rev>(fmt::format("rev{}_{}_{}", x, y, p).c_str(), pod.link_latency, flip,
                                                  rev_bits(pod.preset.ici), opt.seed * 137 + 4 * (x + y * kx) + p);
        }
        chips.push_back(std::move(c));
      }
    }
    // Port p of (x, y) reads what its neighbour in direction p sends on the opposite port.
    for (unsigned i = 0; i < chips.size(); ++i) {
      const unsigned x = i % kx, y = i / kx;
      for (unsigned p = 0; p < 4; ++p) {
        unsigned nx = x, ny = y;
        if (p == 0) ny = (y + 1) % ky;
        if (p == 1) ny = (y + ky - 1) % ky;
        if (p == 2) nx = (x + 1) % kx;
        if (p == 3) nx = (x + kx - 1) % kx;
        Node& n = *chips[nx + ny * kx];
        chips[i]->fwd_in[p] = n.fwd[p ^ 1u].get();
        chips[i]->rev_in[p] = n.rev[p ^ 1u].get();
      }
    }
    // Host boards: board_x x board_y chips each (clipped at the torus edge).
    for (unsigned by = 0; by < ky; by += pod.board_y) {
      for (unsigned bx = 0; bx < kx; bx += pod.board_x) {
        std::vector<unsigned> mine;
        for (unsigned y = by; y < std::min(ky, by + pod.board_y); ++y)
          for (unsigned x = bx; x < std::min(kx, bx + pod.board_x); ++x) mine.push_back(x + y * kx);
        auto h = std::make_unique<tp::tb::PodHost>(fmt::format("host{}_{}", bx / pod.board_x, by / pod.board_y).c_str(),
                                                   static_cast<unsigned>(mine.size()));
        h->clk(clk);
        for (unsigned k = 0; k < mine.size(); ++k) (*h->sockets[k])(chips[mine[k]]->socket);
        host_of.resize(chips.size());
        for (unsigned k = 0; k < mine.size(); ++k) host_of[mine[k]] = {static_cast<unsigned>(hosts.size()), k};
        hosts.push_back(std::move(h));
        host_chips.push_back(std::move(mine));
      }
    }
  }

 private:
  tp::driver::PodSpec pod_;
  tp::driver::SliceOptions opt_;
};

class RtlSlice final : public tp::driver::Slice {
 public:
  RtlSlice(const tp::driver::PodSpec& pod, const tp::driver::SliceShape& shape, const tp::driver::SliceOptions& opt)
      : Slice(pod, shape), opt_(opt) {
    tp::driver::claim_systemc_kernel();
    for (const auto& o : opt.others) tp::driver::check_slice(pod, o);
    top_ = std::make_unique<PodTop>("pod", pod, opt);
    sc_core::sc_start(sc_core::SC_ZERO_TIME);  // elaborate
  }

  std::string backend_name() const override { return "rtl"; }

  // Memory through the chip's host board: the debug transport (the backdoor) of its TLM socket.
  void write_pod_chip(unsigned x, unsigned y, uint64_t beat, std::span<const uint32_t> words) override {
    check_pod_chip(x, y);
    const unsigned lanes = preset().mxu.n;
    if (words.size() % lanes != 0)
      throw DriverError(fmt::format("write: {} words is not a whole number of {}-lane beats", words.size(), lanes));
    check_range(beat, words.size() / lanes, "write");
    std::vector<uint32_t> copy(words.begin(), words.end());
    backdoor(x, y, true, beat, copy);
  }
  std::vector<uint32_t> read_pod_chip(unsigned x, unsigned y, uint64_t beat, uint64_t beats) override {
    check_pod_chip(x, y);
    check_range(beat, beats, "read");
    std::vector<uint32_t> out(beats * preset().mxu.n);
    backdoor(x, y, false, beat, out);
    return out;
  }

  tp::driver::SliceStatus run(uint64_t timeout_cycles) override {
    if (ran_) throw DriverError("rtl slice: run() once per pod (SystemC cannot reset its kernel)");
    ran_ = true;
    const auto& pod = this->pod();
    const unsigned kx = pod.kx;
    // Which chips run, with which ICI registers: this slice's and the other tenants'.
    std::vector<tp::driver::SliceShape> slices{shape()};
    slices.insert(slices.end(), opt_.others.begin(), opt_.others.end());
    std::vector<std::optional<tp::driver::IciSetting>> ici(top_->chips.size());
    for (const auto& s : slices)
      for (unsigned y = s.y0; y < s.y0 + s.h; ++y)
        for (unsigned x = s.x0; x < s.x0 + s.w; ++x) ici[x + y * kx] = tp::driver::ici_setting(pod, s, x, y);
    unsigned nhosts = 0;
    for (unsigned b = 0; b < top_->hosts.size(); ++b) {
      std::vector<tp::tb::HostJob> jobs;
      for (unsigned k = 0; k < top_->host_chips[b].size(); ++k) {
        const unsigned idx = top_->host_chips[b][k];
        if (programs_[idx] && !ici[idx])
          throw DriverError(
              fmt::format("rtl slice: chip ({},{}) has a program but is in no slice", idx % kx, idx / kx));
        // Every chip learns the torus and its place, an idle one too: its router carries its
        // slice's traffic. A chip in no slice is a slice of its own.
        const unsigned x = idx % kx, y = idx / kx;
        const auto setting = ici[idx] ? *ici[idx] : tp::driver::ici_setting(pod, {x, y, 1, 1}, x, y);
        jobs.push_back({k, setting, programs_[idx] ? programs_[idx]->code : std::vector<tp::isa::Word>{},
                        programs_[idx].has_value(), opt_.link_fault_rate});
      }
      ++nhosts;
      active_hosts_.emplace_back(b, std::move(jobs));
    }
    for (auto& [b, jobs] : active_hosts_) top_->hosts[b]->run(jobs, &loaded_, &go_, nhosts, &go_);
    // Timelines: every running chip from now, on the pod's common time base.
    std::vector<std::pair<unsigned, tp::trace::ChipTrace>> traced;
    // The chips stop recording however the run ends (an exception too: `traced` is local).
    struct Stop {
      PodTop& top;
      std::vector<std::pair<unsigned, tp::trace::ChipTrace>>& traced;
      ~Stop() {
        for (auto& [i, t] : traced) top.chips[i]->set_timeline(nullptr);
      }
    } stop{*top_, traced};
    if (tracing()) {
      for (unsigned i = 0; i < programs_.size(); ++i) {
        if (!programs_[i] || !top_->chips[i]->has_probe()) continue;  // a mixed pod's golden chips: none
        const auto& ici_i = *ici[i];
        traced.emplace_back(
            i, tp::trace::ChipTrace(fmt::format("chip ({}, {})", i % kx, i / kx),
                                    {ici_i.kx, ici_i.ky, ici_i.x, ici_i.y, ici_i.x0, ici_i.y0, ici_i.w, ici_i.h}));
        traced.back().second.set_group("rtl");
        traced.back().second.start(programs_[i]->code);
      }
      for (auto& [i, t] : traced) top_->chips[i]->set_timeline(&t);
    }

    tp::driver::SliceStatus st;
    for (auto& c : top_->chips) eval_before_.push_back(c->eval_seconds());
    const auto t0 = std::chrono::steady_clock::now();
    // Wait until every host has started its chips: the chips' cycle counters start then.
    std::vector<unsigned> running;
    for (unsigned i = 0; i < programs_.size(); ++i)
      if (programs_[i]) running.push_back(i);
    auto cycle = [] { return static_cast<uint64_t>(sc_core::sc_time_stamp().to_seconds() * 1e9 + 0.5); };
    const uint64_t limit = cycle() + timeout_cycles + 64 * 1024;  // loading takes cycles too
    bool started = false;
    uint64_t start_cycle = 0, quiet = 0, stuck = 0, end_cycle = 0;
    constexpr unsigned kStep = 16, kQuiet = 320;
    // The progress line's time left: the caller's estimate, or on a terminal the golden pod's
    // timing estimate of the same programs (it does not depend on the data, which it does not have).
    uint64_t expected = expected_cycles();
    if (expected == 0 && tp::progress_enabled()) {
      auto gold = tp::driver::Slice::open(pod, shape(), tp::driver::Backend::golden, opt_);
      for (unsigned i = 0; i < programs_.size(); ++i)
        if (programs_[i]) gold->load_pod_chip(i % kx, i / kx, *programs_[i]);
      const auto g = gold->run(std::min<uint64_t>(timeout_cycles, 20'000'000));  // a few seconds at most
      expected = g.ok() ? g.cycles : 0;
    }
    std::optional<tp::Progress> progress;  // from the chips' start (loading them is not their cycles)
    while (true) {
      sc_core::sc_start(sc_core::sc_time(double{kStep}, sc_core::SC_NS));
      if (started) progress->update(cycle() - start_cycle);
      if (!started) {
        started = std::all_of(running.begin(), running.end(), [&](unsigned i) {
          auto& h = *top_->chips[i];
          return h.done() || (h.csr_read(tp::isa::hw::kCsrStatus) & 1u) != 0;
        });
        if (started) {
          start_cycle = cycle();
          progress.emplace(fmt::format("rtl pod {}x{}", shape().w, shape().h), expected);
        }
        if (cycle() > limit) {
          st.timed_out = true;
          break;
        }
        continue;
      }
      bool all_done = true, all_blocked = true, net_busy = false;
      for (unsigned i : running) {
        auto& h = *top_->chips[i];
        all_done &= h.done();
        all_blocked &= h.done() || h.waiting();
      }
      for (auto& c : top_->chips) {
        net_busy |= c->ici_busy();
        for (unsigned p = 0; p < 4; ++p) net_busy |= c->fwd[p]->carrying();
      }
      if (quiet == 0) end_cycle = cycle();  // the run ends here if the quiet lasts
      quiet = (all_done && !net_busy) ? quiet + kStep : 0;
      stuck = (!all_done && all_blocked && !net_busy) ? stuck + kStep : 0;
      // Quiet: no network interface busy and no flit on a link for longer than a link-layer
      // retransmission timeout (256 cycles), so nothing can still be inside a router.
      if (quiet >= kQuiet) break;
      if (stuck >= opt_.watchdog) {
        st.deadlock = true;
        break;
      }
      if (cycle() - start_cycle > timeout_cycles || tp::interrupted()) {
        st.timed_out = true;
        st.interrupted = tp::interrupted();
        break;
      }
    }
    st.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (auto& c : top_->chips) st.chip_eval_seconds += c->eval_seconds() - eval_before_[&c - &top_->chips[0]];
    // Up to the first quiet step (the quiet window itself is not the program's time).
    st.cycles = started ? (quiet >= kQuiet ? end_cycle : cycle()) - start_cycle : 0;
    for (unsigned i : running) {
      auto& h = *top_->chips[i];
      tp::driver::ChipOutcome o;
      o.x = i % kx;
      o.y = i / kx;
      tp::tb::ChipRun r;
      r.done = h.done();
      r.timed_out = !r.done && !st.deadlock;
      if (r.done || r.timed_out) h.finish(r);
      o.status.done = r.done;
      o.status.timed_out = r.timed_out;
      o.status.err = static_cast<tp::isa::Err>(r.err);
      o.status.pc = r.pc;
      auto& m = counters_[i];
      m = h.counters();
      o.status.cycles = m.at("cycles");
      if (!r.done) {
        o.waiting = h.waiting();
        o.wait_pc = h.csr_read(tp::isa::hw::kCsrWaitPc);
        const auto& code = programs_[i]->code;
        if (o.wait_pc < code.size())
          o.wait_sem =
              static_cast<unsigned>((code[o.wait_pc][1] >> (tp::isa::kWaitLsb - 64)) & (tp::isa::kNumSems - 1));
      }
      st.chips.push_back(o);
    }
    // A chip without a program still forwards flits through its router: its counters too (the
    // links' flits are its only non-zero ones), for the pod's energy (docs/energy.md).
    for (unsigned i = 0; i < top_->chips.size(); ++i)
      if (!programs_[i]) counters_[i] = top_->chips[i]->counters();
    // One time base for the pod: 0 is the first chip's first counted cycle.
    uint64_t base = UINT64_MAX;
    for (auto& [i, t] : traced) {
      top_->chips[i]->set_timeline(nullptr);
      t.finish();
      base = std::min(base, t.first_cycle());
    }
    for (auto& [i, t] : traced) {
      if (base != UINT64_MAX) t.shift(base);
      timelines_.push_back(std::move(t));
    }
    traced.clear();
    for (auto& c : top_->chips)
      for (unsigned p = 0; p < 4; ++p) flips_ += c->fwd[p]->flips() + c->rev[p]->flips();
    st.report = tp::driver::describe_outcomes(st);
    return st;
  }

  std::map<std::string, uint64_t> counters(unsigned x, unsigned y) override {
    if (x >= pod().kx || y >= pod().ky) throw DriverError(fmt::format("counters: no chip ({},{}) in the pod", x, y));
    auto m = counters_[x + y * pod().kx];
    m["link_bit_flips_pod"] = flips_;
    return m;
  }

 private:
  void backdoor(unsigned x, unsigned y, bool write, uint64_t beat, std::span<uint32_t> words) {
    const auto [host, socket] = top_->host_of[x + y * pod().kx];
    top_->hosts[host]->memory(socket, write, beat * 4 * preset().mxu.n, words);
  }
  void check_range(uint64_t beat, uint64_t beats, const char* what) const {
    const uint64_t total = preset().chip.hbm_beats;
    if (beat > total || beats > total - beat)
      throw DriverError(fmt::format("{}: beats [{}, {}) run past the end of HBM ({} beats, preset '{}')", what, beat,
                                    beat + beats, total, preset().name));
  }

  tp::driver::SliceOptions opt_;
  std::unique_ptr<PodTop> top_;
  bool ran_ = false;
  unsigned loaded_ = 0;
  sc_core::sc_event go_;
  std::vector<std::pair<unsigned, std::vector<tp::tb::HostJob>>> active_hosts_;
  std::map<unsigned, std::map<std::string, uint64_t>> counters_;
  uint64_t flips_ = 0;
  std::vector<double> eval_before_;
};

const bool registered = [] {
  tp::driver::register_slice_backend(
      TP_PRESET, [](const tp::driver::PodSpec& p, const tp::driver::SliceShape& s, const tp::driver::SliceOptions& o) {
        return std::make_unique<RtlSlice>(p, s, o);
      });
  return true;
}();

}  // namespace
