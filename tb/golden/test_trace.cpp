// The timeline recorder (sw/trace, docs/observability.md) on hand-made event streams: how cycles
// go to slices, how the golden estimate's spans become slices and waits, the destinations of
// sends, and the matching of ICI flows in the Chrome trace.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "config.h"
#include "isa.h"
#include "trace.h"

namespace {

using tp::trace::ChipTrace;
using tp::trace::Kind;

unsigned kinds_of(Kind load) { return static_cast<unsigned>(load) | 0x3fcu; }  // the other units idle

void expect_slice(const tp::trace::Slice& got, const tp::trace::Slice& want) {
  EXPECT_EQ(got.pc, want.pc);
  EXPECT_EQ(got.unit, want.unit) << "pc " << want.pc;
  EXPECT_EQ(got.start, want.start) << "pc " << want.pc;
  EXPECT_EQ(got.end, want.end) << "pc " << want.pc;
  EXPECT_EQ(got.busy, want.busy) << "pc " << want.pc;
  EXPECT_EQ(got.stall, want.stall) << "pc " << want.pc;
  EXPECT_EQ(got.wait, want.wait) << "pc " << want.pc;
  if (want.wait > 0) {
    EXPECT_EQ(got.wait_start, want.wait_start) << "pc " << want.pc;
  }
}

TEST(Trace, CyclesGoToTheInstructionThatLeftTheQueueLast) {
  ChipTrace t;
  t.start({});
  const uint32_t pc3[5] = {3, 0, 0, 0, 0}, pc5[5] = {5, 0, 0, 0, 0}, pc6[5] = {6, 0, 0, 0, 0};
  // t0: pc 3 leaves the load queue (the unit is still idle in that cycle); busy, stall, busy; idle at
  // t4 closes it; the head waits at t5 and t6; pc 5 leaves at t7, busy at t8 and t9, and pc 6 leaves
  // at t9 while the unit still works (a pipelined unit): t9 is pc 6's.
  const std::vector<std::tuple<unsigned, const uint32_t*, Kind>> cycles = {
      {1, pc3, Kind::idle}, {0, pc3, Kind::busy}, {0, pc3, Kind::stall}, {0, pc3, Kind::busy},
      {0, pc3, Kind::idle}, {0, pc3, Kind::wait}, {0, pc3, Kind::wait},  {1, pc5, Kind::idle},
      {0, pc5, Kind::busy}, {1, pc6, Kind::busy}, {0, pc6, Kind::stall}};
  for (uint64_t i = 0; i < cycles.size(); ++i) {
    const auto& [go, pc, k] = cycles[i];
    t.cycle(i, go, pc, kinds_of(k));
  }
  t.finish(cycles.size());
  ASSERT_EQ(t.slices().size(), 3u);
  expect_slice(t.slices()[0], {3, 0, 0, 4, 2, 1, 0, 0});
  expect_slice(t.slices()[1], {5, 0, 7, 9, 1, 0, 2, 5});
  expect_slice(t.slices()[2], {6, 0, 9, 11, 1, 1, 0, 0});
  EXPECT_EQ(t.total(0, Kind::busy), 4u);
  EXPECT_EQ(t.total(0, Kind::stall), 2u);
  EXPECT_EQ(t.total(0, Kind::wait), 2u);
  EXPECT_EQ(t.total(0, Kind::idle), 3u);
  EXPECT_EQ(t.total(1, Kind::idle), cycles.size());
  EXPECT_EQ(t.unattributed(), 0u);

  ChipTrace u;  // busy with nothing started: counted, and said
  u.start({});
  u.cycle(0, 0, pc3, kinds_of(Kind::busy));
  EXPECT_EQ(u.unattributed(), 1u);
}

// A fence that only waits starts nothing in its unit: a zero-length slice inside the running
// instruction's, which keeps its cycles. A head still waiting when the run ends gets its wait.
TEST(Trace, WaitingFencesAndAnUnfinishedWait) {
  const tp::Preset p = tp::load_preset("tiny");
  const auto prog =
      tp::isa::assemble("dma.ld 0, 0, 4, 1, 1\nfence load wait=3\ndma.ld 8, 8, 4, 1, 1 wait=4\nhalt\n", "fences.s", p);
  ChipTrace t;
  t.start(prog.code);
  const uint32_t pc[3][5] = {{0, 0, 0, 0, 0}, {1, 0, 0, 0, 0}, {2, 0, 0, 0, 0}};
  t.cycle(10, 1, pc[0], kinds_of(Kind::idle));  // dma.ld leaves
  t.cycle(11, 0, pc[1], kinds_of(Kind::busy));
  t.cycle(12, 1, pc[1], kinds_of(Kind::busy));  // the fence leaves while the load works
  t.cycle(13, 0, pc[2], kinds_of(Kind::stall));
  t.cycle(14, 0, pc[2], kinds_of(Kind::wait));  // the load is done; the next head waits for ever
  t.cycle(15, 0, pc[2], kinds_of(Kind::wait));
  t.finish();
  ASSERT_EQ(t.slices().size(), 3u);
  expect_slice(t.slices()[0], {0, 0, 10, 14, 2, 1, 0, 0});
  expect_slice(t.slices()[1], {1, 0, 12, 12, 0, 0, 0, 0});
  expect_slice(t.slices()[2], {2, 0, 16, 16, 0, 0, 2, 14});
  EXPECT_EQ(t.total(0, Kind::wait), 2u);
  EXPECT_EQ(t.first_cycle(), 10u);
  t.shift(10);
  EXPECT_EQ(t.slices()[0].start, 0u);
  EXPECT_EQ(t.slices()[2].wait_start, 4u);
  EXPECT_EQ(t.end(), 6u);
}

TEST(Trace, GoldenSpansAreTruncatedAtTheNextStartAndWaitForTheirToken) {
  ChipTrace t;
  t.start({});
  t.span(1, 2, 0, 0, 0, 10);    // an mxu.mm draining until 10
  t.span(1, 3, 1, 0, 4, 14);    // the next starts at 4: the first ends there
  t.span(1, 4, 2, 20, 20, 25);  // free at 14, its semaphore count came at 20: 6 cycles of waiting
  t.finish(30);
  ASSERT_EQ(t.slices().size(), 3u);
  EXPECT_EQ(t.slices()[0].end, 4u);
  EXPECT_EQ(t.slices()[0].busy, 4u);
  EXPECT_EQ(t.slices()[1].start, 4u);
  EXPECT_EQ(t.slices()[1].busy, 10u);
  EXPECT_EQ(t.slices()[2].wait, 6u);
  EXPECT_EQ(t.slices()[2].wait_start, 14u);
  EXPECT_EQ(t.total(1, Kind::busy), 19u);
  EXPECT_EQ(t.total(1, Kind::wait), 6u);
  EXPECT_EQ(t.total(1, Kind::idle), 5u);
  EXPECT_EQ(t.total(0, Kind::idle), 30u);
}

TEST(Trace, SendsGoWhereTheInstructionSays) {
  const tp::Preset p = tp::load_preset("tiny");
  const auto prog = tp::isa::assemble(
      "ici.send 0, 0, 1, 1, 0\nici.send 0, 0, 1, -1, 1\nici.send 0, 0, 1, 2, 1, abs=1\nhalt\n"
      "ici.send 0, 0, 1, 3, 0, abs=1\n",
      "sends.s", p);
  ChipTrace t("chip", {8, 4, 3, 1, 2, 0, 3, 2});  // chip (3, 1) of the slice [2, 5) x [0, 2) of an 8x4 torus
  t.start(prog.code);
  t.send_at(0, 0);
  t.send_at(1, 1);
  t.send_at(2, 2);
  t.send_at(3, 3);  // halt: not a send
  t.send_at(4, 4);  // outside the slice: stops with ici_slice, sends nothing
  ASSERT_EQ(t.sends().size(), 3u);
  EXPECT_EQ(t.sends()[0].dst, (tp::trace::XY{4, 1}));
  EXPECT_EQ(t.sends()[1].dst, (tp::trace::XY{2, 0}));  // y wraps round the slice
  EXPECT_EQ(t.sends()[2].dst, (tp::trace::XY{4, 1}));  // slice coordinates (2, 1)
}

TEST(Trace, FlowsPairTheKthSendWithTheKthArrival) {
  ChipTrace a("a", {2, 1, 0, 0, 0, 0, 2, 1}), b("b", {2, 1, 1, 0, 0, 0, 2, 1});
  a.start({});
  b.start({});
  a.send(1, 0, {1, 0});
  a.send(5, 0, {1, 0});
  b.arrival(9, {0, 0});
  b.arrival(12, {0, 0});
  std::ostringstream os;
  const std::vector<const ChipTrace*> both = {&a, &b};
  EXPECT_EQ(tp::trace::write_chrome_trace(os, both, {}), 0u);
  const auto j = nlohmann::json::parse(os.str());
  std::vector<std::pair<uint64_t, uint64_t>> flows;  // (ts of the start, ts of the end) by id
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> by_id;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "s") by_id[e["id"]].first = e["ts"];
    if (e["ph"] == "f") by_id[e["id"]].second = e["ts"];
  }
  for (const auto& [id, f] : by_id) flows.push_back(f);
  EXPECT_EQ(flows, (std::vector<std::pair<uint64_t, uint64_t>>{{1, 9}, {5, 12}}));

  b.arrival(20, {0, 0});  // a third arrival without its send
  std::ostringstream os2;
  EXPECT_EQ(tp::trace::write_chrome_trace(os2, both, {}), 1u);
  EXPECT_EQ(nlohmann::json::parse(os2.str())["otherData"]["unmatched_flows"], 1);
}

}  // namespace
