// Coverage builds (make coverage, -DTP_COVERAGE=ON; docs/verification.md "Coverage"): the models
// are Verilated with line and toggle coverage, start from zero (a random initial state would
// count every bit's first change as a toggle), and each harness writes its model's counts when it
// ends, one file per model into TP_COVERAGE_DIR, which scripts/coverage.py merges. In other builds
// these do nothing. Header only: it is compiled with the Verilated models it writes.
#pragma once

#include <verilated.h>

#include <memory>

#ifdef TP_COVERAGE
#include <unistd.h>
#include <verilated_cov.h>

#include <atomic>
#include <filesystem>
#include <string>
#endif

namespace tp::tb {

#ifdef TP_COVERAGE
inline constexpr bool kCoverage = true;
#else
inline constexpr bool kCoverage = false;
#endif

// VerilatedContext::randReset's mode for the harnesses: random initial values from the seed (2),
// or zeros in a coverage build (0).
inline constexpr int kRandReset = kCoverage ? 0 : 2;

// The context's coverage counts into TP_COVERAGE_DIR (a coverage build), once per model.
inline void write_coverage([[maybe_unused]] VerilatedContext& ctx) {
#ifdef TP_COVERAGE
  static std::atomic<unsigned> n{0};
  std::error_code ec;
  std::filesystem::create_directories(TP_COVERAGE_DIR, ec);
  const std::string file =
      std::string(TP_COVERAGE_DIR) + "/cov_" + std::to_string(::getpid()) + "_" + std::to_string(n++) + ".dat";
  ctx.coveragep()->write(file.c_str());
#endif
}

// Ends a harness's model: final(), its coverage counts, then the model itself. A Verilated
// model's scopes erase themselves through Verilated::threadContextp(), the context created last
// in this thread, not necessarily the model's own (Verilator 5.006, VerilatedScope's
// destructor): so point it at ctx first. Otherwise ending a harness while a newer one lives
// erases from the newer context, and ending an older one after a newer one has gone locks the
// freed context's mutex and hangs.
template <class Model>
void end_model(VerilatedContext& ctx, std::unique_ptr<Model>& model) {
  model->final();
  write_coverage(ctx);
  Verilated::threadContextp(&ctx);
  model.reset();
}

}  // namespace tp::tb
