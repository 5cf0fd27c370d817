// Synthetic traffic for the ICI network: every node creates packets with a Bernoulli process
// (offered load in flits per node per cycle), to destinations from a traffic pattern.
#pragma once

#include <algorithm>
#include <random>
#include <vector>

#include "ici_model.h"
#include "ici_network.h"

namespace tp::tb {

struct TrafficSpec {
  golden::Pattern pattern = golden::Pattern::kUniform;
  double offered = 0.1;               // flits per node per cycle
  unsigned min_len = 1, max_len = 1;  // packet length in flits, uniform in [min, max]
  bool restrict_to_slice = true;      // draw destinations inside the source's slice
  // The injection lane: random per packet, or each source always its own, (x + y) % lanes (a
  // fixed split of the flows over the lanes: docs/benchmarks.md, tornado).
  bool lane_by_source = false;
};

// Create this cycle's packets (call once per cycle before step()). Returns the packets created.
template <class Net>
unsigned inject_traffic(Net& net, const TrafficSpec& spec, std::mt19937_64& rng, unsigned lanes) {
  const auto t = net.options().torus;
  const double avg_len = 0.5 * (spec.min_len + spec.max_len);
  std::bernoulli_distribution create(std::min(1.0, spec.offered / avg_len));
  std::uniform_int_distribution<unsigned> len(spec.min_len, spec.max_len), lane(0, lanes - 1);
  unsigned made = 0;
  for (unsigned y = 0; y < t.ky; ++y) {
    for (unsigned x = 0; x < t.kx; ++x) {
      if (!create(rng)) continue;
      const golden::Coord src{x, y};
      golden::Coord dst = golden::pattern_dest(spec.pattern, t, src, rng);
      if (spec.restrict_to_slice) {
        // Keep the pattern's shape inside the slice: fold the destination into it.
        const auto& s = net.slice(src);
        dst = {s.x0 + (dst.x % s.w), s.y0 + (dst.y % s.h)};
      }
      const unsigned l = lane(rng);
      net.send(src, dst, spec.lane_by_source ? (x + y) % lanes : l, len(rng));
      ++made;
    }
  }
  return made;
}

}  // namespace tp::tb
