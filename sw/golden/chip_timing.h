// The golden interpreter's timing estimate, apart from its function (docs/chip.md "The
// interpreter's timing estimate").
//
// ChipModel executes each instruction atomically, in an order of its own (not the RTL's cycles).
// It tells a ChipTiming what the front end and the units did, in that order, and the timing model
// answers when it happened, in cycles. The semaphores carry the times across: each count a
// semaphore gets is stamped with the time it arrived (a completion, or an ICI message's arrival),
// and an instruction that takes the count is ready no earlier. The default model is the dataflow
// estimate (make_dataflow_timing); another one can be plugged in with ChipModel::set_timing().
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>

#include "config.h"
#include "isa.h"

namespace tp::golden {

// When an instruction ran, in estimated cycles since start.
struct TimeSpan {
  uint64_t start = 0, complete = 0;
};

class ChipTiming {
 public:
  virtual ~ChipTiming() = default;
  virtual std::unique_ptr<ChipTiming> clone() const = 0;

  // A new run (ChipModel::load): every time back to 0.
  virtual void reset() = 0;
  // The front end hands an instruction to queue q (a Unit value), the queue's seq-th since the
  // run started (0-based). Returns its dispatch time.
  virtual uint64_t dispatch(unsigned q, uint64_t seq) = 0;
  // The front end fetched halt.
  virtual void halt() = 0;
  // The front end executed a scalar instruction or branch: one front-end cycle, or none when it
  // paired (issued in the same cycle as the instruction before it, docs/chip.md).
  virtual void scalar(bool paired) = 0;
  // The head of queue q, its seq-th instruction, starts. ready: the latest of its dispatch time
  // and the arrival of the semaphore count it took. engine: for an ici.send, the ICI unit's send
  // engine it goes to (golden::injection_port of its destination), else 0. Returns when it
  // starts and completes; the completions of one queue are in order, but for the ICI queue's,
  // whose engines complete in any order.
  virtual TimeSpan execute(unsigned q, uint64_t seq, const isa::Instr&, uint64_t ready, unsigned engine) = 0;
  // When the last row of an ici.send that ran over `span` is written on a destination `hops` link
  // hops away (its rsem count arrives then).
  virtual uint64_t ici_arrival(const isa::Instr&, const TimeSpan& span, unsigned hops) const = 0;
  // The front end's time: the run's estimate is the latest of this and every completion.
  virtual uint64_t front_time() const = 0;
};

// The MXU unit's timing, which both timing models share (chip_timing.cpp, fast_timing.cpp):
// mxu.lw on the weight loader while the row streamer streams the current tile; the loader's
// shadow buffer is free once the mm that switched to the current tile has started; an mm that
// switches tiles starts once its tile is loaded. handoff: when the unit took its last
// instruction (a fence in the MXU queue waits for it).
struct MxuTiming {
  uint64_t handoff = 0, loader_free = 0, streamer_free = 0, last_mm_start = 0, lw_done = 0;
  uint64_t last_switch = 0;     // the start of the last mxu.mm that switched tiles
  bool switched = false;        // an mxu.mm has switched tiles (last_switch is one)
  bool switch_pending = false;  // the next mxu.mm switches to the tile of the last mxu.lw

  // switch_wait: cycles from a tile switch (the switching mxu.mm's start) to the first weight row
  // the array takes: tp_mxu_array takes none until the old tile's last row has cleared the array
  // (its drain count), so with fewer than 2n rows a tile the MXU takes a tile every 2n cycles. The
  // fast model's n, the dataflow estimate's 0.
  TimeSpan lw(uint64_t ready, uint64_t n, uint64_t switch_wait = 0) {
    const uint64_t after_switch = switched ? last_switch + switch_wait : 0;  // the first tile waits for none
    const uint64_t start = std::max({ready, handoff, loader_free, last_mm_start, after_switch});
    loader_free = lw_done = start + n;
    handoff = start;
    switch_pending = true;
    return {start, start + n};
  }
  // rows streamed, complete `drain` cycles after the last one enters the array.
  TimeSpan mm(uint64_t ready, uint64_t rows, uint64_t drain) {
    uint64_t start = std::max({ready, handoff, streamer_free});
    if (switch_pending) {
      start = std::max(start, lw_done);
      last_switch = start;  // its first row switches tiles
      switched = true;
    }
    switch_pending = false;
    streamer_free = start + rows;
    handoff = last_mm_start = start;
    return {start, start + rows + drain};
  }
};

// A fence, in both timing models: it starts once its queue's earlier instructions are complete
// and its unit has taken the last of them (unit_time: the MXU unit's handoff, another unit's last
// completion), takes no time, and becomes the unit's time.
inline uint64_t fence_start(uint64_t ready, uint64_t queue_done, uint64_t& unit_time) {
  unit_time = std::max({ready, queue_done, unit_time});
  return unit_time;
}

// The dataflow estimate (chip_timing.cpp has its rules).
std::unique_ptr<ChipTiming> make_dataflow_timing(const tp::Preset&);
// The fast chip model's timing, calibrated against the RTL (fast_timing.cpp, docs/scale.md).
std::unique_ptr<ChipTiming> make_fast_timing(const tp::Preset&);
// The fast model's ICI figures, which the fast pod's network shares (pod_network.h): cycles from
// a flit on one link to the same flit on the next (the link's latency and the router's
// pipeline), flits per row, rows per packet (a head flit leads each), and cycles from a send's
// start to its first flit on the link; and the links' credit loop: a VC's buffer of credit_flits
// flits, whose credit comes back credit_rtt cycles after the flit it frees left (0: no limit).
struct FastIciFigures {
  unsigned hop_delay = 0, body_flits = 0, packet_rows = 0, send_lead = 0;
  unsigned credit_flits = 0, credit_rtt = 0;
  unsigned vcs = 0;           // the router's VCs per port (0: the fast pod's links do not model them)
  bool class_choice = false;  // the router's ClassChoice (route_vcs)
  // The flits of a send of `rows` rows.
  uint64_t flits(uint64_t rows) const { return rows * body_flits + (rows + packet_rows - 1) / packet_rows; }
  // Cycles from a stream's first flit on a link to the cycle after its last: a flit a cycle, but
  // one VC holds at most credit_flits flits in flight, so with a longer credit loop the stream goes
  // in bursts of credit_flits flits, one burst every credit_rtt cycles (on the RTL, `odd`: 3
  // flits, a loop of 2 x 2 + 2 cycles, half a flit a cycle).
  uint64_t stream_cycles(uint64_t n) const {
    if (n == 0 || credit_flits == 0 || credit_rtt <= credit_flits) return n;
    return (n - 1) / credit_flits * credit_rtt + (n - 1) % credit_flits + 1;
  }
};
FastIciFigures fast_ici_figures(const tp::Preset&);

// A ChipTiming held by value: copying it copies the model and its state (clone()), so ChipModel
// stays copyable.
class TimingHolder {
 public:
  explicit TimingHolder(std::unique_ptr<ChipTiming> p) : p_(std::move(p)) {}
  TimingHolder(const TimingHolder& o) : p_(o.p_ ? o.p_->clone() : nullptr) {}
  TimingHolder& operator=(const TimingHolder& o) {
    if (this != &o) p_ = o.p_ ? o.p_->clone() : nullptr;
    return *this;
  }
  TimingHolder(TimingHolder&&) noexcept = default;
  TimingHolder& operator=(TimingHolder&&) noexcept = default;
  ~TimingHolder() = default;

  ChipTiming& operator*() const { return *p_; }
  ChipTiming* operator->() const { return p_.get(); }

 private:
  std::unique_ptr<ChipTiming> p_;
};

}  // namespace tp::golden
