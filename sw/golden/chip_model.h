// The golden ISA interpreter of one tensorpod chip (docs/chip.md): functionally bit-exact with
// the RTL, with the same error codes and error PCs.
//
// The front end dispatches in program order into four queues (load, mxu, vec, store) of depth
// chip.queue and checks each instruction as it fetches it (docs/chip.md "Checks and error
// codes"). Each unit executes its queue head atomically once the head's wait semaphore has a
// count. The arithmetic is the golden numerics: MxuModel for the MXU, vpu_row for the vector
// unit. Programs whose result depends on the timing between queues (races) have no defined
// result, on the RTL or here.
//
// Next to the functional model, a simple timing estimate (Stats::est_cycles; see chip_model.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <span>
#include <unordered_map>
#include <vector>

#include "config.h"
#include "isa.h"
#include "mxu_model.h"

namespace tp::golden {

class ChipModel {
 public:
  explicit ChipModel(const tp::Preset&);

  const tp::Preset& preset() const { return preset_; }
  unsigned lanes() const { return n_; }  // mxu.n: lanes per row, words per beat

  // Backdoor access to the memory behind the memory port (HBM), one beat = lanes() words.
  // write_hbm: words.size() must be a multiple of lanes() (else std::invalid_argument); both
  // throw std::out_of_range when the beats run past chip.hbm_beats. Unwritten memory reads 0.
  void write_hbm(uint64_t beat, std::span<const uint32_t> words);
  std::vector<uint32_t> read_hbm(uint64_t beat, uint64_t beats) const;

  // Loads a program and resets the run state (PC 0, queues, semaphores, statistics), as the
  // host's start does. VMEM, the accumulators and HBM keep their contents. Throws isa::IsaError
  // when the program was built for another preset, std::invalid_argument when it is longer than
  // chip.imem_words.
  void load(const isa::Program&);

  struct Result {
    isa::Err err = isa::Err::none;
    uint32_t pc = 0;     // error PC; on success the PC of halt; else the front end's PC
    bool done = false;   // false: max_steps instructions ran first (a watchdog), run() may go on
    uint64_t steps = 0;  // instructions executed by the units since load()
  };
  // Runs until done, an error, or max_steps more unit instructions. After done, returns the
  // same result again.
  Result run(uint64_t max_steps = 1ull << 32);

  // Statistics; the names of the RTL counters where they exist. instructions: instructions the
  // front end accepted (including halt); mxu_rows: activation rows streamed by mxu.mm; vec_rows:
  // destination rows written by vector instructions; est_cycles: the timing estimate.
  struct Stats {
    uint64_t instructions = 0, bytes_loaded = 0, bytes_stored = 0, mxu_rows = 0, vec_rows = 0;
    uint64_t est_cycles = 0;
  };
  const Stats& stats() const { return stats_; }

  std::span<const uint32_t> vmem() const { return vmem_; }                              // vmem_rows * lanes() words
  std::span<const uint32_t> acc_row(unsigned row) const { return mxu_.read_acc(row); }  // throws std::out_of_range

 private:
  struct Entry {
    isa::Instr instr;
    uint32_t pc = 0;
    uint64_t seq = 0;         // position in its queue's sequence (timing: queue slots)
    uint64_t dispatch_t = 0;  // timing estimate: when the front end handed it over
  };

  // Front end.
  void dispatch();
  isa::Err check(const isa::Instr&);
  // Units.
  bool can_start(unsigned q) const;
  void execute(unsigned q);
  void exec_vector(const isa::Instr&);
  void fail(isa::Err err, uint32_t pc);

  // HBM pages (sparse).
  const uint32_t* hbm_beat(uint64_t beat) const;  // nullptr: never written (reads 0)
  uint32_t* hbm_beat_mut(uint64_t beat);
  void check_hbm_range(const char* what, uint64_t beat, uint64_t beats) const;

  tp::Preset preset_;
  unsigned n_;
  uint64_t page_beats_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> hbm_;
  std::vector<uint32_t> vmem_;
  MxuModel mxu_;

  std::vector<isa::Word> code_;
  bool loaded_ = false;

  // Run state.
  uint32_t pc_ = 0;
  bool have_fetched_ = false;  // instr at pc_ fetched and checked, stalled on a full queue
  isa::Instr fetched_;
  bool halted_ = false;
  bool finished_ = false;
  Result result_;
  bool seen_lw_ = false, lw_unused_ = false;  // the front end's MXU sequence check
  bool switch_pending_ = false;               // the next mxu.mm row switches to the new tile
  std::array<std::deque<Entry>, isa::kQueues> queues_;
  std::array<uint32_t, 16> sems_{};
  uint64_t steps_ = 0;
  Stats stats_;

  // Timing estimate.
  std::array<std::deque<uint64_t>, 16> tokens_;                // per semaphore: when each count arrived
  std::array<uint64_t, isa::kQueues> seq_{};                   // instructions dispatched per queue
  std::array<std::vector<uint64_t>, isa::kQueues> slot_free_;  // ring: completion time by seq % depth
  std::array<uint64_t, isa::kQueues> unit_free_{};             // load/vec/store: last completion
  std::array<uint64_t, isa::kQueues> queue_done_{};            // last completion per queue (in order)
  uint64_t front_t_ = 0;
  uint64_t mxu_handoff_ = 0, loader_free_ = 0, streamer_free_ = 0, last_mm_start_ = 0, lw_done_ = 0;
};

}  // namespace tp::golden
