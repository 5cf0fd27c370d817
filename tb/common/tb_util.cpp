#include "tb_util.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>

namespace tp::tb {

std::string current_test_name() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (!info) return "standalone";
  return fmt::format("{}.{}", info->test_suite_name(), info->name());
}

uint64_t test_seed(const std::string& test_name, const std::string& binary_hint) {
  uint64_t seed = 0;
  const char* env = std::getenv("TP_SEED");
  if (env && std::string(env) == "random") {
    seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) & 0xffffffffu;
  } else if (env && *env) {
    seed = std::strtoull(env, nullptr, 0);
  } else {
    seed = std::hash<std::string>{}(test_name)&0xffffffffu;
  }
  fmt::print("[ seed     ] {} = {}  (rerun with waves: make wave TEST={}{} SEED={})\n", test_name, seed, test_name,
             binary_hint.empty() ? "" : " PRESET=" + binary_hint, seed);
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
