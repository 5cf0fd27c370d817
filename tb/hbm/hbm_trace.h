// One line of an HBM trace (hbm_bench --trace, docs/hbm.md): "0xADDRESS READ|WRITE CYCLE [BYTES]"
// (DRAMSim3's format plus an optional size, default 32 bytes); '#' starts a comment line. Header
// only, so that hbm_bench and the trace fuzz target (tb/fuzz/fuzz_trace.cpp) parse the same way.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>

namespace tp::tb {

struct TraceLine {
  bool write = false;
  uint64_t burst = 0, cycle = 0;  // the byte address / 32; the cycle it may be presented at
  unsigned bursts = 1;            // ceil(BYTES / 32)
};

// Parses line `lineno` of `file` into `out`; false for an empty or comment line (out unchanged).
// `last` is the cycle of the previous request line, and becomes this one's. Throws
// std::invalid_argument "file:line: ..." for a malformed line, a size outside 1..4096 bytes or a
// cycle that goes backwards.
inline bool parse_trace_line(const std::string& line, const std::string& file, uint64_t lineno, uint64_t& last,
                             TraceLine& out) {
  if (line.empty() || line[0] == '#') return false;
  std::istringstream ss(line);
  std::string addr, op;
  uint64_t cycle = 0, bytes = 32;
  if (!(ss >> addr >> op >> cycle) || (op != "READ" && op != "WRITE"))
    throw std::invalid_argument(
        fmt::format("{}:{}: expected '0xADDRESS READ|WRITE CYCLE [BYTES]', got '{}'", file, lineno, line));
  if (std::string extra; ss >> extra) {
    char* end = nullptr;
    bytes = std::strtoull(extra.c_str(), &end, 0);
    std::string rest;
    if (*end != '\0' || bytes == 0 || bytes > 4096 || (ss >> rest))
      throw std::invalid_argument(
          fmt::format("{}:{}: bad size '{}' (bytes 1..4096, then the end of the line)", file, lineno, extra));
  }
  char* end = nullptr;
  const uint64_t a = std::strtoull(addr.c_str(), &end, 0);
  if (*end != '\0') throw std::invalid_argument(fmt::format("{}:{}: bad address '{}'", file, lineno, addr));
  if (cycle < last) throw std::invalid_argument(fmt::format("{}:{}: cycle {} goes backwards", file, lineno, cycle));
  last = cycle;
  out = {op == "WRITE", a / 32, cycle, static_cast<unsigned>((bytes + 31) / 32)};
  return true;
}

}  // namespace tp::tb
