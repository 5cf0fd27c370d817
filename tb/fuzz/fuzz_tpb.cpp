// Fuzz target: the .tpb loader (tp::isa::deserialize) on arbitrary bytes, then the disassembler.
// IsaError from the loader is the expected outcome for bad bytes. A file the loader accepts must
// serialize back to the same bytes (the format has one encoding), disassemble without an error,
// and its disassembly must assemble (for the tiny preset: the header line is a comment) back to
// the same words. Any other exception, a crash, a leak or UB is a finding.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "config.h"
#include "fuzz_util.h"
#include "isa.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tp::Preset preset = tp::load_preset("tiny");
  const std::span<const uint8_t> bytes(data, size);
  tp::isa::Program p;
  try {
    p = tp::isa::deserialize(bytes, "fuzz.tpb");
  } catch (const tp::isa::IsaError&) {
    return 0;
  }
  std::vector<uint8_t> again;
  try {
    again = tp::isa::serialize(p);
  } catch (const tp::isa::IsaError& e) {
    tp::fuzz::fail("a loaded program does not serialize: {}", e.what());
  }
  if (again.size() != size || !std::equal(again.begin(), again.end(), data))
    tp::fuzz::fail("a loaded program serializes to other bytes ({} bytes, read {})", again.size(), size);
  std::string dis;
  tp::isa::Program q;
  try {
    dis = tp::isa::disassemble(p);
    q = tp::isa::assemble(dis, "fuzz.disasm.s", preset);
  } catch (const tp::isa::IsaError& e) {
    tp::fuzz::fail("the disassembly of a loaded program does not assemble: {}\n{}", e.what(), dis);
  }
  if (q.code != p.code) tp::fuzz::fail("the disassembly assembles to other words:\n{}", dis);
  return 0;
}
