// The HBM controller (rtl/hbm/tp_hbm_ctrl.sv) driving the golden HBM device model: every DRAM
// command goes through the device's timing checker (any violation fails the test with the rule,
// the bank and the cycle), and a scoreboard checks every response: read data equal to the last
// data written before the read was accepted, each request answered once, in order per ID.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <deque>
#include <map>
#include <memory>
#include <random>

#include "Vhbm_ctrl.h"
#include "hbm_device.h"
#include "secded.h"
#include "tb_util.h"

namespace {

using tp::golden::HbmDevice;
using tp::golden::HbmGeometry;
using tp::golden::HbmTiming;

// The parameters the model was verilated with (tb/CMakeLists.txt): a fast test configuration.
constexpr unsigned kBanks = 16, kRowW = 10, kColW = 5, kIdW = 4;
HbmTiming test_timing() {
  HbmTiming t;
  t.trfc = 40;
  t.trefi = 600;
  return t;
}

struct Burst {
  std::array<uint8_t, 32> b{};
};

class Hbm : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = tp::tb::test_seed(tp::tb::current_test_name());
    rng_.seed(seed_);
    HbmGeometry g;
    g.rows = 1u << kRowW;
    g.columns = 1u << kColW;
    g.burst_bytes = 36;  // 256 data bits as four 72-bit SECDED codewords
    dev_ = std::make_unique<HbmDevice>(g, test_timing());
    ctx_.randReset(2);
    ctx_.randSeed(static_cast<int>(seed_ % 0x7fffffff) + 1);
    dut_ = std::make_unique<Vhbm_ctrl>(&ctx_, "hbm");
    dut_->rst_ni = 0;
    dut_->req_valid_i = 0;
    dut_->rsp_ready_i = 0;
    dut_->rd_valid_i = 0;
    for (int i = 0; i < 4; ++i) clock();
    dut_->rst_ni = 1;
  }
  void TearDown() override { dut_->final(); }

  void clock() {
    dut_->clk_i = 0;
    dut_->eval();
    dut_->clk_i = 1;
    dut_->eval();
  }

  struct Req {
    bool write;
    uint32_t addr;
    unsigned id;
    Burst data;
    uint32_t mask;
  };
  void queue(const Req& r) { reqs_.push_back(r); }

  // Run until every queued request has its response; the device throws on a timing violation.
  void run(double req_gap, double rsp_stall, uint64_t limit = 400000) {
    std::bernoulli_distribution gap(req_gap), stall(rsp_stall);
    bool holding = false;
    uint64_t quiet = 0;
    while (!reqs_.empty() || holding || outstanding_ > 0) {
      if (++cycle_ > limit) FAIL() << "not finished after " << limit << " cycles (seed " << seed_ << ")";
      if (!holding && !reqs_.empty() && !(req_gap > 0 && gap(rng_))) {
        const Req& r = reqs_.front();
        dut_->req_write_i = r.write;
        dut_->req_addr_i = r.addr;
        dut_->req_id_i = static_cast<uint8_t>(r.id);
        for (unsigned w = 0; w < 8; ++w) {
          uint32_t v = 0;
          for (unsigned k = 0; k < 4; ++k) v |= uint32_t{r.data.b[w * 4 + k]} << (8 * k);
          dut_->req_wdata_i[w] = v;
        }
        dut_->req_wmask_i = r.mask;
        dut_->req_valid_i = 1;
        holding = true;
      }
      dut_->rsp_ready_i = !(rsp_stall > 0 && stall(rng_));
      // Read data the device returned CL cycles ago.
      dut_->rd_valid_i = 0;
      if (!rd_pipe_.empty() && rd_pipe_.front().first == cycle_) {
        const auto& d = rd_pipe_.front().second;
        for (unsigned w = 0; w < 9; ++w) {
          uint32_t v = 0;
          for (unsigned k = 0; k < 4; ++k) v |= uint32_t{d[w * 4 + k]} << (8 * k);
          dut_->rd_data_i[w] = v;
        }
        dut_->rd_valid_i = 1;
        rd_pipe_.pop_front();
      }
      dut_->clk_i = 0;
      dut_->eval();
      bool moved = false;
      if (dut_->cmd_valid_o) {
        command();
        moved = true;
      }
      if (holding && dut_->req_ready_o) {
        accept(reqs_.front());
        reqs_.pop_front();
        holding = false;
        moved = true;
      }
      if (dut_->rsp_valid_o && dut_->rsp_ready_i) {
        respond();
        moved = true;
      }
      dut_->clk_i = 1;
      dut_->eval();
      if (!holding) dut_->req_valid_i = 0;
      quiet = moved ? 0 : quiet + 1;
      if (quiet > 5000) FAIL() << "HBM controller stuck at cycle " << cycle_ << " (seed " << seed_ << ")";
    }
  }

  void command() {
    const unsigned bank = dut_->cmd_bank_o, row = dut_->cmd_row_o, col = dut_->cmd_col_o;
    switch (dut_->cmd_o) {
      case 0:
        dev_->activate(cycle_, bank, row);
        break;
      case 1:
        dev_->precharge(cycle_, bank);
        break;
      case 2:
        rd_pipe_.push_back({cycle_ + dev_->timing().cl, dev_->read(cycle_, bank, col)});
        break;
      case 3: {
        std::vector<uint8_t> d(36);
        for (unsigned i = 0; i < 36; ++i) d[i] = static_cast<uint8_t>(dut_->cmd_wdata_o[i / 4] >> (8 * (i % 4)));
        uint64_t mask = 0;
        for (unsigned i = 0; i < 36; ++i) mask |= uint64_t{(dut_->cmd_wmask_o >> i) & 1u} << i;
        dev_->write(cycle_, bank, col, d, mask);
        break;
      }
      default:
        dev_->refresh(cycle_);
        break;
    }
  }

  void accept(const Req& r) {
    // The expected read data is the shadow as of acceptance (the controller keeps same-address
    // order); a write updates the shadow in 8-byte words.
    Expect e{r.write, r.id, {}};
    if (r.write) {
      auto& m = shadow_[r.addr];
      for (unsigned w = 0; w < 4; ++w)
        if ((r.mask >> (w * 8)) & 0xffu)
          for (unsigned k = 0; k < 8; ++k) m.b[w * 8 + k] = r.data.b[w * 8 + k];
    } else {
      e.data = shadow_[r.addr];
    }
    per_id_[r.id].push_back(e);
    ++outstanding_;
  }

  void respond() {
    const unsigned id = dut_->rsp_id_o;
    auto& q = per_id_[id];
    if (q.empty()) {
      ADD_FAILURE() << "response for id " << id << " with nothing outstanding (seed " << seed_ << ")";
      return;
    }
    const Expect e = q.front();
    q.pop_front();
    --outstanding_;
    EXPECT_EQ(static_cast<bool>(dut_->rsp_write_o), e.write) << "id " << id << " responses out of order";
    if (e.write) return;
    ++reads_checked_;
    if (dut_->rsp_err_o) ++fatal_;
    for (unsigned i = 0; i < 32; ++i) {
      const auto got = static_cast<uint8_t>(dut_->rsp_rdata_o[i / 4] >> (8 * (i % 4)));
      if (got != e.data.b[i] && !dut_->rsp_err_o && ++mismatches_ <= 5)
        ADD_FAILURE() << fmt::format("read for id {}: byte {} = {:#04x}, expected {:#04x} (cycle {}, seed {})", id, i,
                                     got, e.data.b[i], cycle_, seed_);
    }
  }

  Req random_req(unsigned addr_bits_rows, double write_frac) {
    Req r;
    r.write = std::bernoulli_distribution(write_frac)(rng_);
    const uint32_t row = static_cast<uint32_t>(rng_() % (1u << addr_bits_rows));
    const uint32_t low = static_cast<uint32_t>(rng_() % (kBanks << kColW));
    r.addr = (row << (4 + kColW)) | low;
    r.id = static_cast<unsigned>(rng_() % (1u << kIdW));
    for (auto& x : r.data.b) x = static_cast<uint8_t>(rng_());
    r.mask = 0;
    for (unsigned w = 0; w < 4; ++w)
      if (rng_() % 4 != 0) r.mask |= 0xffu << (w * 8);
    return r;
  }

  struct Expect {
    bool write;
    unsigned id;
    Burst data;
  };
  VerilatedContext ctx_;
  std::unique_ptr<Vhbm_ctrl> dut_;
  std::unique_ptr<HbmDevice> dev_;
  uint64_t seed_ = 0, cycle_ = 0, outstanding_ = 0, reads_checked_ = 0, mismatches_ = 0, fatal_ = 0;
  std::mt19937_64 rng_;
  std::deque<Req> reqs_;
  std::deque<std::pair<uint64_t, std::vector<uint8_t>>> rd_pipe_;
  std::map<uint32_t, Burst> shadow_;
  std::map<unsigned, std::deque<Expect>> per_id_;
};

TEST_F(Hbm, RandomTrafficObeysTimingAndReturnsTheLastWrite) {
  // Few rows so that addresses repeat (read-after-write) and rows conflict; random stalls on
  // both sides; long enough for many refreshes.
  for (int i = 0; i < 6000; ++i) queue(random_req(3, 0.4));
  ASSERT_NO_THROW(run(0.3, 0.3));
  EXPECT_EQ(mismatches_, 0u);
  EXPECT_EQ(fatal_, 0u);
  EXPECT_GT(reads_checked_, 1000u);
  EXPECT_EQ(dut_->cnt_reads_o + dut_->cnt_writes_o, 6000u);
  EXPECT_EQ(dut_->cnt_hits_o + dut_->cnt_misses_o + dut_->cnt_conflicts_o, 6000u);
  EXPECT_GT(dut_->cnt_conflicts_o, 0u);
  EXPECT_GT(dut_->cnt_hits_o, 0u);
  EXPECT_GE(dut_->cnt_refreshes_o, cycle_ / test_timing().trefi - 8) << "refresh starved";
  ASSERT_NO_THROW(dev_->check_refresh(cycle_));
  fmt::print(
      "{} cycles: {} reads checked, {} hits, {} misses, {} conflicts, {} refreshes, bus busy {:.2f}, read "
      "latency avg {:.1f} max {}\n",
      cycle_, reads_checked_, dut_->cnt_hits_o, dut_->cnt_misses_o, dut_->cnt_conflicts_o, dut_->cnt_refreshes_o,
      double(dut_->cnt_bus_busy_o) / double(cycle_), double(dut_->cnt_rd_latency_sum_o) / double(dut_->cnt_reads_o),
      dut_->cnt_rd_latency_max_o);
}

TEST_F(Hbm, RowHitStreamIsMostlyHits) {
  for (uint32_t i = 0; i < 512; ++i) queue({i % 2 == 0, (7u << (4 + kColW)) | (i % (kBanks << kColW)), i % 4, {}, ~0u});
  ASSERT_NO_THROW(run(0, 0));
  EXPECT_GT(dut_->cnt_hits_o, 400u) << "hits " << dut_->cnt_hits_o << ", misses " << dut_->cnt_misses_o;
}

TEST_F(Hbm, SingleBitErrorsAreCorrectedDoubleBitErrorsReported) {
  // Write a row, flip stored bits, read it back.
  Burst d;
  for (auto& x : d.b) x = static_cast<uint8_t>(rng_());
  for (uint32_t c = 0; c < 8; ++c) queue({true, c, 0, d, ~0u});
  ASSERT_NO_THROW(run(0, 0));
  // Address c maps to bank 0 (row|bank|col map), row 0, column c.
  for (uint32_t c = 0; c < 4; ++c) dev_->flip_stored_bit(0, 0, c, static_cast<unsigned>(rng_() % 288));
  dev_->flip_stored_bit(0, 0, 5, 3);
  dev_->flip_stored_bit(0, 0, 5, 40);  // two bits of the first codeword
  for (uint32_t c = 0; c < 8; ++c) queue({false, c, 1, {}, 0});
  // Expectations: reads see the written data (corrected), except column 5 (reported).
  ASSERT_NO_THROW(run(0, 0));
  EXPECT_EQ(dut_->cnt_ecc_corrected_o, 4u);
  EXPECT_EQ(dut_->cnt_ecc_fatal_o, 1u);
  EXPECT_EQ(fatal_, 1u);
  EXPECT_EQ(mismatches_, 0u);
}

TEST_F(Hbm, PartialWordMaskIsAnError) {
  queue({true, 3, 0, {}, 0x0000000fu});
  ASSERT_NO_THROW(run(0, 0));
  EXPECT_TRUE(dut_->err_mask_o);
}

}  // namespace
