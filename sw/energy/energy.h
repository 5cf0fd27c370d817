// An energy estimate of a run (docs/energy.md): per-action energies from published figures, scaled
// to the stated node, times the run's own counters, split by unit; and TOPS/W at the preset's
// clock.
//
// Every unit's term is a constant energy per action (EnergyModel::pj_per_action) times the unit's
// action count, a linear combination of counters with integer coefficients (estimate()): so
// doubling every counter doubles every term exactly. A counter a backend does not report (the
// golden backend has no per-link flits, a golden chip no ICI bytes) leaves its part out and is
// listed under "missing"; a unit none of whose counters is there has no term at all.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "config.h"

namespace tp::energy {

// ---- The figures (docs/energy.md, each with its source) ----

// Horowitz, "Computing's energy problem (and what we can do about it)", ISSCC 2014: 45 nm, 0.9 V.
inline constexpr double kBaseNodeNm = 45.0, kBaseVdd = 0.9;
inline constexpr double kFp16MulPj = 1.1;   // fp16 multiply, used for bf16 (its significand is shorter)
inline constexpr double kFp32AddPj = 0.9;   // fp32 add
inline constexpr double kInt32AddPj = 0.1;  // 32-bit integer add
// A 64-bit SRAM read of an 8 KB, 32 KB and 1 MB array.
inline constexpr double kSram8KPj = 10.0, kSram32KPj = 20.0, kSram1MPj = 100.0;
// The power law fitted to those three points: e(S) = kSram8KPj / 64 x (S / 8 KiB)^kSramExponent.
inline constexpr double kSramExponent = 0.475;

// The stated node: TPU v2's 16 nm (Norrie et al., IEEE Micro 41(2), 2021) at 0.8 V.
inline constexpr unsigned kNodeNm = 16;
inline constexpr double kVdd = 0.8;

// HBM2, per bit moved (O'Connor et al., "Fine-Grained DRAM", MICRO 2017): the device's own
// figure, not scaled.
inline constexpr double kHbmPjPerBit = 3.9;
// An ICI link, per bit and hop: an assumption (a long-reach SerDes figure), not a measurement.
inline constexpr double kIciPjPerBitHop = 5.0;

// Logic and SRAM from 45 nm to the node to first order, E ~ C V^2 with C ~ feature size:
// (16 / 45) x (0.8 / 0.9)^2 = 0.2809.
constexpr double node_scale() { return kNodeNm / kBaseNodeNm * (kVdd / kBaseVdd) * (kVdd / kBaseVdd); }

// pJ per bit of one access, read or write, of an SRAM array of `bytes`: the power law at 45 nm,
// times node_scale().
double sram_pj_per_bit(double bytes);

// ---- The model of a preset ----

enum class Unit : unsigned { mxu, accumulator, vmem, vpu, hbm, ici, frontend };
inline constexpr unsigned kNumUnits = 7;
inline constexpr std::array<std::string_view, kNumUnits> kUnitNames = {"mxu", "accumulator", "vmem",    "vpu",
                                                                       "hbm", "ici",         "frontend"};

// The energies per action of one preset (what an action is per unit: docs/energy.md, "Units and
// their actions").
struct EnergyModel {
  unsigned node_nm = kNodeNm;
  unsigned n = 0;                // MXU lanes (a row is n x 32 bits)
  double clock_mhz = 0;          // the preset's clock: TOPS and watts
  uint64_t vmem_bank_bytes = 0;  // one VMEM bank: vmem_rows x 4n / vmem_banks
  uint64_t acc_bytes = 0;        // the accumulators: acc_rows x 4n
  uint64_t imem_bytes = 0;       // the instruction memory: imem_words x 16
  unsigned link_word_bits = 0;   // an ICI link word: {crc, seq, flit} (isa::hw::ici::FlitLayout)
  double mul_pj = 0, fp32_add_pj = 0, int32_add_pj = 0;  // at the node
  double vmem_bit_pj = 0, acc_bit_pj = 0, imem_bit_pj = 0;
  double hbm_bit_pj = 0, ici_bit_hop_pj = 0;
  std::array<double, kNumUnits> pj_per_action{};  // per unit, indexed by Unit

  static EnergyModel for_preset(const Preset&);
  double pj(Unit u) const { return pj_per_action[static_cast<unsigned>(u)]; }
};

// The estimate of one run (or, summed with +=, of a pod's chips).
struct Estimate {
  std::array<bool, kNumUnits> has{};                        // the unit has a term (some counter of its was there)
  std::array<uint64_t, kNumUnits> actions{};                // per unit: the counter-derived action count
  std::array<double, kNumUnits> terms{};                    // per unit, pJ: pj_per_action x actions
  std::map<std::string, std::vector<std::string>> missing;  // unit -> counters it had no value for
  uint64_t macs = 0;                                        // the MXU's multiply-accumulates
  uint64_t cycles = 0;                                      // the run's cycles (a golden run: its estimate)
  bool cycles_estimated = false;                            // cycles are the golden timing estimate (est_cycles)

  double total_pj() const;
  double term(Unit u) const { return terms[static_cast<unsigned>(u)]; }
  uint64_t action(Unit u) const { return actions[static_cast<unsigned>(u)]; }
  // A pod's total: terms, actions and MACs summed, missing counters merged, cycles the longest.
  Estimate& operator+=(const Estimate&);
};

// The counters of a run (tp::driver::Chip::counters, Slice::counters) through the model.
Estimate estimate(const EnergyModel&, const std::map<std::string, uint64_t>& counters);

// The report's "energy" object: node_nm, total_pj, terms, actions, pj_per_action, missing, macs,
// cycles, clock_mhz, cycles_estimated, tops, watts, tops_per_watt (docs/energy.md).
nlohmann::ordered_json to_json(const EnergyModel&, const Estimate&);
// estimate() then to_json() with the preset's model.
nlohmann::ordered_json energy_json(const Preset&, const std::map<std::string, uint64_t>& counters);

// TOPS/W (2 x MACs per pJ), TOPS and watts at the model's clock over e.cycles (0 when there are no
// cycles or no energy).
double tops_per_watt(const Estimate&);
double tops(const EnergyModel&, const Estimate&);
double watts(const EnergyModel&, const Estimate&);

// One line: "1.23 uJ (hbm 80%, vmem 12%, mxu 6%, ...), 0.41 TOPS/W (0.2 TOPS, 0.5 W at 700 MHz)",
// the units by size (those under 0.5% left out), and what the counters did not cover.
std::string summary(const EnergyModel&, const Estimate&);

}  // namespace tp::energy
