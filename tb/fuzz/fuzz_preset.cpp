// Fuzz target: the preset and pod loaders (sw/config: parse_presets, default_preset_name,
// parse_pods, default_pod_name) on arbitrary text. ConfigError is the expected outcome for a bad
// file. A preset or pod they accept must come back unchanged when its JSON (preset_json,
// pod_json, as the reports echo it) is loaded again as a file of its own. Any other exception, a
// crash, a leak or UB is a finding.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config.h"
#include "fuzz_util.h"

namespace {

using nlohmann::json;

// {"default": name, "<group>": {name: body}}, body being the JSON of one entry without its name.
std::string file_of(const std::string& group, const std::string& entry_json) {
  json body = json::parse(entry_json);
  const std::string name = body.at("name").get<std::string>();
  body.erase("name");
  return json{{"default", name}, {group, {{name, body}}}}.dump();
}

void presets(const std::string& text) {
  std::vector<tp::Preset> all;
  try {
    all = tp::parse_presets(text, "fuzz.json");
    tp::default_preset_name(text, "fuzz.json");
  } catch (const tp::ConfigError&) {
    return;
  }
  for (const tp::Preset& p : all) {
    const std::string pj = tp::preset_json(p);
    try {
      const auto again = tp::parse_presets(file_of("presets", pj), "fuzz.again.json");
      if (again.size() != 1 || tp::preset_json(again[0]) != pj)
        tp::fuzz::fail("preset '{}' changes when its JSON is loaded again:\n{}\n{}", p.name, pj,
                       again.empty() ? "" : tp::preset_json(again[0]));
    } catch (const tp::ConfigError& e) {
      tp::fuzz::fail("the JSON of accepted preset '{}' is refused: {}\n{}", p.name, e.what(), pj);
    }
  }
}

void pods(const std::string& text) {
  static const std::vector<std::string> names = {"tiny", "small", "odd", "v2"};
  std::vector<tp::PodConfig> all;
  try {
    all = tp::parse_pods(text, "fuzz.json", names);
    tp::default_pod_name(text, "fuzz.json");
  } catch (const tp::ConfigError&) {
    return;
  }
  for (const tp::PodConfig& p : all) {
    const std::string pj = tp::pod_json(p);
    try {
      const auto again = tp::parse_pods(file_of("pods", pj), "fuzz.again.json", names);
      if (again.size() != 1 || tp::pod_json(again[0]) != pj)
        tp::fuzz::fail("pod '{}' changes when its JSON is loaded again:\n{}\n{}", p.name, pj,
                       again.empty() ? "" : tp::pod_json(again[0]));
    } catch (const tp::ConfigError& e) {
      tp::fuzz::fail("the JSON of accepted pod '{}' is refused: {}\n{}", p.name, e.what(), pj);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(tp::fuzz::text_of(data, size));
  presets(text);
  pods(text);
  return 0;
}
