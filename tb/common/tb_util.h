// Helpers shared by the Verilated test benches: seeds, wave files, lane access on packed ports.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

namespace tp::tb {

// The seed of a random test: $TP_SEED when set (a number, or "random" for a fresh one; anything
// else throws), otherwise a fixed value derived from the test's name. Printed, with the command
// that reruns the test: `make wave` for tests of a Verilated model at a preset, ctest otherwise.
uint64_t test_seed(const std::string& test_name, const std::string& preset = "");

// Where this test writes its FST waves: $TP_WAVES/<test_name>.fst when TP_WAVES is set, else "".
std::string wave_path(const std::string& test_name);

// The current GoogleTest's full name ("Suite.Name"), or "standalone".
std::string current_test_name();

// Lane j of a packed port of Bits-wide lanes (a Verilator IData/QData/VlWide).
template <unsigned Bits, class Port>
inline void set_lane(Port& port, unsigned j, uint32_t value) {
  static_assert(Bits == 16 || Bits == 32);
  if constexpr (std::is_integral_v<Port>) {
    const unsigned sh = j * Bits;
    const Port mask = static_cast<Port>(((uint64_t{1} << Bits) - 1) << sh);
    port = static_cast<Port>((port & ~mask) | (static_cast<Port>(value) << sh));
  } else if constexpr (Bits == 32) {
    port[j] = value;
  } else {
    uint32_t& w = port[j / 2];
    const unsigned sh = (j % 2) * 16;
    w = (w & ~(0xffffu << sh)) | ((value & 0xffffu) << sh);
  }
}

template <unsigned Bits, class Port>
inline uint32_t get_lane(const Port& port, unsigned j) {
  static_assert(Bits == 16 || Bits == 32);
  if constexpr (std::is_integral_v<Port>) {
    return static_cast<uint32_t>((static_cast<uint64_t>(port) >> (j * Bits)) & ((uint64_t{1} << Bits) - 1));
  } else if constexpr (Bits == 32) {
    return port[j];
  } else {
    return (port[j / 2] >> ((j % 2) * 16)) & 0xffffu;
  }
}

}  // namespace tp::tb
