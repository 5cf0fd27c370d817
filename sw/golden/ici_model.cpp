#include "ici_model.h"

#include <fmt/format.h>

#include <stdexcept>

namespace tp::golden {

namespace {

bool in_torus(Coord c, Torus t) { return c.x < t.kx && c.y < t.ky; }

void check_torus(Torus t, const char* who) {
  if (t.kx == 0 || t.ky == 0) throw std::invalid_argument(fmt::format("{}: torus {}x{} is empty", who, t.kx, t.ky));
}

void check_route_args(Torus t, const Slice& s, Coord src, Coord dst) {
  check_torus(t, "ici route");
  if (s.w == 0 || s.h == 0 || std::size_t{s.x0} + s.w > t.kx || std::size_t{s.y0} + s.h > t.ky)
    throw std::invalid_argument(fmt::format("ici route: slice [{}, {}) x [{}, {}) does not fit in the {}x{} torus",
                                            s.x0, std::size_t{s.x0} + s.w, s.y0, std::size_t{s.y0} + s.h, t.kx, t.ky));
  for (const auto& [name, c] : {std::pair{"source", src}, std::pair{"destination", dst}}) {
    if (!in_torus(c, t))
      throw std::invalid_argument(
          fmt::format("ici route: {} ({}, {}) is outside the {}x{} torus", name, c.x, c.y, t.kx, t.ky));
    if (!in_slice(c, s))
      throw std::invalid_argument(fmt::format("ici route: {} ({}, {}) is outside the slice [{}, {}) x [{}, {})", name,
                                              c.x, c.y, s.x0, s.x0 + s.w, s.y0, s.y0 + s.h));
  }
}

// One hop in one dimension, as the RTL's ring_step: go positive? cross the wrap-around link?
struct Step {
  bool pos, wraps;
};

Step ring_step(unsigned here, unsigned dst, unsigned k, bool full_ring) {
  const unsigned fwd = dst >= here ? dst - here : dst + k - here;
  const unsigned back = k - fwd;
  // The shorter way; a tie (k even, half way round) goes positive to an even destination and
  // negative to an odd one, which splits tie traffic evenly between the two directions.
  const bool pos = full_ring ? (fwd < back || (fwd == back && dst % 2 == 0)) : dst > here;
  const bool wraps = full_ring && (pos ? here == k - 1 : here == 0);
  return {pos, wraps};
}

unsigned next(unsigned here, unsigned k, bool pos) { return pos ? (here + 1) % k : (here + k - 1) % k; }

// Walks the route, calling hop(next_node, wraps, first_hop_in_dimension, out_port) for every
// link hop; out_port as the RTL numbers them: 0 north (y+1), 1 south, 2 east (x+1), 3 west.
template <typename F>
void walk(Torus t, const Slice& s, Coord src, Coord dst, F hop) {
  check_route_args(t, s, src, dst);
  Coord here = src;
  bool first = true;
  while (here.x != dst.x) {
    const Step st = ring_step(here.x, dst.x, t.kx, s.w == t.kx);
    here.x = next(here.x, t.kx, st.pos);
    hop(here, st.wraps, first, st.pos ? 2u : 3u);
    first = false;
  }
  first = true;
  while (here.y != dst.y) {
    const Step st = ring_step(here.y, dst.y, t.ky, s.h == t.ky);
    here.y = next(here.y, t.ky, st.pos);
    hop(here, st.wraps, first, st.pos ? 0u : 1u);
    first = false;
  }
}

}  // namespace

bool in_slice(Coord c, const Slice& s) {
  return c.x >= s.x0 && std::size_t{c.x} < std::size_t{s.x0} + s.w && c.y >= s.y0 &&
         std::size_t{c.y} < std::size_t{s.y0} + s.h;
}

std::vector<Coord> route(Torus t, const Slice& s, Coord src, Coord dst) {
  std::vector<Coord> nodes{src};
  walk(t, s, src, dst, [&](Coord c, bool, bool, unsigned) { nodes.push_back(c); });
  return nodes;
}

unsigned hops(Torus t, const Slice& s, Coord src, Coord dst) {
  return static_cast<unsigned>(route(t, s, src, dst).size() - 1);
}

std::vector<unsigned> route_ports(Torus t, const Slice& s, Coord src, Coord dst) {
  std::vector<unsigned> ports;
  walk(t, s, src, dst, [&](Coord, bool, bool, unsigned port) { ports.push_back(port); });
  return ports;
}

std::vector<unsigned> route_vcs(Torus t, const Slice& s, Coord src, Coord dst, unsigned vcs, unsigned lane,
                                bool class_choice) {
  if (vcs < 2 || vcs % 2 != 0)
    throw std::invalid_argument(fmt::format("ici route_vcs: {} VCs; must be even and at least 2", vcs));
  const unsigned lanes = vcs / 2;
  if (lane >= lanes)
    throw std::invalid_argument(fmt::format("ici route_vcs: lane {} >= {} lanes per class", lane, lanes));
  std::vector<unsigned> out;
  unsigned cls = 0;
  Coord prev = src;
  walk(t, s, src, dst, [&](Coord c, bool wraps, bool first, unsigned port) {
    if (first) {  // entering a dimension: class 0, or with class_choice the router's entry_class
      const bool in_x = port >= 2, pos = port == 0 || port == 2;
      const unsigned here = in_x ? prev.x : prev.y, to = in_x ? dst.x : dst.y, k = in_x ? t.kx : t.ky;
      const bool full = in_x ? s.w == t.kx : s.h == t.ky;
      const bool crosses = full && (pos ? to < here : to > here);
      const bool last = full && (pos ? to == k - 1 : to == 0);
      cls = class_choice && !crosses && (here % 2 == 1 || last) ? 1 : 0;
    }
    if (wraps) cls = 1;  // crossing the dateline
    out.push_back(lane + lanes * cls);
    prev = c;
  });
  return out;
}

unsigned injection_port(Torus t, const Slice& s, Coord src, Coord dst, unsigned locals) {
  if (locals == 0) throw std::invalid_argument("ici injection_port: no local ports");
  if (src == dst || !in_slice(dst, s)) return 0;
  return route_ports(t, s, src, dst).front() % locals;
}

unsigned ejection_port(Torus t, const Slice& s, Coord src, Coord dst, unsigned locals) {
  if (src == dst) return injection_port(t, s, src, dst, locals);
  return (route_ports(t, s, src, dst).back() ^ 1u) % locals;  // N<->S, E<->W
}

bool ici_regs_ok(const IciRegs& r) {
  return r.kx >= 1 && r.kx <= 32 && r.ky >= 1 && r.ky <= 32 && r.w >= 1 && r.h >= 1 && uint64_t{r.x0} + r.w <= r.kx &&
         uint64_t{r.y0} + r.h <= r.ky && in_slice(coord_of(r), slice_of(r));
}

std::optional<Coord> ici_destination(const IciRegs& r, int64_t dx, int64_t dy, bool abs) {
  if (!ici_regs_ok(r))
    throw std::invalid_argument(fmt::format(
        "ici_destination: inconsistent ICI registers (torus {}x{}, chip ({}, {}), slice [{}, {}) x [{}, {}))", r.kx,
        r.ky, r.x, r.y, r.x0, uint64_t{r.x0} + r.w, r.y0, uint64_t{r.y0} + r.h));
  const int64_t w = r.w, h = r.h;
  if (abs) {
    if (dx < 0 || dx >= w || dy < 0 || dy >= h) return std::nullopt;
    return Coord{r.x0 + static_cast<unsigned>(dx), r.y0 + static_cast<unsigned>(dy)};
  }
  const auto wrap = [](int64_t v, int64_t k) { return ((v % k) + k) % k; };
  return Coord{r.x0 + static_cast<unsigned>(wrap(int64_t{r.x} - r.x0 + wrap(dx, w), w)),
               r.y0 + static_cast<unsigned>(wrap(int64_t{r.y} - r.y0 + wrap(dy, h), h))};
}

std::string_view pattern_name(Pattern p) {
  switch (p) {
    case Pattern::kUniform:
      return "uniform";
    case Pattern::kTranspose:
      return "transpose";
    case Pattern::kBitComplement:
      return "bitcomp";
    case Pattern::kTornado:
      return "tornado";
    case Pattern::kNeighbor:
      return "neighbor";
    case Pattern::kHotspot:
      return "hotspot";
  }
  throw std::invalid_argument("pattern_name: unknown pattern");
}

std::optional<Pattern> parse_pattern(std::string_view name) {
  for (Pattern p : kAllPatterns)
    if (pattern_name(p) == name) return p;
  return std::nullopt;
}

Coord pattern_dest(Pattern p, Torus t, Coord src, std::mt19937_64& rng) {
  check_torus(t, "pattern_dest");
  if (!in_torus(src, t))
    throw std::invalid_argument(
        fmt::format("pattern_dest: source ({}, {}) is outside the {}x{} torus", src.x, src.y, t.kx, t.ky));
  const auto uniform = [&] {
    const unsigned i = std::uniform_int_distribution<unsigned>(0, t.kx * t.ky - 1)(rng);
    return Coord{i % t.kx, i / t.kx};
  };
  switch (p) {
    case Pattern::kUniform:
      return uniform();
    case Pattern::kTranspose:
      if (t.kx != t.ky)
        throw std::invalid_argument(fmt::format("pattern_dest: transpose needs a square torus, not {}x{}", t.kx, t.ky));
      return Coord{src.y, src.x};
    case Pattern::kBitComplement:
      return Coord{t.kx - 1 - src.x, t.ky - 1 - src.y};
    case Pattern::kTornado:
      return Coord{(src.x + (t.kx + 1) / 2 - 1) % t.kx, (src.y + (t.ky + 1) / 2 - 1) % t.ky};
    case Pattern::kNeighbor: {
      std::vector<Coord> nbrs;
      if (t.kx > 1) {
        nbrs.push_back({next(src.x, t.kx, true), src.y});
        nbrs.push_back({next(src.x, t.kx, false), src.y});
      }
      if (t.ky > 1) {
        nbrs.push_back({src.x, next(src.y, t.ky, true)});
        nbrs.push_back({src.x, next(src.y, t.ky, false)});
      }
      if (nbrs.empty()) return src;
      return nbrs[std::uniform_int_distribution<std::size_t>(0, nbrs.size() - 1)(rng)];
    }
    case Pattern::kHotspot:
      if (std::bernoulli_distribution(0.25)(rng)) return Coord{t.kx / 2, t.ky / 2};
      return uniform();
  }
  throw std::invalid_argument("pattern_dest: unknown pattern");
}

}  // namespace tp::golden
