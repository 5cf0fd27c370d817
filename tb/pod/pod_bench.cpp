// make bench: build/reports/pod.json (docs/pod.md, docs/benchmarks.md). One scenario per process
// (SystemC: one pod per process); each run appends its results to the report.
//   transfer: one chip sends B bytes to a chip h hops away on a 1 x 2h ring (h = 1 .. 4);
//             latency = the receiver's cycles until the data and the signal are in, fraction of
//             one link's peak = bits / (cycles * flit bits)
//   exchange: every chip of a 4x4 pod sends B bytes to each of its four neighbours at once;
//             the links' busy fraction
//   speed:    random traffic on a kx x ky pod (rtl or golden): simulated chip-cycles per second,
//             and the pod's overhead on top of the chips' own evaluation
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "collectives.h"
#include "energy.h"
#include "pod_programs.h"
#include "slice.h"
#include "trace.h"
#include "train.h"

namespace {

using json = nlohmann::ordered_json;
using namespace tp::driver;

PodSpec make_pod(const std::string& preset, unsigned kx, unsigned ky) {
  PodSpec p;
  p.name = fmt::format("{}x{}", kx, ky);
  p.preset = tp::load_preset(preset);
  p.kx = kx;
  p.ky = ky;
  p.link_latency = 1;
  p.board_x = std::min(2u, kx);
  p.board_y = std::min(2u, ky);
  return p;
}

tp::isa::Program assemble(const PodSpec& p, const std::string& text) {
  return tp::isa::assemble(text, "pod_bench", p.preset);
}

void append(const std::string& path, const json& entry, const std::string& benchmark) {
  json report;
  if (std::filesystem::exists(path)) {
    std::ifstream in(path);
    report = json::parse(in);
  } else {
    report = {{"benchmark", benchmark}, {"results", json::array()}};
  }
  report["results"].push_back(entry);
  std::ofstream out(path);
  out << report.dump(2) << "\n";
}

// --trace FILE: the timelines of the scenario's pod, collected when its slice goes away.
std::string g_trace;
std::vector<tp::trace::ChipTrace> g_timelines;
struct Collect {
  void operator()(Slice* s) const {
    g_timelines.insert(g_timelines.end(), s->timelines().begin(), s->timelines().end());
    delete s;
  }
};
std::unique_ptr<Slice, Collect> open(const PodSpec& p, const SliceShape& shape, Backend be) {
  std::unique_ptr<Slice, Collect> s(Slice::open(p, shape, be).release());
  s->set_tracing(!g_trace.empty());
  return s;
}

// The energy of the pod's run (docs/energy.md, tp::driver::slice_energy).
json pod_energy(Slice& s, const SliceStatus& st, Backend be) {
  const auto model = tp::energy::EnergyModel::for_preset(s.preset());
  const auto total = tp::driver::slice_energy(s, st, model, be == Backend::rtl);
  fmt::print("  energy: {}\n", tp::energy::summary(model, total));
  return tp::energy::to_json(model, total);
}

json resolved(const PodSpec& p) {
  return {{"pod", {{"torus", {p.kx, p.ky}}, {"link_latency", p.link_latency}, {"host_board", {p.board_x, p.board_y}}}},
          {"preset_config", json::parse(tp::preset_json(p.preset))}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "pod_bench: ICI transfers, neighbour exchange, pod simulation speed (build/reports/pod.json), collectives "
      "(collectives.json) and training (train.json)"};
  std::string scenario, out = "build/reports/pod.json", preset = "tiny", backend = "rtl";
  unsigned hops = 1, kx = 2, ky = 2;
  uint64_t bytes = 4096, seed = 1;
  app.add_option("--scenario", scenario, "transfer, exchange, speed, collective, train or train_baseline")->required();
  app.add_option("--hops", hops, "transfer: hops to the destination (1..4)")->capture_default_str();
  app.add_option("--bytes", bytes, "transfer / exchange: bytes per transfer (a multiple of a VMEM row)")
      ->capture_default_str();
  app.add_option("--pod", kx, "speed: pod width")->capture_default_str();
  app.add_option("--pod-y", ky, "speed: pod height")->capture_default_str();
  app.add_option("--backend", backend, "speed: rtl or golden")->capture_default_str();
  app.add_option("--preset", preset, "chip preset")->capture_default_str();
  app.add_option("--seed", seed, "speed: traffic seed")->capture_default_str();
  app.add_option("--out", out, "report to append to")->capture_default_str();
  std::string collective = "all_reduce";
  uint32_t coll_rows = 128;
  app.add_option("--collective", collective, "collective: all_reduce, reduce_scatter or all_gather")
      ->capture_default_str();
  app.add_option("--rows", coll_rows, "collective: rows per chip (0: the largest that fits)")->capture_default_str();
  TrainSpec train;
  app.add_option("--steps", train.steps, "train / train_baseline: SGD steps")->capture_default_str();
  app.add_option("--batch", train.batch, "train / train_baseline: the global batch")->capture_default_str();
  app.add_option("--trace", g_trace, "write a Chrome trace (ui.perfetto.dev) of the scenario's pod to this file");
  CLI11_PARSE(app, argc, argv);
  if (!g_trace.empty() && !std::ofstream(g_trace)) {  // before the run, not after it
    fmt::print(stderr, "pod_bench: --trace {}: cannot write\n", g_trace);
    return 2;
  }
  try {
    json e;
    if (scenario == "transfer") {
      if (hops < 1 || hops > 4) throw DriverError(fmt::format("--hops {}: 1..4", hops));
      const PodSpec p = make_pod(preset, 1, 2 * hops);
      const uint64_t row_bytes = 4ull * p.preset.mxu.n;
      if (bytes % row_bytes != 0 || bytes / row_bytes < 1 || bytes / row_bytes > p.preset.chip.vmem_rows)
        throw DriverError(fmt::format("--bytes {}: a multiple of {} up to VMEM's {} rows", bytes, row_bytes,
                                      p.preset.chip.vmem_rows));
      const uint64_t rows = bytes / row_bytes;
      auto s = open(p, {0, 0, 1, 2 * hops}, Backend::rtl);
      s->load(0, 0,
              assemble(p, fmt::format("ici.send vaddr=0, raddr=0, rows={}, dx=0, dy={}, rsem=2\nhalt\n", rows, hops)));
      s->load(0, hops, assemble(p, "fence 3 wait=2\nhalt\n"));
      const auto st = s->run(1'000'000);
      if (!st.ok()) throw DriverError("transfer: " + st.report);
      const uint64_t cycles = s->counters(0, hops).at("cycles");
      const double frac = static_cast<double>(bytes * 8) / (static_cast<double>(cycles) * p.preset.ici.flit_bits);
      e = {{"test", "transfer"},   {"pod", p.name},  {"preset", preset}, {"backend", "rtl"},
           {"hops", hops},         {"bytes", bytes}, {"cycles", cycles}, {"fraction_of_link_peak", frac},
           {"config", resolved(p)}};
      fmt::print("transfer {} B over {} hop(s): {} cycles, {:.3f} of one link's peak\n", bytes, hops, cycles, frac);
      e["energy"] = pod_energy(*s, st, Backend::rtl);
    } else if (scenario == "exchange") {
      const PodSpec p = make_pod(preset, 4, 4);
      const uint64_t rows = bytes / (4ull * p.preset.mxu.n);
      auto s = open(p, {0, 0, 4, 4}, Backend::rtl);
      // Every chip sends to +x, -x, +y, -y (four links), then waits for its four arrivals.
      const std::string prog = fmt::format(
          "ici.send vaddr=0, raddr={0}, rows={0}, dx=1, dy=0, rsem=2\n"
          "ici.send vaddr=0, raddr={1}, rows={0}, dx=-1, dy=0, rsem=2\n"
          "ici.send vaddr=0, raddr={2}, rows={0}, dx=0, dy=1, rsem=2\n"
          "ici.send vaddr=0, raddr={3}, rows={0}, dx=0, dy=-1, rsem=2\n"
          "fence 3 wait=2\nfence 3 wait=2\nfence 3 wait=2\nfence 3 wait=2\nhalt\n",
          rows, 2 * rows, 3 * rows, 4 * rows);
      s->load_all(assemble(p, prog));
      const auto st = s->run(1'000'000);
      if (!st.ok()) throw DriverError("exchange: " + st.report);
      uint64_t flits = 0, cycles = 0;
      for (unsigned y = 0; y < 4; ++y)
        for (unsigned x = 0; x < 4; ++x) {
          const auto c = s->counters(x, y);
          for (const char* l : {"n", "s", "e", "w"}) flits += c.at(fmt::format("ici_flits_{}", l));
          cycles = std::max(cycles, c.at("cycles"));
        }
      const double busy = static_cast<double>(flits) / (64.0 * static_cast<double>(cycles));
      const double frac =
          static_cast<double>(bytes * 8 * 64) / (64.0 * static_cast<double>(cycles) * p.preset.ici.flit_bits);
      e = {{"test", "exchange"},   {"pod", p.name},    {"preset", preset},           {"backend", "rtl"},
           {"bytes", bytes},       {"cycles", cycles}, {"link_busy_fraction", busy}, {"fraction_of_link_peak", frac},
           {"config", resolved(p)}};
      fmt::print("exchange {} B to each of 4 neighbours on 4x4: {} cycles, links busy {:.3f}, {:.3f} of peak\n", bytes,
                 cycles, busy, frac);
      e["energy"] = pod_energy(*s, st, Backend::rtl);
    } else if (scenario == "speed") {
      const PodSpec p = make_pod(preset, kx, ky);
      const Backend be = parse_backend(backend);
      auto s = open(p, {0, 0, kx, ky}, be);
      const auto plan = random_ici_traffic(p.preset, kx, ky, seed, 8, 64);
      setup_ici_traffic(*s, plan);
      const auto st = s->run(10'000'000);
      if (!st.ok()) throw DriverError("speed: " + st.report);
      const double chip_cycles = static_cast<double>(st.cycles) * kx * ky;
      const double rate = chip_cycles / st.wall_seconds;
      const double overhead = be == Backend::rtl && st.chip_eval_seconds > 0
                                  ? (st.wall_seconds - st.chip_eval_seconds) / st.chip_eval_seconds
                                  : 0.0;
      e = {{"test", "speed"},           {"pod", p.name},        {"preset", preset},
           {"backend", backend},        {"cycles", st.cycles},  {"wall_seconds", st.wall_seconds},
           {"chip_cycles_per_s", rate}, {"overhead", overhead}, {"transfers", plan.transfers.size()},
           {"config", resolved(p)}};
      fmt::print("speed {} pod ({}): {} cycles in {:.3f} s, {:.0f} chip-cycles/s, pod overhead {:.1f}%\n", p.name,
                 backend, st.cycles, st.wall_seconds, rate, 100 * overhead);
      e["energy"] = pod_energy(*s, st, be);
    } else if (scenario == "collective") {
      // A collective (docs/collectives.md) on a kx x ky pod, checked bit-exact. The bound
      // (docs/collectives.md "The bound"): the torus slice's bandwidth, every chip sending on
      // all four links at a link's peak, plus the algorithm's latency (its steps, each a hop) and
      // the memory transfers at both ends, which these cycles include (the program loads, runs
      // the collective, then stores).
      Collective kind = Collective::all_reduce;
      bool known = false;
      for (const auto k : kCollectives)
        if (collective == collective_name(k)) {
          kind = k;
          known = true;
        }
      if (!known)
        throw DriverError(fmt::format(
            "--collective {}: all_reduce, reduce_scatter, all_gather, broadcast or all_to_all", collective));
      const PodSpec p = make_pod(preset, kx, ky);
      // The largest size that fits (plan_collective refuses what does not); an all-reduce's, a
      // reduce-scatter's and an all-gather's with the torus algorithm where it runs at all (on one
      // chip, any).
      const bool torus = has_torus(kind) && kx * ky > 1;
      if (coll_rows == 0) {
        uint32_t lo = 0, hi = 0x7fff;
        while (lo < hi) {
          const uint32_t mid = (lo + hi + 1) / 2;
          bool fits = true;
          try {
            (void)plan_collective(p.preset, kind, kx, ky, mid,
                                  torus ? std::optional<Algorithm>(Algorithm::torus) : std::nullopt);
          } catch (const DriverError&) {
            fits = false;
          }
          if (fits)
            lo = mid;
          else
            hi = mid - 1;
        }
        coll_rows = lo;
      }
      const Backend be = parse_backend(backend);
      auto s = open(p, {0, 0, kx, ky}, be);
      const auto r = run_collective(*s, kind, coll_rows, seed);
      if (!r.pass) throw DriverError(fmt::format("{}: {} {}", r.what, r.status.report, r.mismatches));
      const double chips = kx * ky, cycles = double(r.status.cycles);
      const double moved = busbw_factor(kind, kx * ky);
      const double algbw = double(r.bytes) / cycles, busbw = algbw * moved;
      const double link = p.preset.ici.flit_bits / 8.0;  // bytes per cycle per link
      const double in_rows = double(coll_rows), out_rows = kind == Collective::all_gather       ? chips * coll_rows
                                                           : kind == Collective::reduce_scatter ? coll_rows / chips
                                                                                                : coll_rows;
      const double hbm = in_rows + out_rows;  // a beat (one row) per cycle through the memory port
      // Latency: the algorithm's steps. The torus: a ring step per chip beyond the first along
      // each side, for the reduce-scatter and for the all-gather (an all-reduce both); the ring:
      // 2 (p - 1) steps for all-reduce, p - 1 for the others (all-to-all: one, its sends go
      // straight through).
      const double torus_steps = (kx - 1) + (ky - 1);
      const bool ran_torus = r.algorithm == Algorithm::torus;  // only ever a has_torus() kind
      const double steps = ran_torus && kind == Collective::all_reduce ? 2.0 * torus_steps
                           : ran_torus                                 ? torus_steps
                           : kind == Collective::all_reduce            ? 2.0 * (chips - 1)
                           : kind == Collective::all_to_all            ? 1.0
                                                                       : chips - 1;
      const double per_hop = 2.0 * p.link_latency + 3.0;  // router pipeline and link, each way (docs/ici.md)
      const double bound = moved * double(r.bytes) / (4.0 * link) + steps * per_hop + hbm;
      e = {{"test", "collective"},
           {"collective", collective_name(kind)},
           {"algorithm", algorithm_name(kind, r.algorithm)},
           {"pod", p.name},
           {"preset", preset},
           {"backend", backend},
           {"rows", coll_rows},
           {"bytes", r.bytes},
           {"cycles", r.status.cycles},
           {"algbw", algbw},
           {"busbw", busbw},
           {"link_bytes_per_cycle", link},
           {"bound_cycles", bound},
           {"fraction_of_bound", bound / cycles},
           {"config", resolved(p)}};
      fmt::print(
          "{} ({}) {} rows on {} of {} ({}): {} B per chip, {} cycles, algbw {:.2f} busbw {:.2f} B/cycle, {:.3f} of "
          "bound\n",
          collective, e["algorithm"].get<std::string>(), coll_rows, p.name, preset, backend, r.bytes, r.status.cycles,
          algbw, busbw, bound / cycles);
      e["energy"] = pod_energy(*s, r.status, be);
    } else if (scenario == "train" || scenario == "train_baseline") {
      // Training data parallel (docs/compiler.md "Training"), checked bit-exact every step. The
      // baseline is the same programs without the all-reduce, in a process of its own (one RTL pod
      // per process): it fills in the matching train entry's collective_fraction, 1 - its cycles
      // over the entry's.
      const PodSpec p = make_pod(preset, kx, ky);
      const Backend be = parse_backend(backend);
      train.allreduce = scenario == "train";
      auto s = open(p, {0, 0, kx, ky}, be);
      const auto r = run_training(*s, train);
      if (!r.status.ok() || (train.allreduce && !r.pass))
        throw DriverError(fmt::format("{}: {} {} words differ", r.what, r.status.report, r.mismatches));
      if (!train.allreduce) {
        json report;
        std::ifstream in(out);
        if (!in) throw DriverError(fmt::format("train_baseline: no {} to complete", out));
        report = json::parse(in);
        bool found = false;
        for (auto& x : report["results"])
          if (x["slice"] == p.name && x["preset"] == preset && x["backend"] == backend) {
            const double with_ar = x["cycles"].get<double>();
            x["baseline_cycles"] = r.status.cycles;
            x["collective_fraction"] = 1.0 - static_cast<double>(r.status.cycles) / with_ar;
            found = true;
            fmt::print("train {} ({}): the all-reduce is {:.1f}% of a step\n", p.name, backend,
                       100 * x["collective_fraction"].get<double>());
          }
        if (!found)
          throw DriverError(fmt::format("train_baseline: no {} {} {} entry in {}", p.name, preset, backend, out));
        std::ofstream o(out);
        o << report.dump(2) << "\n";
        return 0;
      }
      e = {{"test", "train"},
           {"slice", p.name},
           {"preset", preset},
           {"backend", backend},
           {"what", r.what},
           {"steps", train.steps},
           {"batch", train.batch},
           {"loss", r.result.loss},
           {"cycles", r.status.cycles},
           {"cycles_per_step", r.cycles_per_step},
           {"collective_fraction", 0.0},
           {"mxu_utilization", r.mxu_utilization},
           {"instructions", r.instructions},
           {"wall_seconds", r.status.wall_seconds},
           {"config", resolved(p)}};
      fmt::print("train {} ({}): loss {:.4f} -> {:.4f}, {:.1f} cycles per step, {} instructions, {:.2f} s\n", p.name,
                 backend, r.result.loss.front(), r.result.loss.back(), r.cycles_per_step, r.instructions,
                 r.status.wall_seconds);
      e["energy"] = pod_energy(*s, r.status, be);
    } else {
      throw DriverError(
          fmt::format("--scenario {}: transfer, exchange, speed, collective, train or train_baseline", scenario));
    }
    append(out, e, scenario == "collective" ? "collectives" : scenario == "train" ? "train" : "pod");
    if (!g_trace.empty()) {
      std::ofstream f(g_trace);
      std::vector<const tp::trace::ChipTrace*> v;
      for (const auto& t : g_timelines) v.push_back(&t);
      tp::trace::write_chrome_trace(f, v, {"pod_bench " + scenario, backend, preset, 0});
      if (!f) throw DriverError(fmt::format("--trace {}: cannot write", g_trace));
      fmt::print("trace: {} ({} chips)\n", g_trace, v.size());
    }
  } catch (const std::exception& ex) {
    fmt::print(stderr, "pod_bench: {}\n", ex.what());
    return 1;
  }
  return 0;
}
