#include "tb_util.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace tp::tb {

std::string current_test_name() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (!info) return "standalone";
  return fmt::format("{}.{}", info->test_suite_name(), info->name());
}

namespace {

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

std::string wave_path(const std::string& test_name) {
  const char* dir = std::getenv("TP_WAVES");
  if (!dir || !*dir) return "";
  std::filesystem::create_directories(dir);
  std::string file = test_name;
  for (char& c : file)
    if (c == '/') c = '_';
  return (std::filesystem::path(dir) / (file + ".fst")).string();
}

}  // namespace tp::tb
