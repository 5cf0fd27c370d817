// The SystemC pod (docs/pod.md): kx x ky Verilated chips, each an sc_module around its chip
// harness, clocked by one sc_clock; every ICI link a pair of primitive channels (the link words
// one way, the receiver's reverse words the other) with the pod's latency and an optional
// bit-error hook; a host module per board of chips that writes its chips' registers over TLM-2.0
// (b_transport: one clock per register write) and their memory through the debug transport (the
// backdoor). A monitor ends the run when every chip is done and the network is quiet, or when
// every chip that is not done waits and nothing moves for the watchdog's cycles (a deadlock), or
// at the timeout.
//
// SystemC's kernel is global and cannot be reset: one PodSim per process.
#pragma once

#include <fmt/format.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <systemc>
#include <tlm>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "chip_harness.h"
#include "slice.h"

namespace tp::tb {

// Host address map of a chip's TLM target: registers below kMemBase, memory bytes above.
inline constexpr uint64_t kMemBase = uint64_t{1} << 40;

// A link channel: words written in one cycle are read `latency` cycles later; a word may get one
// bit flipped (the bit-error hook), counted.
template <class T>
class LinkChannel : public sc_core::sc_prim_channel {
 public:
  struct Word {
    bool valid = false;
    T data{};
  };
  LinkChannel(const char* name, unsigned latency, double flip, unsigned bits, uint64_t seed)
      : sc_core::sc_prim_channel(name), line_(latency), flip_(flip), bits_(bits), rng_(seed) {}
  const Word& read() const { return line_.front(); }
  void write(const Word& w) {
    next_ = w;
    request_update();
  }
  uint64_t flips() const { return flips_; }
  bool carrying() const {  // a valid word is on its way
    return std::any_of(line_.begin(), line_.end(), [](const Word& w) { return w.valid; });
  }

 private:
  void update() override {
    if (flip_ > 0 && next_.valid && std::bernoulli_distribution(flip_)(rng_)) {
      flip_bit(next_.data, static_cast<unsigned>(rng_() % bits_));
      ++flips_;
    }
    line_.pop_front();
    line_.push_back(next_);
  }
  template <class U>
  static void flip_bit(U& v, unsigned b) {
    if constexpr (std::is_integral_v<U>)
      v ^= static_cast<U>(U{1} << b);
    else
      v[b / 32] ^= 1u << (b % 32);
  }
  std::deque<Word> line_;
  Word next_;
  double flip_;
  unsigned bits_;
  std::mt19937_64 rng_;
  uint64_t flips_ = 0;
};

// The chip interface of the pod: what the SystemC pod, its hosts and the slice driver need of a
// chip at a torus position, whatever implements it (the Verilated chip, PodChip; the golden chip
// behind a Verilated router, GoldenPodChip in golden_pod_chip.h). Each is clocked once per cycle
// by the pod's clock; registers come over TLM-2.0 (b_transport: a read answers at once, a write
// takes effect at the next clock), memory over the debug transport (the backdoor).
template <class LinkT, class RevT>
class PodNode : public sc_core::sc_module {
 public:
  using Link = LinkT;
  using RevWord = RevT;
  using Fwd = LinkChannel<LinkT>;
  using Rev = LinkChannel<RevT>;

  sc_core::sc_in<bool> clk;
  tlm_utils::simple_target_socket<PodNode> socket;
  // Wiring: what this chip sends on port p, and what it reads there (the neighbour's channels).
  std::unique_ptr<Fwd> fwd[4];
  std::unique_ptr<Rev> rev[4];
  Fwd* fwd_in[4] = {};
  Rev* rev_in[4] = {};

  explicit PodNode(sc_core::sc_module_name name) : sc_core::sc_module(name), socket("socket") {
    socket.register_b_transport(this, &PodNode::b_transport);
    socket.register_transport_dbg(this, &PodNode::transport_dbg);
    SC_HAS_PROCESS(PodNode);
    SC_METHOD(tick);
    sensitive << clk.pos();
    dont_initialize();
  }

  double eval_seconds() const { return eval_ns_ * 1e-9; }  // wall time inside the chip's own evaluation

  virtual std::string backend() const = 0;
  virtual unsigned lanes() const = 0;
  virtual bool done() = 0;      // stopped (halted and drained, or an error)
  virtual bool waiting() = 0;   // STATUS.waiting
  virtual bool ici_busy() = 0;  // its network interface has flits in flight
  virtual uint32_t csr_read(uint32_t addr) = 0;
  virtual void write_mem(uint64_t beat, std::span<const uint32_t> words) = 0;
  virtual std::vector<uint32_t> read_mem(uint64_t beat, uint64_t beats) = 0;
  virtual void finish(ChipRun&) = 0;                       // after the run: error code and PC
  virtual std::map<std::string, uint64_t> counters() = 0;  // hw.json's names where it has them
  // Record the run's timeline (docs/observability.md), if the chip has the trace probe.
  virtual bool has_probe() const { return false; }
  virtual void set_timeline(trace::ChipTrace*) {}

 protected:
  struct CsrWrite {
    uint32_t addr, data;
  };
  // One clock: take the link words in (fwd_in, rev_in), apply the register write if any, clock
  // the chip, put the link words out (fwd, rev).
  virtual void clock(const CsrWrite*) = 0;
  virtual void end_reset() = 0;

 private:
  void tick() {
    const CsrWrite w{pend_addr_, pend_data_};
    const auto t0 = std::chrono::steady_clock::now();
    clock(pending_ ? &w : nullptr);
    eval_ns_ += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    if (pending_) {
      pending_ = false;
      written_.notify(sc_core::SC_ZERO_TIME);
    }
    if (reset_left_ > 0 && --reset_left_ == 0) end_reset();
  }

  void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time&) {
    const uint64_t a = t.get_address();
    if (a >= kMemBase || t.get_data_length() != 4) {
      t.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
      return;
    }
    uint32_t v = 0;
    if (t.is_write()) {
      std::memcpy(&v, t.get_data_ptr(), 4);
      pend_addr_ = static_cast<uint32_t>(a);
      pend_data_ = v;
      pending_ = true;
      sc_core::wait(written_);
    } else {
      v = csr_read(static_cast<uint32_t>(a));
      std::memcpy(t.get_data_ptr(), &v, 4);
    }
    t.set_response_status(tlm::TLM_OK_RESPONSE);
  }
  // Memory through the backdoor: whole beats (lanes x 4 bytes) at kMemBase + 4 * lanes * beat.
  unsigned transport_dbg(tlm::tlm_generic_payload& t) {
    const uint64_t a = t.get_address();
    const uint64_t beat_bytes = 4ull * lanes();
    if (a < kMemBase || (a - kMemBase) % beat_bytes != 0 || t.get_data_length() % beat_bytes != 0) {
      t.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
      return 0;
    }
    const uint64_t beat = (a - kMemBase) / beat_bytes;
    const std::size_t words = t.get_data_length() / 4;
    if (t.is_write()) {
      std::vector<uint32_t> w(words);
      std::memcpy(w.data(), t.get_data_ptr(), t.get_data_length());
      write_mem(beat, w);
    } else {
      const auto w = read_mem(beat, words / lanes());
      std::memcpy(t.get_data_ptr(), w.data(), t.get_data_length());
    }
    t.set_response_status(tlm::TLM_OK_RESPONSE);
    return t.get_data_length();
  }

  unsigned reset_left_ = 4;  // cycles in reset after elaboration
  double eval_ns_ = 0;
  bool pending_ = false;
  uint32_t pend_addr_ = 0, pend_data_ = 0;
  sc_core::sc_event written_;
};

// The Verilated chip at a torus position: its harness with external links.
template <class Top>
class PodChip final : public PodNode<typename ChipHarness<Top>::Link, typename ChipHarness<Top>::Rev> {
 public:
  using Harness = ChipHarness<Top>;
  PodChip(sc_core::sc_module_name name, const Preset& p, ChipStimulus stim)
      : PodChip::PodNode(name), h_(p, stim, true) {
    h_.begin_reset();
  }

  std::string backend() const override { return "rtl"; }
  unsigned lanes() const override { return h_.lanes(); }
  bool done() override { return h_.done(); }
  bool waiting() override { return h_.waiting(); }
  bool ici_busy() override { return h_.ici_busy(); }
  uint32_t csr_read(uint32_t addr) override { return h_.csr_read(addr); }
  void write_mem(uint64_t beat, std::span<const uint32_t> words) override { h_.write_mem(beat, words); }
  std::vector<uint32_t> read_mem(uint64_t beat, uint64_t beats) override { return h_.read_mem(beat, beats); }
  void finish(ChipRun& r) override { h_.finish(r); }
  bool has_probe() const override { return true; }
  void set_timeline(trace::ChipTrace* t) override { h_.set_timeline(t); }
  std::map<std::string, uint64_t> counters() override {
    std::map<std::string, uint64_t> m;
    for (unsigned k = 0; k < isa::hw::kNumCounters; ++k) m[std::string(isa::hw::kCounters[k].name)] = h_.counter(k);
    for (const auto& [name, value] : h_.hbm_counters()) m[name] = value;
    return m;
  }

 protected:
  void clock(const typename PodChip::CsrWrite* w) override {
    for (unsigned p = 0; p < 4; ++p) {
      const auto& f = this->fwd_in[p]->read();
      h_.set_link_in(p, f.valid, f.data, this->rev_in[p]->read().data);
    }
    if (w) h_.csr_drive(true, true, w->addr, w->data);
    h_.tick();
    if (w) h_.csr_drive(false, false, 0, 0);
    for (unsigned p = 0; p < 4; ++p) {
      this->fwd[p]->write({h_.link_tx_valid(p), h_.link_tx_data(p)});
      this->rev[p]->write({true, h_.link_rv_out(p)});
    }
  }
  void end_reset() override { h_.end_reset(); }

 private:
  Harness h_;
};

// What a host does for each of its chips in a run.
struct HostJob {
  unsigned chip = 0;  // index into the host's sockets
  driver::IciSetting ici;
  std::vector<isa::Word> code;
  bool run = true;          // false: only the ICI registers (an idle chip still routes its neighbours' traffic)
  uint16_t fault_rate = 0;  // ICI_FAULT0..3, every link (0: off)
};

// A host: the chips of one board on TLM sockets. Its thread waits for reset, writes each chip's
// ICI registers and program, reports itself loaded, and starts its chips when every host of the
// pod is loaded (the pod's start event), one register write each.
class PodHost : public sc_core::sc_module {
 public:
  sc_core::sc_in<bool> clk;
  std::vector<std::unique_ptr<tlm_utils::simple_initiator_socket<PodHost>>> sockets;

  PodHost(sc_core::sc_module_name name, unsigned chips) : sc_core::sc_module(name) {
    for (unsigned c = 0; c < chips; ++c)
      sockets.push_back(
          std::make_unique<tlm_utils::simple_initiator_socket<PodHost>>(sc_core::sc_gen_unique_name("socket")));
  }
  void run(std::vector<HostJob> jobs, unsigned* loaded, sc_core::sc_event* all_loaded, unsigned hosts,
           sc_core::sc_event* go) {
    jobs_ = std::move(jobs);
    loaded_ = loaded;
    all_loaded_ = all_loaded;
    hosts_ = hosts;
    go_ = go;
    sc_core::sc_spawn(sc_bind(&PodHost::thread, this));
  }
  void write_reg(unsigned chip, uint32_t addr, uint32_t value) { reg(chip, true, addr, value); }
  // The backdoor (debug transport): whole beats at a byte address of the chip's memory.
  void memory(unsigned chip, bool write, uint64_t byte_addr, std::span<uint32_t> words) {
    tlm::tlm_generic_payload t;
    t.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
    t.set_address(kMemBase + byte_addr);
    t.set_data_ptr(reinterpret_cast<unsigned char*>(words.data()));
    t.set_data_length(static_cast<unsigned>(words.size() * 4));
    t.set_streaming_width(static_cast<unsigned>(words.size() * 4));
    t.set_byte_enable_ptr(nullptr);
    t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    (*sockets.at(chip))->transport_dbg(t);
    if (!t.is_response_ok())
      throw std::runtime_error(fmt::format("host: memory access at byte {:#x} failed", byte_addr));
  }

 private:
  void thread() {
    namespace hw = isa::hw;
    sc_core::wait(8, sc_core::SC_NS);  // past the chips' reset (clock period 1 ns)
    for (const auto& j : jobs_) {
      write_reg(j.chip, hw::kCsrIciTorus, j.ici.kx | (j.ici.ky << 8));
      write_reg(j.chip, hw::kCsrIciCoord, j.ici.x | (j.ici.y << 8));
      write_reg(j.chip, hw::kCsrIciSlice0, j.ici.x0 | (j.ici.y0 << 8));
      write_reg(j.chip, hw::kCsrIciSlice1, j.ici.w | (j.ici.h << 8));
      if (j.fault_rate)
        for (const uint32_t a : {hw::kCsrIciFault0, hw::kCsrIciFault1, hw::kCsrIciFault2, hw::kCsrIciFault3})
          write_reg(j.chip, a, j.fault_rate);
      if (!j.run) continue;
      write_reg(j.chip, hw::kCsrImemAddr, 0);
      for (const auto& w : j.code) {
        write_reg(j.chip, hw::kCsrImemData0, static_cast<uint32_t>(w[0]));
        write_reg(j.chip, hw::kCsrImemData1, static_cast<uint32_t>(w[0] >> 32));
        write_reg(j.chip, hw::kCsrImemData2, static_cast<uint32_t>(w[1]));
        write_reg(j.chip, hw::kCsrImemData3, static_cast<uint32_t>(w[1] >> 32));
      }
      write_reg(j.chip, hw::kCsrProgLen, static_cast<uint32_t>(j.code.size()));
    }
    if (++*loaded_ == hosts_) all_loaded_->notify(sc_core::SC_ZERO_TIME);
    sc_core::wait(*go_);
    for (const auto& j : jobs_)
      if (j.run) write_reg(j.chip, hw::kCsrCtrl, 1);
  }

  // One register access over b_transport (a write takes the chip's next clock).
  void reg(unsigned chip, bool write, uint32_t addr, uint32_t& value) {
    tlm::tlm_generic_payload t;
    sc_core::sc_time d = sc_core::SC_ZERO_TIME;
    t.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
    t.set_address(addr);
    t.set_data_ptr(reinterpret_cast<unsigned char*>(&value));
    t.set_data_length(4);
    t.set_streaming_width(4);
    t.set_byte_enable_ptr(nullptr);
    t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    (*sockets.at(chip))->b_transport(t, d);
    if (!t.is_response_ok())
      throw std::runtime_error(fmt::format("host: register {} {:#x} failed", write ? "write" : "read", addr));
  }

  std::vector<HostJob> jobs_;
  unsigned* loaded_ = nullptr;
  sc_core::sc_event* all_loaded_ = nullptr;
  unsigned hosts_ = 0;
  sc_core::sc_event* go_ = nullptr;
};

}  // namespace tp::tb
