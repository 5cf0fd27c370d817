// Programs for pods (docs/pod.md): random ICI traffic with its expected result (the tests and the
// benchmark), and the demo's data-parallel matmul with an all-gather of the output over ICI.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "driver.h"
#include "isa.h"
#include "slice.h"

namespace tp::driver {

// ---- Random ICI traffic ----
// Every chip of the slice loads its own block of rows from HBM into VMEM, sends up to
// max_sends parts of it to random chips of the slice (relative destinations that wrap round the
// slice, and absolute ones), random sizes and semaphores; every chip waits for all it receives
// (fences on the arrivals' semaphores, and on the local "sent" semaphore of the sends that have
// one) and then stores each received region to HBM. Correctly synchronised: the result is
// defined, and expected() computes it.
struct IciTraffic {
  struct Transfer {
    unsigned src = 0, dst = 0;  // slice indices i + j * w
    int dx = 0, dy = 0;         // the instruction's fields
    bool abs = false;
    uint32_t rows = 0, src_row = 0;
    uint32_t dst_slot = 0;  // the destination's t-th incoming transfer
    unsigned rsem = 0;
    bool local_signal = false;
  };
  unsigned w = 1, h = 1, lanes = 0;
  uint32_t block_rows = 0;  // each chip's own block (VMEM rows 0.., HBM beats 0..)
  uint64_t out_beat = 0;    // where received regions are stored: out_beat + slot * block_rows
  std::vector<Transfer> transfers;
  std::vector<std::vector<uint32_t>> own;  // per chip: block_rows * lanes words
};

// A random plan; seed and the slice shape decide everything.
IciTraffic random_ici_traffic(const Preset&, unsigned w, unsigned h, uint64_t seed, unsigned max_sends = 3,
                              uint32_t block_rows = 16);
// Chip k's program (k = i + j * w).
isa::Program ici_traffic_program(const Preset&, const IciTraffic&, unsigned k);
// Writes every chip's own block, loads every chip's program.
void setup_ici_traffic(Slice&, const IciTraffic&);
// Compares what the chips stored with what the plan says; returns one line per mismatch (at most
// `limit` lines, then a count).
std::vector<std::string> check_ici_traffic(Slice&, const IciTraffic&, unsigned limit = 10);

// ---- The demo: a data-parallel matmul on a slice ----
// C[m, n] = A[m, k] x W[k, n]: the rows of A are split over the slice's chips (chip k the k-th
// block of m / chips rows), W is on every chip; each chip runs the compiler's matmul program on
// its block, then sends its block of C to every other chip (ici.send into VMEM rows the matmul
// does not use) and, once all have arrived, stores the whole C to HBM: every chip ends with the
// whole output. m must be a multiple of the chip count.
struct PodMatmulRun {
  std::string what;
  SliceStatus status;
  bool pass = false;  // ok and every chip's C bit-exact with the host reference
  uint64_t mismatches = 0;
  std::vector<uint32_t> output;                           // chip (0, 0)'s C, row-major m x n (fp32 bits)
  std::vector<std::map<std::string, uint64_t>> counters;  // per chip of the slice, k order
  uint64_t instructions = 0;                              // chip 0's program length
};
PodMatmulRun run_pod_matmul(Slice&, const MatmulSpec&, uint64_t seed, uint64_t timeout_cycles = 0);

}  // namespace tp::driver
