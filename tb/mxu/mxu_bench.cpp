// make bench: a stream of back-to-back weight tiles, M rows each, through the Verilated MXU.
// Reports utilization and simulation speed as one entry of build/reports/mxu.json (merged with
// the entries of the other presets). Results are checked against the golden model too.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include TP_MXU_HEADER
#include "bf16_random.h"
#include "config.h"
#include "mxu_harness.h"
#include "mxu_model.h"

namespace {

// Lines of C++ Verilator generated for this model: the size that must not grow with n^2.
std::size_t generated_lines() {
  std::size_t lines = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(TP_MXU_VDIR, ec)) {
    const auto ext = e.path().extension();
    if (ext != ".cpp" && ext != ".h") continue;
    std::ifstream in(e.path());
    lines += static_cast<std::size_t>(std::count(std::istreambuf_iterator<char>(in), {}, '\n'));
  }
  return lines;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{fmt::format("tensorpod MXU benchmark ({} preset)", TP_PRESET)};
  unsigned tiles = 0, rows = 0;
  std::string out = "build/reports/mxu.json";
  app.add_option("--tiles", tiles, "weight tiles in the stream (default: 2^17 activation rows in all)");
  app.add_option("--rows", rows, "activation rows per tile (default 4 x array size)");
  app.add_option("--out", out, "JSON report to merge this preset's entry into")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    const tp::Preset preset = tp::load_preset(TP_PRESET);
    const unsigned n = preset.mxu.n;
    if (rows == 0) rows = 4 * n;
    if (tiles == 0) {
      // The same stream at every preset, 2^17 activation rows (4096 tiles at tiny, 256 at v2), so
      // that the utilization's one fill and drain (3N + 3 cycles) weighs the same everywhere and
      // the speeds are timed over about 131 k cycles.
      tiles = std::max(1u, (1u << 17) / rows);
    }
    if (rows > preset.mxu.acc_rows)
      throw std::invalid_argument(fmt::format("--rows {} exceeds the {} accumulator rows", rows, preset.mxu.acc_rows));

    std::mt19937_64 rng(1);
    const tp::tb::ValueMix mix;
    tp::golden::MxuModel model(n, preset.mxu.acc_rows);
    tp::tb::MxuHarness<TP_MXU_CLASS> h(n, {}, preset.mxu.acc_rows);
    // Queue the whole stream first so that the harness only drives handshakes while timed;
    // the golden model runs outside the timed region.
    std::vector<uint16_t> row(n);
    for (unsigned t = 0; t < tiles; ++t) {
      const auto w = tp::tb::random_bf16s(rng, std::size_t{n} * n, mix);
      h.queue_weights(w);
      model.load_weights(w);
      model.switch_tile();
      for (unsigned r = 0; r < rows; ++r) {
        for (auto& x : row) x = tp::tb::random_bf16(rng, mix);
        h.queue_row(row, r == 0, r, t > 0);
        model.write_acc(r, model.row(row), t > 0);
      }
    }
    const auto t0 = std::chrono::steady_clock::now();
    h.run();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const uint64_t cycles = h.cycles();  // from the first weight row to the last result written
    const auto got = h.read_rows(0, rows);
    bool exact = true;
    for (unsigned r = 0; r < rows; ++r)
      exact = exact && std::equal(got[r].begin(), got[r].end(), model.read_acc(r).begin());

    const auto c = h.counters();
    const double macs = double(c.macs);
    nlohmann::json entry = {
        {"preset", preset.name},
        {"n", n},
        {"rows_per_tile", rows},
        {"tiles", tiles},
        {"cycles", cycles},
        {"utilization", macs / (double(n) * n * double(cycles))},
        {"sim_cycles_per_s", double(cycles) / wall},
        {"sim_macs_per_s", macs / wall},
        {"threads", 1},
        {"wall_s", wall},
        {"bit_exact", exact},
        {"stall_weight_cycles", c.stall_wgt},
        {"stall_result_cycles", c.stall_out},
        {"generated_cpp_lines", generated_lines()},
        {"config", nlohmann::json::parse(tp::preset_json(preset))},
    };
    fmt::print(
        "mxu bench {}: {}x{} array, {} tiles x {} rows: {} cycles, utilization {:.4f}, {:.0f} cycles/s, "
        "{:.1f} M MAC/s, bit-exact {}\n",
        preset.name, n, n, tiles, rows, cycles, entry["utilization"].get<double>(), double(cycles) / wall,
        macs / wall / 1e6, exact ? "yes" : "NO");

    // Merge into the report: replace this preset's entry, keep the others.
    nlohmann::json report = {{"benchmark", "mxu"}, {"results", nlohmann::json::array()}};
    if (std::ifstream in(out); in) {
      try {
        report = nlohmann::json::parse(in);
      } catch (const nlohmann::json::exception&) {
        fmt::print(stderr, "warning: {} was not valid JSON; starting a new report\n", out);
      }
    }
    auto& results = report["results"];
    for (auto it = results.begin(); it != results.end();) {
      if (it->value("preset", "") == preset.name)
        it = results.erase(it);
      else
        ++it;
    }
    results.push_back(entry);
    std::sort(results.begin(), results.end(), [](const auto& x, const auto& y) {
      return x["n"].template get<unsigned>() < y["n"].template get<unsigned>();
    });
    if (const auto dir = std::filesystem::path(out).parent_path(); !dir.empty())
      std::filesystem::create_directories(dir);
    std::ofstream(out) << report.dump(2) << "\n";
    return exact ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }
}
