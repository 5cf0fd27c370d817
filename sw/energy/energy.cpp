#include "energy.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <initializer_list>

#include "isa.h"

namespace tp::energy {

namespace {

constexpr unsigned idx(Unit u) { return static_cast<unsigned>(u); }

constexpr double kSramBaseBytes = 8192.0;  // Horowitz's smallest array, 8 KB
constexpr unsigned kInstructionBits = 128;

// One term of a unit's action count: coefficient x counter.
struct Part {
  std::string counter;
  uint64_t coefficient;
};

// pJ, nJ, uJ, mJ or J, three significant digits.
std::string joules(double pj) {
  constexpr std::array<std::string_view, 5> kNames = {"pJ", "nJ", "uJ", "mJ", "J"};
  unsigned k = 0;
  while (k + 1 < kNames.size() && std::abs(pj) >= 1000.0) {
    pj /= 1000.0;
    ++k;
  }
  return fmt::format("{:.3g} {}", pj, kNames[k]);
}

double seconds(const EnergyModel& m, const Estimate& e) {
  return m.clock_mhz > 0 ? static_cast<double>(e.cycles) / (m.clock_mhz * 1e6) : 0.0;
}

}  // namespace

double sram_pj_per_bit(double bytes) {
  return kSram8KPj / 64.0 * std::pow(bytes / kSramBaseBytes, kSramExponent) * node_scale();
}

EnergyModel EnergyModel::for_preset(const Preset& p) {
  EnergyModel m;
  m.n = p.mxu.n;
  m.clock_mhz = p.clock_mhz;
  const uint64_t row_bytes = 4ull * p.mxu.n;
  m.vmem_bank_bytes = p.chip.vmem_rows * row_bytes / std::max(1u, p.chip.vmem_banks);
  m.acc_bytes = p.mxu.acc_rows * row_bytes;
  m.imem_bytes = p.chip.imem_words * uint64_t{kInstructionBits / 8};
  // The link word as the RTL builds it (tp_ici_pkg): FW = 2 + VW + 4 CW + HOPW + FlitW, then seq
  // and CRC; VW = ceil(log2 V), at least 1.
  const unsigned vw = p.ici.vcs > 1 ? static_cast<unsigned>(std::bit_width(p.ici.vcs - 1)) : 1u;
  m.link_word_bits = isa::hw::ici::FlitLayout{vw, p.ici.flit_bits}.link_bits();

  const double s = node_scale();
  m.mul_pj = kFp16MulPj * s;
  m.fp32_add_pj = kFp32AddPj * s;
  m.int32_add_pj = kInt32AddPj * s;
  m.vmem_bit_pj = sram_pj_per_bit(static_cast<double>(m.vmem_bank_bytes));
  m.acc_bit_pj = sram_pj_per_bit(static_cast<double>(m.acc_bytes));
  m.imem_bit_pj = sram_pj_per_bit(static_cast<double>(m.imem_bytes));
  m.hbm_bit_pj = kHbmPjPerBit;
  m.ici_bit_hop_pj = kIciPjPerBitHop;

  m.pj_per_action[idx(Unit::mxu)] = m.mul_pj + m.fp32_add_pj;
  m.pj_per_action[idx(Unit::accumulator)] = m.acc_bit_pj;
  m.pj_per_action[idx(Unit::vmem)] = m.vmem_bit_pj;
  m.pj_per_action[idx(Unit::vpu)] = m.fp32_add_pj;
  m.pj_per_action[idx(Unit::hbm)] = m.hbm_bit_pj;
  m.pj_per_action[idx(Unit::ici)] = m.ici_bit_hop_pj;
  m.pj_per_action[idx(Unit::frontend)] = kInstructionBits * m.imem_bit_pj + m.int32_add_pj;
  return m;
}

double Estimate::total_pj() const {
  double t = 0;
  for (unsigned u = 0; u < kNumUnits; ++u)
    if (has[u]) t += terms[u];
  return t;
}

Estimate& Estimate::operator+=(const Estimate& o) {
  for (unsigned u = 0; u < kNumUnits; ++u) {
    has[u] = has[u] || o.has[u];
    actions[u] += o.actions[u];
    terms[u] += o.terms[u];
  }
  for (const auto& [unit, names] : o.missing) {
    auto& mine = missing[unit];
    for (const auto& name : names)
      if (std::find(mine.begin(), mine.end(), name) == mine.end()) mine.push_back(name);
  }
  macs += o.macs;
  cycles = std::max(cycles, o.cycles);
  cycles_estimated = cycles_estimated || o.cycles_estimated;
  return *this;
}

Estimate estimate(const EnergyModel& m, const std::map<std::string, uint64_t>& counters) {
  Estimate e;
  auto value = [&](const std::string& name) -> const uint64_t* {
    const auto it = counters.find(name);
    return it == counters.end() ? nullptr : &it->second;
  };
  auto set = [&](Unit u, uint64_t actions) {
    e.has[idx(u)] = true;
    e.actions[idx(u)] = actions;
    e.terms[idx(u)] = m.pj(u) * static_cast<double>(actions);
  };
  // A unit's actions: the linear combination of the counters that are there; the others listed.
  auto combine = [&](Unit u, std::initializer_list<Part> parts) {
    uint64_t sum = 0;
    bool any = false;
    for (const auto& p : parts) {
      if (const uint64_t* v = value(p.counter)) {
        sum += p.coefficient * *v;
        any = true;
      } else {
        e.missing[std::string(kUnitNames[idx(u)])].push_back(p.counter);
      }
    }
    if (any) set(u, sum);
  };
  const uint64_t n = m.n, row_bits = 32 * n;

  // The MXU: its MAC counter, or (the golden backend) every activation row through the n x n
  // array, which is what the RTL's counter counts (n^2 per row the array takes).
  if (const uint64_t* macs = value("mxu_macs")) {
    e.macs = *macs;
    set(Unit::mxu, e.macs);
  } else if (const uint64_t* rows = value("mxu_rows")) {
    e.macs = *rows * n * n;
    set(Unit::mxu, e.macs);
  } else {
    e.missing["mxu"].push_back("mxu_macs");
  }
  // Each activation row read-modify-writes an accumulator row: two accesses of n x 32 bits.
  combine(Unit::accumulator, {{"mxu_rows", 2 * row_bits}});
  // VMEM: the DMAs' bytes, the ICI unit's sends (reads) and arrivals (writes), the MXU's
  // activation rows, and per vector row one write and two operand reads.
  combine(Unit::vmem, {{"bytes_loaded", 8},
                       {"bytes_stored", 8},
                       {"mxu_rows", row_bits},
                       {"vec_rows", 3 * row_bits},
                       {"ici_bytes_sent", 8},
                       {"ici_bytes_received", 8}});
  // The vector unit: n lanes per row it wrote, one fp32 operation each.
  combine(Unit::vpu, {{"vec_rows", n}});
  // HBM (or the memory model standing for it): every byte the DMAs moved.
  combine(Unit::hbm, {{"bytes_loaded", 8}, {"bytes_stored", 8}});
  // ICI: every link word sent on each of the four links, first transmissions and go-back-N
  // retransmissions, one hop each.
  const uint64_t lw = m.link_word_bits;
  combine(Unit::ici, {{"ici_flits_n", lw},
                      {"ici_flits_s", lw},
                      {"ici_flits_e", lw},
                      {"ici_flits_w", lw},
                      {"ici_retx_n", lw},
                      {"ici_retx_s", lw},
                      {"ici_retx_e", lw},
                      {"ici_retx_w", lw}});
  // The front end: per instruction one 128-bit instruction-memory read and a 32-bit add.
  combine(Unit::frontend, {{"instructions", 1}});

  if (const uint64_t* c = value("cycles")) e.cycles = *c;
  e.cycles_estimated = value("est_cycles") != nullptr;
  return e;
}

double tops_per_watt(const Estimate& e) {
  const double pj = e.total_pj();
  return pj > 0 ? 2.0 * static_cast<double>(e.macs) / pj : 0.0;
}

double tops(const EnergyModel& m, const Estimate& e) {
  const double s = seconds(m, e);
  return s > 0 ? 2.0 * static_cast<double>(e.macs) / s / 1e12 : 0.0;
}

double watts(const EnergyModel& m, const Estimate& e) {
  const double s = seconds(m, e);
  return s > 0 ? e.total_pj() * 1e-12 / s : 0.0;
}

nlohmann::ordered_json to_json(const EnergyModel& m, const Estimate& e) {
  using json = nlohmann::ordered_json;
  json terms = json::object(), actions = json::object(), per = json::object(), missing = json::object();
  for (unsigned u = 0; u < kNumUnits; ++u) {
    const std::string name(kUnitNames[u]);
    per[name] = m.pj_per_action[u];
    if (!e.has[u]) continue;
    terms[name] = e.terms[u];
    actions[name] = e.actions[u];
  }
  for (const auto& [unit, names] : e.missing) missing[unit] = names;
  return {{"node_nm", m.node_nm},
          {"total_pj", e.total_pj()},
          {"terms", terms},
          {"actions", actions},
          {"pj_per_action", per},
          {"missing", missing},
          {"macs", e.macs},
          {"cycles", e.cycles},
          {"cycles_estimated", e.cycles_estimated},
          {"clock_mhz", m.clock_mhz},
          {"tops", tops(m, e)},
          {"watts", watts(m, e)},
          {"tops_per_watt", tops_per_watt(e)}};
}

nlohmann::ordered_json energy_json(const Preset& p, const std::map<std::string, uint64_t>& counters) {
  const auto m = EnergyModel::for_preset(p);
  return to_json(m, estimate(m, counters));
}

std::string summary(const EnergyModel& m, const Estimate& e) {
  const double total = e.total_pj();
  std::vector<unsigned> order;
  for (unsigned u = 0; u < kNumUnits; ++u)
    if (e.has[u] && total > 0 && e.terms[u] >= 0.005 * total) order.push_back(u);
  std::stable_sort(order.begin(), order.end(), [&](unsigned a, unsigned b) { return e.terms[a] > e.terms[b]; });
  std::string parts;
  for (const unsigned u : order)
    parts += fmt::format("{}{} {:.0f}%", parts.empty() ? "" : ", ", kUnitNames[u], 100.0 * e.terms[u] / total);
  std::string out =
      fmt::format("{}{}, {:.3g} TOPS/W", joules(total), parts.empty() ? "" : " (" + parts + ")", tops_per_watt(e));
  if (e.cycles > 0)
    out += fmt::format(" ({:.3g} TOPS, {:.3g} W at {} MHz{})", tops(m, e), watts(m, e), m.clock_mhz,
                       e.cycles_estimated ? ", estimated cycles" : "");
  std::string lacking;
  for (unsigned u = 0; u < kNumUnits; ++u)
    if (!e.has[u]) lacking += fmt::format("{}{}", lacking.empty() ? "" : ", ", kUnitNames[u]);
  if (!lacking.empty()) out += fmt::format("; no counters for {}", lacking);
  return out;
}

}  // namespace tp::energy
