// What a chip did, instruction by instruction (docs/observability.md): the timeline both
// backends record, the Chrome Trace Event file (ui.perfetto.dev, chrome://tracing) written from
// it, and the op profile.
//
// A ChipTrace holds one run of one chip. Times are cycles: on the RTL the recorder's own clock
// until the run is over, then shifted (shift()) so that 0 is the chip's first counted cycle (a
// pod: the first chip's, so its chips share one time base); on the golden backend the timing
// estimate. Every queue (load, mxu, vec, store, ici) gets one slice per instruction that left it,
// from the cycle it left the queue to the cycle the next one left or the unit went idle, whichever
// came first, so a queue's slices never overlap; a fence that only waits (no signal) starts
// nothing in its unit and gets a zero-length slice inside the running instruction's. Each cycle
// of a unit is counted once, as the RTL's unit counters count it:
// - busy: the unit holds an instruction and moved data (a request, a row, a flit);
// - stall: it holds one and moved nothing; the cause is the unit's (kStallCause);
// - wait: it is idle and the head of its queue waits for a semaphore count;
// - idle: anything else.
// Busy and stall cycles go to the slice of the instruction that left the queue last (not a
// waiting fence); wait cycles to the instruction that waited (the next to leave, or at the end of
// a run that stopped waiting, a zero-length slice of the head that never left). So over a run, a
// unit's slices add up to its busy and stall counters and their waits to its wait counter,
// exactly.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ici_model.h"
#include "isa.h"

namespace tp::trace {

inline constexpr unsigned kUnits = isa::kQueues;  // load, mxu, vec, store, ici (the ISA table's order)
inline constexpr std::array<std::string_view, kUnits> kUnitNames = {"load", "mxu", "vec", "store", "ici"};
// What a unit that holds an instruction and moves nothing waits for.
inline constexpr std::array<std::string_view, kUnits> kStallCause = {"memory", "mxu_backpressure", "vmem_bank",
                                                                     "memory", "ici_credit"};

enum class Kind : uint8_t { busy = 0, wait = 1, stall = 2, idle = 3 };  // the RTL counters' order

struct XY {
  unsigned x = 0, y = 0;
  friend bool operator==(XY, XY) = default;
  friend auto operator<=>(XY, XY) = default;
};

struct Slice {
  uint32_t pc = 0;
  uint8_t unit = 0;
  uint64_t start = 0, end = 0;  // [start, end)
  uint64_t busy = 0, stall = 0;
  uint64_t wait = 0, wait_start = 0;  // semaphore wait before start: cycles, the first of them
};
struct Send {  // an ici.send left its queue
  uint64_t t = 0;
  uint32_t pc = 0;
  XY dst;
};
struct Arrival {  // the last row of a transfer was written into VMEM
  uint64_t t = 0;
  XY src;
};
struct Sample {
  uint64_t t = 0;
  double value = 0;
};

class ChipTrace {
 public:
  // ici: the chip's ICI registers (its place in the torus and its slice), for its sends.
  explicit ChipTrace(std::string name = "chip", golden::IciRegs ici = {});

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  // Chips of one group (a backend's pod) exchange ICI transfers; flows never cross groups.
  const std::string& group() const { return group_; }
  void set_group(std::string g) { group_ = std::move(g); }
  const golden::IciRegs& ici() const { return ici_; }
  void set_ici(const golden::IciRegs& r) { ici_ = r; }
  XY self() const { return {ici_.x, ici_.y}; }
  // Keep slices, sends, arrivals and samples (else only the totals: the golden backend's counters).
  void keep_events(bool on) { keep_ = on; }
  bool keeps_events() const { return keep_; }

  // A new run of `code`: every event and total cleared.
  void start(std::span<const isa::Word> code);
  const std::vector<isa::Word>& code() const { return code_; }

  // The RTL, once per counted cycle t: go bit q set when queue q's head left this cycle (pc[q] its
  // PC), kinds 2 bits per unit (Kind).
  void cycle(uint64_t t, unsigned go, const uint32_t* pc, unsigned kinds);
  // The golden estimate, once per instruction as it executes: it was dispatched at dispatch_t,
  // its semaphore count arrived at token_t (0: none), and it ran over [start, complete).
  void span(unsigned unit, uint32_t pc, uint64_t dispatch_t, uint64_t token_t, uint64_t start, uint64_t complete);
  void send(uint64_t t, uint32_t pc, XY dst);
  // The destination from the instruction and ici() (golden::ici_destination); nothing for a send
  // that would stop with ici_config or ici_slice (it transfers nothing).
  void send_at(uint64_t t, uint32_t pc);
  void arrival(uint64_t t, XY src);
  void sample(std::string_view track, uint64_t t, double value);
  // The golden estimate's counter tracks: `amount` spread evenly over [start, end) (a zero-length
  // span: at start), turned by finish() into one sample per kWindow cycles of amount per cycle.
  void activity(std::string_view track, uint64_t start, uint64_t end, double amount);
  static constexpr uint64_t kWindow = 256;
  // The run is over. The RTL's open slices close after its last recorded cycle, and a head still
  // waiting gets its wait slice; golden_end: the estimate's end (the golden backend counts its
  // idle cycles from it). Again after more recording: the same.
  void finish(uint64_t golden_end = 0);
  // Every time minus d (d at most first_cycle()).
  void shift(uint64_t d);

  uint64_t end() const { return end_; }
  // The first counted cycle the RTL recorded (UINT64_MAX: none yet).
  uint64_t first_cycle() const { return first_; }
  const std::vector<Slice>& slices() const { return slices_; }
  const std::vector<Send>& sends() const { return sends_; }
  const std::vector<Arrival>& arrivals() const { return arrivals_; }
  const std::map<std::string, std::vector<Sample>, std::less<>>& samples() const { return samples_; }
  // Cycle totals per unit and Kind; `unattributed`: busy or stall cycles with no instruction to
  // go to (none in a run that started from reset).
  uint64_t total(unsigned unit, Kind k) const { return totals_[unit][static_cast<unsigned>(k)]; }
  uint64_t unattributed() const { return unattributed_; }

 private:
  struct Unit {
    bool open = false;
    Slice cur;  // the open slice (golden: end is its planned completion)
    uint64_t pending_wait = 0, pending_wait_start = 0, last_end = 0;
    uint32_t pending_wait_pc = 0;
  };
  // s: a slice for the instruction at pc leaving queue q at t, with the wait it had.
  void take(Slice& s, unsigned q, uint32_t pc, uint64_t t);
  void open(unsigned q, uint32_t pc, uint64_t t);
  void close(unsigned q, uint64_t t);
  // A zero-length slice at t for an instruction that starts nothing in its unit, with its wait.
  void mark(unsigned q, uint32_t pc, uint64_t t);

  std::string name_, group_;
  golden::IciRegs ici_;
  bool keep_ = true;
  std::vector<isa::Word> code_;
  std::array<Unit, kUnits> units_{};
  std::array<std::array<uint64_t, 4>, kUnits> totals_{};
  uint64_t unattributed_ = 0, end_ = 0, first_ = UINT64_MAX;
  bool golden_ = false;
  std::vector<bool> passive_;  // by PC: a fence without a signal (starts nothing in its unit)
  std::vector<Slice> slices_;
  std::vector<Send> sends_;
  std::vector<Arrival> arrivals_;
  std::map<std::string, std::vector<Sample>, std::less<>> samples_;
  std::map<std::string, std::vector<double>, std::less<>> bins_;  // activity() per kWindow cycles
};

// The golden estimate's unit counters from its timeline, under the RTL's names: {unit}_busy,
// {unit}_wait and {unit}_idle per unit (the estimate has no stalls).
void add_unit_counters(std::map<std::string, uint64_t>&, const ChipTrace&);

// The Chrome Trace Event file of several chips (one process each, in order): a track per unit
// queue with its slices and waits, an "ici rx from (x, y)" track per sender with one-cycle
// arrival slices, counter tracks from the samples, and a flow from every send to its arrival (the
// k-th send from chip A to chip B ends at the k-th arrival at B from A: transfers between two
// chips arrive in order). The flows without both ends are counted in the file's metadata
// (`unmatched_flows`) and returned.
struct TraceInfo {
  std::string tool, backend, preset;
  double clock_ghz = 0;
};
uint64_t write_chrome_trace(std::ostream&, std::span<const ChipTrace* const>, const TraceInfo&);

// The op profile of a chip's run: per unit and per instruction class (mnemonic), the count and the
// busy, stall and wait cycles; the instructions (by PC) that waited longest.
struct ProfileRow {
  std::string unit, op;
  uint64_t count = 0, busy = 0, stall = 0, wait = 0;
};
struct ProfileWait {
  uint32_t pc = 0;
  unsigned line = 0;  // line of `tensorpod disasm`'s listing: pc + 3 (after its two header lines)
  std::string text;
  uint64_t count = 0, wait = 0;
};
struct Profile {
  uint64_t cycles = 0;
  std::vector<ProfileRow> units;  // one per unit: op "*"
  std::vector<ProfileRow> ops;    // per unit and mnemonic, by busy + stall cycles, largest first
  std::vector<ProfileWait> top_waits;
};
Profile make_profile(const ChipTrace&, unsigned top = 10);
std::string format_profile(const Profile&, const std::string& title);

}  // namespace tp::trace
