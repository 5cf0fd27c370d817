// Fuzz target: the HBM trace reader's line parser (tb/hbm/hbm_trace.h, which hbm_bench --trace
// uses) on arbitrary text, line by line as hbm_bench reads a file (std::getline). A bad line must
// be refused with std::invalid_argument naming the file and line; an accepted one must be a
// request of 1 to 128 bursts at a cycle that does not go backwards. Any other exception, a crash,
// a leak or UB is a finding.
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

#include "fuzz_util.h"
#include "hbm_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in{std::string(tp::fuzz::text_of(data, size))};
  std::string line;
  uint64_t lineno = 0, last = 0;
  while (std::getline(in, line)) {
    ++lineno;
    tp::tb::TraceLine l;
    const uint64_t before = last;
    try {
      if (!tp::tb::parse_trace_line(line, "fuzz.trace", lineno, last, l)) continue;
    } catch (const std::invalid_argument& e) {
      const std::string where = "fuzz.trace:" + std::to_string(lineno) + ": ";
      if (std::string(e.what()).rfind(where, 0) != 0)
        tp::fuzz::fail("the error for line {} does not start with '{}': {}", lineno, where, e.what());
      return 0;  // hbm_bench stops at the first bad line
    }
    if (l.bursts < 1 || l.bursts > 128 || l.cycle < before || last != l.cycle)
      tp::fuzz::fail("line {} accepted as {} bursts at cycle {} (previous cycle {}): '{}'", lineno, l.bursts, l.cycle,
                     before, line);
  }
  return 0;
}
