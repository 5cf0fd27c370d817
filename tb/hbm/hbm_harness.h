// Cycle-level harness: the Verilated HBM controller (one pseudo-channel) driving the golden
// HBM device model. Every DRAM command goes through the device's timing checker (a violation
// throws HbmViolation naming the rule, the bank and the cycle); a scoreboard checks every
// response: read data equal to the last data written before the read was accepted, each request
// answered once, in order per ID. Requests may carry an earliest cycle (trace replay).
#pragma once

#include <fmt/format.h>
#include <verilated.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "config.h"
#include "coverage.h"
#include "hbm_device.h"
#include "hbm_dram.h"

namespace tp::tb {

struct HbmBurst {
  std::array<uint8_t, 32> b{};
};

struct HbmRequest {
  bool write = false;
  uint32_t addr = 0;  // burst address within the pseudo-channel
  unsigned id = 0;
  HbmBurst data;
  uint32_t mask = ~0u;
  uint64_t not_before = 0;  // earliest cycle to present it (trace replay)
  unsigned len = 0;         // tp_hbm: bursts - 1 (a read's one handshake covers them all)
  unsigned beat = 0;        // tp_hbm writes: which burst of the request this handshake carries
};

// Top is one controller (tp_hbm_ctrl, scalar DRAM ports, one device) or the subsystem (tp_hbm,
// one DRAM interface and one device per pseudo-channel: channels x pseudo_channels).
template <class Top>
class HbmHarness {
 public:
  static constexpr bool kMulti = requires(Top t) { t.cmd_valid_o[0]; };

  HbmHarness(const HbmConfig& cfg, uint64_t seed)
      : cfg_(cfg),
        seed_(seed),
        rng_(seed ^ 0x9e3779b97f4a7c15ull),
        nc_(kMulti ? cfg.channels * cfg.pseudo_channels : 1),
        dram_(cfg, nc_) {
    ctx_.randReset(kRandReset);
    ctx_.randSeed(static_cast<int>(seed % 0x7fffffff) + 1);
    dut_ = std::make_unique<Top>(&ctx_, "hbm");
    dut_->rst_ni = 0;
    dut_->req_valid_i = 0;
    dut_->rsp_ready_i = 0;
    for (unsigned c = 0; c < nc_; ++c) HbmDram<Top>::port(dut_->rd_valid_i, c) = 0;
    for (int i = 0; i < 4; ++i) clock();
    dut_->rst_ni = 1;
    // TP_HBM_CMDLOG=<file>: write every DRAM command (cycle, command, bank, row, column).
    if (const char* log = std::getenv("TP_HBM_CMDLOG"); log && *log) cmdlog_ = std::fopen(log, "w");
    dram_.log_to(cmdlog_);
  }
  ~HbmHarness() {
    if (cmdlog_) std::fclose(cmdlog_);
    dut_->final();
    write_coverage(ctx_);
  }
  HbmHarness(const HbmHarness&) = delete;
  HbmHarness& operator=(const HbmHarness&) = delete;

  Top& top() { return *dut_; }
  golden::HbmDevice& device(unsigned c = 0) { return dram_.device(c); }
  unsigned channels() const { return nc_; }
  uint64_t cycle() const { return cycle_; }
  uint32_t bursts() const { return nc_ * cfg_.rows * cfg_.columns * cfg_.bank_groups * cfg_.banks_per_group; }

  void queue(const HbmRequest& r) {
    if (uint64_t{r.addr} + r.len >= bursts())
      throw std::out_of_range(fmt::format("HBM request address {} + {} >= {} bursts", r.addr, r.len, bursts()));
    if (r.len > 0 && !kMulti) throw std::invalid_argument("HBM request length: only tp_hbm takes multi-burst requests");
    reqs_.push_back(r);
  }
  // A multi-burst request (tp_hbm): a read of len + 1 bursts is one handshake; a write is one
  // handshake per burst of `data` (address, length and ID held).
  void queue_bursts(bool write, uint32_t addr, unsigned id, unsigned len, const std::vector<HbmBurst>& data = {}) {
    if (!write) {
      queue({false, addr, id, {}, 0, 0, len, 0});
      return;
    }
    if (data.size() != len + 1) throw std::invalid_argument("queue_bursts: a write needs len + 1 bursts of data");
    for (unsigned k = 0; k <= len; ++k) queue({true, addr, id, data[k], ~0u, 0, len, k});
  }

  // A source of requests taken as they are needed (a trace streamed from disk): it fills r and
  // returns true, or returns false at the end. run() keeps at most kFeedAhead of them queued.
  using Feeder = std::function<bool(HbmRequest&)>;
  static constexpr size_t kFeedAhead = 64;
  void feed(Feeder f) { feed_ = std::move(f); }

  // Run until every queued request (and every one the feeder gives) has its response; limit 0:
  // no cycle limit (the stall check still stops a controller that does not move). Throws
  // HbmViolation on a timing violation and std::runtime_error when the controller stops moving.
  void run(double req_gap = 0, double rsp_stall = 0, uint64_t limit = 5'000'000) {
    std::bernoulli_distribution gap(req_gap), stall(rsp_stall);
    uint64_t quiet = 0;
    const uint64_t end = limit ? cycle_ + limit : UINT64_MAX;
    auto refill = [&] {
      while (feed_ && reqs_.size() < kFeedAhead) {
        HbmRequest r;
        if (!feed_(r)) {
          feed_ = nullptr;
          break;
        }
        queue(r);
      }
    };
    refill();
    while (!reqs_.empty() || holding_ || outstanding_ > 0) {
      refill();
      if (++cycle_ > end) throw std::runtime_error(fmt::format("HBM: not finished after {} cycles", limit));
      if (!holding_ && !reqs_.empty() && reqs_.front().not_before <= cycle_ && !(req_gap > 0 && gap(rng_))) {
        present(reqs_.front());
        holding_ = true;
      }
      dut_->rsp_ready_i = !(rsp_stall > 0 && stall(rng_));
      dram_.drive(*dut_, cycle_);
      dut_->clk_i = 0;
      dut_->eval();
      dram_.sample(*dut_, cycle_);
      if constexpr (!kMulti)
        if (on_command_ && dut_->cmd_valid_o)
          on_command_({cycle_, dut_->cmd_o, dut_->cmd_bank_o, holding_ && !dut_->req_ready_o});
      // Progress is a request accepted or answered (DRAM commands alone, e.g. refreshes, are not).
      bool moved = false;
      if (holding_ && dut_->req_ready_o) {
        accept(reqs_.front());
        reqs_.pop_front();
        holding_ = false;
        moved = true;
      }
      if (dut_->rsp_valid_o && dut_->rsp_ready_i) {
        respond();
        moved = true;
      }
      dut_->clk_i = 1;
      dut_->eval();
      if (!holding_) dut_->req_valid_i = 0;
      if (moved || (outstanding_ == 0 && !holding_))
        quiet = 0;
      else if (++quiet > 20000)
        throw std::runtime_error(
            fmt::format("HBM controller stuck at cycle {} ({} requests outstanding)", cycle_, outstanding_));
    }
  }

  // A command the controller issues (cmd: tp_hbm_ctrl's cmd_o encoding), and whether a request
  // was waiting for room in its queue in that cycle (the queue full). The single controller only
  // (tp_hbm_ctrl).
  struct Command {
    uint64_t cycle;
    unsigned cmd, bank;
    bool queue_full;
  };
  void on_command(std::function<void(const Command&)> f) {
    static_assert(!kMulti, "on_command: the single controller only");
    on_command_ = std::move(f);
  }

  // Scoreboard results.
  uint64_t reads_checked() const { return reads_checked_; }
  uint64_t mismatches() const { return mismatches_; }
  uint64_t fatal() const { return fatal_; }
  const std::vector<std::string>& errors() const { return errors_; }
  const std::vector<uint64_t>& read_latencies() const { return latencies_; }  // accept -> response
  const std::vector<uint64_t>& write_latencies() const { return write_latencies_; }

 private:
  struct Expect {
    bool write;
    HbmBurst data;
    uint64_t accepted;
  };

  void clock() {
    dut_->clk_i = 0;
    dut_->eval();
    dut_->clk_i = 1;
    dut_->eval();
  }

  void present(const HbmRequest& r) {
    dut_->req_write_i = r.write;
    dut_->req_addr_i = r.addr;
    if constexpr (kMulti) dut_->req_len_i = static_cast<uint8_t>(r.len);
    dut_->req_id_i = static_cast<uint8_t>(r.id);
    for (unsigned w = 0; w < 8; ++w) {
      uint32_t v = 0;
      for (unsigned k = 0; k < 4; ++k) v |= uint32_t{r.data.b[w * 4 + k]} << (8 * k);
      dut_->req_wdata_i[w] = v;
    }
    dut_->req_wmask_i = r.mask;
    dut_->req_valid_i = 1;
  }

  void accept(const HbmRequest& r) {
    if (r.write) {  // one burst: r.addr + r.beat
      auto& m = shadow_[r.addr + r.beat];
      for (unsigned w = 0; w < 4; ++w)
        if ((r.mask >> (w * 8)) & 0xffu)
          for (unsigned k = 0; k < 8; ++k) m.b[w * 8 + k] = r.data.b[w * 8 + k];
      per_id_[r.id].push_back({true, {}, cycle_});
      ++outstanding_;
      return;
    }
    for (unsigned k = 0; k <= r.len; ++k) {  // every burst of the read, in order
      Expect e{false, {}, cycle_};
      if (auto it = shadow_.find(r.addr + k); it != shadow_.end()) e.data = it->second;
      per_id_[r.id].push_back(e);
      ++outstanding_;
    }
  }

  void error(std::string msg) {
    if (errors_.size() < 10) errors_.push_back(fmt::format("cycle {}: {} (seed {})", cycle_, std::move(msg), seed_));
  }

  void respond() {
    const unsigned id = dut_->rsp_id_o;
    auto& q = per_id_[id];
    if (q.empty()) {
      error(fmt::format("response for id {} with nothing outstanding", id));
      return;
    }
    const Expect e = q.front();
    q.pop_front();
    --outstanding_;
    if (static_cast<bool>(dut_->rsp_write_o) != e.write) {
      error(fmt::format("id {}: a {} response where a {} was due (out of order)", id,
                        dut_->rsp_write_o ? "write" : "read", e.write ? "write" : "read"));
      return;
    }
    if (e.write) {
      write_latencies_.push_back(cycle_ - e.accepted);
      return;
    }
    ++reads_checked_;
    latencies_.push_back(cycle_ - e.accepted);
    if (dut_->rsp_err_o) {
      ++fatal_;
      return;
    }
    for (unsigned i = 0; i < 32; ++i) {
      const auto got = static_cast<uint8_t>(dut_->rsp_rdata_o[i / 4] >> (8 * (i % 4)));
      if (got != e.data.b[i]) {
        ++mismatches_;
        error(fmt::format("read for id {}: byte {} = {:#04x}, expected {:#04x}", id, i, got, e.data.b[i]));
        break;
      }
    }
  }

  HbmConfig cfg_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  unsigned nc_;
  HbmDram<Top> dram_;
  VerilatedContext ctx_;
  std::unique_ptr<Top> dut_;
  uint64_t cycle_ = 0, outstanding_ = 0, reads_checked_ = 0, mismatches_ = 0, fatal_ = 0;
  bool holding_ = false;
  std::deque<HbmRequest> reqs_;
  std::map<uint32_t, HbmBurst> shadow_;
  std::map<unsigned, std::deque<Expect>> per_id_;
  std::vector<std::string> errors_;
  std::vector<uint64_t> latencies_, write_latencies_;
  std::function<void(const Command&)> on_command_;
  std::FILE* cmdlog_ = nullptr;
  Feeder feed_;
};

}  // namespace tp::tb
