// The golden MXU arithmetic's speed: MACs per second of one thread through MxuModel, per kernel
// variant (sw/golden/mxu_model.cpp) and array size, against the definition one MAC at a time
// (bf16_mac down each column, what MxuModel::row() computed before the SIMD kernels). A
// measurement, not a test: the figures depend on the host and on its load. Every variant's bits
// are compared with the definition's on the measured tile, and a difference is an error (exit 1).
//
//   golden_mac_bench [--n 8,12,32,128] [--seconds 0.3] [--out build/reports/golden_mac.json]
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "fp.h"
#include "mxu_model.h"

namespace {

using namespace tp::golden;

// Runs `step` (which does `macs` MACs) until `seconds` have passed; MAC/s.
double macs_per_second(double seconds, uint64_t macs, const std::function<void()>& step) {
  using Clock = std::chrono::steady_clock;
  step();  // warm the caches and the dispatch
  uint64_t done = 0;
  const auto t0 = Clock::now();
  double elapsed = 0;
  do {
    step();
    done += macs;
    elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  } while (elapsed < seconds);
  return static_cast<double>(done) / elapsed;
}

// The definition, one MAC at a time down each column from +0.
void definition_rows(unsigned n, const std::vector<uint16_t>& w, const std::vector<uint16_t>& a,
                     std::vector<uint32_t>& out) {
  for (std::size_t r = 0; r < a.size() / n; ++r)
    for (unsigned j = 0; j < n; ++j) {
      uint32_t acc = 0;
      for (unsigned i = 0; i < n; ++i) acc = bf16_mac(acc, a[r * n + i], w[std::size_t{i} * n + j]);
      out[r * n + j] = acc;
    }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"MACs per second of the golden MXU arithmetic, per kernel variant"};
  std::vector<unsigned> sizes = {8, 12, 32, 128};
  double seconds = 0.3;
  unsigned rows = 64;
  std::string out_path;
  app.add_option("--n", sizes, "array sizes n (an n x n weight tile)")->delimiter(',')->check(CLI::Range(1u, 4096u));
  app.add_option("--seconds", seconds, "time per measurement")->check(CLI::Range(0.01, 60.0));
  app.add_option("--rows", rows, "activation rows per rows() call")->check(CLI::Range(1u, 1u << 16));
  app.add_option("--out", out_path, "write the figures as JSON to this file");
  CLI11_PARSE(app, argc, argv);

  std::vector<std::string_view> kernels;
  for (auto k : mxu_kernels())
    if (mxu_kernel_supported(k)) kernels.push_back(k);
  fmt::print("golden MXU arithmetic, one thread; kernels this host runs: {} (automatic: {})\n",
             fmt::join(kernels, ", "), mxu_kernel());
  fmt::print("{:>5} {:<12} {:<8} {:>14}\n", "n", "kernel", "api", "MAC/s");

  nlohmann::json results = nlohmann::json::array();
  bool identical = true;
  auto report = [&](unsigned n, std::string_view kernel, std::string_view api, double rate) {
    fmt::print("{:>5} {:<12} {:<8} {:>14.3e}\n", n, kernel, api, rate);
    results.push_back({{"n", n}, {"kernel", std::string(kernel)}, {"api", std::string(api)}, {"macs_per_s", rate}});
  };
  for (unsigned n : sizes) {
    std::mt19937_64 rng(n);
    auto value = [&] { return Bf16::from_float(std::uniform_real_distribution<float>(-1, 1)(rng)).bits; };
    std::vector<uint16_t> w(std::size_t{n} * n), a(std::size_t{rows} * n);
    for (auto& x : w) x = value();
    for (auto& x : a) x = value();
    const uint64_t macs = uint64_t{rows} * n * n;

    std::vector<uint32_t> want(a.size()), got(a.size());
    report(n, "definition", "loop", macs_per_second(seconds, macs, [&] { definition_rows(n, w, a, want); }));

    MxuModel model(n, 1);
    model.load_weights(w);
    model.switch_tile();
    for (auto k : kernels) {
      mxu_select_kernel(k);
      report(n, k, "rows", macs_per_second(seconds, macs, [&] { model.rows(a, got); }));
      identical = identical && got == want;
      // One row per call, a vector returned each time: the per-row API the scoreboards use.
      const std::span<const uint16_t> first(a.data(), n);
      report(n, k, "row", macs_per_second(seconds, uint64_t{n} * n, [&] { got[0] = model.row(first)[0]; }));
    }
    mxu_select_kernel("");
  }
  if (!identical) fmt::print(stderr, "error: a kernel's bits differ from the definition's\n");

  if (!out_path.empty()) {
    const nlohmann::json doc = {{"bench", "golden_mac"},
                                {"description",
                                 "MACs per second of one thread through the golden MXU arithmetic (MxuModel), per "
                                 "kernel variant; 'definition' is bf16_mac one MAC at a time, 'rows' a batch of "
                                 "rows per call, 'row' one row per call"},
                                {"unit", "MAC/s"},
                                {"rows_per_call", rows},
                                {"automatic_kernel", std::string(mxu_kernel())},
                                {"bits_identical", identical},
                                {"results", results}};
    std::ofstream file(out_path);
    if (!(file << doc.dump(2) << "\n")) {
      fmt::print(stderr, "error: cannot write {}\n", out_path);
      return 1;
    }
    fmt::print("wrote {}\n", out_path);
  }
  return identical ? 0 : 1;
}
