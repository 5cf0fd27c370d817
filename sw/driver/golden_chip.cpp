// The golden backend: the ISA interpreter (sw/golden/chip_model) behind the Chip interface; the
// fast backend is the same with the fast chip model's timing (golden::make_fast_timing).
#include <fmt/format.h>

#include "chip_model.h"
#include "driver.h"
#include "interrupt.h"

namespace tp::driver {

namespace {

class GoldenChip final : public Chip {
 public:
  GoldenChip(const Preset& p, bool fast, bool timing_only) : Chip(p), model_(p), fast_(fast) {
    if (fast) model_.set_timing(golden::make_fast_timing(p));
    model_.set_timing_only(timing_only);
  }

  void write(uint64_t beat, std::span<const uint32_t> words) override {
    if (words.size() % lanes() != 0)
      throw DriverError(fmt::format("HBM write at beat {}: {} words is not a whole number of {}-lane beats", beat,
                                    words.size(), lanes()));
    check_hbm_range(beat, words.size() / lanes(), "HBM write");
    model_.write_hbm(beat, words);
  }

  std::vector<uint32_t> read(uint64_t beat, uint64_t beats) override {
    check_hbm_range(beat, beats, "HBM read");
    return model_.read_hbm(beat, beats);
  }

  void load(const isa::Program& prog) override {
    check_program(prog);
    model_.load(prog);
  }

  // The interpreter has no cycle-accurate timing: its steps stand in for cycles in the timeout,
  // and Status.cycles is its estimate.
  Status run(uint64_t timeout_cycles) override {
    model_.timeline().keep_events(trace() != nullptr);
    const auto r = model_.run(timeout_cycles);
    Status s;
    s.done = r.done;
    s.timed_out = !r.done;
    s.interrupted = !r.done && tp::interrupted();
    s.err = r.err;
    s.pc = r.pc;
    s.cycles = model_.stats().est_cycles;
    steps_ = r.steps;
    const auto& tl = model_.finish_timeline();
    if (auto* t = trace()) {
      std::string name = t->name(), group = t->group();
      *t = tl;
      t->set_name(std::move(name));
      t->set_group(std::move(group));
    }
    return s;
  }

  std::map<std::string, uint64_t> counters() override {
    const auto& st = model_.stats();
    std::map<std::string, uint64_t> c = {{std::string(kCycles), st.est_cycles},
                                         {"est_cycles", st.est_cycles},
                                         {std::string(kInstructions), st.instructions},
                                         {std::string(kBytesLoaded), st.bytes_loaded},
                                         {std::string(kBytesStored), st.bytes_stored},
                                         {std::string(kMxuRows), st.mxu_rows},
                                         {"vec_rows", st.vec_rows},
                                         {"steps", steps_}};
    trace::add_unit_counters(c, model_.timeline());
    return c;
  }

  std::string backend_name() const override { return fast_ ? "fast" : "golden"; }

 private:
  golden::ChipModel model_;
  bool fast_ = false;
  uint64_t steps_ = 0;
};

}  // namespace

std::unique_ptr<Chip> make_golden_chip(const Preset& p, bool fast, bool timing_only) {
  if (timing_only && !fast) throw DriverError("timing-only runs are the fast backend's");
  return std::make_unique<GoldenChip>(p, fast, timing_only);
}

}  // namespace tp::driver
