#include "driver.h"

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <mutex>
#include <random>
#include <utility>

#include "compiler.h"
#include "fp.h"
#include "hbm_device.h"
#include "mxu_model.h"

namespace tp::driver {

namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::pair<Backend, std::string>, Factory> factories;
};

// Function-local: backends register from static initializers of other translation units, which
// may run before this file's globals are constructed.
Registry& registry() {
  static Registry r;
  return r;
}

// COUNTER k (docs/chip.md): the names of the generated counter map (sw/isa/hw.json), in index
// order. mxu_array_busy counts the cycles the array itself is busy, as opposed to the MXU unit's
// queue (mxu_busy).
constexpr auto kRtlCounters = [] {
  std::array<std::string_view, isa::hw::kNumCounters> names{};
  for (unsigned k = 0; k < names.size(); ++k) names[k] = isa::hw::kCounters[k].name;
  return names;
}();
static_assert(kRtlCounters[0] == "cycles" && kRtlCounters[24] == "mxu_macs");

}  // namespace

Backend parse_backend(std::string_view name) {
  if (name == "rtl") return Backend::rtl;
  if (name == "golden") return Backend::golden;
  if (name == "fast") return Backend::fast;
  throw DriverError(fmt::format("unknown backend '{}' (choices: rtl, golden, fast)", name));
}

std::string_view backend_label(Backend b) {
  return b == Backend::rtl ? "rtl" : b == Backend::fast ? "fast" : "golden";
}

std::string describe(const Status& s) {
  if (s.interrupted) return fmt::format("interrupted by the user after {} cycles (not done)", s.cycles);
  if (s.timed_out) return fmt::format("timed out after {} cycles (not done)", s.cycles);
  if (s.err != isa::Err::none)
    return fmt::format("error {} at pc {} after {} cycles", isa::err_name(s.err), s.pc, s.cycles);
  if (!s.done) return "not done";
  return fmt::format("done in {} cycles", s.cycles);
}

std::span<const std::string_view> rtl_counter_names() { return kRtlCounters; }

Chip::Chip(Preset preset) : preset_(std::move(preset)) {}

uint64_t Chip::alloc(uint64_t beats) {
  const uint64_t total = preset_.chip.hbm_beats;
  if (beats > total - next_beat_)
    throw DriverError(fmt::format("HBM allocation of {} beats: out of memory ({} of {} beats in use, preset '{}')",
                                  beats, next_beat_, total, preset_.name));
  const uint64_t beat = next_beat_;
  next_beat_ += beats;
  return beat;
}

void Chip::release(uint64_t mark) {
  if (mark > next_beat_)
    throw DriverError(fmt::format("HBM release to beat {}: only {} beats are allocated", mark, next_beat_));
  next_beat_ = mark;
}

void Chip::check_hbm_range(uint64_t beat, uint64_t beats, std::string_view what) const {
  const uint64_t total = preset_.chip.hbm_beats;
  if (beat > total || beats > total - beat)
    throw DriverError(fmt::format("{} of beats {}..{}: past the end of HBM ({} beats, preset '{}')", what, beat,
                                  beat + beats - 1, total, preset_.name));
}

void Chip::check_program(const isa::Program& prog) const {
  try {
    isa::check_preset(prog, preset_);
  } catch (const isa::IsaError& e) {
    throw DriverError(fmt::format("load on a '{}' chip: {}", preset_.name, e.what()));
  }
  if (prog.code.size() > preset_.chip.imem_words)
    throw DriverError(fmt::format("load: the program has {} instructions, preset '{}' holds {} (imem_words)",
                                  prog.code.size(), preset_.name, preset_.chip.imem_words));
}

void register_backend(Backend backend, const std::string& preset, Factory factory) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  r.factories[{backend, preset}] = std::move(factory);
}

std::vector<std::string> registered_presets(Backend backend) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> out;
  for (const auto& [key, factory] : r.factories)
    if (key.first == backend) out.push_back(key.second);
  return out;
}

std::unique_ptr<Chip> Chip::open(const std::string& preset_name, Backend backend) {
  Preset preset;
  try {
    preset = load_preset(preset_name);
  } catch (const ConfigError& e) {
    throw DriverError(e.what());
  }
  Factory factory;
  {
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    if (auto it = r.factories.find({backend, preset.name}); it != r.factories.end()) factory = it->second;
  }
  if (factory) return factory(preset);
  if (backend == Backend::golden) return make_golden_chip(preset);
  if (backend == Backend::fast) return make_golden_chip(preset, true);
  const auto built = registered_presets(backend);
  throw DriverError(fmt::format("no {} backend for preset '{}' in this binary (built for: {})", backend_label(backend),
                                preset.name, built.empty() ? "none" : fmt::format("{}", fmt::join(built, ", "))));
}

// ---- Host reference and end-to-end runs ----

namespace {

// bf16 values with a biased exponent in [120, 134] (magnitudes 2^-7 .. 2^8) and both signs: sums
// of a few hundred products stay far from overflow and rarely cancel to denormals.
uint16_t random_bf16(std::mt19937_64& rng) {
  const uint64_t r = rng();
  const uint32_t e = 120 + static_cast<uint32_t>((r >> 8) % 15);
  return static_cast<uint16_t>(((r & 1u) << 15) | (e << 7) | ((r >> 1) & 0x7fu));
}

uint32_t random_fp32(std::mt19937_64& rng) {
  const uint64_t r = rng();
  const uint32_t e = 120 + static_cast<uint32_t>((r >> 32) % 15);
  return static_cast<uint32_t>(((r & 1u) << 31) | (e << 23) | ((r >> 1) & 0x7fffffu));
}

// Frees the run's HBM allocations however the run ends.
class AllocScope {
 public:
  explicit AllocScope(Chip& chip) : chip_(chip), mark_(chip.allocated()) {}
  ~AllocScope() { chip_.release(mark_); }
  AllocScope(const AllocScope&) = delete;
  AllocScope& operator=(const AllocScope&) = delete;

 private:
  Chip& chip_;
  uint64_t mark_;
};

uint64_t auto_timeout(const Preset& p, const std::vector<compiler::MatmulLayer>& layers) {
  // Every row the MXU streams, every beat moved and every instruction, with a wide margin for
  // memory latency and stalls.
  uint64_t work = 0;
  for (const auto& l : layers) {
    const auto t = compiler::plan(p, l);
    const uint64_t tiles = uint64_t{t.kb} * t.nb;
    work += tiles * (l.m + uint64_t{t.mb} * p.mxu.n) + uint64_t{l.m} * (t.kb + 2 * t.nb) + 8 * tiles * t.mb;
  }
  return 100000 + 50 * work;
}

void finish(Chip& chip, MatmulRun& run, const isa::Program& prog, const std::vector<compiler::MatmulLayer>& layers,
            uint64_t timeout, const std::vector<uint32_t>& expected) {
  const Preset& p = chip.preset();
  run.instructions = prog.code.size();
  for (const auto& l : layers) {
    run.roofline_cycles += roofline_cycles(p, l.m, l.k, l.n, l.a.bf16x2, l.w.bf16x2);
    run.compulsory_bytes += compulsory_bytes(l.m, l.k, l.n, l.a.bf16x2, l.w.bf16x2);
  }
  chip.load(prog);
  chip.set_expected_cycles(static_cast<uint64_t>(run.roofline_cycles));  // a lower bound: about
  const auto t0 = std::chrono::steady_clock::now();
  run.status = chip.run(timeout ? timeout : auto_timeout(p, layers));
  run.run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  run.counters = chip.counters();
  auto counter = [&](std::string_view name) {
    auto it = run.counters.find(std::string(name));
    return it == run.counters.end() ? uint64_t{0} : it->second;
  };
  run.cycles = run.status.cycles ? run.status.cycles : counter(kCycles);
  run.mxu_rows = counter(kMxuRows);
  run.bytes_loaded = counter(kBytesLoaded);
  run.bytes_stored = counter(kBytesStored);
  run.mxu_utilization = run.cycles ? static_cast<double>(run.mxu_rows) / static_cast<double>(run.cycles) : 0.0;
  chip.set_expected_cycles(0);
  if (!run.status.ok()) return;
  const auto& out = layers.back();
  const auto got = compiler::unpack(p, out.m, out.n, chip.read(out.c.beat, compiler::padded_beats(p, out.m, out.n)));
  for (uint64_t i = 0; i < got.size(); ++i) {
    if (got[i] == expected[i]) continue;
    if (run.mismatches++ == 0)
      run.first_mismatch =
          Mismatch{static_cast<uint32_t>(i / out.n), static_cast<uint32_t>(i % out.n), got[i], expected[i]};
  }
  run.pass = run.mismatches == 0;
  run.output = got;
}

}  // namespace

std::vector<uint16_t> random_bf16s(std::mt19937_64& rng, uint64_t count) {
  std::vector<uint16_t> v(count);
  for (auto& x : v) x = random_bf16(rng);
  return v;
}

std::vector<uint32_t> random_fp32s(std::mt19937_64& rng, uint64_t count) {
  std::vector<uint32_t> v(count);
  for (auto& x : v) x = random_fp32(rng);
  return v;
}

uint32_t reference_relu(uint32_t x) {
  if (golden::fp32_is_nan(x)) return golden::kFp32QNaN;
  const uint32_t v = golden::fp32_flush(x);  // DAZ: a denormal is not > 0
  return (v >> 31) == 0 && v != 0 ? v : 0u;
}

std::vector<uint32_t> reference_layer(const Preset& p, uint32_t m, uint32_t k, uint32_t n, std::span<const uint16_t> a,
                                      std::span<const uint16_t> w, std::span<const uint32_t> bias, bool relu,
                                      bool out_bf16) {
  if (a.size() != uint64_t{m} * k || w.size() != uint64_t{k} * n || (!bias.empty() && bias.size() != n))
    throw DriverError(fmt::format("reference_layer: operand sizes do not match {}x{}x{}", m, k, n));
  // Zero-pad K and N to multiples of the array size, as the chip sees the operands.
  const unsigned an = p.mxu.n;
  const uint32_t kp = compiler::padded_rows(p, k), np = compiler::padded_rows(p, n);
  std::vector<uint16_t> ap(uint64_t{m} * kp, 0), wp(uint64_t{kp} * np, 0);
  for (uint64_t r = 0; r < m; ++r)
    for (uint64_t c = 0; c < k; ++c) ap[r * kp + c] = a[r * k + c];
  for (uint64_t r = 0; r < k; ++r)
    for (uint64_t c = 0; c < n; ++c) wp[r * np + c] = w[r * n + c];
  const auto full = golden::mxu_matmul(an, m, kp, np, ap, wp);
  std::vector<uint32_t> c(uint64_t{m} * n);
  for (uint64_t r = 0; r < m; ++r) {
    for (uint64_t j = 0; j < n; ++j) {
      uint32_t v = full[r * np + j];
      if (!bias.empty()) v = golden::fp32_add(v, bias[j]);
      if (relu) v = reference_relu(v);
      if (out_bf16) v = golden::fp32_to_bf16(v);
      c[r * n + j] = v;
    }
  }
  return c;
}

namespace {

// A matrix's place in HBM, allocated but not yet written (weights: rows padded to n; bf16x2: bf16
// two per word, compiler::pack_bf16x2).
compiler::MatrixRef reserve(Chip& chip, uint32_t rows, uint32_t cols, bool weight = false, bool bf16x2 = false) {
  compiler::MatrixRef r{0, rows, cols, bf16x2};
  r.beat = chip.alloc(compiler::matrix_beats(chip.preset(), r, weight));
  return r;
}

// A bf16 operand's words as its ref lays them out.
std::vector<uint32_t> pack_operand(const Preset& p, const compiler::MatrixRef& r, std::span<const uint16_t> v,
                                   bool weight) {
  return r.bf16x2 ? compiler::pack_bf16x2(p, r.rows, r.cols, v, weight)
                  : compiler::pack_bf16(p, r.rows, r.cols, v, weight);
}

void write_matrix(Chip& chip, const compiler::MatrixRef& ref, const std::vector<uint32_t>& words) {
  if (!words.empty()) chip.write(ref.beat, words);
}

// An output matrix, filled with a NaN pattern the chip never writes, so that rows the program
// fails to store show up as mismatches.
void fill_output(Chip& chip, const compiler::MatrixRef& ref) {
  const uint64_t beats = compiler::padded_beats(chip.preset(), ref.rows, ref.cols);
  chip.write(ref.beat, std::vector<uint32_t>(beats * chip.lanes(), 0x7fbadbadu));
}

}  // namespace

double memory_bytes_per_cycle(const Preset& p) {
  const double port = 4.0 * double(p.mxu.n);
  if (p.chip.memory != "hbm") return port;
  const double bus =
      double(p.chip.hbm.channels * p.chip.hbm.pseudo_channels) * 32.0 / double(golden::HbmTiming{}.burst_cycles);
  return std::min(port, bus);
}

double compulsory_bytes(uint64_t m, uint64_t k, uint64_t n, bool a_bf16x2, bool w_bf16x2) {
  return (a_bf16x2 ? 2.0 : 4.0) * double(m) * double(k) + (w_bf16x2 ? 2.0 : 4.0) * double(k) * double(n) +
         4.0 * double(m) * double(n);
}

double roofline_cycles(const Preset& p, uint64_t m, uint64_t k, uint64_t n, bool a_bf16x2, bool w_bf16x2) {
  const double flops = 2.0 * double(m) * double(k) * double(n), peak = 2.0 * double(p.mxu.n) * double(p.mxu.n);
  return std::max(flops / peak, compulsory_bytes(m, k, n, a_bf16x2, w_bf16x2) / memory_bytes_per_cycle(p));
}

// Both runs place and compile first: shapes that do not fit HBM, VMEM or the instruction memory
// are refused (alloc's DriverError, compile's CompileError) before any operand is drawn or the
// host reference computed.
MatmulRun run_matmul(Chip& chip, const MatmulSpec& s, uint64_t seed, uint64_t timeout_cycles) {
  const Preset& p = chip.preset();
  MatmulRun run;
  run.what = fmt::format("matmul {}x{}x{}{}{}{}", s.m, s.k, s.n, s.bias ? " bias" : "", s.relu ? " relu" : "",
                         s.bf16x2 ? " bf16x2" : "");
  run.seed = seed;
  AllocScope scope(chip);
  compiler::MatmulLayer layer;
  layer.m = s.m;
  layer.k = s.k;
  layer.n = s.n;
  layer.bias = s.bias;
  layer.relu = s.relu;
  compiler::MatmulLayer flags;  // which operands are bf16x2 (compiler::prefer_bf16x2)
  if (s.bf16x2) {
    flags = compiler::prefer_bf16x2(p, compiler::packed_layer(p, s.m, s.k, s.n, s.bias), {.form = s.form});
    flags.a.bf16x2 = flags.a.bf16x2 && s.bf16x2_a;
  }
  layer.a = reserve(chip, s.m, s.k, false, flags.a.bf16x2);
  layer.w = reserve(chip, s.k, s.n, true, flags.w.bf16x2);
  if (s.bias) layer.b = reserve(chip, 1, s.n);
  layer.c = reserve(chip, s.m, s.n);
  const std::vector<compiler::MatmulLayer> layers = {layer};
  compiler::CompileInfo info;
  auto prog = compiler::compile(p, layers, {.form = s.form}, &info);
  run.form = info.form;
  const size_t compiled = prog.code.size();
  if (s.load_words > compiled) {
    if (s.load_words > p.chip.imem_words)
      throw DriverError(fmt::format("run_matmul: load_words {} past the {}-word instruction memory", s.load_words,
                                    p.chip.imem_words));
    prog.code.resize(s.load_words, isa::encode(isa::build::halt()));
  }

  std::mt19937_64 rng(seed);
  const auto a = random_bf16s(rng, uint64_t{s.m} * s.k);
  const auto w = random_bf16s(rng, uint64_t{s.k} * s.n);
  const auto bias = s.bias ? random_fp32s(rng, s.n) : std::vector<uint32_t>{};
  const auto expected = reference_layer(p, s.m, s.k, s.n, a, w, bias, s.relu, false);
  write_matrix(chip, layer.a, pack_operand(p, layer.a, a, false));
  write_matrix(chip, layer.w, pack_operand(p, layer.w, w, true));
  if (s.bias) write_matrix(chip, layer.b, compiler::pack_fp32(p, 1, s.n, bias));
  fill_output(chip, layer.c);
  finish(chip, run, prog, layers, timeout_cycles, expected);
  run.instructions = compiled;  // the program's, not the padding's
  return run;
}

MatmulRun run_mlp(Chip& chip, const MlpSpec& s, uint64_t seed, uint64_t timeout_cycles) {
  const Preset& p = chip.preset();
  MatmulRun run;
  run.what = fmt::format("mlp {}x{}x{}x{}", s.m, s.k, s.h, s.n);
  run.seed = seed;
  AllocScope scope(chip);
  compiler::MatmulLayer l1, l2;
  l1.m = s.m;
  l1.k = s.k;
  l1.n = s.h;
  l1.bias = l1.relu = l1.out_bf16 = true;
  l1.a = reserve(chip, s.m, s.k);
  l1.w = reserve(chip, s.k, s.h, true);
  l1.b = reserve(chip, 1, s.h);
  l1.c = reserve(chip, s.m, s.h);
  l2.m = s.m;
  l2.k = s.h;
  l2.n = s.n;
  l2.bias = true;
  l2.a = l1.c;
  l2.w = reserve(chip, s.h, s.n, true);
  l2.b = reserve(chip, 1, s.n);
  l2.c = reserve(chip, s.m, s.n);
  const std::vector<compiler::MatmulLayer> layers = {l1, l2};
  compiler::CompileInfo info;
  const auto prog = compiler::compile(p, layers, {.form = s.form}, &info);
  run.form = info.form;

  std::mt19937_64 rng(seed);
  const auto x = random_bf16s(rng, uint64_t{s.m} * s.k);
  const auto w1 = random_bf16s(rng, uint64_t{s.k} * s.h);
  const auto b1 = random_fp32s(rng, s.h);
  const auto w2 = random_bf16s(rng, uint64_t{s.h} * s.n);
  const auto b2 = random_fp32s(rng, s.n);
  // Layer 1's output is bf16 in bits 15:0: exactly layer 2's A operand.
  const auto h32 = reference_layer(p, s.m, s.k, s.h, x, w1, b1, true, true);
  std::vector<uint16_t> h(h32.size());
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(h32[i]);
  const auto expected = reference_layer(p, s.m, s.h, s.n, h, w2, b2, false, false);
  write_matrix(chip, l1.a, compiler::pack_bf16(p, s.m, s.k, x));
  write_matrix(chip, l1.w, compiler::pack_bf16(p, s.k, s.h, w1, true));
  write_matrix(chip, l1.b, compiler::pack_fp32(p, 1, s.h, b1));
  fill_output(chip, l1.c);
  write_matrix(chip, l2.w, compiler::pack_bf16(p, s.h, s.n, w2, true));
  write_matrix(chip, l2.b, compiler::pack_fp32(p, 1, s.n, b2));
  fill_output(chip, l2.c);
  finish(chip, run, prog, layers, timeout_cycles, expected);
  return run;
}

}  // namespace tp::driver
