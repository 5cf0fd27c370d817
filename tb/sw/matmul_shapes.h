// Matmul shapes the compiler and chip tests share: the edges of the tiling for an n x n MXU.
#pragma once

#include <cstdint>
#include <vector>

namespace tp::tb {

struct Shape {
  uint32_t m, k, n;
  bool bias, relu;
};

// 1x1x1, sizes off multiples of n, several K and N tiles, M larger than one block, and K large
// enough that the VMEM (not the accumulators) limits the M block.
inline std::vector<Shape> edge_shapes(uint32_t n) {
  return {
      {1, 1, 1, false, false},
      {1, 1, 1, true, true},
      {n, n, n, false, false},
      {n + 1, n - 1, n + 3, true, false},
      {3, 2 * n + 1, 5, false, true},
      {2 * n, 3 * n, 2 * n, true, true},
      {5 * n + 3, n + 2, 2 * n - 1, true, true},
      {130, 2 * n + 5, 3 * n + 1, false, false},
      {300, 7, 2, true, false},
      {100, 20 * n + 3, n + 1, true, false},
  };
}

}  // namespace tp::tb
