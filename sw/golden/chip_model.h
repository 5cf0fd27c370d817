// The golden ISA interpreter of one tensorpod chip (docs/chip.md): functionally bit-exact with
// the RTL, with the same error codes and error PCs.
//
// The front end dispatches in program order into five queues (load, mxu, vec, store, ici) of
// depth chip.queue and checks each instruction as it fetches it (docs/chip.md "Checks and error
// codes"). Each unit executes its queue head atomically once the head's wait semaphore has a
// count. The arithmetic is the golden numerics: MxuModel for the MXU, vpu_row for the vector
// unit. Programs whose result depends on the timing between queues (races) have no defined
// result, on the RTL or here.
//
// ICI (docs/isa.md, ici.send): the chip's ICI registers (set_ici) place it in a torus and a
// slice. An ici.send, when it executes, copies its rows out of VMEM into an IciMessage and hands
// it to the sender hook (set_ici_sender), which delivers it later to the destination chip's
// deliver(); PodModel (pod_model.h) is such a hook. Without a hook a send to the chip itself is
// delivered at once (a standalone chip), and a send elsewhere is a std::logic_error. In pod mode
// (set_pod_mode) a chip whose every queue head waits does not report deadlock: run() returns
// with Result::waiting, since another chip may still signal it.
//
// Next to the functional model, a timing estimate (Stats::est_cycles) behind the ChipTiming
// interface (chip_timing.h).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "chip_timing.h"
#include "config.h"
#include "ici_model.h"
#include "isa.h"
#include "lazy_zero.h"
#include "mxu_model.h"
#include "trace.h"

namespace tp::golden {

// One ici.send's transfer, as the sending chip hands it to the network.
struct IciMessage {
  Coord src, dst;               // sender and destination (torus coordinates)
  uint32_t raddr = 0;           // first VMEM row written on the destination
  unsigned rsem = 0;            // semaphore signalled there once every row is written (0: none)
  std::vector<uint32_t> words;  // the rows, rows * lanes words, row by row
  uint32_t pc = 0;              // the sender's ici.send
  uint64_t send_t = 0;          // timing estimate: when the ICI unit starts the send ...
  uint64_t sent_t = 0;          // ... and when its last row has left
  uint64_t arrive_t = 0;        // timing estimate: when the last row is written on the destination
};

// Takes a message for delivery (ChipModel::deliver on the destination, in the order the sender
// handed them over for the same destination).
using IciSender = std::function<void(IciMessage)>;

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
  // Their range check alone (what: the caller's name, for the message).
  void check_hbm_range(const char* what, uint64_t beat, uint64_t beats) const;

  // Loads a program and resets the run state (PC 0, queues, semaphores, statistics), as the
  // host's start does. VMEM, the accumulators and HBM keep their contents. Throws isa::IsaError
  // when the program was built for another preset, std::invalid_argument when it is longer than
  // chip.imem_words.
  void load(const isa::Program&);
  // load()'s checks alone: throws as load() would, changes nothing.
  void check_loadable(const isa::Program&) const;

  struct Result {
    isa::Err err = isa::Err::none;
    uint32_t pc = 0;     // error PC; on success the PC of halt; else the front end's PC
    bool done = false;   // false: max_steps instructions ran first (a watchdog), or waiting
    uint64_t steps = 0;  // instructions executed since load(): by the units, and scalar ones by the front end
    // Pod mode only: nothing can start, work is left, and only another chip can help (done is
    // false; run() may go on after a deliver()). wait_pc: the smallest PC among the queue heads,
    // all of which wait (the PC a deadlock would report); wait_sem: that head's wait semaphore.
    bool waiting = false;
    uint32_t wait_pc = 0;
    unsigned wait_sem = 0;
  };
  // Runs until done, an error, max_steps more instructions executed (unit instructions, and
  // the front end's scalar instructions and branches: a loop that never ends stops here), or
  // (pod mode) waiting. After done, returns the same result again.
  Result run(uint64_t max_steps = 1ull << 32);

  // ICI. set_ici: the registers the host writes before a run (kept across load()); it also sets
  // pod mode to w * h > 1, which set_pod_mode() afterwards overrides. Inconsistent registers
  // (ici_regs_ok false) are accepted here; an ici.send that executes with them is the error
  // ici_config.
  void set_ici(const IciRegs&);
  const IciRegs& ici() const { return ici_; }
  void set_pod_mode(bool on) { pod_mode_ = on; }
  bool pod_mode() const { return pod_mode_; }
  // The hook every ici.send's message goes to (an empty function: none).
  void set_ici_sender(IciSender s) { sender_ = std::move(s); }
  // A message arrives (the network interface's side): writes words (a whole number of rows)
  // into VMEM rows raddr.., then gives one count to semaphore rsem (0: none) stamped arrive_t for
  // the timing estimate. A count past 65535 stops a running chip with sem_overflow at pc
  // 0xffffffff; a chip that has finished keeps its result. Throws std::invalid_argument (not
  // whole rows, rsem >= isa::kNumSems) or std::out_of_range (rows past VMEM).
  void deliver(uint32_t raddr, std::span<const uint32_t> words, unsigned rsem, uint64_t arrive_t = 0);

  // Replaces the timing estimate (the default: make_dataflow_timing(preset)), reset to time 0;
  // call it between runs. Throws std::invalid_argument for a null model.
  void set_timing(std::unique_ptr<ChipTiming>);
  // Timing only (the fast model's sweep mode): instructions run through the queues, the
  // semaphores and the timing model as always, and their statistics count, but DMA, the MXU and
  // the vector unit move no data (ici.send still carries its rows). Control flow never depends on
  // data, so the instruction stream and the cycles are the same; VMEM, HBM and the accumulators
  // are not defined afterwards.
  void set_timing_only(bool on) { timing_only_ = on; }
  bool timing_only() const { return timing_only_; }

  // Statistics; the names of the RTL counters where they exist. instructions: instructions the
  // front end accepted (including halt); mxu_rows: activation rows streamed by mxu.mm; vec_rows:
  // destination rows written by vector instructions; est_cycles: the timing estimate.
  // ici_bytes_sent / ici_bytes_received: VMEM bytes ici.send sent and deliver() wrote.
  struct Stats {
    uint64_t instructions = 0, bytes_loaded = 0, bytes_stored = 0, mxu_rows = 0, vec_rows = 0;
    uint64_t ici_bytes_sent = 0, ici_bytes_received = 0;
    uint64_t est_cycles = 0;
  };
  const Stats& stats() const { return stats_; }

  // The run's timeline on the timing estimate (trace.h): always its per-unit totals (busy and
  // wait; the estimate has no stalls), with keep_events(true) every instruction's slice, the
  // sends and arrivals. finish_timeline() closes it at est_cycles (again after more run()).
  trace::ChipTrace& timeline() { return timeline_; }
  const trace::ChipTrace& finish_timeline() {
    timeline_.finish(stats_.est_cycles);
    return timeline_;
  }
  // A transfer from src was delivered (the pod calls it next to deliver(); the timeline's arrival).
  void note_arrival(Coord src, uint64_t arrive_t) { timeline_.arrival(arrive_t, {src.x, src.y}); }

  uint32_t reg(unsigned r) const { return regs_.at(r); }                                // scalar register r (r0 is 0)
  std::span<const uint32_t> vmem() const { return vmem_; }                              // vmem_rows * lanes() words
  std::span<const uint32_t> acc_row(unsigned row) const { return mxu_.read_acc(row); }  // throws std::out_of_range

 private:
  struct Entry {
    isa::Instr instr;
    uint32_t pc = 0;
    uint64_t seq = 0;         // position in its queue's sequence (timing: queue slots)
    uint64_t dispatch_t = 0;  // timing estimate: when the front end handed it over
  };

  // Front end. dispatch: fetches, checks and dispatches or executes (scalar instructions and
  // branches) until a queue is full, halt, an error or the budget runs out, or, after a scalar
  // instruction, a unit can start (the units run while the front end loops), or one instruction
  // after a unit instruction that can start (the chip finds an execute-time error about then).
  // Returns true only when it stopped because the budget ran out at a scalar instruction.
  bool dispatch(uint64_t& budget);
  void push_fetched(bool copy);
  isa::Err resolve(isa::Instr&, const isa::InstrDesc&) const;  // register fields into their fields (docs/isa.md)
  isa::Err check(const isa::Instr&);
  isa::Err check_scalar(const isa::Instr&, bool branch) const;
  void exec_scalar(const isa::Instr&);
  // Units.
  bool can_start(unsigned q) const;
  void execute(unsigned q);
  void exec_vector(const isa::Instr&);
  void exec_send(const Entry&, Coord dst, const TimeSpan&);
  void fail(isa::Err err, uint32_t pc);

  // HBM pages (sparse).
  const uint32_t* hbm_beat(uint64_t beat) const;  // nullptr: never written (reads 0)
  uint32_t* hbm_beat_mut(uint64_t beat);

  tp::Preset preset_;
  trace::ChipTrace timeline_{"chip", {}};
  unsigned n_;
  uint64_t page_beats_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> hbm_;
  LazyZeroWords vmem_;  // untouched rows cost no memory (lazy_zero.h)
  MxuModel mxu_;

  std::vector<isa::Word> code_;
  // An instruction word decoded once at load(), with what the front end asks of it at every
  // fetch (a loop fetches the same words again and again).
  struct Fetch {
    isa::Decoded d;
    const isa::InstrDesc* desc = nullptr;  // nullptr for a word that did not decode
    bool scalar = false, branch = false;
    isa::RegUse use;    // scalar: the registers it reads and writes
    unsigned unit = 0;  // a unit instruction's queue (a fence's bad unit: 0; check() refuses it)
  };
  std::vector<Fetch> decoded_;
  unsigned fetched_unit_ = 0;  // fetched_'s queue
  bool loaded_ = false;

  // Run state.
  uint32_t pc_ = 0;
  bool have_fetched_ = false;  // instr at pc_ fetched and checked, stalled on a full queue
  isa::Instr fetched_;         // that instruction (one with room in its queue goes there at once)
  bool halted_ = false;
  bool finished_ = false;
  Result result_;
  std::array<uint32_t, isa::kNumRegs> regs_{};  // the scalar registers; r0 stays 0
  bool seen_lw_ = false, lw_unused_ = false;    // the front end's MXU sequence check
  // The front end's second issue slot: the last instruction issued first in its cycle and may
  // take a scalar instruction with it (a unit one that dispatched, a scalar one that did not
  // branch), and the registers it writes (isa::RegUse::writes).
  bool pair_open_ = false;
  uint32_t pair_writes_ = 0;
  bool switch_pending_ = false;  // the next mxu.mm row switches to the new tile
  // A unit's queue: at most chip.queue entries, in a ring (no allocation per instruction). A
  // popped entry stays readable until the next dispatch (execute() reads it after popping; the
  // front end may resolve the next instruction into its slot).
  class Ring {
   public:
    void reset(unsigned capacity) {
      buf_.assign(capacity, Entry{});
      head_ = size_ = 0;
    }
    bool empty() const { return size_ == 0; }
    std::size_t size() const { return size_; }
    const Entry& front() const { return buf_[head_]; }
    // The entry after the back, to fill in before push() makes it the back (the caller checks
    // size() < capacity).
    Entry& next_slot() {
      const std::size_t i = head_ + size_;
      return buf_[i < buf_.size() ? i : i - buf_.size()];
    }
    void push() { ++size_; }
    void pop_front() {
      if (++head_ == buf_.size()) head_ = 0;
      --size_;
    }
    void clear() { head_ = size_ = 0; }

   private:
    std::vector<Entry> buf_;
    std::size_t head_ = 0, size_ = 0;
  };
  std::array<Ring, isa::kQueues> queues_;
  std::array<uint32_t, isa::kNumSems> sems_{};
  uint64_t steps_ = 0;
  Stats stats_;

  // ICI.
  IciRegs ici_;
  bool pod_mode_ = false;
  IciSender sender_;

  // Timing estimate.
  TimingHolder timing_;
  bool timing_only_ = false;
  std::array<std::deque<uint64_t>, isa::kNumSems> tokens_;  // per semaphore: when each count arrived
  std::array<uint64_t, isa::kQueues> seq_{};                // instructions dispatched per queue
};

}  // namespace tp::golden
