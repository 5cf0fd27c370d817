// Progress of a long simulation on the terminal (docs/observability.md): one line on stderr,
// redrawn at most twice a second, with the simulated cycles, the cycles per wall-clock second and,
// when the loop knows about how many cycles to expect, the time left. Quiet when stderr is not a
// terminal or TENSORPOD_PROGRESS=0, and for runs shorter than a second. Header only.
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace tp {

inline bool progress_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("TENSORPOD_PROGRESS");
    if (e && std::string(e) == "0") return false;
    return ::isatty(STDERR_FILENO) != 0 || (e && std::string(e) == "1");
  }();
  return on;
}

class Progress {
 public:
  // expected: about how many cycles the loop will run (0: unknown, no time left shown).
  explicit Progress(std::string what, uint64_t expected = 0)
      : what_(std::move(what)), expected_(expected), on_(progress_enabled()), t0_(Clock::now()), last_(t0_) {}
  ~Progress() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
  }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Call it often (every few thousand cycles); it draws at most twice a second.
  void update(uint64_t cycles) {
    if (!on_) return;
    const auto now = Clock::now();
    if (now - last_ < std::chrono::milliseconds(500) || now - t0_ < std::chrono::seconds(1)) return;
    last_ = now;
    const double secs = std::chrono::duration<double>(now - t0_).count();
    const double rate = static_cast<double>(cycles) / secs;
    std::string left;
    if (expected_ > cycles && rate > 0)
      left = fmt::format(", about {:.0f} s left", static_cast<double>(expected_ - cycles) / rate);
    else if (expected_ > 0)
      left = ", past the estimate";
    std::fprintf(stderr, "\r\033[K%s: %s cycles, %s cycles/s%s", what_.c_str(), si(static_cast<double>(cycles)).c_str(),
                 si(rate).c_str(), left.c_str());
    std::fflush(stderr);
    shown_ = true;
  }

 private:
  using Clock = std::chrono::steady_clock;
  static std::string si(double v) {
    if (v >= 1e9) return fmt::format("{:.2f} G", v / 1e9);
    if (v >= 1e6) return fmt::format("{:.2f} M", v / 1e6);
    if (v >= 1e3) return fmt::format("{:.1f} k", v / 1e3);
    return fmt::format("{:.0f}", v);
  }
  std::string what_;
  uint64_t expected_;
  bool on_, shown_ = false;
  Clock::time_point t0_, last_;
};

}  // namespace tp
