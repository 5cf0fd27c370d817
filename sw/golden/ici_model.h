// Golden model of the ICI torus router's routing (rtl/ici/tp_ici_router.sv, ring_step and the
// route computation): the nodes a packet visits and the VC it uses on each link.
//
// - Dimension order: X first, then Y. Positive X is east (x + 1), positive Y is north (y + 1).
// - In a dimension the slice spans completely (w == kx, h == ky), the shorter way round the ring:
//   fwd = (dst - here) mod k, back = k - fwd, positive iff fwd < back; a tie (fwd == back) goes
//   positive to an even destination coordinate and negative to an odd one.
//   In a dimension the slice spans only partly, straight (positive iff dst > here), never
//   taking the wrap-around link.
// - Dateline VCs: V VCs are two classes of L = V / 2 lanes. A packet injected on lane l uses VC
//   l + L * class on every link; the class is 0 when it enters a dimension and 1 from the hop
//   that crosses that dimension's wrap-around link (k-1 -> 0 going positive, 0 -> k-1 going
//   negative) until it turns from X into Y.
//
// Traffic patterns (synthetic benchmarks) address the whole torus; callers restrict to slices.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <string_view>
#include <vector>

namespace tp::golden {

struct Coord {
  unsigned x = 0, y = 0;
  friend bool operator==(Coord, Coord) = default;
};

// The rectangle [x0, x0 + w) x [y0, y0 + h); it does not wrap around the torus edge.
struct Slice {
  unsigned x0 = 0, y0 = 0, w = 0, h = 0;
};

struct Torus {
  unsigned kx = 0, ky = 0;
};

// The slice that is the whole torus.
inline Slice full_slice(Torus t) { return Slice{0, 0, t.kx, t.ky}; }

bool in_slice(Coord c, const Slice& s);

// The nodes a packet from src to dst visits, src first and dst last (just {src} if src == dst).
// Throws std::invalid_argument if the slice does not fit in the torus or src or dst lies
// outside the torus or the slice.
std::vector<Coord> route(Torus t, const Slice& s, Coord src, Coord dst);

// Link hops: route(...).size() - 1.
unsigned hops(Torus t, const Slice& s, Coord src, Coord dst);

// The output port taken at each node of the route but the last (0 north = y+1, 1 south,
// 2 east = x+1, 3 west), as the RTL numbers its link ports.
std::vector<unsigned> route_ports(Torus t, const Slice& s, Coord src, Coord dst);

// The local port a transfer from src to dst enters and leaves the network by, with `locals`
// local ports (docs/ici.md): injected on local port (first hop's port) mod locals (0 to src
// itself, or to a dst outside the slice: the ICI unit's probe), which is also the ICI unit's send
// engine; ejected on (arrival port) mod locals, the arrival port being the one opposite the
// last hop (the injection port for src itself).
unsigned injection_port(Torus t, const Slice& s, Coord src, Coord dst, unsigned locals);
unsigned ejection_port(Torus t, const Slice& s, Coord src, Coord dst, unsigned locals);

// The VC used on each link hop of route(t, s, src, dst) (one entry per hop) by a packet injected
// on lane `lane` with `vcs` VCs per port. With class_choice (the router's ClassChoice), a packet
// whose way along a ring does not cross its dateline enters the ring in class 1 when its entry
// coordinate is odd or it ends next to the dateline (k - 1 going positive, 0 going negative), as
// the router's entry_class. Throws std::invalid_argument unless vcs is even and at least 2 and
// lane < vcs / 2 (and for the reasons route() throws).
std::vector<unsigned> route_vcs(Torus t, const Slice& s, Coord src, Coord dst, unsigned vcs, unsigned lane,
                                bool class_choice = false);

// A chip's ICI registers (docs/chip.md, ICI_TORUS, ICI_COORD, ICI_SLICE0/1), set by the host
// before a run: the torus kx x ky, this chip's coordinates (x, y) and its slice, the rectangle
// [x0, x0 + w) x [y0, y0 + h). The defaults are a standalone chip: a 1x1 torus and slice.
struct IciRegs {
  unsigned kx = 1, ky = 1, x = 0, y = 0, x0 = 0, y0 = 0, w = 1, h = 1;
  friend bool operator==(const IciRegs&, const IciRegs&) = default;
};

// The router's cfg_ok (rtl/ici/tp_ici_router.sv): 1 <= kx, ky <= 32, w, h >= 1, x0 + w <= kx,
// y0 + h <= ky, and (x, y) inside the slice.
bool ici_regs_ok(const IciRegs&);

inline Torus torus_of(const IciRegs& r) { return Torus{r.kx, r.ky}; }
inline Slice slice_of(const IciRegs& r) { return Slice{r.x0, r.y0, r.w, r.h}; }
inline Coord coord_of(const IciRegs& r) { return Coord{r.x, r.y}; }

// The destination of an ici.send (docs/isa.md) on a chip whose registers are consistent
// (ici_regs_ok; else std::invalid_argument):
//   relative (abs = false): x0 + ((x - x0 + dx) mod w), y0 + ((y - y0 + dy) mod h), the mod
//     mathematical (0 .. w-1): the offset wraps round the slice;
//   absolute (abs = true): (x0 + dx, y0 + dy), or nothing (the error ici_slice) unless
//     0 <= dx < w and 0 <= dy < h.
// The destination may be the chip itself.
std::optional<Coord> ici_destination(const IciRegs&, int64_t dx, int64_t dy, bool abs);

enum class Pattern { kUniform, kTranspose, kBitComplement, kTornado, kNeighbor, kHotspot };

inline constexpr std::array<Pattern, 6> kAllPatterns = {Pattern::kUniform, Pattern::kTranspose, Pattern::kBitComplement,
                                                        Pattern::kTornado, Pattern::kNeighbor,  Pattern::kHotspot};

// "uniform", "transpose", "bitcomp", "tornado", "neighbor", "hotspot".
std::string_view pattern_name(Pattern p);
std::optional<Pattern> parse_pattern(std::string_view name);

// A destination for a packet from src:
//   uniform:   any node, uniformly (src itself included);
//   transpose: (y, x) (needs kx == ky);
//   bitcomp:   (kx-1-x, ky-1-y);
//   tornado:   ((x + ceil(kx/2) - 1) mod kx, (y + ceil(ky/2) - 1) mod ky);
//   neighbor:  the node one link away in one of the (up to four) directions, chosen uniformly
//              among the directions that exist (none in a dimension of size 1; in a dimension of
//              size 2 both directions reach the same node); src on a 1x1 torus;
//   hotspot:   (kx/2, ky/2) with probability 1/4, else uniform.
// Throws std::invalid_argument if src lies outside the torus, or for transpose on kx != ky.
Coord pattern_dest(Pattern p, Torus t, Coord src, std::mt19937_64& rng);

}  // namespace tp::golden
