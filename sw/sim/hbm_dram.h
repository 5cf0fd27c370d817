// The DRAM side of a Verilated HBM controller or subsystem, shared by the HBM harness and the
// chip harness: one golden HbmDevice per pseudo-channel takes the commands (and checks their
// timing: a violation throws golden::HbmViolation), and read data comes back CL cycles later.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "config.h"
#include "hbm_device.h"
#include "isa_gen.h"  // isa::hw::HbmCmd

namespace tp::tb {

inline golden::HbmTiming hbm_timing(const HbmConfig& c) {
  golden::HbmTiming t;
  const auto& x = c.timing;
  t.cl = x.cl, t.cwl = x.cwl, t.trcd = x.trcd, t.trp = x.trp, t.tras = x.tras, t.trc = x.trc;
  t.tccd_s = x.tccd_s, t.tccd_l = x.tccd_l, t.trrd_s = x.trrd_s, t.trrd_l = x.trrd_l, t.tfaw = x.tfaw;
  t.twtr_s = x.twtr_s, t.twtr_l = x.twtr_l, t.trtp = x.trtp, t.twr = x.twr, t.trfc = x.trfc, t.trefi = x.trefi;
  t.trfcsb = x.trfcsb, t.trrefd = x.trrefd;
  return t;
}

inline golden::HbmGeometry hbm_geometry(const HbmConfig& c) {
  golden::HbmGeometry g;
  g.bank_groups = c.bank_groups;
  g.banks_per_group = c.banks_per_group;
  g.rows = c.rows;
  g.columns = c.columns;
  g.burst_bytes = 36;  // 256 data bits as four 72-bit SECDED codewords
  return g;
}

// Top is one controller (tp_hbm_ctrl: scalar DRAM ports) or has one DRAM interface per
// pseudo-channel (tp_hbm, tp_chip_hbm: unpacked arrays of ports).
template <class Top>
class HbmDram {
 public:
  static constexpr bool kMulti = requires(Top t) { t.cmd_valid_o[0]; };

  HbmDram(const HbmConfig& cfg, unsigned pseudo_channels) : pipes_(pseudo_channels) {
    for (unsigned c = 0; c < pseudo_channels; ++c) devs_.emplace_back(hbm_geometry(cfg), hbm_timing(cfg));
  }

  unsigned channels() const { return static_cast<unsigned>(devs_.size()); }
  golden::HbmDevice& device(unsigned c) { return devs_.at(c); }
  const golden::HbmDevice& device(unsigned c) const { return devs_.at(c); }
  void log_to(std::FILE* f) { log_ = f; }

  // Port p of pseudo-channel c.
  template <class P>
  static auto& port(P& p, unsigned c) {
    if constexpr (kMulti)
      return p[c];
    else
      return p;
  }

  // Before the clock edge: the read data due in this cycle.
  void drive(Top& dut, uint64_t cycle) {
    for (unsigned c = 0; c < channels(); ++c) {
      port(dut.rd_valid_i, c) = 0;
      auto& pipe = pipes_[c];
      if (!pipe.empty() && pipe.front().first == cycle) {
        const auto& d = pipe.front().second;
        auto& data = port(dut.rd_data_i, c);
        for (unsigned w = 0; w < 9; ++w) {
          uint32_t v = 0;
          for (unsigned k = 0; k < 4; ++k) v |= uint32_t{d[w * 4 + k]} << (8 * k);
          data[w] = v;
        }
        port(dut.rd_valid_i, c) = 1;
        pipe.pop_front();
      }
    }
  }

  // After the combinational outputs settle: the commands issued in this cycle.
  void sample(Top& dut, uint64_t cycle) {
    for (unsigned c = 0; c < channels(); ++c)
      if (port(dut.cmd_valid_o, c)) command(dut, c, cycle);
  }

  void check_refresh(uint64_t cycle) const {
    for (const auto& d : devs_) d.check_refresh(cycle);
  }

 private:
  void command(Top& dut, unsigned c, uint64_t cycle) {
    auto& dev = devs_[c];
    const unsigned bank = port(dut.cmd_bank_o, c), row = port(dut.cmd_row_o, c), col = port(dut.cmd_col_o, c);
    const unsigned op = port(dut.cmd_o, c);
    if (log_)
      fmt::print(log_, "{} pc {} {} bank {} row {} col {}\n", cycle, c,
                 std::string_view("ACT PRE RD  WR  REF RFB ???").substr(4 * std::min(op, 6u), 3), bank, row, col);
    using isa::hw::HbmCmd;
    switch (static_cast<HbmCmd>(op)) {
      case HbmCmd::act:
        dev.activate(cycle, bank, row);
        break;
      case HbmCmd::pre:
        dev.precharge(cycle, bank);
        break;
      case HbmCmd::rd:
        pipes_[c].push_back({cycle + dev.timing().cl, dev.read(cycle, bank, col)});
        break;
      case HbmCmd::wr: {
        const auto& wd = port(dut.cmd_wdata_o, c);
        const uint64_t wm = port(dut.cmd_wmask_o, c);
        std::vector<uint8_t> d(36);
        for (unsigned i = 0; i < 36; ++i) d[i] = static_cast<uint8_t>(wd[i / 4] >> (8 * (i % 4)));
        uint64_t mask = 0;
        for (unsigned i = 0; i < 36; ++i) mask |= ((wm >> i) & 1u) << i;
        dev.write(cycle, bank, col, d, mask);
        break;
      }
      case HbmCmd::ref:
        dev.refresh(cycle);
        break;
      case HbmCmd::refsb:
        dev.refresh_bank(cycle, bank);
        break;
      default:
        throw std::runtime_error(fmt::format("HBM controller {} issued unknown command {}", c, op));
    }
  }

  std::vector<golden::HbmDevice> devs_;
  std::vector<std::deque<std::pair<uint64_t, std::vector<uint8_t>>>> pipes_;
  std::FILE* log_ = nullptr;
};

}  // namespace tp::tb
