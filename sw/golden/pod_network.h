// The fast pod's network (docs/scale.md, "Contention"): the torus's directed links as calendars
// of the cycles their flits use, so that transfers sharing a link take turns.
//
// A transfer of F flits from src to dst follows the router's route (ici_model.h). Its sender's
// timing model gave it a span [send_t, sent_t) (send_lead + F cycles on an idle network) and an
// arrival time for an idle network. On link i of the route, its F flits take the earliest free
// cycles at or after (its start on link i-1) + hop_delay (on link 0: send_t + send_lead), a flit
// a cycle, in the gaps other transfers left; its last flit leaves link i no sooner than
// hop_delay after it left link i-1; the arrival moves later by as much as its last flit left the
// last link later than on an idle network. Never earlier: on an idle network the arrival is the
// timing model's.
//
// Transfers are booked in the order the pod hands them over (its rounds, then sender index, then
// send order), not in time order; the calendars fill gaps, so a later-booked transfer that is
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
  PodNetwork(Torus t, const FastIciFigures& f) : t_(t), f_(f), links_(4ull * t.kx * t.ky) {}

  // Books a transfer of `rows` rows and returns its arrival: arrive_t, or later if the links it
  // crosses were busy.
  uint64_t book(const Slice& s, Coord src, Coord dst, uint64_t rows, uint64_t send_t, uint64_t arrive_t) {
    if (src == dst || rows == 0) return arrive_t;
    const std::vector<Coord> nodes = route(t_, s, src, dst);
    const std::vector<unsigned> ports = route_ports(t_, s, src, dst);
    const uint64_t f = f_.flits(rows);
    uint64_t from = send_t + f_.send_lead, end = 0;
    for (std::size_t i = 0; i < ports.size(); ++i) {
      const Coord n = nodes[i];
      const auto [first, last] = links_[4ull * (n.x + n.y * t_.kx) + ports[i]].book(from, f, 1);
      // The last flit crosses this link no sooner than a hop after it crossed the one before
      // (the flits may have found earlier gaps here than there).
      end = i == 0 ? last : std::max(last, end + f_.hop_delay);
      from = first + f_.hop_delay;
    }
    const uint64_t idle_end = send_t + f_.send_lead + (ports.size() - 1) * f_.hop_delay + f;  // the last link, idle
    return arrive_t + (end > idle_end ? end - idle_end : 0);
  }

 private:
  Torus t_;
  FastIciFigures f_;
  std::vector<Calendar> links_;  // by 4 * node index + output port (0 north, 1 south, 2 east, 3 west)
};

}  // namespace tp::golden
