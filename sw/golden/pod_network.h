// The fast pod's network (docs/scale.md, "Contention"): the torus's directed links as calendars
// of the cycles their flits use, so that transfers sharing a link take turns.
//
// A transfer of F flits from src to dst follows the router's route (ici_model.h). Its sender's
// timing model gave it a span [send_t, sent_t) (send_lead + S cycles on an idle network, S the
// stream's cycles for F flits, FastIciFigures::stream_cycles: F, or more where a VC's credits
// limit it) and an arrival time for an idle network. Then, as the RTL's wormhole routers do:
// - its sender's engine (one per first hop: the presets' four local ports) starts it at send_t
//   + send_lead, or later when the engine's previous transfer's tail had not left the first link;
// - its head takes each link's VC (route_vcs: the sender's lane, the dateline class) at the
//   first gap of S cycles in that VC's calendar at or after it reached the link (the head left
//   the previous link hop_delay before);
// - its F flits take the link's earliest free cycles from the head on, a flit a cycle, in the
//   gaps other transfers left (the VCs share the link's cycles);
// - its tail leaves each link S after the head, or later: after its last flit crossed the link,
//   and no sooner than hop_delay + credit_flits before the tail left the next link (a VC
//   buffer's worth waits in the next router), so a transfer slowed on a link further on, by
//   another's VC or by the flits of transfers on other VCs, holds the links behind it and its
//   sender's engine; the VC is held from head to tail;
// - the arrival moves later by as much as its tail left the last link later than on an idle
//   network. Never earlier: on an idle network the arrival is the timing model's.
// The sender's own timing does not see these delays (its ici.send completes as on an idle
// network); the pod (PodModel::model_contention) lets the whole chip fall behind its model by
// the most its transfers were late.
//
// Transfers are booked in the order the pod hands them over: its rounds, and in a round by send
// time (then sender index and send order), so that within a round no sender's transfers come
// first only for its index (a 3x3 all-to-all, one round, went from 7% slow to 4% fast so). Across
// rounds that is not time order; the calendars fill gaps, so a later-booked transfer that is
// earlier in time still finds the cycles an earlier booking left. The same order on every rank
// of a distributed pod gives the same bookings.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "calendar.h"
#include "chip_timing.h"
#include "ici_model.h"

namespace tp::golden {

class PodNetwork {
 public:
  // The fast model's hop delay (a flit on one link to the same flit on the next) and flit counts.
  PodNetwork(Torus t, const FastIciFigures& f)
      : t_(t),
        f_(f),
        links_(4ull * t.kx * t.ky),
        vc_hold_(f.vcs >= 2 ? 4ull * t.kx * t.ky * f.vcs : 0),
        engines_(4ull * t.kx * t.ky) {}

  // Books a transfer of `rows` rows and returns its arrival: arrive_t, or later if the links it
  // crosses were busy. With `late`: how much later than on an idle network its tail left the
  // first link (the sender's ICI unit held up so long: PodModel's lag).
  uint64_t book(const Slice& s, Coord src, Coord dst, uint64_t rows, uint64_t send_t, uint64_t arrive_t,
                uint64_t* late = nullptr) {
    if (late) *late = 0;
    if (src == dst || rows == 0) return arrive_t;
    const std::vector<Coord> nodes = route(t_, s, src, dst);
    const std::vector<unsigned> ports = route_ports(t_, s, src, dst);
    const uint64_t f = f_.flits(rows), span = f_.stream_cycles(f);
    std::vector<std::size_t> links(ports.size());
    for (std::size_t i = 0; i < ports.size(); ++i) links[i] = 4ull * (nodes[i].x + nodes[i].y * t_.kx) + ports[i];
    // Wormhole: the transfer holds its VC on each link from its head to its tail. Its head takes
    // each link's VC at the first gap after it reached the link; its tail leaves a link no sooner
    // than the stream's span after its head, nor before its last flit crossed it (the flits share
    // the link's cycles with other VCs' transfers), nor sooner than the buffer of credit_flits
    // flits lets it before the tail left the next link (a transfer held up downstream, by a VC or
    // by the link's cycles, holds the links behind it and, through the first link, its sender).
    std::vector<uint64_t> head(ports.size()), tail(ports.size());
    std::vector<unsigned> vcs;
    if (!vc_hold_.empty()) vcs = route_vcs(t_, s, src, dst, f_.vcs, (src.x + src.y) % (f_.vcs / 2), f_.class_choice);
    // The sender's engine (one per first hop) sends its transfers in issue order: one no sooner
    // than the previous one's tail left the first link (a transfer booked after one that its
    // engine sent later, which a chip's issue order never gives, is not held back).
    Engine& engine = engines_[links[0]];  // the first link's index: the source and its first hop's port
    uint64_t from = (send_t >= engine.send_t ? std::max(send_t, engine.tail) : send_t) + f_.send_lead;
    for (std::size_t i = 0; i < ports.size(); ++i) {
      head[i] = vcs.empty() ? from : vc_hold_[links[i] * f_.vcs + vcs[i]].first_fit(from, span);
      from = head[i] + f_.hop_delay;
    }
    // The flits on each link, in the gaps other transfers left, from the head on: the tail leaves
    // link i when its last flit has crossed it, no sooner than a hop after it crossed the link
    // before, nor than the stream's span after its first (so at least head[i] + span).
    for (std::size_t i = 0; i < ports.size(); ++i) {
      const auto [first, last] = links_[links[i]].book(head[i], f, 1);
      tail[i] = std::max({i == 0 ? last : std::max(last, tail[i - 1] + f_.hop_delay), first + span});
    }
    // Then back from the last link: the buffer behind a held tail.
    for (std::size_t i = ports.size(); i-- > 0;) {
      if (i + 1 < ports.size())
        tail[i] = std::max(tail[i], tail[i + 1] - std::min<uint64_t>(tail[i + 1], f_.hop_delay + f_.credit_flits));
      if (!vcs.empty()) vc_hold_[links[i] * f_.vcs + vcs[i]].reserve(head[i], tail[i]);
    }
    if (send_t >= engine.send_t) engine = Engine{send_t, tail[0]};
    if (late) {
      // The sender's ICI unit is done when the router took its last flit: a VC buffer's worth
      // before the tail left the first link, if it was held there.
      const uint64_t sent = std::max(head[0] + span, tail[0] - std::min<uint64_t>(tail[0], f_.credit_flits));
      *late = sent - std::min(sent, send_t + f_.send_lead + span);
    }
    // The tail on the last link (each tail no sooner than a hop after the one before; tail[i] is
    // at least its last flit's).
    uint64_t end = tail[0];
    for (std::size_t i = 1; i < ports.size(); ++i) end = std::max(end + f_.hop_delay, tail[i]);
    const uint64_t idle_end = send_t + f_.send_lead + (ports.size() - 1) * f_.hop_delay + span;  // the last link, idle
    return arrive_t + (end > idle_end ? end - idle_end : 0);
  }

 private:
  Torus t_;
  FastIciFigures f_;
  std::vector<Calendar> links_;    // by 4 * node index + output port (0 north, 1 south, 2 east, 3 west)
  std::vector<Calendar> vc_hold_;  // by link * vcs + VC: the packets holding it (empty: VCs not modeled)
  struct Engine {
    uint64_t send_t = 0, tail = 0;  // its latest transfer's send and its tail on the first link
  };
  std::vector<Engine> engines_;  // by first link (as links_): the source's engine for that port
};

}  // namespace tp::golden
