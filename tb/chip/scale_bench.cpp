// make bench: the fast chip model against the Verilated chip, and full-size pods on it
// (build/reports/scale.json, docs/scale.md).
//
// --part chip: for each preset with an RTL backend in this binary, the calibration programs (the
// compiled matmuls and MLP of chip.json's sizes, and random chip programs) run on the Verilated
// chip, on the fast model with data and on the fast model in timing-only mode, each from a fresh
// chip; a `calibration` entry per program gives both cycle counts and the relative error (and the
// golden backend's dataflow estimate and its error, for comparison), a
// `speed` entry the simulated cycles per second of the three (wall time of Chip::run alone, in
// one process, so the ratios are measured in one run; the three are timed in three interleaved
// rounds, each backend running the program again on fresh chips until 50 ms of its runs have
// passed and at least once a round, `*_runs` saying how often).
// Every RTL and fast run is checked bit-exact against the host reference.
//
// --part pod: one pod of configs/pods.json (v2-pod, v3-pod) on the fast backend: an all-reduce of
// --rows rows per chip and the data-parallel matmul, each checked bit-exact; a `pods` entry each
// with the wall time, the process's peak resident memory (one pod per process, so the peak is the
// pod's, or the highest of its runs: the matmul's entry includes the all-reduce's peak) and per
// chip, and the pod's cycles.
//
// --trace DIR (--part chip): each program's first RTL and fast runs as one Chrome trace,
// DIR/<preset>-<program>.json (the two chips as two processes), for scripts/trace_diff.py.
// --only TEXT: the programs whose name contains TEXT.
//
// Each run appends its entries to the report (one pod per process).
#include <fmt/format.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "collectives.h"
#include "compiler.h"
#include "driver.h"
#include "pod_programs.h"
#include "random_program.h"
#include "slice.h"
#include "trace.h"

namespace {

using json = nlohmann::json;
using tp::driver::Backend;
using tp::driver::Chip;

void append(const std::string& path, const std::string& section, const json& entry) {
  json report = {{"benchmark", "scale"}};
  if (std::filesystem::exists(path)) {
    std::ifstream in(path);
    report = json::parse(in);
  }
  report[section].push_back(entry);
  std::ofstream out(path);
  out << report.dump(2) << "\n";
}

uint64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<uint64_t>(u.ru_maxrss) * 1024;  // Linux: KiB
}

// One calibration program: how to run it on a chip, its name.
struct Program {
  std::string name;
  std::function<tp::driver::MatmulRun(Chip&)> run;
};

std::vector<Program> chip_programs(const tp::Preset& p, const std::vector<uint32_t>& sizes, unsigned random_programs,
                                   uint64_t seed) {
  const uint32_t n = p.mxu.n;
  const uint32_t big = *std::max_element(sizes.begin(), sizes.end());
  std::vector<Program> progs;
  for (const uint32_t mult : sizes) {
    const uint32_t s = mult * n;
    progs.push_back({fmt::format("matmul {0}x{0}x{0}", s), [s](Chip& c) {
                       return tp::driver::run_matmul(c, {s, s, s, false, false, tp::compiler::Form::loops}, 1);
                     }});
  }
  progs.push_back({fmt::format("matmul {0}x{0}x{0} bf16x2", big * n), [n, big](Chip& c) {
                     tp::driver::MatmulSpec spec{big * n, big * n, big * n, false, false, tp::compiler::Form::loops};
                     spec.bf16x2 = true;
                     return tp::driver::run_matmul(c, spec, 1);
                   }});
  // Thin (n/2 rows of A a tile): the MXU paced by the array's wait after each tile switch.
  progs.push_back(
      {fmt::format("matmul {}x{}x{}", n / 2, big * n, big * n), [n, big](Chip& c) {
         return tp::driver::run_matmul(c, {n / 2, big * n, big * n, false, false, tp::compiler::Form::loops}, 1);
       }});
  progs.push_back({fmt::format("matmul {}x{}x{} bias relu", 3 * n + 1, 2 * n + 3, n + 5), [n](Chip& c) {
                     return tp::driver::run_matmul(c, {3 * n + 1, 2 * n + 3, n + 5, true, true}, 1);
                   }});
  progs.push_back({fmt::format("mlp {}x{}x{}x{}", big * n, big * n, 2 * big * n, big * n / 2), [n, big](Chip& c) {
                     return tp::driver::run_mlp(c, {big * n, big * n, 2 * big * n, big * n / 2}, 1);
                   }});
  for (unsigned i = 0; i < random_programs; ++i)
    progs.push_back({fmt::format("random program {} (seed {})", i, seed + i),
                     [s = seed + i](Chip& c) { return tp::tb::run_random_program(c, s); }});
  return progs;
}

constexpr double kMinSeconds = 0.05;  // Chip::run time a speed is measured over (at least one run a round)
constexpr unsigned kRounds = 3;       // interleaved rounds of the three backends' runs
constexpr unsigned kMaxRuns = 6000;

// A program's name as a file name: letters, digits and '-' ("random program 0 (seed 1)" ->
// "random-program-0-seed-1").
std::string slug(const std::string& s) {
  std::string o;
  for (const char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      o += c;
    else if (!o.empty() && o.back() != '-')
      o += '-';
  }
  while (!o.empty() && o.back() == '-') o.pop_back();
  return o;
}

struct ChipOptions {
  std::vector<uint32_t> sizes;
  unsigned random_programs = 4;
  uint64_t seed = 1;
  std::string only, trace_dir;
};

int part_chip(const std::vector<std::string>& presets, const ChipOptions& o, const std::string& out) {
  bool ok = true;
  unsigned matched = 0;
  for (const auto& name : presets) {
    const tp::Preset p = tp::load_preset(name);
    for (const auto& prog : chip_programs(p, o.sizes, o.random_programs, o.seed)) {
      if (prog.name.find(o.only) == std::string::npos) continue;
      ++matched;
      tp::trace::ChipTrace rtl_trace("chip (0, 0)"), fast_trace("chip (0, 0)");
      rtl_trace.set_group("rtl");
      fast_trace.set_group("fast");
      const bool tracing = !o.trace_dir.empty();
      auto rtl = Chip::open(name, Backend::rtl);
      if (tracing) rtl->set_trace(&rtl_trace);
      const auto r = prog.run(*rtl);
      auto fast = Chip::open(name, Backend::fast);
      if (tracing) fast->set_trace(&fast_trace);
      const auto f = prog.run(*fast);
      if (tracing) {
        const std::string path = fmt::format("{}/{}-{}.json", o.trace_dir, name, slug(prog.name));
        std::ofstream file(path);
        const std::vector<const tp::trace::ChipTrace*> chips = {&rtl_trace, &fast_trace};
        tp::trace::write_chrome_trace(file, chips, {"scale_bench", "rtl and fast", name, p.clock_mhz / 1000.0});
        if (!file) throw std::runtime_error(fmt::format("--trace: cannot write {}", path));
        fmt::print("trace: {}\n", path);
      }
      const auto t = prog.run(*tp::driver::make_golden_chip(p, true, true));
      const auto g = prog.run(*Chip::open(name, Backend::golden));  // the dataflow estimate, for comparison
      if (!r.pass || !f.pass || !t.status.ok()) {
        fmt::print(stderr, "scale_bench: {} on {}: rtl {}, fast {}, timing-only {}\n", prog.name, name,
                   r.pass ? "pass" : "FAIL", f.pass ? "pass" : "FAIL", tp::driver::describe(t.status));
        ok = false;
        continue;
      }
      const double err = (double(f.cycles) - double(r.cycles)) / double(r.cycles);
      // A short run's wall time is noise (tens of microseconds on the fast model), and the shared
      // machine's speed drifts by a factor of up to two over seconds: the three backends are timed
      // in kRounds interleaved rounds, each running the program again on fresh chips until
      // kMinSeconds / kRounds of its Chip::run time have passed in the round (at least once), so
      // that all three see the same stretch of the machine's time; a speed is the cycles over the
      // time of all its runs (the first, checked above, included).
      struct Speed {
        uint64_t cycles = 0;
        double secs = 0;
        unsigned runs = 0;
        double per_s() const { return secs > 0 ? double(cycles) / secs : 0.0; }
      };
      Speed rs{r.cycles, r.run_seconds, 1}, fs{f.cycles, f.run_seconds, 1}, ts{t.cycles, t.run_seconds, 1};
      const auto round = [&](Speed& sp, unsigned k, const auto& open, bool data) {
        const double until = kMinSeconds * k / kRounds;
        bool ran = k == 1;  // the first run, checked above, is round 1's
        while (sp.runs < kMaxRuns && (sp.secs < until || !ran)) {
          ran = true;
          const auto m = prog.run(*open());
          if (data ? !m.pass : !m.status.ok()) {  // every run checked, as the first
            fmt::print(stderr, "scale_bench: {} on {}: run {} failed\n", prog.name, name, sp.runs + 1);
            return false;
          }
          sp.secs += m.run_seconds;
          sp.cycles += m.cycles;
          ++sp.runs;
        }
        return true;
      };
      bool timed = true;
      for (unsigned k = 1; timed && k <= kRounds; ++k)
        timed = round(
                    rs, k, [&] { return Chip::open(name, Backend::rtl); }, true) &&
                round(
                    fs, k, [&] { return Chip::open(name, Backend::fast); }, true) &&
                round(
                    ts, k, [&] { return tp::driver::make_golden_chip(p, true, true); }, false);
      ok = ok && timed;
      fmt::print(
          "{:<12} {:<40} rtl {:>9} fast {:>9} error {:+6.2f}%   cycles/s: rtl {:.3g} fast {:.3g} timing-only {:.3g}\n",
          name, prog.name, r.cycles, f.cycles, 100 * err, rs.per_s(), fs.per_s(), ts.per_s());
      append(out, "calibration",
             {{"program", prog.name},
              {"preset", name},
              {"rtl_cycles", r.cycles},
              {"fast_cycles", f.cycles},
              {"error", err},
              {"golden_cycles", g.cycles},
              {"golden_error", (double(g.cycles) - double(r.cycles)) / double(r.cycles)}});
      if (!timed) continue;  // a failed run's speed is not reported
      append(out, "speed",
             {{"program", prog.name},
              {"preset", name},
              {"cycles", r.cycles},
              {"rtl_cycles_per_s", rs.per_s()},
              {"fast_cycles_per_s", fs.per_s()},
              {"timing_only_cycles_per_s", ts.per_s()},
              {"rtl_runs", rs.runs},
              {"fast_runs", fs.runs},
              {"timing_only_runs", ts.runs},
              {"fast_speedup", rs.per_s() > 0 ? fs.per_s() / rs.per_s() : 0.0},
              {"timing_only_speedup", rs.per_s() > 0 ? ts.per_s() / rs.per_s() : 0.0}});
    }
  }
  if (matched == 0) {
    fmt::print(stderr, "scale_bench: --only '{}': no program's name contains it\n", o.only);
    return 2;
  }
  return ok ? 0 : 1;
}

int part_pod(const std::string& topology, uint32_t rows, uint32_t block_rows, const std::string& out) {
  const auto pod = tp::driver::pod_spec(tp::load_pod(topology));
  const tp::driver::SliceShape all{0, 0, pod.kx, pod.ky};
  const unsigned chips = pod.kx * pod.ky;
  bool ok = true;
  const auto report = [&](const std::string& scenario, const tp::driver::SliceStatus& st, bool pass, double wall,
                          uint64_t bytes) {
    const uint64_t rss = peak_rss_bytes();
    fmt::print("{} ({} chips, fast): {}: {} in {} pod cycles, {:.1f} s, peak RSS {:.2f} GiB ({:.1f} MiB a chip)\n",
               topology, chips, scenario, pass ? "pass" : "FAIL", st.cycles, wall, double(rss) / (1 << 30),
               double(rss) / chips / (1 << 20));
    append(out, "pods",
           {{"topology", topology},
            {"chips", chips},
            {"preset", pod.preset.name},
            {"backend", "fast"},
            {"scenario", scenario},
            {"bytes_per_chip", bytes},
            {"pass", pass},
            {"pod_cycles", st.cycles},
            {"wall_s", wall},
            {"chip_cycles_per_s", wall > 0 ? double(st.cycles) * chips / wall : 0.0},
            {"peak_rss_bytes", rss},
            {"peak_rss_per_chip_bytes", rss / chips}});
    if (!pass) fmt::print("  {}\n", st.report.empty() ? tp::driver::describe_outcomes(st) : st.report);
    ok &= pass;
  };
  {
    auto s = tp::driver::Slice::open(pod, all, Backend::fast);
    const auto t0 = std::chrono::steady_clock::now();
    const auto c = tp::driver::run_collective(*s, tp::driver::Collective::all_reduce, rows, 1);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    report("all_reduce", c.status, c.pass, wall, c.bytes);
  }
  {
    auto s = tp::driver::Slice::open(pod, all, Backend::fast);
    const uint32_t n = pod.preset.mxu.n;
    // Each chip a block of A's rows, W (8n x n) on every chip; every chip gathers all of C (the
    // demo's gather: its memory grows with the square of the chips).
    const tp::driver::MatmulSpec spec{chips * block_rows, 8 * n, n, true, false};
    const auto t0 = std::chrono::steady_clock::now();
    const auto m = tp::driver::run_pod_matmul(*s, spec, 1);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    report("data_parallel_matmul", m.status, m.pass, wall, uint64_t{spec.m / chips} * spec.k * 4);
  }
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tensorpod scale benchmark: the fast chip model against the RTL, full-size pods on it"};
  std::string part, out = "build/reports/scale.json", topology;
  std::vector<std::string> presets;
  ChipOptions chip;
  chip.sizes = {4, 8};
  uint32_t rows = 0, block_rows = 8;
  app.add_option("--part", part, "chip (calibration and speed) or pod (a full-size pod on the fast model)")
      ->required()
      ->check(CLI::IsMember({"chip", "pod"}));
  app.add_option("--presets", presets, "--part chip: presets (default: every one with an RTL backend)");
  app.add_option("--sizes", chip.sizes,
                 "--part chip: the matmuls' M = K = N as multiples of n; the largest also for "
                 "the bf16x2 matmul and the MLP (M x M x 2M x M/2)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 16u));
  app.add_option("--random", chip.random_programs, "--part chip: random programs per preset")->capture_default_str();
  app.add_option("--seed", chip.seed, "--part chip: the first random program's seed")->capture_default_str();
  app.add_option("--only", chip.only, "--part chip: only the programs whose name contains this")
      ->check(CLI::Validator([](std::string& t) { return t.empty() ? std::string("an empty value") : std::string(); },
                             "TEXT"));
  app.add_option("--trace", chip.trace_dir,
                 "--part chip: write each program's RTL and fast runs as a Chrome trace into this directory")
      ->check(CLI::ExistingDirectory);
  app.add_option("--topology", topology, "--part pod: a pod of configs/pods.json");
  app.add_option("--rows", rows, "--part pod: the all-reduce's rows per chip")->capture_default_str();
  app.add_option("--block-rows", block_rows, "--part pod: the data-parallel matmul's rows of A per chip")
      ->capture_default_str()
      ->check(CLI::Range(1u, 64u));
  app.add_option("--out", out, "report to append to")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  // Each part's options, refused with the other part rather than ignored.
  for (const char* o : {"--presets", "--sizes", "--random", "--seed", "--only", "--trace"})
    if (part == "pod" && app.count(o) > 0) {
      fmt::print(stderr, "scale_bench: {} goes with --part chip\n", o);
      return 2;
    }
  for (const char* o : {"--topology", "--rows", "--block-rows"})
    if (part == "chip" && app.count(o) > 0) {
      fmt::print(stderr, "scale_bench: {} goes with --part pod\n", o);
      return 2;
    }
  try {
    if (part == "chip") {
      const auto rtl = tp::driver::registered_presets(Backend::rtl);
      if (presets.empty()) presets = rtl;
      for (const auto& p : presets)
        if (std::find(rtl.begin(), rtl.end(), p) == rtl.end())
          throw std::invalid_argument(fmt::format("--presets: no RTL backend for '{}' in this binary", p));
      return part_chip(presets, chip, out);
    }
    if (topology.empty() || rows == 0) throw std::invalid_argument("--part pod needs --topology and --rows");
    return part_pod(topology, rows, block_rows, out);
  } catch (const std::exception& e) {
    fmt::print(stderr, "scale_bench: {}\n", e.what());
    return 2;
  }
}
