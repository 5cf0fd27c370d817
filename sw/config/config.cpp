#include "config.h"

#include <bit>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#ifndef TP_SOURCE_DIR
#error "TP_SOURCE_DIR must be defined by the build"
#endif

namespace tp {
namespace {

using nlohmann::json;

// What fail() throws: a ConfigError that keeps the key's path and the complaint, so that a message
// about a preset can add which base the offending value came from.
class KeyError : public ConfigError {
 public:
  KeyError(const std::string& origin, std::string where, std::string what)
      : ConfigError(fmt::format("{}: {}: {}", origin, where, what)), where_(std::move(where)), what_(std::move(what)) {}
  const std::string& where() const { return where_; }
  const std::string& what_text() const { return what_; }

 private:
  std::string where_, what_;
};

[[noreturn]] void fail(const std::string& origin, const std::string& where, const std::string& what) {
  throw KeyError(origin, where, what);
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

bool get_bool(const json& obj, const std::string& key, const std::string& origin, const std::string& where) {
  if (!obj.contains(key) || !obj.at(key).is_boolean()) fail(origin, where + "." + key, "missing or not true/false");
  return obj.at(key).get<bool>();
}

IciConfig parse_ici(const json& c, const std::string& origin, const std::string& where) {
  check_keys(c,
             {"torus", "vcs", "buf_flits", "flit_bits", "replay_flits", "link_latency", "sa_iters", "class_choice",
              "local_ports", "turn_room"},
             origin, where);
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
  // Optional (the router's plain allocator and one local port without them): switch-allocation
  // iterations, the class choice on uncrossed rings, the local ports (ICI send engines).
  if (c.contains("sa_iters")) ici.sa_iters = get_uint(c, "sa_iters", 1, 4, origin, where);
  if (c.contains("class_choice")) ici.class_choice = get_bool(c, "class_choice", origin, where);
  if (c.contains("local_ports")) ici.local_ports = get_uint(c, "local_ports", 1, 4, origin, where);
  if (c.contains("turn_room")) ici.turn_room = get_uint(c, "turn_room", 1, ici.buf_flits, origin, where);
  return ici;
}

unsigned get_pow2(const json& obj, const std::string& key, unsigned lo, unsigned hi, const std::string& origin,
                  const std::string& where) {
  const unsigned v = get_uint(obj, key, lo, hi, origin, where);
  if ((v & (v - 1)) != 0) fail(origin, where + "." + key, fmt::format("{} is not a power of two", v));
  return v;
}

HbmConfig parse_hbm(const json& c, const std::string& origin, const std::string& where) {
  check_keys(
      c,
      {"channels", "pseudo_channels", "bank_groups", "banks_per_group", "rows", "columns", "queue", "write_queue",
       "write_hi", "write_lo", "starve_limit", "closed_page", "bank_interleave", "refresh", "timing"},
      origin, where);
  HbmConfig h;
  h.channels = get_uint(c, "channels", 1, 16, origin, where);
  h.pseudo_channels = get_uint(c, "pseudo_channels", 1, 2, origin, where);
  if (!std::has_single_bit(h.channels))  // pseudo-channels are picked by address bits
    fail(origin, where + ".channels", fmt::format("{} is not a power of two", h.channels));
  h.bank_groups = get_pow2(c, "bank_groups", 1, 8, origin, where);
  h.banks_per_group = get_pow2(c, "banks_per_group", 1, 8, origin, where);
  h.rows = get_pow2(c, "rows", 16, 1u << 20, origin, where);
  h.columns = get_pow2(c, "columns", 8, 128, origin, where);
  h.queue = get_uint(c, "queue", 2, 64, origin, where);
  h.write_queue = get_uint(c, "write_queue", 0, 64, origin, where);
  h.write_hi = get_uint(c, "write_hi", 1, h.write_queue ? h.write_queue : h.queue, origin, where);
  h.write_lo = get_uint(c, "write_lo", 0, h.write_hi - 1, origin, where);
  h.starve_limit = get_uint(c, "starve_limit", 16, 1u << 20, origin, where);
  h.closed_page = get_bool(c, "closed_page", origin, where);
  h.bank_interleave = get_bool(c, "bank_interleave", origin, where);
  if (!c.contains("refresh") || !c["refresh"].is_string()) fail(origin, where + ".refresh", "missing or not a string");
  const std::string refresh = c["refresh"].get<std::string>();
  if (refresh != "all_bank" && refresh != "per_bank")
    fail(origin, where + ".refresh", fmt::format("\"{}\" is neither \"all_bank\" nor \"per_bank\"", refresh));
  h.per_bank_refresh = refresh == "per_bank";
  if (!c.contains("timing")) fail(origin, where + ".timing", "missing");
  const json& t = c["timing"];
  const std::string tw = where + ".timing";
  check_keys(t,
             {"cl", "cwl", "trcd", "trp", "tras", "trc", "tccd_s", "tccd_l", "trrd_s", "trrd_l", "tfaw", "twtr_s",
              "twtr_l", "trtp", "twr", "trfc", "trefi", "trfcsb", "trrefd"},
             origin, tw);
  auto& x = h.timing;
  for (auto [key, field] : std::initializer_list<std::pair<const char*, unsigned*>>{{"cl", &x.cl},
                                                                                    {"cwl", &x.cwl},
                                                                                    {"trcd", &x.trcd},
                                                                                    {"trp", &x.trp},
                                                                                    {"tras", &x.tras},
                                                                                    {"trc", &x.trc},
                                                                                    {"tccd_s", &x.tccd_s},
                                                                                    {"tccd_l", &x.tccd_l},
                                                                                    {"trrd_s", &x.trrd_s},
                                                                                    {"trrd_l", &x.trrd_l},
                                                                                    {"tfaw", &x.tfaw},
                                                                                    {"twtr_s", &x.twtr_s},
                                                                                    {"twtr_l", &x.twtr_l},
                                                                                    {"trtp", &x.trtp},
                                                                                    {"twr", &x.twr},
                                                                                    {"trfc", &x.trfc},
                                                                                    {"trefi", &x.trefi},
                                                                                    {"trfcsb", &x.trfcsb},
                                                                                    {"trrefd", &x.trrefd}})
    *field = get_uint(t, key, 1, 100000, origin, tw);
  if (x.trefi <= x.trfc) fail(origin, tw + ".trefi", fmt::format("{} must exceed trfc ({})", x.trefi, x.trfc));
  if (x.trfcsb > x.trfc)
    fail(origin, tw + ".trfcsb",
         fmt::format("{} exceeds trfc ({}): one bank refreshes faster than all", x.trfcsb, x.trfc));
  // Per-bank: a single-bank refresh every trefi / banks cycles, each followed by trrefd cycles
  // without an activate (and tRP, tRFCSB on its bank): the interval must hold it.
  const unsigned every = x.trefi / (h.bank_groups * h.banks_per_group);
  if (h.per_bank_refresh && every <= x.trrefd + 1)
    fail(origin, tw + ".trefi",
         fmt::format("per-bank refresh: trefi / banks = {} cycles between single-bank refreshes, not more than "
                     "trrefd + 1 ({})",
                     every, x.trrefd + 1));
  return h;
}

// `j` is the preset after inheritance (resolve_preset): no "base" key left.
Preset parse_one(const std::string& name, const json& j, const std::string& origin) {
  const std::string where = "presets." + name;
  check_keys(j, {"description", "clock_mhz", "mxu", "chip", "ici", "hbm"}, origin, where);
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
  // The ISA's address fields bound the memories (docs/isa.md): VMEM rows and accumulator rows
  // are 15-bit fields, HBM beats 28 bits, branch targets 20 bits.
  p.mxu.acc_rows = get_uint(m, "acc_rows", 1, 1u << 15, origin, where + ".mxu");
  if (!j.contains("chip")) fail(origin, where + ".chip", "missing");
  const json& c = j["chip"];
  const std::string cw = where + ".chip";
  check_keys(
      c, {"vmem_rows", "sublanes", "vmem_banks", "imem_words", "queue", "memory", "mem_latency", "hbm_beats", "hbm"},
      origin, cw);
  p.chip.vmem_rows = get_uint(c, "vmem_rows", 16, 1u << 15, origin, cw);
  p.chip.vmem_banks = get_uint(c, "vmem_banks", 1, 64, origin, cw);
  p.chip.sublanes = get_uint(c, "sublanes", 1, 16, origin, cw);
  if (p.chip.sublanes > p.chip.vmem_banks)
    fail(
        origin, cw + ".sublanes",
        fmt::format("{} exceeds vmem_banks ({}): each sublane needs its own bank", p.chip.sublanes, p.chip.vmem_banks));
  p.chip.imem_words = get_uint(c, "imem_words", 16, 1u << 20, origin, cw);
  p.chip.queue = get_uint(c, "queue", 2, 64, origin, cw);
  p.chip.mem_latency = get_uint(c, "mem_latency", 1, 1000, origin, cw);
  if (!c.contains("memory") || !c["memory"].is_string()) fail(origin, cw + ".memory", "missing or not a string");
  p.chip.memory = c["memory"].get<std::string>();
  if (p.chip.memory != "hbm" && p.chip.memory != "model")
    fail(origin, cw + ".memory", fmt::format("\"{}\" is neither \"hbm\" nor \"model\"", p.chip.memory));
  p.chip.hbm_beats = get_uint(c, "hbm_beats", 16, 1u << 28, origin, cw);
  if (p.chip.vmem_rows % p.chip.vmem_banks != 0)
    fail(origin, cw + ".vmem_rows",
         fmt::format("{} is not a multiple of vmem_banks ({})", p.chip.vmem_rows, p.chip.vmem_banks));
  if (p.chip.vmem_rows < 2 * p.mxu.n)
    fail(origin, cw + ".vmem_rows",
         fmt::format("{} is less than two weight tiles (2 x mxu.n = {})", p.chip.vmem_rows, 2 * p.mxu.n));
  if (!j.contains("ici")) fail(origin, where + ".ici", "missing");
  p.ici = parse_ici(j["ici"], origin, where + ".ici");
  if (!j.contains("hbm")) fail(origin, where + ".hbm", "missing");
  p.hbm = parse_hbm(j["hbm"], origin, where + ".hbm");
  p.chip.hbm = p.hbm;
  if (c.contains("hbm")) {  // overrides of the hbm section for the chip's own controllers
    if (!c["hbm"].is_object()) fail(origin, cw + ".hbm", "expected an object (overrides of the hbm section)");
    json merged = j["hbm"];
    merged.merge_patch(c["hbm"]);
    p.chip.hbm = parse_hbm(merged, origin, cw + ".hbm");
  }
  if (p.chip.memory == "hbm") {
    // A beat is mxu.n / 8 whole 32-byte bursts, a power of two up to 64; up to 8 lie in one 8-burst
    // block of a pseudo-channel, a wider beat spans n / 64 blocks on as many pseudo-channels
    // (rtl/chip/tp_mem_hbm.sv); and every beat must exist in the HBM.
    // (mxu.n is at most 256 here, 32 bursts; the port itself takes up to 64.)
    if (p.mxu.n % 8 != 0 || !std::has_single_bit(p.mxu.n / 8))
      fail(origin, where + ".chip.memory",
           fmt::format("\"hbm\" needs mxu.n = 8, 16, 32, 64, 128 or 256 (a beat of a power of two of bursts), not {}",
                       p.mxu.n));
    const HbmConfig& h = p.chip.hbm;
    if (p.mxu.n > 64 && p.mxu.n / 64 > h.channels * h.pseudo_channels)
      fail(origin, where + ".chip.memory",
           fmt::format(
               "\"hbm\": a beat of mxu.n = {} lanes spans {} pseudo-channels, and the HBM has {} ({} channels x {})",
               p.mxu.n, p.mxu.n / 64, h.channels * h.pseudo_channels, h.channels, h.pseudo_channels));
    const uint64_t bursts =
        uint64_t{h.channels} * h.pseudo_channels * h.bank_groups * h.banks_per_group * h.rows * h.columns;
    if (p.chip.hbm_beats * (p.mxu.n / 8) > bursts)
      fail(origin, where + ".chip.hbm_beats",
           fmt::format("{} beats of {} bursts exceed the HBM's {} bursts", p.chip.hbm_beats, p.mxu.n / 8, bursts));
  }
  return p;
}

// ---- Inheritance: a preset (or a base) may name a base ("base": "<name>"), an entry of the
// top-level "bases" object (abstract: not a preset itself) or another preset.

std::string names_of(const json& obj) {
  std::string list;
  for (const auto& [name, body] : obj.items()) list += (list.empty() ? "" : ", ") + name;
  return list.empty() ? "none" : list;
}

// The entry called `name`: its path in the file ("bases.test", "presets.tiny") and its body, or
// nullptr when neither "bases" nor "presets" has it (parse_presets keeps the two apart).
const json* find_entry(const json& root, const std::string& name, std::string& where) {
  for (const char* group : {"bases", "presets"}) {
    if (root.contains(group) && root[group].contains(name)) {
      where = fmt::format("{}.{}", group, name);
      return &root[group][name];
    }
  }
  return nullptr;
}

// `value` with every leaf (scalar or array) replaced by `source`: where each value came from.
json sources_of(const json& value, const std::string& source) {
  if (!value.is_object()) return source;
  json out = json::object();
  for (const auto& [key, v] : value.items()) out[key] = sources_of(v, source);
  return out;
}

// Merges `over` into `into`: a key of `over` replaces the same key of `into`, except that two
// objects merge key by key (recursively); arrays and scalars replace. `sources` mirrors `into`.
void merge_over(json& into, json& sources, const json& over, const std::string& source) {
  for (const auto& [key, value] : over.items()) {
    if (value.is_object() && into.contains(key) && into[key].is_object()) {
      merge_over(into[key], sources[key], value, source);
    } else {
      into[key] = value;
      sources[key] = sources_of(value, source);
    }
  }
}

// Preset `name` with its chain of bases merged in: the most distant base first, the preset last.
// `sources` gets, for every leaf, the base it came from ("base 'test'", "preset 'small'") or ""
// for the preset's own values.
json resolve_preset(const json& root, const std::string& name, const std::string& origin, json& sources) {
  std::vector<std::string> chain{name};  // names, the preset first
  std::vector<std::pair<std::string, const json*>> entries{{"presets." + name, &root["presets"][name]}};
  for (;;) {
    const std::string where = entries.back().first;
    const json* body = entries.back().second;
    if (!body->is_object()) fail(origin, where, "expected an object");
    if (!body->contains("base")) break;
    const json& b = (*body)["base"];
    if (!b.is_string() || b.get<std::string>().empty())
      fail(origin, where + ".base", fmt::format("expected the name of a base, got {}", b.dump()));
    const std::string base = b.get<std::string>();
    std::string text;
    for (const auto& n : chain) text += n + " -> ";
    text += base;
    if (std::find(chain.begin(), chain.end(), base) != chain.end())
      fail(origin, "presets." + name + ".base", fmt::format("the base chain {} is a cycle", text));
    std::string base_where;
    const json* base_body = find_entry(root, base, base_where);
    if (!base_body) {
      const std::string via = entries.size() > 1 ? fmt::format(" (preset '{}' inherits {})", name, text) : "";
      fail(origin, where + ".base",
           fmt::format("unknown base '{}'{}: it is neither in bases ({}) nor in presets ({})", base, via,
                       names_of(root.value("bases", json::object())), names_of(root["presets"])));
    }
    chain.push_back(base);
    entries.emplace_back(base_where, base_body);
  }
  json out = json::object();
  sources = json::object();
  for (std::size_t k = entries.size(); k-- > 0;) {
    json body = *entries[k].second;
    body.erase("base");
    const std::string& where = entries[k].first;
    const std::string source =
        k == 0 ? "" : fmt::format("{} '{}'", where.rfind("bases.", 0) == 0 ? "base" : "preset", chain[k]);
    merge_over(out, sources, body, source);
  }
  return out;
}

// The base that the value at `where` ("presets.tiny.hbm.timing.trefi") came from, or "" when the
// preset sets it itself (or it is missing).
std::string inherited_from(const json& sources, const std::string& where, const std::string& prefix) {
  if (where.rfind(prefix + ".", 0) != 0) return "";
  const json* node = &sources;
  std::stringstream path(where.substr(prefix.size() + 1));
  for (std::string key; std::getline(path, key, '.');) {
    if (node->is_string()) break;  // an array's element (ici.torus.y): the array's source
    if (!node->is_object() || !node->contains(key)) return "";
    node = &(*node)[key];
  }
  return node->is_string() ? node->get<std::string>() : "";
}

// " at line L, column C" of the first place in `text` where the number `token` stands as a value
// (after ':', ',' or '[', and not followed by more of a number), or "" if there is none.
std::string number_position(const std::string& text, const std::string& token) {
  for (size_t at = text.find(token); at != std::string::npos; at = text.find(token, at + 1)) {
    size_t b = at;
    while (b > 0 && std::isspace(static_cast<unsigned char>(text[b - 1]))) --b;
    const size_t after = at + token.size();
    const bool starts = b > 0 && (text[b - 1] == ':' || text[b - 1] == ',' || text[b - 1] == '[');
    const bool ends =
        after == text.size() || std::string_view("0123456789.eE+-").find(text[after]) == std::string_view::npos;
    if (!starts || !ends) continue;
    const size_t line =
        1 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    const size_t line_start = text.rfind('\n', at);
    return fmt::format(" at line {}, column {}", line, line_start == std::string::npos ? at + 1 : at - line_start);
  }
  return "";
}

json parse_text(const std::string& text, const std::string& origin) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw ConfigError(fmt::format("{}: not valid JSON: {}", origin, e.what()));
  } catch (const json::out_of_range& e) {
    // A number too large for a double (1e400): nlohmann's message quotes it ("number overflow
    // parsing '1e400'") but has no position, so find that number's line and column here.
    const std::string msg = e.what();
    const size_t q = msg.find("parsing '"), end = msg.rfind('\'');
    const std::string where =
        q != std::string::npos && end > q + 9 ? number_position(text, msg.substr(q + 9, end - q - 9)) : "";
    throw ConfigError(fmt::format("{}: not valid JSON{}: {}", origin, where, msg));
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
  check_keys(root, {"comment", "default", "bases", "presets"}, origin, "(top)");
  if (!root.contains("presets") || !root["presets"].is_object() || root["presets"].empty())
    fail(origin, "presets", "missing or empty");
  if (root.contains("bases")) {
    if (!root["bases"].is_object()) fail(origin, "bases", "expected an object");
    for (const auto& [name, body] : root["bases"].items()) {
      if (root["presets"].contains(name))
        fail(origin, "bases." + name, fmt::format("'{}' is a preset too (a name is either a base or a preset)", name));
    }
  }
  std::vector<Preset> out;
  for (const auto& [name, body] : root["presets"].items()) {
    json sources;
    const json resolved = resolve_preset(root, name, origin, sources);
    try {
      out.push_back(parse_one(name, resolved, origin));
    } catch (const KeyError& e) {
      const std::string from = inherited_from(sources, e.where(), "presets." + name);
      if (from.empty()) throw;
      fail(origin, e.where(), fmt::format("{} (inherited from {})", e.what_text(), from));
    }
  }
  const std::string def = default_preset_name(json_text, origin);
  if (!root["presets"].contains(def)) {
    const bool base = root.contains("bases") && root["bases"].contains(def);
    fail(origin, "default",
         fmt::format("names unknown preset '{}'{}", def, base ? " (it is a base, not a preset)" : ""));
  }
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
  const json root = parse_text(text, file.string());
  const bool base = root.contains("bases") && root["bases"].contains(want);
  throw ConfigError(fmt::format("{}: unknown preset '{}' ({}known presets: {})", file.string(), want,
                                base ? "bases." + want + " is only a base for presets to inherit from; " : "", known));
}

// ---------------------------------------------------------------------------------------------
// Pods

namespace {

// [a, b] of integers in [lo, hi]; at is the key's path.
std::pair<unsigned, unsigned> get_pair(const json& obj, const std::string& key, unsigned lo, unsigned hi,
                                       const std::string& origin, const std::string& where, const char* a,
                                       const char* b) {
  const std::string at = where + "." + key;
  if (!obj.contains(key)) fail(origin, at, "missing");
  const json& v = obj.at(key);
  if (!v.is_array() || v.size() != 2 || !v[0].is_number_integer() || !v[1].is_number_integer())
    fail(origin, at, fmt::format("expected [{}, {}], got {}", a, b, v.dump()));
  const json dims = {{a, v[0]}, {b, v[1]}};
  return {get_uint(dims, a, lo, hi, origin, at), get_uint(dims, b, lo, hi, origin, at)};
}

std::string get_string(const json& obj, const std::string& key, const std::string& origin, const std::string& where) {
  if (!obj.contains(key) || !obj.at(key).is_string()) fail(origin, where + "." + key, "missing or not a string");
  return obj.at(key).get<std::string>();
}

std::string slice_text(const PodSlice& s) {
  return fmt::format("'{}' [{}, {}) x [{}, {})", s.name, s.x0, s.x0 + s.w, s.y0, s.y0 + s.h);
}

PodConfig parse_pod(const std::string& name, const json& j, const std::string& origin,
                    const std::vector<std::string>& presets) {
  const std::string where = "pods." + name;
  check_keys(j, {"description", "torus", "preset", "link_latency", "host_board", "slices"}, origin, where);
  PodConfig p;
  p.name = name;
  if (j.contains("description")) p.description = get_string(j, "description", origin, where);
  std::tie(p.torus_x, p.torus_y) = get_pair(j, "torus", 1, 32, origin, where, "x", "y");
  p.preset = get_string(j, "preset", origin, where);
  if (std::find(presets.begin(), presets.end(), p.preset) == presets.end()) {
    std::string known;
    for (const auto& n : presets) known += (known.empty() ? "" : ", ") + n;
    fail(origin, where + ".preset", fmt::format("unknown preset '{}' (known presets: {})", p.preset, known));
  }
  p.link_latency = get_uint(j, "link_latency", 1, 64, origin, where);
  std::tie(p.board_x, p.board_y) = get_pair(j, "host_board", 1, 32, origin, where, "x", "y");
  if (p.torus_x % p.board_x != 0 || p.torus_y % p.board_y != 0)
    fail(origin, where + ".host_board",
         fmt::format("[{}, {}] does not divide the torus [{}, {}]", p.board_x, p.board_y, p.torus_x, p.torus_y));
  if (!j.contains("slices") || !j["slices"].is_array() || j["slices"].empty())
    fail(origin, where + ".slices", "missing, not a list or empty");
  for (std::size_t k = 0; k < j["slices"].size(); ++k) {
    const std::string sw = fmt::format("{}.slices[{}]", where, k);
    const json& js = j["slices"][k];
    check_keys(js, {"name", "origin", "shape"}, origin, sw);
    PodSlice s;
    s.name = get_string(js, "name", origin, sw);
    if (s.name.empty()) fail(origin, sw + ".name", "empty");
    std::tie(s.x0, s.y0) = get_pair(js, "origin", 0, 31, origin, sw, "x", "y");
    std::tie(s.w, s.h) = get_pair(js, "shape", 1, 32, origin, sw, "w", "h");
    if (s.x0 + s.w > p.torus_x || s.y0 + s.h > p.torus_y)
      fail(origin, sw, fmt::format("slice {} runs outside the {}x{} torus", slice_text(s), p.torus_x, p.torus_y));
    for (std::size_t o = 0; o < p.slices.size(); ++o) {
      const PodSlice& t = p.slices[o];
      if (t.name == s.name) fail(origin, sw + ".name", fmt::format("'{}' names slices[{}] too", s.name, o));
      if (s.x0 < t.x0 + t.w && t.x0 < s.x0 + s.w && s.y0 < t.y0 + t.h && t.y0 < s.y0 + s.h)
        fail(origin, sw, fmt::format("slice {} overlaps slices[{}] {}", slice_text(s), o, slice_text(t)));
    }
    p.slices.push_back(s);
  }
  return p;
}

}  // namespace

std::filesystem::path default_pod_config_path() {
  if (const char* env = std::getenv("TENSORPOD_PODS"); env && *env) return env;
  return std::filesystem::path(TP_SOURCE_DIR) / "configs" / "pods.json";
}

std::vector<PodConfig> parse_pods(const std::string& json_text, const std::string& origin,
                                  const std::vector<std::string>& presets) {
  const json root = parse_text(json_text, origin);
  check_keys(root, {"comment", "default", "pods"}, origin, "(top)");
  if (!root.contains("pods") || !root["pods"].is_object() || root["pods"].empty())
    fail(origin, "pods", "missing or empty");
  std::vector<PodConfig> out;
  for (const auto& [name, body] : root["pods"].items()) out.push_back(parse_pod(name, body, origin, presets));
  const std::string def = default_pod_name(json_text, origin);
  if (!root["pods"].contains(def)) fail(origin, "default", fmt::format("names unknown pod '{}'", def));
  return out;
}

std::string default_pod_name(const std::string& json_text, const std::string& origin) {
  const json root = parse_text(json_text, origin);
  if (!root.contains("default") || !root["default"].is_string()) fail(origin, "default", "missing or not a string");
  return root["default"].get<std::string>();
}

namespace {
std::vector<std::string> preset_names(const std::filesystem::path& presets) {
  std::vector<std::string> names;
  for (const Preset& p : load_presets(presets)) names.push_back(p.name);
  return names;
}
}  // namespace

std::vector<PodConfig> load_pods(const std::filesystem::path& file, const std::filesystem::path& presets) {
  return parse_pods(read_file(file), file.string(), preset_names(presets));
}

PodConfig load_pod(const std::string& name, const std::filesystem::path& file, const std::filesystem::path& presets) {
  const std::string text = read_file(file);
  const auto pods = parse_pods(text, file.string(), preset_names(presets));
  const std::string want = name.empty() ? default_pod_name(text, file.string()) : name;
  std::string known;
  for (const auto& p : pods) {
    if (p.name == want) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw ConfigError(fmt::format("{}: unknown pod '{}' (known pods: {})", file.string(), want, known));
}

std::string pod_json(const PodConfig& p) {
  json slices = json::array();
  for (const PodSlice& s : p.slices)
    slices.push_back({{"name", s.name}, {"origin", {s.x0, s.y0}}, {"shape", {s.w, s.h}}});
  return json{{"name", p.name},     {"description", p.description},   {"torus", {p.torus_x, p.torus_y}},
              {"preset", p.preset}, {"link_latency", p.link_latency}, {"host_board", {p.board_x, p.board_y}},
              {"slices", slices}}
      .dump();
}

namespace {

// An HBM section as presets.json spells it.
json hbm_json(const HbmConfig& h) {
  return {{"channels", h.channels},
          {"pseudo_channels", h.pseudo_channels},
          {"bank_groups", h.bank_groups},
          {"banks_per_group", h.banks_per_group},
          {"rows", h.rows},
          {"columns", h.columns},
          {"queue", h.queue},
          {"write_queue", h.write_queue},
          {"write_hi", h.write_hi},
          {"write_lo", h.write_lo},
          {"starve_limit", h.starve_limit},
          {"closed_page", h.closed_page},
          {"bank_interleave", h.bank_interleave},
          {"refresh", h.per_bank_refresh ? "per_bank" : "all_bank"},
          {"timing",
           {{"cl", h.timing.cl},
            {"cwl", h.timing.cwl},
            {"trcd", h.timing.trcd},
            {"trp", h.timing.trp},
            {"tras", h.timing.tras},
            {"trc", h.timing.trc},
            {"tccd_s", h.timing.tccd_s},
            {"tccd_l", h.timing.tccd_l},
            {"trrd_s", h.timing.trrd_s},
            {"trrd_l", h.timing.trrd_l},
            {"tfaw", h.timing.tfaw},
            {"twtr_s", h.timing.twtr_s},
            {"twtr_l", h.timing.twtr_l},
            {"trtp", h.timing.trtp},
            {"twr", h.timing.twr},
            {"trfc", h.timing.trfc},
            {"trefi", h.timing.trefi},
            {"trfcsb", h.timing.trfcsb},
            {"trrefd", h.timing.trrefd}}}};
}

}  // namespace

std::string preset_json(const Preset& p) {
  json j = {{"name", p.name},
            {"description", p.description},
            {"clock_mhz", p.clock_mhz},
            {"mxu", {{"n", p.mxu.n}, {"acc_rows", p.mxu.acc_rows}}},
            {"chip",
             {{"vmem_rows", p.chip.vmem_rows},
              {"sublanes", p.chip.sublanes},
              {"vmem_banks", p.chip.vmem_banks},
              {"imem_words", p.chip.imem_words},
              {"queue", p.chip.queue},
              {"memory", p.chip.memory},
              {"mem_latency", p.chip.mem_latency},
              {"hbm_beats", p.chip.hbm_beats},
              {"hbm", hbm_json(p.chip.hbm)}}},
            {"hbm", hbm_json(p.hbm)},
            {"ici",
             {{"torus", {p.ici.torus_x, p.ici.torus_y}},
              {"vcs", p.ici.vcs},
              {"buf_flits", p.ici.buf_flits},
              {"flit_bits", p.ici.flit_bits},
              {"replay_flits", p.ici.replay_flits},
              {"link_latency", p.ici.link_latency},
              {"sa_iters", p.ici.sa_iters},
              {"class_choice", p.ici.class_choice},
              {"local_ports", p.ici.local_ports},
              {"turn_room", p.ici.turn_room}}}};
  return j.dump();
}

}  // namespace tp
