#include "config.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#ifndef TP_SOURCE_DIR
#error "TP_SOURCE_DIR must be defined by the build"
#endif

namespace tp {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& origin, const std::string& where, const std::string& what) {
  throw ConfigError(fmt::format("{}: {}: {}", origin, where, what));
}

void check_keys(const json& obj, const std::set<std::string>& allowed, const std::string& origin,
                const std::string& where) {
  if (!obj.is_object()) fail(origin, where, "expected an object");
  for (const auto& [key, value] : obj.items()) {
    if (!allowed.contains(key)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail(origin, where + "." + key, fmt::format("unknown key (known keys: {})", list));
    }
  }
}

unsigned get_uint(const json& obj, const std::string& key, unsigned lo, unsigned hi, const std::string& origin,
                  const std::string& where) {
  const std::string at = where + "." + key;
  if (!obj.contains(key)) fail(origin, at, "missing");
  const json& v = obj.at(key);
  if (!v.is_number_integer()) fail(origin, at, fmt::format("expected an integer, got {}", v.dump()));
  const auto x = v.get<long long>();
  if (x < lo || x > hi) fail(origin, at, fmt::format("{} is out of range [{}, {}]", x, lo, hi));
  return static_cast<unsigned>(x);
}

IciConfig parse_ici(const json& c, const std::string& origin, const std::string& where) {
  check_keys(c, {"torus", "vcs", "buf_flits", "flit_bits", "replay_flits", "link_latency"}, origin, where);
  IciConfig ici;
  if (!c.contains("torus") || !c["torus"].is_array() || c["torus"].size() != 2 || !c["torus"][0].is_number_integer() ||
      !c["torus"][1].is_number_integer())
    fail(origin, where + ".torus", "expected [x, y]");
  const json dims = {{"x", c["torus"][0]}, {"y", c["torus"][1]}};
  ici.torus_x = get_uint(dims, "x", 1, 32, origin, where + ".torus");
  ici.torus_y = get_uint(dims, "y", 1, 32, origin, where + ".torus");
  ici.vcs = get_uint(c, "vcs", 2, 16, origin, where);
  if (ici.vcs % 2 != 0)
    fail(origin, where + ".vcs", fmt::format("{} is odd (two dateline classes need an even number)", ici.vcs));
  ici.buf_flits = get_uint(c, "buf_flits", 1, 64, origin, where);
  ici.flit_bits = get_uint(c, "flit_bits", 32, 1024, origin, where);  // a head flit carries a 32-bit id in tests
  ici.replay_flits = get_uint(c, "replay_flits", 2, 128, origin, where);
  if ((ici.replay_flits & (ici.replay_flits - 1)) != 0)
    fail(origin, where + ".replay_flits", fmt::format("{} is not a power of two", ici.replay_flits));
  ici.link_latency = get_uint(c, "link_latency", 1, 64, origin, where);
  return ici;
}

Preset parse_one(const std::string& name, const json& j, const std::string& origin) {
  const std::string where = "presets." + name;
  check_keys(j, {"description", "clock_mhz", "mxu", "ici"}, origin, where);
  Preset p;
  p.name = name;
  if (j.contains("description")) {
    if (!j["description"].is_string()) fail(origin, where + ".description", "expected a string");
    p.description = j["description"].get<std::string>();
  }
  if (!j.contains("clock_mhz") || !j["clock_mhz"].is_number())
    fail(origin, where + ".clock_mhz", "missing or not a number");
  p.clock_mhz = j["clock_mhz"].get<double>();
  if (!(p.clock_mhz > 0.0 && p.clock_mhz <= 10000.0))
    fail(origin, where + ".clock_mhz", fmt::format("{} is out of range (0, 10000]", p.clock_mhz));
  if (!j.contains("mxu")) fail(origin, where + ".mxu", "missing");
  const json& m = j["mxu"];
  check_keys(m, {"n", "acc_rows"}, origin, where + ".mxu");
  p.mxu.n = get_uint(m, "n", 2, 256, origin, where + ".mxu");
  p.mxu.acc_rows = get_uint(m, "acc_rows", 1, 65535, origin, where + ".mxu");
  if (!j.contains("ici")) fail(origin, where + ".ici", "missing");
  p.ici = parse_ici(j["ici"], origin, where + ".ici");
  return p;
}

json parse_text(const std::string& text, const std::string& origin) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw ConfigError(fmt::format("{}: not valid JSON: {}", origin, e.what()));
  }
}

std::string read_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw ConfigError(fmt::format("{}: cannot open config file", file.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::filesystem::path default_config_path() {
  if (const char* env = std::getenv("TENSORPOD_CONFIG"); env && *env) return env;
  return std::filesystem::path(TP_SOURCE_DIR) / "configs" / "presets.json";
}

std::vector<Preset> parse_presets(const std::string& json_text, const std::string& origin) {
  const json root = parse_text(json_text, origin);
  check_keys(root, {"default", "presets"}, origin, "(top)");
  if (!root.contains("presets") || !root["presets"].is_object() || root["presets"].empty())
    fail(origin, "presets", "missing or empty");
  std::vector<Preset> out;
  for (const auto& [name, body] : root["presets"].items()) out.push_back(parse_one(name, body, origin));
  const std::string def = default_preset_name(json_text, origin);
  if (!root["presets"].contains(def)) fail(origin, "default", fmt::format("names unknown preset '{}'", def));
  return out;
}

std::string default_preset_name(const std::string& json_text, const std::string& origin) {
  const json root = parse_text(json_text, origin);
  if (!root.contains("default") || !root["default"].is_string()) fail(origin, "default", "missing or not a string");
  return root["default"].get<std::string>();
}

std::vector<Preset> load_presets(const std::filesystem::path& file) {
  return parse_presets(read_file(file), file.string());
}

Preset load_preset(const std::string& name, const std::filesystem::path& file) {
  const std::string text = read_file(file);
  const auto presets = parse_presets(text, file.string());
  const std::string want = name.empty() ? default_preset_name(text, file.string()) : name;
  std::string known;
  for (const auto& p : presets) {
    if (p.name == want) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw ConfigError(fmt::format("{}: unknown preset '{}' (known presets: {})", file.string(), want, known));
}

std::string preset_json(const Preset& p) {
  json j = {{"name", p.name},
            {"description", p.description},
            {"clock_mhz", p.clock_mhz},
            {"mxu", {{"n", p.mxu.n}, {"acc_rows", p.mxu.acc_rows}}},
            {"ici",
             {{"torus", {p.ici.torus_x, p.ici.torus_y}},
              {"vcs", p.ici.vcs},
              {"buf_flits", p.ici.buf_flits},
              {"flit_bits", p.ici.flit_bits},
              {"replay_flits", p.ici.replay_flits},
              {"link_latency", p.ici.link_latency}}}};
  return j.dump();
}

}  // namespace tp
