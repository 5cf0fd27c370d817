#include "tb_util.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace tp::tb {

namespace {

// The run's name for the simulation backends (wave files): the current GoogleTest's.
const bool name_source = [] {
  set_run_name_source([]() -> std::string {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return info ? fmt::format("{}.{}", info->test_suite_name(), info->name()) : std::string();
  });
  return true;
}();

// FNV-1a: the same default seed for a test name on every standard library.
uint64_t fnv1a(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

}  // namespace

uint64_t test_seed(const std::string& test_name, const std::string& preset) {
  uint64_t seed = 0;
  const char* env = std::getenv("TP_SEED");
  const std::string value = env ? env : "";
  if (value == "random") {
    seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) & 0xffffffffu;
  } else if (!value.empty()) {
    char* end = nullptr;
    errno = 0;
    seed = std::strtoull(value.c_str(), &end, 0);
    if (errno != 0 || end == value.c_str() || *end != '\0' || value[0] == '-')
      throw std::invalid_argument(fmt::format("TP_SEED='{}' is not a number (or 'random')", value));
  } else {
    seed = fnv1a(test_name) & 0xffffffffu;
  }
  if (preset.empty()) {
    fmt::print("[ seed     ] {} = {}  (rerun: TP_SEED={} ctest --test-dir build -R '{}$')\n", test_name, seed, seed,
               test_name);
  } else {
    fmt::print("[ seed     ] {} = {}  (rerun with waves: make wave TEST={}.{} SEED={})\n", test_name, seed, preset,
               test_name, seed);
  }
  return seed;
}

uint64_t soak_scale() {
  const char* env = std::getenv("TP_SOAK");
  if (!env || !*env) return 1;
  const std::string value = env;
  char* end = nullptr;
  errno = 0;
  const uint64_t v = std::strtoull(value.c_str(), &end, 10);
  if (errno != 0 || end == value.c_str() || *end != '\0' || value[0] == '-' || v < 1 || v > 100000)
    throw std::invalid_argument(fmt::format("TP_SOAK='{}' is not a whole number from 1 to 100000", value));
  return v;
}

void soak_report(const std::string& block, uint64_t transactions, uint64_t cycles, const std::string& kind) {
  fmt::print("[ soak     ] block={} transactions={} cycles={} kind={}\n", block, transactions, cycles, kind);
  std::fflush(stdout);
}

uint64_t seed_or(uint64_t fallback) {
  const char* s = std::getenv("TP_SEED");
  return s && *s ? std::strtoull(s, nullptr, 0) : fallback;
}

}  // namespace tp::tb
