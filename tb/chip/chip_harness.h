// Cycle-level host and memory for the Verilated chip (docs/chip.md).
//
// The host side drives the control and status registers: program load through IMEM_DATA, start,
// status, counters. The memory side depends on the top:
// - tp_chip (chip.memory "model"): a simple in-order memory model behind the chip's memory port:
//   one request per cycle, reads answered after `latency` cycles, writes acknowledged the same
//   way, optional seeded random stalls on both handshakes, and per-beat error injection. It
//   stores beats sparsely, so a preset with gigabytes of HBM allocates only what is written.
// - tp_chip_hbm (chip.memory "hbm"): the chip's HBM subsystem drives one golden HBM device model
//   per pseudo-channel, which checks every DRAM command's timing (a violation throws). The
//   host's backdoor writes and reads the devices' storage through the subsystem's address map,
//   with the SECDED check bits the controller would write.
#pragma once

#include <fmt/format.h>
#include <verilated.h>
#include <verilated_fst_c.h>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "config.h"
#include "hbm_dram.h"
#include "isa.h"
#include "secded.h"
#include "tb_util.h"

namespace tp::tb {

struct ChipStimulus {
  unsigned latency = 20;   // read latency of the memory model (cycles)
  double req_stall = 0.0;  // probability that the memory refuses a request in a cycle
  double rsp_stall = 0.0;  // probability that the memory holds back a ready response
  uint64_t seed = 1;
  std::string wave_file;  // FST output, empty for none
};

// Counter indices (docs/chip.md, "Host interface").
namespace ctr {
inline constexpr unsigned kCycles = 0, kUnitBase = 1, kBytesLoaded = 17, kBytesStored = 18, kMxuRows = 19,
                          kMxuBusy = 20, kInstrs = 21, kVpuRows = 22, kVmemConflicts = 23, kMxuMacs = 24, kCount = 25;
inline constexpr const char* kUnits[4] = {"load", "mxu", "vec", "store"};
inline constexpr const char* kKinds[4] = {"busy", "wait", "stall", "idle"};
}  // namespace ctr

struct ChipRun {
  bool done = false, timed_out = false;
  uint8_t err = 0;
  uint32_t pc = 0;
  uint64_t cycles = 0;  // harness cycles from start to done
};

template <class Top>
class ChipHarness {
 public:
  static constexpr bool kHbm = requires(Top t) { t.cmd_valid_o[0]; };

  ChipHarness(const Preset& p, ChipStimulus stim)
      : lanes_(p.mxu.n),
        hbm_(p.hbm),
        stim_(std::move(stim)),
        rng_(stim_.seed),
        ctx_(std::make_unique<VerilatedContext>()) {
    if (!kHbm && p.chip.memory != "model")
      throw std::runtime_error(
          fmt::format("ChipHarness: the Verilated chip has no HBM but preset '{}' says memory "
                      "\"{}\" (rebuild after editing the preset)",
                      p.name, p.chip.memory));
    if constexpr (kHbm) {
      if (p.chip.memory != "hbm")
        throw std::runtime_error(
            fmt::format("ChipHarness: the Verilated chip has HBM but preset '{}' says memory "
                        "\"{}\" (rebuild after editing the preset)",
                        p.name, p.chip.memory));
      dram_ = std::make_unique<HbmDram<Top>>(p.hbm, p.hbm.channels * p.hbm.pseudo_channels);
      // TP_HBM_CMDLOG=<file>: every DRAM command (cycle, pseudo-channel, command, bank, row, column).
      if (const char* log = std::getenv("TP_HBM_CMDLOG"); log && *log) {
        cmdlog_ = std::fopen(log, "w");
        dram_->log_to(cmdlog_);
      }
    }
    ctx_->randReset(2);
    ctx_->randSeed(static_cast<int>(stim_.seed % 0x7fffffff) + 1);
    ctx_->traceEverOn(!stim_.wave_file.empty());
    top_ = std::make_unique<Top>(ctx_.get(), "top");
    if (!stim_.wave_file.empty()) {
      trace_ = std::make_unique<VerilatedFstC>();
      top_->trace(trace_.get(), 99);
      trace_->open(stim_.wave_file.c_str());
    }
    reset();
    const uint32_t info = csr_read(0x028);
    const unsigned lanes = lanes_;
    if ((info & 0xffffu) != lanes)
      throw std::runtime_error(fmt::format(
          "ChipHarness: the Verilated chip has n = {} but the preset says {} (rebuild after editing the preset)",
          info & 0xffffu, lanes));
    if (((info >> 16) & 0xffu) != isa::kIsaVersion)
      throw std::runtime_error(fmt::format("ChipHarness: the Verilated chip implements ISA version {}, the software {}",
                                           (info >> 16) & 0xffu, isa::kIsaVersion));
  }
  ~ChipHarness() {
    if (cmdlog_) std::fclose(cmdlog_);
    if (trace_) trace_->close();
    top_->final();
  }
  ChipHarness(const ChipHarness&) = delete;
  ChipHarness& operator=(const ChipHarness&) = delete;

  Top& top() { return *top_; }
  unsigned lanes() const { return lanes_; }
  uint64_t cycles() const { return cycles_; }

  // Reset the chip (not the memory's contents): every run starts from reset. An HBM subsystem
  // is reset only once, when the harness starts (DRAM keeps its rows open and its refresh
  // schedule); before a later chip reset, the memory requests in flight drain.
  void reset() {
    if (wedged_)
      throw std::runtime_error("ChipHarness: the chip timed out on HBM with memory traffic in flight; open a new chip");
    if constexpr (kHbm) {
      if (started_) drain_memory();
      top_->hbm_rst_ni = started_ ? 1 : 0;
    } else {
      top_->mem_req_ready_i = 0;
      top_->mem_rsp_valid_i = 0;
      pending_.clear();
    }
    top_->rst_ni = 0;
    top_->csr_valid_i = 0;
    top_->csr_write_i = 0;
    for (int i = 0; i < 3; ++i) tick();
    top_->rst_ni = 1;
    if constexpr (kHbm) top_->hbm_rst_ni = 1;
    tick();
    started_ = true;
  }

  // ---- memory (the host's backdoor: copy in and out) ----
  void write_mem(uint64_t beat, std::span<const uint32_t> words) {
    if (words.size() % lanes_ != 0)
      throw std::invalid_argument(
          fmt::format("write_mem: {} words is not a whole number of {}-lane beats", words.size(), lanes_));
    if constexpr (kHbm) {
      for (std::size_t b = 0; b < words.size() / lanes_; ++b)
        write_beat_hbm(beat + b, words.subspan(b * lanes_, lanes_));
    } else {
      for (std::size_t k = 0; k < words.size(); ++k)
        word(beat + k / lanes_, static_cast<unsigned>(k % lanes_)) = words[k];
    }
  }
  std::vector<uint32_t> read_mem(uint64_t beat, uint64_t beats) const {
    std::vector<uint32_t> out(beats * lanes_, 0);
    for (uint64_t b = 0; b < beats; ++b) {
      if constexpr (kHbm) {
        read_beat_hbm(beat + b, std::span<uint32_t>(out).subspan(b * lanes_, lanes_));
      } else if (auto it = pages_.find((beat + b) / kPage); it != pages_.end()) {
        for (unsigned j = 0; j < lanes_; ++j) out[b * lanes_ + j] = it->second[((beat + b) % kPage) * lanes_ + j];
      }
    }
    return out;
  }
  // Reads of this beat answer with an uncorrectable error: the memory model flags it; on HBM two
  // stored bits of its first codeword flip (a later write of the beat would repair it; unwritten
  // memory is an all-zero codeword, so flipping it works too).
  void fail_beat(uint64_t beat) {
    if constexpr (kHbm) {
      const auto a = hbm_place(beat * bursts_per_beat());
      dram_->device(a.pc).flip_stored_bit(a.bank, a.row, a.col, 3);
      dram_->device(a.pc).flip_stored_bit(a.bank, a.row, a.col, 40);
    } else {
      failing_.insert(beat);
    }
  }

  // HBM counters, summed over the pseudo-channels (empty for the memory model).
  std::map<std::string, uint64_t> hbm_counters() const {
    std::map<std::string, uint64_t> m;
    if constexpr (kHbm) {
      const unsigned nc = dram_->channels();
      auto sum = [&](const auto& port) {
        uint64_t t = 0;
        for (unsigned c = 0; c < nc; ++c) t += port[c];
        return t;
      };
      m["hbm_reads"] = sum(top_->cnt_reads_o);
      m["hbm_writes"] = sum(top_->cnt_writes_o);
      m["hbm_row_hits"] = sum(top_->cnt_hits_o);
      m["hbm_row_misses"] = sum(top_->cnt_misses_o);
      m["hbm_row_conflicts"] = sum(top_->cnt_conflicts_o);
      m["hbm_refreshes"] = sum(top_->cnt_refreshes_o);
      m["hbm_bus_busy"] = sum(top_->cnt_bus_busy_o);
      m["hbm_ecc_corrected"] = sum(top_->cnt_ecc_corrected_o);
      m["hbm_ecc_fatal"] = sum(top_->cnt_ecc_fatal_o);
      m["hbm_read_latency_sum"] = sum(top_->cnt_rd_latency_sum_o);
      uint64_t mx = 0;
      for (unsigned c = 0; c < nc; ++c) mx = std::max<uint64_t>(mx, top_->cnt_rd_latency_max_o[c]);
      m["hbm_read_latency_max"] = mx;
      m["hbm_pseudo_channels"] = nc;
    }
    return m;
  }

  // ---- host registers ----
  void csr_write(uint32_t addr, uint32_t data) {
    top_->csr_valid_i = 1;
    top_->csr_write_i = 1;
    top_->csr_addr_i = static_cast<uint16_t>(addr);
    top_->csr_wdata_i = data;
    tick();
    top_->csr_valid_i = 0;
    top_->csr_write_i = 0;
  }
  uint32_t csr_read(uint32_t addr) {
    top_->csr_addr_i = static_cast<uint16_t>(addr);
    top_->eval();
    return top_->csr_rdata_o;
  }
  uint64_t counter(unsigned k) {
    const uint32_t lo = csr_read(0x100 + 8 * k), hi = csr_read(0x104 + 8 * k);
    return (uint64_t{hi} << 32) | lo;
  }

  // The host's beat access through the chip's memory port (HOST_ADDR 0x030, HOST_CMD 0x034,
  // HOST_STATUS 0x038, data window 0x800): one beat per command, the slow path next to the
  // backdoor. Returns false when the chip refused the address (HOST_STATUS error bit).
  bool host_write_beat(uint64_t beat, std::span<const uint32_t> lanes) {
    csr_write(0x030, static_cast<uint32_t>(beat));
    for (unsigned j = 0; j < lanes_; ++j) csr_write(0x800 + 4 * j, lanes[j]);
    csr_write(0x034, 2);
    const bool ok = host_wait();
    if constexpr (kHbm) drain_memory();  // posted: let it reach the DRAM
    return ok;
  }
  std::optional<std::vector<uint32_t>> host_read_beat(uint64_t beat) {
    csr_write(0x030, static_cast<uint32_t>(beat));
    csr_write(0x034, 1);
    if (!host_wait()) return std::nullopt;
    std::vector<uint32_t> out(lanes_);
    for (unsigned j = 0; j < lanes_; ++j) out[j] = csr_read(0x800 + 4 * j);
    return out;
  }

  void load(const std::vector<isa::Word>& code) {
    csr_write(0x014, 0);
    for (const auto& w : code) {
      csr_write(0x018, static_cast<uint32_t>(w[0]));
      csr_write(0x01c, static_cast<uint32_t>(w[0] >> 32));
      csr_write(0x020, static_cast<uint32_t>(w[1]));
      csr_write(0x024, static_cast<uint32_t>(w[1] >> 32));
    }
    csr_write(0x010, static_cast<uint32_t>(code.size()));
  }

  // Start and run until done or `timeout` cycles (a watchdog: never hangs).
  ChipRun run(uint64_t timeout) {
    csr_write(0x000, 1);
    ChipRun r;
    const uint64_t t0 = cycles_;
    while (cycles_ - t0 < timeout) {
      tick();
      if (top_->done_o) {
        r.done = true;
        break;
      }
    }
    r.timed_out = !r.done;
    r.cycles = cycles_ - t0;
    if constexpr (kHbm) {
      if (r.timed_out) {
        // The chip still runs and its memory traffic cannot be drained; the HBM cannot be reset
        // under open rows either: this harness is done (reset() says so).
        wedged_ = true;
      } else {
        // Writes are posted: let them reach the DRAM before the host reads the memory back.
        drain_memory();
        dram_->check_refresh(cycles_);
      }
    }
    const uint32_t status = csr_read(0x004);
    if (status & 4u) {
      r.err = static_cast<uint8_t>(csr_read(0x008));
      r.pc = csr_read(0x00c);
    }
    return r;
  }

  // One clock cycle: the memory model answers, the chip's combinational outputs settle, the
  // handshakes are taken, then the rising edge.
  void tick() {
    drive_memory();
    top_->clk_i = 0;
    top_->eval();
    if (trace_) trace_->dump(ctx_->time());
    ctx_->timeInc(1);
    sample_memory();
    top_->clk_i = 1;
    top_->eval();
    if (trace_) trace_->dump(ctx_->time());
    ctx_->timeInc(1);
    ++cycles_;
  }

 private:
  static constexpr uint64_t kPage = 64;  // beats per storage page
  static constexpr std::size_t kMaxPending = 256;

  struct Pending {
    uint64_t ready_at;
    bool write;
    uint8_t id;
    bool err;
    std::vector<uint32_t> data;
  };

  uint32_t& word(uint64_t beat, unsigned lane) {
    auto& page = pages_[beat / kPage];
    if (page.empty()) page.assign(kPage * lanes_, 0);
    return page[(beat % kPage) * lanes_ + lane];
  }

  bool chance(double p) { return p > 0.0 && std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < p; }

  bool host_wait() {
    for (uint64_t t = 0; csr_read(0x038) & 1u; ++t) {
      if (t > 100'000) throw std::runtime_error("ChipHarness: the host's memory access did not finish");
      tick();
    }
    return (csr_read(0x038) & 2u) == 0;
  }

  void drain_memory() {
    for (uint64_t t = 0; !top_->mem_idle_o; ++t) {
      if (t > 1'000'000) throw std::runtime_error("ChipHarness: memory requests still in flight after 1M cycles");
      tick();
    }
  }

  // Nothing crosses the memory interface in reset (flops without a clock edge yet may hold
  // random values there).
  void drive_memory() {
    if constexpr (kHbm) {
      if (top_->hbm_rst_ni == 0) return;
      dram_->drive(*top_, cycles_);
    } else {
      drive_model();
    }
  }
  void drive_model() {
    if (top_->rst_ni == 0) return;
    top_->mem_req_ready_i = pending_.size() < kMaxPending && !chance(stim_.req_stall);
    const bool have = !pending_.empty() && pending_.front().ready_at <= cycles_ && !chance(stim_.rsp_stall);
    top_->mem_rsp_valid_i = have;
    if (have) {
      const Pending& p = pending_.front();
      top_->mem_rsp_write_i = p.write;
      top_->mem_rsp_id_i = p.id;
      top_->mem_rsp_err_i = p.err;
      for (unsigned j = 0; j < lanes_; ++j) set_lane<32>(top_->mem_rsp_rdata_i, j, p.write ? 0u : p.data[j]);
    }
  }

  void sample_memory() {
    if constexpr (kHbm) {
      if (top_->hbm_rst_ni == 0) return;
      dram_->sample(*top_, cycles_);
    } else {
      sample_model();
    }
  }
  void sample_model() {
    if (top_->rst_ni == 0) return;
    if (top_->mem_rsp_valid_i && top_->mem_rsp_ready_o) pending_.pop_front();
    if (top_->mem_req_valid_o && top_->mem_req_ready_i) {
      const uint64_t beat = top_->mem_req_addr_o;
      Pending p{cycles_ + stim_.latency,
                static_cast<bool>(top_->mem_req_write_o),
                static_cast<uint8_t>(top_->mem_req_id_o),
                false,
                {}};
      if (p.write) {
        for (unsigned j = 0; j < lanes_; ++j) word(beat, j) = get_lane<32>(top_->mem_req_wdata_o, j);
      } else {
        p.data = read_mem(beat, 1);
        p.err = failing_.count(beat) != 0;
      }
      pending_.push_back(std::move(p));
    }
  }

  // ---- HBM backdoor: a beat is lanes/8 bursts; the address map of rtl/chip/tp_mem_hbm.sv ----
  struct Place {
    unsigned pc, bank, row, col;
  };
  unsigned bursts_per_beat() const { return lanes_ / 8; }
  Place hbm_place(uint64_t burst) const {
    const unsigned nc = hbm_.channels * hbm_.pseudo_channels, cb = std::bit_width(nc - 1);
    const unsigned nb = hbm_.bank_groups * hbm_.banks_per_group, bw = std::bit_width(nb - 1);
    const unsigned cw = std::bit_width(hbm_.columns - 1);
    Place p{};
    uint64_t laddr = burst;
    if (nc > 1) {  // 8-burst blocks; pseudo-channel = the block number's CB-bit groups XORed
      const uint64_t blk = burst >> 3;
      for (unsigned k = 0; k < 64; k += cb) p.pc ^= static_cast<unsigned>((blk >> k) & (nc - 1));
      laddr = ((blk >> cb) << 3) | (burst & 7);
    }
    if (hbm_.bank_interleave) {
      p.bank = static_cast<unsigned>(laddr & (nb - 1));
      p.col = static_cast<unsigned>((laddr >> bw) & (hbm_.columns - 1));
    } else {
      p.col = static_cast<unsigned>(laddr & (hbm_.columns - 1));
      p.bank = static_cast<unsigned>((laddr >> cw) & (nb - 1));
    }
    p.row = static_cast<unsigned>(laddr >> (bw + cw));
    return p;
  }
  void write_beat_hbm(uint64_t beat, std::span<const uint32_t> lanes) {
    for (unsigned k = 0; k < bursts_per_beat(); ++k) {
      std::vector<uint8_t> stored(36, 0);
      for (unsigned w = 0; w < 4; ++w) {
        const uint64_t data = uint64_t{lanes[8 * k + 2 * w]} | (uint64_t{lanes[8 * k + 2 * w + 1]} << 32);
        const auto cw = golden::secded_encode(data);
        for (unsigned i = 0; i < 72; ++i)
          if (cw[i]) stored[(w * 72 + i) / 8] |= static_cast<uint8_t>(1u << ((w * 72 + i) % 8));
      }
      const auto a = hbm_place(beat * bursts_per_beat() + k);
      dram_->device(a.pc).poke(a.bank, a.row, a.col, stored);
    }
  }
  void read_beat_hbm(uint64_t beat, std::span<uint32_t> lanes) const {
    for (unsigned k = 0; k < bursts_per_beat(); ++k) {
      const auto a = hbm_place(beat * bursts_per_beat() + k);
      const auto stored = dram_->device(a.pc).peek(a.bank, a.row, a.col);
      for (unsigned w = 0; w < 4; ++w) {
        golden::Codeword cw;
        for (unsigned i = 0; i < 72; ++i) cw[i] = (stored[(w * 72 + i) / 8] >> ((w * 72 + i) % 8)) & 1u;
        const uint64_t data = golden::secded_decode(cw).data;
        lanes[8 * k + 2 * w] = static_cast<uint32_t>(data);
        lanes[8 * k + 2 * w + 1] = static_cast<uint32_t>(data >> 32);
      }
    }
  }

  unsigned lanes_;
  HbmConfig hbm_;
  std::unique_ptr<HbmDram<Top>> dram_;
  std::FILE* cmdlog_ = nullptr;
  bool started_ = false;
  bool wedged_ = false;
  ChipStimulus stim_;
  std::mt19937_64 rng_;
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Top> top_;
  std::unique_ptr<VerilatedFstC> trace_;
  uint64_t cycles_ = 0;
  std::unordered_map<uint64_t, std::vector<uint32_t>> pages_;
  std::set<uint64_t> failing_;
  std::deque<Pending> pending_;
};

}  // namespace tp::tb
