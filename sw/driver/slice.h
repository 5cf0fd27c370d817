// The driver for a slice of a pod (docs/pod.md): the chip API's superset over many chips. A slice
// is a rectangle of chips of one pod (a torus of P x Q chips of one preset); programs run on
// every chip of the slice (one program per chip, or one SPMD program for all), tensors are
// scattered to and gathered from the chips' memories, and the run reports per chip its status
// and counters, per link its counters, and for the pod a deadlock report when chips wait on
// each other forever. A single chip is a 1x1 slice: the same code.
//
// Backends: golden (the golden pod, sw/golden/pod_model: always there), fast (the golden pod with
// the fast chip model's timing on every chip) and rtl (the SystemC pod
// of Verilated chips, tb/pod, registered per preset by the binaries that link it). SystemC
// cannot reset its kernel: an rtl slice is one per process.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "config.h"
#include "driver.h"
#include "energy.h"
#include "isa.h"

namespace tp::golden {
class PodComm;
}

namespace tp::driver {

// A pod: a torus of kx x ky chips of one preset, its links and its host boards.
struct PodSpec {
  std::string name;  // as in configs/pods.json, or "" when built by hand
  Preset preset;
  unsigned kx = 1, ky = 1;
  unsigned link_latency = 1;          // cycles on every ICI link
  unsigned board_x = 2, board_y = 2;  // chips per host board (Cloud TPU: 4 chips per host)
};
// A configs/pods.json entry with its chips' preset loaded. Throws ConfigError.
PodSpec pod_spec(const PodConfig&);
// A kx x ky torus of `preset` chips built by hand (not from the pods file): name "KXxKY", link
// latency 1, host boards of gcd(k, 2) chips along each axis.
PodSpec torus_pod(const Preset&, unsigned kx, unsigned ky);

// A rectangle [x0, x0 + w) x [y0, y0 + h) of the pod; it does not wrap round the torus edge.
struct SliceShape {
  unsigned x0 = 0, y0 = 0, w = 1, h = 1;
};

struct SliceOptions {
  uint64_t seed = 1;
  double link_bit_error = 0.0;  // probability of one flipped bit per link word (both directions)
  // rtl: every chip's ICI_FAULT0..3 registers (its router's own bit-flip hook: a bit of a word
  // sent on each link flips with probability link_fault_rate / 65536); 0: off.
  uint16_t link_fault_rate = 0;
  // Other slices of the same pod that run at the same time (tenants), each with its programs.
  std::vector<SliceShape> others;
  std::string wave_dir;                                   // FST waves of the chips below (rtl), "" for none
  std::vector<std::pair<unsigned, unsigned>> wave_chips;  // pod coordinates; empty: every chip
  uint64_t watchdog = 20000;  // cycles in which no chip moves and every chip waits: a deadlock
  // rtl: these chips (pod coordinates) are golden chips behind Verilated routers, the rest
  // Verilated chips: a mixed pod (docs/pod.md).
  std::vector<std::pair<unsigned, unsigned>> golden_chips;
  // rtl: these chips are golden chips with the fast chip model's timing on pod time behind
  // Verilated routers: a mixed pod of RTL and fast chips (docs/pod.md). Not also golden_chips.
  std::vector<std::pair<unsigned, unsigned>> fast_chips;
  // golden and fast: the pod split over the ranks of comm (golden/pod_comm.h; MPI under mpirun).
  // Every rank opens the same slice and makes the same calls (SPMD); each runs its block of chips,
  // a read is served by the chip's owner to every rank, and the results (status, counters) are on
  // every rank. Tracing is refused.
  std::shared_ptr<golden::PodComm> comm;
};

struct ChipOutcome {
  unsigned x = 0, y = 0;  // pod coordinates
  Status status;
  bool waiting = false;   // still waiting for a signal when the pod stopped
  uint32_t wait_pc = 0;   // the oldest waiting instruction
  unsigned wait_sem = 0;  // the semaphore it waits on
};

struct SliceStatus {
  std::vector<ChipOutcome> chips;  // every chip that had a program, in pod order (x + y * kx)
  bool deadlock = false;           // the watchdog stopped the pod: chips wait on each other
  bool timed_out = false;          // the run's timeout passed first
  bool interrupted = false;        // ... because the user interrupted it (Ctrl-C)
  std::string report;              // one line per chip that failed or waits
  uint64_t cycles = 0;             // pod cycles from start to the end of the run
  double wall_seconds = 0;         // wall-clock time of the run
  double chip_eval_seconds = 0;    // rtl: of which inside the chips' own evaluation (the rest: the pod)
  bool ok() const;                 // every chip done without error, no deadlock, no timeout
  // Distributed (SliceOptions::comm): ranks, the rounds (each a synchronisation), this rank's
  // seconds inside the synchronisation (exchanging and waiting) during run(), and the largest
  // such share of wall_seconds over the ranks.
  unsigned ranks = 1;
  uint64_t rounds = 0;
  double sync_seconds = 0;
  double max_sync_fraction = 0;
  uint64_t bytes_between_ranks = 0;  // every rank's bytes sent to the others during run()
};

class Slice {
 public:
  virtual ~Slice() = default;
  Slice(const Slice&) = delete;
  Slice& operator=(const Slice&) = delete;

  // Throws DriverError: a slice outside the pod, an rtl backend not built for the preset, a
  // second rtl pod in this process.
  static std::unique_ptr<Slice> open(const PodSpec&, const SliceShape&, Backend, const SliceOptions& = {});

  const PodSpec& pod() const { return pod_; }
  const SliceShape& shape() const { return shape_; }
  const Preset& preset() const { return pod_.preset; }
  unsigned chips() const { return shape_.w * shape_.h; }
  virtual std::string backend_name() const = 0;

  // Chip (i, j) of the slice is the pod's chip (x0 + i, y0 + j). Memory through the backdoor;
  // throws DriverError for a chip outside the slice or a range outside its HBM.
  void write(unsigned i, unsigned j, uint64_t beat, std::span<const uint32_t> words);
  std::vector<uint32_t> read(unsigned i, unsigned j, uint64_t beat, uint64_t beats);
  // The same by pod coordinates, for the chips of the other tenants (SliceOptions::others).
  virtual void write_pod_chip(unsigned x, unsigned y, uint64_t beat, std::span<const uint32_t> words) = 0;
  virtual std::vector<uint32_t> read_pod_chip(unsigned x, unsigned y, uint64_t beat, uint64_t beats) = 0;

  // One program per chip, or the same (SPMD) program on every chip of the slice. A chip of the
  // slice without a program stays idle. Throws DriverError like Chip::load.
  void load(unsigned i, unsigned j, const isa::Program&);
  void load_all(const isa::Program&);
  // A program for a chip of another slice of the same pod (SliceOptions::others): pod coordinates.
  void load_pod_chip(unsigned x, unsigned y, const isa::Program&);

  // Runs every loaded chip from reset until all are done, one fails and the rest finish or wait,
  // the watchdog finds a deadlock, or the timeout (cycles; golden and fast: instructions, times
  // the loaded chips, pooled over the pod) passes. Once.
  virtual SliceStatus run(uint64_t timeout_cycles) = 0;

  // Counters of the last run per chip (pod coordinates): the chip's counters (rtl: every
  // hw.json counter, the ICI links' among them) where the backend has them.
  virtual std::map<std::string, uint64_t> counters(unsigned x, unsigned y) = 0;

  // Record every loaded chip's timeline in run() (docs/observability.md); afterwards timelines()
  // has one per chip that had a program, in pod order, named "chip (x, y)" and grouped by backend.
  // All chips of a run share one time base (rtl: the pod's cycles from the run's start; golden:
  // the timing estimate). An rtl pod's golden chips (a mixed pod) record nothing.
  void set_tracing(bool on) { tracing_ = on; }
  bool tracing() const { return tracing_; }
  const std::vector<trace::ChipTrace>& timelines() const { return timelines_; }
  // About how many pod cycles run() takes (0: unknown; the tool gives a golden run's estimate): the
  // progress line of a long rtl run shows the time left from it.
  void set_expected_cycles(uint64_t c) { expected_cycles_ = c; }
  uint64_t expected_cycles() const { return expected_cycles_; }

  // Rows of a row-major matrix (rows x cols words, cols a multiple of lanes) cut into chips()
  // blocks of consecutive rows (chip k = i + j * w gets rows [k*rows/chips, (k+1)*rows/chips)),
  // each written at `beat` of its chip, cols / lanes beats per row; gather reads them back.
  void scatter_rows(uint64_t beat, std::span<const uint32_t> matrix, uint32_t rows, uint32_t cols);
  std::vector<uint32_t> gather_rows(uint64_t beat, uint32_t rows, uint32_t cols);

 protected:
  Slice(PodSpec pod, SliceShape shape) : programs_(std::size_t{pod.kx} * pod.ky), pod_(std::move(pod)), shape_(shape) {}
  void check_chip(unsigned i, unsigned j) const;
  void check_pod_chip(unsigned x, unsigned y) const;  // inside the pod
  // Programs by pod index x + y * kx (empty: idle).
  std::vector<std::optional<isa::Program>> programs_;
  bool tracing_ = false;
  std::vector<trace::ChipTrace> timelines_;
  uint64_t expected_cycles_ = 0;

 private:
  PodSpec pod_;
  SliceShape shape_;
};

// The ICI registers of the chip at pod (x, y) in a slice.
struct IciSetting {
  unsigned kx, ky, x, y, x0, y0, w, h;
};
IciSetting ici_setting(const PodSpec&, const SliceShape&, unsigned x, unsigned y);

// RTL pods register per preset (tb/pod).
using SliceFactory = std::function<std::unique_ptr<Slice>(const PodSpec&, const SliceShape&, const SliceOptions&)>;
void register_slice_backend(const std::string& preset, SliceFactory);
std::vector<std::string> registered_slice_presets();

// fast: every chip with the fast chip model's timing (Backend::fast).
std::unique_ptr<Slice> make_golden_slice(const PodSpec&, const SliceShape&, const SliceOptions&, bool fast = false);

// The slice check: inside the pod, non-empty; throws DriverError naming the slice and the pod.
void check_slice(const PodSpec&, const SliceShape&);

// One line per chip that failed, timed out or waits, and the pod's verdict.
std::string describe_outcomes(const SliceStatus&);

// SystemC's kernel is global: the first call in a process returns, a second throws DriverError.
void claim_systemc_kernel();

// The energy of a slice's last run (docs/energy.md): the estimates of every chip that ran, summed,
// and on the RTL those of the slice's other chips too (their routers forward flits); TOPS and
// watts over the pod's cycles (a golden run's: estimated).
energy::Estimate slice_energy(Slice&, const SliceStatus&, const energy::EnergyModel&, bool rtl);

}  // namespace tp::driver
