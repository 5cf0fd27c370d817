// Presets: the shipped file is valid, and bad configs fail with messages that name the key.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "config.h"

namespace {

using tp::ConfigError;

std::string error_of(const std::string& json) {
  try {
    tp::parse_presets(json, "test.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Config, ShippedPresetsAreValid) {
  const auto presets = tp::load_presets();
  ASSERT_GE(presets.size(), 3u);
  EXPECT_EQ(tp::load_preset("tiny").mxu.n, 8u);
  EXPECT_EQ(tp::load_preset("small").mxu.n, 32u);
  EXPECT_EQ(tp::load_preset("v2").mxu.n, 128u);
  EXPECT_FALSE(tp::load_preset("").name.empty());  // the default preset exists
}

TEST(Config, UnknownPresetNamesItAndTheKnownOnes) {
  try {
    tp::load_preset("huge");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown preset 'huge'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tiny"), std::string::npos) << e.what();
  }
}

TEST(Config, UnknownKeyIsNamed) {
  const auto msg =
      error_of(R"({"default":"a","presets":{"a":{"clock_mhz":1,"mxu":{"n":8,"acc_rows":4,"m":2},"ici":{}}}})");
  EXPECT_NE(msg.find("presets.a.mxu.m: unknown key"), std::string::npos) << msg;
}

TEST(Config, ImpossibleValueIsNamed) {
  auto msg = error_of(R"({"default":"a","presets":{"a":{"clock_mhz":1,"mxu":{"n":1,"acc_rows":4},"ici":{}}}})");
  EXPECT_NE(msg.find("presets.a.mxu.n: 1 is out of range"), std::string::npos) << msg;
  msg = error_of(R"({"default":"a","presets":{"a":{"clock_mhz":-5,"mxu":{"n":8,"acc_rows":4}}}})");
  EXPECT_NE(msg.find("presets.a.clock_mhz"), std::string::npos) << msg;
  msg = error_of(R"({"default":"a","presets":{"a":{"clock_mhz":1,"mxu":{"n":"8","acc_rows":4}}}})");
  EXPECT_NE(msg.find("presets.a.mxu.n: expected an integer"), std::string::npos) << msg;
}

// A valid preset file whose ICI section has `key` set to `value` (JSON text).
std::string with_ici(const std::string& key = "", const std::string& value = "") {
  auto j = nlohmann::json::parse(R"({"default":"a","presets":{"a":{"clock_mhz":1,"mxu":{"n":8,"acc_rows":4},
      "ici":{"torus":[4,4],"vcs":2,"buf_flits":8,"flit_bits":64,"replay_flits":16,"link_latency":1}}}})");
  // The HBM section of the shipped small preset (the file's own values: nothing typed twice).
  const auto small = nlohmann::json::parse(tp::preset_json(tp::load_preset("small")));
  j["presets"]["a"]["hbm"] = small["hbm"];
  j["presets"]["a"]["chip"] = small["chip"];
  if (!key.empty()) j["presets"]["a"]["ici"][key] = nlohmann::json::parse(value);
  return j.dump();
}

TEST(Config, IciSectionIsValidated) {
  EXPECT_EQ(error_of(with_ici()), "");
  EXPECT_NE(error_of(with_ici("vcs", "3")).find("presets.a.ici.vcs: 3 is odd"), std::string::npos);
  EXPECT_NE(error_of(with_ici("torus", "[4,33]")).find("presets.a.ici.torus.y: 33 is out of range"), std::string::npos);
  EXPECT_NE(error_of(with_ici("torus", "4")).find("presets.a.ici.torus: expected [x, y]"), std::string::npos);
  EXPECT_NE(error_of(with_ici("replay_flits", "12")).find("not a power of two"), std::string::npos);
  EXPECT_NE(error_of(with_ici("buf_flits", "0")).find("presets.a.ici.buf_flits: 0 is out of range"), std::string::npos);
  EXPECT_NE(error_of(with_ici("lanes", "1")).find("presets.a.ici.lanes: unknown key"), std::string::npos);
}

TEST(Config, HbmSectionIsValidated) {
  auto with_hbm = [](const std::string& key, const std::string& value) {
    auto j = nlohmann::json::parse(with_ici());
    auto* node = &j["presets"]["a"]["hbm"];
    if (key.rfind("timing.", 0) == 0) node = &(*node)["timing"];
    (*node)[key.substr(key.rfind('.') + 1)] = nlohmann::json::parse(value);
    return j.dump();
  };
  EXPECT_NE(error_of(with_hbm("rows", "1000")).find("presets.a.hbm.rows: 1000 is not a power of two"),
            std::string::npos);
  EXPECT_NE(error_of(with_hbm("write_lo", "99")).find("presets.a.hbm.write_lo"), std::string::npos);
  EXPECT_NE(error_of(with_hbm("timing.trefi", "10")).find("presets.a.hbm.timing.trefi: 10 must exceed trfc"),
            std::string::npos);
  EXPECT_NE(error_of(with_hbm("timing.tXYZ", "1")).find("presets.a.hbm.timing.tXYZ: unknown key"), std::string::npos);
  EXPECT_NE(error_of(with_hbm("closed_page", "1")).find("presets.a.hbm.closed_page: missing or not true/false"),
            std::string::npos);
}

TEST(Config, BadDefaultAndBadJson) {
  auto bad_default = nlohmann::json::parse(with_ici());
  bad_default["default"] = "zz";
  EXPECT_NE(error_of(bad_default.dump()).find("unknown preset 'zz'"), std::string::npos);
  EXPECT_NE(error_of("{not json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"default":"a","presets":{"a":{"clock_mhz":1}}})").find("presets.a.mxu: missing"),
            std::string::npos);
}

TEST(Config, ChipSectionIsValidated) {
  auto with_chip = [](const std::string& key, const std::string& value) {
    auto j = nlohmann::json::parse(with_ici());
    j["presets"]["a"]["chip"][key] = nlohmann::json::parse(value);
    return j.dump();
  };
  EXPECT_NE(error_of(with_chip("sublanes", "8")).find("presets.a.chip.sublanes: 8 exceeds vmem_banks (4)"),
            std::string::npos);
  EXPECT_NE(
      error_of(with_chip("vmem_rows", "4095")).find("presets.a.chip.vmem_rows: 4095 is not a multiple of vmem_banks"),
      std::string::npos);
  EXPECT_NE(error_of(with_chip("queue", "1")).find("presets.a.chip.queue: 1 is out of range"), std::string::npos);
  EXPECT_NE(error_of(with_chip("lanes", "4")).find("presets.a.chip.lanes: unknown key"), std::string::npos);
  EXPECT_NE(error_of(with_chip("memory", "\"dram\"")).find("presets.a.chip.memory: \"dram\" is neither"),
            std::string::npos);
  auto on_hbm = nlohmann::json::parse(with_chip("memory", "\"hbm\""));
  EXPECT_EQ(error_of(on_hbm.dump()), "");
  on_hbm["presets"]["a"]["chip"]["hbm_beats"] = 1u << 30;
  EXPECT_NE(error_of(on_hbm.dump()).find("presets.a.chip.hbm_beats: 1073741824 beats of 1 bursts exceed the HBM"),
            std::string::npos);
  on_hbm["presets"]["a"]["chip"]["hbm_beats"] = 1024;
  on_hbm["presets"]["a"]["mxu"]["n"] = 12;
  EXPECT_NE(error_of(on_hbm.dump()).find("presets.a.chip.memory: \"hbm\" needs mxu.n = 8, 16, 32 or 64"),
            std::string::npos);
}

}  // namespace
