// The tensorpod driver: one interface to a chip, whichever backend runs it (docs/chip.md, "Host
// interface"): the golden interpreter (always available) or a Verilated RTL model (registered by
// the binaries that link one, per preset).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "compiler.h"
#include "config.h"
#include "isa.h"
#include "trace.h"

namespace tp::driver {

// A driver or host-side failure (bad preset, backend, address, program); the message says what
// and where. Chip errors found while running are not exceptions: they are in Status.
class DriverError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// rtl: a Verilated chip; golden: the golden interpreter with its dataflow estimate of the cycles;
// fast: the golden interpreter with the fast chip model's timing, calibrated against the RTL
// (docs/scale.md): the same bits as golden, cycles close to the RTL's.
enum class Backend { rtl, golden, fast };

// "rtl", "golden" or "fast"; anything else throws DriverError listing the choices.
Backend parse_backend(std::string_view);
std::string_view backend_label(Backend);

struct Status {
  bool done = false;         // the chip finished (with or without an error)
  bool timed_out = false;    // run() gave up after its timeout; the chip did not finish
  bool interrupted = false;  // ... because the user interrupted it (Ctrl-C: tp::interrupted())
  isa::Err err = isa::Err::none;
  uint32_t pc = 0;      // the offending instruction's PC when err != none
  uint64_t cycles = 0;  // cycles since start (the golden backend: its estimate)
  bool ok() const { return done && !timed_out && err == isa::Err::none; }
};

// A one-line description: "done in 1234 cycles", "error deadlock at pc 17", "timed out after ...".
std::string describe(const Status&);

// Counter names every backend uses for what it can report (docs/chip.md, COUNTER k).
inline constexpr std::string_view kCycles = "cycles", kBytesLoaded = "bytes_loaded", kBytesStored = "bytes_stored",
                                  kMxuRows = "mxu_rows", kInstructions = "instructions";

// The RTL's performance counters by index k (docs/chip.md): the counters of sw/isa/hw.json
// (tp::isa::hw::kCounters), 49 of them. The first 25 are as before: "cycles", "load_busy",
// "load_wait", "load_stall", "load_idle", the same for mxu, vec and store, "bytes_loaded",
// "bytes_stored", "mxu_rows", "mxu_array_busy", "instructions", "vec_rows", "vmem_conflicts",
// "mxu_macs"; then the ICI unit's and the router's ("ici_busy" .. "ici_flits_local"). An RTL
// backend names its counters with these.
std::span<const std::string_view> rtl_counter_names();

class Chip {
 public:
  virtual ~Chip() = default;
  Chip(const Chip&) = delete;
  Chip& operator=(const Chip&) = delete;

  // A chip of the named preset ("" = the config file's default) on a backend. Throws DriverError:
  // unknown preset, or no RTL backend built for the preset (naming those that are).
  static std::unique_ptr<Chip> open(const std::string& preset, Backend);

  const Preset& preset() const { return preset_; }
  unsigned lanes() const { return preset_.mxu.n; }

  // A bump allocator over HBM beats. alloc throws DriverError when the memory is exhausted;
  // release(mark) frees everything allocated after allocated() returned mark.
  uint64_t alloc(uint64_t beats);
  uint64_t allocated() const { return next_beat_; }
  void release(uint64_t mark);

  // HBM through the host's backdoor. words.size() must be a multiple of lanes(); throws
  // DriverError for a range past the end of HBM.
  virtual void write(uint64_t beat, std::span<const uint32_t> words) = 0;
  virtual std::vector<uint32_t> read(uint64_t beat, uint64_t beats) = 0;

  // Throws DriverError when the program was built for another preset or does not fit the
  // instruction memory.
  virtual void load(const isa::Program&) = 0;

  // Runs to done, an error or the timeout (then timed_out is set; it never hangs). The golden
  // backend counts its steps against the timeout.
  virtual Status run(uint64_t timeout_cycles) = 0;

  // Named counters of the last run (kCycles etc. where the backend has them).
  virtual std::map<std::string, uint64_t> counters() = 0;
  virtual std::string backend_name() const = 0;

  // Record the timeline of every following run() into t (nullptr: none; docs/observability.md):
  // each run starts it afresh (its name and group stay) and finishes it at the run's cycles.
  void set_trace(trace::ChipTrace* t) { trace_ = t; }
  trace::ChipTrace* trace() const { return trace_; }
  // About how many cycles the next run() takes (0: unknown): a long run's progress line on the
  // terminal shows the time left from it.
  void set_expected_cycles(uint64_t c) { expected_cycles_ = c; }
  uint64_t expected_cycles() const { return expected_cycles_; }

 protected:
  explicit Chip(Preset preset);
  // Throws DriverError unless beats [beat, beat + beats) are inside HBM; `what` names the access.
  void check_hbm_range(uint64_t beat, uint64_t beats, std::string_view what) const;
  // The load() checks every backend makes: preset fingerprint and program length.
  void check_program(const isa::Program&) const;

 private:
  Preset preset_;
  uint64_t next_beat_ = 0;
  trace::ChipTrace* trace_ = nullptr;
  uint64_t expected_cycles_ = 0;
};

// RTL backends register themselves per preset from a static initializer of the binary that
// links them. The registry is a function-local static, so registering from any static
// initializer is safe.
using Factory = std::function<std::unique_ptr<Chip>(const Preset&)>;
void register_backend(Backend, const std::string& preset, Factory);
std::vector<std::string> registered_presets(Backend);

// The golden backend (sw/driver/golden_chip.cpp), also what open() returns for Backend::golden,
// and with fast the fast backend (Backend::fast). timing_only (fast only): the timing without the
// data (golden::ChipModel::set_timing_only): for architecture sweeps, whose outputs are not defined.
std::unique_ptr<Chip> make_golden_chip(const Preset&, bool fast = false, bool timing_only = false);

// ---- Convenience: end-to-end runs checked bit-exact against a host reference ----

struct MatmulSpec {
  uint32_t m = 0, k = 0, n = 0;
  bool bias = false, relu = false;
  compiler::Form form = compiler::Form::automatic;  // how the compiler writes the program
  // The host loads this many instruction words (halts after the program's; 0 or fewer than the
  // program: none). Two programs padded alike take equally long to load, so on HBM they start at
  // the same point of the refresh interval: a fair comparison of their cycles.
  uint32_t load_words = 0;
  // bf16 operands two per word in HBM (compiler::MatrixRef::bf16x2), half their traffic, as
  // compiler::prefer_bf16x2 picks them: W at an even n, and A where the layer still compiles
  // (a bf16x2 A is written out); bf16x2_a false keeps A plain.
  bool bf16x2 = false, bf16x2_a = true;
};

// x[m, k] -> relu(x W1[k, h] + b1) rounded to bf16 -> h W2[h, n] + b2 (fp32), one program.
struct MlpSpec {
  uint32_t m = 0, k = 0, h = 0, n = 0;
  compiler::Form form = compiler::Form::automatic;
};

struct Mismatch {
  uint32_t row = 0, col = 0;
  uint32_t got = 0, expected = 0;
};

struct MatmulRun {
  std::string what;  // "matmul 5x7x9 bias relu" / "mlp 5x7x9x3"
  uint64_t seed = 0;
  Status status;
  bool pass = false;                            // status.ok() and every element bit-exact
  uint64_t mismatches = 0;                      // elements that differ (0 when the run failed)
  std::optional<Mismatch> first_mismatch;       // row-major first
  uint64_t instructions = 0;                    // program length
  compiler::Form form = compiler::Form::loops;  // the form the compiler wrote (loops, unrolled or nests)
  uint64_t cycles = 0, mxu_rows = 0, bytes_loaded = 0, bytes_stored = 0;
  double mxu_utilization = 0;   // mxu_rows / cycles, 0 when the backend reports no cycles
  double roofline_cycles = 0;   // the layers' roofline_cycles() summed
  double compulsory_bytes = 0;  // the layers' A and W read once, C written once, bytes as stored
  std::map<std::string, uint64_t> counters;
  std::vector<uint32_t> output;  // the result read back (row-major m x n), empty when the run failed
  double run_seconds = 0;        // wall-clock time of Chip::run alone (simulation speed)
};

// The roofline of an m x k x n matmul on a preset (docs/chip.md): the larger of its compute at the
// peak (one n x n MAC step per cycle) and its compulsory traffic (A and W read once, C written
// once, 4 bytes an element, 2 for A or W in bf16x2: bytes as stored) over the memory interface:
// the chip's port (a beat of 4n bytes a cycle), or on HBM the pseudo-channels' data buses if
// they are narrower.
double memory_bytes_per_cycle(const Preset&);
double compulsory_bytes(uint64_t m, uint64_t k, uint64_t n, bool a_bf16x2 = false, bool w_bf16x2 = false);
double roofline_cycles(const Preset&, uint64_t m, uint64_t k, uint64_t n, bool a_bf16x2 = false, bool w_bf16x2 = false);

// Random bf16 operands (exponents near 0, both signs) and fp32 bias from `seed`, HBM allocated
// (and released afterwards), packed, compiled, loaded, run, read back and compared. timeout 0:
// generous automatic. Throws DriverError / CompileError for shapes that cannot run at all.
MatmulRun run_matmul(Chip&, const MatmulSpec&, uint64_t seed, uint64_t timeout_cycles = 0);
MatmulRun run_mlp(Chip&, const MlpSpec&, uint64_t seed, uint64_t timeout_cycles = 0);

// The operands of run_matmul and run_mlp: bf16 values with exponents near 0 and both signs (sums
// of a few hundred products stay far from overflow), fp32 biases alike.
std::vector<uint16_t> random_bf16s(std::mt19937_64&, uint64_t count);
std::vector<uint32_t> random_fp32s(std::mt19937_64&, uint64_t count);

// The host reference of one layer: the tiled MXU sum (golden::mxu_matmul on operands zero-padded
// to multiples of n), + bias once per element (fp32_add), ReLU and the bf16 rounding as the vector
// unit does them. a is m x k, w is k x n bf16; bias has n fp32 values or is empty; row-major m x n.
// The vector unit's ReLU on an fp32 pattern (NaN stays a NaN, a denormal counts as 0).
uint32_t reference_relu(uint32_t);

std::vector<uint32_t> reference_layer(const Preset&, uint32_t m, uint32_t k, uint32_t n, std::span<const uint16_t> a,
                                      std::span<const uint16_t> w, std::span<const uint32_t> bias, bool relu,
                                      bool out_bf16);

}  // namespace tp::driver
