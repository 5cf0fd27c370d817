// Cycle-level driver for the Verilated MXU (tp_mxu, or tp_mxu_array alone).
//
// Transactions are queued (weight tiles, activation rows, accumulator reads) and driven with
// seeded random valid gaps and ready stalls; valid and payload are held until the handshake.
// Results are collected at handshakes, so the scoreboard does not care about pipeline timing.
// A watchdog throws when nothing moves for too long, so a hung DUT fails instead of hanging.
#pragma once

#include <fmt/format.h>
#include <verilated.h>
#include <verilated_fst_c.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "coverage.h"
#include "tb_util.h"

namespace tp::tb {

struct MxuStimulus {
  double w_gap = 0.0;      // probability of offering no weight row in a cycle
  double a_gap = 0.0;      // probability of offering no activation row in a cycle
  double out_stall = 0.0;  // probability of a result (array) or response (acc read) stall
  uint64_t seed = 1;
  std::string wave_file;  // FST output, empty for none
};

struct MxuCounters {
  uint64_t rows = 0, macs = 0, busy = 0, stall_out = 0, stall_wgt = 0, wrows = 0;
};

struct ArrayResult {
  uint32_t tag = 0;
  std::vector<uint32_t> data;
};

template <class Top>
class MxuHarness {
 public:
  static constexpr bool kHasAcc = requires(Top t) { t.rsp_valid_o; };

  // n (and, for tp_mxu, acc_rows unless 0) must be what the model was built with.
  MxuHarness(unsigned n, MxuStimulus stim, unsigned acc_rows = 0)
      : n_(n), stim_(std::move(stim)), rng_(stim_.seed), ctx_(std::make_unique<VerilatedContext>()) {
    ctx_->randReset(kRandReset);  // registers without reset start random, from the test's seed (coverage: 0)
    // (Verilator takes seed 0 to mean "a new random seed every run": avoid it.)
    ctx_->randSeed(static_cast<int>(stim_.seed % 0x7fffffff) + 1);
    ctx_->traceEverOn(!stim_.wave_file.empty());
    top_ = std::make_unique<Top>(ctx_.get(), "top");
    if (!stim_.wave_file.empty()) {
      trace_ = std::make_unique<VerilatedFstC>();
      top_->trace(trace_.get(), 99);
      trace_->open(stim_.wave_file.c_str());
    }
    top_->clk_i = 0;
    top_->rst_ni = 0;
    top_->w_valid_i = 0;
    top_->w_t_i = 0;
    top_->a_valid_i = 0;
    if constexpr (kHasAcc) {
      top_->rd_valid_i = 0;
      top_->rsp_ready_i = 0;
    } else {
      top_->r_ready_i = 0;
    }
    for (int i = 0; i < 4; ++i) tick();
    top_->rst_ni = 1;
    tick();
    cycles_ = 0;
    if (top_->cfg_n_o != n)
      throw std::runtime_error(fmt::format(
          "MxuHarness: the Verilated model has N = {} but the preset says {} (rebuild after editing the preset)",
          top_->cfg_n_o, n));
    if constexpr (kHasAcc) {
      if (acc_rows != 0 && top_->cfg_acc_rows_o != acc_rows)
        throw std::runtime_error(
            fmt::format("MxuHarness: the Verilated model has {} accumulator rows but the preset says {} (rebuild after "
                        "editing the preset)",
                        top_->cfg_acc_rows_o, acc_rows));
    }
  }

  ~MxuHarness() {
    if (trace_) trace_->close();
    top_->final();
    write_coverage(*ctx_);
  }
  MxuHarness(const MxuHarness&) = delete;
  MxuHarness& operator=(const MxuHarness&) = delete;

  Top& top() { return *top_; }
  unsigned n() const { return n_; }
  uint64_t cycles() const { return cycles_; }

  // Queue an n x n weight tile (row-major) for the shadow buffer. transposed: present it as a
  // transposed load (w_t_i, row r of the stimulus is column r of the tile), so the MXU must hold
  // the same tile.
  void queue_weights(std::span<const uint16_t> tile, bool transposed = false) {
    if (tile.size() != std::size_t{n_} * n_) throw std::invalid_argument("queue_weights: tile must be n*n");
    for (unsigned i = 0; i < n_; ++i) {
      std::vector<uint16_t> row(n_);
      for (unsigned j = 0; j < n_; ++j)
        row[j] = transposed ? tile[std::size_t{j} * n_ + i] : tile[std::size_t{i} * n_ + j];
      wq_.push_back({std::move(row), transposed});
    }
  }

  // Queue one activation row. tag = accumulator address | accumulate << 16 on tp_mxu.
  void queue_row(std::span<const uint16_t> a, bool first, uint32_t tag) {
    if (a.size() != n_) throw std::invalid_argument("queue_row: row must have n values");
    aq_.push_back(Row{std::vector<uint16_t>(a.begin(), a.end()), first, tag});
  }
  void queue_row(std::span<const uint16_t> a, bool first, unsigned acc_addr, bool accumulate) {
    queue_row(a, first, (acc_addr & 0xffffu) | (accumulate ? 0x10000u : 0u));
  }

  // Queue an accumulator read (tp_mxu only); responses land in responses().
  void queue_read(unsigned addr) { rq_.push_back(addr); }

  std::vector<ArrayResult>& results() { return results_; }
  std::vector<std::vector<uint32_t>>& responses() { return responses_; }

  bool drained() const {
    bool quiet = wq_.empty() && aq_.empty() && rq_.empty() && !w_hold_ && !a_hold_ && !r_hold_ && top_->idle_o;
    if constexpr (kHasAcc) quiet = quiet && !top_->rsp_valid_o;
    return quiet;
  }

  // Run until every queue is empty and the DUT is idle. Throws on a stall longer than `patience`.
  void run(uint64_t patience = 0) {
    if (patience == 0) patience = 20ull * n_ + 1000;
    uint64_t quiet = 0;
    while (!drained()) {
      if (step())
        quiet = 0;
      else if (++quiet > patience)
        throw std::runtime_error(
            fmt::format("MXU watchdog: no handshake for {} cycles at cycle {} ({} weight rows, {} activation rows, "
                        "{} reads still queued)",
                        patience, cycles_, wq_.size(), aq_.size(), rq_.size()));
    }
  }

  // Read `count` accumulator rows from `addr` (tp_mxu only), after the array has drained.
  std::vector<std::vector<uint32_t>> read_rows(unsigned addr, unsigned count) {
    run();
    const uint64_t start = cycles_;
    responses_.clear();
    for (unsigned r = 0; r < count; ++r) queue_read(addr + r);
    run();
    read_cycles_ += cycles_ - start;
    return std::move(responses_);
  }

  // Cycles spent in read_rows() after the array had drained (the host reading results back).
  uint64_t read_cycles() const { return read_cycles_; }

  MxuCounters counters() const {
    return {top_->cnt_rows_o,      top_->cnt_macs_o,      top_->cnt_busy_o,
            top_->cnt_stall_out_o, top_->cnt_stall_wgt_o, top_->cnt_wrows_o};
  }

  // One clock cycle. Returns whether any handshake happened.
  bool step() {
    bool moved = false;
    std::bernoulli_distribution w_gap(stim_.w_gap), a_gap(stim_.a_gap), stall(stim_.out_stall);
    // Present new transfers (valid and payload stay put until accepted).
    if (!w_hold_ && !wq_.empty() && !(stim_.w_gap > 0 && w_gap(rng_))) {
      for (unsigned j = 0; j < n_; ++j) set_lane<16>(top_->w_data_i, j, wq_.front().data[j]);
      top_->w_t_i = wq_.front().t ? 1 : 0;
      top_->w_valid_i = 1;
      w_hold_ = true;
    }
    if (!a_hold_ && !aq_.empty() && !(stim_.a_gap > 0 && a_gap(rng_))) {
      const Row& r = aq_.front();
      for (unsigned j = 0; j < n_; ++j) set_lane<16>(top_->a_data_i, j, r.a[j]);
      top_->a_first_i = r.first ? 1 : 0;
      if constexpr (kHasAcc) {
        top_->a_acc_addr_i = static_cast<uint16_t>(r.tag & 0xffffu);
        top_->a_accumulate_i = static_cast<uint8_t>((r.tag >> 16) & 1u);
      } else {
        top_->a_tag_i = r.tag;
      }
      top_->a_valid_i = 1;
      a_hold_ = true;
    }
    const bool out_ready = !(stim_.out_stall > 0 && stall(rng_));
    if constexpr (kHasAcc) {
      if (!r_hold_ && !rq_.empty()) {
        top_->rd_addr_i = static_cast<uint16_t>(rq_.front());
        top_->rd_valid_i = 1;
        r_hold_ = true;
      }
      top_->rsp_ready_i = out_ready;
    } else {
      top_->r_ready_i = out_ready;
    }
    // Sample handshakes before the edge.
    top_->clk_i = 0;
    top_->eval();
    const bool w_fire = top_->w_valid_i && top_->w_ready_o;
    const bool a_fire = top_->a_valid_i && top_->a_ready_o;
    if constexpr (kHasAcc) {
      const bool rd_fire = top_->rd_valid_i && top_->rd_ready_o;
      const bool rsp_fire = top_->rsp_valid_o && top_->rsp_ready_i;
      if (rsp_fire) {
        std::vector<uint32_t> row(n_);
        for (unsigned j = 0; j < n_; ++j) row[j] = get_lane<32>(top_->rsp_data_o, j);
        responses_.push_back(std::move(row));
      }
      if (rd_fire) {
        rq_.pop_front();
        r_hold_ = false;
      }
      moved = rd_fire || rsp_fire;
    } else {
      if (top_->r_valid_o && top_->r_ready_i) {
        ArrayResult res{static_cast<uint32_t>(top_->r_tag_o), std::vector<uint32_t>(n_)};
        for (unsigned j = 0; j < n_; ++j) res.data[j] = get_lane<32>(top_->r_data_o, j);
        results_.push_back(std::move(res));
        moved = true;
      }
    }
    tick();
    if (w_fire) {
      wq_.pop_front();
      w_hold_ = false;
      top_->w_valid_i = 0;
    }
    if (a_fire) {
      aq_.pop_front();
      a_hold_ = false;
      top_->a_valid_i = 0;
    }
    if constexpr (kHasAcc) {
      if (!r_hold_) top_->rd_valid_i = 0;
    }
    return moved || w_fire || a_fire;
  }

 private:
  struct Row {
    std::vector<uint16_t> a;
    bool first;
    uint32_t tag;
  };

  void tick() {
    top_->clk_i = 0;
    top_->eval();
    if (trace_) trace_->dump(ctx_->time());
    ctx_->timeInc(1);
    top_->clk_i = 1;
    top_->eval();
    if (trace_) trace_->dump(ctx_->time());
    ctx_->timeInc(1);
    ++cycles_;
  }

  unsigned n_;
  MxuStimulus stim_;
  std::mt19937_64 rng_;
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Top> top_;
  std::unique_ptr<VerilatedFstC> trace_;
  struct WRow {
    std::vector<uint16_t> data;
    bool t;
  };
  std::deque<WRow> wq_;
  std::deque<Row> aq_;
  std::deque<unsigned> rq_;
  bool w_hold_ = false, a_hold_ = false, r_hold_ = false;
  std::vector<ArrayResult> results_;
  std::vector<std::vector<uint32_t>> responses_;
  uint64_t cycles_ = 0;
  uint64_t read_cycles_ = 0;
};

}  // namespace tp::tb
