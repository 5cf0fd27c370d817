// Instruction builders for programs written in C++: the compiler (sw/compiler) and the driver's
// hand-written chip programs (pod_programs.cpp, collectives.cpp).
#pragma once

#include <array>
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

// ---- Activations: short vector programs on vexp and vrcp (docs/numerics.md, "Activations") ----
//
// act over `rows` VMEM rows at a into dst, through tmp (rows rows, apart from a and dst); `ones`
// is a VMEM row of 1.0 in every lane (read broadcast). They are vector instructions only, so
// they run in order in the vector queue with no semaphore of their own: wait and signal are
// the first and last instruction's.
//   sigmoid  1 / (1 + e^-x)                               4 instructions
//   tanh     2 / (1 + e^-2x) - 1                          6
//   softmax  over the lanes of each row: e^(x - max) / sum 6 (dst may be a)
enum class Activation { sigmoid, tanh, softmax };

inline std::vector<isa::Instr> activation(Activation act, uint64_t dst, uint64_t a, uint64_t rows, uint64_t tmp,
                                          uint64_t ones, unsigned wait = 0, unsigned signal = 0) {
  using isa::Op;
  constexpr uint32_t kMinus1 = 0xbf800000u, kMinus2 = 0xc0000000u, kTwo = 0x40000000u;
  std::vector<isa::Instr> v;
  auto op = [&](Op o, uint64_t d, uint64_t src, uint64_t b = 0, bool bcast = false, uint32_t imm = 0) {
    isa::Instr i = vec(o, d, src, rows, 0, 0);
    i.f.b = b;
    i.f.b_bcast = bcast ? 1 : 0;
    i.f.imm = imm;
    v.push_back(i);
  };
  switch (act) {
    case Activation::sigmoid:
      op(Op::vscale, tmp, a, 0, false, kMinus1);
      op(Op::vexp, tmp, tmp);
      op(Op::vadd, tmp, tmp, ones, true);
      op(Op::vrcp, dst, tmp);
      break;
    case Activation::tanh:
      op(Op::vscale, tmp, a, 0, false, kMinus2);
      op(Op::vexp, tmp, tmp);
      op(Op::vadd, tmp, tmp, ones, true);
      op(Op::vrcp, tmp, tmp);
      op(Op::vscale, tmp, tmp, 0, false, kTwo);
      op(Op::vsub, dst, tmp, ones, true);
      break;
    case Activation::softmax:
      op(Op::vredmax, tmp, a);
      op(Op::vsub, tmp, a, tmp);
      op(Op::vexp, tmp, tmp);
      op(Op::vredsum, dst, tmp);
      op(Op::vrcp, dst, dst);
      op(Op::vmul, dst, tmp, dst);
      break;
  }
  v.front().wait = wait;
  v.back().signal = signal;
  return v;
}

// ---- Segments: programs built from pieces (sw/driver/shard.h, docs/compiler.md "Sharding") ----
//
// A sharded chip program is a row of segments (a compiled layer chain, a collective, a vector
// epilogue, ...) and a halt, each free to use semaphores and VMEM afresh. The hand-over:
//   seg_end    a chain of fences through every queue (mxu, vector, ICI, load, store; one
//              semaphore per link, kSegChain), each after that queue's last instruction of the
//              segment and the fences that take the segment's leftover counts (its free-buffer
//              tokens); then the store queue signals one "go" token for each of the load, mxu and
//              vector queues (kSegGo).
//   seg_begin  one fence in each of those queues that takes its go token. The store queue needs
//              none (its next instructions come after the chain in its own order); a segment
//              that uses the ICI queue gates it itself from its load queue (collectives.cpp).
// So once a queue starts the next segment, every queue is done with the segment before and
// every semaphore it used is at 0. Only a queue's head instruction waits, so two instructions
// conflict only if they are the heads of two queues waiting for the same semaphore at once (one
// could take the other's count). The protocol's semaphores are the top eight (kSegFirst up), which
// no segment uses: each chain semaphore is waited by one queue, each go token by one queue, and a
// go token (and the ICI gate) is only ever signalled once the segment before is complete, so
// whichever of its takers gets a count is rightly released. seg_program_start() gives the first
// segment its go tokens.
// A collective segment first tells each chip that sends to it that it is ready: a one-row
// ici.send into the sender's VMEM row seg_token_row() (the last row of VMEM, which no segment
// uses for data) with rsem kSegReady, which the sender's first transfer waits for.
inline constexpr unsigned kSegFirst = isa::kNumSems - 8;  // segments use 1 .. kSegFirst - 1
inline constexpr unsigned kSegReady = isa::kNumSems - 1;
inline constexpr std::array<unsigned, 4> kSegChain = {kSegFirst + 3, kSegFirst + 4, kSegFirst + 5, kSegFirst + 6};
// Go tokens: load, mxu, vector.
inline constexpr std::array<unsigned, 3> kSegGo = {kSegFirst, kSegFirst + 1, kSegFirst + 2};
inline constexpr std::array<unsigned, 3> kSegGoUnits = {kUnitLoad, static_cast<unsigned>(isa::Unit::mxu), kUnitVec};
inline uint64_t seg_token_row(const Preset& p) { return p.chip.vmem_rows - 1; }

inline void seg_program_start(std::vector<isa::Instr>& code) {
  for (const unsigned go : kSegGo) code.push_back(fence(kUnitStore, 0, go));
}

inline void seg_begin(std::vector<isa::Instr>& code) {
  for (size_t q = 0; q < kSegGo.size(); ++q) code.push_back(fence(kSegGoUnits[q], kSegGo[q], 0));
}

// Counts a segment leaves on a semaphore (its free-buffer tokens, back at the end), taken by
// fences in `unit`'s queue before the segment ends.
struct Drain {
  unsigned unit = 0, sem = 0, count = 0;
};
inline void seg_end(std::vector<isa::Instr>& code, const std::vector<Drain>& drains) {
  const std::array<unsigned, 5> order = {static_cast<unsigned>(isa::Unit::mxu), kUnitVec, kUnitIci, kUnitLoad,
                                         kUnitStore};
  unsigned prev = 0;
  for (size_t q = 0; q < order.size(); ++q) {
    if (prev != 0) code.push_back(fence(order[q], prev, 0));
    for (const auto& d : drains)
      if (d.unit == order[q])
        for (unsigned c = 0; c < d.count; ++c) code.push_back(fence(order[q], d.sem, 0));
    if (q + 1 < order.size()) {
      prev = kSegChain[q];
      code.push_back(fence(order[q], 0, prev));
    }
  }
  seg_program_start(code);  // the store queue, last in the chain, hands out the go tokens
}

// code's branch and loop targets moved by `offset` instructions (code placed at that index).
inline void relocate(std::vector<isa::Instr>& code, uint64_t offset) {
  for (auto& i : code)
    if (isa::find_field(isa::desc(i.op), "target") != nullptr) i.f.target += offset;
}

// A program's instructions, decoded (throws IsaError for a word that does not decode cleanly).
inline std::vector<isa::Instr> instrs(const isa::Program& prog) {
  std::vector<isa::Instr> out;
  out.reserve(prog.code.size());
  for (const auto& w : prog.code) {
    const auto d = isa::decode(w);
    if (d.err != isa::Err::none) throw isa::IsaError("a program word that does not decode");
    out.push_back(d.instr);
  }
  return out;
}

inline isa::Program program(const Preset& p, const std::vector<isa::Instr>& code) {
  isa::Program prog;
  prog.preset = p.name;
  prog.fingerprint = isa::fingerprint(p);
  for (const auto& i : code) prog.code.push_back(isa::encode(i));
  return prog;
}

}  // namespace tp::isa::build
