// Helpers of the simulation backends (sw/sim) that the test benches share: wave files, the name of
// the run (a GoogleTest's, when a test runs), lane and bit access on Verilator port values, the
// ICI flit layout. No GoogleTest here: the tools link this without the test framework.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>

#include "isa_gen.h"  // isa::hw::ici

namespace tp::tb {

// Where this run writes its FST waves: $TP_WAVES/<name>.fst when TP_WAVES is set, else "". The
// folder is made if missing; a file there, or a folder that cannot be made, is a tp::ConfigError.
std::string wave_path(const std::string& name);

// The name of the current run: the current GoogleTest's full name ("Suite.Name") when the test
// support (tb/common/tb_util) is linked and a test runs, else "standalone".
std::string current_test_name();
// The test support registers where the name comes from.
void set_run_name_source(std::function<std::string()>);

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

// Bit access on a Verilator port value of any width (IData, QData, VlWide).
template <class T>
uint64_t get_bits(const T& v, unsigned lsb, unsigned width) {
  uint64_t out = 0;
  for (unsigned i = 0; i < width; ++i) {
    const unsigned b = lsb + i;
    uint64_t bit;
    if constexpr (std::is_integral_v<T>)
      bit = (static_cast<uint64_t>(v) >> b) & 1u;
    else
      bit = (v[b / 32] >> (b % 32)) & 1u;
    out |= bit << i;
  }
  return out;
}

template <class T>
void set_bits(T& v, unsigned lsb, unsigned width, uint64_t value) {
  for (unsigned i = 0; i < width; ++i) {
    const unsigned b = lsb + i;
    const bool bit = (value >> i) & 1u;
    if constexpr (std::is_integral_v<T>) {
      v = static_cast<T>((v & ~(T{1} << b)) | (static_cast<T>(bit) << b));
    } else {
      v[b / 32] = (v[b / 32] & ~(1u << (b % 32))) | (static_cast<uint32_t>(bit) << (b % 32));
    }
  }
}

template <class T>
void flip_bit(T& v, unsigned b) {
  if constexpr (std::is_integral_v<T>)
    v ^= static_cast<T>(T{1} << b);
  else
    v[b / 32] ^= 1u << (b % 32);
}

// The element count N of an unpacked array port of a Verilated model (a C array T[N] at the top
// level, VlUnpacked<T, N> inside): vl_count<decltype(model.port)>.
template <class A>
struct vl_count_of;
template <class T, std::size_t N>
struct vl_count_of<T[N]> : std::integral_constant<unsigned, static_cast<unsigned>(N)> {};
template <template <class, std::size_t> class A, class T, std::size_t N>
struct vl_count_of<A<T, N>> : std::integral_constant<unsigned, static_cast<unsigned>(N)> {};
template <class A>
inline constexpr unsigned vl_count = vl_count_of<std::remove_cvref_t<A>>::value;

// Flit fields, LSB first (sw/isa/hw.json "ici", generated).
using FlitLayout = isa::hw::ici::FlitLayout;

}  // namespace tp::tb
