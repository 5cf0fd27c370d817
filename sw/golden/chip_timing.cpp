#include "chip_timing.h"

#include <algorithm>
#include <array>
#include <vector>

// The dataflow estimate (Stats::est_cycles). Not cycle accurate; a first-order model of the
// decoupled units:
//  - the front end hands over one instruction per cycle (and a scalar instruction that pairs with
//    the one before it in the same cycle); an instruction needs a free slot in
//    its queue, i.e. the instruction chip.queue places before it in that queue has completed;
//  - an instruction starts at max(its unit is free, its dispatch, the arrival of the semaphore
//    count it takes); durations: dma.ld / dma.st rows*cols (packed: twice, the VMEM
//    rows) + chip.mem_latency; mxu.lw n (on the
//    weight loader, after the previous mxu.mm started: that frees the shadow buffer); mxu.mm
//    rows on the row streamer (after its mxu.lw completed when it switches tiles), complete 2n
//    later (the array's drain); vector ceil(rows / sublanes) + 4, + latency - 1 for the pipelined
//    ops (the ISA table's latency: vexp, vrcp); fence waits for its queue, takes no time;
//    ici.send one flit per cycle, rows * (1 + ceil(32 n / ici.flit_bits)) flits (a head flit and
//    the row's body flits for every row) on its send engine (ici.local_ports of them, the
//    engine of its first hop), starting in program order when that engine is free: complete when
//    the last flit has left;
//  - completions (signals) of a queue are in order, but the ICI queue's, whose engines complete
//    in any order; est_cycles is the last completion;
//  - an ici.send's rows arrive hops * ici.link_latency after it completes.
// Ignored: the load and store DMA sharing the memory port, VMEM bank conflicts, memory
// back-pressure, the front end's fetch pipeline, and on ICI the router's contention, credits and
// packet heads (the RTL sends a head per packet of several rows).

namespace tp::golden {

namespace {

using isa::Op;

constexpr unsigned kMxu = static_cast<unsigned>(isa::Unit::mxu);

class DataflowTiming final : public ChipTiming {
 public:
  explicit DataflowTiming(const tp::Preset& p)
      : n_(p.mxu.n),
        depth_(p.chip.queue),
        sublanes_(p.chip.sublanes),
        mem_latency_(p.chip.mem_latency),
        flits_per_row_(1 + (32ull * p.mxu.n + p.ici.flit_bits - 1) / std::max(1u, p.ici.flit_bits)),
        link_latency_(p.ici.link_latency) {
    reset();
  }

  std::unique_ptr<ChipTiming> clone() const override { return std::make_unique<DataflowTiming>(*this); }

  void reset() override {
    for (auto& s : slot_free_) s.assign(depth_, 0);
    unit_free_.fill(0);
    queue_done_.fill(0);
    engine_free_.fill(0);
    front_t_ = 0;
    mxu_ = MxuTiming{};
  }

  uint64_t dispatch(unsigned q, uint64_t seq) override {
    // The slot this instruction takes was freed by the one `depth` places before it.
    const uint64_t slot = seq >= depth_ ? slot_free_[q][seq % depth_] : 0;
    front_t_ = std::max(front_t_ + 1, slot);
    return front_t_;
  }

  void halt() override { front_t_ += 1; }
  void scalar(bool paired) override { front_t_ += paired ? 0 : 1; }

  TimeSpan execute(unsigned q, uint64_t seq, const isa::Instr& in, uint64_t ready, unsigned engine) override {
    const isa::Fields& f = in.f;
    uint64_t start = 0, complete = 0;
    switch (in.op) {
      case Op::fence:
        start = complete = fence_start(ready, queue_done_[q], q == kMxu ? mxu_.handoff : unit_free_[q]);
        break;
      case Op::dma_ld:
      case Op::dma_st:
        start = std::max(ready, unit_free_[q]);
        complete = start + (f.rows * f.cols << f.packed) + mem_latency_;  // packed: two VMEM rows a beat
        unit_free_[q] = complete;
        break;
      case Op::mxu_lw:
      case Op::mxu_mm: {
        const TimeSpan t = in.op == Op::mxu_lw ? mxu_.lw(ready, n_) : mxu_.mm(ready, f.rows, 2ull * n_);
        start = t.start, complete = t.complete;
        break;
      }
      case Op::ici_send: {
        // In program order (the queue starts its head only), on the engine's own time.
        uint64_t& e = engine_free_.at(engine);
        start = std::max({ready, e, unit_free_[q]});
        complete = start + f.rows * flits_per_row_;
        e = complete;
        unit_free_[q] = start;
        queue_done_[q] = std::max(queue_done_[q], complete);  // what a fence on the queue waits for
        slot_free_[q][seq % depth_] = complete;
        return {start, complete};
      }
      default:  // vector: sublanes rows a cycle, plus the op's pipeline stages past the first
        start = std::max(ready, unit_free_[q]);
        complete = start + (f.rows + sublanes_ - 1) / sublanes_ + 4 + (isa::latency(in.op) - 1);
        unit_free_[q] = complete;
        break;
    }
    complete = std::max(complete, queue_done_[q]);  // a queue's completions are in order
    queue_done_[q] = complete;
    slot_free_[q][seq % depth_] = complete;
    return {start, complete};
  }

  uint64_t ici_arrival(const isa::Instr&, const TimeSpan& span, unsigned hops) const override {
    return span.complete + uint64_t{hops} * link_latency_;
  }

  uint64_t front_time() const override { return front_t_; }

 private:
  unsigned n_, depth_, sublanes_, mem_latency_;
  uint64_t flits_per_row_, link_latency_;

  std::array<std::vector<uint64_t>, isa::kQueues> slot_free_;  // ring: completion time by seq % depth
  std::array<uint64_t, isa::kQueues> unit_free_{};             // load/vec/store/ici: last completion
  std::array<uint64_t, isa::kQueues> queue_done_{};            // last completion per queue (in order)
  std::array<uint64_t, 4> engine_free_{};                      // per ICI send engine: last completion
  uint64_t front_t_ = 0;
  MxuTiming mxu_;
};

}  // namespace

std::unique_ptr<ChipTiming> make_dataflow_timing(const tp::Preset& p) { return std::make_unique<DataflowTiming>(p); }

}  // namespace tp::golden
