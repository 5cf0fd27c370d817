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
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "config.h"
#include "coverage.h"
#include "hbm_dram.h"
#include "interrupt.h"
#include "isa.h"
#include "progress.h"
#include "secded.h"
#include "sim_util.h"
#include "trace.h"

namespace tp::tb {

struct ChipStimulus {
  unsigned latency = 20;   // read latency of the memory model (cycles)
  double req_stall = 0.0;  // probability that the memory refuses a request in a cycle
  double rsp_stall = 0.0;  // probability that the memory holds back a ready response
  uint64_t seed = 1;
  std::string wave_file;  // FST output, empty for none
};

// Counter indices (generated from sw/isa/hw.json; docs/chip.md, "Host interface").
namespace ctr {
using isa::hw::Cnt;
constexpr unsigned idx(Cnt c) { return static_cast<unsigned>(c); }
inline constexpr unsigned kCycles = idx(Cnt::cycles), kUnitBase = idx(Cnt::load_busy),
                          kBytesLoaded = idx(Cnt::bytes_loaded), kBytesStored = idx(Cnt::bytes_stored),
                          kMxuRows = idx(Cnt::mxu_rows), kMxuBusy = idx(Cnt::mxu_array_busy),
                          kInstrs = idx(Cnt::instructions), kVpuRows = idx(Cnt::vec_rows),
                          kVmemConflicts = idx(Cnt::vmem_conflicts), kMxuMacs = idx(Cnt::mxu_macs),
                          kIciBase = idx(Cnt::ici_busy), kCount = isa::hw::kNumCounters;
// The units with a queue, in the ISA table's order; the ICI unit's counters follow the others'.
inline constexpr const char* kUnits[5] = {"load", "mxu", "vec", "store", "ici"};
inline constexpr const char* kKinds[4] = {"busy", "wait", "stall", "idle"};
constexpr unsigned unit_counter(unsigned unit, unsigned kind) {
  return unit < 4 ? kUnitBase + 4 * unit + kind : kIciBase + kind;
}
static_assert(isa::kQueues == 5 && idx(Cnt::store_idle) == kUnitBase + 15 && idx(Cnt::ici_idle) == kIciBase + 3);
}  // namespace ctr

// The ICI registers of a chip (CSR ICI_TORUS .. ICI_SLICE1): a standalone chip is a 1x1 torus.
struct IciRegs {
  unsigned kx = 1, ky = 1, x = 0, y = 0, x0 = 0, y0 = 0, w = 1, h = 1;
};

struct ChipRun {
  bool done = false, timed_out = false;
  uint8_t err = 0;
  uint32_t pc = 0;
  uint64_t cycles = 0;  // harness cycles from start to done
};

namespace csr = isa::hw;

template <class Top>
class ChipHarness {
 public:
  static constexpr bool kHbm = requires(Top t) { t.cmd_valid_o[0]; };
  using Link = std::decay_t<decltype(std::declval<Top&>().ici_tx_data_o[0])>;
  using Rev = std::decay_t<decltype(std::declval<Top&>().ici_rv_out_o[0])>;

  // external_links: the links are the caller's (a pod wires them, set_link_in before each tick);
  // otherwise the chip is a 1x1 torus whose every link comes back to itself (N to S, E to W)
  // after the preset's link latency.
  ChipHarness(const Preset& p, ChipStimulus stim, bool external_links = false)
      : lanes_(p.mxu.n),
        external_links_(external_links),
        link_latency_(p.ici.link_latency),
        hbm_(p.chip.hbm),
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
      dram_ = std::make_unique<HbmDram<Top>>(p.chip.hbm, p.chip.hbm.channels * p.chip.hbm.pseudo_channels);
      // TP_HBM_CMDLOG=<file>: every DRAM command (cycle, pseudo-channel, command, bank, row, column).
      // With several chips in one process (a pod), the n-th chip built (n > 0) writes <file>.<n>.
      if (const char* log = std::getenv("TP_HBM_CMDLOG"); log && *log) {
        static unsigned logs = 0;
        const unsigned n = logs++;
        cmdlog_ = std::fopen(n == 0 ? log : fmt::format("{}.{}", log, n).c_str(), "w");
        if (!cmdlog_) throw std::runtime_error(fmt::format("TP_HBM_CMDLOG: cannot write '{}'", log));
        dram_->log_to(cmdlog_);
      }
    }
    ctx_->randReset(kRandReset);
    ctx_->randSeed(static_cast<int>(stim_.seed % 0x7fffffff) + 1);
    ctx_->traceEverOn(!stim_.wave_file.empty());
    top_ = std::make_unique<Top>(ctx_.get(), "top");
    if (!stim_.wave_file.empty()) {
      trace_ = std::make_unique<VerilatedFstC>();
      top_->trace(trace_.get(), 99);
      trace_->open(stim_.wave_file.c_str());
    }
    reset();
    const uint32_t info = csr_read(csr::kCsrInfo);
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
    trace_.reset();
    end_model(*ctx_, top_);
  }
  ChipHarness(const ChipHarness&) = delete;
  ChipHarness& operator=(const ChipHarness&) = delete;

  Top& top() { return *top_; }
  unsigned lanes() const { return lanes_; }
  uint64_t cycles() const { return cycles_; }

  // Reset the chip (not the memory's contents): every run starts from reset. An HBM subsystem
  // is reset only once, when the harness starts (DRAM keeps its rows open and its refresh
  // schedule); before a later chip reset, the memory requests in flight drain. The ICI
  // registers are written again after the reset (they reset to a 1x1 torus).
  void reset() {
    begin_reset();
    for (int i = 0; i < 3; ++i) tick();
    end_reset();
    tick();
    write_ici(ici_);
  }
  // The two halves of reset() for a pod, which clocks its chips itself.
  void begin_reset() {
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
  }
  void end_reset() {
    top_->rst_ni = 1;
    if constexpr (kHbm) top_->hbm_rst_ni = 1;
    started_ = true;
  }

  // ---- ICI ----
  // Written now and after every reset(); the chip ignores them while it runs.
  void set_ici(const IciRegs& r) {
    ici_ = r;
    write_ici(r);
  }
  const IciRegs& ici() const { return ici_; }
  void write_ici(const IciRegs& r) {
    csr_write(csr::kCsrIciTorus, r.kx | (r.ky << 8));
    csr_write(csr::kCsrIciCoord, r.x | (r.y << 8));
    csr_write(csr::kCsrIciSlice0, r.x0 | (r.y0 << 8));
    csr_write(csr::kCsrIciSlice1, r.w | (r.h << 8));
  }
  // Link port p (0 N, 1 S, 2 E, 3 W): what the chip sends, and what it receives next cycle.
  bool link_tx_valid(unsigned p) const { return top_->ici_tx_valid_o[p]; }
  const Link& link_tx_data(unsigned p) const { return top_->ici_tx_data_o[p]; }
  const Rev& link_rv_out(unsigned p) const { return top_->ici_rv_out_o[p]; }
  void set_link_in(unsigned p, bool valid, const Link& data, const Rev& rv) {
    top_->ici_rx_valid_i[p] = valid;
    top_->ici_rx_data_i[p] = data;
    top_->ici_rv_in_i[p] = rv;
  }
  bool ici_busy() const { return top_->ici_busy_o; }
  bool waiting() const { return top_->waiting_o; }
  bool done() const { return top_->done_o; }

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
  // Reads of this beat answer with an uncorrectable error: the memory model flags it (and writes
  // to it too: their acknowledgement carries the error); on HBM two stored bits of its first
  // codeword flip (a later write of the beat would repair it; unwritten memory is an all-zero
  // codeword, so flipping it works too).
  void fail_beat(uint64_t beat) {
    if constexpr (kHbm) {
      const auto a = hbm_place(beat * bursts_per_beat());
      dram_->device(a.pc).flip_stored_bit(a.bank, a.row, a.col, 3);
      dram_->device(a.pc).flip_stored_bit(a.bank, a.row, a.col, 40);
    } else {
      failing_.insert(beat);
    }
  }

  // HBM only: one stored bit of the beat's burst `burst` flips (bit < 288: a codeword's data or
  // check bit), a single-bit error that the controller corrects and counts on every read.
  void flip_hbm_bit(uint64_t beat, unsigned burst, unsigned bit) {
    static_assert(kHbm, "flip_hbm_bit: the chip has no HBM");
    const auto a = hbm_place(beat * bursts_per_beat() + burst % bursts_per_beat());
    dram_->device(a.pc).flip_stored_bit(a.bank, a.row, a.col, bit);
  }

  // HBM only: the pseudo-channel that holds the beat's burst `burst`.
  unsigned hbm_pseudo_channel(uint64_t beat, unsigned burst) const {
    static_assert(kHbm, "hbm_pseudo_channel: the chip has no HBM");
    return hbm_place(beat * bursts_per_beat() + burst % bursts_per_beat()).pc;
  }

  // HBM counters of pseudo-channel c, named as in hbm_counters() (RTL on HBM only).
  std::map<std::string, uint64_t> hbm_channel_counters(unsigned c) const {
    static_assert(kHbm, "hbm_channel_counters: the chip has no HBM");
    if (c >= dram_->channels())
      throw std::out_of_range(fmt::format("hbm_channel_counters: pseudo-channel {} of {}", c, dram_->channels()));
    return {{"hbm_reads", top_->cnt_reads_o[c]},
            {"hbm_writes", top_->cnt_writes_o[c]},
            {"hbm_row_hits", top_->cnt_hits_o[c]},
            {"hbm_row_misses", top_->cnt_misses_o[c]},
            {"hbm_row_conflicts", top_->cnt_conflicts_o[c]},
            {"hbm_refreshes", top_->cnt_refreshes_o[c]},
            {"hbm_bus_busy", top_->cnt_bus_busy_o[c]},
            {"hbm_ecc_corrected", top_->cnt_ecc_corrected_o[c]},
            {"hbm_ecc_fatal", top_->cnt_ecc_fatal_o[c]},
            {"hbm_read_latency_sum", top_->cnt_rd_latency_sum_o[c]},
            {"hbm_read_latency_max", top_->cnt_rd_latency_max_o[c]}};
  }

  // HBM counters, summed over the pseudo-channels (the latency's maximum: the largest), and
  // hbm_pseudo_channels; empty for the memory model.
  std::map<std::string, uint64_t> hbm_counters() const {
    std::map<std::string, uint64_t> m;
    if constexpr (kHbm) {
      const unsigned nc = dram_->channels();
      for (unsigned c = 0; c < nc; ++c)
        for (const auto& [name, v] : hbm_channel_counters(c))
          m[name] = name == "hbm_read_latency_max" ? std::max(m[name], v) : m[name] + v;
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
    const uint32_t lo = csr_read(csr::kCsrCounter + 8 * k), hi = csr_read(csr::kCsrCounter + 4 + 8 * k);
    return (uint64_t{hi} << 32) | lo;
  }
  // Set the CSR inputs for one cycle without clocking (a pod clocks the chip itself).
  void csr_drive(bool valid, bool write, uint32_t addr, uint32_t data) {
    top_->csr_valid_i = valid;
    top_->csr_write_i = write;
    top_->csr_addr_i = static_cast<uint16_t>(addr);
    top_->csr_wdata_i = data;
  }

  // The host's beat access through the chip's memory port (HOST_ADDR 0x030, HOST_CMD 0x034,
  // HOST_STATUS 0x038, data window 0x800): one beat per command, the slow path next to the
  // backdoor. Returns false when the chip refused the address (HOST_STATUS error bit).
  bool host_write_beat(uint64_t beat, std::span<const uint32_t> lanes) {
    csr_write(csr::kCsrHostAddr, static_cast<uint32_t>(beat));
    for (unsigned j = 0; j < lanes_; ++j) csr_write(csr::kCsrHostData + 4 * j, lanes[j]);
    csr_write(csr::kCsrHostCmd, 2);
    const bool ok = host_wait();
    if constexpr (kHbm) drain_memory();  // posted: let it reach the DRAM
    return ok;
  }
  std::optional<std::vector<uint32_t>> host_read_beat(uint64_t beat) {
    csr_write(csr::kCsrHostAddr, static_cast<uint32_t>(beat));
    csr_write(csr::kCsrHostCmd, 1);
    if (!host_wait()) return std::nullopt;
    std::vector<uint32_t> out(lanes_);
    for (unsigned j = 0; j < lanes_; ++j) out[j] = csr_read(csr::kCsrHostData + 4 * j);
    return out;
  }

  void load(const std::vector<isa::Word>& code) {
    csr_write(csr::kCsrImemAddr, 0);
    for (const auto& w : code) {
      csr_write(csr::kCsrImemData0, static_cast<uint32_t>(w[0]));
      csr_write(csr::kCsrImemData1, static_cast<uint32_t>(w[0] >> 32));
      csr_write(csr::kCsrImemData2, static_cast<uint32_t>(w[1]));
      csr_write(csr::kCsrImemData3, static_cast<uint32_t>(w[1] >> 32));
    }
    csr_write(csr::kCsrProgLen, static_cast<uint32_t>(code.size()));
  }

  // Start and run until done or `timeout` cycles (a watchdog: never hangs). expected: about how
  // many cycles the run takes, for the progress line's time left (0: unknown).
  ChipRun run(uint64_t timeout, uint64_t expected = 0) {
    csr_write(csr::kCsrCtrl, 1);
    ChipRun r;
    const uint64_t t0 = cycles_;
    tp::Progress progress("rtl chip", expected);
    while (cycles_ - t0 < timeout) {
      tick();
      if (top_->done_o) {
        r.done = true;
        break;
      }
      if ((cycles_ & 0xfffu) == 0) {
        if (tp::interrupted()) break;  // Ctrl-C: stop as at a timeout
        progress.update(cycles_ - t0);
      }
    }
    r.timed_out = !r.done;
    r.cycles = cycles_ - t0;
    finish(r);
    return r;
  }
  // After done (or a timeout): memory writes drained, error code and PC read.
  void finish(ChipRun& r) {
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
    const uint32_t status = csr_read(csr::kCsrStatus);
    if (status & 4u) {
      r.err = static_cast<uint8_t>(csr_read(csr::kCsrErrCode));
      r.pc = csr_read(csr::kCsrErrPc);
    }
  }

  // One clock cycle: the memory model answers, the chip's combinational outputs settle, the
  // handshakes are taken, then the rising edge.
  void tick() {
    if (!external_links_) loop_links_in();
    drive_memory();
    top_->clk_i = 0;
    top_->eval();
    if (trace_) trace_->dump(ctx_->time());
    ctx_->timeInc(1);
    sample_memory();
    if (rec_) record();
    top_->clk_i = 1;
    top_->eval();
    if (trace_) trace_->dump(ctx_->time());
    ctx_->timeInc(1);
    ++cycles_;
    if (!external_links_) loop_links_out();
    if (rec_ && rec_due_) sample_counters(rec_interval_);
  }

  // ---- timeline (docs/observability.md) ----
  // Record the next run into t (nullptr: stop): every counted cycle's trace probe, and every
  // `interval` counted cycles the counter tracks. Times are this harness's cycles from now (the
  // chips of a pod tick together, so they share the time base). The caller starts t
  // (ChipTrace::start, place) before the run and finishes it after.
  void set_timeline(trace::ChipTrace* t, unsigned interval = 256) {
    if (rec_ && rec_n_ % rec_interval_ != 0) sample_counters(rec_n_ % rec_interval_);  // the last, partial window
    rec_ = t;
    rec_base_ = cycles_;
    rec_n_ = 0;
    rec_window_start_ = UINT64_MAX;  // the first counted cycle's time, when it comes
    rec_due_ = false;
    rec_interval_ = std::max(1u, interval);
    rec_last_.fill(0);     // the chip's counters start from 0 (a reset before the run)
    if constexpr (kHbm) {  // the HBM's do not (the memory is reset once)
      for (unsigned c = 0; c < dram_->channels(); ++c) rec_last_[6] += top_->cnt_hits_o[c];
    }
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
    for (uint64_t t = 0; csr_read(csr::kCsrHostStatus) & 1u; ++t) {
      if (t > 100'000) throw std::runtime_error("ChipHarness: the host's memory access did not finish");
      tick();
    }
    return (csr_read(csr::kCsrHostStatus) & 2u) == 0;
  }

  // The 1x1 torus: port p's words arrive at port p^1 (N<->S, E<->W) link_latency cycles later;
  // the reverse word for what port p sends comes from the receiver at p^1.
  struct Wire {
    bool valid = false;
    Link data{};
    Rev rv{};
  };
  void loop_links_in() {
    if (loop_.empty()) {  // first cycle: every receiver's current reverse word on the wires
      loop_.resize(4);
      for (unsigned p = 0; p < 4; ++p) loop_[p].assign(link_latency_, Wire{false, Link{}, top_->ici_rv_out_o[p ^ 1u]});
    }
    for (unsigned p = 0; p < 4; ++p) {
      const Wire& w = loop_[p ^ 1u].front();  // sent on the opposite port
      top_->ici_rx_valid_i[p] = w.valid;
      top_->ici_rx_data_i[p] = w.data;
      top_->ici_rv_in_i[p] = loop_[p].front().rv;  // from the receiver of what p sends
    }
  }
  void loop_links_out() {
    for (unsigned p = 0; p < 4; ++p) {
      loop_[p].pop_front();
      loop_[p].push_back(
          Wire{static_cast<bool>(top_->ici_tx_valid_o[p]), top_->ici_tx_data_o[p], top_->ici_rv_out_o[p ^ 1u]});
    }
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
      p.err = failing_.count(beat) != 0;
      if (p.write) {
        if (!p.err)
          for (unsigned j = 0; j < lanes_; ++j) word(beat, j) = get_lane<32>(top_->mem_req_wdata_o, j);
      } else {
        p.data = read_mem(beat, 1);
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

  // The probe of one cycle (before its rising edge): the queues that popped, the counters'
  // kinds, and an arrival.
  void record() {
    const uint64_t t = cycles_ - rec_base_;
    if (top_->dbg_rx_end_o) {
      constexpr unsigned kBits = isa::hw::ici::kCoordBits, kMask = (1u << kBits) - 1;
      rec_->arrival(t, {static_cast<unsigned>(top_->dbg_rx_src_o & kMask),
                        static_cast<unsigned>((top_->dbg_rx_src_o >> kBits) & kMask)});
    }
    if (!top_->dbg_count_o) return;
    uint32_t pc[isa::kQueues];
    for (unsigned q = 0; q < isa::kQueues; ++q) pc[q] = top_->dbg_pc_o[q];
    const unsigned go = top_->dbg_go_o;
    constexpr unsigned kIci = static_cast<unsigned>(isa::Unit::ici);
    if (rec_window_start_ == UINT64_MAX) rec_window_start_ = t;
    rec_->cycle(t, go, pc, top_->dbg_kind_o);
    if ((go >> kIci) & 1u) rec_->send_at(t, pc[kIci]);
    rec_due_ = ++rec_n_ % rec_interval_ == 0;
  }
  // The counter tracks, per interval: MXU array busy (fraction), memory bytes per cycle, flits per
  // link, HBM row hits. The counters are read through the host registers without a clock edge.
  void sample_counters(uint64_t window) {
    rec_due_ = false;
    const auto addr = top_->csr_addr_i;
    auto delta = [&](unsigned i, uint64_t now) {
      const uint64_t d = now - rec_last_[i];
      rec_last_[i] = now;
      return static_cast<double>(d) / static_cast<double>(window);
    };
    // Stamped at the window's start: a counter track holds its value from there on.
    const uint64_t t = rec_window_start_;
    rec_window_start_ = cycles_ - rec_base_;
    rec_->sample("mxu busy", t, delta(0, counter(ctr::kMxuBusy)));
    rec_->sample("memory bytes/cycle", t, delta(1, counter(ctr::kBytesLoaded) + counter(ctr::kBytesStored)));
    static constexpr const char* kLinks[4] = {"n", "s", "e", "w"};
    for (unsigned p = 0; p < 4; ++p)
      rec_->sample(fmt::format("ici flits/cycle {}", kLinks[p]), t,
                   delta(2 + p, counter(static_cast<unsigned>(isa::hw::Cnt::ici_flits_n) + p)));
    if constexpr (kHbm) {
      uint64_t hits = 0;
      for (unsigned c = 0; c < dram_->channels(); ++c) hits += top_->cnt_hits_o[c];
      rec_->sample("hbm row hits/cycle", t, delta(6, hits));
    }
    top_->csr_addr_i = addr;
    top_->eval();
  }

  trace::ChipTrace* rec_ = nullptr;
  uint64_t rec_base_ = 0, rec_n_ = 0, rec_window_start_ = 0;
  bool rec_due_ = false;
  unsigned rec_interval_ = 256;
  std::array<uint64_t, 7> rec_last_{};

  unsigned lanes_;
  bool external_links_;
  unsigned link_latency_;
  IciRegs ici_;
  std::vector<std::deque<Wire>> loop_;  // per sending port: the words on its way round
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
