// One line of an HBM trace (hbm_bench --trace, docs/hbm.md): "0xADDRESS READ|WRITE CYCLE [BYTES]"
// (DRAMSim3's format plus an optional size, default 32 bytes); '#' starts a comment line. Header
// only, so that hbm_bench and the trace fuzz target (tb/fuzz/fuzz_trace.cpp) parse the same way.
#pragma once

#include <fmt/format.h>

#include <cstdint>
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
  std::string addr, op, cyc;
  const auto fail = [&](const std::string& why) {
    return std::invalid_argument(fmt::format("{}:{}: {}", file, lineno, why));
  };
  if (!(ss >> addr >> op >> cyc) || (op != "READ" && op != "WRITE"))
    throw fail(fmt::format("expected '0xADDRESS READ|WRITE CYCLE [BYTES]', got '{}'", line));
  // Decimal digits only: no sign, no hex, no fraction (istream would take "-5" as 2^64 - 5).
  const auto decimal = [](const std::string& t, uint64_t& v) {
    if (t.empty() || t.size() > 19 || t.find_first_not_of("0123456789") != std::string::npos) return false;
    v = std::stoull(t);
    return true;
  };
  uint64_t cycle = 0, bytes = 32;
  if (!decimal(cyc, cycle)) throw fail(fmt::format("bad cycle '{}' (a decimal count of cycles)", cyc));
  if (std::string extra; ss >> extra) {
    std::string rest;
    if (!decimal(extra, bytes) || bytes == 0 || bytes > 4096 || (ss >> rest))
      throw fail(fmt::format("bad size '{}' (bytes 1..4096, then the end of the line)", extra));
  }
  // The address: 0x and 1 to 16 hex digits (DRAMSim3's traces write it so).
  if (addr.size() < 3 || addr.size() > 18 || addr[0] != '0' || (addr[1] != 'x' && addr[1] != 'X') ||
      addr.find_first_not_of("0123456789abcdefABCDEF", 2) != std::string::npos)
    throw fail(fmt::format("bad address '{}' (0x and 1 to 16 hex digits)", addr));
  const uint64_t a = std::stoull(addr.substr(2), nullptr, 16);
  if (cycle < last) throw fail(fmt::format("cycle {} goes backwards", cycle));
  last = cycle;
  out = {op == "WRITE", a / 32, cycle, static_cast<unsigned>((bytes + 31) / 32)};
  return true;
}

}  // namespace tp::tb
