// The golden pod: kx x ky golden chips (ChipModel) on a 2D torus, cut into slices, whose
// ici.send messages are delivered between them (docs/isa.md, ici.send).
//
// Each chip in a slice gets the ICI registers of its slice (IciRegs: the torus, its coordinates,
// the slice) and pod mode; chips in no slice are idle (never loaded or run).
//
// Scheduling is deterministic. run() repeats rounds: each loaded chip, in index order
// (x + y * kx), runs until it is done, stops with an error, or waits (ChipModel::Result::waiting);
// then the messages sent during the round are delivered in the order they were sent (so the
// messages of one sender to one destination arrive in issue order). It stops when every loaded
// chip has finished (done or error), or when a round moved nothing and no message is in flight:
// a deadlock, reported with the chips that wait (pc, semaphore) and the ones that failed. A
// chip's error stops only that chip.
//
// Timing: each chip keeps its own estimate (ChipModel::Stats::est_cycles). A message arrives at
// the sender's estimate of its ici.send's completion plus its timing model's time for the hops
// (ChipTiming::ici_arrival), and the count it gives to rsem carries that time, so a receiver that waits on the message
// cannot complete the waiting instruction before the arrival. The estimate is optimistic: the
// network has no contention (unless model_contention() books the links: the fast pod), and a
// chip runs ahead as far as its semaphores let it.
//
// Distributed (distribute(), pod_comm.h): each rank runs the rounds on its own chips; at the end
// of a round the ranks exchange the messages for each other's chips and whether anything moved,
// and each delivers to its chips in the one-process order (by sender index, then send order).
// A chip sees only messages of earlier rounds either way, so the results and the cycles are
// those of one process. The watchdog's budget counts each rank's own instructions: a run that
// the watchdog stops stops at another point than in one process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chip_model.h"
#include "config.h"
#include "ici_model.h"
#include "isa.h"
#include "pod_comm.h"
#include "pod_network.h"

namespace tp::golden {

struct PodTopology {
  unsigned kx = 1, ky = 1;    // the torus: kx x ky chips, 1..32 each
  unsigned link_latency = 1;  // cycles on each link (the timing estimate's)
};

struct PodResult {
  std::vector<ChipModel::Result> chips;  // by chip index x + y * kx; chips not loaded: Result{}
  std::vector<uint64_t> est_cycles;      // by chip index: each chip's timing estimate
  uint64_t pod_est_cycles = 0;           // the latest chip estimate or message arrival
  bool done = false;                     // every loaded chip finished (done or with an error)
  bool deadlock = false;                 // chips wait, none can move and no message is in flight
  bool errors = false;                   // some chip stopped with an error
  uint64_t steps = 0;                    // instructions (unit and scalar) of every chip since load
  uint64_t messages = 0;                 // messages the pod delivered in this run() (not a 1x1 slice's own)
  uint64_t rounds = 0;                   // rounds in this run() (distributed: each one a synchronisation)
  std::string report;                    // human-readable: the pod's state and one line per loaded chip
  bool ok() const { return done && !errors; }
};

class PodModel {
 public:
  // Throws std::invalid_argument: a torus outside 1..32, an empty slice, a slice outside the
  // torus or overlapping another.
  PodModel(const tp::Preset&, PodTopology, std::vector<Slice> slices);
  // A configs/pods.json entry; its chips' preset comes from load_preset(cfg.preset).
  explicit PodModel(const tp::PodConfig&);

  const tp::Preset& preset() const { return preset_; }
  const PodTopology& topology() const { return topo_; }
  const std::vector<Slice>& slices() const { return slices_; }
  unsigned size() const { return topo_.kx * topo_.ky; }
  unsigned index(unsigned x, unsigned y) const;  // x + y * kx; throws std::out_of_range outside the torus
  Coord coord(unsigned index) const;
  std::optional<unsigned> slice_index(unsigned x, unsigned y) const;  // nothing for an idle chip

  // A chip, for the host's backdoor (write_hbm, read_hbm, vmem, stats...) or to change its ICI
  // registers. Throws std::out_of_range outside the torus.
  ChipModel& chip(unsigned x, unsigned y);
  const ChipModel& chip(unsigned x, unsigned y) const;

  // Splits the pod over comm's ranks (above); this process runs the chips it owns. The chips of
  // the slices, in index order, are cut into comm.ranks() consecutive blocks of nearly equal size,
  // rank r owning the r-th; idle chips belong to rank 0. Call before load() and run(), on every
  // rank alike. A chip this rank does not own is only checked by load() and never runs here: its
  // memory is the owner's (write to and read from the chips you own; run()'s results cover all).
  void distribute(std::shared_ptr<PodComm>);
  const std::shared_ptr<PodComm>& comm() const { return comm_; }
  unsigned owner(unsigned index) const { return owner_.empty() ? 0 : owner_.at(index); }
  bool owns(unsigned x, unsigned y) const { return mine(index(x, y)); }

  // Link contention (pod_network.h) for the fast pod: each round's messages take turns on the
  // links and VCs they cross, booked in send-time order (then sender index and send order), and
  // arrive later when they met busy ones. A chip whose transfer left later than its model sent
  // it (its ICI unit held up by the network) falls behind its model by as much, as a fast chip
  // in a mixed pod does (sw/sim/golden_pod_chip.h): its lag, the most any of its transfers was
  // late so far. The pod's time is a chip's model time plus its lag: its sends leave and its
  // estimate ends that much later, and an arrival reaches its model that much earlier. Off by
  // default (the golden pod's estimate has an idle network). Call before run().
  void model_contention(const FastIciFigures&);

  // Loads a chip's program (ChipModel::load). Throws std::invalid_argument for an idle chip.
  void load(unsigned x, unsigned y, const isa::Program&);
  bool loaded(unsigned x, unsigned y) const;

  // Runs every loaded chip until the pod is done or deadlocked (above), or max_steps more
  // instructions (unit and scalar) have run (a watchdog: done and deadlock false; run() may go on).
  PodResult run(uint64_t max_steps = 1ull << 32);

 private:
  struct Pending {
    unsigned from;  // sender's index
    uint64_t seq;   // the sender's count of sends before this one (in this pod's life)
    IciMessage msg;
  };

  bool mine(unsigned i) const { return !comm_ || owner_[i] == comm_->rank(); }
  void hook_senders();
  // Distributed: the round's messages to and from the other ranks, and whether any rank moved,
  // finished or hit its watchdog; batch holds this rank's messages for its own chips on return,
  // in delivery order.
  struct RoundState {
    bool moved = false, finished = true, watchdog = false;
  };
  RoundState exchange_round(std::vector<Pending>& batch, RoundState mine);
  // Contention: books a message of sender `from` (its model's times) on the links; its arrival on
  // pod time, moved later if they were busy (the round's messages of every rank, in send-time
  // order); the sender's lag grows by as much as it left late.
  uint64_t book(unsigned from, Coord src, Coord dst, uint64_t rows, uint64_t send_t, uint64_t arrive_t);
  // Distributed: every rank's chips' results, on every rank.
  void gather_results(PodResult&);
  std::string report(const PodResult&) const;

  tp::Preset preset_;
  PodTopology topo_;
  std::vector<Slice> slices_;
  std::vector<int> slice_of_;  // by chip index: slice index, -1 idle
  std::vector<ChipModel> chips_;
  std::vector<bool> loaded_;
  std::vector<ChipModel::Result> last_;  // the latest result of each chip
  std::vector<Pending> pending_;         // sent during the current round
  uint64_t latest_arrival_ = 0;
  std::shared_ptr<PodComm> comm_;
  std::vector<unsigned> owner_;  // by chip index (distributed)
  std::vector<uint64_t> sent_;   // by chip index: its sends so far (Pending::seq)
  std::optional<PodNetwork> network_;
  std::vector<uint64_t> lag_;  // by chip index: how far it runs behind its model (contention)
};

}  // namespace tp::golden
