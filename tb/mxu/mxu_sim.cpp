// make sim: a random bf16 matmul through the Verilated MXU at one preset, checked bit for bit
// against the golden model, with the cycle count and the MXU utilization.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <random>

#include TP_MXU_HEADER
#include "bf16_random.h"
#include "config.h"
#include "mxu_harness.h"
#include "mxu_matmul.h"
#include "mxu_model.h"

int main(int argc, char** argv) {
  CLI::App app{
      fmt::format("tensorpod MXU demo ({} preset): C = A x B on the Verilated MXU, checked against "
                  "the golden model",
                  TP_PRESET)};
  unsigned m = 0, k = 0, ncols = 0;
  uint64_t seed = 1;
  double stall = 0.0;
  std::string waves;
  app.add_option("-m,--rows", m, "rows of A and C (default 8 x array size)");
  app.add_option("-k,--inner", k, "columns of A, rows of B (default 4 x array size)");
  app.add_option("-n,--cols", ncols, "columns of B and C (default 2 x array size)");
  app.add_option("--seed", seed, "random seed of the operands")->capture_default_str();
  app.add_option("--stall", stall, "probability of random valid/ready stalls on every interface")
      ->check(CLI::Range(0.0, 0.95))
      ->capture_default_str();
  app.add_option("--waves", waves, "write an FST waveform to this file");
  CLI11_PARSE(app, argc, argv);

  try {
    const tp::Preset preset = tp::load_preset(TP_PRESET);
    const unsigned n = preset.mxu.n;
    if (m == 0) m = 8 * n;
    if (k == 0) k = 4 * n;
    if (ncols == 0) ncols = 2 * n;
    const tp::tb::MatmulShape shape{m, k, ncols};

    fmt::print("tensorpod MXU sim: preset {} ({}x{} array, {} accumulator rows, {} MHz)\n", preset.name, n, n,
               preset.mxu.acc_rows, preset.clock_mhz);
    fmt::print("  matmul {}x{} . {}x{} bf16 -> fp32, seed {}\n", m, k, k, ncols, seed);

    std::mt19937_64 rng(seed);
    const tp::tb::ValueMix mix{118, 136, 0.0};
    const auto a = tp::tb::random_bf16s(rng, std::size_t{m} * k, mix);
    const auto b = tp::tb::random_bf16s(rng, std::size_t{k} * ncols, mix);

    tp::tb::MxuHarness<TP_MXU_CLASS> h(n, {stall, stall, stall, seed, waves}, preset.mxu.acc_rows);
    const auto t0 = std::chrono::steady_clock::now();
    const auto c = tp::tb::run_matmul(h, preset.mxu.acc_rows, shape, a, b);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto want = tp::golden::mxu_matmul(n, m, k, ncols, a, b);

    std::size_t bad = 0, first_bad = 0;
    for (std::size_t i = 0; i < c.size(); ++i)
      if (c[i] != want[i] && bad++ == 0) first_bad = i;
    const auto cnt = h.counters();
    const double macs = double(m) * k * ncols;
    const double cycles = double(h.cycles());
    if (bad == 0) {
      fmt::print("  check:        PASS, all {} results bit-exact with the golden model\n", c.size());
    } else {
      fmt::print("  check:        FAIL, {} of {} results differ; first C[{}][{}] = {:#010x}, golden {:#010x}\n", bad,
                 c.size(), first_bad / ncols, first_bad % ncols, c[first_bad], want[first_bad]);
    }
    const double compute = cycles - double(h.read_cycles());
    fmt::print("  cycles:       {} ({:.2f} us at {} MHz): {} computing, {} reading the accumulators back\n", h.cycles(),
               cycles / preset.clock_mhz, preset.clock_mhz, compute, h.read_cycles());
    fmt::print("  utilization:  {:.3f} of the MXU's peak while computing ({:.3f} including the read-back)\n",
               macs / (double(n) * n * compute), macs / (double(n) * n * cycles));
    fmt::print("  work:         {} activation rows, {} weight rows, {} MACs ({} useful)\n", cnt.rows, cnt.wrows,
               cnt.macs, std::uint64_t(macs));
    fmt::print("  stalls:       {} cycles result back-pressure, {} cycles waiting for weights\n", cnt.stall_out,
               cnt.stall_wgt);
    fmt::print("  sim speed:    {:.0f} cycles/s, {:.1f} M MAC/s (array), wall {:.2f} s\n", cycles / wall,
               double(cnt.macs) / wall / 1e6, wall);
    if (!waves.empty()) fmt::print("  waves:        {}\n", waves);
    return bad == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }
}
