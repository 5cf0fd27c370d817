// The energy estimate (sw/energy, docs/energy.md): its figures against the published ones, a case
// computed by hand from those figures, every term doubling with the counters, and the terms of
// compiled matmuls on the golden backend against their counters when the matmul's M doubles.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "driver.h"
#include "energy.h"

namespace {

using tp::energy::EnergyModel;
using tp::energy::Estimate;
using tp::energy::Unit;
using Counters = std::map<std::string, uint64_t>;

// The published figures, written out here rather than taken from the library.
constexpr double kScale = 16.0 / 45.0 * (0.8 * 0.8) / (0.9 * 0.9);  // 45 nm 0.9 V -> 16 nm 0.8 V
// Horowitz's SRAM power law at 45 nm, pJ per bit of an array of `bytes`, scaled to 16 nm.
double sram_bit(double bytes) { return 10.0 / 64.0 * std::pow(bytes / 8192.0, 0.475) * kScale; }

void expect_rel(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, 1e-12 * std::abs(want)) << what;
}

// An RTL-like counter set of a small run on tiny: every counter the model reads.
Counters rtl_counters() {
  return {{"cycles", 1000},       {"mxu_rows", 100},       {"mxu_macs", 6400},
          {"bytes_loaded", 3200}, {"bytes_stored", 640},   {"vec_rows", 10},
          {"instructions", 50},   {"ici_bytes_sent", 320}, {"ici_bytes_received", 160},
          {"ici_flits_n", 0},     {"ici_flits_s", 12},     {"ici_flits_e", 7},
          {"ici_flits_w", 1},     {"ici_retx_n", 0},       {"ici_retx_s", 2},
          {"ici_retx_e", 0},      {"ici_retx_w", 0},       {"vmem_conflicts", 99},
          {"mxu_array_busy", 123}};
}

TEST(Energy, FiguresMatchTheirSources) {
  EXPECT_NEAR(tp::energy::node_scale(), 0.2809, 5e-5);
  // The SRAM fit through Horowitz's three points (64-bit reads at 45 nm): exact at 8 KB, within
  // 4% at 32 KB (19.3 pJ for 20) and 1% at 1 MB (100.2 pJ for 100).
  auto read64_45nm = [](double bytes) { return 64.0 * tp::energy::sram_pj_per_bit(bytes) / kScale; };
  EXPECT_NEAR(read64_45nm(8192), 10.0, 1e-12);
  EXPECT_NEAR(read64_45nm(32768), 20.0, 0.04 * 20.0);
  EXPECT_LT(read64_45nm(32768), 20.0);
  EXPECT_NEAR(read64_45nm(1 << 20), 100.0, 0.01 * 100.0);

  // tiny: n = 8 (a row is 32 bytes), VMEM 2048 rows in 4 banks, 256 accumulator rows, 4096
  // instructions; ICI 2 VCs, 32 data bits a flit.
  const auto m = EnergyModel::for_preset(tp::load_preset("tiny"));
  EXPECT_EQ(m.node_nm, 16u);
  EXPECT_EQ(m.vmem_bank_bytes, 2048u * 32 / 4);
  EXPECT_EQ(m.acc_bytes, 256u * 32);
  EXPECT_EQ(m.imem_bytes, 4096u * 16);
  // A link word: head, tail, 1 VC bit, four 5-bit coordinates, 7 hop bits, 32 data bits; 8 sequence
  // bits and a 16-bit CRC.
  EXPECT_EQ(m.link_word_bits, 2u + 1 + 4 * 5 + 7 + 32 + 8 + 16);
  EXPECT_DOUBLE_EQ(m.hbm_bit_pj, 3.9);
  EXPECT_DOUBLE_EQ(m.ici_bit_hop_pj, 5.0);
  // small: 4 VCs (2 VC bits), 64 data bits.
  EXPECT_EQ(EnergyModel::for_preset(tp::load_preset("small")).link_word_bits, 2u + 2 + 20 + 7 + 64 + 8 + 16);
}

TEST(Energy, HandComputedTinyCase) {
  const tp::Preset p = tp::load_preset("tiny");
  const auto m = EnergyModel::for_preset(p);
  const auto e = tp::energy::estimate(m, rtl_counters());

  // Each term by hand: its actions from the counters, times the energy of one.
  const double mxu = 6400 * (1.1 + 0.9) * kScale;
  const double acc_bits = 100.0 * 8 * 32 * 2;  // mxu_rows x n x 32, read and written
  const double accumulator = acc_bits * sram_bit(256 * 32);
  // VMEM: 8 x (3200 + 640 + 320 + 160) DMA and ICI bits, 100 MXU rows and 3 x 10 vector rows of 256.
  const double vmem_bits = 8.0 * 4320 + 256.0 * 100 + 3 * 256.0 * 10;
  const double vmem = vmem_bits * sram_bit(16384);
  const double vpu = 10.0 * 8 * 0.9 * kScale;
  const double hbm = 8.0 * (3200 + 640) * 3.9;
  const double ici = (12.0 + 7 + 1 + 2) * 86 * 5.0;
  const double frontend = 50 * (128 * sram_bit(65536) + 0.1 * kScale);
  const double total = mxu + accumulator + vmem + vpu + hbm + ici + frontend;

  EXPECT_EQ(e.action(Unit::mxu), 6400u);
  EXPECT_EQ(e.action(Unit::accumulator), 51200u);
  EXPECT_EQ(e.action(Unit::vmem), 67840u);
  EXPECT_EQ(e.action(Unit::vpu), 80u);
  EXPECT_EQ(e.action(Unit::hbm), 30720u);
  EXPECT_EQ(e.action(Unit::ici), 22u * 86);
  EXPECT_EQ(e.action(Unit::frontend), 50u);
  expect_rel(e.term(Unit::mxu), mxu, "mxu");
  expect_rel(e.term(Unit::accumulator), accumulator, "accumulator");
  expect_rel(e.term(Unit::vmem), vmem, "vmem");
  expect_rel(e.term(Unit::vpu), vpu, "vpu");
  expect_rel(e.term(Unit::hbm), hbm, "hbm");
  expect_rel(e.term(Unit::ici), ici, "ici");
  expect_rel(e.term(Unit::frontend), frontend, "frontend");
  expect_rel(e.total_pj(), total, "total");
  EXPECT_TRUE(e.missing.empty());

  // 1000 cycles at 700 MHz; 2 ops per MAC.
  const double seconds = 1000 / 700e6;
  expect_rel(tp::energy::tops_per_watt(e), 2 * 6400 / total, "TOPS/W");
  expect_rel(tp::energy::tops(m, e), 2 * 6400 / seconds / 1e12, "TOPS");
  expect_rel(tp::energy::watts(m, e), total * 1e-12 / seconds, "W");

  // The report's object carries the same.
  const auto j = tp::energy::energy_json(p, rtl_counters());
  EXPECT_EQ(j.at("node_nm"), 16);
  expect_rel(j.at("total_pj").get<double>(), total, "total_pj");
  expect_rel(j.at("terms").at("hbm").get<double>(), hbm, "terms.hbm");
  EXPECT_EQ(j.at("actions").at("vmem"), 67840u);
  expect_rel(j.at("pj_per_action").at("mxu").get<double>(), 2.0 * kScale, "pj_per_action.mxu");
  expect_rel(j.at("tops_per_watt").get<double>(), 2 * 6400 / total, "tops_per_watt");
  EXPECT_EQ(j.at("terms").size(), tp::energy::kNumUnits);
  EXPECT_TRUE(j.at("missing").empty());
  EXPECT_FALSE(j.at("cycles_estimated").get<bool>());
}

TEST(Energy, DoublingTheCountersDoublesEveryTermExactly) {
  const auto m = EnergyModel::for_preset(tp::load_preset("odd"));
  Counters c = rtl_counters(), c2;
  for (const auto& [k, v] : c) c2[k] = 2 * v;
  const auto e = tp::energy::estimate(m, c), e2 = tp::energy::estimate(m, c2);
  for (unsigned u = 0; u < tp::energy::kNumUnits; ++u) {
    SCOPED_TRACE(tp::energy::kUnitNames[u]);
    ASSERT_TRUE(e.has[u]);
    EXPECT_GT(e.terms[u], 0.0);
    EXPECT_EQ(e2.actions[u], 2 * e.actions[u]);
    EXPECT_EQ(e2.terms[u], 2 * e.terms[u]);  // exact: a factor of 2 rounds nothing away
  }
  EXPECT_EQ(e2.total_pj(), 2 * e.total_pj());
  EXPECT_EQ(tp::energy::tops_per_watt(e2), tp::energy::tops_per_watt(e));
}

// The actions the docs give per unit, from a run's counters (the golden backend's: MACs from the
// MXU rows, no ICI counters).
std::map<Unit, uint64_t> golden_actions(const Counters& c, uint64_t n) {
  const uint64_t rows = c.at("mxu_rows"), vec = c.at("vec_rows");
  const uint64_t bytes = c.at("bytes_loaded") + c.at("bytes_stored");
  return {{Unit::mxu, rows * n * n},
          {Unit::accumulator, rows * n * 32 * 2},
          {Unit::vmem, 8 * bytes + rows * 32 * n + 3 * vec * 32 * n},
          {Unit::vpu, vec * n},
          {Unit::hbm, 8 * bytes},
          {Unit::frontend, c.at("instructions")}};
}

TEST(Energy, TermsScaleWithTheCountersWhenTheMatmulDoubles) {
  for (const std::string preset : {"tiny", "odd"}) {
    SCOPED_TRACE(preset);
    auto chip = tp::driver::Chip::open(preset, tp::driver::Backend::golden);
    const auto m = EnergyModel::for_preset(chip->preset());
    const uint32_t n = chip->lanes();
    const auto a = tp::driver::run_matmul(*chip, {8 * n, 4 * n, 4 * n, true, true}, 1);
    const auto b = tp::driver::run_matmul(*chip, {16 * n, 4 * n, 4 * n, true, true}, 1);
    ASSERT_TRUE(a.pass && b.pass);
    const auto ea = tp::energy::estimate(m, a.counters), eb = tp::energy::estimate(m, b.counters);
    const auto wa = golden_actions(a.counters, n), wb = golden_actions(b.counters, n);
    for (const auto& [u, want] : wa) {
      const std::string unit(tp::energy::kUnitNames[static_cast<unsigned>(u)]);
      SCOPED_TRACE(unit);
      EXPECT_EQ(ea.action(u), want);
      EXPECT_EQ(eb.action(u), wb.at(u));
      ASSERT_GT(want, 0u);
      // The term's ratio is the ratio of the counters it is made of, to double rounding.
      EXPECT_DOUBLE_EQ(eb.term(u) / ea.term(u), static_cast<double>(wb.at(u)) / static_cast<double>(want));
    }
    // Twice the rows through the array: twice the MACs, the MXU and accumulator terms exactly twice.
    EXPECT_EQ(b.mxu_rows, 2 * a.mxu_rows);
    EXPECT_EQ(eb.macs, 2 * ea.macs);
    EXPECT_EQ(eb.term(Unit::mxu), 2 * ea.term(Unit::mxu));
    EXPECT_EQ(eb.term(Unit::accumulator), 2 * ea.term(Unit::accumulator));
    EXPECT_EQ(ea.macs, uint64_t{8} * n * 4 * n * 4 * n);  // M x K x N, the shapes being multiples of n
  }
}

TEST(Energy, GoldenRunListsWhatItsCountersLack) {
  auto chip = tp::driver::Chip::open("tiny", tp::driver::Backend::golden);
  const auto run = tp::driver::run_matmul(*chip, {16, 16, 16, false, false}, 1);
  ASSERT_TRUE(run.pass);
  const auto j = tp::energy::energy_json(chip->preset(), run.counters);
  EXPECT_TRUE(j.at("cycles_estimated").get<bool>());
  EXPECT_FALSE(j.at("terms").contains("ici"));
  EXPECT_TRUE(j.at("terms").contains("mxu"));
  EXPECT_EQ(j.at("macs"), 16u * 16 * 16);
  EXPECT_EQ(j.at("missing").at("ici").size(), 8u);  // flits and retransmissions of four links
  EXPECT_EQ(j.at("missing").at("vmem").get<std::vector<std::string>>(),
            (std::vector<std::string>{"ici_bytes_sent", "ici_bytes_received"}));
  EXPECT_FALSE(j.at("missing").contains("mxu"));  // mxu_rows x n^2 is what the RTL counts
  double sum = 0;
  for (const auto& pj : j.at("terms")) sum += pj.get<double>();
  EXPECT_DOUBLE_EQ(j.at("total_pj").get<double>(), sum);
  const auto m = EnergyModel::for_preset(chip->preset());
  const std::string line = tp::energy::summary(m, tp::energy::estimate(m, run.counters));
  EXPECT_NE(line.find("no counters for ici"), std::string::npos) << line;
  EXPECT_NE(line.find("estimated cycles"), std::string::npos) << line;
}

TEST(Energy, PodTotalSumsTheChips) {
  const auto m = EnergyModel::for_preset(tp::load_preset("tiny"));
  Counters a = rtl_counters(), b = rtl_counters();
  b["cycles"] = 1500;
  b["mxu_macs"] = 0;
  b["mxu_rows"] = 0;
  b.erase("ici_flits_n");
  Estimate total = tp::energy::estimate(m, a);
  total += tp::energy::estimate(m, b);
  const auto ea = tp::energy::estimate(m, a), eb = tp::energy::estimate(m, b);
  for (unsigned u = 0; u < tp::energy::kNumUnits; ++u) {
    EXPECT_EQ(total.actions[u], ea.actions[u] + eb.actions[u]);
    EXPECT_EQ(total.terms[u], ea.terms[u] + eb.terms[u]);
  }
  EXPECT_EQ(total.macs, 6400u);
  EXPECT_EQ(total.cycles, 1500u);
  EXPECT_EQ(total.missing.at("ici"), std::vector<std::string>{"ici_flits_n"});
}

}  // namespace
