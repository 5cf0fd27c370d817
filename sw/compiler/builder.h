// The compiler's internals shared by its two program builders (docs/compiler.md): the unrolled
// form (compiler.cpp) and the loop nests (loops.cpp). Not installed; include only from
// sw/compiler.
#pragma once

#include <fmt/format.h>

#include <algorithm>
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

// The next M block's A stream (both forms): its K-tile p goes with the weights of tile Kb + s p
// of the current block. One K-tile per tile (s = 1) moves Kb (TM + n) beats through the memory
// port in Kb tiles of TM MXU cycles: more than the port's beat a cycle, so the MXU waited for its
// weights in that pass. With three passes or more (and the weights Kb >= 4 tiles ahead, so the
// stream opens in the block's first pass) it goes every other tile: s = 2, over passes 0 to 2.
inline uint64_t a_stream_spacing(const Tiling& t) { return t.mb >= 2 && t.nb >= 3 && t.kb >= kWeightSlots ? 2 : 1; }
// The weight tile (of the current block) whose load the next block's K-tile 0 follows: with more
// K-tiles than weight slots the last of the first pass (the loop nest opens the stream between
// its part 1 and part 2, with no load-queue fence that could stall the front end), else Kb.
inline uint64_t a_stream_first(const Tiling& t) { return t.kb > kWeightSlots ? t.kb - 1 : t.kb; }

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

// A group's epilogue, in every form: a vector fence taking OUT_FREE; the first vector instruction
// (vmov, or vadd with the bias row broadcast, from the accumulators: it waits ACC_FULL and
// signals ACC_FREE), the in-place ones (vrelu, vcvtbf), the last of them signalling OUT_FULL
// (with only one, a vector fence does); then the store (waits OUT_FULL, signals OUT_FREE). With
// chunks > 1 (a layer's last group, whose epilogue no MXU work hides) the rows go in that many
// chunks, each through the vector unit and then stored, so that the stores overlap the vector
// work: the first chunk takes ACC_FULL, the last gives ACC_FREE and OUT_FREE, each gives and
// takes one OUT_FULL. The templates' address fields (immediates on top of their registers) move
// by the chunk's first row (the store's HBM beat by that times its stride), and their rows
// become the chunk's.
struct Epilogue {
  Instr first, store;
  std::string free_text, first_text, store_text;
  std::vector<std::pair<Instr, std::string>> in_place;
};
// The last group's chunks: one per 16 rows from 48 rows, at most 8; with in-place vector
// instructions (ReLU, bf16 output) two from 128 rows, else one. Its last mxu.mm goes in the
// same chunks (emit_mm_chunks), so that the first chunk's vector work starts when its rows are
// through the array, and the stores overlap each other (the store DMA starts the next store while
// the previous one's acknowledgements are on the way). What is left after the MXU's last row is
// about the array's drain, one chunk's vector work and one chunk's store. Measured on the RTL
// (2026-12-07, with two chunks from 128 rows before): 96^3 on `odd` 6545 -> 6444 cycles (with
// the loop nest's 3 weight tiles ahead), 64^3 on `tiny` 4459 -> 4379, 256^3 on `small_model`
// 17202 -> 17054. Fewer rows do not pay (the training step on a 2x2 pod, 32-row layers in two
// chunks, 2% slower); and where each chunk has two or three vector instructions the vector unit's
// part grows, and so does the fast model's error: the previous group's epilogue beside the last
// group's mm (VMEM conflicts with the MXU's reads, modelled only in part) then decides the tail.
inline unsigned last_epilogue_chunks(const MatmulLayer& l, uint64_t rows) {
  if (l.relu || l.out_bf16) return rows >= 128 ? 2 : 1;
  return rows < 48 ? 1u : static_cast<unsigned>(std::min<uint64_t>(rows / 16, 8));
}
// A row range's chunk c of `chunks`: rows r0 .. r1 - 1.
inline std::pair<uint64_t, uint64_t> chunk_rows(uint64_t rows, unsigned c, unsigned chunks) {
  return {rows * c / chunks, rows * (c + 1) / chunks};
}
// A group's last mxu.mm (it signals ACC_FULL) in the chunks of its epilogue, each signalling
// ACC_FULL, so that the epilogue's first chunk starts when the first rows are through the array
// instead of all of them (emit_epilogue with acc_chunks). Only the first takes the mm's wait.
// The template's address fields (immediates on top of its registers) move by the chunk's first
// row, and its rows become the chunk's.
template <class Emit>
void emit_mm_chunks(Emit&& emit, const Instr& mm, const std::string& text, uint64_t rows, unsigned chunks) {
  for (unsigned c = 0; c < chunks; ++c) {
    const auto [r0, r1] = chunk_rows(rows, c, chunks);
    Instr i = mm;
    i.f.vaddr += r0;
    i.f.acc += r0;
    i.f.rows = r1 - r0;
    i.f.rows_r = 0;
    if (c > 0) i.wait = 0;
    emit(i, fmt::format("{} (rows {}..{})", text, r0, r1 - 1));
  }
}
// acc_chunks: the group's last mm went in the same chunks (emit_mm_chunks), each chunk's first
// vector instruction takes one ACC_FULL.
template <class Emit>
void emit_epilogue(Emit&& emit, const Epilogue& e, uint64_t rows, unsigned chunks, bool acc_chunks = false) {
  emit(fence(Queue::vec, kOutFree, 0), e.free_text);
  for (unsigned c = 0; c < chunks; ++c) {
    const auto [r0, r1] = chunk_rows(rows, c, chunks);
    const std::string part = chunks == 1 ? "" : fmt::format(" (rows {}..{})", r0, r1 - 1);
    auto at = [&](Instr i, bool store) {
      if (chunks == 1) return i;
      i.f.rows = r1 - r0;
      i.f.rows_r = 0;
      if (store) {
        i.f.vaddr += r0;
        i.f.haddr += r0 * i.f.hstride;
      } else {
        i.f.dst += r0;
        i.f.a += r0;
      }
      return i;
    };
    std::vector<std::pair<Instr, std::string>> ops{{at(e.first, false), e.first_text + part}};
    if (c > 0 && !acc_chunks) ops[0].first.wait = 0;
    if (c + 1 < chunks) ops[0].first.signal = 0;
    for (const auto& [i, text] : e.in_place) ops.push_back({at(i, false), text});
    // The last vector instruction signals OUT_FULL; a vector fence does where it signals
    // ACC_FREE (the only one of the group's, or of its last chunk's).
    const bool own = ops.size() > 1 || ops[0].first.signal == 0;
    if (own) ops.back().first.signal = kOutFull;
    for (const auto& [i, text] : ops) emit(i, text);
    if (!own) emit(fence(Queue::vec, 0, kOutFull), std::string{});
    Instr st = at(e.store, true);
    st.wait = kOutFull;
    st.signal = c + 1 < chunks ? 0 : kOutFree;
    emit(st, e.store_text + part);
  }
}

// W's beats from one K-tile to the next (nb column tiles), and one weight tile's dma.ld into VMEM
// row vaddr from beat haddr: n rows, or with W in bf16x2 n/2 beats as they are, two bf16 a lane
// (the tile's rows i and i + n/2), which the tile's mxu.lw (weights_lw) reads packed.
inline uint64_t w_kstep(const Preset& p, const MatmulLayer& l, uint64_t nb) {
  return (l.w.bf16x2 ? p.mxu.n / 2 : p.mxu.n) * nb;
}
inline Instr w_load(const Preset& p, const MatmulLayer& l, uint64_t nb, uint64_t vaddr, uint64_t haddr) {
  return isa::build::dma(Op::dma_ld, vaddr, haddr, l.w.bf16x2 ? p.mxu.n / 2 : p.mxu.n, 1, nb, kWFree, kWFull);
}
// A weight tile's mxu.lw (its slot's address is the caller's): W_FULL, W_FREE, packed with a bf16x2 W.
inline Instr weights_lw(const MatmulLayer& l) {
  Instr lw;
  lw.op = Op::mxu_lw;
  lw.wait = kWFull;
  lw.signal = kWFree;
  lw.f.packed = l.w.bf16x2 ? 1 : 0;
  return lw;
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
