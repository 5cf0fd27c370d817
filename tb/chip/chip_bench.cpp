// make bench: matmuls compiled for the chip and run on the Verilated chip, against the roofline
// (build/reports/chip.json), with the HBM controllers' statistics on presets whose chip memory
// is HBM. For each preset, M = K = N in {4n, 8n} and operand layout ("plain", every bf16 a word;
// "bf16x2", A and W two per word): the loop-nest program's cycles, MXU
// utilization, flops per cycle against the peak, bytes moved, the fraction of the roofline
// reached and its size; where the unrolled program fits too (plain), its size and cycles and the
// loops' overhead against it. Then the loop programs too large to unroll (the targets, "loops"
// in the report): 256^3 on tiny, 1024^3 on small. Then the loops against the unrolled form over
// random shapes where both fit ("loop_sweep": half of them the front end's hardest, few rows, one
// to three K-tiles, many column tiles; each form on a fresh chip), per preset the worst and the
// total ratio of their cycles. Every result is checked bit-exact against the host reference; a
// mismatch fails the benchmark.
#include <fmt/format.h>
#include <deque>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <utility>

#include "compiler.h"
#include "driver.h"
#include "energy.h"

int main(int argc, char** argv) {
  CLI::App app{"tensorpod chip benchmark: compiled matmuls on the Verilated chip against the roofline"};
  std::vector<std::string> presets;
  std::vector<unsigned> multiples = {4, 8};
  std::string out = "build/reports/chip.json";
  app.add_option("--presets", presets, "presets (default: every one with an RTL backend in this binary)");
  app.add_option("--sizes", multiples, "M = K = N as multiples of the array size n")->capture_default_str();
  app.add_option("--out", out, "JSON report")->capture_default_str();
  std::vector<std::string> sweep_presets = {"tiny", "odd", "small"};
  unsigned sweep_shapes = 100;
  uint64_t sweep_seed = 11;
  app.add_option("--sweep-presets", sweep_presets,
                 "presets of the loops-against-unrolled sweep (those with an RTL backend)")
      ->capture_default_str();
  app.add_option("--sweep-shapes", sweep_shapes, "shapes per preset in the sweep where both forms fit (0: none)")
      ->capture_default_str();
  app.add_option("--sweep-seed", sweep_seed, "the sweep's seed")->capture_default_str();
  std::string sweep_form = "loops";
  app.add_option("--sweep-form", sweep_form, "the sweep's looped form: loops, or nests (no layer written out)")
      ->check(CLI::IsMember({"loops", "nests"}))
      ->capture_default_str();
  std::string trace_file;
  app.add_option("--trace", trace_file, "write a Chrome trace (ui.perfetto.dev) of every run, one process each");
  CLI11_PARSE(app, argc, argv);
  std::deque<tp::trace::ChipTrace> traces;
  if (!trace_file.empty() && !std::ofstream(trace_file)) {  // before the sweep, not after it
    fmt::print(stderr, "chip_bench: --trace {}: cannot write\n", trace_file);
    return 2;
  }
  const auto rtl_presets = tp::driver::registered_presets(tp::driver::Backend::rtl);
  if (presets.empty()) presets = rtl_presets;
  for (const auto& name : sweep_presets)  // before any run
    if (std::find(rtl_presets.begin(), rtl_presets.end(), name) == rtl_presets.end()) {
      fmt::print(stderr, "chip_bench: --sweep-presets: no RTL backend for '{}' in this binary\n", name);
      return 2;
    }

  try {
    nlohmann::json report = {{"benchmark", "chip"}, {"results", nlohmann::json::array()}};
    bool all_pass = true;
    for (const auto& name : presets) {
      auto chip = tp::driver::Chip::open(name, tp::driver::Backend::rtl);
      const tp::Preset& p = chip->preset();
      const uint64_t n = p.mxu.n;
      for (const unsigned mult : multiples)
        for (const bool packed : {false, true}) {
          const uint64_t s = mult * n;
          // plain: every bf16 a 32-bit word in HBM; bf16x2: A and W two per word (the driver packs
          // A where the written-out layer fits, docs/compiler.md), half their traffic.
          const std::string layout = packed ? "bf16x2" : "plain";
          tp::driver::MatmulSpec spec{uint32_t(s), uint32_t(s), uint32_t(s), false, false, tp::compiler::Form::loops};
          spec.bf16x2 = packed;
          if (!trace_file.empty()) {
            traces.emplace_back(fmt::format("{} {}^3 {}", name, s, layout));
            chip->set_trace(&traces.back());
          }
          const auto run = tp::driver::run_matmul(*chip, spec, 1);
          chip->set_trace(nullptr);
          const double secs = std::max(run.run_seconds, 1e-9);
          // The roofline: peak compute (one n x n MAC step per cycle) and the memory port (one
          // beat of 4n bytes per cycle) over the compulsory traffic: A and W read once, C written
          // once, each element as stored: a 32-bit word, or 2 bytes for bf16x2 (docs/chip.md).
          // (tp::driver::roofline_cycles: on HBM the pseudo-channels' data buses, 32 data bytes per
          // burst each, a burst taking the device model's burst_cycles, if narrower than the port.)
          const double flops = 2.0 * double(s) * double(s) * double(s);
          const double peak = 2.0 * double(n * n);
          const double bytes_per_cycle = tp::driver::memory_bytes_per_cycle(p);
          const double compulsory = run.compulsory_bytes;
          const double roofline = run.roofline_cycles;
          const bool hbm = p.chip.memory == "hbm";
          const double nc = double(p.chip.hbm.channels * p.chip.hbm.pseudo_channels);
          const uint64_t hbm_bytes = run.bytes_loaded + run.bytes_stored;
          nlohmann::json e = {{"preset", name},
                              {"memory", p.chip.memory},
                              {"layout", layout},
                              {"m", s},
                              {"k", s},
                              {"n", s},
                              {"pass", run.pass},
                              {"cycles", run.cycles},
                              {"mxu_utilization", run.mxu_utilization},
                              {"flops_per_cycle", flops / double(run.cycles)},
                              {"peak_flops_per_cycle", peak},
                              {"hbm_bytes", hbm_bytes},
                              {"compulsory_bytes", compulsory},
                              {"memory_bytes_per_cycle", bytes_per_cycle},
                              {"roofline_cycles", roofline},
                              {"fraction_of_roofline", roofline / double(run.cycles)},
                              {"instructions", run.instructions},
                              {"form", tp::compiler::form_name(run.form)},
                              {"sim_cycles_per_s", double(run.cycles) / secs},
                              {"sim_macs_per_s", double(s) * double(s) * double(s) / secs},
                              {"counters", run.counters}};
          // The energy estimate from the run's counters (docs/energy.md).
          const auto model = tp::energy::EnergyModel::for_preset(p);
          const auto energy = tp::energy::estimate(model, run.counters);
          e["energy"] = nlohmann::json(tp::energy::to_json(model, energy));
          // The same matmul unrolled, where that fits the instruction memory: the loops' cost.
          auto unrolled_spec = spec;
          unrolled_spec.form = tp::compiler::Form::unrolled;
          tp::compiler::MatmulLayer probe;
          probe.m = probe.k = probe.n = uint32_t(s);
          probe.a = {0, uint32_t(s), uint32_t(s)};
          probe.w = {tp::compiler::padded_beats(p, uint32_t(s), uint32_t(s)), uint32_t(s), uint32_t(s)};
          probe.c = {2 * tp::compiler::padded_beats(p, uint32_t(s), uint32_t(s)), uint32_t(s), uint32_t(s)};
          if (const auto sizes = tp::compiler::compile_info(p, {probe}); !packed && sizes.unrolled_instructions != 0) {
            // Both forms on a chip of their own from reset, loaded padded to one length, as the
            // sweep runs them (on HBM the same point of the refresh interval at the start).
            const auto words = static_cast<uint32_t>(std::max(sizes.unrolled_instructions, sizes.looped_instructions));
            auto fair = spec;
            fair.load_words = unrolled_spec.load_words = words;
            const auto lp = tp::driver::run_matmul(*tp::driver::Chip::open(name, tp::driver::Backend::rtl), fair, 1);
            const auto u =
                tp::driver::run_matmul(*tp::driver::Chip::open(name, tp::driver::Backend::rtl), unrolled_spec, 1);
            all_pass = all_pass && u.pass && u.output == run.output && lp.pass && lp.output == run.output;
            e["unrolled_instructions"] = u.instructions;
            e["unrolled_cycles"] = u.cycles;
            e["loop_cycle_overhead"] = double(lp.cycles) / double(u.cycles) - 1.0;
            fmt::print("chip {:<6} {:>5}^3 unrolled: {} instructions, {} cycles; loops ({} instructions) {:+.2f}%\n",
                       name, s, u.instructions, u.cycles, run.instructions,
                       100.0 * (double(lp.cycles) / double(u.cycles) - 1.0));
          }
          if (hbm) {  // the HBM controllers' view of the run
            const auto& c = run.counters;
            const double bursts = double(c.at("hbm_reads") + c.at("hbm_writes"));
            const double hits = double(c.at("hbm_row_hits"));
            e["hbm"] = {{"pseudo_channels", c.at("hbm_pseudo_channels")},
                        {"reads", c.at("hbm_reads")},
                        {"writes", c.at("hbm_writes")},
                        {"row_hit_rate", bursts > 0 ? hits / bursts : 0.0},
                        {"bus_busy_fraction", double(c.at("hbm_bus_busy")) / (nc * double(run.cycles))},
                        {"avg_read_latency",
                         c.at("hbm_reads") ? double(c.at("hbm_read_latency_sum")) / double(c.at("hbm_reads")) : 0.0},
                        {"max_read_latency", c.at("hbm_read_latency_max")},
                        {"refreshes", c.at("hbm_refreshes")},
                        {"ecc_corrected", c.at("hbm_ecc_corrected")},
                        {"ecc_fatal", c.at("hbm_ecc_fatal")}};
          }
          report["results"].push_back(e);
          all_pass = all_pass && run.pass;
          fmt::print(
              "chip {:<6} ({:<5}) {:>5}^3 {:<6}: {:>8} cycles, MXU {:5.1f}%, {:6.1f} of {:6.0f} flops/cycle, {:.3f} of "
              "roofline, "
              "{:.2f} M cycles/s{}\n",
              name, p.chip.memory, s, layout, run.cycles, 100.0 * run.mxu_utilization, flops / double(run.cycles), peak,
              roofline / double(run.cycles), double(run.cycles) / secs / 1e6, run.pass ? "" : "  MISMATCH");
          fmt::print("chip {:<6} {:>5}^3 {:<6} energy: {}\n", name, s, layout, tp::energy::summary(model, energy));
        }
    }
    // The loop nests too large to unroll (issue "Loops"): at most 300 instructions each.
    report["loops"] = nlohmann::json::array();
    for (const auto& [name, size] : {std::pair<std::string, uint32_t>{"tiny", 256}, {"small", 1024}}) {
      if (std::find(presets.begin(), presets.end(), name) == presets.end()) continue;
      auto chip = tp::driver::Chip::open(name, tp::driver::Backend::rtl);
      const auto run = tp::driver::run_matmul(*chip, {size, size, size, false, false, tp::compiler::Form::loops}, 1);
      all_pass = all_pass && run.pass && run.instructions <= 300;
      if (run.instructions > 300)
        fmt::print("chip {} {}^3: {} instructions, more than 300\n", name, size, run.instructions);
      report["loops"].push_back({{"preset", name},
                                 {"m", size},
                                 {"k", size},
                                 {"n", size},
                                 {"pass", run.pass},
                                 {"instructions", run.instructions},
                                 {"cycles", run.cycles},
                                 {"mxu_utilization", run.mxu_utilization},
                                 {"wall_seconds", run.run_seconds},
                                 {"energy", nlohmann::json(tp::energy::energy_json(chip->preset(), run.counters))}});
      fmt::print("chip {:<6} {:>5}^3 loops: {} instructions, {} cycles, MXU {:.1f}%, {}\n", name, size,
                 run.instructions, run.cycles, 100.0 * run.mxu_utilization, run.pass ? "bit-exact" : "MISMATCH");
    }
    // The loops against the unrolled form where both fit.
    report["loop_sweep"] = nlohmann::json::array();
    for (const auto& name : sweep_presets) {
      if (sweep_shapes == 0) break;
      std::mt19937_64 rng(sweep_seed);
      const tp::Preset sp = tp::load_preset(name);
      const uint32_t n = sp.mxu.n;
      unsigned shapes = 0, over = 0, written_out = 0;
      const tp::compiler::Form looped = sweep_form == "nests" ? tp::compiler::Form::nests : tp::compiler::Form::loops;
      double worst = 0, loops_total = 0, unrolled_total = 0;
      std::string worst_shape;
      for (unsigned i = 0; shapes < sweep_shapes && i < 20 * sweep_shapes; ++i) {
        const bool busy = i % 2 == 1;
        auto pick = [&](uint32_t hi) { return static_cast<uint32_t>(1 + rng() % hi); };
        tp::driver::MatmulSpec spec{pick((busy ? 2 : 16) * n), pick((busy ? 3 : 8) * n), pick((busy ? 40 : 6) * n),
                                    rng() % 2 == 0, rng() % 2 == 0};
        tp::driver::MatmulRun runs[2];
        // Both programs loaded padded to one length: on HBM they then start at the same point of
        // the refresh interval (the host's loading takes cycles).
        tp::compiler::CompileInfo sizes;
        try {
          const std::vector<tp::compiler::MatmulLayer> layers = {
              tp::compiler::packed_layer(sp, spec.m, spec.k, spec.n, spec.bias)};
          sizes = tp::compiler::compile_info(sp, layers);  // automatic: both forms' sizes
          if (looped == tp::compiler::Form::nests) {
            sizes.looped_instructions = tp::compiler::compile_info(sp, layers, {.form = looped}).instructions;
            sizes.layers_written_out = 0;
          }
        } catch (const tp::compiler::CompileError&) {
          continue;  // the layer does not fit the chip at all
        }
        spec.load_words = static_cast<uint32_t>(std::max(sizes.looped_instructions, sizes.unrolled_instructions));
        if (sizes.unrolled_instructions == 0) continue;  // the unrolled program does not fit
        written_out += sizes.layers_written_out > 0 ? 1 : 0;
        for (const int f : {0, 1}) {
          spec.form = f == 0 ? looped : tp::compiler::Form::unrolled;
          auto chip = tp::driver::Chip::open(name, tp::driver::Backend::rtl);  // each from reset
          runs[f] = tp::driver::run_matmul(*chip, spec, sweep_seed + i);
        }
        ++shapes;
        const bool pass = runs[0].pass && runs[1].pass && runs[0].output == runs[1].output;
        all_pass = all_pass && pass;
        if (!pass) fmt::print("chip {} {}: MISMATCH (seed {})\n", name, runs[0].what, sweep_seed + i);
        const double ratio = double(runs[0].cycles) / double(runs[1].cycles);
        loops_total += double(runs[0].cycles);
        unrolled_total += double(runs[1].cycles);
        if (ratio > 1.01) ++over;
        if (ratio > worst) {
          worst = ratio;
          worst_shape = runs[0].what;
        }
      }
      report["loop_sweep"].push_back({{"preset", name},
                                      {"memory", sp.chip.memory},
                                      {"seed", sweep_seed},
                                      {"form", sweep_form},
                                      {"shapes", shapes},
                                      {"written_out", written_out},
                                      {"worst_ratio", worst},
                                      {"worst_shape", worst_shape},
                                      {"over_1_percent", over},
                                      {"total_ratio", unrolled_total > 0 ? loops_total / unrolled_total : 0.0}});
      fmt::print(
          "chip {:<6} {} against unrolled over {} shapes (seed {}, {} written out): total {:.4f}, worst {:.4f} ({}), "
          "{} over 1%\n",
          name, sweep_form, shapes, sweep_seed, written_out, unrolled_total > 0 ? loops_total / unrolled_total : 0.0,
          worst, worst_shape, over);
    }
    std::filesystem::create_directories(std::filesystem::path(out).parent_path());
    std::ofstream(out) << report.dump(2) << "\n";
    fmt::print("wrote {}\n", out);
    if (!trace_file.empty()) {
      std::ofstream f(trace_file);
      std::vector<const tp::trace::ChipTrace*> v;
      for (const auto& t : traces) v.push_back(&t);
      tp::trace::write_chrome_trace(f, v, {"chip_bench", "rtl", "", 0});
      if (!f) throw tp::driver::DriverError(fmt::format("--trace {}: cannot write", trace_file));
      fmt::print("wrote {} ({} runs)\n", trace_file, v.size());
    }
    return all_pass ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "chip_bench: {}\n", e.what());
    return 2;
  }
}
