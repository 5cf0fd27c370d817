// MXU regression against the golden model, bit for bit, at the preset this binary was built
// for (TP_PRESET). The array alone (Vmxu_array_*) is driven with result back-pressure; the whole
// unit (Vmxu_*) runs tiled matmuls through the accumulator memory.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <random>

#include TP_MXU_HEADER
#include TP_MXU_ARRAY_HEADER
#include "bf16_random.h"
#include "config.h"
#include "fp.h"
#include "mxu_harness.h"
#include "mxu_matmul.h"
#include "mxu_model.h"

namespace {

using namespace tp::tb;
using tp::golden::MxuModel;
using Unit = MxuHarness<TP_MXU_CLASS>;
using Array = MxuHarness<TP_MXU_ARRAY_CLASS>;

class Mxu : public ::testing::Test {
 protected:
  void SetUp() override {
    preset_ = tp::load_preset(TP_PRESET);
    n_ = preset_.mxu.n;
    name_ = tp::tb::current_test_name();
    seed_ = test_seed(name_, TP_PRESET);
    rng_.seed(seed_);
  }

  MxuStimulus stim(double w_gap, double a_gap, double out_stall) const {
    return {w_gap, a_gap, out_stall, seed_ ^ 0x5eedu, wave_path(std::string(TP_PRESET) + "." + name_)};
  }

  // Compare C against the golden matmul; report the first mismatches with their coordinates.
  void expect_matmul(const MatmulShape& s, const std::vector<uint16_t>& a, const std::vector<uint16_t>& b,
                     const std::vector<uint32_t>& c) {
    const auto want = tp::golden::mxu_matmul(n_, s.m, s.k, s.ncols, a, b);
    ASSERT_EQ(c.size(), want.size());
    unsigned bad = 0;
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (c[i] != want[i] && ++bad <= 8)
        ADD_FAILURE() << fmt::format("C[{}][{}] = {:#010x}, golden {:#010x} (shape {}x{}x{}, seed {})", i / s.ncols,
                                     i % s.ncols, c[i], want[i], s.m, s.k, s.ncols, seed_);
    }
    EXPECT_EQ(bad, 0u) << bad << " of " << c.size() << " results differ";
  }

  void matmul_case(Unit& h, const MatmulShape& s, const ValueMix& mix) {
    const auto a = random_bf16s(rng_, std::size_t{s.m} * s.k, mix);
    const auto b = random_bf16s(rng_, std::size_t{s.k} * s.ncols, mix);
    expect_matmul(s, a, b, run_matmul(h, preset_.mxu.acc_rows, s, a, b));
  }

  tp::Preset preset_;
  unsigned n_ = 0;
  std::string name_;
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

// --- the array alone: result order, tags, back-pressure ------------------------------------------

TEST_F(Mxu, ArrayRandomTilesWithStallsOnAllSides) {
  // Several stall regimes, from none to heavy result back-pressure: every row comes out once,
  // in order, with its tag, bit-exact.
  const struct {
    double w_gap, a_gap, out_stall;
  } regimes[] = {{0, 0, 0}, {0.3, 0.3, 0.4}, {0.1, 0.05, 0.9}, {0.6, 0.6, 0.1}};
  for (const auto& rg : regimes) {
    SCOPED_TRACE(fmt::format("stalls w {} a {} out {}", rg.w_gap, rg.a_gap, rg.out_stall));
    Array h(n_, stim(rg.w_gap, rg.a_gap, rg.out_stall));
    MxuModel model(n_, 1);
    std::vector<ArrayResult> want;
    const ValueMix mix{110, 140, 0.02};
    uint32_t tag = 0;
    const unsigned tiles = n_ <= 8 ? 40 : 12;
    for (unsigned t = 0; t < tiles; ++t) {
      const auto w = random_bf16s(rng_, std::size_t{n_} * n_, mix);
      h.queue_weights(w);
      model.load_weights(w);
      model.switch_tile();
      const unsigned rows = 1 + static_cast<unsigned>(rng_() % (4 * n_));
      for (unsigned r = 0; r < rows; ++r) {
        const auto a = random_bf16s(rng_, n_, mix);
        const uint32_t this_tag = tag++ & 0x1ffffu;
        h.queue_row(a, r == 0, this_tag);
        want.push_back({this_tag, model.row(a)});
      }
    }
    h.run();
    const auto& got = h.results();
    ASSERT_EQ(got.size(), want.size()) << "rows lost or duplicated (seed " << seed_ << ")";
    for (std::size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i].tag, want[i].tag) << "row " << i << " out of order (seed " << seed_ << ")";
      for (unsigned j = 0; j < n_; ++j)
        ASSERT_EQ(got[i].data[j], want[i].data[j]) << fmt::format(
            "row {} column {}: {:#010x} vs golden {:#010x} (seed {})", i, j, got[i].data[j], want[i].data[j], seed_);
    }
    // Coverage, where the regime makes it certain: heavy result stalls must freeze the array.
    // (With rare stalls and sparse input, the output FIFO may absorb every one of them.)
    if (rg.out_stall >= 0.4) {
      EXPECT_GT(h.counters().stall_out, 0u) << "result back-pressure never stalled the array";
    }
    EXPECT_EQ(h.counters().rows, want.size());
  }
}

// Transposed weight loads (mxu.lw t=1, w_t_i): tiles loaded as their columns, mixed with plain
// loads, under stalls; the array must hold each tile as the golden model does.
TEST_F(Mxu, ArrayTransposedTiles) {
  Array h(n_, stim(0.2, 0.2, 0.3));
  MxuModel model(n_, 1);
  std::vector<ArrayResult> want;
  const ValueMix mix{110, 140, 0.02};
  uint32_t tag = 0;
  unsigned transposed = 0;
  for (unsigned t = 0; t < (n_ <= 8 ? 40u : 12u); ++t) {
    const auto w = random_bf16s(rng_, std::size_t{n_} * n_, mix);
    const bool tr = rng_() % 2 == 0;
    transposed += tr;
    h.queue_weights(w, tr);
    model.load_weights(w);
    model.switch_tile();
    const unsigned rows = 1 + static_cast<unsigned>(rng_() % (2 * n_));
    for (unsigned r = 0; r < rows; ++r) {
      const auto a = random_bf16s(rng_, n_, mix);
      const uint32_t this_tag = tag++ & 0x1ffffu;
      h.queue_row(a, r == 0, this_tag);
      want.push_back({this_tag, model.row(a)});
    }
  }
  ASSERT_GT(transposed, 0u);
  h.run();
  const auto& got = h.results();
  ASSERT_EQ(got.size(), want.size()) << "rows lost or duplicated (seed " << seed_ << ")";
  for (std::size_t i = 0; i < want.size(); ++i)
    for (unsigned j = 0; j < n_; ++j)
      ASSERT_EQ(got[i].data[j], want[i].data[j]) << fmt::format(
          "row {} column {}: {:#010x} vs golden {:#010x} (seed {})", i, j, got[i].data[j], want[i].data[j], seed_);
}

TEST_F(Mxu, ArrayTileSwitchCostsNoBubble) {
  // Full-rate stream: tiles of 2n rows, weights always offered. After the first tile is loaded,
  // every cycle takes a row: cycles = first load + rows + pipeline latency, no stall.
  // The next tile's weights load at the earliest moment the RTL allows, so this test also
  // catches a weight buffer overwritten while the old tile's last row is still in the array.
  Array h(n_, stim(0, 0, 0));
  MxuModel model(n_, 1);
  std::vector<std::vector<uint32_t>> want;
  const unsigned tiles = 6, rows = 2 * n_;
  const ValueMix mix;
  for (unsigned t = 0; t < tiles; ++t) {
    const auto w = random_bf16s(rng_, std::size_t{n_} * n_, mix);
    h.queue_weights(w);
    model.load_weights(w);
    model.switch_tile();
    for (unsigned r = 0; r < rows; ++r) {
      const auto a = random_bf16s(rng_, n_, mix);
      h.queue_row(a, r == 0, r);
      want.push_back(model.row(a));
    }
  }
  h.run();
  const auto c = h.counters();
  EXPECT_EQ(c.rows, tiles * rows);
  ASSERT_EQ(h.results().size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(h.results()[i].data, want[i]) << "row " << i << " (tile " << i / rows << ", seed " << seed_ << ")";
  EXPECT_EQ(c.stall_out, 0u);
  // The first row waits only for the first tile's n weight rows (plus the input register).
  EXPECT_EQ(c.stall_wgt, n_ - 1) << "rows waited for weights after the first tile: a switch bubble";
  // Exactly: n-1 cycles waiting for the first tile, one cycle per row, then the last row's
  // 2n+2 cycles through the array and the output FIFO and the harness's handshake (2 more).
  EXPECT_EQ(h.cycles(), (n_ - 1) + tiles * rows + (2 * n_ + 4)) << "a bubble somewhere in the stream";
}

TEST_F(Mxu, ArrayBackToBackSingleRowTiles) {
  // One row per tile: every row switches tiles, and weight loads wait for the old tile to drain.
  Array h(n_, stim(0.1, 0.1, 0.2));
  MxuModel model(n_, 1);
  std::vector<std::vector<uint32_t>> want;
  const ValueMix mix{100, 150, 0.01};
  for (int t = 0; t < 10; ++t) {
    const auto w = random_bf16s(rng_, std::size_t{n_} * n_, mix);
    const auto a = random_bf16s(rng_, n_, mix);
    h.queue_weights(w);
    model.load_weights(w);
    model.switch_tile();
    h.queue_row(a, true, static_cast<uint32_t>(t));
    want.push_back(model.row(a));
  }
  h.run();
  ASSERT_EQ(h.results().size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(h.results()[i].data, want[i]) << "tile " << i;
}

TEST_F(Mxu, ArrayRowBeforeAnyTileIsAnError) {
  Array h(n_, stim(0, 0, 0));
  h.queue_row(std::vector<uint16_t>(n_, 0x3f80), false, 1);
  h.run();
  EXPECT_TRUE(h.top().err_no_tile_o);
  EXPECT_TRUE(h.results().empty()) << "a row without weights must not produce a result";
  EXPECT_EQ(h.counters().rows, 0u) << "the dropped row must not count as work";
  // The array still works afterwards (the error is sticky, the datapath is not stuck).
  MxuModel model(n_, 1);
  const auto w = random_bf16s(rng_, std::size_t{n_} * n_, ValueMix{});
  const auto a = random_bf16s(rng_, n_, ValueMix{});
  h.queue_weights(w);
  model.load_weights(w);
  model.switch_tile();
  h.queue_row(a, true, 2);
  h.run();
  ASSERT_EQ(h.results().size(), 1u);
  EXPECT_EQ(h.results()[0].data, model.row(a));
  EXPECT_TRUE(h.top().err_no_tile_o);
}

// --- the whole unit: tiled matmuls through the accumulator ---------------------------------------

TEST_F(Mxu, MatmulRandomShapesWithStalls) {
  Unit h(n_, stim(0.2, 0.2, 0.3), preset_.mxu.acc_rows);
  const ValueMix mix{118, 136, 0.002};
  const unsigned cases = n_ <= 8 ? 40 : 12;
  for (unsigned i = 0; i < cases; ++i) {
    // M from 1 to 4n; K and N both multiples and non-multiples of the array size.
    MatmulShape s;
    s.m = 1 + static_cast<unsigned>(rng_() % (4 * n_));
    s.k = (i % 2 == 0) ? n_ * (1 + static_cast<unsigned>(rng_() % 3)) : 1 + static_cast<unsigned>(rng_() % (3 * n_));
    s.ncols =
        (i % 3 == 0) ? n_ * (1 + static_cast<unsigned>(rng_() % 2)) : 1 + static_cast<unsigned>(rng_() % (2 * n_));
    SCOPED_TRACE(fmt::format("case {}: {}x{}x{}", i, s.m, s.k, s.ncols));
    matmul_case(h, s, mix);
  }
}

TEST_F(Mxu, MatmulIdentity) {
  Unit h(n_, stim(0, 0, 0), preset_.mxu.acc_rows);
  const MatmulShape s{2 * n_, n_, n_};
  auto a = random_bf16s(rng_, std::size_t{s.m} * s.k, ValueMix{1, 254, 0});
  std::vector<uint16_t> eye(std::size_t{n_} * n_, 0);
  for (unsigned i = 0; i < n_; ++i) eye[std::size_t{i} * n_ + i] = 0x3f80;
  const auto c = run_matmul(h, preset_.mxu.acc_rows, s, a, eye);
  for (std::size_t i = 0; i < c.size(); ++i)
    ASSERT_EQ(c[i], tp::golden::bf16_to_fp32(a[i])) << "A x I must return A exactly, element " << i;
}

TEST_F(Mxu, MatmulZeros) {
  Unit h(n_, stim(0, 0, 0), preset_.mxu.acc_rows);
  const MatmulShape s{n_ + 3, 2 * n_, n_};
  const auto a = random_bf16s(rng_, std::size_t{s.m} * s.k, ValueMix{});
  const std::vector<uint16_t> zeros(std::size_t{s.k} * s.ncols, 0);
  const auto c = run_matmul(h, preset_.mxu.acc_rows, s, a, zeros);
  expect_matmul(s, a, zeros, c);
  for (uint32_t x : c) ASSERT_EQ(x & 0x7fffffffu, 0u);
}

TEST_F(Mxu, MatmulOneHot) {
  // Each row of A selects one row of B: C's rows are B's rows, exactly.
  Unit h(n_, stim(0.1, 0.1, 0.1), preset_.mxu.acc_rows);
  const MatmulShape s{3 * n_, 2 * n_ - 1, n_ + 1};
  std::vector<uint16_t> a(std::size_t{s.m} * s.k, 0);
  std::vector<unsigned> pick(s.m);
  for (unsigned r = 0; r < s.m; ++r) {
    pick[r] = static_cast<unsigned>(rng_() % s.k);
    a[std::size_t{r} * s.k + pick[r]] = 0x3f80;
  }
  const auto b = random_bf16s(rng_, std::size_t{s.k} * s.ncols, ValueMix{1, 254, 0});
  const auto c = run_matmul(h, preset_.mxu.acc_rows, s, a, b);
  expect_matmul(s, a, b, c);
  for (unsigned r = 0; r < s.m; ++r)
    for (unsigned j = 0; j < s.ncols; ++j)
      ASSERT_EQ(c[std::size_t{r} * s.ncols + j], tp::golden::bf16_to_fp32(b[std::size_t{pick[r]} * s.ncols + j]));
}

TEST_F(Mxu, MatmulExtremeExponents) {
  // Products that overflow to infinity, underflow to zero, and sums that cancel near the limits.
  Unit h(n_, stim(0, 0.1, 0.1), preset_.mxu.acc_rows);
  const MatmulShape s{2 * n_, 2 * n_, n_};
  ValueMix high{190, 254, 0.01}, low{1, 64, 0.01};
  auto a = random_bf16s(rng_, std::size_t{s.m} * s.k, high);
  auto b = random_bf16s(rng_, std::size_t{s.k} * s.ncols, high);
  for (std::size_t i = 0; i < a.size(); i += 2) a[i] = random_bf16(rng_, low);
  for (std::size_t i = 0; i < b.size(); i += 3) b[i] = random_bf16(rng_, low);
  expect_matmul(s, a, b, run_matmul(h, preset_.mxu.acc_rows, s, a, b));
}

TEST_F(Mxu, MatmulAccumulatesOverManyKTiles) {
  Unit h(n_, stim(0.1, 0.1, 0.1), preset_.mxu.acc_rows);
  const MatmulShape s{n_ + 1, 16 * n_ + 3, n_};  // 17 K tiles summed in the accumulator
  matmul_case(h, s, ValueMix{120, 134, 0});
}

TEST_F(Mxu, MatmulLargerThanTheAccumulator) {
  // M larger than the accumulator memory: the host reads back and reuses it.
  Unit h(n_, stim(0, 0, 0), preset_.mxu.acc_rows);
  const unsigned m = std::min(preset_.mxu.acc_rows + 5, 4 * preset_.mxu.acc_rows);
  if (std::size_t{m} * n_ > 200'000) GTEST_SKIP() << "accumulator too large for a quick test at this preset";
  matmul_case(h, MatmulShape{m, n_, n_}, ValueMix{});
}

TEST_F(Mxu, CountersAccountForEveryRowAndCycle) {
  Unit h(n_, stim(0.2, 0.2, 0.2), preset_.mxu.acc_rows);
  const MatmulShape s{3 * n_, 2 * n_, n_};
  matmul_case(h, s, ValueMix{});
  const auto c = h.counters();
  EXPECT_EQ(c.rows, std::uint64_t{s.m} * 2);  // two K tiles, one column tile
  EXPECT_EQ(c.macs, c.rows * n_ * n_);
  EXPECT_EQ(c.wrows, std::uint64_t{n_} * 2);
  EXPECT_EQ(h.top().cnt_acc_writes_o, c.rows);
  EXPECT_LE(c.busy, h.cycles());
  EXPECT_EQ(h.top().cfg_n_o, n_);
  EXPECT_EQ(h.top().cfg_acc_rows_o, preset_.mxu.acc_rows);
}

TEST_F(Mxu, AccumulatorAddressOutOfRangeIsAnError) {
  Unit h(n_, stim(0, 0, 0), preset_.mxu.acc_rows);
  // Row 0 and the last row hold known results; a write past the end must change neither.
  std::vector<uint16_t> eye(std::size_t{n_} * n_, 0);
  for (unsigned i = 0; i < n_; ++i) eye[std::size_t{i} * n_ + i] = 0x3f80;
  const auto a0 = random_bf16s(rng_, n_, ValueMix{}), a1 = random_bf16s(rng_, n_, ValueMix{});
  h.queue_weights(eye);
  h.queue_row(a0, true, 0, false);
  h.queue_row(a1, false, preset_.mxu.acc_rows - 1, false);
  h.queue_row(random_bf16s(rng_, n_, ValueMix{}), false, preset_.mxu.acc_rows, false);
  h.queue_row(random_bf16s(rng_, n_, ValueMix{}), false, 0xffff, true);
  h.run();
  EXPECT_TRUE(h.top().err_addr_o) << "a write past the accumulator must raise err_addr_o";
  EXPECT_EQ(h.top().cnt_acc_writes_o, 2u);
  const auto first = h.read_rows(0, 1), last = h.read_rows(preset_.mxu.acc_rows - 1, 1);
  for (unsigned j = 0; j < n_; ++j) {
    EXPECT_EQ(first[0][j], tp::golden::bf16_to_fp32(a0[j])) << "row 0 changed, column " << j;
    EXPECT_EQ(last[0][j], tp::golden::bf16_to_fp32(a1[j])) << "last row changed, column " << j;
  }
}

TEST_F(Mxu, AccumulatorReadOutOfRangeIsAnError) {
  Unit h(n_, stim(0, 0, 0), preset_.mxu.acc_rows);
  const auto rows = h.read_rows(preset_.mxu.acc_rows + 1, 1);
  EXPECT_TRUE(h.top().err_addr_o);
  ASSERT_EQ(rows.size(), 1u);
  for (uint32_t x : rows[0]) EXPECT_EQ(x, 0u);
}

}  // namespace

namespace {

// The RTL's protocol assertions are live (--assert): a producer that changes its payload while
// waiting for ready stops the simulation with the assertion's message.
TEST_F(Mxu, ProtocolAssertionCatchesUnstablePayload) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        dup2(STDERR_FILENO, STDOUT_FILENO);  // Verilator prints assertion messages on stdout
        Array h(n_, stim(0, 0, 0));
        // Two tiles and no activation rows: the second tile's first row waits, shadow full.
        h.queue_weights(std::vector<uint16_t>(std::size_t{n_} * n_, 0x3f80));
        h.queue_weights(std::vector<uint16_t>(std::size_t{n_} * n_, 0x4000));
        for (unsigned c = 0; c < n_ + 4; ++c) h.step();
        set_lane<16>(h.top().w_data_i, 0, 0x1234);  // change the payload while valid waits
        for (unsigned c = 0; c < 4; ++c) h.step();
      },
      "payload changed while valid waited for ready");
}

TEST_F(Mxu, ProtocolAssertionCatchesUnstableReadAddress) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        dup2(STDERR_FILENO, STDOUT_FILENO);
        Unit h(n_, stim(0, 0, 1.0), preset_.mxu.acc_rows);  // responses never accepted
        for (unsigned r = 0; r < 4; ++r) h.queue_read(r);
        for (unsigned c = 0; c < 8; ++c) h.step();  // the third read waits: the FIFO is full
        h.top().rd_addr_i = static_cast<uint16_t>(h.top().rd_addr_i ^ 1u);
        for (unsigned c = 0; c < 4; ++c) h.step();
      },
      "tp_mxu_acc reads: payload changed while valid waited for ready");
}

}  // namespace
