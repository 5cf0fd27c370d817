// ICI in the golden interpreter (ici.send on one chip: checks, errors, waiting, delivery, timing)
// and the golden pod (sw/golden/pod_model): ring shifts, all-gathers, absolute and relative
// sends on slices, errors and deadlocks with their chips and PCs, and random programs checked
// against a host reference.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "chip_model.h"
#include "config.h"
#include "ici_model.h"
#include "isa.h"
#include "pod_model.h"
#include "tb_util.h"

namespace {

using namespace tp::golden;
using tp::isa::Err;

const tp::Preset& tiny() {
  static const tp::Preset p = tp::load_preset("tiny");
  return p;
}
const tp::Preset& odd() {
  static const tp::Preset p = tp::load_preset("odd");
  return p;
}

tp::isa::Program assemble(const std::string& text, const tp::Preset& p = tiny()) {
  return tp::isa::assemble(text, "test.s", p);
}

std::string ename(Err e) { return std::string(tp::isa::err_name(e)); }

// Distinct words: chip c's block row r lane j.
std::vector<uint32_t> block(unsigned chip, unsigned rows, unsigned lanes) {
  std::vector<uint32_t> v(std::size_t{rows} * lanes);
  for (unsigned r = 0; r < rows; ++r)
    for (unsigned j = 0; j < lanes; ++j)
      v[std::size_t{r} * lanes + j] = 0x10000000u * (chip % 15 + 1) + 0x100u * r + j + chip * 0x10000u;
  return v;
}

std::vector<uint32_t> vmem_rows(const ChipModel& c, unsigned first, unsigned rows) {
  const auto v = c.vmem().subspan(std::size_t{first} * c.lanes(), std::size_t{rows} * c.lanes());
  return {v.begin(), v.end()};
}

// ---------------------------------------------------------------------------------------------
// The destination rule

// An independent statement of the rule: step |d| times by one chip inside the slice, wrapping.
unsigned step_in_slice(unsigned here, unsigned lo, unsigned size, int64_t d) {
  for (int64_t k = 0; k < (d < 0 ? -d : d); ++k) {
    if (d > 0)
      here = here + 1 == lo + size ? lo : here + 1;
    else
      here = here == lo ? lo + size - 1 : here - 1;
  }
  return here;
}

TEST(IciDestination, RelativeWrapsRoundTheSliceAbsoluteIsInsideIt) {
  const std::vector<IciRegs> regs = {
      {1, 1, 0, 0, 0, 0, 1, 1}, {4, 1, 3, 0, 0, 0, 4, 1},       {5, 4, 2, 2, 1, 1, 3, 2},
      {8, 8, 7, 0, 4, 0, 4, 8}, {32, 32, 31, 31, 0, 0, 32, 32}, {3, 3, 1, 2, 1, 2, 1, 1},
  };
  for (const IciRegs& r : regs) {
    ASSERT_TRUE(ici_regs_ok(r));
    for (int64_t dx = -32; dx <= 31; ++dx)
      for (int64_t dy : {-32, -7, -1, 0, 1, 2, 5, 31}) {
        const auto d = ici_destination(r, dx, dy, false);
        ASSERT_TRUE(d.has_value());
        EXPECT_EQ(d->x, step_in_slice(r.x, r.x0, r.w, dx)) << r.kx << "x" << r.ky << " dx " << dx;
        EXPECT_EQ(d->y, step_in_slice(r.y, r.y0, r.h, dy)) << r.kx << "x" << r.ky << " dy " << dy;
        const auto a = ici_destination(r, dx, dy, true);
        const bool inside = dx >= 0 && dx < r.w && dy >= 0 && dy < r.h;
        ASSERT_EQ(a.has_value(), inside) << dx << ", " << dy;
        if (inside) {
          EXPECT_EQ(*a, (Coord{r.x0 + static_cast<unsigned>(dx), r.y0 + static_cast<unsigned>(dy)}));
        }
      }
  }
}

TEST(IciDestination, ConsistencyIsTheRoutersCfgOk) {
  EXPECT_TRUE(ici_regs_ok(IciRegs{}));
  const IciRegs good{4, 4, 2, 3, 1, 1, 3, 3};
  EXPECT_TRUE(ici_regs_ok(good));
  auto with = [&](auto edit) {
    IciRegs r = good;
    edit(r);
    return ici_regs_ok(r);
  };
  EXPECT_FALSE(with([](IciRegs& r) { r.kx = 0; }));
  EXPECT_FALSE(with([](IciRegs& r) { r.ky = 33; }));
  EXPECT_FALSE(with([](IciRegs& r) { r.w = 0; }));
  EXPECT_FALSE(with([](IciRegs& r) { r.h = 0; }));
  EXPECT_FALSE(with([](IciRegs& r) { r.w = 4; }));   // x0 + w > kx
  EXPECT_FALSE(with([](IciRegs& r) { r.y0 = 2; }));  // y0 + h > ky
  EXPECT_FALSE(with([](IciRegs& r) { r.x = 0; }));   // left of the slice
  EXPECT_FALSE(with([](IciRegs& r) { r.y = 4; }));   // outside the torus too
  EXPECT_TRUE(with([](IciRegs& r) { r.kx = r.ky = 32; }));
  EXPECT_THROW(ici_destination(IciRegs{0, 1, 0, 0, 0, 0, 1, 1}, 0, 0, false), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// One chip

TEST(IciChip, StandaloneChipSendsToItself) {
  ChipModel chip(tiny());
  const unsigned n = chip.lanes();
  const auto b = block(0, 8, n);
  chip.write_hbm(0, b);
  // A 1x1 slice: every relative offset wraps back to the chip, and abs (0, 0) is the chip.
  chip.load(assemble(R"(
      dma.ld 0, 0, 1, 8, 0 signal=1
      ici.send 0, 100, 8, 0, 0, rsem=2 wait=1 signal=3
      ici.send 0, 200, 4, -5, 31, rsem=2
      ici.send 4, 300, 4, 0, 0, rsem=2, abs=1
      fence store wait=2
      fence store wait=2
      dma.st 100, 64, 1, 8, 0 wait=2 signal=4
      fence vec wait=3
      halt
  )"));
  EXPECT_FALSE(chip.pod_mode());
  const auto r = chip.run();
  EXPECT_TRUE(r.done);
  EXPECT_EQ(ename(r.err), "none");
  EXPECT_FALSE(r.waiting);
  EXPECT_EQ(chip.read_hbm(64, 8), b);
  EXPECT_EQ(vmem_rows(chip, 200, 4), std::vector<uint32_t>(b.begin(), b.begin() + 4 * n));
  EXPECT_EQ(vmem_rows(chip, 300, 4), std::vector<uint32_t>(b.begin() + 4 * n, b.end()));
  EXPECT_EQ(chip.stats().ici_bytes_sent, 16u * 4 * n);
  EXPECT_EQ(chip.stats().ici_bytes_received, 16u * 4 * n);
}

TEST(IciChip, FrontEndChecksInProgramOrder) {
  ChipModel chip(tiny());
  const unsigned rows = tiny().chip.vmem_rows;
  const auto error_of = [&](const std::string& text) {
    chip.load(assemble(text));
    const auto r = chip.run();
    EXPECT_TRUE(r.done);
    return fmt::format("{} at {}", ename(r.err), r.pc);
  };
  EXPECT_EQ(error_of("halt\n"), "none at 0");
  EXPECT_EQ(error_of("fence ici\nici.send 0, 0, 0, 0, 0\nhalt\n"), "bad_field at 1");
  EXPECT_EQ(error_of(fmt::format("ici.send {}, 0, 8, 0, 0\nhalt\n", rows - 7)), "vmem_range at 0");
  EXPECT_EQ(error_of(fmt::format("ici.send 0, {}, 8, 0, 0\nhalt\n", rows - 7)), "vmem_range at 0");
  EXPECT_EQ(error_of(fmt::format("ici.send {}, 0, 8, 0, 0\nhalt\n", rows - 8)), "none at 1");
  EXPECT_EQ(error_of(fmt::format("ici.send 0, {}, 8, 0, 0\nhalt\n", rows - 8)), "none at 1");
  // rows == 0 before the range checks; the range of vaddr before raddr's.
  EXPECT_EQ(error_of(fmt::format("ici.send {}, {}, 0, 0, 0\nhalt\n", rows, rows)), "bad_field at 0");
  // fence's unit field has room for 5..7, which are no queue.
  EXPECT_EQ(error_of("fence ici\nfence 4\nfence 5\nhalt\n"), "bad_field at 2");
  EXPECT_EQ(error_of("fence 7\nhalt\n"), "bad_field at 0");
  // The checks are the front end's: a bad send after a waiting one is still found, in order.
  EXPECT_EQ(error_of("ici.send 0, 0, 1, 0, 0 wait=9\nici.send 0, 0, 0, 0, 0\nhalt\n"), "bad_field at 1");
}

TEST(IciChip, ConfigErrorAtExecution) {
  ChipModel chip(tiny());
  const std::vector<IciRegs> bad = {
      {0, 1, 0, 0, 0, 0, 1, 1}, {33, 1, 0, 0, 0, 0, 1, 1}, {2, 2, 0, 0, 0, 0, 0, 1},
      {2, 2, 0, 0, 1, 0, 2, 1}, {2, 2, 1, 1, 0, 0, 1, 1},  {4, 4, 0, 3, 0, 0, 4, 3},
  };
  const auto prog = assemble(R"(
      dma.ld 0, 0, 1, 1, 0 signal=1
      dma.st 0, 10, 1, 1, 0 wait=1
      fence ici
      ici.send 0, 8, 1, 0, 0 signal=2
      halt
  )");
  chip.write_hbm(0, block(1, 1, chip.lanes()));
  for (const IciRegs& r : bad) {
    chip.set_ici(r);
    chip.load(prog);
    const auto res = chip.run();
    EXPECT_TRUE(res.done);
    EXPECT_EQ(ename(res.err), "ici_config");
    EXPECT_EQ(res.pc, 3u);
  }
  chip.set_pod_mode(false);  // set_ici() turned it on for the slices of more than one chip
  // Without an ici.send inconsistent registers do no harm.
  chip.load(assemble("dma.ld 0, 0, 1, 1, 0\nhalt\n"));
  EXPECT_EQ(ename(chip.run().err), "none");
  // The check is made when the send starts, after its wait: one that never starts is a deadlock.
  chip.load(assemble("ici.send 0, 8, 1, 0, 0 wait=3\nhalt\n"));
  const auto d = chip.run();
  EXPECT_EQ(ename(d.err), "deadlock");
  EXPECT_EQ(d.pc, 0u);
}

TEST(IciChip, AbsoluteOutsideTheSliceIsIciSliceAtItsPc) {
  ChipModel chip(tiny());
  std::vector<IciMessage> sent;
  chip.set_ici_sender([&](IciMessage m) { sent.push_back(std::move(m)); });
  chip.set_ici(IciRegs{4, 4, 2, 1, 1, 1, 3, 2});  // slice [1, 4) x [1, 3)
  EXPECT_TRUE(chip.pod_mode());
  for (const auto& [dx, dy, ok] : std::vector<std::tuple<int, int, bool>>{
           {0, 0, true}, {2, 1, true}, {3, 0, false}, {0, 2, false}, {-1, 0, false}, {0, -1, false}, {31, 31, false}}) {
    sent.clear();
    chip.load(assemble(
        fmt::format("fence ici\nici.send 0, 0, 1, 0, 0\nici.send 0, 4, 2, {}, {}, abs=1, rsem=7\nhalt\n", dx, dy)));
    const auto r = chip.run();
    ASSERT_TRUE(r.done) << dx << ", " << dy;
    if (ok) {
      EXPECT_EQ(ename(r.err), "none");
      ASSERT_EQ(sent.size(), 2u);
      EXPECT_EQ(sent[1].dst, (Coord{1u + static_cast<unsigned>(dx), 1u + static_cast<unsigned>(dy)}));
      EXPECT_EQ(sent[1].src, (Coord{2, 1}));
      EXPECT_EQ(sent[1].raddr, 4u);
      EXPECT_EQ(sent[1].rsem, 7u);
      EXPECT_EQ(sent[1].pc, 2u);
      EXPECT_EQ(sent[1].words.size(), 2u * chip.lanes());
    } else {
      EXPECT_EQ(ename(r.err), "ici_slice") << dx << ", " << dy;
      EXPECT_EQ(r.pc, 2u);
      EXPECT_EQ(sent.size(), 1u);  // the first send went
    }
  }
}

TEST(IciChip, SendsElsewhereNeedAHook) {
  ChipModel chip(tiny());
  chip.set_ici(IciRegs{2, 1, 0, 0, 0, 0, 2, 1});
  chip.set_pod_mode(false);
  chip.load(assemble("ici.send 0, 0, 1, 1, 0\nhalt\n"));
  EXPECT_THROW(chip.run(), std::logic_error);
  // To itself it needs none (dx = 2 wraps round the 2-chip slice).
  chip.load(assemble("ici.send 0, 0, 1, 2, 0\nhalt\n"));
  EXPECT_EQ(ename(chip.run().err), "none");
}

TEST(IciChip, PodModeWaitsInsteadOfDeadlock) {
  ChipModel chip(tiny());
  const unsigned n = chip.lanes();
  const auto prog = assemble(R"(
      dma.ld 0, 0, 1, 1, 0 signal=1
      dma.st 64, 8, 1, 2, 0 wait=4
      vmov 100, 0, 1 wait=1
      halt
  )");
  chip.write_hbm(0, block(3, 1, n));
  // Outside pod mode: a deadlock, as before.
  chip.load(prog);
  auto r = chip.run();
  EXPECT_EQ(ename(r.err), "deadlock");
  EXPECT_EQ(r.pc, 1u);
  // In pod mode: waiting, at the same PC, on semaphore 4; then a message brings the count.
  chip.set_pod_mode(true);
  chip.load(prog);
  r = chip.run();
  EXPECT_FALSE(r.done);
  EXPECT_TRUE(r.waiting);
  EXPECT_EQ(ename(r.err), "none");
  EXPECT_EQ(r.wait_pc, 1u);
  EXPECT_EQ(r.wait_sem, 4u);
  EXPECT_EQ(r.steps, 2u);             // the load and the vmov ran
  EXPECT_EQ(chip.run().wait_pc, 1u);  // nothing changed
  const auto msg = block(9, 2, n);
  chip.deliver(64, msg, 0);  // rows without a semaphore: still waiting
  EXPECT_TRUE(chip.run().waiting);
  chip.deliver(64, msg, 4, 500);
  r = chip.run();
  EXPECT_TRUE(r.done);
  EXPECT_FALSE(r.waiting);
  EXPECT_EQ(ename(r.err), "none");
  EXPECT_EQ(chip.read_hbm(8, 2), msg);
  // The store waited for the count that arrived at 500: 500 + 2 beats + mem_latency.
  EXPECT_EQ(chip.stats().est_cycles, 500u + 2 + tiny().chip.mem_latency);
  EXPECT_EQ(chip.stats().ici_bytes_received, 2u * 2 * 4 * n);
  // set_ici() sets pod mode from the slice's size.
  chip.set_ici(IciRegs{2, 2, 0, 0, 0, 0, 1, 1});
  EXPECT_FALSE(chip.pod_mode());
  chip.set_ici(IciRegs{2, 2, 0, 0, 0, 0, 1, 2});
  EXPECT_TRUE(chip.pod_mode());
}

TEST(IciChip, DeliverChecksAndSemaphoreOverflow) {
  ChipModel chip(tiny());
  const unsigned n = chip.lanes(), rows = tiny().chip.vmem_rows;
  EXPECT_THROW(chip.deliver(0, std::vector<uint32_t>(n + 1), 0), std::invalid_argument);
  EXPECT_THROW(chip.deliver(0, std::vector<uint32_t>(n), tp::isa::kNumSems), std::invalid_argument);
  EXPECT_THROW(chip.deliver(rows - 1, std::vector<uint32_t>(2 * n), 0), std::out_of_range);
  EXPECT_NO_THROW(chip.deliver(rows - 2, std::vector<uint32_t>(2 * n), 0));
  chip.set_pod_mode(true);
  chip.load(assemble("vmov 1, 0, 1 wait=2\nhalt\n"));
  EXPECT_TRUE(chip.run().waiting);
  for (unsigned k = 0; k < 65535; ++k) chip.deliver(0, {}, 1);
  EXPECT_TRUE(chip.run().waiting);
  chip.deliver(0, {}, 1);  // the 65536th count
  const auto r = chip.run();
  EXPECT_TRUE(r.done);
  EXPECT_EQ(ename(r.err), "sem_overflow");
  EXPECT_EQ(r.pc, 0xffffffffu);
}

TEST(IciChip, TimingEstimate) {
  // tiny: n = 8, flit_bits 32: a row is a head flit and 8 body flits.
  ChipModel chip(tiny());
  std::vector<IciMessage> sent;
  chip.set_ici_sender([&](IciMessage m) { sent.push_back(std::move(m)); });
  chip.set_ici(IciRegs{4, 4, 0, 0, 0, 0, 4, 4});
  chip.load(assemble(R"(
      ici.send 0, 0, 8, 1, 0
      ici.send 0, 0, 2, 2, 3, abs=1 signal=1
      fence store wait=1
      halt
  )"));
  const auto r = chip.run();
  ASSERT_EQ(ename(r.err), "none");
  ASSERT_EQ(sent.size(), 2u);
  // Dispatched at 1: 72 flits, complete at 73, one hop. The second: 18 flits after the first
  // (74 .. 91 is 73 + 18), to (2, 3): two hops in x, one in y (the short way round).
  EXPECT_EQ(sent[0].arrive_t, 73u + 1);
  EXPECT_EQ(sent[1].arrive_t, 91u + 3);
  EXPECT_EQ(chip.stats().est_cycles, 91u);
  // The link latency is the preset's (a pod sets it from its topology).
  tp::Preset slow = tiny();
  slow.ici.link_latency = 5;
  ChipModel chip2(slow);
  chip2.set_ici_sender([&](IciMessage m) { sent.push_back(std::move(m)); });
  chip2.set_ici(IciRegs{4, 4, 0, 0, 0, 0, 4, 4});
  chip2.load(assemble("ici.send 0, 0, 8, 1, 0\nhalt\n"));
  chip2.run();
  EXPECT_EQ(sent.back().arrive_t, 73u + 5);
}

// A timing model that counts what it is told: another model plugs in.
class CountingTiming final : public ChipTiming {
 public:
  std::unique_ptr<ChipTiming> clone() const override { return std::make_unique<CountingTiming>(*this); }
  void reset() override { t_ = 0; }
  uint64_t dispatch(unsigned, uint64_t) override { return ++t_; }
  void halt() override { ++t_; }
  void scalar(bool) override { ++t_; }
  TimeSpan execute(unsigned, uint64_t, const tp::isa::Instr&, uint64_t ready, unsigned) override {
    t_ = std::max(t_, ready) + 100;
    return {ready, t_};
  }
  uint64_t ici_arrival(const tp::isa::Instr&, const TimeSpan& s, unsigned hops) const override {
    return s.complete + 1000 * hops;
  }
  uint64_t front_time() const override { return t_; }

 private:
  uint64_t t_ = 0;
};

TEST(IciChip, TimingModelIsPluggable) {
  ChipModel chip(tiny());
  chip.set_timing(std::make_unique<CountingTiming>());
  chip.load(assemble("dma.ld 0, 0, 1, 1, 0\nvmov 1, 0, 1\nhalt\n"));
  EXPECT_EQ(ename(chip.run().err), "none");
  // The counting model's numbers: dispatches at 1, 2, halt at 3; the two instructions 100 each.
  EXPECT_EQ(chip.stats().est_cycles, 203u);
  ChipModel copy = chip;  // copies the timing model and its state
  copy.load(assemble("halt\n"));
  copy.run();
  EXPECT_EQ(copy.stats().est_cycles, 1u);
  EXPECT_THROW(chip.set_timing(nullptr), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// The pod

std::vector<Slice> whole(unsigned kx, unsigned ky) { return {Slice{0, 0, kx, ky}}; }

void expect_ok(const PodResult& r) {
  EXPECT_TRUE(r.done) << r.report;
  EXPECT_FALSE(r.deadlock) << r.report;
  EXPECT_FALSE(r.errors) << r.report;
  EXPECT_TRUE(r.ok()) << r.report;
}

struct RingCase {
  unsigned kx, ky;
  int dx, dy;
  unsigned link_latency;
};

// Every chip loads its block, sends it to its neighbour (dx, dy), and stores the block that came.
TEST(Pod, RingShift) {
  for (const RingCase& c : {RingCase{4, 1, 1, 0, 1}, RingCase{1, 4, 0, 1, 1}, RingCase{3, 3, 1, 0, 3},
                            RingCase{3, 3, -1, 0, 1}, RingCase{2, 1, 1, 0, 1}, RingCase{4, 1, 1, 0, 2}}) {
    SCOPED_TRACE(fmt::format("{}x{} ring, ({}, {})", c.kx, c.ky, c.dx, c.dy));
    PodModel pod(tiny(), PodTopology{c.kx, c.ky, c.link_latency}, whole(c.kx, c.ky));
    const unsigned n = tiny().mxu.n;
    const auto prog = assemble(fmt::format(R"(
        dma.ld 0, 0, 1, 8, 0 signal=1                      ; my block
        ici.send 0, 64, 8, {}, {}, rsem=2 wait=1 signal=3  ; to the neighbour, at its row 64
        dma.st 64, 8, 1, 8, 0 wait=2                       ; the block that came
        halt
    )",
                                           c.dx, c.dy));
    for (unsigned y = 0; y < c.ky; ++y)
      for (unsigned x = 0; x < c.kx; ++x) {
        pod.chip(x, y).write_hbm(0, block(pod.index(x, y), 8, n));
        pod.load(x, y, prog);
      }
    const PodResult r = pod.run();
    expect_ok(r);
    EXPECT_EQ(r.messages, c.kx * c.ky);
    for (unsigned y = 0; y < c.ky; ++y)
      for (unsigned x = 0; x < c.kx; ++x) {
        const auto wrap = [](int v, unsigned k) { return static_cast<unsigned>((v % int(k) + int(k)) % int(k)); };
        const unsigned from = pod.index(wrap(int(x) - c.dx, c.kx), wrap(int(y) - c.dy, c.ky));
        EXPECT_EQ(pod.chip(x, y).read_hbm(8, 8), block(from, 8, n)) << "chip " << x << ", " << y;
        // Timing: the load completes at 1 + 8 + 12, the send 72 flits later (93); the block
        // arrives one hop later; the store waits for it, then takes 8 beats + mem_latency.
        const uint64_t arrive = 93 + c.link_latency;
        EXPECT_EQ(r.est_cycles[pod.index(x, y)], arrive + 8 + 12);
        EXPECT_TRUE(r.chips[pod.index(x, y)].done);
      }
    EXPECT_EQ(r.pod_est_cycles, 93 + c.link_latency + 8 + 12);
  }
}

TEST(Pod, RingShiftOnTheShippedOneByFourPod) {
  const tp::PodConfig cfg = tp::load_pod("1x4");
  PodModel pod(cfg);
  ASSERT_EQ(pod.topology().kx, 1u);
  ASSERT_EQ(pod.topology().ky, 4u);
  const unsigned n = pod.preset().mxu.n;
  const auto prog = tp::isa::assemble(R"(
      dma.ld 0, 0, 1, 4, 0 signal=1
      ici.send 0, 64, 4, 0, 1, rsem=2 wait=1
      dma.st 64, 8, 1, 4, 0 wait=2
      halt
  )",
                                      "ring.s", pod.preset());
  for (unsigned y = 0; y < 4; ++y) {
    pod.chip(0, y).write_hbm(0, block(y, 4, n));
    pod.load(0, y, prog);
  }
  expect_ok(pod.run());
  for (unsigned y = 0; y < 4; ++y) EXPECT_EQ(pod.chip(0, y).read_hbm(8, 4), block((y + 3) % 4, 4, n));
}

// All-gather on a w x h slice with two rings of relative sends: along x, then the gathered row
// along y. The same program on every chip. Chip (x, y) ends with, at rows (k*w + j) * B, the
// block of chip ((x - j) mod w, (y - k) mod h).
std::string ring_all_gather(unsigned w, unsigned h, unsigned B) {
  std::string s = fmt::format("dma.ld 0, 0, 1, {}, 0 signal=1\nfence ici wait=1\n", B);
  if (w > 1) {
    s += fmt::format("ici.send 0, {}, {}, 1, 0, rsem=2\n", B, B);
    for (unsigned j = 2; j < w; ++j)
      s += fmt::format("fence ici wait=2\nici.send {}, {}, {}, 1, 0, rsem=2\n", (j - 1) * B, j * B, B);
    s += "fence ici wait=2\n";
  }
  const unsigned row = w * B;
  if (h > 1) {
    s += fmt::format("ici.send 0, {}, {}, 0, 1, rsem=3\n", row, row);
    for (unsigned k = 2; k < h; ++k)
      s += fmt::format("fence ici wait=3\nici.send {}, {}, {}, 0, 1, rsem=3\n", (k - 1) * row, k * row, row);
    s += "fence ici wait=3\n";
  }
  s += fmt::format("fence ici signal=4\ndma.st 0, 1000, 1, {}, 0 wait=4\nhalt\n", w * h * B);
  return s;
}

TEST(Pod, AllGatherWithRings) {
  for (const auto& [w, h] : std::vector<std::pair<unsigned, unsigned>>{{2, 2}, {3, 2}, {1, 3}, {4, 4}}) {
    SCOPED_TRACE(fmt::format("{}x{}", w, h));
    constexpr unsigned B = 3;
    PodModel pod(tiny(), PodTopology{w, h, 1}, whole(w, h));
    const unsigned n = tiny().mxu.n;
    const auto prog = assemble(ring_all_gather(w, h, B));
    for (unsigned y = 0; y < h; ++y)
      for (unsigned x = 0; x < w; ++x) {
        pod.chip(x, y).write_hbm(0, block(pod.index(x, y), B, n));
        pod.load(x, y, prog);
      }
    const PodResult r = pod.run();
    expect_ok(r);
    EXPECT_EQ(r.messages, w * h * ((w - 1) + (h - 1)));
    for (unsigned y = 0; y < h; ++y)
      for (unsigned x = 0; x < w; ++x) {
        const auto got = pod.chip(x, y).read_hbm(1000, w * h * B);
        for (unsigned k = 0; k < h; ++k)
          for (unsigned j = 0; j < w; ++j) {
            const auto want = block(pod.index((x + w - j) % w, (y + h - k) % h), B, n);
            const auto at = got.begin() + static_cast<std::ptrdiff_t>((k * w + j) * B * n);
            EXPECT_TRUE(std::equal(want.begin(), want.end(), at))
                << "chip " << x << ", " << y << " slot " << j << ", " << k;
          }
      }
  }
}

// All-gather on the 8x8 pod with absolute sends: every chip sends its block to every chip of
// the slice (itself included), at rows 64 + B * (its slice index).
TEST(Pod, AllGatherWithAbsoluteSendsOn8x8) {
  const tp::PodConfig cfg = tp::load_pod("8x8");
  PodModel pod(cfg);
  ASSERT_EQ(pod.size(), 64u);
  const unsigned n = pod.preset().mxu.n;
  constexpr unsigned B = 2;
  for (unsigned y = 0; y < 8; ++y)
    for (unsigned x = 0; x < 8; ++x) {
      const unsigned me = x + 8 * y;
      std::string s = fmt::format("dma.ld 0, 0, 1, {}, 0 signal=1\nfence ici wait=1\n", B);
      for (unsigned k = 0; k < 64; ++k)
        s += fmt::format("ici.send 0, {}, {}, {}, {}, abs=1, rsem=2\n", 64 + B * me, B, (k + me) % 8, (k + me) / 8 % 8);
      for (unsigned k = 0; k < 63; ++k) s += "fence store wait=2\n";
      s += fmt::format("dma.st 64, 500, 1, {}, 0 wait=2\nhalt\n", 64 * B);
      pod.chip(x, y).write_hbm(0, block(me, B, n));
      pod.load(x, y, tp::isa::assemble(s, "ag.s", pod.preset()));
    }
  const PodResult r = pod.run();
  expect_ok(r);
  EXPECT_EQ(r.messages, 64u * 64);
  std::vector<uint32_t> want;
  for (unsigned k = 0; k < 64; ++k) {
    const auto b = block(k, B, n);
    want.insert(want.end(), b.begin(), b.end());
  }
  for (unsigned i = 0; i < 64; ++i) EXPECT_EQ(pod.chip(i % 8, i / 8).read_hbm(500, 64 * B), want) << "chip " << i;
}

// Two slices on a 5x4 torus and an idle chip; relative sends wrap round each slice, absolute
// ones address it; nothing crosses into the other slice.
TEST(Pod, SendsStayInsideTheirSlice) {
  const std::vector<Slice> slices = {Slice{1, 1, 3, 2}, Slice{0, 3, 5, 1}, Slice{4, 0, 1, 1}};
  PodModel pod(tiny(), PodTopology{5, 4, 2}, slices);
  const unsigned n = tiny().mxu.n;
  EXPECT_EQ(pod.slice_index(2, 2), 0u);
  EXPECT_EQ(pod.slice_index(0, 3), 1u);
  EXPECT_EQ(pod.slice_index(0, 0), std::nullopt);
  EXPECT_THROW(pod.load(0, 0, assemble("halt\n")), std::invalid_argument);
  EXPECT_FALSE(pod.chip(4, 0).pod_mode());  // a 1x1 slice: a standalone chip
  EXPECT_TRUE(pod.chip(1, 1).pod_mode());
  EXPECT_EQ(pod.chip(3, 2).ici(), (IciRegs{5, 4, 3, 2, 1, 1, 3, 2}));
  struct Send {
    int dx, dy;
    bool abs;
  };
  const std::vector<Send> sends = {{1, 0, false}, {-4, 3, false}, {31, -32, false}, {2, 1, true}, {0, 0, false}};
  // Every chip of every slice sends a row of its own to each destination (row 100 + 2k, the
  // k-th send), and waits for as many rows as will come (counted on the host).
  std::map<std::pair<unsigned, unsigned>, unsigned> incoming;
  std::map<std::pair<unsigned, unsigned>, std::vector<std::pair<unsigned, unsigned>>> expect;  // dst -> (raddr, src)
  for (unsigned si = 0; si < slices.size(); ++si) {
    const Slice& s = slices[si];
    for (unsigned y = s.y0; y < s.y0 + s.h; ++y)
      for (unsigned x = s.x0; x < s.x0 + s.w; ++x)
        for (unsigned k = 0; k < sends.size(); ++k) {
          const Send& d = sends[k];
          unsigned tx = 0, ty = 0;
          if (d.abs) {
            tx = s.x0 + static_cast<unsigned>(d.dx) % s.w;  // the sends below keep abs inside every slice
            ty = s.y0 + static_cast<unsigned>(d.dy) % s.h;
          } else {
            tx = step_in_slice(x, s.x0, s.w, d.dx);
            ty = step_in_slice(y, s.y0, s.h, d.dy);
          }
          ++incoming[{tx, ty}];
          expect[{tx, ty}].push_back({200 + 8 * pod.index(x, y) + k, pod.index(x, y)});
        }
  }
  for (unsigned si = 0; si < slices.size(); ++si) {
    const Slice& s = slices[si];
    for (unsigned y = s.y0; y < s.y0 + s.h; ++y)
      for (unsigned x = s.x0; x < s.x0 + s.w; ++x) {
        const unsigned me = pod.index(x, y);
        std::string t = "dma.ld 0, 0, 1, 1, 0 signal=1\nfence ici wait=1\n";
        for (unsigned k = 0; k < sends.size(); ++k) {
          const Send& d = sends[k];
          const int dx = d.abs ? static_cast<int>(static_cast<unsigned>(d.dx) % s.w) : d.dx;
          const int dy = d.abs ? static_cast<int>(static_cast<unsigned>(d.dy) % s.h) : d.dy;
          t += fmt::format("ici.send 0, {}, 1, {}, {}, rsem=5{}\n", 200 + 8 * me + k, dx, dy, d.abs ? ", abs=1" : "");
        }
        for (unsigned k = 0; k < incoming[{x, y}]; ++k) t += "fence vec wait=5\n";
        t += "halt\n";
        pod.chip(x, y).write_hbm(0, block(me, 1, n));
        pod.load(x, y, assemble(t));
      }
  }
  const PodResult r = pod.run();
  expect_ok(r);
  for (unsigned y = 0; y < 4; ++y)
    for (unsigned x = 0; x < 5; ++x) {
      const ChipModel& c = pod.chip(x, y);
      std::vector<uint32_t> want(c.vmem().size(), 0u);
      if (pod.loaded(x, y)) std::copy_n(block(pod.index(x, y), 1, n).begin(), n, want.begin());
      for (const auto& [raddr, src] : expect[{x, y}])
        std::copy_n(block(src, 1, n).begin(), n, want.begin() + raddr * n);
      EXPECT_TRUE(std::equal(want.begin(), want.end(), c.vmem().begin())) << "chip " << x << ", " << y;
    }
}

TEST(Pod, MessagesFromOneSenderArriveInIssueOrderRowsBeforeTheirSignal) {
  PodModel pod(tiny(), PodTopology{2, 1, 1}, whole(2, 1));
  const unsigned n = tiny().mxu.n;
  pod.chip(0, 0).write_hbm(0, block(0, 6, n));
  // Three sends of different rows to the same rows of chip 1, which waits for all three counts.
  pod.load(0, 0, assemble(R"(
      dma.ld 0, 0, 1, 6, 0 signal=1
      ici.send 0, 50, 2, 1, 0 wait=1
      ici.send 2, 50, 2, 1, 0
      ici.send 4, 50, 2, 1, 0, rsem=3
      halt
  )"));
  pod.load(1, 0, assemble("dma.st 50, 0, 1, 2, 0 wait=3\nhalt\n"));
  expect_ok(pod.run());
  const auto b = block(0, 6, n);
  EXPECT_EQ(pod.chip(1, 0).read_hbm(0, 2), std::vector<uint32_t>(b.begin() + 4 * n, b.end()));
}

TEST(Pod, IciSliceErrorStopsOnlyThatChip) {
  PodModel pod(tiny(), PodTopology{2, 2, 1}, whole(2, 2));
  const auto good = assemble("ici.send 0, 8, 1, 1, 0, rsem=2\nfence ici wait=2\nhalt\n");
  // Chip (1, 0): its third instruction sends outside the 2x2 slice (abs x = 2).
  const auto bad = assemble("ici.send 0, 8, 1, 1, 0, rsem=2\nfence ici wait=2\nici.send 0, 0, 1, 2, 0, abs=1\nhalt\n");
  pod.load(0, 0, good);
  pod.load(1, 0, bad);
  pod.load(0, 1, good);
  pod.load(1, 1, good);
  const PodResult r = pod.run();
  EXPECT_TRUE(r.done) << r.report;
  EXPECT_FALSE(r.deadlock);
  EXPECT_TRUE(r.errors);
  EXPECT_FALSE(r.ok());
  const auto& e = r.chips[pod.index(1, 0)];
  EXPECT_EQ(ename(e.err), "ici_slice");
  EXPECT_EQ(e.pc, 2u);
  for (unsigned i : {0u, 2u, 3u}) EXPECT_EQ(ename(r.chips[i].err), "none") << i;
  EXPECT_NE(r.report.find("chip (1, 0): error ici_slice at pc 2"), std::string::npos) << r.report;

  // When others wait on the chip that failed, they wait forever: a deadlock naming all of them.
  PodModel pod2(tiny(), PodTopology{2, 2, 1}, whole(2, 2));
  pod2.load(0, 0, assemble("fence ici wait=2\nhalt\n"));  // waits on (1, 0), which fails first
  pod2.load(1, 0, assemble("ici.send 0, 0, 1, 0, 5, abs=1\nici.send 0, 8, 1, -1, 0, rsem=2\nhalt\n"));
  pod2.load(0, 1, assemble("halt\n"));
  const PodResult r2 = pod2.run();
  EXPECT_TRUE(r2.deadlock) << r2.report;
  EXPECT_FALSE(r2.done);
  EXPECT_NE(r2.report.find("deadlock"), std::string::npos) << r2.report;
  EXPECT_NE(r2.report.find("chip (0, 0): waits at pc 0 on semaphore 2"), std::string::npos) << r2.report;
  EXPECT_NE(r2.report.find("chip (1, 0): error ici_slice at pc 0"), std::string::npos) << r2.report;
  EXPECT_NE(r2.report.find("chip (0, 1): done at pc 0"), std::string::npos) << r2.report;
  EXPECT_EQ(r2.report.find("chip (1, 1)"), std::string::npos) << r2.report;  // not loaded
}

TEST(Pod, IciConfigErrorOnAChipWithBadRegisters) {
  PodModel pod(tiny(), PodTopology{2, 2, 1}, whole(2, 2));
  pod.chip(1, 1).set_ici(IciRegs{2, 2, 1, 1, 0, 0, 1, 1});  // (1, 1) outside its own slice
  pod.chip(1, 1).set_pod_mode(true);
  for (unsigned i = 0; i < 4; ++i)
    pod.load(i % 2, i / 2, assemble("fence vec\nvmov 1, 0, 1\nici.send 0, 8, 1, 0, 0\nhalt\n"));
  const PodResult r = pod.run();
  EXPECT_TRUE(r.done);
  EXPECT_EQ(ename(r.chips[3].err), "ici_config");
  EXPECT_EQ(r.chips[3].pc, 2u);
  for (unsigned i = 0; i < 3; ++i) EXPECT_EQ(ename(r.chips[i].err), "none");
}

TEST(Pod, DeadlockReportNamesChipPcAndSemaphore) {
  PodModel pod(tiny(), PodTopology{3, 1, 1}, whole(3, 1));
  pod.load(0, 0, assemble("ici.send 0, 8, 1, 1, 0, rsem=4\nhalt\n"));          // to (1, 0) on 4
  pod.load(1, 0, assemble("fence load wait=4\nvmov 2, 0, 1 wait=5\nhalt\n"));  // 5 never comes
  pod.load(2, 0, assemble("dma.ld 0, 0, 1, 1, 0 signal=1\nfence ici wait=1\nhalt\n"));
  const PodResult r = pod.run();
  EXPECT_TRUE(r.deadlock);
  EXPECT_FALSE(r.done);
  EXPECT_FALSE(r.errors);
  EXPECT_TRUE(r.chips[1].waiting);
  EXPECT_EQ(r.chips[1].wait_pc, 1u);
  EXPECT_EQ(r.chips[1].wait_sem, 5u);
  EXPECT_TRUE(r.chips[0].done);
  EXPECT_TRUE(r.chips[2].done);
  EXPECT_EQ(r.messages, 1u);
  EXPECT_NE(r.report.find("pod 3x1 (preset 'tiny'): deadlock"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("chip (1, 0): waits at pc 1 on semaphore 5"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("chip (0, 0): done at pc 1"), std::string::npos) << r.report;
  // The run can be asked again: the same state.
  const PodResult again = pod.run();
  EXPECT_TRUE(again.deadlock);
  EXPECT_EQ(again.messages, 0u);
}

TEST(Pod, WatchdogStopsAndResumes) {
  PodModel pod(tiny(), PodTopology{2, 1, 1}, whole(2, 1));
  const auto prog = assemble("ici.send 0, 8, 1, 1, 0, rsem=2\nfence ici wait=2\nvmov 20, 8, 1\nhalt\n");
  pod.load(0, 0, prog);
  pod.load(1, 0, prog);
  PodResult r = pod.run(1);
  EXPECT_FALSE(r.done);
  EXPECT_FALSE(r.deadlock);
  EXPECT_EQ(r.steps, 1u);
  EXPECT_NE(r.report.find("watchdog"), std::string::npos) << r.report;
  r = pod.run();
  expect_ok(r);
  EXPECT_EQ(r.steps, 6u);
}

TEST(Pod, ConstructorValidates) {
  EXPECT_THROW(PodModel(tiny(), PodTopology{0, 1, 1}, {}), std::invalid_argument);
  EXPECT_THROW(PodModel(tiny(), PodTopology{33, 1, 1}, {}), std::invalid_argument);
  EXPECT_THROW(PodModel(tiny(), PodTopology{2, 2, 1}, {Slice{1, 0, 2, 1}}), std::invalid_argument);
  EXPECT_THROW(PodModel(tiny(), PodTopology{2, 2, 1}, {Slice{0, 0, 0, 1}}), std::invalid_argument);
  try {
    PodModel(tiny(), PodTopology{4, 4, 1}, {Slice{0, 0, 2, 2}, Slice{1, 1, 2, 2}});
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("overlaps slice 0"), std::string::npos) << e.what();
  }
  PodModel pod(tiny(), PodTopology{3, 2, 1}, {});
  EXPECT_EQ(pod.size(), 6u);
  EXPECT_EQ(pod.index(2, 1), 5u);
  EXPECT_EQ(pod.coord(5), (Coord{2, 1}));
  EXPECT_THROW(pod.chip(3, 0), std::out_of_range);
  EXPECT_THROW(pod.index(0, 2), std::out_of_range);
  const PodResult r = pod.run();  // nothing loaded: done at once
  EXPECT_TRUE(r.done);
}

TEST(Pod, FromTheShippedConfig) {
  PodModel one(tp::load_pod("1x1"));
  EXPECT_EQ(one.size(), 1u);
  EXPECT_FALSE(one.chip(0, 0).pod_mode());
  const unsigned n = one.preset().mxu.n;
  one.chip(0, 0).write_hbm(0, block(5, 1, n));
  one.load(0, 0,
           tp::isa::assemble("dma.ld 0, 0, 1, 1, 0 signal=1\nici.send 0, 9, 1, 3, -2, rsem=2 wait=1\n"
                             "dma.st 9, 4, 1, 1, 0 wait=2\nhalt\n",
                             "one.s", one.preset()));
  expect_ok(one.run());
  EXPECT_EQ(one.chip(0, 0).read_hbm(4, 1), block(5, 1, n));
  PodModel halves(tp::load_pod("4x4-halves"));
  EXPECT_EQ(halves.slices().size(), 2u);
  EXPECT_EQ(halves.slice_index(2, 0), 1u);
  EXPECT_EQ(halves.preset().name, "small");
  EXPECT_EQ(halves.chip(3, 3).ici(), (IciRegs{4, 4, 3, 3, 2, 0, 2, 4}));
}

// ---------------------------------------------------------------------------------------------
// Random programs against a host reference

// A random pod program: phases of sends between the chips of a slice. In each phase every chip
// sends up to three messages (random rows of what it holds, to random relative or absolute
// destinations, each landing in a zone of the destination that nothing else writes, signalling
// the phase's semaphore), after waiting for every message of the phase before: in its ICI queue,
// or in its vector queue, which then copies them to a work zone with vmov and lets the ICI
// queue go on. The host computes every chip's final VMEM by copying rows in phase order.
struct RandomPod {
  tp::Preset preset;
  PodTopology topo;
  Slice slice;
  std::vector<std::string> programs;            // by chip index; "" for chips outside the slice
  std::vector<std::vector<uint32_t>> initial;   // by chip index: rows 0 .. B-1
  std::vector<std::vector<uint32_t>> expected;  // by chip index: rows 0 .. used-1
  std::vector<unsigned> used;                   // rows in use on each chip
  unsigned messages = 0;
};

RandomPod random_pod(std::mt19937_64& rng) {
  RandomPod rp;
  rp.preset = rng() % 3 == 0 ? odd() : tiny();
  rp.preset.chip.queue = std::vector<unsigned>{1, 2, rp.preset.chip.queue}[rng() % 3];
  const unsigned n = rp.preset.mxu.n, vrows = rp.preset.chip.vmem_rows;
  rp.topo = PodTopology{1 + static_cast<unsigned>(rng() % 4), 1 + static_cast<unsigned>(rng() % 4),
                        1 + static_cast<unsigned>(rng() % 3)};
  auto pick = [&](unsigned lo, unsigned hi) { return lo + static_cast<unsigned>(rng() % (hi - lo + 1)); };
  rp.slice.w = pick(1, rp.topo.kx);
  rp.slice.h = pick(1, rp.topo.ky);
  rp.slice.x0 = pick(0, rp.topo.kx - rp.slice.w);
  rp.slice.y0 = pick(0, rp.topo.ky - rp.slice.h);
  if (rp.slice.w * rp.slice.h == 1 && rp.topo.kx * rp.topo.ky > 1) rp.slice = Slice{0, 0, rp.topo.kx, rp.topo.ky};
  const Slice& s = rp.slice;
  const unsigned chips = rp.topo.kx * rp.topo.ky;
  const unsigned B = pick(1, 6);
  const unsigned phases = pick(1, 4);

  std::vector<unsigned> members;
  for (unsigned y = s.y0; y < s.y0 + s.h; ++y)
    for (unsigned x = s.x0; x < s.x0 + s.w; ++x) members.push_back(x + y * rp.topo.kx);

  std::vector<std::vector<uint32_t>> state(chips);  // the host's VMEM, by chip
  rp.used.assign(chips, 0);
  rp.initial.resize(chips);
  struct Region {
    unsigned first, rows;
  };
  std::vector<std::vector<Region>> avail(chips);  // what each chip may send in the next phase
  for (unsigned c : members) {
    state[c].assign(std::size_t{vrows} * n, 0u);
    for (std::size_t k = 0; k < std::size_t{B} * n; ++k) state[c][k] = static_cast<uint32_t>(rng());
    rp.initial[c].assign(state[c].begin(), state[c].begin() + static_cast<std::ptrdiff_t>(B * n));
    rp.used[c] = B;
    avail[c].push_back({0, B});
  }
  auto alloc = [&](unsigned c, unsigned rows) -> int {
    if (rp.used[c] + rows > vrows - 1) return -1;
    const unsigned at = rp.used[c];
    rp.used[c] += rows;
    return static_cast<int>(at);
  };
  auto copy_rows = [&](unsigned from, unsigned src, unsigned to, unsigned dst, unsigned rows) {
    std::copy_n(state[from].begin() + static_cast<std::ptrdiff_t>(src * n), rows * n,
                state[to].begin() + static_cast<std::ptrdiff_t>(dst * n));
  };

  std::vector<std::string> text(chips);
  for (unsigned c : members) text[c] = fmt::format("dma.ld 0, 0, 1, {}, 0 signal=1\nfence ici wait=1\n", B);
  std::vector<unsigned> in_prev(chips, 0);       // messages of the previous phase to each chip
  std::vector<Region> zone_prev(chips, {0, 0});  // where they landed (contiguous)
  for (unsigned p = 0; p < phases; ++p) {
    const unsigned S = 2 + p, T = 8 + p, Sprev = 1 + p;
    // Wait for the previous phase: in the ICI queue, or in the vector queue plus a vmov.
    for (unsigned c : members) {
      const bool via_vec = in_prev[c] > 0 && rng() % 2 == 0;
      const char* q = via_vec ? "vec" : "ici";
      for (unsigned k = 0; k < in_prev[c]; ++k) text[c] += fmt::format("fence {} wait={}\n", q, Sprev);
      if (in_prev[c] > 0) avail[c].push_back(zone_prev[c]);
      if (via_vec) {
        const int work = alloc(c, zone_prev[c].rows);
        if (work < 0) {
          text[c] += fmt::format("fence vec signal={}\n", T);
        } else {
          text[c] += fmt::format("vmov {}, {}, {} signal={}\n", work, zone_prev[c].first, zone_prev[c].rows, T);
          copy_rows(c, zone_prev[c].first, c, static_cast<unsigned>(work), zone_prev[c].rows);
          avail[c].push_back({static_cast<unsigned>(work), zone_prev[c].rows});
        }
        text[c] += fmt::format("fence ici wait={}\n", T);
      }
    }
    // This phase's sends; each destination's zones of the phase are contiguous, allocated after
    // every send is chosen.
    struct Msg {
      unsigned from, to, src, rows;
      int dx, dy;
      bool abs;
    };
    std::vector<Msg> msgs;
    for (unsigned c : members) {
      const unsigned count = pick(0, 3);
      for (unsigned k = 0; k < count; ++k) {
        const Region& reg = avail[c][rng() % avail[c].size()];
        const unsigned rows = pick(1, std::min(reg.rows, 4u));
        const unsigned src = reg.first + pick(0, reg.rows - rows);
        Msg m{c, 0, src, rows, 0, 0, rng() % 3 == 0};
        const unsigned x = c % rp.topo.kx, y = c / rp.topo.kx;
        if (m.abs) {
          m.dx = static_cast<int>(pick(0, s.w - 1));
          m.dy = static_cast<int>(pick(0, s.h - 1));
          m.to = (s.x0 + static_cast<unsigned>(m.dx)) + (s.y0 + static_cast<unsigned>(m.dy)) * rp.topo.kx;
        } else {
          m.dx = static_cast<int>(pick(0, 63)) - 32;
          m.dy = rng() % 2 ? static_cast<int>(pick(0, 4)) - 2 : static_cast<int>(pick(0, 63)) - 32;
          m.to = step_in_slice(x, s.x0, s.w, m.dx) + step_in_slice(y, s.y0, s.h, m.dy) * rp.topo.kx;
        }
        msgs.push_back(m);
      }
    }
    std::vector<unsigned> in_now(chips, 0);
    std::vector<Region> zone_now(chips, {0, 0});
    for (unsigned c : members) zone_now[c] = {rp.used[c], 0};
    std::vector<std::pair<Msg, unsigned>> placed;  // message, raddr
    for (const Msg& m : msgs) {
      if (rp.used[m.to] + m.rows > vrows - 1) continue;  // no room: not sent
      const unsigned raddr = rp.used[m.to];
      rp.used[m.to] += m.rows;
      zone_now[m.to].rows += m.rows;
      ++in_now[m.to];
      placed.push_back({m, raddr});
    }
    for (const auto& [m, raddr] : placed) {
      text[m.from] += fmt::format("ici.send {}, {}, {}, {}, {}, rsem={}{}\n", m.src, raddr, m.rows, m.dx, m.dy, S,
                                  m.abs ? ", abs=1" : "");
      copy_rows(m.from, m.src, m.to, raddr, m.rows);
      ++rp.messages;
    }
    in_prev = in_now;
    zone_prev = zone_now;
  }
  // The last phase's messages, then every send complete, then the store of every used row.
  for (unsigned c : members) {
    for (unsigned k = 0; k < in_prev[c]; ++k) text[c] += fmt::format("fence ici wait={}\n", 1 + phases);
    text[c] += fmt::format("fence ici signal=15\ndma.st 0, 2000, 1, {}, 0 wait=15\nhalt\n", rp.used[c]);
  }
  rp.programs = text;
  rp.expected.resize(chips);
  for (unsigned c : members)
    rp.expected[c].assign(state[c].begin(), state[c].begin() + static_cast<std::ptrdiff_t>(rp.used[c] * n));
  return rp;
}

PodModel build(const RandomPod& rp) {
  PodModel pod(rp.preset, rp.topo, {rp.slice});
  for (unsigned i = 0; i < pod.size(); ++i) {
    if (rp.programs[i].empty()) continue;
    const Coord c = pod.coord(i);
    pod.chip(c.x, c.y).write_hbm(0, rp.initial[i]);
    pod.load(c.x, c.y, tp::isa::assemble(rp.programs[i], fmt::format("chip{}.s", i), rp.preset));
  }
  return pod;
}

TEST(Pod, RandomProgramsMatchTheHostReference) {
  const uint64_t seed = tp::tb::test_seed(tp::tb::current_test_name());
  std::mt19937_64 rng(seed);
  unsigned total_messages = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const RandomPod rp = random_pod(rng);
    SCOPED_TRACE(fmt::format("seed {} trial {}: preset {} (queue {}), torus {}x{}, slice [{}, {}) x [{}, {})", seed,
                             trial, rp.preset.name, rp.preset.chip.queue, rp.topo.kx, rp.topo.ky, rp.slice.x0,
                             rp.slice.x0 + rp.slice.w, rp.slice.y0, rp.slice.y0 + rp.slice.h));
    PodModel pod = build(rp);
    const PodResult r = pod.run(10'000'000);
    ASSERT_TRUE(r.ok()) << r.report;
    // The pod carries the messages of slices of more than one chip; a 1x1 slice's chip delivers
    // to itself.
    EXPECT_EQ(r.messages, rp.slice.w * rp.slice.h > 1 ? rp.messages : 0u);
    total_messages += rp.messages;
    for (unsigned i = 0; i < pod.size(); ++i) {
      if (rp.programs[i].empty()) continue;
      const Coord c = pod.coord(i);
      ASSERT_EQ(pod.chip(c.x, c.y).read_hbm(2000, rp.used[i]), rp.expected[i])
          << "chip (" << c.x << ", " << c.y << ")\n"
          << rp.programs[i];
      EXPECT_GE(r.pod_est_cycles, r.est_cycles[i]);
    }
    // Deterministic: the same pod again gives the same estimates.
    PodModel again = build(rp);
    const PodResult r2 = again.run(10'000'000);
    EXPECT_EQ(r2.est_cycles, r.est_cycles);
    EXPECT_EQ(r2.report, r.report);
  }
  EXPECT_GT(total_messages, 500u);  // the programs do send
}

}  // namespace
