// tensorpod: assemble, disassemble and run chip programs, and run compiled matmuls and MLPs
// checked bit-exact against the host reference, on the golden interpreter or an RTL model, on
// one chip or on a slice of a pod (tensorpod pod; docs/pod.md).
//
// Exit codes: 0 ok, 1 a mismatch or a chip error (or timeout), 2 a usage or input error.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <unistd.h>
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "collectives.h"
#include "compiler.h"
#include "driver.h"
#include "energy.h"
#include "interrupt.h"
#include "isa.h"
#include "layer_file.h"
#include "mpi_world.h"
#include "pod_comm.h"
#include "pod_programs.h"
#include "shard.h"
#include "slice.h"
#include "trace.h"
#include "train.h"

namespace {

using json = nlohmann::ordered_json;
using tp::driver::Backend;
using tp::driver::Chip;

constexpr int kExitOk = 0, kExitFail = 1, kExitUsage = 2;

// A usage or input error: printed, exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An input file: it must exist and be a regular file (a directory opens as an empty stream).
void check_input(const std::string& path, const std::string& what) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) throw UsageError(fmt::format("{} {}: no such file", what, path));
  if (std::filesystem::is_directory(st)) throw UsageError(fmt::format("{} {}: is a directory, not a file", what, path));
  if (::access(path.c_str(), R_OK) != 0) throw UsageError(fmt::format("{} {}: cannot be read", what, path));
}

// An output file, checked before any long work: not a directory, in a folder that exists and is
// writable, writable itself if it exists, and none of the inputs (asm x.s -o x.s).
void check_output(const std::string& path, const std::string& what, const std::vector<std::string>& inputs = {}) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.empty()) throw UsageError(fmt::format("{}: an empty file name", what));
  if (fs::is_directory(path, ec)) throw UsageError(fmt::format("{} {}: is a directory, not a file", what, path));
  const fs::path parent = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec))
    throw UsageError(fmt::format("{} {}: the folder {} does not exist", what, path, parent.string()));
  if (::access(parent.c_str(), W_OK) != 0 || (fs::exists(path, ec) && ::access(path.c_str(), W_OK) != 0))
    throw UsageError(fmt::format("{} {}: cannot be written", what, path));
  for (const auto& in : inputs)
    if (fs::exists(in, ec) && fs::exists(path, ec) && fs::equivalent(in, path, ec))
      throw UsageError(fmt::format("{} {}: is the input {}; give another output file", what, path, in));
}

// An output folder (--waves), checked before any long work: made if missing, and writable.
void check_folder(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(path, ec) && !fs::is_directory(path, ec))
    throw UsageError(fmt::format("{} {}: is a file, not a folder", what, path));
  if (!fs::exists(path, ec) && !fs::create_directories(path, ec))
    throw UsageError(fmt::format("{} {}: the folder cannot be made ({})", what, path, ec.message()));
  if (::access(path.c_str(), W_OK) != 0) throw UsageError(fmt::format("{} {}: cannot be written", what, path));
}

std::string read_text(const std::string& path) {
  check_input(path, "file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(fmt::format("{}: cannot open", path));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

uint64_t parse_u64(const std::string& text, const std::string& what) {
  size_t used = 0;
  uint64_t v = 0;
  try {
    // Decimal, or hex with 0x (as the assembler); a leading 0 is not octal.
    const bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    v = std::stoull(hex ? text.substr(2) : text, &used, hex ? 16 : 10);
    if (hex) used += 2;
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || text[0] == '-')
    throw UsageError(fmt::format("{}: '{}' is not a non-negative number", what, text));
  return v;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// "MxKxN" (count = 3) or "MxKxHxN" (count = 4), or with count = 0 three or more: positive 32-bit
// sizes.
std::vector<uint32_t> parse_shape(const std::string& text, size_t count, const std::string& option) {
  const auto parts = split(text, 'x');
  if (count == 0 ? parts.size() < 3 : parts.size() != count)
    throw UsageError(fmt::format("{} {}: expected {} sizes separated by 'x'", option, text,
                                 count == 0 ? std::string("3 or more") : std::to_string(count)));
  std::vector<uint32_t> out;
  for (const auto& part : parts) {
    const uint64_t v = parse_u64(part, option);
    if (v == 0 || v > 0xffffffffu) throw UsageError(fmt::format("{} {}: sizes must be 1..2^32-1", option, text));
    out.push_back(static_cast<uint32_t>(v));
  }
  return out;
}

// --hbm-in BEAT:FILE: the file's little-endian 32-bit words into HBM from BEAT.
void hbm_in(Chip& chip, const std::string& spec) {
  const auto colon = spec.find(':');
  if (colon == std::string::npos) throw UsageError(fmt::format("--hbm-in {}: expected BEAT:FILE", spec));
  const uint64_t beat = parse_u64(spec.substr(0, colon), "--hbm-in beat");
  const std::string file = spec.substr(colon + 1);
  const std::string bytes = read_text(file);
  const size_t beat_bytes = 4 * size_t{chip.lanes()};
  if (bytes.size() % beat_bytes != 0)
    throw UsageError(
        fmt::format("--hbm-in {}: {} bytes is not a whole number of {}-byte beats", file, bytes.size(), beat_bytes));
  std::vector<uint32_t> words(bytes.size() / 4);
  for (size_t i = 0; i < words.size(); ++i)
    for (unsigned b = 0; b < 4; ++b) words[i] |= uint32_t{static_cast<unsigned char>(bytes[4 * i + b])} << (8 * b);
  chip.write(beat, words);
}

// --hbm-out BEAT:BEATS:FILE: HBM after the run into the file (little-endian words).
void hbm_out(Chip& chip, const std::string& spec) {
  const auto parts = split(spec, ':');
  if (parts.size() < 3) throw UsageError(fmt::format("--hbm-out {}: expected BEAT:BEATS:FILE", spec));
  const uint64_t beat = parse_u64(parts[0], "--hbm-out beat");
  const uint64_t beats = parse_u64(parts[1], "--hbm-out beats");
  const std::string file = spec.substr(parts[0].size() + parts[1].size() + 2);
  const auto words = chip.read(beat, beats);
  std::string bytes(words.size() * 4, '\0');
  for (size_t i = 0; i < words.size(); ++i)
    for (unsigned b = 0; b < 4; ++b) bytes[4 * i + b] = static_cast<char>((words[i] >> (8 * b)) & 0xffu);
  std::ofstream out(file, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw UsageError(fmt::format("--hbm-out {}: cannot write", file));
}

json status_json(const tp::driver::Status& s) {
  return {{"done", s.done},
          {"timed_out", s.timed_out},
          {"interrupted", s.interrupted},
          {"error", std::string(tp::isa::err_name(s.err))},
          {"pc", s.pc},
          {"cycles", s.cycles}};
}

void write_report(const std::string& path, const json& report) {
  std::ofstream out(path);
  out << report.dump(2) << "\n";
  if (!out) throw UsageError(fmt::format("--report {}: cannot write", path));
  fmt::print("report: {}\n", path);
}

// --trace FILE and --profile (docs/observability.md): the timelines of a command's chips, written
// as one Chrome trace (every backend's chips, one process each) and printed as op profiles.
struct Observe {
  std::string trace;
  bool profile = false;
  std::deque<tp::trace::ChipTrace> chips;  // stable addresses: the chips record into them

  bool on() const { return !trace.empty() || profile; }
  // A new timeline for one chip of a backend.
  tp::trace::ChipTrace* add(const std::string& name, const std::string& group) {
    chips.emplace_back(name);
    chips.back().set_group(group);
    return &chips.back();
  }
  void add_all(const std::vector<tp::trace::ChipTrace>& v) { chips.insert(chips.end(), v.begin(), v.end()); }
  // The op profile of each chip recorded since `from`.
  void print_profiles(std::size_t from) const {
    if (!profile) return;
    for (std::size_t i = from; i < chips.size(); ++i) {
      const auto& c = chips[i];
      fmt::print("{}", tp::trace::format_profile(tp::trace::make_profile(c), c.group() + " " + c.name()));
      if (c.unattributed() > 0) fmt::print("  ({} busy or stall cycles without an instruction)\n", c.unattributed());
    }
  }
  void write(const std::string& tool, const std::string& backend, const tp::Preset& p) const {
    if (trace.empty()) return;
    std::ofstream f(trace);
    std::vector<const tp::trace::ChipTrace*> v;
    uint64_t slices = 0;
    for (const auto& c : chips) {
      v.push_back(&c);
      slices += c.slices().size();
    }
    const uint64_t unmatched = tp::trace::write_chrome_trace(f, v, {tool, backend, p.name, p.clock_mhz / 1000.0});
    if (!f) throw UsageError(fmt::format("--trace {}: cannot write", trace));
    fmt::print("trace: {} ({} chips, {} instruction slices{}; open it in ui.perfetto.dev)\n", trace, chips.size(),
               slices, unmatched ? fmt::format(", {} ICI flows without both ends", unmatched) : std::string());
  }
};

void add_observe_options(CLI::App* cmd, Observe& o) {
  cmd->add_option("--trace", o.trace, "write a Chrome trace (ui.perfetto.dev) of the run's chips to this file")
      ->check(CLI::Validator([](std::string& t) { return t.empty() ? std::string("an empty value") : std::string(); },
                             "FILE"));
  cmd->add_flag("--profile", o.profile, "print each chip's op profile (units, instruction classes, longest waits)");
}

struct RunOptions {
  Observe obs;
  std::string program, matmul, mlp, backend = "golden", preset, report;
  std::string slice, shard;  // a sharded run on a slice (cmd_run_sharded)
  std::string layers, out;   // a layer file with .npy operands; the output as .npy
  bool seed_given = false;   // --seed was on the command line
  bool bias = false, relu = false, demo = false;
  bool bf16x2 = false;       // --matmul: A and W bf16 two per word in HBM
  bool timing_only = false;  // --backend fast: the cycles without the data (docs/scale.md)
  std::string form = "automatic";
  uint64_t seed = 1, timeout = 0;
  std::vector<std::string> hbm_in, hbm_out;
};

int cmd_asm(const std::string& in, const std::string& out, const std::string& preset_name) {
  const tp::Preset preset = tp::load_preset(preset_name);
  check_input(in, "asm: the source");
  check_output(out, "asm -o", {in});
  const auto prog = tp::isa::assemble(read_text(in), in, preset);
  if (prog.code.size() > preset.chip.imem_words)
    throw UsageError(fmt::format("asm {}: {} instructions, more than the {} words of preset '{}''s instruction memory",
                                 in, prog.code.size(), preset.chip.imem_words, preset.name));
  tp::isa::write_program(out, prog);
  fmt::print("{}: {} instructions for preset '{}'\n", out, prog.code.size(), preset.name);
  return kExitOk;
}

int cmd_disasm(const std::string& in) {
  check_input(in, "disasm: the program");
  const auto prog = tp::isa::read_program(in);
  fmt::print("# {}: {} instructions, preset '{}', fingerprint {:#018x}\n", in, prog.code.size(), prog.preset,
             prog.fingerprint);
  fmt::print("{}", tp::isa::disassemble(prog));
  return kExitOk;
}

// The layers of --matmul / --mlp placed one after another from HBM beat 0, as compile shows them.
std::vector<tp::compiler::MatmulLayer> layers_at_zero(const tp::Preset& p, const std::string& matmul,
                                                      const std::string& mlp, bool bias, bool relu, bool bf16x2 = false,
                                                      const tp::compiler::Options& opts = {}) {
  uint64_t beat = 0;
  auto place = [&](uint32_t rows, uint32_t cols, bool weight, bool packed = false) {
    const tp::compiler::MatrixRef ref{beat, rows, cols, packed};
    beat += tp::compiler::matrix_beats(p, ref, weight);
    return ref;
  };
  auto layer = [&](tp::compiler::MatrixRef a, uint32_t k, uint32_t n, bool with_bias, bool w_bf16x2 = false) {
    tp::compiler::MatmulLayer l;
    l.m = a.rows;
    l.k = k;
    l.n = n;
    l.bias = with_bias;
    l.a = a;
    l.w = place(k, n, true, w_bf16x2);
    if (with_bias) l.b = place(1, n, false);
    l.c = place(a.rows, n, false);
    return l;
  };
  if (!matmul.empty()) {
    const auto s = parse_shape(matmul, 3, "--matmul");
    tp::compiler::MatmulLayer flags;  // --bf16x2: the operands the driver would pack
    if (bf16x2) flags = tp::compiler::prefer_bf16x2(p, tp::compiler::packed_layer(p, s[0], s[1], s[2], bias), opts);
    auto l = layer(place(s[0], s[1], false, flags.a.bf16x2), s[1], s[2], bias, flags.w.bf16x2);
    l.relu = relu;
    return {l};
  }
  const auto s = parse_shape(mlp, 4, "--mlp");
  auto l1 = layer(place(s[0], s[1], false), s[1], s[2], true);
  l1.relu = l1.out_bf16 = true;
  return {l1, layer(l1.c, s[2], s[3], true)};
}

// --form: how the compiler writes the program.
tp::compiler::Form parse_form(const std::string& text) {
  for (const auto f : {tp::compiler::Form::automatic, tp::compiler::Form::loops, tp::compiler::Form::unrolled,
                       tp::compiler::Form::nests})
    if (text == tp::compiler::form_name(f)) return f;
  throw UsageError(fmt::format("--form: '{}' is not automatic, loops, unrolled or nests", text));
}

int cmd_compile(const RunOptions& o, const std::string& out) {
  if (o.matmul.empty() == o.mlp.empty()) throw UsageError("compile: give exactly one of --matmul or --mlp");
  if ((o.bias || o.relu || o.bf16x2) && o.matmul.empty())
    throw UsageError("compile: --bias, --relu and --bf16x2 go with --matmul");
  const tp::Preset p = tp::load_preset(o.preset);
  const tp::compiler::Options opts{.form = parse_form(o.form)};
  const auto layers = layers_at_zero(p, o.matmul, o.mlp, o.bias, o.relu, o.bf16x2, opts);
  if (out.empty()) {
    fmt::print("{}", tp::compiler::compile_asm(p, layers, opts));
    return kExitOk;
  }
  check_output(out, "compile -o");
  tp::compiler::CompileInfo info;
  const auto prog = tp::compiler::compile(p, layers, opts, &info);
  tp::isa::write_program(out, prog);
  fmt::print("{}: {} instructions ({}) for preset '{}'\n", out, prog.code.size(), tp::compiler::form_name(info.form),
             p.name);
  return kExitOk;
}

void print_run(const tp::driver::MatmulRun& run, Chip& chip, bool timing_only = false) {
  fmt::print("{} on {} (preset '{}', n={}), seed {}\n", run.what, chip.backend_name(), chip.preset().name, chip.lanes(),
             run.seed);
  fmt::print("  status:      {}\n", tp::driver::describe(run.status));
  if (run.status.ok()) {
    if (timing_only) {
      fmt::print("  check:       none (timing only: no data moved)\n");
    } else if (run.pass) {
      fmt::print("  check:       PASS (bit-exact with the host reference)\n");
    } else {
      const auto& m = *run.first_mismatch;
      fmt::print("  check:       FAIL: {} mismatches; first at row {} col {}: got {:#010x}, expected {:#010x}\n",
                 run.mismatches, m.row, m.col, m.got, m.expected);
    }
  } else {
    fmt::print("  check:       FAIL (the chip did not finish cleanly)\n");
  }
  fmt::print("  program:     {} instructions ({})\n", run.instructions, tp::compiler::form_name(run.form));
  const double us = static_cast<double>(run.cycles) / chip.preset().clock_mhz;
  // The MXU's multiply-adds: every row it streamed through an n x n tile.
  const double macs = static_cast<double>(run.mxu_rows) * chip.lanes() * chip.lanes();
  fmt::print("  cycles:      {}{} = {:.2f} us at {} MHz{}\n", run.cycles,
             chip.backend_name() == "golden" ? " (golden estimate)"
             : chip.backend_name() == "fast" ? " (fast model)"
                                             : "",
             us, chip.preset().clock_mhz,
             us > 0 && macs > 0 ? fmt::format(", {:.3g} TFLOP/s on the MXU", 2 * macs / us / 1e6) : std::string());
  fmt::print("  MXU:         {} rows, utilization {:.1f}%\n", run.mxu_rows, 100.0 * run.mxu_utilization);
  fmt::print("  bytes:       {} loaded, {} stored\n", run.bytes_loaded, run.bytes_stored);
  const auto model = tp::energy::EnergyModel::for_preset(chip.preset());
  fmt::print("  energy:      {}\n", tp::energy::summary(model, tp::energy::estimate(model, run.counters)));
}

json run_json(const tp::driver::MatmulRun& run, const std::string& backend, const tp::Preset& preset) {
  json r;
  r["backend"] = backend;
  r["what"] = run.what;
  r["seed"] = run.seed;
  r["pass"] = run.pass;
  r["status"] = status_json(run.status);
  r["mismatches"] = run.mismatches;
  if (run.first_mismatch) {
    const auto& m = *run.first_mismatch;
    r["first_mismatch"] = {{"row", m.row}, {"col", m.col}, {"got", m.got}, {"expected", m.expected}};
  }
  r["instructions"] = run.instructions;
  r["form"] = tp::compiler::form_name(run.form);
  r["cycles"] = run.cycles;
  r["mxu_rows"] = run.mxu_rows;
  r["mxu_utilization"] = run.mxu_utilization;
  r["bytes_loaded"] = run.bytes_loaded;
  r["bytes_stored"] = run.bytes_stored;
  r["counters"] = run.counters;
  r["energy"] = tp::energy::energy_json(preset, run.counters);
  return r;
}

// A program file's run stops here unless --timeout says otherwise: an endless loop is reported as
// timed out in about a minute on the RTL, not hours later.
constexpr uint64_t kProgramTimeout = 5'000'000;

int cmd_run_sharded(const RunOptions& o);

int cmd_run(const RunOptions& o) {
  if (!o.slice.empty() || !o.shard.empty() || !o.layers.empty()) return cmd_run_sharded(o);
  if (!o.out.empty()) throw UsageError("run: --out goes with --layers or --slice");
  const int modes = !o.program.empty() + !o.matmul.empty() + !o.mlp.empty() + o.demo;
  if (modes != 1) throw UsageError("run: give exactly one of a program file, --matmul MxKxN, --mlp MxKxHxN or --demo");
  if ((o.bias || o.relu || o.bf16x2) && o.matmul.empty())
    throw UsageError("run: --bias, --relu and --bf16x2 go with --matmul");
  if (o.timing_only && (o.backend != "fast" || !o.program.empty()))
    throw UsageError("run: --timing-only goes with --backend fast and --matmul, --mlp or --demo");
  if (!o.program.empty() && o.form != "automatic")
    throw UsageError("run: --form goes with --matmul, --mlp or --demo (a program file is already written)");
  if (o.program.empty() && (!o.hbm_in.empty() || !o.hbm_out.empty()))
    throw UsageError("run: --hbm-in and --hbm-out go with a program file");
  if (!o.program.empty() && o.seed_given)
    throw UsageError("run: --seed goes with --matmul, --mlp or --demo (a program file has no random operands)");
  if (o.backend != "both") (void)tp::driver::parse_backend(o.backend);
  // Everything the run writes is checked before it starts.
  if (!o.report.empty()) check_output(o.report, "--report", {o.program});
  for (const auto& spec : o.hbm_out) {
    const auto parts = split(spec, ':');
    if (parts.size() < 3) throw UsageError(fmt::format("--hbm-out {}: expected BEAT:BEATS:FILE", spec));
    (void)parse_u64(parts[0], "--hbm-out beat");
    (void)parse_u64(parts[1], "--hbm-out beats");
    check_output(spec.substr(parts[0].size() + parts[1].size() + 2), "--hbm-out", {o.program});
  }
  for (const auto& spec : o.hbm_in) {
    const auto colon = spec.find(':');
    if (colon != std::string::npos) check_input(spec.substr(colon + 1), "--hbm-in");
  }

  if (!o.obs.trace.empty()) check_output(o.obs.trace, "--trace", {o.program, o.report});
  Observe obs = o.obs;

  json report;
  report["tool"] = "tensorpod run";
  report["backend"] = o.backend;

  if (!o.program.empty()) {
    check_input(o.program, "run: the program");
    const auto prog = tp::isa::read_program(o.program);
    // One backend, or both on the same program and HBM contents, then compared: the status (error
    // and PC) and every HBM word after the run.
    std::vector<Backend> backends;
    if (o.backend == "both") {
      backends = {Backend::rtl, Backend::golden};
    } else {
      backends = {tp::driver::parse_backend(o.backend)};
    }
    bool all_ok = true;
    std::vector<tp::driver::Status> statuses;
    std::vector<std::vector<uint32_t>> memories;
    for (const Backend be : backends) {
      auto chip = Chip::open(o.preset.empty() ? prog.preset : o.preset, be);
      for (const auto& spec : o.hbm_in) hbm_in(*chip, spec);
      chip->load(prog);
      if (o.obs.on()) chip->set_trace(obs.add("chip (0, 0)", chip->backend_name()));
      const auto status = chip->run(o.timeout ? o.timeout : kProgramTimeout);
      const auto counters = chip->counters();
      fmt::print("{} on {} (preset '{}'): {}\n", o.program, chip->backend_name(), chip->preset().name,
                 tp::driver::describe(status));
      if (status.err != tp::isa::Err::none && status.pc < prog.code.size()) {
        const auto d = tp::isa::decode(prog.code[status.pc]);
        fmt::print(
            "  at pc {}:    {}\n", status.pc,
            d.err == tp::isa::Err::none ? tp::isa::disassemble(d.instr) : std::string("(a word that does not decode)"));
      }
      for (const auto& [name, value] : counters) fmt::print("  {:<16} {}\n", name, value);
      const auto model = tp::energy::EnergyModel::for_preset(chip->preset());
      const auto energy = tp::energy::estimate(model, counters);
      fmt::print("  energy:      {}\n", tp::energy::summary(model, energy));
      obs.print_profiles(obs.chips.size() - (o.obs.on() ? 1 : 0));
      for (const auto& spec : o.hbm_out) hbm_out(*chip, spec);
      if (backends.size() == 2) memories.push_back(chip->read(0, chip->preset().chip.hbm_beats));
      statuses.push_back(status);
      all_ok &= status.ok();
      report["preset"] = json::parse(tp::preset_json(chip->preset()));
      report["runs"].push_back({{"backend", chip->backend_name()},
                                {"status", status_json(status)},
                                {"counters", counters},
                                {"energy", tp::energy::to_json(model, energy)}});
    }
    report["program"] = o.program;
    if (backends.size() == 2) {
      // The same end: both done (or not), the same error, and for an error the same PC.
      const bool same_end = statuses[0].err == statuses[1].err && statuses[0].done == statuses[1].done &&
                            (statuses[0].err == tp::isa::Err::none || statuses[0].pc == statuses[1].pc);
      uint64_t differ = 0;
      for (size_t i = 0; i < memories[0].size(); ++i) differ += memories[0][i] != memories[1][i];
      fmt::print("rtl vs golden interpreter: {}, {}\n", same_end ? "the same end" : "DIFFERENT ends (status)",
                 differ == 0 ? fmt::format("HBM bit-exact ({} words)", memories[0].size())
                             : fmt::format("HBM DIFFERENT ({} of {} words)", differ, memories[0].size()));
      report["rtl_matches_golden"] = same_end && differ == 0;
      all_ok &= same_end && differ == 0;
    }
    if (!o.report.empty()) write_report(o.report, report);
    obs.write("tensorpod run", o.backend, tp::load_preset(o.preset.empty() ? prog.preset : o.preset));
    return all_ok ? kExitOk : kExitFail;
  }
  const Backend backend = o.backend == "both" ? Backend::rtl : tp::driver::parse_backend(o.backend);

  // One backend, or both on the same operands (same seed), then compared with each other.
  std::vector<Backend> backends;
  if (o.backend == "both") {
    backends = {Backend::rtl, Backend::golden};
  } else {
    backends = {backend};
  }
  const tp::compiler::Form form = parse_form(o.form);
  std::vector<tp::driver::MatmulRun> runs;
  bool ok = true;
  for (const Backend b : backends) {
    auto chip =
        o.timing_only ? tp::driver::make_golden_chip(tp::load_preset(o.preset), true, true) : Chip::open(o.preset, b);
    if (o.obs.on()) chip->set_trace(obs.add("chip (0, 0)", chip->backend_name()));
    tp::driver::MatmulRun run;
    if (o.demo) {
      const uint32_t n = chip->lanes();
      run = tp::driver::run_mlp(*chip, {8 * n, 8 * n, 16 * n, 4 * n, form}, o.seed, o.timeout);
    } else if (!o.matmul.empty()) {
      const auto s = parse_shape(o.matmul, 3, "--matmul");
      tp::driver::MatmulSpec spec{s[0], s[1], s[2], o.bias, o.relu, form};
      spec.bf16x2 = o.bf16x2;
      run = tp::driver::run_matmul(*chip, spec, o.seed, o.timeout);
    } else {
      const auto s = parse_shape(o.mlp, 4, "--mlp");
      run = tp::driver::run_mlp(*chip, {s[0], s[1], s[2], s[3], form}, o.seed, o.timeout);
    }
    if (o.timing_only) run.pass = run.status.ok();  // no data moved: nothing to check
    print_run(run, *chip, o.timing_only);
    if (o.obs.profile) {
      obs.print_profiles(obs.chips.size() - 1);
      fmt::print("  MXU utilization {:.1f}%, {:.3f} of the roofline ({:.0f} cycles)\n", 100.0 * run.mxu_utilization,
                 run.cycles ? run.roofline_cycles / double(run.cycles) : 0.0, run.roofline_cycles);
    }
    ok = ok && run.pass;
    if (!o.report.empty()) {
      report["preset"] = json::parse(tp::preset_json(chip->preset()));
      report["runs"].push_back(run_json(run, chip->backend_name(), chip->preset()));
    }
    runs.push_back(std::move(run));
  }
  if (runs.size() == 2) {
    uint64_t differ = 0;
    const auto& a = runs[0].output;
    const auto& b = runs[1].output;
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) differ += a[i] != b[i];
    const bool same = !a.empty() && a.size() == b.size() && differ == 0;
    fmt::print("rtl vs golden interpreter: {}\n", same
                                                      ? fmt::format("bit-exact ({} elements)", a.size())
                                                      : fmt::format("DIFFERENT ({} of {} elements)", differ, a.size()));
    ok = ok && same;
    report["rtl_matches_golden"] = same;
  }
  if (!o.report.empty()) write_report(o.report, report);
  obs.write("tensorpod run", o.backend, tp::load_preset(o.preset));
  return ok ? kExitOk : kExitFail;
}

}  // namespace

// ---- tensorpod pod ----

struct PodOptions {
  Observe obs;
  std::string pod, slice, origin, backend = "both", report, program, waves;
  std::string torus, preset, host_board;  // overrides of the pod's topology
  unsigned link_latency = 0;
  std::vector<std::string> program_at, wave_chips, golden_chips, fast_chips, rtl_chips;
  bool demo = false;
  std::string matmul, traffic, collective, algorithm;
  uint64_t seed = 1, timeout = 0, watchdog = 20000;
  double link_bit_error = 0.0;
  uint64_t link_fault_rate = 0;               // the chips' ICI_FAULT0..3, x / 65536
  std::shared_ptr<tp::golden::PodComm> comm;  // under mpirun with several ranks (main)
};

std::pair<unsigned, unsigned> parse_pair(const std::string& text, char sep, const std::string& option) {
  const auto parts = split(text, sep);
  if (parts.size() != 2)
    throw UsageError(fmt::format("{} '{}': expected two numbers separated by '{}'", option, text, sep));
  return {static_cast<unsigned>(parse_u64(parts[0], option)), static_cast<unsigned>(parse_u64(parts[1], option))};
}

const char* kLinks[4] = {"n", "s", "e", "w"};

// --algorithm ring|torus (empty: the plan's choice).
std::optional<tp::driver::Algorithm> parse_algorithm(const std::string& text) {
  if (text.empty()) return std::nullopt;
  for (const auto a : {tp::driver::Algorithm::ring, tp::driver::Algorithm::torus})
    if (text == tp::driver::algorithm_name(a)) return a;
  throw UsageError(fmt::format("--algorithm '{}': expected ring or torus", text));
}

// --collective KIND:ROWS.
std::pair<tp::driver::Collective, uint32_t> parse_collective(const std::string& text) {
  const auto colon = text.find(':');
  const std::string name = text.substr(0, colon);
  for (const auto k : tp::driver::kCollectives)
    if (name == tp::driver::collective_name(k) && colon != std::string::npos) {
      const uint64_t rows = parse_u64(text.substr(colon + 1), "--collective");
      if (rows > 0xffffffffu) throw UsageError(fmt::format("--collective '{}': too many rows", text));
      return {k, static_cast<uint32_t>(rows)};
    }
  throw UsageError(fmt::format(
      "--collective '{}': expected KIND:ROWS with KIND all_reduce, reduce_scatter, all_gather, broadcast or "
      "all_to_all",
      text));
}

void print_pod_chip(tp::driver::Slice& s, const tp::driver::ChipOutcome& c, bool rtl) {
  auto m = s.counters(c.x, c.y);
  auto get = [&](const std::string& k) { return m.count(k) ? m.at(k) : uint64_t{0}; };
  const uint64_t cyc = get("cycles");
  const std::string state = c.waiting ? fmt::format("waits at pc {} on semaphore {}", c.wait_pc, c.wait_sem)
                            : c.status.err != tp::isa::Err::none ? tp::driver::describe(c.status)
                            : c.status.ok()                      ? std::string("done")
                                                                 : std::string("not done");
  const bool estimate = !rtl || m.count("est_cycles");  // a golden or fast chip, also in a mixed pod
  const bool fast = m.count("fast_timing") && m.at("fast_timing") == 1;
  fmt::print("  chip ({},{}): {}{}, {} cycles{}, MXU {:.1f}%, {} B loaded, {} B stored", c.x, c.y,
             rtl && estimate ? (fast ? "[fast] " : "[golden] ") : "", state, cyc,
             estimate ? (fast ? " (fast model)" : " (estimate)") : "",
             cyc ? 100.0 * static_cast<double>(get("mxu_rows")) / static_cast<double>(cyc) : 0.0, get("bytes_loaded"),
             get("bytes_stored"));
  if (rtl) fmt::print(", ICI {} B sent, {} B received", get("ici_bytes_sent"), get("ici_bytes_received"));
  fmt::print("\n");
  if (!rtl) return;
  std::string links;
  for (unsigned p = 0; p < 4; ++p)
    links += fmt::format("{}{} {} flits {} retx {} credit stalls", p ? "; " : "", kLinks[p],
                         get(fmt::format("ici_flits_{}", kLinks[p])), get(fmt::format("ici_retx_{}", kLinks[p])),
                         get(fmt::format("ici_credit_stall_{}", kLinks[p])));
  fmt::print("    links: {}\n", links);
}

json pod_chip_json(tp::driver::Slice& s, const tp::driver::ChipOutcome& c) {
  const auto counters = s.counters(c.x, c.y);
  return {{"x", c.x},
          {"y", c.y},
          {"status", status_json(c.status)},
          {"waiting", c.waiting},
          {"wait_pc", c.wait_pc},
          {"wait_sem", c.wait_sem},
          {"counters", counters},
          {"energy", tp::energy::energy_json(s.preset(), counters)}};
}

struct PodRunResult {
  tp::driver::SliceStatus status;
  bool pass = false;
  std::vector<uint32_t> output;
  json report;
  std::vector<tp::trace::ChipTrace> timelines;  // --trace, --profile
};

// FNV-1a (64-bit) of a run's output words: a short fingerprint to compare runs by.
std::string fnv1a(const std::vector<uint32_t>& words) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const uint32_t w : words)
    for (unsigned b = 0; b < 4; ++b) h = (h ^ ((w >> (8 * b)) & 0xffu)) * 0x100000001b3ull;
  return fmt::format("{:016x}", h);
}

// X,Y chips of the pod (--wave-chip, --golden-chip), each inside it.
std::vector<std::pair<unsigned, unsigned>> pod_chips(const std::vector<std::string>& list, const char* what,
                                                     const tp::driver::PodSpec& pod) {
  std::vector<std::pair<unsigned, unsigned>> out;
  for (const auto& w : list) {
    const auto xy = parse_pair(w, ',', what);
    if (xy.first >= pod.kx || xy.second >= pod.ky)
      throw UsageError(fmt::format("{} {}: no such chip in the {}x{} pod", what, w, pod.kx, pod.ky));
    out.push_back(xy);
  }
  return out;
}

// The fast chips of a mixed rtl pod: --fast-chip's, or with --rtl-chip every chip of the pod but
// those and the golden ones.
std::vector<std::pair<unsigned, unsigned>> mixed_fast_chips(const PodOptions& o, const tp::driver::PodSpec& pod) {
  auto fast = pod_chips(o.fast_chips, "--fast-chip", pod);
  if (o.rtl_chips.empty()) return fast;
  const auto rtl = pod_chips(o.rtl_chips, "--rtl-chip", pod), golden = pod_chips(o.golden_chips, "--golden-chip", pod);
  for (unsigned y = 0; y < pod.ky; ++y)
    for (unsigned x = 0; x < pod.kx; ++x)
      if (std::find(rtl.begin(), rtl.end(), std::pair{x, y}) == rtl.end() &&
          std::find(golden.begin(), golden.end(), std::pair{x, y}) == golden.end())
        fast.emplace_back(x, y);
  return fast;
}

// expected: about how many cycles the run takes (a golden run's estimate; 0: unknown), for the
// progress line.
PodRunResult run_pod_once(const PodOptions& o, const tp::driver::PodSpec& pod, const tp::driver::SliceShape& shape,
                          Backend be, uint64_t expected) {
  tp::driver::SliceOptions so;
  so.seed = o.seed;
  so.link_bit_error = o.link_bit_error;
  so.link_fault_rate = static_cast<uint16_t>(o.link_fault_rate);
  so.watchdog = o.watchdog;
  so.wave_dir = o.waves;
  so.wave_chips = pod_chips(o.wave_chips, "--wave-chip", pod);
  if (be == Backend::rtl) {
    so.golden_chips = pod_chips(o.golden_chips, "--golden-chip", pod);
    so.fast_chips = mixed_fast_chips(o, pod);
  }
  so.comm = o.comm;
  auto s = tp::driver::Slice::open(pod, shape, be, so);
  s->set_tracing(o.obs.on());
  s->set_expected_cycles(expected);
  PodRunResult r;
  const bool rtl = be == Backend::rtl;
  const unsigned n = pod.preset.mxu.n;
  // The slice's golden and fast chips (those outside it only carry traffic through their routers).
  const auto in_slice = [&](const std::vector<std::pair<unsigned, unsigned>>& chips) {
    return std::count_if(chips.begin(), chips.end(), [&](const auto& c) {
      return c.first >= shape.x0 && c.first < shape.x0 + shape.w && c.second >= shape.y0 &&
             c.second < shape.y0 + shape.h;
    });
  };
  const auto n_golden = in_slice(so.golden_chips), n_fast = in_slice(so.fast_chips);
  fmt::print("{}{} slice {}x{} at ({},{}) of pod '{}' ({}x{} chips of preset '{}', n={}), seed {}\n",
             tp::driver::backend_label(be),
             fmt::format("{}{}", n_golden == 0 ? "" : fmt::format(" (+{} golden)", n_golden),
                         n_fast == 0 ? "" : fmt::format(" (+{} fast)", n_fast)),
             shape.w, shape.h, shape.x0, shape.y0, pod.name, pod.kx, pod.ky, pod.preset.name, n, o.seed);
  std::string what;
  if (o.demo || !o.matmul.empty()) {
    tp::driver::MatmulSpec spec{8 * n, 8 * n, 8 * n, true, false};
    if (!o.matmul.empty()) {
      const auto sh = parse_shape(o.matmul, 3, "--matmul");
      spec = {sh[0], sh[1], sh[2], true, false};
    }
    const auto m = tp::driver::run_pod_matmul(*s, spec, o.seed, o.timeout);
    r.status = m.status;
    r.pass = m.pass;
    r.output = m.output;
    what = m.what;
    fmt::print("  {}: {} instructions per chip\n", what, m.instructions);
    fmt::print("  check:       {}\n",
               !m.status.ok() ? "FAIL (the slice did not finish cleanly)"
               : m.pass       ? "PASS (every chip holds the whole output, bit-exact with the host reference)"
                              : fmt::format("FAIL: {} mismatching words", m.mismatches));
  } else if (!o.collective.empty()) {
    const auto [kind, rows] = parse_collective(o.collective);
    const auto c = tp::driver::run_collective(*s, kind, rows, o.seed, o.timeout, parse_algorithm(o.algorithm));
    r.status = c.status;
    r.pass = c.pass;
    for (const auto& out : c.outputs) r.output.insert(r.output.end(), out.begin(), out.end());
    what = c.what;
    const double algbw = c.status.cycles ? double(c.bytes) / double(c.status.cycles) : 0.0;
    const double factor = tp::driver::busbw_factor(kind, shape.w * shape.h);
    fmt::print("  {}: {} bytes per chip; algbw {:.2f} B/cycle, busbw {:.2f} B/cycle{}\n", what, c.bytes, algbw,
               algbw * factor, rtl ? "" : " (estimate)");
    fmt::print("  check:       {}\n", !c.status.ok() ? "FAIL (the slice did not finish cleanly)"
                                      : c.pass       ? "PASS (every chip's output bit-exact with the host reference)"
                                                     : fmt::format("FAIL: {} mismatching words", c.mismatches));
  } else if (!o.traffic.empty()) {
    const uint64_t seed = parse_u64(o.traffic, "--traffic");
    const auto plan = tp::driver::random_ici_traffic(pod.preset, shape.w, shape.h, seed);
    tp::driver::setup_ici_traffic(*s, plan);
    r.status = s->run(o.timeout ? o.timeout : 1'000'000);
    const auto bad = r.status.ok() ? tp::driver::check_ici_traffic(*s, plan) : std::vector<std::string>{};
    r.pass = r.status.ok() && bad.empty();
    what = fmt::format("random ICI traffic, seed {}, {} transfers", seed, plan.transfers.size());
    fmt::print("  {}\n  check:       {}\n", what,
               r.pass ? "PASS (every transfer arrived intact)" : fmt::format("FAIL\n{}", fmt::join(bad, "\n")));
  } else {
    if (!o.program.empty()) s->load_all(tp::isa::read_program(o.program));
    for (const auto& pa : o.program_at) {
      const auto eq = pa.find('=');
      if (eq == std::string::npos) throw UsageError(fmt::format("--program-at '{}': expected X,Y=FILE", pa));
      const auto [x, y] = parse_pair(pa.substr(0, eq), ',', "--program-at");
      s->load(x, y, tp::isa::read_program(pa.substr(eq + 1)));
    }
    r.status = s->run(o.timeout ? o.timeout : 1'000'000);
    r.pass = r.status.ok();
    what = "programs";
  }
  // A full-size pod's chips are in the report; the terminal gets the first 16 and every one that
  // did not finish cleanly.
  constexpr std::size_t kListed = 16;
  std::size_t listed = 0, unlisted = 0;
  for (const auto& c : r.status.chips) {
    if (listed < kListed || !c.status.ok() || c.waiting) {
      print_pod_chip(*s, c, rtl);
      ++listed;
    } else {
      ++unlisted;
    }
  }
  if (unlisted > 0) fmt::print("  ... and {} more chips done (each chip's counters: --report)\n", unlisted);
  r.timelines = s->timelines();
  const double chip_cycles = static_cast<double>(r.status.cycles) * pod.kx * pod.ky;
  const double rate = r.status.wall_seconds > 0 ? chip_cycles / r.status.wall_seconds : 0.0;
  fmt::print("  pod:         {} in {} cycles{}; wall {:.3f} s, {:.0f} simulated chip-cycles/s\n",
             r.status.ok() ? "done" : "FAILED", r.status.cycles, rtl ? "" : " (estimate)", r.status.wall_seconds, rate);
  if (r.status.ranks > 1)
    fmt::print(
        "  ranks:       {} (MPI), {} rounds, {:.1f} MB between ranks; synchronisation {:.0f}% of the wall time (the "
        "worst rank)\n",
        r.status.ranks, r.status.rounds, static_cast<double>(r.status.bytes_between_ranks) / 1e6,
        100 * r.status.max_sync_fraction);
  if (!r.status.report.empty()) fmt::print("{}", r.status.report);
  const auto model = tp::energy::EnergyModel::for_preset(pod.preset);
  const auto energy = tp::driver::slice_energy(*s, r.status, model, rtl);
  fmt::print("  energy:      {}\n", tp::energy::summary(model, energy));
  json chips = json::array();
  for (const auto& c : r.status.chips) chips.push_back(pod_chip_json(*s, c));
  r.report = {{"backend", tp::driver::backend_label(be)},
              {"what", what},
              {"pass", r.pass},
              {"ok", r.status.ok()},
              {"deadlock", r.status.deadlock},
              {"timed_out", r.status.timed_out},
              {"cycles", r.status.cycles},
              {"wall_seconds", r.status.wall_seconds},
              {"chip_cycles_per_s", rate},
              {"ranks", r.status.ranks},
              {"rounds", r.status.rounds},
              {"sync_fraction", r.status.max_sync_fraction},
              {"bytes_between_ranks", r.status.bytes_between_ranks},
              {"output_fnv1a", fnv1a(r.output)},
              {"report", r.status.report},
              {"energy", tp::energy::to_json(model, energy)},
              {"chips", chips}};
  return r;
}

int cmd_pod(const PodOptions& o) {
  const int modes = o.demo + !o.matmul.empty() + !o.traffic.empty() + !o.collective.empty() +
                    (!o.program.empty() || !o.program_at.empty());
  if (modes != 1)
    throw UsageError(
        "pod: give exactly one of --demo, --matmul MxKxN, --traffic SEED, --collective KIND:ROWS, --program FILE / "
        "--program-at");
  if ((o.backend == "golden" || o.backend == "fast") && !o.golden_chips.empty())
    throw UsageError("pod: --golden-chip picks golden chips of the rtl pod; give --backend rtl or both");
  if ((o.backend == "golden" || o.backend == "fast") && (!o.fast_chips.empty() || !o.rtl_chips.empty()))
    throw UsageError(
        "pod: --fast-chip and --rtl-chip make a mixed rtl pod; give --backend rtl or both (--backend fast makes "
        "every chip fast)");
  if (!o.fast_chips.empty() && !o.rtl_chips.empty())
    throw UsageError("pod: give --fast-chip (these chips fast) or --rtl-chip (all but these fast), not both");
  if (o.comm) {  // under mpirun with several ranks
    if (o.backend != "golden" && o.backend != "fast")
      throw UsageError(
          fmt::format("pod: under mpirun ({} ranks) give --backend fast or golden (the rtl pod runs in one "
                      "process)",
                      o.comm->ranks()));
    if (o.obs.on()) throw UsageError("pod: --trace and --profile run in one process, not under mpirun");
  }
  if (!o.algorithm.empty() && (o.collective.empty() || !tp::driver::has_torus(parse_collective(o.collective).first)))
    throw UsageError("pod: --algorithm goes with --collective all_reduce, reduce_scatter or all_gather");
  (void)parse_algorithm(o.algorithm);
  if (o.link_bit_error < 0 || o.link_bit_error > 0.5)
    throw UsageError(fmt::format("--link-bit-error {}: a probability in [0, 0.5]", o.link_bit_error));
  if (o.link_fault_rate > 65535)
    throw UsageError(fmt::format("--link-fault-rate {}: a rate in 65536ths, 0 to 65535", o.link_fault_rate));
  if ((o.backend == "golden" || o.backend == "fast") && (o.link_bit_error > 0 || o.link_fault_rate > 0))
    throw UsageError(
        "pod: --link-bit-error and --link-fault-rate act on the rtl pod's links; give --backend rtl or "
        "both");
  auto cfg = tp::load_pod(o.pod);
  // Topology overrides go through the pods file's own validation (its messages name the key).
  if (!o.torus.empty() || !o.preset.empty() || !o.host_board.empty() || o.link_latency != 0) {
    json j = json::parse(tp::pod_json(cfg));
    j.erase("name");  // pod_json names the pod; in a pods file the key does
    if (!o.torus.empty()) {
      const auto [x, y] = parse_pair(o.torus, 'x', "--torus");
      j["torus"] = {x, y};
      j["slices"] = json::array({{{"name", "all"}, {"origin", {0, 0}}, {"shape", {x, y}}}});
      if (o.host_board.empty()) j["host_board"] = {std::gcd(x, 2u), std::gcd(y, 2u)};
    }
    if (!o.preset.empty()) j["preset"] = o.preset;
    if (!o.host_board.empty()) {
      const auto [x, y] = parse_pair(o.host_board, 'x', "--host-board");
      j["host_board"] = {x, y};
    }
    if (o.link_latency != 0) j["link_latency"] = o.link_latency;
    // The pod is no longer the named one: name it by what it is (e.g. "4x4 of tiny (from 2x2)").
    const std::string name = fmt::format("{}x{} of {} (from {})", j["torus"][0].get<unsigned>(),
                                         j["torus"][1].get<unsigned>(), j["preset"].get<std::string>(), cfg.name);
    json file = {{"default", name}, {"pods", {{name, j}}}};
    std::vector<std::string> names;
    for (const auto& p : tp::load_presets()) names.push_back(p.name);
    cfg = tp::parse_pods(file.dump(), "tensorpod pod options", names).front();
  }
  const auto pod = tp::driver::pod_spec(cfg);
  tp::driver::SliceShape shape{0, 0, pod.kx, pod.ky};
  if (!cfg.slices.empty() && o.slice.empty()) {
    const auto& sl = cfg.slices.front();
    shape = {sl.x0, sl.y0, sl.w, sl.h};
  }
  if (!o.slice.empty()) std::tie(shape.w, shape.h) = parse_pair(o.slice, 'x', "--slice");
  if (!o.origin.empty()) std::tie(shape.x0, shape.y0) = parse_pair(o.origin, ',', "--origin");
  tp::driver::check_slice(pod, shape);
  if (!o.report.empty()) check_output(o.report, "--report");
  if (!o.waves.empty()) check_folder(o.waves, "--waves");
  (void)pod_chips(o.wave_chips, "--wave-chip", pod);  // refused before the golden run of --backend both
  const auto golden_chips = pod_chips(o.golden_chips, "--golden-chip", pod);
  for (const auto& [list, option] : {std::pair{&o.fast_chips, "--fast-chip"}, std::pair{&o.rtl_chips, "--rtl-chip"}})
    for (const auto& xy : pod_chips(*list, option, pod))
      if (std::find(golden_chips.begin(), golden_chips.end(), xy) != golden_chips.end())
        throw UsageError(
            fmt::format("pod: chip {},{} is given as both --golden-chip and {}", xy.first, xy.second, option));
  if (!o.program.empty()) check_input(o.program, "--program");
  for (const auto& pa : o.program_at)
    if (const auto eq = pa.find('='); eq != std::string::npos) check_input(pa.substr(eq + 1), "--program-at");
  if (!o.collective.empty()) {  // a plan that cannot run is refused before any simulation
    const auto [kind, rows] = parse_collective(o.collective);
    (void)tp::driver::plan_collective(pod.preset, kind, shape.w, shape.h, rows, parse_algorithm(o.algorithm));
  }
  std::vector<Backend> backends;
  if (o.backend == "both") {
    backends = {Backend::golden, Backend::rtl};
  } else {
    backends = {tp::driver::parse_backend(o.backend)};
  }
  json report = {{"pod", json::parse(tp::pod_json(cfg))},
                 {"preset", json::parse(tp::preset_json(pod.preset))},
                 {"slice", {{"origin", {shape.x0, shape.y0}}, {"shape", {shape.w, shape.h}}}},
                 {"runs", json::array()}};
  if (!o.obs.trace.empty()) check_output(o.obs.trace, "--trace", {o.report, o.program});
  Observe obs = o.obs;
  bool ok = true;
  std::vector<std::vector<uint32_t>> outputs;
  uint64_t estimate = 0;  // the golden pod's, which runs first with --backend both
  for (const Backend be : backends) {
    auto r = run_pod_once(o, pod, shape, be, estimate);
    estimate = r.status.cycles;
    const std::size_t from = obs.chips.size();
    obs.add_all(r.timelines);
    obs.print_profiles(from);
    ok &= r.pass;
    outputs.push_back(std::move(r.output));
    report["runs"].push_back(std::move(r.report));
  }
  if (backends.size() == 2 && (o.demo || !o.matmul.empty() || !o.collective.empty())) {
    const bool same = ok && outputs[0] == outputs[1];
    fmt::print("rtl pod vs golden pod: {}\n",
               same ? fmt::format("bit-exact ({} elements)", outputs[0].size()) : std::string("DIFFERENT"));
    report["rtl_vs_golden_bit_exact"] = same;
    ok &= same;
  }
  if (!o.report.empty() && (!o.comm || o.comm->rank() == 0)) write_report(o.report, report);  // one writer
  obs.write("tensorpod pod", o.backend, pod.preset);
  return ok ? kExitOk : kExitFail;
}

// ---- tensorpod run --slice WxH --shard SPEC: the sharding compiler ----

namespace {

// --slice WxH of run and train: 1 to 64 chips.
std::pair<unsigned, unsigned> parse_slice(const std::string& text) {
  const auto parts = split(text, 'x');
  if (parts.size() != 2) throw UsageError(fmt::format("--slice '{}': expected WxH", text));
  const uint64_t w = parse_u64(parts[0], "--slice"), h = parse_u64(parts[1], "--slice");
  if (w == 0 || h == 0 || w > 64 || h > 64 || w * h > 64)
    throw UsageError(fmt::format("--slice {}: 1 to 64 chips, at most 64 along each axis", text));
  return {static_cast<unsigned>(w), static_cast<unsigned>(h)};
}

// The pod a run or train --slice runs on: a torus of the slice's shape, of the pods' chip preset
// unless --config names one.
tp::driver::PodSpec slice_pod(const std::string& preset, unsigned w, unsigned h) {
  return tp::driver::torus_pod(tp::load_preset(preset.empty() ? tp::load_pod("").preset : preset), w, h);
}

int cmd_run_sharded(const RunOptions& o) {
  if (o.mlp.empty() == o.layers.empty())
    throw UsageError(
        "run --slice/--shard/--layers: give the chain with exactly one of --mlp MxKxN1x...xNl or --layers FILE");
  if (!o.program.empty() || !o.matmul.empty() || o.demo || o.bias || o.relu || o.form != "automatic" ||
      !o.hbm_in.empty() || !o.hbm_out.empty())
    throw UsageError(
        "run --slice/--shard: goes with --mlp only (no program file, --matmul, --demo, --bias, --relu, "
        "--form, --hbm-in or --hbm-out)");
  const auto [w, h] = o.slice.empty() ? std::pair{1u, 1u} : parse_slice(o.slice);
  if (!o.report.empty()) check_output(o.report, "--report", {o.layers});
  if (!o.out.empty()) check_output(o.out, "--out", {o.layers});
  if (!o.obs.trace.empty()) check_output(o.obs.trace, "--trace", {o.layers, o.report, o.out});
  Observe obs = o.obs;
  tp::driver::LayerFile file;
  if (!o.layers.empty()) {
    check_input(o.layers, "--layers");
    file = tp::driver::load_layer_file(o.layers);
    fmt::print("{}: {}, {} float32 value(s) of x and the weights rounded to bf16\n", o.layers,
               tp::driver::chain_name(file.chain), file.rounded);
  } else {
    file.chain = tp::driver::mlp_chain(parse_shape(o.mlp, 0, "--mlp"));
  }
  const auto& chain = file.chain;
  const auto& ops = file.operands;
  const auto sharding = tp::driver::parse_sharding(o.shard);
  // The slice is a whole pod of its shape, of the pods' chip preset unless --config says.
  const auto pod = slice_pod(o.preset, w, h);
  tp::driver::check_chain(pod.preset, chain);  // before drawing operands of an impossible size
  if (o.layers.empty()) file.operands = tp::driver::random_operands(chain, o.seed);
  // Everything that can be refused is refused before any simulation.
  const auto plan = tp::driver::compile_sharded(pod.preset, chain, sharding, w, h, ops);
  fmt::print("{} sharded {} on a {}x{} slice of preset '{}' (n={}){}\n{}", tp::driver::chain_name(chain),
             tp::driver::sharding_name(plan.sharding), w, h, pod.preset.name, pod.preset.mxu.n,
             o.layers.empty() ? fmt::format(", random operands from seed {}", o.seed) : std::string(), plan.summary);
  std::vector<Backend> backends;
  if (o.backend == "both") {
    backends = {Backend::golden, Backend::rtl};
  } else {
    backends = {tp::driver::parse_backend(o.backend)};
  }
  json report = {{"tool", "tensorpod run"},
                 {"what", tp::driver::chain_name(chain)},
                 {"sharding", tp::driver::sharding_name(plan.sharding)},
                 {"slice", {w, h}},
                 {"preset", json::parse(tp::preset_json(pod.preset))},
                 {"runs", json::array()}};
  bool ok = true;
  std::vector<std::vector<uint32_t>> outputs;
  uint64_t estimate = 0;  // the golden pod's, which runs first with --backend both: the progress line's
  for (const Backend be : backends) {
    auto s = tp::driver::Slice::open(pod, {0, 0, w, h}, be);
    s->set_tracing(o.obs.on());
    s->set_expected_cycles(estimate);
    const auto r = tp::driver::run_sharded(*s, chain, sharding, ops, o.timeout);
    estimate = r.status.cycles;
    const std::size_t from = obs.chips.size();
    obs.add_all(s->timelines());
    obs.print_profiles(from);
    const bool rtl = be == Backend::rtl;
    fmt::print("{} pod: {} in {} cycles{}; {} instructions on the longest chip program, {} collective(s) per chip\n",
               tp::driver::backend_label(be), r.status.ok() ? "done" : "FAILED", r.status.cycles,
               rtl ? "" : " (estimate)", r.instructions, r.collectives);
    if (!r.status.ok()) fmt::print("{}", tp::driver::describe_outcomes(r.status));
    const bool exact_order = std::none_of(plan.sharding.splits.begin(), plan.sharding.splits.end(),
                                          [&](auto sp) { return sp == tp::driver::Split::k && plan.group_size > 1; });
    fmt::print("  check:       {}\n",
               !r.status.ok() ? std::string("FAIL (the slice did not finish cleanly)")
               : r.pass       ? fmt::format("PASS (bit-exact with the sharded reference, {} elements)", r.output.size())
                              : fmt::format("FAIL: {} elements differ from the sharded reference", r.mismatches));
    if (r.status.ok())
      fmt::print("  vs 1 chip:   {}\n",
                 r.one_chip_differences == 0
                     ? std::string("bit-exact with the 1-chip result")
                     : fmt::format("{} elements differ{} (largest difference {:.3g} of the largest magnitude)",
                                   r.one_chip_differences,
                                   exact_order ? ": the order of additions is the same, so this is a FAIL"
                                               : ", as the contraction split sums in another order",
                                   r.one_chip_max_rel));
    const auto model = tp::energy::EnergyModel::for_preset(pod.preset);
    const auto energy = tp::driver::slice_energy(*s, r.status, model, rtl);
    fmt::print("  energy:      {}\n", tp::energy::summary(model, energy));
    const bool pass = r.pass && (!exact_order || r.one_chip_differences == 0);
    ok &= pass;
    outputs.push_back(r.output);
    report["runs"].push_back({{"backend", tp::driver::backend_label(be)},
                              {"pass", pass},
                              {"ok", r.status.ok()},
                              {"cycles", r.status.cycles},
                              {"mismatches", r.mismatches},
                              {"one_chip_differences", r.one_chip_differences},
                              {"one_chip_max_rel", r.one_chip_max_rel},
                              {"instructions", r.instructions},
                              {"collectives", r.collectives},
                              {"wall_seconds", r.status.wall_seconds},
                              {"energy", tp::energy::to_json(model, energy)}});
  }
  if (outputs.size() == 2) {
    const bool same = ok && outputs[0] == outputs[1];
    fmt::print("rtl pod vs golden pod: {}\n",
               same ? fmt::format("bit-exact ({} elements)", outputs[0].size()) : std::string("DIFFERENT"));
    report["rtl_vs_golden_bit_exact"] = same;
    ok &= same;
  }
  if (!o.out.empty()) {
    if (!outputs.empty() && !outputs.back().empty()) {
      tp::driver::save_npy_fp32(o.out, chain.m, chain.layers.back().n, outputs.back());
      fmt::print("output: {} ({}x{} float32)\n", o.out, chain.m, chain.layers.back().n);
    } else {
      fmt::print("output: {} not written (the run failed)\n", o.out);
    }
  }
  if (!o.report.empty()) write_report(o.report, report);
  obs.write("tensorpod run", o.backend, pod.preset);
  return ok ? kExitOk : kExitFail;
}

// ---- tensorpod train: a small MLP trained data parallel on a slice ----

struct TrainOptions {
  Observe obs;
  std::string slice = "1x1", preset, backend = "golden", report;
  tp::driver::TrainSpec spec;
  uint64_t timeout = 0;
};

int cmd_train(const TrainOptions& o) {
  const auto [w, h] = parse_slice(o.slice);
  if (!o.report.empty()) check_output(o.report, "--report");
  if (!o.obs.trace.empty()) check_output(o.obs.trace, "--trace", {o.report});
  Observe obs = o.obs;
  const auto pod = slice_pod(o.preset, w, h);
  const tp::driver::SliceShape shape{0, 0, w, h};
  std::vector<Backend> backends;
  if (o.backend == "both") {
    backends = {Backend::golden, Backend::rtl};
  } else {
    backends = {tp::driver::parse_backend(o.backend)};
  }
  // The refusals (sizes, VMEM, the instruction memory) come before any simulation: the mirror
  // checks the spec, and a golden run of the fraction's pair builds the programs.
  (void)tp::driver::train_reference(pod.preset, o.spec, w, h);
  const double fraction = tp::driver::golden_collective_fraction(pod, shape, o.spec);
  fmt::print("training {} data parallel on a {}x{} slice of preset '{}' (n={}), seed {}\n",
             tp::driver::train_name(o.spec), w, h, pod.preset.name, pod.preset.mxu.n, o.spec.seed);
  json report = {{"tool", "tensorpod train"},
                 {"slice", fmt::format("{}x{}", w, h)},
                 {"preset", pod.preset.name},
                 {"spec",
                  {{"batch", o.spec.batch},
                   {"in", o.spec.in},
                   {"hidden", o.spec.hidden},
                   {"out", o.spec.out},
                   {"steps", o.spec.steps},
                   {"lr", o.spec.lr},
                   {"seed", o.spec.seed}}},
                 {"results", json::array()}};
  bool ok = true;
  std::vector<std::vector<double>> curves;
  uint64_t estimate = 0;  // the golden pod's, which runs first with --backend both: the progress line's
  for (const Backend be : backends) {
    auto s = tp::driver::Slice::open(pod, shape, be);
    s->set_tracing(o.obs.on());
    s->set_expected_cycles(estimate);
    const auto r = tp::driver::run_training(*s, o.spec, o.timeout);
    estimate = r.status.cycles;
    const std::size_t from = obs.chips.size();
    obs.add_all(s->timelines());
    const bool rtl = be == Backend::rtl;
    fmt::print("{} pod: {} in {} cycles{}; {} instructions per chip\n", tp::driver::backend_label(be),
               r.status.ok() ? "done" : "FAILED", r.status.cycles, rtl ? "" : " (estimate)", r.instructions);
    if (!r.status.ok()) {
      fmt::print("{}", tp::driver::describe_outcomes(r.status));
      ok = false;
      continue;
    }
    for (size_t i = 0; i < r.result.loss.size(); ++i) fmt::print("  step {:>4}: loss {:.6f}\n", i, r.result.loss[i]);
    fmt::print(
        "  cycles per step {:.1f}{}; the all-reduce {:.1f}% of a step (golden timing, with and without it); "
        "MXU {:.1f}%\n",
        r.cycles_per_step, rtl ? "" : " (estimate)", 100 * fraction, 100 * r.mxu_utilization);
    fmt::print("  check:       {}\n", r.pass
                                          ? "PASS (every step's errors and the final weights bit-exact with the "
                                            "host's mirror)"
                                          : fmt::format("FAIL: {} words differ from the host's mirror", r.mismatches));
    ok &= r.pass;
    obs.print_profiles(from);
    curves.push_back(r.result.loss);
    report["results"].push_back({{"slice", fmt::format("{}x{}", w, h)},
                                 {"preset", pod.preset.name},
                                 {"backend", tp::driver::backend_label(be)},
                                 {"steps", o.spec.steps},
                                 {"loss", r.result.loss},
                                 {"cycles", r.status.cycles},
                                 {"cycles_per_step", r.cycles_per_step},
                                 {"collective_fraction", fraction},
                                 {"mxu_utilization", r.mxu_utilization},
                                 {"instructions", r.instructions},
                                 {"pass", r.pass}});
  }
  if (curves.size() == 2) {
    const bool same = curves[0] == curves[1];
    fmt::print("rtl pod vs golden pod: {}\n", same ? "the same loss curve, bit for bit" : "DIFFERENT loss curves");
    ok &= same;
  }
  if (!o.report.empty()) write_report(o.report, report);
  obs.write("tensorpod train", o.backend, pod.preset);
  return ok ? kExitOk : kExitFail;
}

}  // namespace

// ---- tensorpod presets ----

int cmd_presets() {
  const auto presets = tp::load_presets();
  std::size_t w = 8;  // the name column: as wide as the longest name
  for (const auto& p : presets) w = std::max(w, p.name.size());
  fmt::print("{:<{}} {:>5} {:>10} {:>9} {:>10} {:>12} {:>7} {:>9}  {}\n", "preset", w, "n", "VMEM rows", "acc rows",
             "IMEM", "HBM beats", "memory", "MHz", "description");
  for (const auto& p : presets)
    fmt::print("{:<{}} {:>5} {:>10} {:>9} {:>10} {:>12} {:>7} {:>9.0f}  {} (peak {} MAC/cycle, {:.3g} TFLOP/s)\n",
               p.name, w, p.mxu.n, p.chip.vmem_rows, p.mxu.acc_rows, p.chip.imem_words, p.chip.hbm_beats, p.chip.memory,
               p.clock_mhz, p.description, uint64_t{p.mxu.n} * p.mxu.n, 2.0 * p.mxu.n * p.mxu.n * p.clock_mhz / 1e6);
  fmt::print("(configs/presets.json, or the file TENSORPOD_CONFIG names; the default preset is '{}')\n",
             tp::load_preset("").name);
  return kExitOk;
}

// Strict numbers for the unsigned options: digits (or 0x hex) that fit 64 bits; CLI11 alone takes
// "-1" as 2^64 - 1 and clamps what does not fit.
const CLI::Validator kUnsigned(
    [](std::string& text) -> std::string {
      try {
        (void)parse_u64(text, "");
      } catch (const UsageError&) {
        return fmt::format("'{}' is not a non-negative whole number that fits 64 bits", text);
      }
      return "";
    },
    "UINT");
const CLI::Validator kNonEmpty([](std::string& text) -> std::string { return text.empty() ? "an empty value" : ""; },
                               "TEXT");

// Ctrl-C: the first stops the simulation at its next check (tp::interrupted()) and the command
// writes what it has; a second one ends the process at once.
extern "C" void on_interrupt(int) {
  tp::interrupt_flag().store(true);
  std::signal(SIGINT, SIG_DFL);
}
constexpr int kExitInterrupted = 130;  // 128 + SIGINT, as shells report it

namespace {

int tool_main(int argc, char** argv, tp::mpi::World& world, bool& threw) {
  CLI::App app{"tensorpod: assemble, disassemble and run chip programs (docs/chip.md)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fmt::format("tensorpod, ISA version {}", tp::isa::kIsaVersion));
  auto* presets_cmd = app.add_subcommand("presets", "List the chip presets and their key figures");

  std::string asm_in, asm_out, asm_preset;
  auto* asm_cmd = app.add_subcommand("asm", "Assemble a program for a preset into a .tpb file");
  asm_cmd->add_option("input", asm_in, "assembly source")->required();
  asm_cmd->add_option("-o,--output", asm_out, "program file to write (.tpb)")->required();
  asm_cmd->add_option("--config", asm_preset, "preset (default: the config file's default)")->check(kNonEmpty);

  std::string disasm_in;
  auto* disasm_cmd = app.add_subcommand("disasm", "Disassemble a .tpb program file");
  disasm_cmd->add_option("input", disasm_in, "program file (.tpb)")->required();

  RunOptions comp;
  std::string comp_out;
  auto* comp_cmd = app.add_subcommand(
      "compile", "Compile a matmul or MLP (operands from HBM beat 0 on) to assembly text (stdout) or a .tpb file");
  comp_cmd->add_option("--matmul", comp.matmul, "C = A x W for shape MxKxN");
  comp_cmd->add_flag("--bias", comp.bias, "--matmul: add a bias row");
  comp_cmd->add_flag("--relu", comp.relu, "--matmul: apply ReLU");
  comp_cmd->add_flag("--bf16x2", comp.bf16x2, "--matmul: A and W as bf16 two per word, in HBM and in VMEM");
  comp_cmd->add_option("--mlp", comp.mlp, "a two-layer MLP MxKxHxN");
  comp_cmd->add_option("--config", comp.preset, "preset (default: the config file's default)")->check(kNonEmpty);
  comp_cmd
      ->add_option(
          "--form", comp.form,
          "loops, unrolled, nests (loops, no layer written out) or automatic (loops unless unrolled is no longer)")
      ->capture_default_str();
  comp_cmd->add_option("-o,--output", comp_out, "program file to write (.tpb); without it, print the assembly");

  RunOptions run;
  auto* run_cmd = app.add_subcommand(
      "run", "Run a program file, or a compiled matmul / MLP checked bit-exact against the host reference");
  run_cmd->add_option("program", run.program, "program file (.tpb) to load and run");
  run_cmd->add_option("--matmul", run.matmul, "compile and run C = A x W for shape MxKxN");
  run_cmd->add_flag("--bias", run.bias, "--matmul: add a bias row");
  run_cmd->add_flag("--relu", run.relu, "--matmul: apply ReLU");
  run_cmd->add_flag("--bf16x2", run.bf16x2, "--matmul: A and W as bf16 two per word, in HBM and in VMEM");
  run_cmd->add_flag("--timing-only", run.timing_only,
                    "--backend fast with --matmul, --mlp or --demo: the cycles and counters without the data");
  run_cmd->add_option("--mlp", run.mlp, "compile and run a two-layer MLP MxKxHxN (x[M,K] -> h[M,H] -> y[M,N])");
  run_cmd->add_flag("--demo", run.demo, "the make sim demo: the MLP 8n x 8n x 16n x 4n for the preset's n x n MXU");
  run_cmd
      ->add_option("--backend", run.backend,
                   "rtl, golden, fast (the golden interpreter with the fast model's calibrated timing), or both "
                   "(rtl and golden; --matmul/--mlp: the same operands on each, results compared)")
      ->capture_default_str();
  run_cmd->add_option("--config", run.preset, "preset (default: the program's, or the config file's default)")
      ->check(kNonEmpty);
  run_cmd->add_option("--form", run.form, "--matmul/--mlp/--demo: loops, unrolled, nests or automatic")
      ->capture_default_str();
  run_cmd->add_option("--seed", run.seed, "seed of the random operands")->capture_default_str()->check(kUnsigned);
  run_cmd
      ->add_option("--timeout", run.timeout,
                   "cycles (golden: instructions) before giving up (0: automatic; for a program file 5000000)")
      ->capture_default_str()
      ->check(kUnsigned);
  run_cmd->add_option("--report", run.report, "write a JSON report to this file")->check(kNonEmpty);
  add_observe_options(run_cmd, run.obs);
  run_cmd->add_option("--slice", run.slice,
                      "--mlp on a WxH slice (a pod of that shape; --config: the chips' preset, default the pods' "
                      "default's), sharded by --shard");
  run_cmd->add_option("--shard", run.shard,
                      "with --slice: batch=AXES and/or model=AXES[:cols|k|megatron|cols/k/...], axes x, y or xy, and "
                      "overlap[=on|off|auto] "
                      "(docs/compiler.md); --mlp then takes MxKxN1x...xNl");
  run_cmd->add_option(
      "--layers", run.layers,
      "a layer file (JSON) with its operands as .npy files (docs/compiler.md)->check(kNonEmpty); runs like --mlp, on "
      "one chip or with --slice/--shard");
  run_cmd->add_option("--out", run.out, "--layers/--slice: write the output as a float32 .npy file")->check(kNonEmpty);
  run_cmd->add_option("--hbm-in", run.hbm_in, "program runs: load a file of 32-bit words into HBM at BEAT:FILE");
  run_cmd->add_option("--hbm-out", run.hbm_out, "program runs: save HBM BEAT:BEATS:FILE after the run");

  PodOptions pod;
  auto* pod_cmd = app.add_subcommand(
      "pod",
      "Run on a slice of a pod (configs/pods.json): the data-parallel matmul demo, random ICI traffic, or "
      "programs; on the SystemC pod of Verilated chips (rtl), the golden pod, the golden pod with the fast model's "
      "timing (fast), or rtl and golden both, compared");
  pod_cmd
      ->add_option("--pod,--topology", pod.pod,
                   "pod from configs/pods.json: torus, chip preset, link latency, host boards "
                   "(default: the file's default)")
      ->check(kNonEmpty);
  pod_cmd->add_option("--torus", pod.torus, "override the pod's torus: PxQ chips (the slice: the whole torus)");
  pod_cmd->add_option("--preset", pod.preset, "override the pod's chip preset")->check(kNonEmpty);
  pod_cmd->add_option("--link-latency", pod.link_latency, "override the pod's link latency (cycles)")->check(kUnsigned);
  pod_cmd->add_option("--host-board", pod.host_board, "override the chips per host board: BXxBY (dividing the torus)");
  pod_cmd->add_option("--slice", pod.slice, "slice shape WxH (default: the pod's first slice)");
  pod_cmd->add_option("--origin", pod.origin, "slice origin X,Y in the pod (default: the pod's first slice's)");
  pod_cmd->add_option("--backend", pod.backend, "rtl, golden, fast or both (rtl and golden)")->capture_default_str();
  pod_cmd->add_flag("--demo", pod.demo,
                    "the make sim demo: C = A x W + b, 8n x 8n x 8n, the rows of A split over the slice's chips, "
                    "then every chip gathers the whole C over ICI");
  pod_cmd->add_option("--matmul", pod.matmul,
                      "the demo's data-parallel matmul for shape MxKxN (M a multiple of the "
                      "chip count)");
  pod_cmd->add_option("--traffic", pod.traffic, "random ICI traffic with this seed, checked");
  pod_cmd->add_option("--collective", pod.collective,
                      "KIND:ROWS: an all_reduce, reduce_scatter, all_gather, broadcast or all_to_all of ROWS rows per "
                      "chip on random fp32 data (--seed), checked against the host reference (docs/collectives.md)");
  pod_cmd->add_option("--algorithm", pod.algorithm,
                      "with --collective all_reduce, reduce_scatter or all_gather: ring (one ring through every "
                      "chip) or torus (the streams that use all four links); default: torus when the rows allow it");
  pod_cmd->add_option("--program", pod.program, "one SPMD program (.tpb) on every chip of the slice");
  pod_cmd->add_option("--program-at", pod.program_at, "X,Y=FILE: a program for the slice's chip (X, Y); repeatable");
  pod_cmd->add_option("--seed", pod.seed, "seed of operands and link errors")->capture_default_str()->check(kUnsigned);
  pod_cmd
      ->add_option("--timeout", pod.timeout,
                   "cycles before giving up (golden, fast: instructions per chip; 0: automatic)")
      ->capture_default_str()
      ->check(kUnsigned);
  pod_cmd->add_option("--watchdog", pod.watchdog, "cycles with every unfinished chip waiting that make a deadlock")
      ->capture_default_str()
      ->check(kUnsigned);
  pod_cmd->add_option("--link-bit-error", pod.link_bit_error, "probability of a flipped bit per link word")
      ->capture_default_str();
  pod_cmd
      ->add_option("--link-fault-rate", pod.link_fault_rate,
                   "the chips' own fault injection (ICI_FAULT0..3): a bit of a word sent on each link flips with "
                   "probability N/65536")
      ->capture_default_str()
      ->check(kUnsigned);
  pod_cmd->add_option("--report", pod.report, "write a JSON report to this file")->check(kNonEmpty);
  add_observe_options(pod_cmd, pod.obs);
  pod_cmd->add_option("--waves", pod.waves, "write FST waves of the rtl chips into this folder")->check(kNonEmpty);
  pod_cmd->add_option("--wave-chip", pod.wave_chips, "X,Y: only this pod chip's waves (repeatable)");
  pod_cmd->add_option("--golden-chip", pod.golden_chips,
                      "X,Y: in the rtl pod, this chip is a golden chip behind a Verilated router (a mixed pod; "
                      "repeatable)");
  pod_cmd->add_option("--fast-chip", pod.fast_chips,
                      "X,Y: in the rtl pod, this chip is a fast chip (the golden chip with the fast model's timing on "
                      "pod time) behind a Verilated router (a mixed pod; repeatable)");
  pod_cmd->add_option("--rtl-chip", pod.rtl_chips,
                      "X,Y: in the rtl pod, this chip is a Verilated chip and every other one a fast chip (a mixed "
                      "pod; repeatable)");

  TrainOptions train;
  auto* train_cmd = app.add_subcommand(
      "train",
      "Train a small MLP data parallel on a slice (docs/compiler.md): the loss per step, cycles per step and "
      "the all-reduce's share, every step checked bit-exact against the host's mirror");
  train_cmd->add_option("--slice", train.slice, "slice shape WxH (a pod of that shape)")->capture_default_str();
  train_cmd->add_option("--config", train.preset, "the chips' preset (default: the pods' default's)")->check(kNonEmpty);
  train_cmd->add_option("--backend", train.backend, "rtl, golden, fast or both (rtl and golden)")
      ->capture_default_str();
  train_cmd->add_option("--steps", train.spec.steps, "SGD steps")->capture_default_str()->check(kUnsigned);
  train_cmd->add_option("--batch", train.spec.batch, "the global batch (divided over the chips)")
      ->capture_default_str()
      ->check(kUnsigned);
  train_cmd->add_option("--in", train.spec.in, "input features K")->capture_default_str()->check(kUnsigned);
  train_cmd->add_option("--hidden", train.spec.hidden, "hidden units H")->capture_default_str()->check(kUnsigned);
  train_cmd->add_option("--out", train.spec.out, "outputs N")->capture_default_str()->check(kUnsigned);
  train_cmd->add_option("--lr", train.spec.lr, "the learning rate")->capture_default_str();
  train_cmd->add_option("--seed", train.spec.seed, "the data, the teacher and the initial weights")
      ->capture_default_str()
      ->check(kUnsigned);
  train_cmd
      ->add_option("--timeout", train.timeout,
                   "cycles before giving up (golden, fast: instructions per chip; 0: automatic)")
      ->capture_default_str()
      ->check(kUnsigned);
  train_cmd->add_option("--report", train.report, "write a JSON report to this file")->check(kNonEmpty);
  add_observe_options(train_cmd, train.obs);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }

  run.seed_given = run_cmd->count("--seed") > 0;
  std::signal(SIGINT, on_interrupt);
  const auto finish = [](int code) {
    if (!tp::interrupted()) return code;
    fmt::print(stderr, "tensorpod: interrupted; what ran is reported above (and in --report, if given)\n");
    return kExitInterrupted;
  };
  const auto dispatch = [&] {
    if (world.size() > 1) {
      if (!*pod_cmd)
        throw UsageError(fmt::format("under mpirun ({} ranks) only `tensorpod pod` runs (a pod split over the ranks)",
                                     world.size()));
      pod.comm = world.pod_comm();
    }
    if (*presets_cmd) return cmd_presets();
    if (*asm_cmd) return cmd_asm(asm_in, asm_out, asm_preset);
    if (*disasm_cmd) return cmd_disasm(disasm_in);
    if (*comp_cmd) return cmd_compile(comp, comp_out);
    if (*pod_cmd) return finish(cmd_pod(pod));
    if (*train_cmd) return finish(cmd_train(train));
    return finish(cmd_run(run));
  };
  threw = true;  // until a command returns: then no exception left this function
  try {
    const int code = dispatch();
    threw = false;
    return code;
  } catch (const UsageError& e) {
    fmt::print(stderr, "tensorpod: {}\n", e.what());
  } catch (const tp::ConfigError& e) {
    fmt::print(stderr, "tensorpod: {}\n", e.what());
  } catch (const tp::isa::IsaError& e) {
    fmt::print(stderr, "tensorpod: {}\n", e.what());
  } catch (const tp::compiler::CompileError& e) {
    fmt::print(stderr, "tensorpod: {}\n", e.what());
  } catch (const tp::driver::DriverError& e) {
    fmt::print(stderr, "tensorpod: {}\n", e.what());
  } catch (const std::exception& e) {
    // Not an input problem: a failure inside a backend or the host.
    fmt::print(stderr, "tensorpod: internal error: {}\n", e.what());
    return kExitFail;
  }
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    tp::mpi::World world(&argc, &argv);
    // Under mpirun every rank runs the same host code; rank 0 alone prints and writes reports.
    if (world.rank() != 0) {
      if (std::freopen("/dev/null", "w", stdout) == nullptr) world.abort(kExitFail);
    }
    bool threw = false;
    const int code = tool_main(argc, argv, world, threw);
    // An error may have hit some ranks only, the others waiting for them in a collective.
    if (threw && world.size() > 1) world.abort(code);
    return code;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tensorpod: {}\n", e.what());
    return kExitUsage;
  }
}
