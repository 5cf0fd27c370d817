#include "pod_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <utility>

namespace tp::golden {

namespace {

std::string slice_text(const Slice& s) {
  return fmt::format("[{}, {}) x [{}, {})", s.x0, uint64_t{s.x0} + s.w, s.y0, uint64_t{s.y0} + s.h);
}

// The chips' preset, with the pod's torus and link latency (the timing estimate reads them).
tp::Preset pod_preset(tp::Preset p, const PodTopology& t) {
  p.ici.torus_x = t.kx;
  p.ici.torus_y = t.ky;
  p.ici.link_latency = t.link_latency;
  return p;
}

std::vector<Slice> config_slices(const tp::PodConfig& c) {
  std::vector<Slice> out;
  for (const tp::PodSlice& s : c.slices) out.push_back(Slice{s.x0, s.y0, s.w, s.h});
  return out;
}

}  // namespace

PodModel::PodModel(const tp::Preset& preset, PodTopology topo, std::vector<Slice> slices)
    : preset_(pod_preset(preset, topo)), topo_(topo), slices_(std::move(slices)) {
  if (topo_.kx < 1 || topo_.kx > 32 || topo_.ky < 1 || topo_.ky > 32)
    throw std::invalid_argument(fmt::format("PodModel: torus {}x{}: each side must be 1..32", topo_.kx, topo_.ky));
  slice_of_.assign(size(), -1);
  for (std::size_t k = 0; k < slices_.size(); ++k) {
    const Slice& s = slices_[k];
    if (s.w == 0 || s.h == 0 || uint64_t{s.x0} + s.w > topo_.kx || uint64_t{s.y0} + s.h > topo_.ky)
      throw std::invalid_argument(fmt::format("PodModel: slice {} {} is empty or runs outside the {}x{} torus", k,
                                              slice_text(s), topo_.kx, topo_.ky));
    for (unsigned y = s.y0; y < s.y0 + s.h; ++y)
      for (unsigned x = s.x0; x < s.x0 + s.w; ++x) {
        int& owner = slice_of_[index(x, y)];
        if (owner >= 0)
          throw std::invalid_argument(fmt::format("PodModel: slice {} {} overlaps slice {} {} at chip ({}, {})", k,
                                                  slice_text(s), owner, slice_text(slices_[owner]), x, y));
        owner = static_cast<int>(k);
      }
  }
  chips_.reserve(size());
  for (unsigned i = 0; i < size(); ++i) {
    chips_.emplace_back(preset_);
    if (slice_of_[i] < 0) continue;
    const Slice& s = slices_[slice_of_[i]];
    const Coord c = coord(i);
    chips_.back().set_ici(IciRegs{topo_.kx, topo_.ky, c.x, c.y, s.x0, s.y0, s.w, s.h});  // pod mode when w * h > 1
  }
  loaded_.assign(size(), false);
  last_.assign(size(), ChipModel::Result{});
  sent_.assign(size(), 0);
}

void PodModel::model_contention(const FastIciFigures& f) {
  network_.emplace(Torus{topo_.kx, topo_.ky}, f);
  lag_.assign(size(), 0);
}

uint64_t PodModel::book(unsigned from, Coord src, Coord dst, uint64_t rows, uint64_t send_t, uint64_t arrive_t) {
  uint64_t& lag = lag_.at(from);
  uint64_t late = 0;
  const uint64_t arrive = network_->book(slices_.at(static_cast<std::size_t>(slice_of_.at(from))), src, dst, rows,
                                         send_t + lag, arrive_t + lag, &late);
  lag += late;
  return arrive;
}

namespace {

// A message's place in delivery order and what the network needs of it (distributed contention).
struct Booking {
  uint32_t from = 0;
  uint64_t seq = 0;
  Coord src, dst;
  uint64_t rows = 0, send_t = 0, arrive_t = 0;
};

}  // namespace

PodModel::PodModel(const tp::PodConfig& c)
    : PodModel(tp::load_preset(c.preset), PodTopology{c.torus_x, c.torus_y, c.link_latency}, config_slices(c)) {}

unsigned PodModel::index(unsigned x, unsigned y) const {
  if (x >= topo_.kx || y >= topo_.ky)
    throw std::out_of_range(
        fmt::format("PodModel: chip ({}, {}) is outside the {}x{} torus", x, y, topo_.kx, topo_.ky));
  return x + y * topo_.kx;
}

Coord PodModel::coord(unsigned i) const {
  if (i >= size()) throw std::out_of_range(fmt::format("PodModel: chip index {} >= {} chips", i, size()));
  return Coord{i % topo_.kx, i / topo_.kx};
}

std::optional<unsigned> PodModel::slice_index(unsigned x, unsigned y) const {
  const int s = slice_of_[index(x, y)];
  if (s < 0) return std::nullopt;
  return static_cast<unsigned>(s);
}

ChipModel& PodModel::chip(unsigned x, unsigned y) { return chips_[index(x, y)]; }
const ChipModel& PodModel::chip(unsigned x, unsigned y) const { return chips_[index(x, y)]; }

void PodModel::load(unsigned x, unsigned y, const isa::Program& p) {
  const unsigned i = index(x, y);
  if (slice_of_[i] < 0)
    throw std::invalid_argument(fmt::format("PodModel::load: chip ({}, {}) is in no slice (idle)", x, y));
  if (mine(i))
    chips_[i].load(p);
  else
    chips_[i].check_loadable(p);  // the owner loads it; every rank refuses a bad program alike
  loaded_[i] = true;
  last_[i] = ChipModel::Result{};
}

bool PodModel::loaded(unsigned x, unsigned y) const { return loaded_[index(x, y)]; }

void PodModel::distribute(std::shared_ptr<PodComm> comm) {
  if (std::find(loaded_.begin(), loaded_.end(), true) != loaded_.end())
    throw std::logic_error("PodModel::distribute: call it before any load()");
  comm_ = std::move(comm);
  owner_.clear();
  if (!comm_) return;
  std::vector<unsigned> active;
  for (unsigned i = 0; i < size(); ++i)
    if (slice_of_[i] >= 0) active.push_back(i);
  owner_.assign(size(), 0);
  const uint64_t ranks = comm_->ranks();
  for (std::size_t k = 0; k < active.size(); ++k) owner_[active[k]] = static_cast<unsigned>(k * ranks / active.size());
}

// A chip in pod mode sends through the pod (delivered after the round); one that is not (a 1x1
// slice) delivers to itself at once and can send nowhere else.
void PodModel::hook_senders() {
  for (unsigned i = 0; i < size(); ++i) {
    if (!chips_[i].pod_mode()) {
      chips_[i].set_ici_sender({});
      continue;
    }
    chips_[i].set_ici_sender([this, i](IciMessage m) {
      if (m.dst.x >= topo_.kx || m.dst.y >= topo_.ky)
        throw std::logic_error(fmt::format(
            "PodModel: chip ({}, {}) sent to chip ({}, {}) at pc {}, outside the {}x{} torus (its ICI registers)",
            m.src.x, m.src.y, m.dst.x, m.dst.y, m.pc, topo_.kx, topo_.ky));
      pending_.push_back(Pending{i, sent_[i]++, std::move(m)});
    });
  }
}

PodResult PodModel::run(uint64_t max_steps) {
  hook_senders();
  PodResult out;
  uint64_t budget = max_steps;
  bool watchdog = false;
  for (;;) {
    bool moved = false;
    for (unsigned i = 0; i < size() && !watchdog; ++i) {
      if (!loaded_[i] || last_[i].done || !mine(i)) continue;
      const uint64_t before = last_[i].steps;
      const ChipModel::Result r = chips_[i].run(budget);
      const uint64_t ran = r.steps - before;
      budget -= std::min(budget, ran);
      moved = moved || ran > 0 || r.done;
      last_[i] = r;
      if (!r.done && !r.waiting) watchdog = true;  // the budget ran out
    }
    ++out.rounds;
    std::vector<Pending> batch;
    batch.swap(pending_);
    bool all_finished = true;
    for (unsigned i = 0; i < size(); ++i) all_finished = all_finished && (!loaded_[i] || !mine(i) || last_[i].done);
    if (comm_) {
      // A message sent anywhere is delivered somewhere: the pod moved.
      const RoundState g = exchange_round(batch, {moved || !batch.empty(), all_finished, watchdog});
      moved = g.moved;
      all_finished = g.finished;
      watchdog = g.watchdog;
    } else if (network_) {
      std::vector<Pending*> order;  // booked in time order (booking order, docs/scale.md)
      for (Pending& p : batch) order.push_back(&p);
      std::stable_sort(order.begin(), order.end(),
                       [](const Pending* a, const Pending* b) { return a->msg.send_t < b->msg.send_t; });
      for (Pending* p : order)
        p->msg.arrive_t =
            book(p->from, p->msg.src, p->msg.dst, p->msg.words.size() / preset_.mxu.n, p->msg.send_t, p->msg.arrive_t);
    }
    // Deliver what this round sent, in send order (arrive_t on pod time; the receiver's model
    // takes it its lag earlier).
    for (Pending& p : batch) {
      const unsigned d = index(p.msg.dst.x, p.msg.dst.y);
      ChipModel& to = chips_[d];
      const uint64_t model_t = p.msg.arrive_t - (lag_.empty() ? 0 : std::min(p.msg.arrive_t, lag_[d]));
      to.deliver(p.msg.raddr, p.msg.words, p.msg.rsem, model_t);
      to.note_arrival(p.msg.src, model_t);
      latest_arrival_ = std::max(latest_arrival_, p.msg.arrive_t);
      ++out.messages;
      moved = true;
    }
    if (all_finished) {
      out.done = true;
      break;
    }
    if (watchdog) break;
    if (!moved) {
      out.deadlock = true;
      break;
    }
  }
  out.est_cycles.resize(size());
  for (unsigned i = 0; i < size(); ++i) out.est_cycles[i] = chips_[i].stats().est_cycles;  // 0 where it never ran
  if (comm_) gather_results(out);
  for (unsigned i = 0; i < size() && !lag_.empty(); ++i)
    if (out.est_cycles[i] != 0) out.est_cycles[i] += lag_[i];  // on pod time
  out.chips = last_;
  out.pod_est_cycles = latest_arrival_;
  for (unsigned i = 0; i < size(); ++i) {
    out.pod_est_cycles = std::max(out.pod_est_cycles, out.est_cycles[i]);
    out.steps += last_[i].steps;
    out.errors = out.errors || (loaded_[i] && last_[i].err != isa::Err::none);
  }
  out.report = report(out);
  return out;
}

PodModel::RoundState PodModel::exchange_round(std::vector<Pending>& batch, RoundState mine_state) {
  const unsigned ranks = comm_->ranks(), me = comm_->rank();
  std::vector<ByteWriter> to(ranks);
  for (ByteWriter& w : to) {
    w.put<uint8_t>(mine_state.moved);
    w.put<uint8_t>(mine_state.finished);
    w.put<uint8_t>(mine_state.watchdog);
    // Contention: every rank books every message, so each needs all of them (not their rows).
    w.put<uint64_t>(network_ ? batch.size() : 0);
    if (!network_) continue;
    for (const Pending& p : batch) {
      w.put<uint32_t>(p.from);
      w.put<uint64_t>(p.seq);
      for (const unsigned v : {p.msg.src.x, p.msg.src.y, p.msg.dst.x, p.msg.dst.y}) w.put<uint32_t>(v);
      w.put<uint64_t>(p.msg.words.size() / preset_.mxu.n);
      w.put<uint64_t>(p.msg.send_t);
      w.put<uint64_t>(p.msg.arrive_t);
    }
  }
  std::vector<Pending> local;
  for (Pending& p : batch) {
    const unsigned r = owner(index(p.msg.dst.x, p.msg.dst.y));
    if (r == me) {
      local.push_back(std::move(p));
      continue;
    }
    ByteWriter& w = to[r];
    w.put<uint32_t>(p.from);
    w.put<uint64_t>(p.seq);
    for (const unsigned v : {p.msg.src.x, p.msg.src.y, p.msg.dst.x, p.msg.dst.y, p.msg.rsem}) w.put<uint32_t>(v);
    w.put<uint32_t>(p.msg.raddr);
    w.put<uint32_t>(p.msg.pc);
    w.put<uint64_t>(p.msg.send_t);
    w.put<uint64_t>(p.msg.sent_t);
    w.put<uint64_t>(p.msg.arrive_t);
    w.put_span(std::span<const uint32_t>(p.msg.words));
  }
  std::vector<Bytes> out(ranks);
  for (unsigned r = 0; r < ranks; ++r) out[r] = std::move(to[r].bytes());
  const std::vector<Bytes> in = comm_->exchange(out);
  RoundState g{false, true, false};
  std::vector<Booking> bookings;
  for (unsigned r = 0; r < ranks; ++r) {
    ByteReader rd(in[r]);
    g.moved = rd.get<uint8_t>() || g.moved;
    g.finished = rd.get<uint8_t>() && g.finished;
    g.watchdog = rd.get<uint8_t>() || g.watchdog;
    for (uint64_t k = rd.get<uint64_t>(); k > 0; --k) {
      Booking b;
      b.from = rd.get<uint32_t>();
      b.seq = rd.get<uint64_t>();
      b.src.x = rd.get<uint32_t>();
      b.src.y = rd.get<uint32_t>();
      b.dst.x = rd.get<uint32_t>();
      b.dst.y = rd.get<uint32_t>();
      b.rows = rd.get<uint64_t>();
      b.send_t = rd.get<uint64_t>();
      b.arrive_t = rd.get<uint64_t>();
      bookings.push_back(b);
    }
    if (r == me) continue;  // its own messages stayed in `local`
    while (!rd.done()) {
      Pending p;
      p.from = rd.get<uint32_t>();
      p.seq = rd.get<uint64_t>();
      p.msg.src.x = rd.get<uint32_t>();
      p.msg.src.y = rd.get<uint32_t>();
      p.msg.dst.x = rd.get<uint32_t>();
      p.msg.dst.y = rd.get<uint32_t>();
      p.msg.rsem = rd.get<uint32_t>();
      p.msg.raddr = rd.get<uint32_t>();
      p.msg.pc = rd.get<uint32_t>();
      p.msg.send_t = rd.get<uint64_t>();
      p.msg.sent_t = rd.get<uint64_t>();
      p.msg.arrive_t = rd.get<uint64_t>();
      p.msg.words = rd.get_vector<uint32_t>();
      local.push_back(std::move(p));
    }
  }
  // One process delivers in send order: chips run in index order, each sends in issue order.
  const auto by_sender = [](const auto& a, const auto& b) { return a.from < b.from; };
  std::stable_sort(local.begin(), local.end(), by_sender);
  if (network_) {
    // Every rank books every message in that order; each keeps the arrivals of its own.
    std::stable_sort(bookings.begin(), bookings.end(), by_sender);
    std::stable_sort(bookings.begin(), bookings.end(),
                     [](const Booking& a, const Booking& b) { return a.send_t < b.send_t; });
    std::map<std::pair<uint32_t, uint64_t>, uint64_t> arrival;
    for (const Booking& b : bookings)
      arrival[{b.from, b.seq}] = book(b.from, b.src, b.dst, b.rows, b.send_t, b.arrive_t);
    for (Pending& p : local) p.msg.arrive_t = arrival.at({p.from, p.seq});
  }
  batch = std::move(local);
  return g;
}

void PodModel::gather_results(PodResult& out) {
  ByteWriter w;
  w.put<uint64_t>(latest_arrival_);
  w.put<uint64_t>(out.messages);
  for (unsigned i = 0; i < size(); ++i) {
    if (!loaded_[i] || !mine(i)) continue;
    const ChipModel::Result& r = last_[i];
    w.put<uint32_t>(i);
    w.put<uint32_t>(static_cast<uint32_t>(r.err));
    w.put<uint32_t>(r.pc);
    w.put<uint8_t>(r.done);
    w.put<uint64_t>(r.steps);
    w.put<uint8_t>(r.waiting);
    w.put<uint32_t>(r.wait_pc);
    w.put<uint32_t>(r.wait_sem);
    w.put<uint64_t>(out.est_cycles[i]);
  }
  const auto all = comm_->all_gather(w.bytes());
  uint64_t messages = 0;
  for (unsigned r = 0; r < all.size(); ++r) {
    ByteReader rd(all[r]);
    latest_arrival_ = std::max(latest_arrival_, rd.get<uint64_t>());
    messages += rd.get<uint64_t>();
    while (!rd.done()) {
      const unsigned i = rd.get<uint32_t>();
      if (i >= size()) throw std::runtime_error("PodModel: a rank's results name a chip outside the pod");
      ChipModel::Result& c = last_[i];
      c.err = static_cast<isa::Err>(rd.get<uint32_t>());
      c.pc = rd.get<uint32_t>();
      c.done = rd.get<uint8_t>();
      c.steps = rd.get<uint64_t>();
      c.waiting = rd.get<uint8_t>();
      c.wait_pc = rd.get<uint32_t>();
      c.wait_sem = rd.get<uint32_t>();
      out.est_cycles[i] = rd.get<uint64_t>();
    }
  }
  out.messages = messages;
}

std::string PodModel::report(const PodResult& r) const {
  std::string s = fmt::format("pod {}x{} (preset '{}'): ", topo_.kx, topo_.ky, preset_.name);
  if (r.deadlock)
    s += "deadlock: chips wait on semaphores, none can move and no message is in flight";
  else if (r.done && r.errors)
    s += "finished, with errors";
  else if (r.done)
    s += "done";
  else
    s += "stopped by the watchdog (max_steps instructions)";
  s += fmt::format(", est {} cycles\n", r.pod_est_cycles);
  for (unsigned i = 0; i < size(); ++i) {
    if (!loaded_[i]) continue;
    const Coord c = coord(i);
    const ChipModel::Result& x = r.chips[i];
    s += fmt::format("  chip ({}, {}): ", c.x, c.y);
    if (x.err != isa::Err::none)
      s += fmt::format("error {} at pc {}", isa::err_name(x.err), x.pc);
    else if (x.done)
      s += fmt::format("done at pc {}", x.pc);
    else if (x.waiting)
      s += fmt::format("waits at pc {} on semaphore {}", x.wait_pc, x.wait_sem);
    else
      s += fmt::format("stopped at pc {}", x.pc);
    s += fmt::format(", {} steps, est {} cycles\n", x.steps, r.est_cycles[i]);
  }
  return s;
}

}  // namespace tp::golden
