// A torus of Verilated ICI routers wired in C++: links with latency and optional bit flips,
// network interfaces that inject and reassemble packets, and a scoreboard. A router with several
// local ports (Locals) gets a packet on local port (first hop) mod Locals, as the chip's ICI
// unit sends, and is drained on every ejection port.
//
// Every packet carries its id and a data pattern derived from it; at delivery the scoreboard
// checks: delivered once, at its destination, intact (every flit, the length), in order per
// (source, destination, lane), with the hop count of the golden route and on the lane of its
// last hop (route_vcs). A packet aimed outside its source's slice must be refused at injection
// and never delivered. A watchdog throws when packets are outstanding and nothing is delivered or
// refused for too long.
#pragma once

#include <fmt/format.h>
#include <verilated.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "config.h"
#include "coverage.h"
#include "ici_model.h"
#include "sim_util.h"  // get_bits, set_bits, flip_bit, FlitLayout

namespace tp::tb {

using golden::Coord;
using golden::Slice;
using golden::Torus;

struct NetOptions {
  Torus torus{4, 4};
  std::vector<Slice> slices;     // empty: the whole torus is one slice; else one per node (x + y*kx)
  double flip_fwd = 0.0;         // probability of a bit flip per flit on a faulty link
  double flip_rev = 0.0;         // ... per reverse word
  double drop_fwd = 0.0;         // probability that a flit on a faulty link is lost altogether
  double faulty_fraction = 1.0;  // fraction of links that flip bits (chosen at random) ...
  std::vector<std::pair<Coord, unsigned>> faulty_links;  // ... or exactly these (node, port 0..3)
  // The RTL's own hook: fault_rate_i of link (node, port), in 1/65536 per sent word.
  struct RtlFault {
    Coord at;
    unsigned port;
    uint16_t rate;
  };
  std::vector<RtlFault> rtl_faults;
  double ej_stall = 0.0;  // probability an ejection port is not ready in a cycle
  uint64_t seed = 1;
  uint64_t watchdog = 5000;  // cycles without progress that count as a deadlock
};

struct PacketStats {
  uint32_t id;
  Coord src, dst;
  unsigned lane, len;
  uint64_t created, delivered = 0;
  bool expect_refusal = false, refused = false, done = false;
};

template <class Router>
class IciNetwork {
 public:
  IciNetwork(const IciConfig& cfg, NetOptions opt)
      : cfg_(cfg), opt_(std::move(opt)), rng_(opt_.seed), ctx_(std::make_unique<VerilatedContext>()) {
    const unsigned kx = opt_.torus.kx, ky = opt_.torus.ky;
    if (kx < 1 || ky < 1 || kx > 32 || ky > 32) throw std::invalid_argument("IciNetwork: torus must be 1..32 per side");
    if (!opt_.slices.empty() && opt_.slices.size() != std::size_t{kx} * ky)
      throw std::invalid_argument("IciNetwork: one slice per node, or none");
    layout_ = {cfg.vcs > 2 ? static_cast<unsigned>(std::bit_width(cfg.vcs - 1)) : 1u, cfg.flit_bits};
    if (cfg.local_ports != kLocals)
      throw std::invalid_argument(
          fmt::format("IciNetwork: the config has {} local ports, the router model {}", cfg.local_ports, kLocals));
    ctx_->randReset(kRandReset);
    ctx_->randSeed(static_cast<int>(opt_.seed % 0x7fffffff) + 1);  // never 0: Verilator's 'random'
    const unsigned n = kx * ky;
    nodes_.resize(n);
    for (unsigned i = 0; i < n; ++i) {
      Node& nd = nodes_[i];
      nd.r = std::make_unique<Router>(ctx_.get(), fmt::format("r{}_{}", i % kx, i / kx).c_str());
      nd.at = {i % kx, i / kx};
      nd.slice = slice_of(i);
      for (unsigned p = 0; p < 4; ++p) {
        nd.fwd[p].assign(cfg.link_latency, Wire<Link>{});
        nd.rev[p].assign(cfg.link_latency, Wire<Rev>{});
        nd.faulty[p] = opt_.faulty_links.empty()
                           ? std::bernoulli_distribution(opt_.faulty_fraction)(rng_)
                           : std::any_of(opt_.faulty_links.begin(), opt_.faulty_links.end(),
                                         [&](const auto& l) { return l.first == nd.at && l.second == p; });
      }
      Router& r = *nd.r;
      const auto u8 = [](unsigned v) { return static_cast<uint8_t>(v); };  // 5- and 6-bit ports
      r.kx_i = u8(kx);
      r.ky_i = u8(ky);
      r.my_x_i = u8(nd.at.x);
      r.my_y_i = u8(nd.at.y);
      r.slice_x0_i = u8(nd.slice.x0);
      r.slice_y0_i = u8(nd.slice.y0);
      r.slice_w_i = u8(nd.slice.w);
      r.slice_h_i = u8(nd.slice.h);
      r.rst_ni = 0;
      r.clk_i = 0;
      for (unsigned j = 0; j < kLocals; ++j) {
        r.inj_valid_i[j] = 0;
        r.ej_ready_i[j] = 0;
      }
      nd.ports.resize(kLocals);
      nd.rx.resize(std::size_t{kLocals} * cfg.vcs);
      for (unsigned p = 0; p < 4; ++p) {
        r.rx_valid_i[p] = 0;
        r.fault_rate_i[p] = 0;
      }
      for (const auto& f : opt_.rtl_faults)
        if (f.at == nd.at) r.fault_rate_i[f.port] = f.rate;
    }
    for (int c = 0; c < 4; ++c) clock();
    // In reset every receiver presents its reset reverse word: put it on the wires (and into the
    // senders' inputs) before reset ends, so no sender ever sees an undefined word.
    for (unsigned i = 0; i < n; ++i)
      for (unsigned p = 0; p < 4; ++p)
        nodes_[i].rev[p].assign(cfg.link_latency, Wire<Rev>{true, nodes_[i].r->rv_out_o[p]});
    for (unsigned i = 0; i < n; ++i)
      for (unsigned p = 0; p < 4; ++p) nodes_[i].r->rv_in_i[p] = nodes_[neighbour(i, p)].rev[opposite(p)].front().data;
    clock();
    for (auto& nd : nodes_) nd.r->rst_ni = 1;
    clock();
    cycle_ = 0;
  }

  ~IciNetwork() {
    for (auto& nd : nodes_) nd.r->final();
    write_coverage(*ctx_);
  }

  const NetOptions& options() const { return opt_; }
  unsigned nodes() const { return static_cast<unsigned>(nodes_.size()); }
  uint64_t cycle() const { return cycle_; }
  Router& router(Coord c) { return *nodes_[index(c)].r; }
  const Slice& slice(Coord c) const { return nodes_[index(c)].slice; }

  // Queue a packet of `len` flits at src's network interface; returns its id.
  uint32_t send(Coord src, Coord dst, unsigned lane, unsigned len) {
    if (len == 0) throw std::invalid_argument("IciNetwork::send: empty packet");
    if (lane >= cfg_.vcs / 2)
      throw std::invalid_argument(fmt::format("IciNetwork::send: lane {} >= {}", lane, cfg_.vcs / 2));
    const auto id = static_cast<uint32_t>(packets_.size());
    PacketStats p{id, src, dst, lane, len, cycle_};
    p.expect_refusal = !golden::in_slice(dst, slice(src));
    if (!p.expect_refusal) order_[key(p)].push_back(id);
    packets_.push_back(p);
    nodes_[index(src)].ports[local_port(src, dst)].queue.push_back(id);
    ++outstanding_;
    return id;
  }

  // One clock cycle of the whole network.
  void step() {
    // Wires and injection into every router.
    for (unsigned i = 0; i < nodes_.size(); ++i) {
      Node& nd = nodes_[i];
      Router& r = *nd.r;
      for (unsigned p = 0; p < 4; ++p) {
        Node& up = nodes_[neighbour(i, p)];
        const Wire<Link>& w = up.fwd[opposite(p)].front();
        r.rx_valid_i[p] = w.valid;
        r.rx_data_i[p] = w.data;
        r.rv_in_i[p] = nodes_[neighbour(i, p)].rev[opposite(p)].front().data;
      }
      for (unsigned j = 0; j < kLocals; ++j) {
        Port& lp = nd.ports[j];
        if (!lp.holding && !lp.queue.empty()) {
          load_flit(r.inj_flit_i[j], lp);
          lp.holding = true;
        }
        r.inj_valid_i[j] = lp.holding;
        r.ej_ready_i[j] = !(opt_.ej_stall > 0 && std::bernoulli_distribution(opt_.ej_stall)(rng_));
      }
    }
    for (auto& nd : nodes_) {
      nd.r->clk_i = 0;
      nd.r->eval();
    }
    bool progress = false;
    for (unsigned i = 0; i < nodes_.size(); ++i) {
      Node& nd = nodes_[i];
      Router& r = *nd.r;
      for (unsigned j = 0; j < kLocals; ++j) {
        Port& lp = nd.ports[j];
        if (r.refused_o[j]) progress |= refuse(nd, lp);
        if (r.ej_valid_o[j] && r.ej_ready_i[j]) progress |= eject(nd, j, r.ej_flit_o[j]);
        if (lp.holding && r.inj_ready_o[j]) {
          lp.holding = false;
          if (++lp.flit_idx == packets_[lp.queue.front()].len) {
            lp.flit_idx = 0;
            lp.queue.pop_front();
          }
        }
      }
    }
    for (auto& nd : nodes_) {
      nd.r->clk_i = 1;
      nd.r->eval();
    }
    for (auto& nd : nodes_) {
      Router& r = *nd.r;
      for (unsigned p = 0; p < 4; ++p) {
        Wire<Link> w{static_cast<bool>(r.tx_valid_o[p]), r.tx_data_o[p]};
        if (w.valid && nd.faulty[p] && opt_.flip_fwd > 0 && std::bernoulli_distribution(opt_.flip_fwd)(rng_)) {
          flip_bit(w.data, static_cast<unsigned>(rng_() % link_bits()));
          ++flips_;
        }
        if (w.valid && nd.faulty[p] && opt_.drop_fwd > 0 && std::bernoulli_distribution(opt_.drop_fwd)(rng_)) {
          w.valid = false;  // lost: the receiver sees a gap, or (the last of a burst) nothing at all
          ++drops_;
        }
        nd.fwd[p].pop_front();
        nd.fwd[p].push_back(w);
        Wire<Rev> v{true, r.rv_out_o[p]};
        if (nd.faulty[p] && opt_.flip_rev > 0 && std::bernoulli_distribution(opt_.flip_rev)(rng_)) {
          flip_bit(v.data, static_cast<unsigned>(rng_() % rev_bits()));
          ++flips_;
        }
        nd.rev[p].pop_front();
        nd.rev[p].push_back(v);
      }
    }
    ++cycle_;
    if (progress || outstanding_ == 0)
      quiet_ = 0;
    else if (++quiet_ > opt_.watchdog)
      throw std::runtime_error(fmt::format(
          "ICI watchdog: {} packets outstanding and none delivered or refused for {} cycles (cycle {}): deadlock "
          "or lost packets",
          outstanding_, opt_.watchdog, cycle_));
  }

  // Run until every queued packet is delivered or refused. Throws after `limit` cycles.
  void drain(uint64_t limit = 200000) {
    const uint64_t end = cycle_ + limit;
    while (outstanding_ > 0) {
      if (cycle_ >= end)
        throw std::runtime_error(fmt::format("ICI: {} packets not drained after {} cycles", outstanding_, limit));
      step();
    }
  }

  uint64_t outstanding() const { return outstanding_; }
  const std::vector<PacketStats>& packets() const { return packets_; }
  const std::vector<std::string>& errors() const { return errors_; }
  uint64_t flips() const { return flips_; }
  uint64_t flits_ejected() const { return flits_ejected_; }
  uint64_t drops() const { return drops_; }  // flits the links lost (drop_fwd)
  // Flits ejected that crossed at least one link (packets a node sends to itself excluded).
  uint64_t network_flits_ejected() const { return network_flits_; }

  // Every router's per-port flit counters against the golden routes of the delivered packets:
  // this checks each packet's path (direction of every hop, ties, the no-wrap rule) and its
  // ejection port (the arrival port mod Locals), not just its length. Returns the mismatches found.
  std::vector<std::string> check_paths() {
    const unsigned kx = opt_.torus.kx;
    std::vector<std::array<uint64_t, 4 + kLocals>> want(nodes_.size(), std::array<uint64_t, 4 + kLocals>{});
    for (const auto& p : packets_) {
      if (!p.done || p.refused) continue;
      Coord here = p.src;
      const auto ports = golden::route_ports(opt_.torus, slice(p.src), p.src, p.dst);
      const auto nodes = golden::route(opt_.torus, slice(p.src), p.src, p.dst);
      for (std::size_t h = 0; h < ports.size(); ++h) {
        want[index(nodes[h])][ports[h]] += p.len;
        here = nodes[h + 1];
      }
      want[index(here)][4 + ejection_port(p)] += p.len;
    }
    std::vector<std::string> out;
    for (unsigned i = 0; i < nodes_.size(); ++i)
      for (unsigned port = 0; port < 4 + kLocals; ++port)
        if (nodes_[i].r->cnt_flits_o[port] != want[i][port])
          out.push_back(fmt::format("router ({},{}) port {}: {} flits, the golden routes give {}", i % kx, i / kx, port,
                                    nodes_[i].r->cnt_flits_o[port], want[i][port]));
    return out;
  }

  // Sum of a per-port counter over all routers, e.g. sum([](Router& r, unsigned p) { return r.cnt_retx_o[p]; }).
  static constexpr unsigned locals() { return kLocals; }

  template <class F>
  uint64_t sum(F f, unsigned ports = 4) {
    uint64_t s = 0;
    for (auto& nd : nodes_)
      for (unsigned p = 0; p < ports; ++p) s += f(*nd.r, p);
    return s;
  }

 private:
  using Link = std::decay_t<decltype(std::declval<Router&>().tx_data_o[0])>;
  using Rev = std::decay_t<decltype(std::declval<Router&>().rv_out_o[0])>;
  static constexpr unsigned kLocals = vl_count<decltype(std::declval<Router&>().inj_valid_i)>;
  template <class T>
  struct Wire {
    bool valid = false;
    T data{};
  };
  struct Port {
    std::deque<uint32_t> queue;  // packets waiting at this local port of the network interface
    unsigned flit_idx = 0;       // next flit of queue.front()
    bool holding = false;        // inj_valid_i is up with that flit
  };
  struct Node {
    std::unique_ptr<Router> r;
    Coord at;
    Slice slice;
    std::array<std::deque<Wire<Link>>, 4> fwd;  // what this router sends on port p, in flight
    std::array<std::deque<Wire<Rev>>, 4> rev;   // reverse words for the neighbour on port p
    std::array<bool, 4> faulty{};
    std::vector<Port> ports;  // the network interface, per local port
    struct Rx {
      bool busy = false;
      uint32_t id = 0;
      unsigned idx = 0;
      bool ok = true;
    };
    std::vector<Rx> rx;  // reassembly per (ejection port, VC)
  };

  static unsigned opposite(unsigned p) { return p ^ 1u; }  // N<->S, E<->W
  // The local port a packet is injected on and ejected on (golden::injection_port, ejection_port).
  unsigned local_port(Coord src, Coord dst) const {
    return golden::injection_port(opt_.torus, slice(src), src, dst, kLocals);
  }
  unsigned ejection_port(const PacketStats& p) const {
    return golden::ejection_port(opt_.torus, slice(p.src), p.src, p.dst, kLocals);
  }
  unsigned index(Coord c) const { return c.x + c.y * opt_.torus.kx; }
  // The node on the other end of port p of node i.
  unsigned neighbour(unsigned i, unsigned p) const {
    const unsigned kx = opt_.torus.kx, ky = opt_.torus.ky;
    unsigned x = i % kx, y = i / kx;
    switch (p) {
      case 0:
        y = (y + 1) % ky;
        break;
      case 1:
        y = (y + ky - 1) % ky;
        break;
      case 2:
        x = (x + 1) % kx;
        break;
      default:
        x = (x + kx - 1) % kx;
        break;
    }
    return x + y * kx;
  }
  Slice slice_of(unsigned i) const {
    if (opt_.slices.empty()) return Slice{0, 0, opt_.torus.kx, opt_.torus.ky};
    return opt_.slices[i];
  }
  unsigned link_bits() const { return layout_.link_bits(); }
  unsigned rev_bits() const { return layout_.rev_bits(cfg_.vcs); }
  uint64_t key(const PacketStats& p) const { return ((uint64_t{index(p.src)} * 1024 + index(p.dst)) << 8) | p.lane; }

  // Data word k of flit f of packet id: a pattern the receiver can recompute.
  static uint64_t pattern(uint32_t id, unsigned f, unsigned k) {
    uint64_t z = (uint64_t{id} << 32) ^ (uint64_t{f} << 16) ^ k ^ 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  template <class T>
  void fill_data(T& w, uint32_t id, unsigned f) const {
    for (unsigned b = 0, k = 0; b < cfg_.flit_bits; b += 32, ++k) {
      const unsigned width = std::min(32u, cfg_.flit_bits - b);
      const uint64_t v = (f == 0 && k == 0) ? id : pattern(id, f, k);
      set_bits(w, layout_.data() + b, width, v);
    }
  }

  template <class T>
  void load_flit(T& w, const Port& lp) {
    const PacketStats& p = packets_[lp.queue.front()];
    w = {};
    const unsigned f = lp.flit_idx;
    set_bits(w, 0, 1, f == 0);
    set_bits(w, 1, 1, f + 1 == p.len);
    set_bits(w, layout_.vc(), layout_.vw, p.lane);
    set_bits(w, layout_.dst_x(), isa::hw::ici::kCoordBits, p.dst.x);
    set_bits(w, layout_.dst_y(), isa::hw::ici::kCoordBits, p.dst.y);
    set_bits(w, layout_.src_x(), isa::hw::ici::kCoordBits, p.src.x);
    set_bits(w, layout_.src_y(), isa::hw::ici::kCoordBits, p.src.y);
    set_bits(w, layout_.hops(), 7, 0);
    fill_data(w, p.id, f);
  }

  void error(std::string msg) {
    if (errors_.size() < 20) errors_.push_back(fmt::format("cycle {}: {}", cycle_, std::move(msg)));
  }

  bool refuse(Node& nd, const Port& lp) {
    // The packet refused is the one whose head is leaving the injection FIFO: the oldest
    // packet of this local port not yet refused or delivered whose destination is outside the slice.
    const unsigned j = static_cast<unsigned>(&lp - nd.ports.data());
    for (auto& p : packets_) {
      if (p.src == nd.at && p.expect_refusal && !p.refused && local_port(p.src, p.dst) == j) {
        p.refused = p.done = true;
        --outstanding_;
        return true;
      }
    }
    error(fmt::format("node ({},{}) refused a packet that was inside its slice", nd.at.x, nd.at.y));
    return true;
  }

  template <class T>
  bool eject(Node& nd, unsigned port, const T& w) {
    ++flits_ejected_;
    const bool head = get_bits(w, 0, 1), tail = get_bits(w, 1, 1);
    const auto vc = static_cast<unsigned>(get_bits(w, layout_.vc(), layout_.vw));
    auto& rx = nd.rx[port * cfg_.vcs + vc];
    if (head) {
      if (rx.busy) error(fmt::format("node ({},{}) VC {}: head flit inside packet {}", nd.at.x, nd.at.y, vc, rx.id));
      rx = {true, static_cast<uint32_t>(get_bits(w, layout_.data(), 32)), 0, true};
      if (rx.id >= packets_.size()) {
        error(fmt::format("node ({},{}): unknown packet id {}", nd.at.x, nd.at.y, rx.id));
        rx.busy = false;
        return true;
      }
      const PacketStats& p = packets_[rx.id];
      const Coord src{static_cast<unsigned>(get_bits(w, layout_.src_x(), 5)),
                      static_cast<unsigned>(get_bits(w, layout_.src_y(), 5))};
      if (!(p.dst == nd.at))
        error(fmt::format("packet {} for ({},{}) delivered at ({},{})", p.id, p.dst.x, p.dst.y, nd.at.x, nd.at.y));
      if (!(src == p.src))
        error(fmt::format("packet {}: source field ({},{}) != ({},{})", p.id, src.x, src.y, p.src.x, p.src.y));
      if (port != ejection_port(p))
        error(fmt::format("packet {} ({},{})->({},{}) ejected on local port {}, expected {} (its arrival port mod {})",
                          p.id, p.src.x, p.src.y, p.dst.x, p.dst.y, port, ejection_port(p), kLocals));
      // The golden route's VCs, one per hop: its hop count, and the ejection VC, which is the
      // lane of the last hop (the injection lane without a hop) in the class of its dimension.
      const auto vcs = golden::route_vcs(opt_.torus, slice(p.src), p.src, p.dst, cfg_.vcs, p.lane);
      const auto hops = static_cast<unsigned>(get_bits(w, layout_.hops(), 7));
      const auto want = static_cast<unsigned>(vcs.size());
      if (hops != want)
        error(fmt::format("packet {} ({},{})->({},{}) took {} hops, golden route {}", p.id, p.src.x, p.src.y, p.dst.x,
                          p.dst.y, hops, want));
      // Ejected in the class of the arrival dimension: 1 after a hop on the Y ring (docs/ici.md).
      const unsigned want_vc =
          vcs.empty() ? p.lane : vcs.back() % (cfg_.vcs / 2) + (p.src.y != p.dst.y ? cfg_.vcs / 2 : 0);
      if (vc != want_vc)
        error(
            fmt::format("packet {} ({},{})->({},{}) lane {} ejected on VC {}, expected {} (the golden route's last "
                        "lane, in the class of its dimension)",
                        p.id, p.src.x, p.src.y, p.dst.x, p.dst.y, p.lane, vc, want_vc));
    } else if (!rx.busy) {
      error(fmt::format("node ({},{}) VC {}: body flit without a head", nd.at.x, nd.at.y, vc));
      return true;
    }
    const PacketStats& p = packets_[rx.id];
    if (!(p.src == p.dst)) ++network_flits_;
    for (unsigned b = 0, k = 0; b < cfg_.flit_bits; b += 32, ++k) {
      const unsigned width = std::min(32u, cfg_.flit_bits - b);
      const uint64_t mask = width == 64 ? ~0ull : ((1ull << width) - 1);
      const uint64_t want = ((rx.idx == 0 && k == 0) ? p.id : pattern(p.id, rx.idx, k)) & mask;
      if (get_bits(w, layout_.data() + b, width) != want) rx.ok = false;
    }
    ++rx.idx;
    if (!tail) return true;
    rx.busy = false;
    PacketStats& q = packets_[rx.id];
    if (!rx.ok) error(fmt::format("packet {}: payload corrupted", q.id));
    if (rx.idx != q.len) error(fmt::format("packet {}: {} flits delivered, {} sent", q.id, rx.idx, q.len));
    if (q.done) {
      error(fmt::format("packet {} delivered twice (or after a refusal)", q.id));
      return true;
    }
    auto& ord = order_[key(q)];
    if (ord.empty() || ord.front() != q.id)
      error(fmt::format("packet {} ({},{})->({},{}) lane {} out of order", q.id, q.src.x, q.src.y, q.dst.x, q.dst.y,
                        q.lane));
    else
      ord.pop_front();
    q.done = true;
    q.delivered = cycle_;
    --outstanding_;
    return true;
  }

  IciConfig cfg_;
  NetOptions opt_;
  FlitLayout layout_{};
  std::mt19937_64 rng_;
  std::unique_ptr<VerilatedContext> ctx_;
  std::vector<Node> nodes_;
  std::vector<PacketStats> packets_;
  std::map<uint64_t, std::deque<uint32_t>> order_;
  std::vector<std::string> errors_;
  uint64_t cycle_ = 0, quiet_ = 0, outstanding_ = 0, flips_ = 0, drops_ = 0, flits_ejected_ = 0, network_flits_ = 0;

  void clock() {
    for (auto& nd : nodes_) {
      nd.r->clk_i = 0;
      nd.r->eval();
    }
    for (auto& nd : nodes_) {
      nd.r->clk_i = 1;
      nd.r->eval();
    }
  }
};

}  // namespace tp::tb
