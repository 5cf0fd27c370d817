// The HBM controller (rtl/hbm/tp_hbm_ctrl.sv) against the golden device model, at the HBM
// section of the preset this binary was built for (TP_PRESET): zero timing violations, every read
// returns the last write, each request answered once and in order per ID.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include TP_HBM_HEADER
#include "config.h"
#include "hbm_fixture.h"
#include "tb_util.h"

namespace {

using tp::tb::HbmBurst;
using tp::tb::HbmRequest;

class Hbm : public tp::tb::HbmTest<TP_HBM_CLASS> {
 protected:
  unsigned banks() const { return cfg_.bank_groups * cfg_.banks_per_group; }
  // Burst address of (bank, row, column) under the preset's address map.
  uint32_t addr(unsigned bank, unsigned row, unsigned col) const {
    const unsigned cw = std::bit_width(cfg_.columns - 1), bw = std::bit_width(banks() - 1);
    const uint32_t low = cfg_.bank_interleave ? (col << bw) | bank : (bank << cw) | col;
    return (row << (cw + bw)) | low;
  }
  HbmBurst random_burst() {
    HbmBurst d;
    for (auto& x : d.b) x = static_cast<uint8_t>(rng_());
    return d;
  }
  void expect_clean() {
    for (const auto& e : h_->errors()) ADD_FAILURE() << e;
    EXPECT_EQ(h_->mismatches(), 0u);
    ASSERT_NO_THROW(h_->device().check_refresh(h_->cycle()));
    // All-bank: one refresh per tREFI; per-bank: one per bank (the device checks each bank).
    const uint64_t per = cfg_.per_bank_refresh ? banks() : 1;
    EXPECT_GE(h_->top().cnt_refreshes_o + 8, h_->cycle() / cfg_.timing.trefi * per) << "refresh starved";
  }
  void busy_bank_is_refreshed(bool write);
};

TEST_F(Hbm, RandomTrafficObeysTimingAndReturnsTheLastWrite) {
  // Few rows so that addresses repeat (read-after-write) and rows conflict; random stalls on
  // both sides; long enough for many refreshes.
  // make soak multiplies the requests by TP_SOAK.
  const uint64_t kRequests = 6000 * tp::tb::soak_scale();
  for (uint64_t i = 0; i < kRequests; ++i) {
    HbmRequest r;
    r.write = std::bernoulli_distribution(0.4)(rng_);
    r.addr = addr(static_cast<unsigned>(rng_() % banks()), static_cast<unsigned>(rng_() % 8),
                  static_cast<unsigned>(rng_() % cfg_.columns));
    r.id = static_cast<unsigned>(rng_() % 16);
    r.data = random_burst();
    r.mask = 0;
    for (unsigned w = 0; w < 4; ++w)
      if (rng_() % 4 != 0) r.mask |= 0xffu << (w * 8);
    h_->queue(r);
  }
  ASSERT_NO_THROW(h_->run(0.3, 0.3, 5'000'000 * tp::tb::soak_scale()));  // the watchdog grows with the soak
  expect_clean();
  auto& t = h_->top();
  EXPECT_EQ(h_->fatal(), 0u);
  EXPECT_GT(h_->reads_checked(), 1000u);
  EXPECT_EQ(t.cnt_reads_o + t.cnt_writes_o, kRequests);
  EXPECT_EQ(t.cnt_hits_o + t.cnt_misses_o + t.cnt_conflicts_o, kRequests);
  EXPECT_GT(t.cnt_conflicts_o, 0u);
  EXPECT_GT(t.cnt_hits_o, 0u);
  fmt::print("{} cycles: {} reads checked, {} hits, {} misses, {} conflicts, {} refreshes\n", h_->cycle(),
             h_->reads_checked(), t.cnt_hits_o, t.cnt_misses_o, t.cnt_conflicts_o, t.cnt_refreshes_o);
  tp::tb::soak_report("hbm", kRequests, h_->cycle(), "random requests, timing checked, reads against the last write");
}

TEST_F(Hbm, RowHitStreamIsMostlyHits) {
  for (unsigned i = 0; i < 512; ++i)
    h_->queue({i % 2 == 0, addr(i % banks(), 3, (i / banks()) % cfg_.columns), i % 4, random_burst(), ~0u, 0});
  ASSERT_NO_THROW(h_->run());
  expect_clean();
  if (!cfg_.closed_page) {
    // Only the first access of each bank may miss, and with single-bank refresh the first after
    // each of its bank's refreshes (which close the bank; at most one per refresh).
    const uint64_t refreshed = cfg_.per_bank_refresh ? h_->top().cnt_refreshes_o : 0;
    EXPECT_GE(h_->top().cnt_hits_o + refreshed, 512u - 2 * banks())
        << "only the first access of each bank (and after its refresh) may miss; " << refreshed << " refreshes";
  } else {
    // Closed page: a row no queued request wants is closed at once, so the stream never finds
    // another row open (no conflicts), and each bank's row is reopened when its turn comes.
    EXPECT_EQ(h_->top().cnt_conflicts_o, 0u);
    EXPECT_GT(h_->top().cnt_misses_o, 0u);
  }
}

TEST_F(Hbm, AnIdleBankIsClosedUnderTheClosedPagePolicyOnly) {
  // A read opens row 2 of the last bank, and nothing wants that row again: the next request
  // (bank 0) comes 200 cycles later, before the first refresh, which would close every bank
  // anyway. Closed page: the idle bank is precharged as soon as tRTP allows. Open page: it stays
  // open. (Verilator's line point on the closed-page close in tp_hbm_ctrl stays at 0 while this
  // precharge happens: docs/verification.md, "Coverage".)
  const unsigned b = banks() - 1;
  h_->queue({false, addr(b, 2, 0), 1, {}, 0, 0});
  HbmRequest later{false, addr(0, 0, 0), 2, {}, 0, 0};
  later.not_before = h_->cycle() + 200;
  h_->queue(later);
  ASSERT_NO_THROW(h_->run());
  expect_clean();
  // An all-bank refresh closes every bank; single-bank refreshes go round from bank 0 and have
  // not reached bank b yet.
  if (cfg_.per_bank_refresh)
    ASSERT_LT(h_->top().cnt_refreshes_o, b) << "bank b's refresh came first: it closes the bank";
  else
    ASSERT_EQ(h_->top().cnt_refreshes_o, 0u) << "a refresh came first: it closes every bank";
  if (cfg_.closed_page) {
    EXPECT_FALSE(h_->device().row_open(b)) << "closed page: the bank stayed open with nothing wanting its row";
  } else if (!cfg_.per_bank_refresh) {  // (single-bank refresh takes the idle bank activated last first)
    ASSERT_TRUE(h_->device().row_open(b)) << "open page: the bank was closed with nothing else to do there";
    EXPECT_EQ(h_->device().open_row(b), 2u);
  }
}

TEST_F(Hbm, BankConflictsAlternatingRows) {
  // One bank, two rows, alternating: every access is a conflict (precharge and activate), or
  // with single-bank refresh a miss where the bank's refresh has closed it.
  for (unsigned i = 0; i < 64; ++i) h_->queue({false, addr(5, i % 2, i % cfg_.columns), 0, {}, 0, 0});
  ASSERT_NO_THROW(h_->run());
  expect_clean();
  const auto& t = h_->top();
  EXPECT_GE(t.cnt_conflicts_o + (cfg_.per_bank_refresh ? t.cnt_misses_o - 1 : 0), 62u)
      << t.cnt_conflicts_o << " conflicts, " << t.cnt_misses_o << " misses, " << t.cnt_hits_o << " hits";
  EXPECT_LE(t.cnt_hits_o, 1u) << "alternating rows cannot hit";
}

TEST_F(Hbm, ActivateBurstRespectsFourActivateWindow) {
  // Reads to every bank, each in a new row: activates as fast as tRRD and tFAW allow.
  for (unsigned round = 0; round < 4; ++round)
    for (unsigned b = 0; b < banks(); ++b) h_->queue({false, addr(b, round + 1, 0), b % 16, {}, 0, 0});
  ASSERT_NO_THROW(h_->run());  // the device model checks tRRD_S/L and tFAW on every ACT
  expect_clean();
}

TEST_F(Hbm, WriteToReadTurnaround) {
  // Alternate writes and reads to the same bank group: tWTR and the bus turnaround every time.
  for (unsigned i = 0; i < 200; ++i) {
    const uint32_t a = addr(i % 4, 0, i % cfg_.columns);
    h_->queue({i % 2 == 0, a, i % 8, random_burst(), ~0u, 0});
  }
  ASSERT_NO_THROW(h_->run());
  expect_clean();
}

TEST_F(Hbm, FullWriteQueueDrainsAndReadsStillGetAnswers) {
  // More writes than the queue holds, behind them reads of the same data.
  std::vector<uint32_t> as;
  for (unsigned i = 0; i < 4 * cfg_.queue; ++i) {
    as.push_back(addr(static_cast<unsigned>(rng_() % banks()), static_cast<unsigned>(rng_() % 4), i % cfg_.columns));
    h_->queue({true, as.back(), i % 16, random_burst(), ~0u, 0});
  }
  for (uint32_t a : as) h_->queue({false, a, 3, {}, 0, 0});
  ASSERT_NO_THROW(h_->run(0, 0.5));
  expect_clean();
  EXPECT_EQ(h_->reads_checked(), as.size());
}

TEST_F(Hbm, RefreshUnderLoadIsNeverStarved) {
  // A continuous row-hit stream (the scheduler would rather not stop) for 20 refresh intervals.
  const uint64_t cycles = 20ull * cfg_.timing.trefi;
  for (unsigned i = 0; i < cycles / 2; ++i)
    h_->queue({false, addr(i % banks(), 0, (i / banks()) % cfg_.columns), i % 16, {}, 0, 0});
  ASSERT_NO_THROW(h_->run());
  expect_clean();
  EXPECT_GE(h_->top().cnt_refreshes_o, 12u);
}

// Every request wants one bank, two rows alternating four at a time, one request offered every
// cycle for 30 refresh intervals (reads or writes; with no read queued, writes go in read mode
// too). The bank serves at most one every tCCD_L, fewer across row switches, so the queue stays
// full of its requests. All-bank refresh postpones and then takes the whole device. Single-bank
// refresh takes the idle banks first; then no bank is left in its round that no request wants,
// MaxPostpone refreshes fall due, and it closes the busy bank and refreshes it anyway
// (tp_hbm_ctrl's `sb_force`). The device model's refresh check (expect_clean) fails if the bank
// is starved, and every REFSB of the busy bank but the one after the stream must be forced: issued
// while a request waits for room (the queue full, so of the busy bank's requests only) and held
// back more than two per-bank refresh intervals after the previous REFSB.
void Hbm::busy_bank_is_refreshed(bool write) {
  const uint64_t cycles = 30ull * cfg_.timing.trefi;
  const unsigned b = banks() / 2 + 1;
  for (uint64_t i = 0; i < cycles; ++i) {
    const auto row = static_cast<unsigned>(i / 4 % 2), col = static_cast<unsigned>(i % cfg_.columns);
    if (write)
      h_->queue({true, addr(b, row, col), static_cast<unsigned>(i % 16), random_burst(), ~0u, 0});
    else
      h_->queue({false, addr(b, row, col), static_cast<unsigned>(i % 16), {}, 0, 0});
  }
  const uint64_t interval = cfg_.timing.trefi / banks();  // single-bank refresh: one bank each
  uint64_t refreshed = 0, full = 0, held = 0, last = 0;
  h_->on_command([&](const auto& c) {
    if (c.cmd != static_cast<unsigned>(tp::isa::hw::HbmCmd::refsb)) return;
    if (c.bank == b) {
      ++refreshed;
      full += c.queue_full;
      held += c.cycle > last + 2 * interval;
    }
    last = c.cycle;
  });
  ASSERT_NO_THROW(h_->run());
  expect_clean();
  EXPECT_GT(h_->top().cnt_conflicts_o, cycles / cfg_.timing.trc / 4) << "the rows did not take turns";
  EXPECT_EQ(write ? h_->top().cnt_writes_o : h_->top().cnt_reads_o, cycles);
  if (cfg_.per_bank_refresh) {
    EXPECT_GE(refreshed, h_->cycle() / cfg_.timing.trefi - 1) << "the busy bank missed rounds";
    EXPECT_GE(full + 1, refreshed) << "the busy bank was refreshed while the queue had room";
    EXPECT_GE(held + 1, refreshed) << "the busy bank was refreshed without being held back";
  }
}

TEST_F(Hbm, ABankKeptBusyIsStillRefreshed) { busy_bank_is_refreshed(false); }
TEST_F(Hbm, ABankKeptBusyWithWritesIsStillRefreshed) { busy_bank_is_refreshed(true); }

TEST_F(Hbm, FewWritesAreNotStarvedByAReadStream) {
  // Fewer writes than the high watermark, then a long stream of row-hit reads: the writes must
  // not wait for the stream to end (the starvation bound turns the read/write mode round).
  for (unsigned i = 0; i < 2; ++i) h_->queue({true, addr(i, 5, 0), 8 + i, random_burst(), ~0u, 0});
  for (unsigned i = 0; i < 3000; ++i)
    h_->queue({false, addr(i % banks(), 0, (i / banks()) % cfg_.columns), i % 8, {}, 0, 0});
  ASSERT_NO_THROW(h_->run());
  expect_clean();
  ASSERT_EQ(h_->write_latencies().size(), 2u);
  for (auto l : h_->write_latencies()) EXPECT_LT(l, 1000u) << "a write waited behind the whole read stream";
}

TEST_F(Hbm, SingleBitErrorsAreCorrectedDoubleBitErrorsReported) {
  const HbmBurst d = random_burst();
  for (unsigned c = 0; c < 8; ++c) h_->queue({true, addr(0, 0, c), 0, d, ~0u, 0});
  ASSERT_NO_THROW(h_->run());
  for (unsigned c = 0; c < 4; ++c) h_->device().flip_stored_bit(0, 0, c, static_cast<unsigned>(rng_() % 288));
  h_->device().flip_stored_bit(0, 0, 5, 3);
  h_->device().flip_stored_bit(0, 0, 5, 40);  // two bits of the first codeword
  for (unsigned c = 0; c < 8; ++c) h_->queue({false, addr(0, 0, c), 1, {}, 0, 0});
  ASSERT_NO_THROW(h_->run());
  expect_clean();  // the corrected reads return the written data
  EXPECT_EQ(h_->top().cnt_ecc_corrected_o, 4u);
  EXPECT_EQ(h_->top().cnt_ecc_fatal_o, 1u);
  EXPECT_EQ(h_->fatal(), 1u) << "the double-bit error reaches the requester";
}

// A random injection campaign: bursts written at random places, then stored bits flipped at
// random (data and check bits alike): single-bit errors in any number of a burst's four
// codewords, or two bits of one codeword. Every single-bit error must come back corrected (the
// written data, counted once per burst), every double-bit error reported to the requester.
TEST_F(Hbm, EccInjectionCampaignCorrectsEverySingleAndDetectsEveryDouble) {
  constexpr unsigned kBursts = 600;
  struct Place {
    unsigned bank, row, col;
  };
  std::vector<Place> all;
  for (unsigned b = 0; b < banks(); ++b)
    for (unsigned r = 0; r < 4; ++r)
      for (unsigned c = 0; c < cfg_.columns; ++c) all.push_back({b, r, c});
  // make soak repeats the campaign TP_SOAK times (fresh data and flips each round: a write
  // re-encodes its burst).
  const uint64_t rounds = tp::tb::soak_scale();
  uint64_t singles = 0, doubles = 0, flips = 0, bursts = 0;
  for (uint64_t round = 0; round < rounds; ++round) {
    std::vector<Place> places = all;
    std::shuffle(places.begin(), places.end(), rng_);
    places.resize(std::min<std::size_t>(kBursts, places.size()));
    for (const auto& p : places) h_->queue({true, addr(p.bank, p.row, p.col), 0, random_burst(), ~0u, 0});
    ASSERT_NO_THROW(h_->run());
    for (const auto& p : places) {
      const unsigned kind = static_cast<unsigned>(rng_() % 4);  // 0 clean, 1-2 single, 3 double
      if (kind == 3) {
        const unsigned w = static_cast<unsigned>(rng_() % 4), b0 = static_cast<unsigned>(rng_() % 72);
        const unsigned b1 = (b0 + 1 + static_cast<unsigned>(rng_() % 71)) % 72;  // a different bit
        h_->device().flip_stored_bit(p.bank, p.row, p.col, w * 72 + b0);
        h_->device().flip_stored_bit(p.bank, p.row, p.col, w * 72 + b1);
        ++doubles;
        flips += 2;
      } else if (kind != 0) {
        bool any = false;
        for (unsigned w = 0; w < 4; ++w) {
          if (w < 3 && rng_() % 2 == 0) continue;  // codeword 3 always, the others at random
          h_->device().flip_stored_bit(p.bank, p.row, p.col, w * 72 + static_cast<unsigned>(rng_() % 72));
          any = true;
          ++flips;
        }
        singles += any;
      }
    }
    for (const auto& p : places) h_->queue({false, addr(p.bank, p.row, p.col), 1, {}, 0, 0});
    ASSERT_NO_THROW(h_->run());
    expect_clean();  // every read without a reported error returned the written data
    bursts += places.size();
    ASSERT_EQ(h_->top().cnt_ecc_corrected_o, singles) << "round " << round;
    ASSERT_EQ(h_->top().cnt_ecc_fatal_o, doubles) << "round " << round;
    ASSERT_EQ(h_->fatal(), doubles) << "each double-bit error reaches the requester (round " << round << ")";
  }
  EXPECT_GT(singles, rounds * kBursts / 3);
  EXPECT_GT(doubles, rounds * kBursts / 8);
  fmt::print("{} bursts, {} bits flipped: {} bursts with single-bit errors corrected, {} double-bit errors reported\n",
             bursts, flips, singles, doubles);
  tp::tb::soak_report("hbm_ecc", 2 * bursts, h_->cycle(),
                      "requests with ECC injections (a write and a read per burst)");
}

TEST_F(Hbm, PartialWordMaskIsAnError) {
  h_->queue({true, 3, 0, {}, 0x0000000fu, 0});
  ASSERT_NO_THROW(h_->run());
  EXPECT_TRUE(h_->top().err_mask_o);
}

TEST_F(Hbm, OutOfRangeAddressIsRefusedByTheHarness) {
  EXPECT_THROW(h_->queue({false, h_->bursts(), 0, {}, 0, 0}), std::out_of_range);
}

}  // namespace
