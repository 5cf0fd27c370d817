// The golden chip at a torus position of the SystemC pod (docs/pod.md, "Mixed pods"): the golden
// interpreter (sw/golden/chip_model) for the chip's function, and for its ICI the Verilated
// router (tp_ici_router, the same RTL that sits in the Verilated chip) behind a C++ network
// interface that speaks the ICI unit's packet format (tp_ici_unit.sv): a head flit {last, rsem,
// raddr}, then ceil(32 n / flit_bits) body flits per row, up to 4 rows a packet, on the chip's
// lane (x + y) mod (vcs / 2), each transfer on the local port of its first hop (mod the router's
// local ports, as the ICI unit's send engines), arrivals taken from every ejection port. So a
// golden chip and Verilated chips share one pod, link words and all.
//
// Timing: the interpreter runs a chip's instructions as soon as their semaphores allow, in zero
// pod cycles. A golden chip (fast = false) keeps the interpreter's dataflow estimate and only the
// network takes time: its sends go out at once, and it is done as soon as its program is. A fast
// chip (fast = true: a mixed pod of RTL and fast chips) has the fast chip model's timing
// (golden/fast_timing.cpp) on pod time. The model's time runs `lag` cycles behind the pod's
// (pod cycles since the chip's start): a send's k-th of F flits enters the router no sooner than
// start + (end - start) * k / F of the model's span for the send, plus lag; when the network
// takes a flit later than that (back-pressure the model does not see), lag grows by the
// difference, so the chip falls behind its model as a stalled ICI unit holds a Verilated chip
// back. Each arriving row is handed to the model at its pod cycle less lag (a wait on it
// completes no sooner), and the chip is done at the model's completion plus lag. Either way its "cycles" counter is the
// model's estimate, and a program that is correctly synchronised gives the same bits as on a Verilated chip.
//
// Registers: the host's view of a chip (sw/isa/hw.json): CTRL, STATUS, ERR_CODE, ERR_PC, PROG_LEN,
// IMEM_ADDR, IMEM_DATA0..3, INFO, WAIT_PC, the ICI registers; the counters through counters().
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <deque>
#include <memory>
#include <vector>

#include "chip_model.h"
#include "coverage.h"
#include "pod_sim.h"
#include "sim_util.h"  // FlitLayout, get_bits, set_bits

namespace tp::tb {

template <class Router, class LinkT, class RevT>
class GoldenPodChip final : public PodNode<LinkT, RevT> {
 public:
  GoldenPodChip(sc_core::sc_module_name name, const Preset& p, unsigned x, unsigned y, bool fast = false)
      : GoldenPodChip::PodNode(name),
        p_(p),
        fast_(fast),
        model_(p),
        ctx_(std::make_unique<VerilatedContext>()),
        layout_{p.ici.vcs > 2 ? static_cast<unsigned>(std::bit_width(p.ici.vcs - 1)) : 1u, p.ici.flit_bits},
        nf_((32 * p.mxu.n + p.ici.flit_bits - 1) / p.ici.flit_bits),
        out_(kLocals),
        out_t_(kLocals),
        rx_(std::size_t{kLocals} * p.ici.vcs) {
    static_assert(std::is_same_v<std::decay_t<decltype(std::declval<Router&>().tx_data_o[0])>, LinkT> &&
                      std::is_same_v<std::decay_t<decltype(std::declval<Router&>().rv_out_o[0])>, RevT>,
                  "the router model's link words must be the chip's");
    if (p.ici.local_ports != kLocals)
      throw std::invalid_argument(fmt::format("GoldenPodChip: preset '{}' has {} local ports, the router model {}",
                                              p.name, p.ici.local_ports, kLocals));
    ctx_->randReset(tb::kRandReset);
    r_ = std::make_unique<Router>(ctx_.get(), "router");
    r_->rst_ni = 0;
    r_->clk_i = 0;
    for (unsigned j = 0; j < kLocals; ++j) {
      r_->inj_valid_i[j] = 0;
      r_->ej_ready_i[j] = 1;
    }
    for (unsigned q = 0; q < 4; ++q) {
      r_->rx_valid_i[q] = 0;
      r_->fault_rate_i[q] = 0;
    }
    regs_.x = x;
    regs_.y = y;
    if (fast_) model_.set_timing(golden::make_fast_timing(p));
    apply_regs();
    model_.set_ici_sender([this](golden::IciMessage m) { packetize(m); });
  }
  ~GoldenPodChip() override { tb::end_model(*ctx_, r_); }

  std::string backend() const override { return fast_ ? "fast" : "golden"; }
  unsigned lanes() const override { return p_.mxu.n; }
  bool done() override { return finished_; }
  bool waiting() override { return started_ && !finished_ && result_.waiting; }
  bool ici_busy() override {
    if (r_->busy_o) return true;
    for (unsigned j = 0; j < kLocals; ++j)
      if (!out_[j].empty() || r_->ej_valid_o[j]) return true;
    return std::any_of(rx_.begin(), rx_.end(), [](const Rx& v) { return v.in_packet; });
  }
  uint32_t csr_read(uint32_t a) override {
    namespace hw = isa::hw;
    if (a == hw::kCsrStatus)
      return (started_ && !finished_ ? 1u : 0u) | (finished_ ? 2u : 0u) | (result_.err != isa::Err::none ? 4u : 0u) |
             (waiting() ? 8u : 0u);
    if (a == hw::kCsrErrCode) return static_cast<uint32_t>(result_.err);
    if (a == hw::kCsrErrPc) return result_.err != isa::Err::none ? result_.pc : 0;
    if (a == hw::kCsrWaitPc) return result_.wait_pc;
    if (a == hw::kCsrProgLen) return prog_len_;
    if (a == hw::kCsrImemAddr) return imem_addr_;
    if (a == hw::kCsrInfo) return (isa::kIsaVersion << 16) | p_.mxu.n;
    if (a == hw::kCsrIciTorus) return regs_.kx | (regs_.ky << 8);
    if (a == hw::kCsrIciCoord) return regs_.x | (regs_.y << 8);
    if (a == hw::kCsrIciSlice0) return regs_.x0 | (regs_.y0 << 8);
    if (a == hw::kCsrIciSlice1) return regs_.w | (regs_.h << 8);
    return 0;
  }
  void write_mem(uint64_t beat, std::span<const uint32_t> words) override { model_.write_hbm(beat, words); }
  std::vector<uint32_t> read_mem(uint64_t beat, uint64_t beats) override { return model_.read_hbm(beat, beats); }
  void finish(ChipRun& r) override {
    r.err = static_cast<uint8_t>(result_.err);
    r.pc = result_.err != isa::Err::none ? result_.pc : 0;
  }
  std::map<std::string, uint64_t> counters() override {
    const auto& s = model_.stats();
    // A fast chip's cycles are on pod time: its model's, and the lag its sends met.
    std::map<std::string, uint64_t> m = {{"cycles", s.est_cycles + lag_},
                                         {"est_cycles", s.est_cycles},
                                         {"fast_lag", lag_},
                                         {"instructions", s.instructions},
                                         {"bytes_loaded", s.bytes_loaded},
                                         {"bytes_stored", s.bytes_stored},
                                         {"mxu_rows", s.mxu_rows},
                                         {"vec_rows", s.vec_rows},
                                         {"ici_bytes_sent", s.ici_bytes_sent},
                                         {"ici_bytes_received", s.ici_bytes_received},
                                         {"ici_refused", r_->cnt_refused_o},
                                         {"ici_flits_local", flits_local()},
                                         {"ici_packets_received", packets_in_},
                                         {"ici_lane_errors", lane_errors_},
                                         {"fast_timing", fast_ ? 1u : 0u}};
    const char* links[4] = {"n", "s", "e", "w"};
    for (unsigned q = 0; q < 4; ++q) {
      m[fmt::format("ici_flits_{}", links[q])] = r_->cnt_flits_o[q];
      m[fmt::format("ici_retx_{}", links[q])] = r_->cnt_retx_o[q];
      m[fmt::format("ici_credit_stall_{}", links[q])] = r_->cnt_credit_stall_o[q];
      m[fmt::format("ici_crc_err_{}", links[q])] = r_->cnt_crc_err_o[q];
    }
    return m;
  }

 protected:
  using Flit = std::decay_t<decltype(std::declval<Router&>().inj_flit_i[0])>;
  static constexpr unsigned kLocals = vl_count<decltype(std::declval<Router&>().inj_valid_i)>;

  void clock(const typename GoldenPodChip::CsrWrite* w) override {
    if (w) write_reg(w->addr, w->data);
    Router& r = *r_;
    for (unsigned q = 0; q < 4; ++q) {
      const auto& f = this->fwd_in[q]->read();
      r.rx_valid_i[q] = f.valid;
      r.rx_data_i[q] = f.data;
      r.rv_in_i[q] = this->rev_in[q]->read().data;
    }
    for (unsigned j = 0; j < kLocals; ++j) {
      // A flit once offered stays offered until taken (valid/ready): the lag may grow meanwhile
      // (another port's flit taken late), which must not withdraw it.
      r.inj_valid_i[j] = !out_[j].empty() && (offered_[j] || out_t_[j].front() + lag_ <= now_);
      if (!out_[j].empty()) r.inj_flit_i[j] = out_[j].front();
      r.ej_ready_i[j] = 1;
    }
    r.clk_i = 0;
    r.eval();
    std::array<bool, kLocals> injected{}, ejected{};
    std::array<Flit, kLocals> ej{};
    for (unsigned j = 0; j < kLocals; ++j) {
      injected[j] = r.rst_ni && r.inj_valid_i[j] && r.inj_ready_o[j];
      ejected[j] = r.rst_ni && r.ej_valid_o[j];
      ej[j] = r.ej_flit_o[j];
    }
    r.clk_i = 1;
    r.eval();
    for (unsigned j = 0; j < kLocals; ++j) {
      offered_[j] = r.inj_valid_i[j] && !injected[j];
      if (injected[j]) {
        out_[j].pop_front();
        if (fast_) lag_ = std::max(lag_, now_ - out_t_[j].front());  // taken later than the model sent it
        out_t_[j].pop_front();
      }
      if (ejected[j]) receive(j, ej[j]);
    }
    for (unsigned q = 0; q < 4; ++q) {
      this->fwd[q]->write({static_cast<bool>(r.tx_valid_o[q]), r.tx_data_o[q]});
      this->rev[q]->write({true, r.rv_out_o[q]});
    }
    if (started_ && !finished_ && poke_) {
      poke_ = false;
      result_ = model_.run();
    }
    // A fast chip ends at its model's completion, on pod time, and once its last flit is out (as
    // the ICI unit's last send completes; its pod time, which paces the flits, runs until then).
    if (started_ && !finished_ && (result_.done || result_.err != isa::Err::none))
      finished_ = !fast_ || (now_ >= model_.stats().est_cycles + lag_ &&
                             std::all_of(out_.begin(), out_.end(), [](const auto& q) { return q.empty(); }));
    if (started_ && !finished_ && result_.waiting && regs_.w * regs_.h == 1 && !ici_busy()) {
      result_.err = isa::Err::deadlock;  // alone in its slice: no other chip can signal
      result_.pc = result_.wait_pc;
      result_.waiting = false;
      finished_ = true;
    }
    if (started_ && !finished_) ++now_;
  }
  void end_reset() override { r_->rst_ni = 1; }

 private:
  struct Rx {
    bool in_packet = false, last = false;
    uint32_t raddr = 0;
    unsigned rsem = 0, fi = 0;
    std::vector<uint32_t> row;
  };

  void apply_regs() {
    Router& r = *r_;
    const auto u8 = [](unsigned v) { return static_cast<uint8_t>(v); };
    r.kx_i = u8(regs_.kx);
    r.ky_i = u8(regs_.ky);
    r.my_x_i = u8(regs_.x);
    r.my_y_i = u8(regs_.y);
    r.slice_x0_i = u8(regs_.x0);
    r.slice_y0_i = u8(regs_.y0);
    r.slice_w_i = u8(regs_.w);
    r.slice_h_i = u8(regs_.h);
    model_.set_ici(regs_);
    // Always in pod mode: a chip alone in its slice may still wait for its own sends, which
    // cross the router; clock() turns a wait with nothing in flight into the deadlock error, as
    // the RTL chip's core does on a 1x1 slice.
    model_.set_pod_mode(true);
  }

  void write_reg(uint32_t a, uint32_t v) {
    namespace hw = isa::hw;
    const bool running = started_ && !finished_;
    if (!running) {
      bool ici = true;
      if (a == hw::kCsrIciTorus) {
        regs_.kx = v & 63;
        regs_.ky = (v >> 8) & 63;
      } else if (a == hw::kCsrIciCoord) {
        regs_.x = v & 31;
        regs_.y = (v >> 8) & 31;
      } else if (a == hw::kCsrIciSlice0) {
        regs_.x0 = v & 31;
        regs_.y0 = (v >> 8) & 31;
      } else if (a == hw::kCsrIciSlice1) {
        regs_.w = v & 63;
        regs_.h = (v >> 8) & 63;
      } else {
        ici = false;
      }
      if (ici) apply_regs();
    }
    if (a >= hw::kCsrIciFault0 && a <= hw::kCsrIciFault3) r_->fault_rate_i[(a - hw::kCsrIciFault0) / 4] = v & 0xffff;
    if (a == hw::kCsrProgLen) prog_len_ = v;
    if (a == hw::kCsrImemAddr) imem_addr_ = v;
    if (a == hw::kCsrImemData0) imem_data_[0] = v;
    if (a == hw::kCsrImemData1) imem_data_[1] = v;
    if (a == hw::kCsrImemData2) imem_data_[2] = v;
    if (a == hw::kCsrImemData3) {
      if (imem_addr_ < p_.chip.imem_words) {
        if (code_.size() <= imem_addr_) code_.resize(imem_addr_ + 1);
        code_[imem_addr_] = {uint64_t{imem_data_[0]} | (uint64_t{imem_data_[1]} << 32),
                             uint64_t{imem_data_[2]} | (uint64_t{v} << 32)};
      }
      ++imem_addr_;
    }
    if (a == hw::kCsrCtrl && (v & 1u) && !running) start();
  }

  void start() {
    isa::Program prog;
    prog.preset = p_.name;
    prog.fingerprint = isa::fingerprint(p_);
    prog.code.assign(code_.begin(), code_.begin() + std::min<std::size_t>(prog_len_, code_.size()));
    prog.code.resize(prog_len_, isa::Word{0, 0});  // unwritten instruction memory reads 0
    model_.load(prog);
    started_ = true;
    finished_ = false;
    poke_ = true;
    now_ = lag_ = 0;
    offered_.fill(false);
    result_ = {};
    // Rows that arrived before the start: load() clears the semaphores, the RTL chip's start
    // does not, so their writes and counts are applied now.
    for (const auto& e : early_) model_.deliver(e.raddr, e.row, e.sem);
    early_.clear();
  }

  uint64_t flits_local() const {
    uint64_t s = 0;
    for (unsigned j = 0; j < kLocals; ++j) s += r_->cnt_flits_o[4 + j];
    return s;
  }

  // The local port of a transfer to dst (tp_ici_unit's engine choice).
  unsigned local_port(golden::Coord dst) const {
    return golden::injection_port(golden::torus_of(regs_), golden::slice_of(regs_), golden::coord_of(regs_), dst,
                                  kLocals);
  }

  // The ICI unit's packets for one ici.send (tp_ici_unit.sv), on its engine's local port.
  void packetize(const golden::IciMessage& m) {
    const unsigned lanes = p_.mxu.n, fb = p_.ici.flit_bits;
    const unsigned port = local_port(m.dst);
    std::deque<Flit>& out = out_[port];
    const std::size_t before = out.size();
    const auto rows = static_cast<uint32_t>(m.words.size() / lanes);
    for (uint32_t r0 = 0; r0 < rows; r0 += kPktRows) {
      const uint32_t n = std::min(kPktRows, rows - r0);
      Flit head{};
      fields(head, m, true, false);
      namespace ici = isa::hw::ici;
      const uint64_t data = (uint64_t{m.raddr + r0} << ici::kHeadRaddrLsb) | (uint64_t{m.rsem} << ici::kHeadRsemLsb) |
                            (uint64_t{r0 + n == rows} << ici::kHeadLastLsb);
      set_bits(head, layout_.data(), std::min(fb, 64u), data);
      out.push_back(head);
      for (uint32_t r = r0; r < r0 + n; ++r) {
        for (unsigned k = 0; k < nf_; ++k) {
          Flit f{};
          fields(f, m, false, r + 1 == r0 + n && k + 1 == nf_);
          for (unsigned b = 0; b < fb; b += 32) {
            const unsigned bit = k * fb + b, word = bit / 32;
            if (word >= lanes) break;
            // fb is a multiple of 8; a row's bits from `bit` on, 32 (or fewer at the flit's end)
            uint64_t v = m.words[std::size_t{r} * lanes + word] >> (bit % 32);
            if (bit % 32 != 0 && word + 1 < lanes)
              v |= uint64_t{m.words[std::size_t{r} * lanes + word + 1]} << (32 - bit % 32);
            set_bits(f, layout_.data() + b, std::min(32u, fb - b), v & 0xffffffffu);
          }
          out.push_back(f);
        }
      }
    }
    // Golden: at once; fast: spread over the end of the model's span for the send, a flit a cycle
    // (the span's lead before its first flit, FastIciFigures::send_lead, is the ICI unit's; a
    // span shorter than the flits is spread over).
    const uint64_t flits = out.size() - before;
    const uint64_t first = m.sent_t - std::min<uint64_t>(m.sent_t - m.send_t, flits);
    for (uint64_t k = 0; k < flits; ++k) out_t_[port].push_back(fast_ ? first + (m.sent_t - first) * k / flits : 0);
  }
  void fields(Flit& f, const golden::IciMessage& m, bool head, bool tail) const {
    set_bits(f, 0, 1, head);
    set_bits(f, 1, 1, tail);
    set_bits(f, layout_.dst_x(), isa::hw::ici::kCoordBits, m.dst.x);
    set_bits(f, layout_.dst_y(), isa::hw::ici::kCoordBits, m.dst.y);
    set_bits(f, layout_.src_x(), isa::hw::ici::kCoordBits, regs_.x);
    set_bits(f, layout_.src_y(), isa::hw::ici::kCoordBits, regs_.y);
    // The chip's lane, as the ICI unit chooses it: (x + y) mod lanes (docs/ici.md).
    set_bits(f, layout_.vc(), layout_.vw, (regs_.x + regs_.y) % (p_.ici.vcs / 2));
  }

  // Arrivals: per ejection port and output VC, rows reassembled and written as they complete; the
  // packet marked last signals its semaphore with its last row.
  void receive(unsigned port, const Flit& f) {
    const unsigned fb = p_.ici.flit_bits, lanes = p_.mxu.n;
    const auto vc = static_cast<unsigned>(get_bits(f, layout_.vc(), layout_.vw));
    Rx& rx = rx_.at(std::size_t{port} * p_.ici.vcs + vc);
    if (get_bits(f, 0, 1)) {
      // The network's contract (docs/ici.md): a packet keeps its sender's lane, (x + y) mod L,
      // end to end, whichever chip sent it (a Verilated chip's ICI unit or a golden chip).
      namespace ici = isa::hw::ici;
      const auto sx = get_bits(f, layout_.src_x(), ici::kCoordBits);
      const auto sy = get_bits(f, layout_.src_y(), ici::kCoordBits);
      const unsigned l = p_.ici.vcs / 2;
      ++packets_in_;
      if (vc % l != (sx + sy) % l) ++lane_errors_;
      const uint64_t d = get_bits(f, layout_.data(), std::min(fb, 64u));
      rx.raddr = static_cast<uint32_t>((d >> ici::kHeadRaddrLsb) & ((1u << ici::kHeadRaddrWidth) - 1));
      rx.rsem = static_cast<unsigned>((d >> ici::kHeadRsemLsb) & ((1u << ici::kHeadRsemWidth) - 1));
      rx.last = (d >> ici::kHeadLastLsb) & 1;
      rx.fi = 0;
      rx.in_packet = !get_bits(f, 1, 1);
      rx.row.assign(lanes, 0);
      return;
    }
    for (unsigned b = 0; b < fb; b += 32) {
      const unsigned bit = rx.fi * fb + b, word = bit / 32;
      if (word >= lanes) break;
      const uint64_t v = get_bits(f, layout_.data() + b, std::min(32u, fb - b));
      rx.row[word] |= static_cast<uint32_t>(v << (bit % 32));
      if (bit % 32 != 0 && word + 1 < lanes) rx.row[word + 1] |= static_cast<uint32_t>(v >> (32 - bit % 32));
    }
    if (++rx.fi < nf_) return;
    const bool tail = get_bits(f, 1, 1);
    const unsigned sem = tail && rx.last ? rx.rsem : 0;
    if (started_)
      model_.deliver(rx.raddr, rx.row, sem, fast_ ? now_ - std::min(now_, lag_) : 0);
    else
      early_.push_back({rx.raddr, rx.row, sem});
    poke_ = true;
    ++rx.raddr;
    rx.fi = 0;
    rx.row.assign(lanes, 0);
    if (tail) rx.in_packet = false;
  }

  static constexpr uint32_t kPktRows = isa::hw::ici::kPacketRows;  // tp_ici_unit's PktRows
  Preset p_;
  bool fast_;
  golden::ChipModel model_;
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Router> r_;
  FlitLayout layout_;
  unsigned nf_;
  golden::IciRegs regs_;
  std::vector<std::deque<Flit>> out_;        // flits waiting, per local port
  std::vector<std::deque<uint64_t>> out_t_;  // ... and the pod cycle (since the start) each may go from
  std::vector<Rx> rx_;                       // per (ejection port, VC)
  struct Early {
    uint32_t raddr;
    std::vector<uint32_t> row;
    unsigned sem;
  };
  std::vector<Early> early_;  // arrivals before the start
  std::vector<isa::Word> code_;
  uint32_t prog_len_ = 0, imem_addr_ = 0;
  std::array<uint32_t, 3> imem_data_{};
  bool started_ = false, finished_ = false, poke_ = false;
  uint64_t now_ = 0, lag_ = 0;           // pod cycles since the start; how far the fast model runs behind them
  std::array<bool, kLocals> offered_{};  // a local port's front flit is offered to the router
  golden::ChipModel::Result result_;
  uint64_t packets_in_ = 0, lane_errors_ = 0;  // packets received; those not on their sender's lane
};

}  // namespace tp::tb
