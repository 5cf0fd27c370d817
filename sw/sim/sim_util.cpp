#include "sim_util.h"

#include <cstdlib>
#include <filesystem>

namespace tp::tb {

namespace {
std::function<std::string()>& run_name_source() {
  static std::function<std::string()> f;
  return f;
}
}  // namespace

void set_run_name_source(std::function<std::string()> f) { run_name_source() = std::move(f); }

std::string current_test_name() {
  const auto& f = run_name_source();
  const std::string name = f ? f() : std::string();
  return name.empty() ? "standalone" : name;
}

std::string wave_path(const std::string& name) {
  const char* dir = std::getenv("TP_WAVES");
  if (!dir || !*dir) return "";
  std::filesystem::create_directories(dir);
  std::string file = name;
  for (char& c : file)
    if (c == '/') c = '_';
  return (std::filesystem::path(dir) / (file + ".fst")).string();
}

}  // namespace tp::tb
