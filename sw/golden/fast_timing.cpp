#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <tuple>
#include <vector>

#include "calendar.h"
#include "chip_timing.h"

// The fast chip model's timing (docs/scale.md, "The fast chip model"): the dataflow estimate's
// structure (chip_timing.cpp) with the RTL's resources that the estimate leaves out:
//  - the queues: an instruction leaves its queue (freeing the slot the front end waits for) when
//    it starts, not when it completes; nothing starts before a fence ahead of it in its queue;
//  - the memory port: one request a cycle for the load and the store DMA, the loads first (the
//    arbiter alternates; see request());
//  - the load DMA: its beats requested one a cycle as the port takes them, the next load's
//    following while the data still arrive (four loads in flight, tp_dma_ld), its rows written
//    into VMEM one a cycle (a packed beat is two);
//  - the store DMA: a beat a cycle (every other cycle packed), the next store two cycles after
//    this one's last request (four stores awaiting acknowledgements, tp_dma_st), complete when
//    the last is acknowledged (the memory model's latency, or on HBM when it is queued);
//  - behind the port the memory model's fixed latency, or the HBM model (HbmModel): the address
//    map, open rows, tRP/tRCD/tRRD/tFAW, CL, the data buses, the queues, refresh (taken when
//    due if the memory is idle, else postponed), and the writes drained in batches (bus time),
//    or where each write needs an activate timed as the reads, holding their queue entries
//    until their column command;
//  - fences as the RTL's: one that only waits leaves its queue once it has its count; one that
//    signals waits for its unit to be idle, but in the MXU queue the unit takes it and signals
//    behind the work in flight, and the queue goes on;
//  - every unit starts a cycle after its instruction is ready (dispatched, its semaphore count
//    arrived); the MXU as the dataflow estimate, but mxu.mm's drain is 2n + 2, and the loader
//    waits n cycles after a tile switch (the array's drain count); the vector unit S rows a
//    cycle, or with operand a from the accumulators one row a cycle (their one read port);
//  - ici.send: a head flit per packet of up to four rows (tp_ici_unit), a lead of a few cycles
//    before the first flit, per hop the router's pipeline on top of the link latency, and the
//    VCs' credit loop (FastIciFigures::stream_cycles).
// The interpreter runs each queue's instructions atomically in an order of its own, not in time
// order, so the shared resources (the port, the data buses) are calendars of busy intervals that
// a later-placed stream fills around an earlier one. Left out: VMEM bank conflicts between the
// units and the write drains' row conflicts with the reads (docs/scale.md has the calibration
// table and what each of these costs); the routers' contention is the fast pod's
// (pod_network.h).

namespace tp::golden {

namespace {

using isa::Op;

// Intervals a calendar has room for from the start (short programs would otherwise spend a
// noticeable part of their run growing the vectors).
constexpr std::size_t kPresize = 256;

constexpr unsigned kMxu = static_cast<unsigned>(isa::Unit::mxu);
constexpr unsigned kVec = static_cast<unsigned>(isa::Unit::vec);

// The chip's HBM behind its port (tp_mem_hbm, one tp_hbm_ctrl per pseudo-channel), per 32-byte
// burst: the port's address map (pseudo-channel, bank, row, column), each bank's open row (a
// row hit needs only its CAS; a miss a precharge, tRP, an activate within tRRD and tFAW of the
// others, and tRCD), CL or CWL to the data, and each pseudo-channel's data bus booked for
// 2 cycles per burst (burst length 4, double data rate), and all-bank refresh as the controller
// postpones it (refresh()).
// Reads come back in request order.
class HbmModel {
 public:
  explicit HbmModel(const tp::Preset& p) : h_(p.chip.hbm), n_(p.mxu.n) {
    nc_ = h_.channels * h_.pseudo_channels;
    cb_ = static_cast<unsigned>(std::bit_width(nc_ - 1));
    fold_ = std::has_single_bit(cb_);
    nb_ = h_.bank_groups * h_.banks_per_group;
    bw_ = static_cast<unsigned>(std::bit_width(nb_ - 1));
    cw_ = static_cast<unsigned>(std::bit_width(h_.columns - 1));
    trefi_ = std::max(1u, h_.timing.trefi);
    reset();
  }

  void reset() {
    pcs_.assign(nc_, Pc{});
    for (auto& c : pcs_) {
      c.banks.assign(nb_, Bank{});
      c.bus.presize(kPresize);
      c.rq.assign(h_.queue + kPartQueue, 0);
      if (h_.write_queue > 0) c.wq.assign(h_.write_queue + kPartQueue, 0);
    }
    last_ready_ = 0;
  }

  // A read of beat `beat` offered to the port at cycle t: when the port took it (its bursts'
  // queues had room) and when its data have all come back.
  std::pair<uint64_t, uint64_t> read(uint64_t t, uint64_t beat) {
    accepted_ = t;
    uint64_t done = 0;
    const uint64_t bursts = n_ / 8;
    for (uint64_t k = 0; k < bursts; ++k) done = std::max(done, burst(t, beat * bursts + k, false));
    last_ready_ = std::max(last_ready_, done);  // the reorder buffer: in request order
    return {accepted_, last_ready_};
  }
  // A write (posted: acknowledged when queued); its bursts take the bank and the bus. Returns when
  // the port took it.
  uint64_t write(uint64_t t, uint64_t beat) {
    accepted_ = t;
    const uint64_t bursts = n_ / 8;
    for (uint64_t k = 0; k < bursts; ++k) (void)burst(t, beat * bursts + k, true);
    return accepted_;
  }
  void prune(uint64_t t) {
    for (auto& c : pcs_) c.bus.prune(t);
  }

 private:
  struct Bank {
    int64_t row = -1;     // open row, -1: closed
    uint64_t cas_ok = 0;  // the next CAS (tCCD after the last)
    uint64_t act_ok = 0;  // the next ACT (tRC after the last)
    uint64_t last_cas = 0;
  };
  struct Pc {
    std::vector<Bank> banks;
    Calendar bus;                    // cycles
    std::array<uint64_t, 4> acts{};  // the last four ACTs (tFAW)
    unsigned act_i = 0;
    uint64_t last_act = 0;
    bool any_act = false;
    uint64_t busy_until = 0;         // the last data or refresh
    uint64_t refreshed = 0;          // all-bank refreshes taken
    std::vector<uint64_t> rq, wq;    // queue entries (reads and writes, or all in rq): when each frees
    std::size_t rq_i = 0, wq_i = 0;  // the next entry of each, round the ring
    uint64_t write_debt = 0;         // data-bus cycles of queued writes not yet drained
  };

  // One burst (the port's burst number) entering its controller at t: when its data are done.
  uint64_t burst(uint64_t t, uint64_t b, bool write) {
    unsigned pc = 0;
    uint64_t laddr = b;
    if (nc_ > 1) {
      const uint64_t blk = b >> 3;
      if (blk != last_blk_) {  // a block's 8 bursts in a row are the common case
        last_blk_ = blk;
        last_pc_ = 0;
        if (fold_) {  // the XOR of every cb-bit chunk, by folding halves
          uint64_t x = blk;
          for (unsigned w = 64; w > cb_; w /= 2) x ^= x >> (w / 2);
          last_pc_ = static_cast<unsigned>(x & (nc_ - 1));
        } else {
          for (unsigned k = 0; k < 64; k += cb_) last_pc_ ^= static_cast<unsigned>((blk >> k) & (nc_ - 1));
        }
      }
      pc = last_pc_;
      laddr = ((blk >> cb_) << 3) | (b & 7);
    }
    unsigned bank = 0;
    if (h_.bank_interleave)
      bank = static_cast<unsigned>(laddr & (nb_ - 1));
    else
      bank = static_cast<unsigned>((laddr >> cw_) & (nb_ - 1));
    const auto row = static_cast<int64_t>(laddr >> (bw_ + cw_));
    Pc& c = pcs_[pc];
    Bank& k = c.banks[bank];
    const auto& tm = h_.timing;
    // A queue entry: the part queue's and the controller's, freed when the burst's CAS issues.
    auto& entries = write && !c.wq.empty() ? c.wq : c.rq;
    std::size_t& idx = write && !c.wq.empty() ? c.wq_i : c.rq_i;
    uint64_t& slot = entries[idx];
    if (++idx == entries.size()) idx = 0;  // round the ring (no division: this is the model's hottest path)
    const uint64_t arrive = std::max(t + kCtrlDelay, slot);
    accepted_ = std::max(accepted_, arrive - kCtrlDelay);
    refresh(c, arrive);
    if (write && !writes_activate()) {
      // Posted, and drained by the controller in batches once write_hi are queued, down to
      // write_lo (docs/hbm.md): the data bus's time they take is a debt the idle gaps pay; a
      // full batch takes the bus from the reads. (Writes that need activates take their bank's
      // timing below, as reads do: writes_activate().)
      c.write_debt += 2;
      if (c.write_debt >= 2ull * h_.write_hi) {
        const uint64_t drain = c.write_debt - 2ull * h_.write_lo;
        (void)c.bus.book(arrive, 1, drain);
        c.busy_until = std::max(c.busy_until, arrive + drain);
        c.write_debt -= drain;
      }
      slot = arrive;
      return arrive;
    }
    if (arrive > c.busy_until) c.write_debt -= std::min(c.write_debt, arrive - c.busy_until);
    uint64_t cas = std::max(arrive, k.cas_ok);
    if (k.row != row) {
      uint64_t act = std::max(arrive, k.act_ok);
      if (k.row >= 0) act = std::max(act, std::max(arrive, k.last_cas + tm.trtp) + tm.trp);
      if (c.any_act) act = std::max({act, c.last_act + tm.trrd_s, c.acts[c.act_i] + tm.tfaw});
      c.acts[c.act_i] = act;
      c.act_i = (c.act_i + 1) % static_cast<unsigned>(c.acts.size());
      c.last_act = act;
      c.any_act = true;
      k.row = row;
      k.act_ok = act + tm.trc;
      cas = act + tm.trcd;
    }
    const uint64_t lat = write ? tm.cwl : tm.cl;
    const auto [data, done] = c.bus.book(cas + lat, 1, 2);
    k.last_cas = data - lat;
    k.cas_ok = k.last_cas + tm.tccd_l;
    slot = k.last_cas + 1;
    c.busy_until = std::max(c.busy_until, done);
    return done;
  }

  // Whether a stream of writes needs an activate per burst: on the bank-interleaved map each
  // burst goes to another bank. Then a store drains at the activate rate (tRRD, the four-activate
  // window) and holds its queue entries until its column commands, which is what paces the port
  // (`tiny`'s 61-beat store: 173 cycles on the RTL, 66 in the debt model, 132 so); with open rows
  // in one bank at a time (`small`) it drains at the data bus's rate, which the debt above models
  // (timing them like reads there made `small` up to 7% slow). docs/scale.md has the calibration
  // both ways. (Closed pages, which would need an activate per burst too, are not modelled.)
  bool writes_activate() const { return h_.bank_interleave; }

  // All-bank refresh (docs/hbm.md): one due every tREFI, postponed while requests wait, taken
  // at the first idle cycle at or after it came due (the last data done) if that is before this
  // request, which then waits for its end; forced once MaxPostpone are due; it closes every bank
  // for tRFC. Single-bank refresh takes a bank no request wants, so the streams do not see it:
  // not modelled.
  void refresh(Pc& c, uint64_t arrive) {
    if (h_.per_bank_refresh || arrive < (c.refreshed + 1) * trefi_) return;  // none due (no division: hot)
    const uint64_t due = arrive / trefi_;
    const uint64_t idle_from = std::max(c.busy_until, (c.refreshed + 1) * trefi_);
    const bool fits = idle_from < arrive, forced = due - c.refreshed >= kMaxPostpone;
    if (!fits && !forced) return;
    const uint64_t start = fits ? idle_from : arrive;
    const uint64_t end = start + h_.timing.trfc;
    ++c.refreshed;
    for (auto& k : c.banks) {
      k.row = -1;
      k.act_ok = std::max(k.act_ok, end);
      k.cas_ok = std::max(k.cas_ok, end);
    }
    c.busy_until = std::max(c.busy_until, end);
  }

  static constexpr uint64_t kCtrlDelay = 2;    // the port's part queue and the controller's queue
  static constexpr uint64_t kMaxPostpone = 8;  // refreshes the controller may postpone
  // Entries of tp_mem_hbm's queue of parts per pseudo-channel, counted as bursts (a part holds up
  // to 8 bursts: an approximation on the side of fewer entries).
  static constexpr unsigned kPartQueue = 4;

  tp::HbmConfig h_;
  unsigned n_, nc_ = 1, cb_ = 0, nb_ = 1, bw_ = 0, cw_ = 0;
  bool fold_ = false;               // cb_ a power of two: the chunks' XOR by folding halves
  uint64_t last_blk_ = UINT64_MAX;  // the last burst's block of 8 and its pseudo-channel
  unsigned last_pc_ = 0;
  uint64_t trefi_ = 1;
  std::vector<Pc> pcs_;
  uint64_t last_ready_ = 0;
  uint64_t accepted_ = 0;  // the access being placed: when its last burst found a queue entry
};

class FastTiming final : public ChipTiming {
 public:
  static FastIciFigures ici_figures(const tp::Preset& p) {
    const Constants k = fast_constants(p);
    return {p.ici.link_latency + k.hop_extra,
            static_cast<unsigned>((32ull * p.mxu.n + p.ici.flit_bits - 1) / std::max(1u, p.ici.flit_bits)),
            isa::hw::ici::kPacketRows,  // tp_ici_unit's rows per packet
            k.send_lead,
            p.ici.buf_flits,
            2 * p.ici.link_latency + k.credit_loop,
            p.ici.vcs,
            p.ici.class_choice};
  }

  explicit FastTiming(const tp::Preset& p) : k_(fast_constants(p)) {
    if (p.chip.memory == "hbm") hbm_.emplace(p);
    n_ = p.mxu.n;
    depth_ = p.chip.queue;
    sublanes_ = p.chip.sublanes;
    banks_ = p.chip.vmem_banks;
    ici_ = ici_figures(p);
    reset();
  }

  std::unique_ptr<ChipTiming> clone() const override { return std::make_unique<FastTiming>(*this); }

  void reset() override {
    for (auto& s : slot_free_) s.assign(depth_, 0);
    for (auto& d : pending_) d.clear();
    unit_free_.fill(0);
    queue_done_.fill(0);
    last_start_.fill(0);
    engine_free_.fill(0);
    ld_done_.fill(0);
    mxu_rows_.clear();
    vec_ops_.clear();
    front_t_ = 0;
    mxu_ = MxuTiming{};
    ld_req_free_ = ld_last_done_ = st_req_free_ = 0;
    st_done_.fill(0);
    st_count_ = ld_count_ = placed_ = 0;
    port_.clear();
    ld_port_.clear();
    port_.presize(kPresize);
    ld_port_.presize(kPresize);
    if (hbm_) hbm_->reset();
  }

  uint64_t dispatch(unsigned q, uint64_t seq) override {
    const uint64_t slot = seq >= depth_ ? slot_free_[q][seq % depth_] : 0;
    front_t_ = std::max(front_t_ + 1, slot);
    pending_[q].push_back(front_t_);
    return front_t_;
  }

  void halt() override { front_t_ += 1; }
  void scalar(bool paired) override { front_t_ += paired ? 0 : 1; }

  TimeSpan execute(unsigned q, uint64_t seq, const isa::Instr& in, uint64_t ready, unsigned engine) override {
    // Before this instruction leaves pending_ (it may book from its own dispatch on); every
    // kPruneEvery instructions: forgetting the past sooner changes no booking, and the scans
    // were 7% of a timing-only run on `tiny`.
    if (++placed_ % kPruneEvery == 0) prune();
    if (!pending_[q].empty()) pending_[q].pop_front();
    const isa::Fields& f = in.f;
    uint64_t start = 0, complete = 0;
    ready += k_.start_delay;
    switch (in.op) {
      case Op::fence:
        if (in.signal == 0) {
          // A fence that only waits leaves its queue once it has its count and never reaches the
          // unit (docs/chip.md "Fences"): it waits for no completion, and what follows it in its
          // queue starts no sooner.
          start = complete = std::max(ready, last_start_[q]);
          uint64_t& after = q == kMxu ? mxu_.handoff : unit_free_[q];
          after = std::max(after, start);
          slot_free_[q][seq % depth_] = last_start_[q] = start;
          return {start, complete};
        }
        if (q == kMxu) {
          // The MXU unit takes a signalling fence and orders its signal behind the work in flight
          // (its completion FIFO): the signal once every earlier MXU instruction is complete (the
          // max below), and the queue goes on meanwhile.
          start = mxu_.handoff = std::max(ready, mxu_.handoff);
          complete = start;
          break;
        }
        start = complete = fence_start(ready, queue_done_[q], unit_free_[q]);
        break;
      case Op::dma_ld: {
        const uint64_t beats = uint64_t{f.rows} * f.cols, per_beat = 1ull << f.packed;
        uint64_t i = 0;
        // The descriptor FIFO holds four loads: the fifth waits for the first's completion.
        const uint64_t nth = ld_count_++;  // the load's number (seq counts the queue's fences too)
        // In queue order: after a fence ahead of it (unit_free_: the fence's time, or the previous
        // load's start).
        start = std::max({ready, unit_free_[q], ld_req_free_, ld_done_[nth % ld_done_.size()]});
        uint64_t t = start + k_.ld_req_delay, written = ld_last_done_;
        if (!hbm_) {
          // The same as the loop below, a run of back-to-back requests at a time: over a run of
          // k requests from s, the last row is written at the later of the previous one's
          // k rows on and the first request's data k - 1 rows on.
          const uint64_t lat = k_.mem_latency + k_.rd_pipe;
          ld_port_.book_runs(t, beats, 1, [&](uint64_t s, uint64_t k) {
            (void)port_.book(s, k, 1);
            written = std::max(written + k * per_beat, s + lat + per_beat - 1 + (k - 1) * per_beat);
            t = s + k;
          });
          i = beats;
        }
        BeatWalk walk{f};
        for (; i < beats; ++i) {
          uint64_t req = request(t, true);
          const uint64_t beat = walk.next();
          uint64_t data = req + k_.mem_latency;
          if (hbm_) std::tie(req, data) = hbm_->read(req, beat);
          data += k_.rd_pipe;
          written = std::max(written + per_beat, data + per_beat - 1);  // a row a cycle into VMEM
          t = req + 1;
        }
        ld_req_free_ = t;
        complete = written;
        ld_last_done_ = complete;
        ld_done_[nth % ld_done_.size()] = complete;
        unit_free_[q] = start;  // the next load's requests follow this one's
        break;
      }
      case Op::dma_st: {
        const uint64_t beats = uint64_t{f.rows} * f.cols;
        // The next store starts two cycles after this one's last request (on the RTL, 32 stores
        // of r rows back to back take r + 3 cycles each at every test preset, 2026-12-07; the
        // model gave r + 2); four stores await their acknowledgements: the fifth waits for the
        // first's.
        const uint64_t nth = st_count_++;  // the store's number (seq counts the queue's fences too)
        start = std::max({ready, unit_free_[q], st_req_free_, st_done_[nth % st_done_.size()]});
        // The VMEM reads run ahead; a packed beat needs two rows, so a beat every other cycle.
        uint64_t t = start + k_.st_req_delay, acked = start;
        uint64_t i = 0;
        if (!hbm_ && !f.packed) {  // the loop below, at once: back-to-back requests
          t = port_.book(t, beats, 1).second;
          acked = std::max(acked, t - 1 + k_.wr_ack);
          i = beats;
        }
        BeatWalk walk{f};
        for (; i < beats; ++i) {
          uint64_t req = request(t, false);
          const uint64_t beat = walk.next();
          if (hbm_) req = hbm_->write(req, beat);
          acked = std::max(acked, req + k_.wr_ack);
          t = req + (f.packed ? 2 : 1);
          st_req_free_ = req + 2;
        }
        if (!hbm_ && !f.packed) st_req_free_ = t + 1;
        complete = acked;
        st_done_[nth % st_done_.size()] = complete;
        unit_free_[q] = start;
        break;
      }
      case Op::mxu_lw:
      case Op::mxu_mm: {
        const TimeSpan t = in.op == Op::mxu_lw ? mxu_.lw(ready, n_, n_) : mxu_.mm(ready, f.rows, k_.mm_drain);
        start = t.start, complete = t.complete;
        if (in.op == Op::mxu_mm) mxu_streams(start, start + f.rows);
        break;
      }
      case Op::ici_send: {
        uint64_t& e = engine_free_.at(engine);
        start = std::max({ready, e, unit_free_[q]});
        complete = start + ici_.send_lead + send_cycles(f.rows);
        e = complete;
        unit_free_[q] = start;
        queue_done_[q] = std::max(queue_done_[q], complete);
        slot_free_[q][seq % depth_] = last_start_[q] = start;  // it left its queue when it started
        return {start, complete};
      }
      default: {  // vector
        // S rows a cycle; operand a from the accumulators comes one row a cycle through their
        // read port and is gathered into groups of S, a group going through the lanes in the
        // cycle the next group's first row arrives (the last group's a cycle after its last row).
        start = std::max(ready, unit_free_[q]);
        // With a from the accumulators and b from VMEM, b's stream starts behind a's: 2 cycles more
        // (`vadd` with the bias row, 12 rows: 19 cycles on the RTL at every test preset).
        const uint64_t b_lead = f.a_acc && isa::uses_b(in.op) ? k_.acc_b_lead : 0;
        // VMEM reads a cycle: S rows of a (unless from the accumulators), and of b S or one (broadcast).
        const unsigned reads = (f.a_acc ? 0 : sublanes_) + (isa::uses_b(in.op) ? (f.b_bcast ? 1 : sublanes_) : 0);
        const uint64_t work = f.a_acc ? f.rows + 1 : vmem_read_cycles(in),
                       tail = k_.vec_extra + b_lead + (isa::latency(in.op) - 1);
        const uint64_t end = vector_end(start, work, reads, mxu_rows_);
        complete = end + tail;
        unit_free_[q] = complete;
        vec_ops_.push_back({start, reads, end});
        break;
      }
    }
    complete = std::max(complete, queue_done_[q]);
    queue_done_[q] = complete;
    slot_free_[q][seq % depth_] = last_start_[q] = start;
    return {start, complete};
  }

  uint64_t ici_arrival(const isa::Instr&, const TimeSpan& span, unsigned hops) const override {
    return span.complete + uint64_t{hops} * ici_.hop_delay;
  }

  uint64_t front_time() const override { return front_t_; }

 private:
  // The calibrated constants (docs/scale.md has how each was measured).
  struct Constants {
    unsigned mem_latency = 0;  // the memory model's read latency (chip.mem_latency)
    unsigned rd_pipe = 0;      // the port's and the load DMA's pipeline on top of the memory's
    unsigned wr_ack = 0;       // a store's request to its acknowledgement
    unsigned ld_req_delay = 0, st_req_delay = 0;
    unsigned start_delay = 0;  // dispatch or a semaphore count to the unit's start
    unsigned mm_drain = 0;     // mxu.mm: its last row to its last result in the accumulators
    unsigned vec_extra = 0;    // a vector instruction's pipeline beyond its groups
    unsigned acc_b_lead = 0;   // more with a from the accumulators and b from VMEM
    unsigned hop_extra = 0;    // ici.send: the router's pipeline per hop, on top of the link
    unsigned send_lead = 0;    // ici.send: its start to its first flit (the head's way into the router)
    unsigned credit_loop = 0;  // a link's credit loop beyond the link's latency both ways
  };

  static Constants fast_constants(const tp::Preset& p) {
    Constants k;
    k.mem_latency = p.chip.mem_latency;
    k.rd_pipe = 2;
    k.wr_ack = p.chip.memory == "hbm" ? 4 : p.chip.mem_latency + 2;
    k.ld_req_delay = 1;
    k.st_req_delay = 2;
    k.start_delay = 1;
    k.mm_drain = 2 * p.mxu.n + 2;
    k.vec_extra = 4;
    k.acc_b_lead = 2;
    k.hop_extra = 2;
    // Every send on the RTL pods took 4 cycles more than its flits (tiny and small, 3 to 7 rows:
    // 37 against 33 flits; 3 of them the ICI unit's credit stall before the first flit).
    k.send_lead = 4;
    // A stream of 200 rows to the next chip on `odd` (3-flit VC buffers): at link latency 1, 2, 3
    // and 4 the RTL moves 3 flits every 4, 6, 8 and 10 cycles: the loop is 2 x latency + 2 (the
    // router's cycle and the credit's return into the sender's counter). Every other preset's
    // buffers cover their loop (tiny: 4 flits, 4 cycles).
    k.credit_loop = 2;
    return k;
  }

  // A request enters the port (one a cycle, loads and stores alike) at or after cycle t. The
  // port's arbiter alternates between the DMAs when both wait; the model gives the loads
  // their cycles first (the store's beats take the cycles the loads leave), since the queues'
  // instructions are placed in an order of their own and a load's latency is what a program waits on.
  uint64_t request(uint64_t t, bool load) {
    if (load) {
      const uint64_t c = ld_port_.book(t, 1, 1).first;
      (void)port_.book(c, 1, 1);
      return c;
    }
    return port_.book(t, 1, 1).first;
  }

  // A DMA's HBM beats in order: `rows` rows of `cols` beats from haddr, hstride apart (a counter
  // per row rather than a division per beat).
  struct BeatWalk {
    explicit BeatWalk(const isa::Fields& f) : row(f.haddr), cols(f.cols), stride(f.hstride) {}
    uint64_t next() {
      const uint64_t beat = row + col;
      if (++col == cols) col = 0, row += stride;
      return beat;
    }
    uint64_t row, col = 0, cols, stride;
  };

  uint64_t send_cycles(uint64_t rows) const { return ici_.stream_cycles(ici_.flits(rows)); }

  // Cycles a vector instruction with operand a in VMEM streams its groups: each sublane reads its
  // rows of a, b and the vsel mask (a broadcast b: the same row in every sublane, every group),
  // row r from bank r % banks, a bank one row a cycle (tp_vpu, tp_vmem); the streams run ahead
  // of the lanes (their FIFOs), so the instruction takes a group a cycle or as many cycles as its
  // busiest bank has reads in all, whichever is more. On `odd` (3 banks, 3 sublanes) a vsel takes
  // 3 cycles a group; on the RTL a random program's vsel of 33 rows took 36 cycles, 13 in the
  // model before (2026-12-07).
  uint64_t vmem_read_cycles(const isa::Instr& in) const {
    const isa::Fields& f = in.f;
    const uint64_t groups = (f.rows + sublanes_ - 1) / sublanes_;
    std::array<uint64_t, 64> load{};  // banks <= 64
    // Rows [first, first + rows) put rows / banks reads on every bank, one more on the first
    // rows % banks from first's bank.
    const auto stream = [&](uint64_t first, uint64_t rows) {
      for (unsigned k = 0; k < banks_; ++k) load[k] += rows / banks_;
      for (uint64_t k = 0; k < rows % banks_; ++k) ++load[(first + k) % banks_];
    };
    stream(f.a, f.rows);
    if (isa::uses_b(in.op)) {
      if (f.b_bcast)
        load[f.b % banks_] += f.rows;
      else
        stream(f.b, f.rows);
    }
    if (isa::uses_mask(in.op)) stream(f.imm, f.rows);
    return std::max(groups, *std::max_element(load.begin(), load.begin() + banks_));
  }

  // A vector instruction's streaming, `work` cycles from start alone: while the MXU's row streamer
  // reads its rows (the VMEM's priority client, a bank a cycle), the vector unit's reads lose the
  // bank in the cycles it takes, `reads` banks of `banks` a cycle: at most 1 - reads / banks of
  // the work a cycle (at least 1 / banks). On the RTL (small_model, 4 banks, 2 sublanes), the
  // previous group's epilogue beside the last group's mm: vadd of 97 rows from the accumulators
  // with the bias row 142 cycles, vrelu of 97 rows 90 (2026-12-07; the model said 104 and 53).
  using Interval = std::pair<uint64_t, uint64_t>;
  uint64_t vector_end(uint64_t start, uint64_t work, unsigned reads, std::span<const Interval> mxu) const {
    const double rate =
        reads == 0 ? 1.0 : std::max(1.0 / banks_, 1.0 - static_cast<double>(reads) / static_cast<double>(banks_));
    double t = static_cast<double>(start), left = static_cast<double>(work);
    // The intervals are in order and apart: from the first that ends after start.
    const auto first =
        std::upper_bound(mxu.begin(), mxu.end(), start, [](uint64_t x, const Interval& i) { return x < i.second; });
    for (auto it = first; it != mxu.end(); ++it) {
      const auto [a, b] = *it;
      if (left <= 0 || rate >= 1.0) break;
      if (static_cast<double>(b) <= t) continue;
      const double free = std::min(left, std::max(0.0, static_cast<double>(a) - t));
      t += free;
      left -= free;
      if (left <= 0) break;
      const double busy = static_cast<double>(b) - std::max(t, static_cast<double>(a));
      if (busy * rate >= left) {
        t += left / rate;
        left = 0;
      } else {
        t = static_cast<double>(b);
        left -= busy * rate;
      }
    }
    return static_cast<uint64_t>(std::ceil(t + left));
  }
  // The MXU streams rows in [a, b). The interpreter places instructions in an order of its own,
  // so the vector instruction it overlaps may be placed already: it keeps its completion, but the
  // vector unit's next instruction starts as much later as the overlap slows it.
  void mxu_streams(uint64_t a, uint64_t b) {
    if (!mxu_rows_.empty() && mxu_rows_.back().second >= a)
      mxu_rows_.back().second = std::max(mxu_rows_.back().second, b);
    else
      mxu_rows_.push_back({a, b});
    // The vector instructions placed already that this streaming overlaps: each slows by its
    // overlap, and every later one moves on by as much (the unit runs them one at a time).
    uint64_t shift = 0;
    // In placement order the unit's instructions follow each other: from the first ending after a.
    const auto first =
        std::upper_bound(vec_ops_.begin(), vec_ops_.end(), a, [](uint64_t x, const VecOp& v) { return x < v.end; });
    for (auto it = first; it != vec_ops_.end(); ++it) {
      VecOp& v = *it;
      v.start += shift;
      v.end += shift;
      if (v.reads != 0 && b > v.start && a < v.end) {
        const Interval stream{a, b};
        const uint64_t end = vector_end(v.start, v.end - v.start, v.reads, {&stream, 1});
        shift += end - v.end;
        v.end = end;
      }
    }
    unit_free_[kVec] += shift;
  }

  // No booking starts before the oldest instruction still queued was dispatched.
  void prune() {
    uint64_t t = front_t_;
    for (const auto& d : pending_)
      if (!d.empty()) t = std::min(t, d.front());
    // Both lists are in order of their ends: what ended by t goes in one erase.
    mxu_rows_.erase(mxu_rows_.begin(),
                    std::find_if(mxu_rows_.begin(), mxu_rows_.end(), [t](const Interval& i) { return i.second > t; }));
    vec_ops_.erase(vec_ops_.begin(),
                   std::find_if(vec_ops_.begin(), vec_ops_.end(), [t](const VecOp& v) { return v.end > t; }));
    port_.prune(t);
    ld_port_.prune(t);
    if (hbm_) hbm_->prune(t);
  }

  Constants k_;
  unsigned n_ = 0, depth_ = 0, sublanes_ = 0, banks_ = 1;
  std::vector<Interval> mxu_rows_;  // the MXU's row streaming, cycles [a, b)
  struct VecOp {                    // a vector instruction placed: its start, VMEM reads a cycle, its streaming's end
    uint64_t start = 0;
    unsigned reads = 0;
    uint64_t end = 0;
  };
  std::vector<VecOp> vec_ops_;  // the recent ones, in placement order
  FastIciFigures ici_;

  std::array<std::vector<uint64_t>, isa::kQueues> slot_free_;
  std::array<std::deque<uint64_t>, isa::kQueues> pending_;  // dispatch times of queued instructions
  std::array<uint64_t, isa::kQueues> unit_free_{};
  std::array<uint64_t, isa::kQueues> queue_done_{};
  std::array<uint64_t, isa::kQueues> last_start_{};  // when the queue's last instruction left it (started)
  std::array<uint64_t, 4> engine_free_{};
  std::array<uint64_t, 4> ld_done_{};     // completions of the last four loads, by ld_count_ % 4
  std::array<uint64_t, 4> st_done_{};     // completions of the last four stores, by st_count_ % 4
  uint64_t st_count_ = 0, ld_count_ = 0;  // stores and loads placed
  uint64_t placed_ = 0;                   // instructions placed (prune())
  static constexpr uint64_t kPruneEvery = 32;
  uint64_t front_t_ = 0;
  MxuTiming mxu_;
  uint64_t ld_req_free_ = 0, ld_last_done_ = 0, st_req_free_ = 0;
  Calendar port_;                // the memory port's request slots (cycles), loads' and stores'
  Calendar ld_port_;             // the loads' alone
  std::optional<HbmModel> hbm_;  // behind the port on an HBM preset
};

}  // namespace

std::unique_ptr<ChipTiming> make_fast_timing(const tp::Preset& p) { return std::make_unique<FastTiming>(p); }

FastIciFigures fast_ici_figures(const tp::Preset& p) { return FastTiming::ici_figures(p); }

}  // namespace tp::golden
