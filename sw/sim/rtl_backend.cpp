// The RTL backend of the driver for one preset (compiled once per preset with TP_PRESET,
// TP_CHIP_HEADER and TP_CHIP_CLASS): the Verilated chip behind tp::driver::Chip. It registers
// itself from a static initializer; it is built as an object library so the linker keeps it.
//
// Every run starts from a chip reset (the memory keeps its contents), loads the program through
// the host registers, starts the chip and clocks it until done, an error or the timeout. Waves:
// with TP_WAVES=<dir>, each chip writes <dir>/<preset>.<test>.fst (every run of it, one after
// another; <test> is the GoogleTest's name, "standalone" in the tensorpod tool).
#include <fmt/format.h>

#include <memory>

#include TP_CHIP_HEADER
#include "chip_harness.h"
#include "chip_model.h"
#include "driver.h"
#include "interrupt.h"
#include "progress.h"

namespace {

class RtlChip final : public tp::driver::Chip {
 public:
  explicit RtlChip(const tp::Preset& p) : Chip(p) {}

  void write(uint64_t beat, std::span<const uint32_t> words) override {
    if (words.size() % lanes() != 0)
      throw tp::driver::DriverError(
          fmt::format("write: {} words is not a whole number of {}-lane beats", words.size(), lanes()));
    check_hbm_range(beat, words.size() / lanes(), "write");
    harness().write_mem(beat, words);
  }
  std::vector<uint32_t> read(uint64_t beat, uint64_t beats) override {
    check_hbm_range(beat, beats, "read");
    return harness().read_mem(beat, beats);
  }
  void load(const tp::isa::Program& prog) override {
    check_program(prog);
    code_ = prog.code;
    program_ = prog;
    loaded_ = true;
  }
  tp::driver::Status run(uint64_t timeout_cycles) override {
    if (!loaded_) throw tp::driver::DriverError("run: no program loaded");
    auto& h = harness();
    try {
      h.reset();
    } catch (const std::runtime_error& e) {  // a chip that timed out on HBM
      throw tp::driver::DriverError(e.what());
    }
    h.load(code_);
    const auto hbm_before = h.hbm_counters();  // the HBM is not reset between runs: report deltas
    if (auto* t = trace()) {
      t->start(code_);
      const auto& ici = h.ici();
      t->set_ici({ici.kx, ici.ky, ici.x, ici.y, ici.x0, ici.y0, ici.w, ici.h});
      h.set_timeline(t);
    }
    // The harness stops recording however the run ends (an exception too: the trace is the caller's).
    struct Stop {
      tp::tb::ChipHarness<TP_CHIP_CLASS>& h;
      ~Stop() { h.set_timeline(nullptr); }
    };
    tp::tb::ChipRun r;
    {
      Stop stop{h};
      r = h.run(timeout_cycles, expected(timeout_cycles));
    }
    tp::driver::Status s;
    s.done = r.done;
    s.timed_out = r.timed_out;
    s.interrupted = r.timed_out && tp::interrupted();
    s.err = static_cast<tp::isa::Err>(r.err);
    s.pc = r.pc;
    counters_.clear();
    const auto names = tp::driver::rtl_counter_names();
    for (unsigned k = 0; k < names.size(); ++k) counters_[std::string(names[k])] = h.counter(k);
    for (const auto& [name, value] : h.hbm_counters()) {
      const bool level = name == "hbm_read_latency_max" || name == "hbm_pseudo_channels";
      counters_[name] = level ? value : value - hbm_before.at(name);
    }
    s.cycles = counters_.at("cycles");
    if (auto* t = trace()) {
      t->finish();
      if (t->first_cycle() != UINT64_MAX) t->shift(t->first_cycle());  // 0: the first counted cycle
    }
    return s;
  }
  std::map<std::string, uint64_t> counters() override { return counters_; }
  std::string backend_name() const override { return "rtl"; }

 private:
  tp::tb::ChipHarness<TP_CHIP_CLASS>& harness() {
    if (!harness_) {
      tp::tb::ChipStimulus stim;
      stim.latency = preset().chip.mem_latency;
      stim.wave_file = tp::tb::wave_path(preset().name + "." + tp::tb::current_test_name());
      harness_ = std::make_unique<tp::tb::ChipHarness<TP_CHIP_CLASS>>(preset(), stim);
    }
    return *harness_;
  }

  // The progress line's time left: the caller's estimate, or on a terminal the golden timing
  // estimate of the same program (it does not depend on the data; the interpreter runs it on an
  // empty memory, far faster than the chip).
  uint64_t expected(uint64_t timeout) const {
    if (expected_cycles() != 0 || !tp::progress_enabled()) return expected_cycles();
    tp::golden::ChipModel m(preset());
    const auto& ici = harness_->ici();
    m.set_ici({ici.kx, ici.ky, ici.x, ici.y, ici.x0, ici.y0, ici.w, ici.h});
    m.set_pod_mode(false);
    m.load(program_);
    try {
      // At most a few seconds of the interpreter: a program that runs longer gets no estimate.
      if (!m.run(std::min<uint64_t>(timeout, kEstimateSteps)).done) return 0;
    } catch (const std::exception&) {
      return 0;  // a send to another chip (no pod here): no estimate
    }
    return m.stats().est_cycles;
  }

  static constexpr uint64_t kEstimateSteps = 20'000'000;
  std::unique_ptr<tp::tb::ChipHarness<TP_CHIP_CLASS>> harness_;
  tp::isa::Program program_;
  std::vector<tp::isa::Word> code_;
  bool loaded_ = false;
  std::map<std::string, uint64_t> counters_;
};

const bool registered = [] {
  tp::driver::register_backend(tp::driver::Backend::rtl, TP_PRESET,
                               [](const tp::Preset& p) { return std::make_unique<RtlChip>(p); });
  return true;
}();

}  // namespace
