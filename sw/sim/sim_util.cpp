#include "sim_util.h"

#include <cstdlib>
#include <filesystem>

#include "config.h"

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
  // A bad folder is the user's setting, not a failure of the run: said as such (tensorpod: exit 2).
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec))
    throw ConfigError(std::string("TP_WAVES=") + dir + ": is a file, not a folder");
  if (!std::filesystem::exists(dir, ec) && !std::filesystem::create_directories(dir, ec))
    throw ConfigError(std::string("TP_WAVES=") + dir + ": the folder cannot be made (" + ec.message() + ")");
  std::string file = name;
  for (char& c : file)
    if (c == '/') c = '_';
  return (std::filesystem::path(dir) / (file + ".fst")).string();
}

}  // namespace tp::tb
