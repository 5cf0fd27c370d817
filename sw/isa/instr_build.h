// Instruction builders for programs written in C++: the compiler (sw/compiler) and the driver's
// hand-written chip programs (pod_programs.cpp, collectives.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "config.h"
#include "isa.h"

namespace tp::isa::build {

inline constexpr unsigned kUnitLoad = static_cast<unsigned>(isa::Unit::load),
                          kUnitVec = static_cast<unsigned>(isa::Unit::vec),
                          kUnitStore = static_cast<unsigned>(isa::Unit::store),
                          kUnitIci = static_cast<unsigned>(isa::Unit::ici);

inline isa::Instr fence(unsigned unit, unsigned wait, unsigned signal) {
  isa::Instr i;
  i.op = isa::Op::fence;
  i.f.unit = unit;
  i.wait = wait;
  i.signal = signal;
  return i;
}
inline isa::Instr dma(isa::Op op, uint64_t vaddr, uint64_t haddr, uint64_t rows, uint64_t cols, uint64_t hstride,
                      unsigned wait, unsigned signal) {
  isa::Instr i;
  i.op = op;
  i.f.vaddr = vaddr;
  i.f.haddr = haddr;
  i.f.rows = rows;
  i.f.cols = cols;
  i.f.hstride = hstride;
  i.wait = wait;
  i.signal = signal;
  return i;
}
// dx, dy: offsets (abs = false) or slice coordinates (abs = true).
inline isa::Instr send(uint64_t vaddr, uint64_t raddr, uint64_t rows, int dx, int dy, bool abs, unsigned rsem,
                       unsigned wait, unsigned signal) {
  isa::Instr i;
  i.op = isa::Op::ici_send;
  i.f.vaddr = vaddr;
  i.f.raddr = raddr;
  i.f.rows = rows;
  i.f.dx = static_cast<uint64_t>(static_cast<int64_t>(dx));
  i.f.dy = static_cast<uint64_t>(static_cast<int64_t>(dy));
  i.f.abs = abs ? 1 : 0;
  i.f.rsem = rsem;
  i.wait = wait;
  i.signal = signal;
  return i;
}
inline isa::Instr vec(isa::Op op, uint64_t dst, uint64_t a, uint64_t rows, unsigned wait, unsigned signal) {
  isa::Instr i;
  i.op = op;
  i.f.dst = dst;
  i.f.a = a;
  i.f.rows = rows;
  i.wait = wait;
  i.signal = signal;
  return i;
}
inline isa::Instr halt() {
  isa::Instr i;
  i.op = isa::Op::halt;
  return i;
}
inline isa::Program program(const Preset& p, const std::vector<isa::Instr>& code) {
  isa::Program prog;
  prog.preset = p.name;
  prog.fingerprint = isa::fingerprint(p);
  for (const auto& i : code) prog.code.push_back(isa::encode(i));
  return prog;
}

}  // namespace tp::isa::build
