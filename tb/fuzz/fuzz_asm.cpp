// Fuzz target: the assembler (tp::isa::assemble) on arbitrary text, for the tiny preset. What it
// accepts must disassemble, and the disassembly must assemble back to the same words; the program
// must also survive the .tpb file format unchanged. AsmError/IsaError from the first assembly are
// the expected outcome for bad text; any other exception, a crash, a leak or UB is a finding.
#include <algorithm>
#include <cstdint>
#include <string>

#include "config.h"
#include "fuzz_util.h"
#include "isa.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tp::Preset preset = tp::load_preset("tiny");
  const std::string_view text = tp::fuzz::text_of(data, size);
  tp::isa::Program p;
  try {
    p = tp::isa::assemble(text, "fuzz.s", preset);
  } catch (const tp::isa::IsaError&) {  // AsmError is one
    return 0;
  }
  std::string dis;
  tp::isa::Program q;
  try {
    dis = tp::isa::disassemble(p);
    q = tp::isa::assemble(dis, "fuzz.disasm.s", preset);
  } catch (const tp::isa::IsaError& e) {
    tp::fuzz::fail("the disassembly of an assembled program does not assemble: {}\n{}", e.what(), dis);
  }
  if (q != p) {
    for (size_t i = 0; i < std::max(p.code.size(), q.code.size()); ++i)
      if (i >= p.code.size() || i >= q.code.size() || p.code[i] != q.code[i])
        tp::fuzz::fail("reassembled program differs at instruction {} of {} (now {}):\n{}", i, p.code.size(),
                       q.code.size(), dis);
    tp::fuzz::fail("reassembled program differs in its header (preset '{}' / '{}')", p.preset, q.preset);
  }
  try {
    if (tp::isa::deserialize(tp::isa::serialize(p), "fuzz.tpb") != p)
      tp::fuzz::fail("the .tpb round trip changed the program:\n{}", dis);
  } catch (const tp::isa::IsaError& e) {
    tp::fuzz::fail("the .tpb round trip of an assembled program failed: {}", e.what());
  }
  return 0;
}
