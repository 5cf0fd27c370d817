// Helpers shared by the Verilated test benches: seeds, and (from sw/sim/sim_util.h) wave files,
// the run's name, lane and bit access on packed ports.
#pragma once

#include <cstdint>
#include <string>

#include "sim_util.h"

namespace tp::tb {

// The seed of a random test: $TP_SEED when set (a number, or "random" for a fresh one; anything
// else throws), otherwise a fixed value derived from the test's name. Printed, with the command
// that reruns the test: `make wave` for tests of a Verilated model at a preset, ctest otherwise.
uint64_t test_seed(const std::string& test_name, const std::string& preset = "");

// $TP_SEED when set (a number), otherwise `fallback`: the pod, sharding and training tests' seeds.
uint64_t seed_or(uint64_t fallback);

// The soak campaign (make soak, scripts/soak.py, docs/verification.md "Soak"): $TP_SOAK, a whole
// number from 1 to 100000 that the soak tests multiply their length by (1 when unset: the length
// `make test` runs; anything else throws, naming the value).
uint64_t soak_scale();
// What a soak test did, for the campaign runner: one line "[ soak     ] block=<block>
// transactions=<n> cycles=<c> kind=<what a transaction is>" on stdout.
void soak_report(const std::string& block, uint64_t transactions, uint64_t cycles, const std::string& kind);

}  // namespace tp::tb
