// The user's interrupt (Ctrl-C): the tensorpod tool's SIGINT handler raises the flag, and every
// long simulation loop (the Verilated chip, the SystemC pod, the golden interpreter and pod) stops
// at its next check as if its timeout had passed, so that the tool can write a partial report
// and close the wave files. Header only: one flag per process.
#pragma once

#include <atomic>

namespace tp {

inline std::atomic<bool>& interrupt_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}
inline bool interrupted() { return interrupt_flag().load(std::memory_order_relaxed); }

}  // namespace tp
