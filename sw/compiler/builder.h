// The compiler's internals shared by its two program builders (docs/compiler.md): the unrolled
// form (compiler.cpp) and the loop nests (loops.cpp). Not installed; include only from
// sw/compiler.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler.h"
#include "instr_build.h"

namespace tp::compiler::detail {

using isa::Instr;
using isa::Op;

constexpr uint32_t kWeightSlots = 4;  // R
constexpr std::string_view kCommentLead = "#";

// Semaphore numbers (1..isa::kNumSems - 1; 0 means none).
constexpr unsigned kAFull = 1, kAFree = 2, kWFull = 3, kWFree = 4, kAccFull = 5, kAccFree = 6, kOutFull = 7,
                   kOutFree = 8, kBias = 9, kLayer = 10;

constexpr std::array<std::string_view, 11> kSemNames = {
    "", "A_FULL", "A_FREE", "W_FULL", "W_FREE", "ACC_FULL", "ACC_FREE", "OUT_FULL", "OUT_FREE", "BIAS", "LAYER"};
static_assert(kSemNames.size() == kSemaphores + 1, "compiler.h's kSemaphores names them all");

enum class Queue : uint64_t { load = 0, mxu = 1, vec = 2, store = 3 };

inline uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// One line of the program: an instruction with its comment, or a comment alone; or a label (a
// branch target: the index of the next instruction). A branch's target field is filled from its
// `target` label when the program is finished (finish()).
struct Line {
  std::optional<Instr> instr;
  std::string comment;
  std::string label;   // this line defines the label (no instruction)
  std::string target;  // the instruction branches to this label
  Line(std::optional<Instr> i = std::nullopt, std::string c = {}, std::string l = {}, std::string t = {})
      : instr(std::move(i)), comment(std::move(c)), label(std::move(l)), target(std::move(t)) {}
};
using Lines = std::vector<Line>;

inline Instr fence(Queue q, unsigned wait, unsigned signal) {
  return isa::build::fence(static_cast<unsigned>(q), wait, signal);
}

using isa::build::dma;

inline Instr vec(Op op, uint64_t dst, uint64_t a, uint64_t rows, bool a_acc) {
  Instr i = isa::build::vec(op, dst, a, rows, 0, 0);
  i.f.a_acc = a_acc ? 1 : 0;
  return i;
}

// W's beats from one K-tile to the next (nb column tiles), and one weight tile's dma.ld into VMEM
// row vaddr from beat haddr: n rows, or with W in bf16x2 n/2 packed beats, each two rows.
inline uint64_t w_kstep(const Preset& p, const MatmulLayer& l, uint64_t nb) {
  return (l.w.bf16x2 ? p.mxu.n / 2 : p.mxu.n) * nb;
}
inline Instr w_load(const Preset& p, const MatmulLayer& l, uint64_t nb, uint64_t vaddr, uint64_t haddr) {
  Instr i = isa::build::dma(Op::dma_ld, vaddr, haddr, l.w.bf16x2 ? p.mxu.n / 2 : p.mxu.n, 1, nb, kWFree, kWFull);
  i.f.packed = l.w.bf16x2 ? 1 : 0;
  return i;
}

inline std::string layer_name(size_t index, const MatmulLayer& l) {
  return fmt::format("layer {} ({}x{}x{})", index, l.m, l.k, l.n);
}

// The VMEM and accumulator map of one layer.
struct Layout {
  Tiling t;
  uint64_t a_buf[2], w_slot0, out_buf[2], bias_buf;
  uint64_t acc_buf[2];
};

inline Layout layout(const Preset& p, const Tiling& t) {
  Layout l{};
  l.t = t;
  const uint64_t n = p.mxu.n;
  l.a_buf[0] = 0;
  l.a_buf[1] = uint64_t{t.tm} * t.kb;
  l.w_slot0 = 2 * uint64_t{t.tm} * t.kb;
  l.out_buf[0] = l.w_slot0 + kWeightSlots * n;
  l.out_buf[1] = l.out_buf[0] + t.tm;
  l.bias_buf = l.out_buf[1] + t.tm;
  l.acc_buf[0] = 0;
  l.acc_buf[1] = t.tm;
  return l;
}

// An estimate of the loop nest's speed (loops.cpp): the front end's issue cycles over the run
// (one instruction per cycle, two when a scalar one pairs) against a lower bound of the MXU's cycles. front_cycles near
// or above mxu_cycles: the scalar unit would slow the MXU (short K, many column tiles, few rows).
struct LoopCost {
  uint64_t front_cycles = 0, mxu_cycles = 0;
  uint64_t written_out = 0;  // layers written out, no longer than their nests
};

// The front end's dual issue (pairing.cpp): reorders each basic block of lines [begin, end) so
// that as many scalar instructions as possible issue in the same cycle as the one before them
// (the unit instructions keep their order, every register use sees its program-order value); and
// the issue cycles of lines [begin, end) run straight through (a branch: the next is its target).
void schedule_pairs(Lines&, size_t begin, size_t end);
uint64_t issue_cycles(const Lines&, size_t begin, size_t end);

// The loop-nest program of the layers (loops.cpp); plans[i] is layers[i]'s checked tiling. With
// write_out, a layer whose unrolled code is no longer than its nest is written out instead.
Lines build_looped(const Preset&, const std::vector<MatmulLayer>&, const std::vector<Tiling>&, bool write_out,
                   LoopCost* = nullptr);
// One layer of the unrolled form (compiler.cpp).
Lines unrolled_layer(const Preset&, size_t index, const MatmulLayer&, const Tiling&, bool last);

// Emits the header comment and the program's initial tokens (shared by both forms).
void program_start(Lines&, const Preset&, const std::vector<MatmulLayer>&, const std::vector<Tiling>&);
// Emits the program's halt (shared by both forms).
inline void program_end(Lines& lines) {
  Instr h;
  h.op = Op::halt;
  lines.push_back({h, "done when every queue has drained", {}, {}});
}

}  // namespace tp::compiler::detail
