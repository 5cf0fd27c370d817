// Presets and pods: the shipped files are valid, and bad configs fail with messages that name the
// key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
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
  // The allocator's optional keys: defaults without them, ranges and types with them.
  const auto plain = tp::parse_presets(with_ici(), "t.json").at(0).ici;
  EXPECT_EQ(plain.sa_iters, 1u);
  EXPECT_FALSE(plain.class_choice);
  EXPECT_EQ(plain.local_ports, 1u);
  EXPECT_EQ(plain.turn_room, 1u);
  const auto shipped = tp::load_preset("small").ici;
  EXPECT_EQ(shipped.sa_iters, 2u);
  EXPECT_TRUE(shipped.class_choice);
  EXPECT_EQ(shipped.local_ports, 4u);
  EXPECT_EQ(shipped.turn_room, 2u);
  EXPECT_NE(error_of(with_ici("sa_iters", "0")).find("presets.a.ici.sa_iters: 0 is out of range [1, 4]"),
            std::string::npos);
  EXPECT_NE(error_of(with_ici("sa_iters", "5")).find("presets.a.ici.sa_iters: 5 is out of range"), std::string::npos);
  EXPECT_NE(error_of(with_ici("class_choice", "1")).find("presets.a.ici.class_choice: missing or not true/false"),
            std::string::npos);
  EXPECT_NE(error_of(with_ici("local_ports", "0")).find("presets.a.ici.local_ports: 0 is out of range [1, 4]"),
            std::string::npos);
  EXPECT_NE(error_of(with_ici("turn_room", "0")).find("presets.a.ici.turn_room: 0 is out of range [1, "),
            std::string::npos);
  EXPECT_NE(error_of(with_ici("turn_room", "99")).find("presets.a.ici.turn_room: 99 is out of range [1, "),
            std::string::npos);
  EXPECT_NE(error_of(with_ici("local_ports", "5")).find("presets.a.ici.local_ports: 5 is out of range [1, 4]"),
            std::string::npos);
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
  EXPECT_NE(error_of(with_hbm("write_queue", "65")).find("presets.a.hbm.write_queue: 65 is out of range [0, 64]"),
            std::string::npos);
  EXPECT_NE(error_of(with_hbm("write_queue", "4")).find("presets.a.hbm.write_hi: 6 is out of range [1, 4]"),
            std::string::npos);  // the watermarks count the write buffer's entries when it has its own
  EXPECT_NE(error_of(with_hbm("starve_limit", "8")).find("presets.a.hbm.starve_limit: 8 is out of range"),
            std::string::npos);
  EXPECT_NE(error_of(with_hbm("timing.trefi", "10")).find("presets.a.hbm.timing.trefi: 10 must exceed trfc"),
            std::string::npos);
  EXPECT_NE(error_of(with_hbm("timing.tXYZ", "1")).find("presets.a.hbm.timing.tXYZ: unknown key"), std::string::npos);
  EXPECT_NE(error_of(with_hbm("closed_page", "1")).find("presets.a.hbm.closed_page: missing or not true/false"),
            std::string::npos);
  EXPECT_NE(error_of(with_hbm("refresh", "\"sometimes\"")).find("presets.a.hbm.refresh: \"sometimes\" is neither"),
            std::string::npos);
  EXPECT_NE(error_of(with_hbm("refresh", "true")).find("presets.a.hbm.refresh: missing or not a string"),
            std::string::npos);
  EXPECT_NE(error_of(with_hbm("timing.trfcsb", "99999")).find("presets.a.hbm.timing.trfcsb: 99999 exceeds trfc"),
            std::string::npos);
  // Per-bank: a single-bank refresh every trefi / 16 banks cycles must leave room for trrefd.
  auto per_bank = nlohmann::json::parse(with_hbm("refresh", "\"per_bank\""));
  per_bank["presets"]["a"]["hbm"]["timing"]["trefi"] = 120;
  per_bank["presets"]["a"]["hbm"]["timing"]["trfc"] = 40;
  per_bank["presets"]["a"]["hbm"]["timing"]["trfcsb"] = 24;
  EXPECT_NE(error_of(per_bank.dump()).find("presets.a.hbm.timing.trefi: per-bank refresh: trefi / banks = 7 cycles"),
            std::string::npos)
      << error_of(per_bank.dump());
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
  // The ISA's address fields bound the memories (docs/isa.md): VMEM rows and accumulator rows
  // fit 15-bit fields (up to 2^15 of them), HBM beats 28 bits.
  EXPECT_EQ(error_of(with_chip("vmem_rows", "32768")), "");
  EXPECT_NE(
      error_of(with_chip("vmem_rows", "32772")).find("presets.a.chip.vmem_rows: 32772 is out of range [16, 32768]"),
      std::string::npos);
  EXPECT_NE(error_of(with_chip("hbm_beats", "268435457"))
                .find("presets.a.chip.hbm_beats: 268435457 is out of range [16, 268435456]"),
            std::string::npos);
  {
    auto j = nlohmann::json::parse(with_ici());
    j["presets"]["a"]["mxu"]["acc_rows"] = 1u << 15;
    EXPECT_EQ(error_of(j.dump()), "");
    j["presets"]["a"]["mxu"]["acc_rows"] = (1u << 15) + 1;
    EXPECT_NE(error_of(j.dump()).find("presets.a.mxu.acc_rows: 32769 is out of range [1, 32768]"), std::string::npos);
  }
  EXPECT_NE(error_of(with_chip("memory", "\"dram\"")).find("presets.a.chip.memory: \"dram\" is neither"),
            std::string::npos);
  auto on_hbm = nlohmann::json::parse(with_chip("memory", "\"hbm\""));
  EXPECT_EQ(error_of(on_hbm.dump()), "");
  on_hbm["presets"]["a"]["chip"]["hbm_beats"] = 1u << 28;  // the haddr field's limit, past this HBM's 2^22 bursts
  EXPECT_NE(error_of(on_hbm.dump()).find("presets.a.chip.hbm_beats: 268435456 beats of 1 bursts exceed the HBM"),
            std::string::npos);
  on_hbm["presets"]["a"]["chip"]["hbm_beats"] = 1024;
  on_hbm["presets"]["a"]["mxu"]["n"] = 12;
  EXPECT_NE(
      error_of(on_hbm.dump())
          .find("presets.a.chip.memory: \"hbm\" needs mxu.n = 8, 16, 32, 64, 128 or 256 (a beat of a power of two "
                "of bursts), not 12"),
      std::string::npos)
      << error_of(on_hbm.dump());
  // A beat wider than 64 lanes spans n / 64 pseudo-channels: there must be as many.
  on_hbm["presets"]["a"]["mxu"]["n"] = 256;  // 4 of the 4 x 2
  EXPECT_EQ(error_of(on_hbm.dump()), "");
  on_hbm["presets"]["a"]["chip"]["hbm"]["channels"] = 1;  // the chip's controllers: 2 pseudo-channels
  EXPECT_NE(error_of(on_hbm.dump())
                .find("presets.a.chip.memory: \"hbm\": a beat of mxu.n = 256 lanes spans 4 pseudo-channels, and the "
                      "HBM has 2 (1 channels x 2)"),
            std::string::npos)
      << error_of(on_hbm.dump());
}

// chip.hbm: overrides of the hbm section for the controllers that serve the chip; the hbm
// section itself (the controller tests' and benchmark's) keeps its own values.
TEST(Config, ChipHbmOverridesTheHbmSectionForTheChipOnly) {
  auto j = nlohmann::json::parse(with_ici());
  auto& a = j["presets"]["a"];
  a["chip"].erase("hbm");
  a["hbm"]["queue"] = 8;
  a["hbm"]["write_queue"] = 0;
  a["hbm"]["bank_interleave"] = true;
  {  // without chip.hbm the chip's HBM is the hbm section
    const tp::Preset p = tp::parse_presets(j.dump(), "test.json").at(0);
    EXPECT_EQ(nlohmann::json::parse(tp::preset_json(p))["chip"]["hbm"],
              nlohmann::json::parse(tp::preset_json(p))["hbm"]);
  }
  a["chip"]["hbm"] = nlohmann::json::parse(R"({"queue": 32, "write_hi": 24, "bank_interleave": false,
                                                "timing": {"trefi": 3900}})");
  const tp::Preset p = tp::parse_presets(j.dump(), "test.json").at(0);
  EXPECT_EQ(p.hbm.queue, 8u);  // the section itself is untouched
  EXPECT_TRUE(p.hbm.bank_interleave);
  EXPECT_EQ(p.chip.hbm.queue, 32u);
  EXPECT_EQ(p.chip.hbm.write_hi, 24u);
  EXPECT_FALSE(p.chip.hbm.bank_interleave);
  EXPECT_EQ(p.chip.hbm.timing.trefi, 3900u);
  EXPECT_EQ(p.chip.hbm.timing.trfc, p.hbm.timing.trfc);  // a nested leaf alone: the rest inherited
  EXPECT_EQ(p.chip.hbm.channels, p.hbm.channels);
  EXPECT_EQ(p.chip.hbm.write_lo, p.hbm.write_lo);
  // preset_json gives the chip's whole HBM: parsed again, the same preset.
  auto body = nlohmann::json::parse(tp::preset_json(p));
  body.erase("name");
  nlohmann::json file = {{"default", "a"}, {"presets", {{"a", body}}}};
  const tp::Preset again = tp::parse_presets(file.dump(), "again.json").at(0);
  EXPECT_EQ(tp::preset_json(again), tp::preset_json(p));
  // Errors name chip.hbm: a bad key, a bad value, a combination the merge makes, not an object.
  auto bad = j;
  bad["presets"]["a"]["chip"]["hbm"]["depth"] = 4;
  EXPECT_NE(error_of(bad.dump()).find("presets.a.chip.hbm.depth: unknown key"), std::string::npos)
      << error_of(bad.dump());
  bad = j;
  bad["presets"]["a"]["chip"]["hbm"]["queue"] = 65;
  EXPECT_NE(error_of(bad.dump()).find("presets.a.chip.hbm.queue: 65 is out of range [2, 64]"), std::string::npos)
      << error_of(bad.dump());
  bad = j;
  bad["presets"]["a"]["chip"]["hbm"]["queue"] = 16;  // below its own write_hi (24)
  EXPECT_NE(error_of(bad.dump()).find("presets.a.chip.hbm.write_hi: 24 is out of range [1, 16]"), std::string::npos)
      << error_of(bad.dump());
  bad = j;
  bad["presets"]["a"]["chip"]["hbm"] = 32;
  EXPECT_NE(error_of(bad.dump()).find("presets.a.chip.hbm: expected an object"), std::string::npos)
      << error_of(bad.dump());
  // The chip's own HBM bounds its beats: chip.hbm with fewer rows than hbm_beats need.
  bad = j;
  bad["presets"]["a"]["chip"]["memory"] = "hbm";
  bad["presets"]["a"]["chip"]["hbm"]["rows"] = 16;
  EXPECT_NE(error_of(bad.dump()).find("presets.a.chip.hbm_beats:"), std::string::npos) << error_of(bad.dump());
}

// The shipped small serves its chip from HBM with its own controller settings (docs/chip.md),
// and small_model is the same chip on the memory model.
TEST(Config, ShippedSmallServesItsChipFromHbm) {
  const tp::Preset small = tp::load_preset("small"), model = tp::load_preset("small_model");
  EXPECT_EQ(small.chip.memory, "hbm");
  EXPECT_EQ(model.chip.memory, "model");
  EXPECT_NE(tp::preset_json(small).find("\"hbm\""), std::string::npos);
  EXPECT_GT(small.chip.hbm.queue, small.hbm.queue);  // the chip-serving queue is deeper than the tests'
  EXPECT_EQ(small.mxu.n, model.mxu.n);
  EXPECT_EQ(small.chip.vmem_rows, model.chip.vmem_rows);
  EXPECT_EQ(small.chip.hbm_beats, model.chip.hbm_beats);
}

// ---------------------------------------------------------------------------------------------
// Pods (configs/pods.json)

TEST(PodConfig, ShippedPodsAreValid) {
  const auto pods = tp::load_pods();
  ASSERT_GE(pods.size(), 9u);
  const tp::PodConfig def = tp::load_pod("");
  EXPECT_EQ(def.name, "2x2");
  EXPECT_EQ(def.torus_x, 2u);
  EXPECT_EQ(def.torus_y, 2u);
  EXPECT_EQ(def.preset, "tiny");
  EXPECT_EQ(def.link_latency, 1u);
  EXPECT_EQ(def.board_x, 2u);
  EXPECT_EQ(def.board_y, 2u);
  ASSERT_EQ(def.slices.size(), 1u);
  EXPECT_EQ(def.slices[0].name, "all");
  EXPECT_EQ(def.slices[0].w, 2u);
  for (const char* name : {"1x1", "1x2", "2x2", "1x4", "3x3", "4x4", "8x8", "v2-pod", "v3-pod"})
    EXPECT_NO_THROW(tp::load_pod(name)) << name;
  const tp::PodConfig v2 = tp::load_pod("v2-pod");
  EXPECT_EQ(v2.torus_x * v2.torus_y, 256u);
  EXPECT_EQ(v2.preset, "v2");
  const tp::PodConfig v3 = tp::load_pod("v3-pod");
  EXPECT_EQ(v3.torus_x, 32u);
  EXPECT_EQ(v3.preset, "v3");
  const tp::Preset v3chip = tp::load_preset("v3");  // v2 with v3's clock, HBM and links
  EXPECT_EQ(v3chip.mxu.n, 128u);
  EXPECT_EQ(v3chip.clock_mhz, 940.0);
  EXPECT_EQ(v3chip.chip.hbm_beats * 4 * v3chip.mxu.n, uint64_t{32} << 30);
  EXPECT_EQ(v3chip.ici.flit_bits, 704u);
  const tp::PodConfig one = tp::load_pod("1x4");
  EXPECT_EQ(one.torus_x, 1u);  // names are KXxKY
  EXPECT_EQ(one.torus_y, 4u);
  // pod_json is the file's form: it parses back to the same pod.
  auto j = nlohmann::json::parse(tp::pod_json(v2));
  j.erase("name");
  const nlohmann::json file = {{"default", "p"}, {"pods", {{"p", j}}}};
  const auto back = tp::parse_pods(file.dump(), "back.json", {"v2"});
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].torus_x, v2.torus_x);
  EXPECT_EQ(back[0].slices.size(), v2.slices.size());
  EXPECT_EQ(back[0].description, v2.description);
}

TEST(PodConfig, UnknownPodNamesItAndTheKnownOnes) {
  try {
    tp::load_pod("9x9");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown pod '9x9' (known pods: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("8x8"), std::string::npos) << e.what();
  }
}

// A valid pods file whose pod "p" has `key` set to `value` (JSON text); an empty value removes it.
std::string pod_with(const std::string& key = "", const std::string& value = "") {
  auto j = nlohmann::json::parse(R"({"default": "p", "pods": {"p": {"torus": [4, 2], "preset": "tiny",
      "link_latency": 1, "host_board": [2, 2], "slices": [{"name": "a", "origin": [0, 0], "shape": [2, 2]},
      {"name": "b", "origin": [2, 0], "shape": [2, 1]}]}}})");
  if (!key.empty()) {
    if (value.empty())
      j["pods"]["p"].erase(key);
    else
      j["pods"]["p"][key] = nlohmann::json::parse(value);
  }
  return j.dump();
}

std::string pod_error(const std::string& json) {
  try {
    tp::parse_pods(json, "pods.json", {"tiny", "small"});
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(PodConfig, BadPodsAreNamed) {
  EXPECT_EQ(pod_error(pod_with()), "");
  const auto p = tp::parse_pods(pod_with(), "pods.json", {"tiny"});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].slices[1].x0, 2u);
  EXPECT_EQ(p[0].slices[1].h, 1u);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {pod_with("chips", "4"), "pods.json: pods.p.chips: unknown key"},
      {pod_with("torus", "[0, 2]"), "pods.json: pods.p.torus.x: 0 is out of range [1, 32]"},
      {pod_with("torus", "[4, 33]"), "pods.json: pods.p.torus.y: 33 is out of range [1, 32]"},
      {pod_with("torus", "4"), "pods.json: pods.p.torus: expected [x, y], got 4"},
      {pod_with("torus", ""), "pods.json: pods.p.torus: missing"},
      {pod_with("preset", "\"huge\""), "pods.json: pods.p.preset: unknown preset 'huge' (known presets: tiny, small)"},
      {pod_with("link_latency", "0"), "pods.json: pods.p.link_latency: 0 is out of range"},
      {pod_with("host_board", "[3, 2]"), "pods.json: pods.p.host_board: [3, 2] does not divide the torus [4, 2]"},
      {pod_with("host_board", "[4, 4]"), "pods.json: pods.p.host_board: [4, 4] does not divide the torus [4, 2]"},
      {pod_with("slices", "[]"), "pods.json: pods.p.slices: missing, not a list or empty"},
      {pod_with("slices", R"([{"name": "a", "origin": [3, 0], "shape": [2, 1]}])"),
       "pods.json: pods.p.slices[0]: slice 'a' [3, 5) x [0, 1) runs outside the 4x2 torus"},
      {pod_with(
           "slices",
           R"([{"name": "a", "origin": [0, 0], "shape": [2, 2]}, {"name": "b", "origin": [1, 1], "shape": [1, 1]}])"),
       "pods.json: pods.p.slices[1]: slice 'b' [1, 2) x [1, 2) overlaps slices[0] 'a' [0, 2) x [0, 2)"},
      {pod_with(
           "slices",
           R"([{"name": "a", "origin": [0, 0], "shape": [1, 1]}, {"name": "a", "origin": [1, 1], "shape": [1, 1]}])"),
       "pods.json: pods.p.slices[1].name: 'a' names slices[0] too"},
      {pod_with("slices", R"([{"name": "a", "origin": [0, 0], "shape": [0, 1]}])"),
       "pods.json: pods.p.slices[0].shape.w: 0 is out of range [1, 32]"},
      {pod_with("slices", R"([{"name": "a", "origin": [0, 0], "size": [1, 1]}])"),
       "pods.json: pods.p.slices[0].size: unknown key"},
      {pod_with("slices", R"([{"origin": [0, 0], "shape": [1, 1]}])"),
       "pods.json: pods.p.slices[0].name: missing or not a string"},
  };
  for (const auto& [json, want] : cases) {
    const std::string msg = pod_error(json);
    EXPECT_EQ(msg.substr(0, want.size()), want) << msg;
  }
  auto bad_default = nlohmann::json::parse(pod_with());
  bad_default["default"] = "q";
  EXPECT_EQ(pod_error(bad_default.dump()), "pods.json: default: names unknown pod 'q'");
  EXPECT_EQ(pod_error(R"({"default": "p"})"), "pods.json: pods: missing or empty");
  EXPECT_NE(pod_error("{").find("not valid JSON"), std::string::npos);
  EXPECT_NE(pod_error(R"({"default": "p", "pods": {"p": 1}})").find("pods.p: expected an object"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Bases: a preset inherits the keys it does not set ("base": "<name>")

// A presets file with the base "full" (the shipped small preset resolved: every key a preset
// needs), default "a", and `extra` (more bases and presets) merged in.
nlohmann::json with_bases(const std::string& extra) {
  auto full = nlohmann::json::parse(tp::preset_json(tp::load_preset("small")));
  full.erase("name");
  auto j = nlohmann::json::parse(R"({"default": "a", "bases": {}, "presets": {}})");
  j["bases"]["full"] = full;
  j.merge_patch(nlohmann::json::parse(extra));
  return j;
}

// The presets of a file, resolved, by name; their preset_json without the name.
std::map<std::string, nlohmann::json> resolved(const nlohmann::json& file) {
  std::map<std::string, nlohmann::json> out;
  for (const tp::Preset& p : tp::parse_presets(file.dump(), "test.json")) {
    auto j = nlohmann::json::parse(tp::preset_json(p));
    j.erase("name");
    out[p.name] = j;
  }
  return out;
}

TEST(ConfigBase, PresetInheritsEveryKeyItDoesNotSet) {
  const auto file = with_bases(R"({"presets": {"a": {"base": "full"}, "b": {"base": "full", "clock_mhz": 500}}})");
  const auto p = resolved(file);
  ASSERT_EQ(p.size(), 2u);  // presets only: the base "full" is not one
  EXPECT_EQ(p.at("a"), file["bases"]["full"]);
  auto want = file["bases"]["full"];
  want["clock_mhz"] = 500.0;
  EXPECT_EQ(p.at("b"), want);
}

TEST(ConfigBase, NestedLeafOverridesOnlyThatLeaf) {
  const auto file = with_bases(R"({"bases": {"wide": {"base": "full", "ici": {"torus": [9, 9, 9]}}},
      "presets": {"a": {"base": "wide", "hbm": {"timing": {"trefi": 700}}, "ici": {"torus": [2, 3]}}}})");
  const auto a = resolved(file).at("a");
  auto want = file["bases"]["full"];
  want["hbm"]["timing"]["trefi"] = 700;  // that leaf only: trfc, the other timings, the geometry stay
  want["ici"]["torus"] = {2, 3};         // an array replaces the base's (whose length is wrong)
  EXPECT_EQ(a, want);
  EXPECT_EQ(a["hbm"]["timing"]["trfc"], file["bases"]["full"]["hbm"]["timing"]["trfc"]);
}

TEST(ConfigBase, ChainTakesEachKeyFromTheNearestEntryThatSetsIt) {
  // a -> mid -> full, and the preset p -> a (a preset may be a base).
  const auto file = with_bases(R"({"bases": {"mid": {"base": "full", "clock_mhz": 500, "mxu": {"acc_rows": 64},
      "hbm": {"timing": {"trefi": 800, "trfc": 50}}}},
      "presets": {"a": {"base": "mid", "description": "a", "hbm": {"timing": {"trefi": 900}}},
                  "p": {"base": "a", "mxu": {"n": 16}}}})");
  const auto presets = resolved(file);
  ASSERT_EQ(presets.size(), 2u);
  const auto& full = file["bases"]["full"];
  auto want = full;
  want["description"] = "a";
  want["clock_mhz"] = 500.0;
  want["mxu"]["acc_rows"] = 64;
  want["hbm"]["timing"]["trefi"] = 900;
  want["hbm"]["timing"]["trfc"] = 50;
  EXPECT_EQ(presets.at("a"), want);
  want["mxu"]["n"] = 16;
  EXPECT_EQ(presets.at("p"), want);
  EXPECT_NE(presets.at("p")["hbm"]["timing"]["tras"], nullptr);
  EXPECT_EQ(presets.at("p")["hbm"]["timing"]["tras"], full["hbm"]["timing"]["tras"]);
}

TEST(ConfigBase, CycleIsAnErrorNamingTheChain) {
  EXPECT_EQ(error_of(with_bases(R"({"bases": {"x": {"base": "y"}, "y": {"base": "x"}},
                                    "presets": {"a": {"base": "x"}}})")
                         .dump()),
            "test.json: presets.a.base: the base chain a -> x -> y -> x is a cycle");
  EXPECT_EQ(error_of(with_bases(R"({"presets": {"a": {"base": "a"}}})").dump()),
            "test.json: presets.a.base: the base chain a -> a is a cycle");
}

TEST(ConfigBase, UnknownBaseNamesThePresetAndTheBase) {
  EXPECT_EQ(error_of(with_bases(R"({"presets": {"a": {"base": "nope"}}})").dump()),
            "test.json: presets.a.base: unknown base 'nope': it is neither in bases (full) nor in presets (a)");
  EXPECT_EQ(error_of(with_bases(R"({"bases": {"m": {"base": "gone"}}, "presets": {"a": {"base": "m"}}})").dump()),
            "test.json: bases.m.base: unknown base 'gone' (preset 'a' inherits a -> m -> gone): it is neither in "
            "bases (full, m) nor in presets (a)");
  EXPECT_EQ(error_of(with_bases(R"({"presets": {"a": {"base": 5}}})").dump()),
            "test.json: presets.a.base: expected the name of a base, got 5");
  EXPECT_EQ(error_of(with_bases(R"({"bases": {"a": {}}, "presets": {"a": {"base": "full"}}})").dump()),
            "test.json: bases.a: 'a' is a preset too (a name is either a base or a preset)");
  EXPECT_EQ(error_of(with_bases(R"({"bases": {"m": 3}, "presets": {"a": {"base": "m"}}})").dump()),
            "test.json: bases.m: expected an object");
}

TEST(ConfigBase, MergedPresetIsValidatedAndNamesWhereAValueCameFrom) {
  // An unknown key in the preset's own section; "base" only belongs at a preset's top.
  auto msg = error_of(with_bases(R"({"presets": {"a": {"base": "full", "hbm": {"timing": {"tXYZ": 1}}}}})").dump());
  EXPECT_NE(msg.find("test.json: presets.a.hbm.timing.tXYZ: unknown key"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("inherited"), std::string::npos) << msg;
  msg = error_of(with_bases(R"({"presets": {"a": {"base": "full", "hbm": {"base": "full"}}}})").dump());
  EXPECT_NE(msg.find("test.json: presets.a.hbm.base: unknown key"), std::string::npos) << msg;
  // The same in a base, and a bad value from a base: the message names the preset and the base.
  msg = error_of(
      with_bases(R"({"bases": {"bad": {"base": "full", "mxu": {"m": 2}}}, "presets": {"a": {"base": "bad"}}})").dump());
  EXPECT_EQ(msg, "test.json: presets.a.mxu.m: unknown key (known keys: acc_rows, n) (inherited from base 'bad')");
  msg = error_of(
      with_bases(
          R"({"bases": {"bad": {"base": "full", "hbm": {"timing": {"trefi": 10}}}}, "presets": {"a": {"base": "bad"}}})")
          .dump());
  EXPECT_NE(msg.find("test.json: presets.a.hbm.timing.trefi: 10 must exceed trfc"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(inherited from base 'bad')"), std::string::npos) << msg;
  // The preset's own value, checked against an inherited one: no "inherited".
  msg = error_of(with_bases(R"({"presets": {"a": {"base": "full", "hbm": {"timing": {"trefi": 10}}}}})").dump());
  EXPECT_NE(msg.find("presets.a.hbm.timing.trefi: 10 must exceed trfc"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("inherited"), std::string::npos) << msg;
  // An array element's source is the array's; a value from a preset used as a base says "preset".
  msg = error_of(with_bases(R"({"bases": {"wide": {"base": "full", "ici": {"torus": [4, 40]}}},
                               "presets": {"a": {"base": "wide"}}})")
                     .dump());
  EXPECT_EQ(msg, "test.json: presets.a.ici.torus.y: 40 is out of range [1, 32] (inherited from base 'wide')");
  // q is valid (its memory is the model), r puts q's 2^28 beats on HBM: the value is q's.
  msg = error_of(
      with_bases(
          R"({"presets": {"a": {"base": "full"}, "q": {"base": "full", "chip": {"memory": "model", "hbm_beats": 268435456}},
                               "r": {"base": "q", "chip": {"memory": "hbm"}}}})")
          .dump());
  EXPECT_NE(msg.find("test.json: presets.r.chip.hbm_beats: 268435456 beats of 4 bursts exceed the HBM"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("(inherited from preset 'q')"), std::string::npos) << msg;
  // Without a base, a missing section is still missing.
  msg = error_of(with_bases(R"({"bases": {"half": {"clock_mhz": 1}}, "presets": {"a": {"base": "half"}}})").dump());
  EXPECT_EQ(msg, "test.json: presets.a.mxu: missing");
}

TEST(ConfigBase, BaseIsNotAPreset) {
  const auto dir = std::filesystem::path(testing::TempDir()) / "tp_config_bases";
  std::filesystem::create_directories(dir);
  const auto presets_file = dir / "presets.json", pods_file = dir / "pods.json";
  std::ofstream(presets_file) << with_bases(R"({"presets": {"a": {"base": "full"}}})").dump();
  const auto all = tp::load_presets(presets_file);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].name, "a");
  try {
    tp::load_preset("full", presets_file);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), presets_file.string() +
                                         ": unknown preset 'full' (bases.full is only a base for presets to inherit "
                                         "from; known presets: a)");
  }
  EXPECT_EQ(error_of(with_bases(R"({"default": "full", "presets": {"a": {"base": "full"}}})").dump()),
            "test.json: default: names unknown preset 'full' (it is a base, not a preset)");
  // Nor can a pod's chips be one.
  auto pods = nlohmann::json::parse(pod_with("preset", "\"full\""));
  std::ofstream(pods_file) << pods.dump();
  try {
    tp::load_pods(pods_file, presets_file);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("pods.p.preset: unknown preset 'full' (known presets: a)"), std::string::npos)
        << e.what();
  }
  // The shipped file: no base loads as a preset.
  std::ifstream in(tp::default_config_path());
  const auto bases = nlohmann::json::parse(in).value("bases", nlohmann::json::object());
  EXPECT_FALSE(bases.empty());
  for (const auto& [name, body] : bases.items()) EXPECT_THROW(tp::load_preset(name), ConfigError) << name;
}

TEST(ConfigBase, ShippedTestPresetsShareTheTestTiming) {
  for (const char* name : {"tiny", "small", "odd"}) {
    const tp::Preset p = tp::load_preset(name);
    EXPECT_EQ(p.hbm.timing.trefi, 600u) << name;
    EXPECT_EQ(p.hbm.timing.trfc, 40u) << name;
    EXPECT_EQ(p.clock_mhz, 700.0) << name;
  }
  EXPECT_TRUE(tp::load_preset("odd").hbm.closed_page);  // set by odd itself
  EXPECT_EQ(tp::load_preset("small").hbm.channels, 4u);
  EXPECT_EQ(tp::load_preset("v2").hbm.timing.trefi, 3900u);
}

}  // namespace
