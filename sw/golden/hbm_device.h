// Behavioural model of one HBM2 pseudo-channel's DRAM (docs/hbm.md): banks in bank groups, rows
// and columns; data stored sparsely (only rows ever written hold memory, so a 16 GiB preset
// allocates nothing up front); and a timing checker that tests every command against the JEDEC
// constraints and names the rule, the bank and the cycle of any violation.
//
// This is the device side that the HBM controller (rtl/hbm/tp_hbm_ctrl.sv) drives in its tests
// (tb/hbm): pure C++, their DRAM and their timing oracle.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace tp::golden {

// Timing in controller clock cycles (tCK). Defaults: the HBM2 values DRAM simulators commonly
// use (../shared/DESIGN.md).
struct HbmTiming {
  unsigned cl = 14, cwl = 4, trcd = 14, trp = 14, tras = 34, trc = 48;
  unsigned tccd_s = 1, tccd_l = 2, trrd_s = 4, trrd_l = 6, tfaw = 30;
  unsigned twtr_s = 4, twtr_l = 9, trtp = 4, twr = 16;
  unsigned trfc = 260, trefi = 3900;
  unsigned trfcsb = 160, trrefd = 8;  // single-bank refresh: the bank's refresh; REFSB to ACT or REFSB elsewhere
  unsigned burst_cycles = 2;          // data-bus cycles per burst (burst length 4, double data rate)
  unsigned max_postponed = 8;         // refreshes that may be postponed (JEDEC)
};

struct HbmGeometry {
  unsigned bank_groups = 4, banks_per_group = 4;
  unsigned rows = 16384;
  unsigned columns = 32;      // bursts per row (1 KiB page / 32 B per burst)
  unsigned burst_bytes = 32;  // 64-bit pseudo-channel x burst length 4
  unsigned banks() const { return bank_groups * banks_per_group; }
  uint64_t bytes() const { return uint64_t{banks()} * rows * columns * burst_bytes; }
};

// A timing or protocol violation: what rule, which bank, which cycle.
class HbmViolation : public std::runtime_error {
 public:
  HbmViolation(const std::string& rule, unsigned bank, uint64_t cycle, const std::string& detail);
  const std::string& rule() const { return rule_; }
  unsigned bank() const { return bank_; }
  uint64_t cycle() const { return cycle_; }

 private:
  std::string rule_;
  unsigned bank_;
  uint64_t cycle_;
};

class HbmDevice {
 public:
  HbmDevice(HbmGeometry g, HbmTiming t);

  const HbmGeometry& geometry() const { return g_; }
  const HbmTiming& timing() const { return t_; }

  // Commands, each at controller cycle `cycle` (non-decreasing). Each checks every rule that
  // applies and throws HbmViolation on the first one broken.
  void activate(uint64_t cycle, unsigned bank, unsigned row);
  void precharge(uint64_t cycle, unsigned bank);
  void precharge_all(uint64_t cycle);
  // A read returns the burst; its data is on the bus from cycle + CL for burst_cycles.
  std::vector<uint8_t> read(uint64_t cycle, unsigned bank, unsigned column);
  // Bytes with mask bit i clear are left unchanged (byte mask, bit i for byte i).
  void write(uint64_t cycle, unsigned bank, unsigned column, const std::vector<uint8_t>& data,
             uint64_t byte_mask = ~uint64_t{0});
  void refresh(uint64_t cycle);  // all-bank refresh: every bank must be precharged
  // Single-bank refresh (REFSB): the bank must be precharged; the others may be open and go on.
  void refresh_bank(uint64_t cycle, unsigned bank);
  // Call when the simulation ends (or at any time) to check that refresh was never starved: every
  // bank refreshed (all-bank or on its own) once per tREFI, at most max_postponed behind.
  void check_refresh(uint64_t cycle) const;

  // Fault injection for ECC tests: flip bit `bit` of the stored burst (data as written).
  void flip_stored_bit(unsigned bank, unsigned row, unsigned column, unsigned bit);

  // The host's backdoor (no command, no timing): the stored burst, as written (with its check
  // bits). Unwritten memory reads as zeros.
  std::vector<uint8_t> peek(unsigned bank, unsigned row, unsigned column) const;
  void poke(unsigned bank, unsigned row, unsigned column, const std::vector<uint8_t>& data);

  bool row_open(unsigned bank) const { return banks_.at(bank).open; }
  unsigned open_row(unsigned bank) const { return banks_.at(bank).row; }
  std::size_t rows_allocated() const { return store_.size(); }

  // Statistics.
  uint64_t activates = 0, reads = 0, writes = 0, precharges = 0, refreshes = 0, bank_refreshes = 0;

 private:
  static constexpr uint64_t kNever = ~uint64_t{0} >> 1;  // "long ago"

  struct Bank {
    bool open = false;
    unsigned row = 0;
    uint64_t act = kNever, pre = kNever, rd = kNever, wr_end = kNever;  // wr_end: last write data end
    uint64_t ref = kNever;                                              // its last single-bank refresh
    uint64_t refreshed = 0;                                             // single-bank refreshes
  };

  [[noreturn]] void fail(const std::string& rule, unsigned bank, uint64_t cycle, const std::string& detail) const;
  void need(bool ok, const char* rule, unsigned bank, uint64_t cycle, uint64_t since, unsigned gap) const;
  void advance(uint64_t cycle);
  void check_bank(unsigned bank, uint64_t cycle) const;
  unsigned group(unsigned bank) const { return bank / g_.banks_per_group; }
  uint64_t key(unsigned bank, unsigned row) const { return uint64_t{bank} * g_.rows + row; }
  std::vector<uint8_t>& row_data(unsigned bank, unsigned row);

  HbmGeometry g_;
  HbmTiming t_;
  std::vector<Bank> banks_;
  uint64_t now_ = 0;
  uint64_t last_act_ = kNever;                                  // any bank (tRRD_S)
  std::vector<uint64_t> group_act_, group_col_, group_wr_end_;  // per bank group (_L rules)
  std::deque<uint64_t> faw_;                                    // the last four activates (tFAW)
  uint64_t last_col_ = kNever;                                  // last read or write, any bank (tCCD_S)
  uint64_t wr_end_ = kNever;                                    // end of the last write's data (tWTR_S)
  uint64_t bus_end_ = 0;                                        // the data bus is busy before this cycle
  bool bus_read_ = true;                                        // direction of the last burst on the bus
  uint64_t ref_ = kNever;                                       // last refresh command (tRFC)
  uint64_t refsb_ = kNever;                                     // last single-bank refresh, any bank (tRREFD)
  std::unordered_map<uint64_t, std::vector<uint8_t>> store_;
};

}  // namespace tp::golden
