// Named presets: the one source of truth for every dimension (configs/presets.json).
// CMake reads the RTL parameters from the same file; programs load and validate it here.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace tp {

// A bad config: the message names the file, the preset and the key.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct MxuConfig {
  unsigned n = 8;           // array is n x n
  unsigned acc_rows = 256;  // accumulator memory rows (n fp32 each)
};

struct IciConfig {
  unsigned torus_x = 4, torus_y = 4;  // pod torus (chips per dimension, at most 32)
  unsigned vcs = 2;                   // virtual channels per port (even: two dateline classes)
  unsigned buf_flits = 8;             // input buffer per VC
  unsigned flit_bits = 64;            // data bits per flit
  unsigned replay_flits = 16;         // link replay buffer (power of two)
  unsigned link_latency = 1;          // cycles on the wire
  unsigned sa_iters = 1;              // switch-allocation iterations (the router's SaIters, docs/ici.md)
  bool class_choice = false;          // the router's ClassChoice: a dateline class per flow on uncrossed rings
  unsigned local_ports = 1;           // the router's local ports = the ICI unit's send engines (Locals, 1..4)
  unsigned turn_room = 1;             // the router's TurnRoom: room a turn into the Y ring needs (1..buf_flits)
};

struct HbmTimingConfig {
  unsigned cl = 14, cwl = 4, trcd = 14, trp = 14, tras = 34, trc = 48, tccd_s = 1, tccd_l = 2, trrd_s = 4, trrd_l = 6,
           tfaw = 30, twtr_s = 4, twtr_l = 9, trtp = 4, twr = 16, trfc = 260, trefi = 3900;
  unsigned trfcsb = 160, trrefd = 8;  // single-bank refresh: the bank's refresh time, REFSB to ACT (other banks)
};

struct HbmConfig {
  unsigned channels = 8, pseudo_channels = 2;        // pseudo-channels are independent controllers
  unsigned bank_groups = 4, banks_per_group = 4;     // powers of two
  unsigned rows = 16384, columns = 32;               // powers of two; a column is one 32-byte burst
  unsigned queue = 16, write_hi = 12, write_lo = 4;  // request queue and write-drain watermarks
  unsigned write_queue = 16;                         // write buffer (0: writes share the queue)
  unsigned starve_limit = 512;                       // cycles a request waits before it gets its bank
  bool closed_page = false;
  bool bank_interleave = true;    // address map row|column|bank (true) or row|bank|column
  bool per_bank_refresh = false;  // "refresh": "per_bank" (REFSB, one bank every tREFI / banks) or "all_bank"
  HbmTimingConfig timing;
};

// The single chip (docs/chip.md). VMEM rows and HBM beats are mxu.n lanes x 32 bits wide.
struct ChipConfig {
  unsigned vmem_rows = 4096;     // vector memory rows
  unsigned vmem_banks = 4;       // row r lives in bank r % vmem_banks
  unsigned sublanes = 1;         // vector rows per cycle (the vector unit is sublanes x mxu.n lanes)
  unsigned imem_words = 8192;    // instruction memory (128-bit instructions)
  unsigned queue = 8;            // entries per unit queue
  std::string memory = "model";  // behind the memory port: "hbm" (the HBM subsystem) or "model"
  unsigned mem_latency = 20;     // the simple memory model's read latency (cycles)
  uint64_t hbm_beats = 262144;   // memory size in beats (one beat = one VMEM row of bytes)
  // The HBM that serves the chip (memory "hbm"): the preset's hbm section with the preset's
  // chip.hbm overrides merged over it (queue depth, watermarks, address map, refresh: what a
  // chip's matrix streams want), so that the controller tests and benchmarks keep the hbm
  // section itself (docs/chip.md, "The chip on HBM").
  HbmConfig hbm;
};

struct Preset {
  std::string name;
  std::string description;
  double clock_mhz = 700.0;
  MxuConfig mxu;
  IciConfig ici;
  HbmConfig hbm;
  ChipConfig chip;
};

// configs/presets.json of this source tree, or $TENSORPOD_CONFIG when set.
std::filesystem::path default_config_path();

// All presets of a config file, validated. Throws ConfigError.
//
// A preset may inherit: "base": "<name>" names an entry of the file's top-level "bases" object
// (an abstract entry, never a preset itself) or another preset, which may have a base of its own.
// The preset's keys are merged over its base's (the base's over its own base's first): a key the
// preset has replaces the base's, except that two objects merge key by key, so "hbm": {"timing":
// {"trefi": 700}} changes that one timing; arrays and scalars replace. The merged preset is then
// validated as if it were written out in full; a message about a value that came from a base says
// so ("(inherited from base 'test')"). A cycle or an unknown base is a ConfigError naming the
// preset and the chain or the missing base; a name may not be both a base and a preset.
std::vector<Preset> load_presets(const std::filesystem::path& file = default_config_path());

// The preset named `name` ("" means the file's default). Throws ConfigError naming the preset
// and the ones that exist (a base is not one).
Preset load_preset(const std::string& name, const std::filesystem::path& file = default_config_path());

// Same, from JSON text (for tests); `origin` names the source in messages.
std::vector<Preset> parse_presets(const std::string& json_text, const std::string& origin);
std::string default_preset_name(const std::string& json_text, const std::string& origin);

// The resolved preset (bases merged in) as JSON text, echoed into every report.
std::string preset_json(const Preset& p);

// ---- Pods (configs/pods.json), apart from the chip presets ----

// A slice of a pod's torus: the rectangle [x0, x0 + w) x [y0, y0 + h) ("origin" [x0, y0],
// "shape" [w, h]); it does not wrap round the torus edge.
struct PodSlice {
  std::string name;
  unsigned x0 = 0, y0 = 0, w = 1, h = 1;
};

// A named pod: a torus_x x torus_y torus of chips of one preset, cut into non-overlapping slices
// (chips in no slice are idle). A pod's name is free text; the shipped ones are "KXxKY".
struct PodConfig {
  std::string name;
  std::string description;
  unsigned torus_x = 1, torus_y = 1;  // 1..32 each
  std::string preset;                 // the chips' preset (a name in configs/presets.json)
  unsigned link_latency = 1;          // cycles on each link (the preset's ici.link_latency is the router tests')
  unsigned board_x = 1, board_y = 1;  // "host_board": chips per host board; divides the torus
  std::vector<PodSlice> slices;       // at least one
};

// configs/pods.json of this source tree, or $TENSORPOD_PODS when set.
std::filesystem::path default_pod_config_path();

// All pods of a pods file, validated; `presets` are the preset names a pod may use. Throws
// ConfigError naming the file, the pod and the key: an unknown key, a torus outside 1..32, a
// slice outside the torus or overlapping another, a host board that does not divide the torus,
// an unknown preset.
std::vector<PodConfig> parse_pods(const std::string& json_text, const std::string& origin,
                                  const std::vector<std::string>& presets);
std::string default_pod_name(const std::string& json_text, const std::string& origin);

// The same from files: the pods file and the presets file whose names the pods may use.
std::vector<PodConfig> load_pods(const std::filesystem::path& file = default_pod_config_path(),
                                 const std::filesystem::path& presets = default_config_path());
// The pod named `name` ("" means the file's default). Throws ConfigError naming the pod and the
// ones that exist.
PodConfig load_pod(const std::string& name, const std::filesystem::path& file = default_pod_config_path(),
                   const std::filesystem::path& presets = default_config_path());

// The pod as JSON text (the file's form), for reports.
std::string pod_json(const PodConfig&);

}  // namespace tp
