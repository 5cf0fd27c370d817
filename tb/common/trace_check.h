// Checks of recorded timelines (sw/trace, docs/observability.md), shared by the chip and pod tests:
// the slices add up to the run's unit counters, a unit's slices never overlap, the op profile's
// totals are the counters, and the Chrome trace file is valid JSON whose flows have both ends.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "trace.h"

namespace tp::tb {

// counters: the run's (RTL: every unit counter; golden: {unit}_busy, _wait, _idle).
inline void expect_trace_matches_counters(const trace::ChipTrace& t, const std::map<std::string, uint64_t>& counters,
                                          const std::string& what) {
  using trace::Kind;
  auto counter = [&](unsigned q, const char* kind) -> std::optional<uint64_t> {
    const auto it = counters.find(fmt::format("{}_{}", trace::kUnitNames[q], kind));
    if (it == counters.end()) return std::nullopt;
    return it->second;
  };
  EXPECT_EQ(t.unattributed(), 0u) << what << ": busy or stall cycles with no instruction";
  const auto profile = trace::make_profile(t);
  for (unsigned q = 0; q < trace::kUnits; ++q) {
    const std::string unit(trace::kUnitNames[q]);
    uint64_t busy = 0, stall = 0, wait = 0, last_end = 0;
    for (const auto& s : t.slices()) {
      if (s.unit != q) continue;
      busy += s.busy;
      stall += s.stall;
      wait += s.wait;
      EXPECT_LE(s.start, s.end) << what << ": " << unit << " slice at pc " << s.pc;
      EXPECT_LE(s.end, t.end()) << what << ": " << unit << " slice at pc " << s.pc << " past the run's end";
      EXPECT_LE(s.busy + s.stall, s.end - s.start) << what << ": " << unit << " slice at pc " << s.pc;
      if (s.wait > 0) {
        EXPECT_GE(s.wait_start, last_end) << what << ": " << unit << " wait before pc " << s.pc << " overlaps";
        EXPECT_LE(s.wait_start + s.wait, s.start) << what << ": " << unit << " wait before pc " << s.pc;
      }
      if (s.end == s.start) continue;  // a waiting fence's (or a head's that never left): inside or between
      EXPECT_GE(s.start, last_end) << what << ": " << unit << " slices overlap at pc " << s.pc;
      last_end = s.end;
    }
    const auto want_busy = counter(q, "busy"), want_wait = counter(q, "wait"), want_stall = counter(q, "stall");
    ASSERT_TRUE(want_busy && want_wait) << what << ": no " << unit << "_busy / _wait counter";
    EXPECT_EQ(busy, *want_busy) << what << ": " << unit << " slices' busy cycles against " << unit << "_busy";
    EXPECT_EQ(wait, *want_wait) << what << ": " << unit << " slices' waits against " << unit << "_wait";
    EXPECT_EQ(stall, want_stall.value_or(0)) << what << ": " << unit << " slices' stalls against " << unit << "_stall";
    EXPECT_EQ(t.total(q, Kind::busy), *want_busy) << what << ": " << unit;
    EXPECT_EQ(t.total(q, Kind::wait), *want_wait) << what << ": " << unit;
    if (const auto idle = counter(q, "idle")) {
      EXPECT_EQ(t.total(q, Kind::idle), *idle) << what << ": " << unit;
    }
    EXPECT_EQ(profile.units[q].busy, *want_busy) << what << ": the profile's " << unit << " busy";
    EXPECT_EQ(profile.units[q].stall, want_stall.value_or(0)) << what << ": the profile's " << unit << " stall";
    EXPECT_EQ(profile.units[q].wait, *want_wait) << what << ": the profile's " << unit << " wait";
  }
  uint64_t per_op = 0, per_unit = 0;
  for (const auto& r : profile.ops) per_op += r.busy + r.stall + r.wait;
  for (const auto& r : profile.units) per_unit += r.busy + r.stall + r.wait;
  EXPECT_EQ(per_op, per_unit) << what << ": the profile's instruction classes against its units";
}

// The Chrome trace of the chips, parsed back: every complete event well formed, no two of one
// track overlapping, every flow start with its end. Returns the file.
inline nlohmann::json expect_valid_chrome_trace(const std::vector<const trace::ChipTrace*>& chips,
                                                const std::string& what, uint64_t* flows = nullptr) {
  std::ostringstream os;
  const uint64_t unmatched = trace::write_chrome_trace(os, chips, {"test", "test", "test", 1.0});
  EXPECT_EQ(unmatched, 0u) << what << ": ICI flows without both ends";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(os.str());
  } catch (const nlohmann::json::exception& e) {
    ADD_FAILURE() << what << ": the trace is not JSON: " << e.what();
    return j;
  }
  EXPECT_EQ(j["otherData"]["unmatched_flows"], unmatched) << what;
  std::map<std::pair<unsigned, unsigned>, std::vector<std::pair<uint64_t, uint64_t>>> tracks;
  std::map<uint64_t, int> flow;
  uint64_t slices = 0;
  for (const auto& e : j.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "X") {
      tracks[{e.at("pid"), e.at("tid")}].push_back(
          {e.at("ts"), e.at("ts").get<uint64_t>() + e.at("dur").get<uint64_t>()});
      EXPECT_TRUE(e.contains("name") && e.contains("cat")) << what << ": " << e.dump();
      ++slices;
    } else if (ph == "s") {
      ++flow[e.at("id")];
    } else if (ph == "f") {
      --flow[e.at("id")];
      EXPECT_EQ(e.value("bp", ""), "e") << what;
    } else {
      EXPECT_TRUE(ph == "M" || ph == "C") << what << ": event phase " << ph;
    }
  }
  uint64_t want = 0;
  for (const auto* c : chips) {
    want += c->slices().size() + c->arrivals().size();
    for (const auto& s : c->slices()) want += s.wait > 0;
  }
  EXPECT_EQ(slices, want) << what << ": complete events against slices, waits and arrivals";
  for (auto& [track, v] : tracks) {
    std::sort(v.begin(), v.end());
    uint64_t last_end = 0;
    for (const auto& [start, end] : v) {
      if (start == end) continue;  // zero-length slices sit inside others (a waiting fence)
      EXPECT_LE(last_end, start) << what << ": events overlap on pid " << track.first << " tid " << track.second
                                 << " at " << start;
      last_end = end;
    }
  }
  for (const auto& [id, balance] : flow) EXPECT_EQ(balance, 0) << what << ": flow " << id << " has one end";
  if (flows) *flows = flow.size();
  return j;
}

}  // namespace tp::tb
