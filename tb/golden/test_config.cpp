// Presets: the shipped file is valid, and bad configs fail with messages that name the key.
#include <gtest/gtest.h>

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
  const auto msg = error_of(R"({"default":"a","presets":{"a":{"clock_mhz":1,"mxu":{"n":8,"acc_rows":4,"m":2}}}})");
  EXPECT_NE(msg.find("presets.a.mxu.m: unknown key"), std::string::npos) << msg;
}

TEST(Config, ImpossibleValueIsNamed) {
  auto msg = error_of(R"({"default":"a","presets":{"a":{"clock_mhz":1,"mxu":{"n":1,"acc_rows":4}}}})");
  EXPECT_NE(msg.find("presets.a.mxu.n: 1 is out of range"), std::string::npos) << msg;
  msg = error_of(R"({"default":"a","presets":{"a":{"clock_mhz":-5,"mxu":{"n":8,"acc_rows":4}}}})");
  EXPECT_NE(msg.find("presets.a.clock_mhz"), std::string::npos) << msg;
  msg = error_of(R"({"default":"a","presets":{"a":{"clock_mhz":1,"mxu":{"n":"8","acc_rows":4}}}})");
  EXPECT_NE(msg.find("presets.a.mxu.n: expected an integer"), std::string::npos) << msg;
}

TEST(Config, BadDefaultAndBadJson) {
  EXPECT_NE(error_of(R"({"default":"zz","presets":{"a":{"clock_mhz":1,"mxu":{"n":8,"acc_rows":4}}}})")
                .find("unknown preset 'zz'"),
            std::string::npos);
  EXPECT_NE(error_of("{not json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"default":"a","presets":{"a":{"clock_mhz":1}}})").find("presets.a.mxu: missing"),
            std::string::npos);
}

}  // namespace
