// Training a small MLP data parallel on a slice (docs/compiler.md, "Training"): one chip program
// per chip runs every step (a counted loop around the step's segments), and the host only
// writes the data and the initial weights and reads the errors and the final weights back.
//
// The model: x[B, K] -> h = bf16(relu(x W1 + b1)) [B, H] -> y = h W2 + b2 [B, N], fp32 master
// weights W1, b1, W2, b2 with bf16 copies of W1 and W2 for the MXU. The loss is the mean squared
// error against a fixed teacher network's outputs t on the same synthetic inputs:
// L = sum((y - t)^2) / (B N). A step on each chip (its B / chips rows of the batch):
//   forward    h, y (the compiler's layers);
//   loss       e = y - t (stored per step for the host's loss), dy = e * 2 / (B N), dyb = bf16(dy);
//   backward   dW2 = h^T dyb, dh = dyb W2^T, dz = h != 0 ? dh : 0 (the ReLU mask), dW1 = x^T bf16(dz),
//              db2, db1 = column sums of dy, dz (a tree of vector adds);
//              the transposes h^T, W2^T (and x^T once, before the first step) go through the MXU:
//              each tile loaded transposed (mxu.lw t=1) and streamed out by the identity;
//   all-reduce the gradients over the slice (a ring, in its fixed order; not on one chip);
//   update     P -= lr * dP for every master weight, W = bf16(W master) for the MXU.
// Every operation is mirrored on the host (train_reference) in the same order, so a run is
// checked bit for bit: every step's errors and the final weights of every chip.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "slice.h"

namespace tp::driver {

struct TrainSpec {
  uint32_t batch = 32, in = 16, hidden = 32, out = 8;  // B (global), K, H, N
  unsigned steps = 30;
  float lr = 0.5f;
  uint64_t seed = 1;  // the data, the teacher and the initial weights
  // false: the programs leave out the all-reduce (each chip then learns from its own rows only).
  // Only for measuring the all-reduce's share of a step; such a run is not checked.
  bool allreduce = true;
  // The all-reduce of dW2 and db2 overlapped with dW1's matmul (docs/compiler.md "Training"),
  // where the block's parts are a row per chip at least; false: the whole block after it.
  bool overlap = true;
};
std::string train_name(const TrainSpec&);  // "mlp 32x16x32x8, 30 steps, lr 0.05"

struct TrainResult {
  std::vector<double> loss;  // per step: the loss of that step's forward pass (before its update)
  // The final master weights (fp32 bit patterns, row-major): W1 (K x H), b1, W2 (H x N), b2.
  std::vector<uint32_t> w1, b1, w2, b2;
};

// The host's mirror of the chip programs on a slice of `chips` chips (1: no all-reduce).
TrainResult train_reference(const Preset&, const TrainSpec&, unsigned w, unsigned h);

struct TrainRun {
  std::string what;
  SliceStatus status;
  bool pass = false;        // status.ok() and every error and final weight bit-exact with the reference
  bool checked = false;     // the comparison ran (not for a run without the all-reduce)
  uint64_t mismatches = 0;  // words that differ
  TrainResult result;       // read back from the chips (the loss from their errors)
  uint64_t instructions = 0;
  double cycles_per_step = 0;  // the run's cycles over the steps (x^T, once, included)
  // Of each step's cycles, the all-reduce's: 1 - cycles without it / cycles with it, on the same
  // backend (collective_fraction() runs the pair; run_training leaves 0).
  double collective_fraction = 0;
  double mxu_utilization = 0;  // MXU rows over cycles, the mean of the chips (rtl)
};
// Throws DriverError for a spec that does not fit (the batch not divisible by the chips, a matrix
// larger than VMEM's buffers, a program longer than the instruction memory).
TrainRun run_training(Slice&, const TrainSpec&, uint64_t timeout_cycles = 0);

// The all-reduce's share of a step on golden pods of the slice's shape (two runs: with and without
// it): 0 on one chip.
double golden_collective_fraction(const PodSpec&, const SliceShape&, const TrainSpec&);

}  // namespace tp::driver
