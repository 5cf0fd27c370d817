// The golden ICI routing model against hand-worked routes, torus distances and the dateline rule;
// the synthetic traffic patterns.
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <random>
#include <set>
#include <utility>

#include "ici_model.h"

namespace tp::golden {
// Readable failure messages.
void PrintTo(const Coord& c, std::ostream* os) { *os << "(" << c.x << ", " << c.y << ")"; }
}  // namespace tp::golden

namespace {
using namespace tp::golden;
using Route = std::vector<Coord>;
using Vcs = std::vector<unsigned>;

Route full_route(Torus t, Coord src, Coord dst) { return route(t, full_slice(t), src, dst); }

unsigned ring_distance(unsigned a, unsigned b, unsigned k) {
  const unsigned d = a > b ? a - b : b - a;
  return std::min(d, k - d);
}

TEST(IciRoute, Torus4x4) {
  const Torus t{4, 4};
  EXPECT_EQ(full_route(t, {1, 2}, {1, 2}), (Route{{1, 2}}));
  // Wrap-around when shorter: 0 -> 3 is one hop west.
  EXPECT_EQ(full_route(t, {0, 0}, {3, 0}), (Route{{0, 0}, {3, 0}}));
  EXPECT_EQ(full_route(t, {1, 0}, {2, 3}), (Route{{1, 0}, {2, 0}, {2, 3}}));
  // Ties (distance 2 both ways) go positive to an even destination, negative to an odd one.
  EXPECT_EQ(full_route(t, {0, 0}, {2, 0}), (Route{{0, 0}, {1, 0}, {2, 0}}));
  EXPECT_EQ(full_route(t, {2, 0}, {0, 0}), (Route{{2, 0}, {3, 0}, {0, 0}}));
  // X first, then Y.
  EXPECT_EQ(full_route(t, {1, 1}, {3, 2}), (Route{{1, 1}, {0, 1}, {3, 1}, {3, 2}}));  // tie, odd: west
  EXPECT_EQ(full_route(t, {3, 3}, {1, 0}), (Route{{3, 3}, {2, 3}, {1, 3}, {1, 0}}));  // tie, odd: west
  EXPECT_EQ(hops(t, full_slice(t), {3, 3}, {1, 0}), 3u);
  EXPECT_EQ(hops(t, full_slice(t), {0, 0}, {2, 2}), 4u);
}

TEST(IciRoute, PartialSliceNeverWraps) {
  const Torus t{4, 4};
  // Columns 0..2 only: 2 -> 0 goes west, not east through the wrap link as on the full ring.
  const Slice s{0, 0, 3, 4};
  EXPECT_EQ(route(t, s, {2, 0}, {0, 0}), (Route{{2, 0}, {1, 0}, {0, 0}}));
  // Y still spans the ring: 0 -> 3 is one hop south through the wrap link.
  EXPECT_EQ(route(t, s, {0, 0}, {2, 3}), (Route{{0, 0}, {1, 0}, {2, 0}, {2, 3}}));
  // A slice away from the origin.
  const Slice s2{1, 1, 3, 3};
  EXPECT_EQ(route(t, s2, {3, 3}, {1, 1}), (Route{{3, 3}, {2, 3}, {1, 3}, {1, 2}, {1, 1}}));
  EXPECT_EQ(route_vcs(t, s2, {3, 3}, {1, 1}, 2, 0), (Vcs{0, 0, 0, 0}));
  // 8x8, columns 0..5: 0 -> 5 is 5 hops east (the full ring would take 3 hops west).
  const Torus t8{8, 8};
  EXPECT_EQ(hops(t8, Slice{0, 0, 6, 8}, {0, 4}, {5, 4}), 5u);
  EXPECT_EQ(hops(t8, full_slice(t8), {0, 4}, {5, 4}), 3u);
  EXPECT_EQ(route(t8, Slice{0, 0, 8, 4}, {0, 0}, {7, 3}), (Route{{0, 0}, {7, 0}, {7, 1}, {7, 2}, {7, 3}}));
}

TEST(IciRoute, Ring1x8) {
  const Torus t{1, 8};
  EXPECT_EQ(full_route(t, {0, 0}, {0, 4}), (Route{{0, 0}, {0, 1}, {0, 2}, {0, 3}, {0, 4}}));  // tie
  EXPECT_EQ(full_route(t, {0, 0}, {0, 5}), (Route{{0, 0}, {0, 7}, {0, 6}, {0, 5}}));
  EXPECT_EQ(full_route(t, {0, 6}, {0, 1}), (Route{{0, 6}, {0, 7}, {0, 0}, {0, 1}}));
  EXPECT_EQ(route_vcs(t, full_slice(t), {0, 0}, {0, 5}, 2, 0), (Vcs{1, 1, 1}));
  EXPECT_EQ(route_vcs(t, full_slice(t), {0, 6}, {0, 1}, 2, 0), (Vcs{0, 1, 1}));
}

// With ClassChoice (the router's entry_class): a packet whose way along a ring does not cross the
// dateline enters it in class 1 from an odd coordinate or when it ends next to the dateline; one
// that crosses enters in class 0 and takes class 1 at the wrap, as without it.
TEST(IciRoute, ClassChoice) {
  const Torus t{8, 8};
  const Slice all = full_slice(t);
  EXPECT_EQ(route_vcs(t, all, {1, 0}, {3, 0}, 2, 0, true), (Vcs{1, 1}));  // odd entry
  EXPECT_EQ(route_vcs(t, all, {1, 0}, {3, 0}, 2, 0), (Vcs{0, 0}));
  EXPECT_EQ(route_vcs(t, all, {2, 0}, {4, 0}, 2, 0, true), (Vcs{0, 0}));     // even entry
  EXPECT_EQ(route_vcs(t, all, {4, 0}, {7, 0}, 2, 0, true), (Vcs{1, 1, 1}));  // ends next to the dateline
  EXPECT_EQ(route_vcs(t, all, {3, 0}, {0, 0}, 2, 0, true), (Vcs{1, 1, 1}));  // the same, going negative
  EXPECT_EQ(route_vcs(t, all, {1, 0}, {6, 0}, 4, 1, true), (Vcs{1, 3, 3}));  // 1, 0, 7, 6: class 0 until the wrap
  // X from an odd coordinate, then Y entered at an even one: classes 1, then 0.
  EXPECT_EQ(route_vcs(t, all, {1, 0}, {2, 2}, 2, 0, true), (Vcs{1, 0, 0}));
  // A partial ring has no dateline: only the parity counts.
  EXPECT_EQ(route_vcs(t, Slice{0, 0, 4, 8}, {1, 0}, {3, 0}, 2, 0, true), (Vcs{1, 1}));
  EXPECT_EQ(route_vcs(t, Slice{0, 0, 8, 8}, {5, 0}, {3, 0}, 2, 0, true), (Vcs{1, 1}));
}

TEST(IciRoute, Torus2x2) {
  const Torus t{2, 2};
  EXPECT_EQ(full_route(t, {0, 0}, {1, 1}), (Route{{0, 0}, {1, 0}, {1, 1}}));
  // Both ways are one hop; positive from 1 is the wrap link.
  EXPECT_EQ(full_route(t, {1, 1}, {0, 0}), (Route{{1, 1}, {0, 1}, {0, 0}}));
  EXPECT_EQ(route_vcs(t, full_slice(t), {0, 0}, {1, 1}, 2, 0), (Vcs{1, 1}));  // tie to odd: negative = wrap
  EXPECT_EQ(route_vcs(t, full_slice(t), {1, 1}, {0, 0}, 2, 0), (Vcs{1, 1}));
}

TEST(IciRoute, Torus3x3) {
  const Torus t{3, 3};
  EXPECT_EQ(full_route(t, {0, 0}, {2, 0}), (Route{{0, 0}, {2, 0}}));
  EXPECT_EQ(full_route(t, {0, 0}, {1, 2}), (Route{{0, 0}, {1, 0}, {1, 2}}));
  EXPECT_EQ(full_route(t, {2, 2}, {0, 0}), (Route{{2, 2}, {0, 2}, {0, 0}}));
  EXPECT_EQ(full_route(t, {1, 1}, {2, 0}), (Route{{1, 1}, {2, 1}, {2, 0}}));
}

TEST(IciRoute, Torus8x8) {
  const Torus t{8, 8};
  const Slice s = full_slice(t);
  EXPECT_EQ(hops(t, s, {0, 0}, {4, 4}), 8u);  // ties both ways: 4 + 4
  EXPECT_EQ(full_route(t, {0, 0}, {4, 4}).at(4), (Coord{4, 0}));
  EXPECT_EQ(full_route(t, {7, 7}, {0, 0}), (Route{{7, 7}, {0, 7}, {0, 0}}));
  EXPECT_EQ(full_route(t, {1, 0}, {6, 0}), (Route{{1, 0}, {0, 0}, {7, 0}, {6, 0}}));
  EXPECT_EQ(route_vcs(t, s, {1, 0}, {6, 0}, 2, 0), (Vcs{0, 1, 1}));
  EXPECT_EQ(hops(t, s, {2, 3}, {6, 7}), 8u);
  EXPECT_EQ(hops(t, s, {6, 1}, {1, 6}), 6u);
}

TEST(IciRoute, DatelineVcs4x4) {
  const Torus t{4, 4};
  const Slice s = full_slice(t);
  // West through the wrap link 0 -> 3: class 1 on that hop.
  EXPECT_EQ(route_vcs(t, s, {0, 0}, {3, 0}, 2, 0), (Vcs{1}));
  EXPECT_EQ(route_vcs(t, s, {0, 0}, {3, 0}, 4, 1), (Vcs{3}));
  // East 2 -> 3 -> 0: class 0, then 1 from the wrap hop on; back to class 0 on turning into Y.
  EXPECT_EQ(route_vcs(t, s, {2, 0}, {0, 1}, 2, 0), (Vcs{0, 1, 0}));
  EXPECT_EQ(route_vcs(t, s, {2, 0}, {0, 1}, 4, 0), (Vcs{0, 2, 0}));
  EXPECT_EQ(route_vcs(t, s, {2, 0}, {0, 1}, 4, 1), (Vcs{1, 3, 1}));
  // X: tie to an odd destination goes west 3 -> 2 -> 1 (no wrap); Y wraps 3 -> 0.
  EXPECT_EQ(route_vcs(t, s, {3, 3}, {1, 0}, 2, 0), (Vcs{0, 0, 1}));
  EXPECT_EQ(route_vcs(t, s, {3, 3}, {1, 0}, 4, 1), (Vcs{1, 1, 3}));
  // No wrap: class 0 throughout; Y wraps on 0 -> 3 going south.
  EXPECT_EQ(route_vcs(t, s, {1, 1}, {3, 2}, 4, 1), (Vcs{1, 3, 1}));  // tie to odd 3: west, 0 -> 3 wraps
  EXPECT_EQ(route_vcs(t, s, {1, 0}, {2, 3}, 4, 0), (Vcs{0, 2}));
  EXPECT_TRUE(route_vcs(t, s, {2, 2}, {2, 2}, 2, 0).empty());
}

// Every pair on a 5x3 torus: minimal distance, neighbour steps, X before Y, the dateline rule.
TEST(IciRoute, AllPairs5x3AreMinimal) {
  const Torus t{5, 3};
  const Slice s = full_slice(t);
  for (unsigned sx = 0; sx < t.kx; ++sx)
    for (unsigned sy = 0; sy < t.ky; ++sy)
      for (unsigned dx = 0; dx < t.kx; ++dx)
        for (unsigned dy = 0; dy < t.ky; ++dy) {
          const Coord src{sx, sy}, dst{dx, dy};
          const Route r = route(t, s, src, dst);
          SCOPED_TRACE(testing::PrintToString(src) + " -> " + testing::PrintToString(dst));
          ASSERT_EQ(r.front(), src);
          ASSERT_EQ(r.back(), dst);
          EXPECT_EQ(hops(t, s, src, dst), ring_distance(sx, dx, t.kx) + ring_distance(sy, dy, t.ky));
          bool in_y = false;
          for (std::size_t i = 1; i < r.size(); ++i) {
            const bool moved_x = r[i].x != r[i - 1].x;
            EXPECT_EQ(ring_distance(r[i].x, r[i - 1].x, t.kx) + ring_distance(r[i].y, r[i - 1].y, t.ky), 1u);
            if (!moved_x) in_y = true;
            EXPECT_FALSE(in_y && moved_x) << "X hop after a Y hop";
          }
          // Class 0 on entering a dimension, 1 from the hop over the wrap link (k-1 -> 0 going
          // positive, 0 -> k-1 going negative; k >= 3 here, so the direction is unambiguous).
          const Vcs v = route_vcs(t, s, src, dst, 2, 0);
          ASSERT_EQ(v.size(), r.size() - 1);
          unsigned cls = 0;
          for (std::size_t i = 1; i < r.size(); ++i) {
            const bool moved_x = r[i].x != r[i - 1].x;
            if (i > 1 && moved_x != (r[i - 1].x != r[i - 2].x)) cls = 0;  // turned into Y
            const unsigned a = moved_x ? r[i - 1].x : r[i - 1].y, b = moved_x ? r[i].x : r[i].y;
            const unsigned k = moved_x ? t.kx : t.ky;
            if ((a == k - 1 && b == 0) || (a == 0 && b == k - 1)) cls = 1;
            EXPECT_EQ(v[i - 1], cls) << "hop " << i;
          }
        }
}

TEST(IciRoute, PartialSliceRoutesStayInside) {
  const Torus t{8, 8};
  const Slice s{2, 1, 5, 6};
  for (unsigned sx = s.x0; sx < s.x0 + s.w; ++sx)
    for (unsigned sy = s.y0; sy < s.y0 + s.h; ++sy)
      for (unsigned dx = s.x0; dx < s.x0 + s.w; ++dx)
        for (unsigned dy = s.y0; dy < s.y0 + s.h; ++dy) {
          const Route r = route(t, s, {sx, sy}, {dx, dy});
          for (const Coord& c : r) EXPECT_TRUE(in_slice(c, s));
          const unsigned manhattan = (sx > dx ? sx - dx : dx - sx) + (sy > dy ? sy - dy : dy - sy);
          EXPECT_EQ(r.size() - 1, manhattan);
          for (unsigned vc : route_vcs(t, s, {sx, sy}, {dx, dy}, 4, 1)) EXPECT_EQ(vc, 1u);
        }
}

TEST(IciRoute, BadArgumentsThrow) {
  const Torus t{4, 4};
  const Slice s = full_slice(t);
  EXPECT_THROW(route(t, s, {4, 0}, {0, 0}), std::invalid_argument);                  // src outside the torus
  EXPECT_THROW(route(t, s, {0, 0}, {0, 4}), std::invalid_argument);                  // dst outside the torus
  EXPECT_THROW(route(t, Slice{0, 0, 2, 2}, {0, 0}, {2, 0}), std::invalid_argument);  // dst outside slice
  EXPECT_THROW(route(t, Slice{1, 1, 2, 2}, {0, 1}, {1, 1}), std::invalid_argument);  // src outside slice
  EXPECT_THROW(route(t, Slice{2, 0, 3, 4}, {2, 0}, {3, 0}), std::invalid_argument);  // slice wraps
  EXPECT_THROW(route(t, Slice{0, 0, 0, 4}, {0, 0}, {0, 0}), std::invalid_argument);  // empty slice
  EXPECT_THROW(route(Torus{0, 4}, Slice{0, 0, 0, 4}, {0, 0}, {0, 0}), std::invalid_argument);
  EXPECT_THROW(hops(t, s, {0, 0}, {5, 5}), std::invalid_argument);
  EXPECT_THROW(route_vcs(t, s, {0, 0}, {1, 0}, 3, 0), std::invalid_argument);  // odd VC count
  EXPECT_THROW(route_vcs(t, s, {0, 0}, {1, 0}, 0, 0), std::invalid_argument);
  EXPECT_THROW(route_vcs(t, s, {0, 0}, {1, 0}, 4, 2), std::invalid_argument);  // lane >= L
  std::mt19937_64 rng(1);
  EXPECT_THROW(pattern_dest(Pattern::kTranspose, Torus{4, 2}, {0, 0}, rng), std::invalid_argument);
  EXPECT_THROW(pattern_dest(Pattern::kUniform, t, {0, 4}, rng), std::invalid_argument);
}

TEST(IciSlice, InSlice) {
  const Slice s{1, 2, 2, 3};
  EXPECT_TRUE(in_slice({1, 2}, s));
  EXPECT_TRUE(in_slice({2, 4}, s));
  EXPECT_FALSE(in_slice({0, 2}, s));
  EXPECT_FALSE(in_slice({3, 2}, s));
  EXPECT_FALSE(in_slice({1, 5}, s));
  EXPECT_FALSE(in_slice({1, 1}, s));
}

TEST(IciPattern, Names) {
  for (Pattern p : kAllPatterns) EXPECT_EQ(parse_pattern(pattern_name(p)), p);
  EXPECT_EQ(pattern_name(Pattern::kBitComplement), "bitcomp");
  EXPECT_EQ(parse_pattern("tornado"), Pattern::kTornado);
  EXPECT_EQ(parse_pattern("Uniform"), std::nullopt);
  EXPECT_EQ(parse_pattern(""), std::nullopt);
}

TEST(IciPattern, Permutations) {
  std::mt19937_64 rng(3);
  const Torus t4{4, 4}, t8{8, 8}, t53{5, 3};
  EXPECT_EQ(pattern_dest(Pattern::kTranspose, t4, {1, 3}, rng), (Coord{3, 1}));
  EXPECT_EQ(pattern_dest(Pattern::kTranspose, t4, {2, 2}, rng), (Coord{2, 2}));
  EXPECT_EQ(pattern_dest(Pattern::kBitComplement, t4, {0, 1}, rng), (Coord{3, 2}));
  EXPECT_EQ(pattern_dest(Pattern::kBitComplement, t53, {1, 0}, rng), (Coord{3, 2}));
  EXPECT_EQ(pattern_dest(Pattern::kTornado, t8, {0, 0}, rng), (Coord{3, 3}));
  EXPECT_EQ(pattern_dest(Pattern::kTornado, t8, {6, 7}, rng), (Coord{1, 2}));
  EXPECT_EQ(pattern_dest(Pattern::kTornado, t4, {3, 0}, rng), (Coord{0, 1}));
  EXPECT_EQ(pattern_dest(Pattern::kTornado, t53, {4, 2}, rng), (Coord{1, 0}));
  EXPECT_EQ(pattern_dest(Pattern::kTornado, Torus{1, 1}, {0, 0}, rng), (Coord{0, 0}));
}

TEST(IciPattern, NeighborIsOneHopAway) {
  std::mt19937_64 rng(5);
  const Torus t{4, 4};
  std::set<std::pair<unsigned, unsigned>> seen;
  for (int i = 0; i < 400; ++i) {
    const Coord d = pattern_dest(Pattern::kNeighbor, t, {0, 3}, rng);
    EXPECT_EQ(hops(t, full_slice(t), {0, 3}, d), 1u);
    seen.insert({d.x, d.y});
  }
  EXPECT_EQ(seen.size(), 4u);
  // No neighbour along a dimension of size 1; none at all on a single node.
  for (int i = 0; i < 50; ++i) EXPECT_EQ(pattern_dest(Pattern::kNeighbor, Torus{1, 4}, {0, 1}, rng).x, 0u);
  EXPECT_EQ(pattern_dest(Pattern::kNeighbor, Torus{1, 1}, {0, 0}, rng), (Coord{0, 0}));
}

TEST(IciPattern, UniformCoversEveryNode) {
  std::mt19937_64 rng(7);
  const Torus t{4, 4};
  std::set<std::pair<unsigned, unsigned>> seen;
  for (int i = 0; i < 2000; ++i) {
    const Coord d = pattern_dest(Pattern::kUniform, t, {1, 1}, rng);
    ASSERT_TRUE(d.x < t.kx && d.y < t.ky);
    seen.insert({d.x, d.y});
  }
  EXPECT_EQ(seen.size(), 16u);
}

TEST(IciPattern, HotspotFavoursTheCentre) {
  std::mt19937_64 rng(9);
  const Torus t{8, 8};
  int centre = 0;
  constexpr int n = 8000;
  for (int i = 0; i < n; ++i) centre += pattern_dest(Pattern::kHotspot, t, {0, 0}, rng) == Coord{4, 4};
  // Expected 1/4 + 3/4 * 1/64 = 0.262.
  EXPECT_GT(centre, n * 0.23);
  EXPECT_LT(centre, n * 0.30);
}

}  // namespace
