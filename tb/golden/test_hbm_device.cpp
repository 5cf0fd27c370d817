// The HBM device model: data (sparse storage, byte masks) and the timing checker, one
// violation per rule with the rule's name in the error.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "hbm_device.h"

namespace {

using tp::golden::HbmDevice;
using tp::golden::HbmGeometry;
using tp::golden::HbmTiming;
using tp::golden::HbmViolation;

std::vector<uint8_t> burst(uint8_t seed) {
  std::vector<uint8_t> d(32);
  for (unsigned i = 0; i < d.size(); ++i) d[i] = static_cast<uint8_t>(seed * 31 + i);
  return d;
}

// The rule a command sequence breaks, or "" if it is legal.
std::string rule_of(const std::function<void(HbmDevice&)>& seq, HbmTiming t = HbmTiming{}) {
  HbmDevice d(HbmGeometry{}, t);
  try {
    seq(d);
  } catch (const HbmViolation& v) {
    return v.rule();
  }
  return "";
}

TEST(HbmDevice, WriteThenReadReturnsTheDataWithByteMask) {
  HbmDevice d(HbmGeometry{}, HbmTiming{});
  const HbmTiming t;
  d.activate(0, 3, 100);
  d.write(t.trcd, 3, 5, burst(1));
  d.write(t.trcd + 4, 3, 6, burst(2), 0x0000000fu);  // only bytes 0..3
  const uint64_t rd = t.trcd + 4 + t.cwl + t.burst_cycles + t.twtr_l;
  EXPECT_EQ(d.read(rd, 3, 5), burst(1));
  const auto got = d.read(rd + t.tccd_l, 3, 6);
  for (unsigned i = 0; i < 32; ++i) EXPECT_EQ(got[i], i < 4 ? burst(2)[i] : 0) << i;
  EXPECT_EQ(d.reads, 2u);
  EXPECT_EQ(d.writes, 2u);
}

TEST(HbmDevice, StorageIsSparse) {
  // A 16 GiB-class geometry: only the rows written are allocated.
  HbmGeometry g;
  g.rows = 1u << 20;
  HbmDevice d(g, HbmTiming{});
  EXPECT_GE(g.bytes(), uint64_t{16} << 30);
  EXPECT_EQ(d.rows_allocated(), 0u);
  d.activate(0, 0, 123456);
  EXPECT_EQ(d.read(20, 0, 0), std::vector<uint8_t>(32, 0));  // never written: zeros, no allocation
  EXPECT_EQ(d.rows_allocated(), 0u);
  d.write(40, 0, 1, burst(7));  // after the read's data has left the bus
  EXPECT_EQ(d.rows_allocated(), 1u);
}

TEST(HbmDevice, FaultInjectionFlipsStoredBits) {
  HbmDevice d(HbmGeometry{}, HbmTiming{});
  d.activate(0, 1, 9);
  d.write(20, 1, 2, burst(3));
  d.flip_stored_bit(1, 9, 2, 13);  // byte 1, bit 5
  auto want = burst(3);
  want[1] ^= 0x20;
  EXPECT_EQ(d.read(60, 1, 2), want);
  EXPECT_THROW(d.flip_stored_bit(1, 9, 2, 256), std::out_of_range);
}

TEST(HbmDevice, LegalSequencePasses) {
  const HbmTiming t;
  EXPECT_EQ(rule_of([&](HbmDevice& d) {
              d.activate(0, 0, 1);         // bank 0, group 0
              d.activate(t.trrd_l, 4, 1);  // group 1: tRRD_S / _L both met
              d.read(t.trcd + t.trrd_l, 4, 0);
              d.read(t.trcd + t.trrd_l + t.tccd_s + 1, 0, 0);
              d.precharge(t.tras, 0);
              d.activate(t.tras + t.trp + 20, 0, 2);  // tRC: 34 + 14 + 20 >= 48
              d.precharge_all(t.tras + t.trp + 20 + t.tras);
              d.refresh(t.tras + t.trp + 20 + t.tras + t.trp);
            }),
            "");
}

TEST(HbmDevice, EveryRuleIsChecked) {
  const HbmTiming t;
  struct Case {
    const char* rule;
    std::function<void(HbmDevice&)> seq;
    HbmTiming timing = HbmTiming{};
  };
  // With the HBM2 defaults tRC = tRAS + tRP, so tRC alone needs a longer tRC to be broken.
  HbmTiming long_trc;
  long_trc.trc = 60;
  const Case cases[] = {
      {"tRCD", [&](HbmDevice& d) { d.activate(0, 0, 1), d.read(t.trcd - 1, 0, 0); }},
      {"tRAS", [&](HbmDevice& d) { d.activate(0, 0, 1), d.precharge(t.tras - 1, 0); }},
      {"tRP", [&](HbmDevice& d) { d.activate(0, 0, 1), d.precharge(t.tras, 0), d.activate(t.tras + t.trp - 1, 0, 2); }},
      {"tRC", [&](HbmDevice& d) { d.activate(0, 0, 1), d.precharge(t.tras, 0), d.activate(59, 0, 2); }, long_trc},
      {"tRRD_S", [&](HbmDevice& d) { d.activate(0, 0, 1), d.activate(t.trrd_s - 1, 4, 1); }},
      {"tRRD_L", [&](HbmDevice& d) { d.activate(0, 0, 1), d.activate(t.trrd_l - 1, 1, 1); }},
      {"tFAW",
       [&](HbmDevice& d) {
         for (unsigned i = 0; i < 4; ++i) d.activate(i * t.trrd_l, i * 4, 1);  // four groups
         d.activate(t.tfaw - 1, 1, 1);
       }},
      {"tCCD_S", [&](HbmDevice& d) { d.activate(0, 0, 1), d.activate(6, 4, 1), d.read(20, 0, 0), d.read(20, 4, 0); }},
      {"tCCD_L", [&](HbmDevice& d) { d.activate(0, 0, 1), d.read(20, 0, 0), d.read(20 + t.tccd_l - 1, 0, 1); }},
      {"tWTR_S",
       [&](HbmDevice& d) {
         d.activate(0, 0, 1), d.activate(6, 4, 1), d.write(20, 0, 0, burst(1));
         d.read(20 + t.cwl + t.burst_cycles + t.twtr_s - 1, 4, 0);
       }},
      {"tWTR_L",
       [&](HbmDevice& d) {
         d.activate(0, 0, 1), d.write(20, 0, 0, burst(1));
         d.read(20 + t.cwl + t.burst_cycles + t.twtr_l - 1, 0, 1);
       }},
      {"tRTP", [&](HbmDevice& d) { d.activate(0, 0, 1), d.read(t.tras - 1, 0, 0), d.precharge(t.tras, 0); }},
      {"tWR",
       [&](HbmDevice& d) {
         d.activate(0, 0, 1), d.write(t.tras, 0, 0, burst(1));
         d.precharge(t.tras + t.cwl + t.burst_cycles + t.twr - 1, 0);
       }},
      {"tRFC", [&](HbmDevice& d) { d.refresh(10), d.activate(10 + t.trfc - 1, 0, 1); }},
      {"tREFI", [&](HbmDevice& d) { d.activate(uint64_t{t.trefi} * (t.max_postponed + 1), 0, 1); }},
      {"data bus",
       [&](HbmDevice& d) {
         // A write right after a read: its data would collide with the read's on the bus.
         d.activate(0, 0, 1), d.activate(6, 4, 1), d.read(20, 0, 0), d.write(21, 4, 0, burst(1));
       }},
      {"ACT to an open bank", [&](HbmDevice& d) { d.activate(0, 0, 1), d.activate(t.trc, 0, 2); }},
      {"RD to a closed bank", [&](HbmDevice& d) { d.read(5, 0, 0); }},
      {"WR to a closed bank", [&](HbmDevice& d) { d.write(5, 0, 0, burst(1)); }},
      {"REF with an open bank", [&](HbmDevice& d) { d.activate(0, 2, 1), d.refresh(100); }},
      // Single-bank refresh: its bank closed (and tRP, tRC met), tRFCSB before the bank's next
      // activate or refresh, tRREFD before an activate or a refresh of another bank, tRRD after an
      // activate.
      {"REFSB to an open bank", [&](HbmDevice& d) { d.activate(0, 2, 1), d.refresh_bank(100, 2); }},
      {"tRFCSB", [&](HbmDevice& d) { d.refresh_bank(10, 3), d.activate(10 + t.trfcsb - 1, 3, 1); }},
      {"tRFCSB", [&](HbmDevice& d) { d.refresh_bank(10, 3), d.refresh_bank(10 + t.trfcsb - 1, 3); }},
      {"tRREFD", [&](HbmDevice& d) { d.refresh_bank(10, 3), d.activate(10 + t.trrefd - 1, 7, 1); }},
      {"tRREFD", [&](HbmDevice& d) { d.refresh_bank(10, 3), d.refresh_bank(10 + t.trrefd - 1, 7); }},
      {"tRRD_S", [&](HbmDevice& d) { d.activate(10, 4, 1), d.refresh_bank(10 + t.trrd_s - 1, 0); }},
      {"tRP", [&](HbmDevice& d) { d.activate(0, 0, 1), d.precharge(t.tras, 0), d.refresh_bank(t.tras + 5, 0); }},
      {"tRFC", [&](HbmDevice& d) { d.refresh(10), d.refresh_bank(10 + t.trfc - 1, 0); }},
      {"order", [&](HbmDevice& d) { d.activate(10, 0, 1), d.activate(5, 4, 1); }},
      {"address", [&](HbmDevice& d) { d.activate(0, 16, 1); }},
  };
  for (const auto& c : cases) EXPECT_EQ(rule_of(c.seq, c.timing), c.rule) << "expected a " << c.rule << " violation";
}

TEST(HbmDevice, ViolationNamesRuleBankAndCycle) {
  HbmDevice d(HbmGeometry{}, HbmTiming{});
  d.activate(0, 5, 1);
  try {
    d.read(3, 5, 0);
    FAIL() << "no violation";
  } catch (const HbmViolation& v) {
    EXPECT_EQ(v.rule(), "tRCD");
    EXPECT_EQ(v.bank(), 5u);
    EXPECT_EQ(v.cycle(), 3u);
    EXPECT_NE(std::string(v.what()).find("tRCD on bank 5 at cycle 3"), std::string::npos) << v.what();
  }
}

TEST(HbmDevice, RefreshMayBePostponedOnlyWithinTheLimit) {
  const HbmTiming t;
  HbmDevice d(HbmGeometry{}, t);
  // Eight refreshes postponed is legal; they are then issued back to back (tRFC apart).
  uint64_t c = uint64_t{t.trefi} * t.max_postponed;
  d.check_refresh(c);
  for (unsigned i = 0; i < t.max_postponed; ++i, c += t.trfc) d.refresh(c);
  EXPECT_EQ(d.refreshes, t.max_postponed);
  EXPECT_THROW(d.check_refresh(uint64_t{t.trefi} * (2 * t.max_postponed + 1)), HbmViolation);
}

// Single-bank refresh: each bank needs its own once per tREFI, and the others go on meanwhile (an
// open bank and a read elsewhere are legal during another bank's tRFCSB); a bank left out of the
// rotation is caught, by number.
TEST(HbmDevice, SingleBankRefreshCountsPerBank) {
  const HbmTiming t;
  const HbmGeometry g;
  HbmDevice d(g, t);
  d.activate(0, 1, 5);
  uint64_t c = 100;
  for (unsigned round = 0; round < t.max_postponed + 1; ++round)
    for (unsigned b = 0; b < g.banks(); ++b) {
      if (b == 1) continue;  // open: its row is read while the others refresh
      d.refresh_bank(c, b);
      d.read(c + t.trrefd, 1, round % g.columns);
      c += 12;  // over tRREFD; 15 banks x 12 cycles is over tRFCSB before a bank's next
    }
  EXPECT_EQ(d.bank_refreshes, uint64_t{(t.max_postponed + 1) * (g.banks() - 1)});
  try {
    d.check_refresh(uint64_t{t.trefi} * (t.max_postponed + 1));
    FAIL() << "bank 1 was never refreshed";
  } catch (const HbmViolation& v) {
    EXPECT_EQ(v.rule(), "tREFI");
    EXPECT_EQ(v.bank(), 1u);
  }
}

}  // namespace
