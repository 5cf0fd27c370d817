// The tensorpod compiler: matmul layers (optionally with bias, ReLU and a bf16 output) to one
// program for the chip (docs/chip.md). The tiling and the synchronisation scheme are described
// at the top of compiler.cpp.
//
// HBM layout of every matrix (the host writes it, see pack_bf16 / pack_fp32): a rows x cols
// matrix is padded with zeros to a whole number of beats per row, ceil(cols / n) beats, row r
// at beat + r * ceil(cols / n). A weight matrix W[k, n] is also padded with zero rows up to a
// multiple of n rows (padded_rows), because the MXU always loads whole n x n tiles.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "config.h"
#include "instr_build.h"
#include "isa.h"

namespace tp::compiler {

// A bad layer list: the message names the layer and what is wrong.
class CompileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A padded matrix in HBM: rows x ceil(cols / n) beats, row-major, row r at beat + r * ceil(cols / n).
// bf16x2 (A and W only): bf16 packed two per 32-bit word, half the beats (pack_bf16x2 has the
// layout); they stay two per word in VMEM, where mxu.lw packed and mxu.mm hi read them
// (docs/compiler.md).
struct MatrixRef {
  uint64_t beat = 0;
  uint32_t rows = 0, cols = 0;
  bool bf16x2 = false;
};

// C[m, n] = A[m, k] x W[k, n] (+ the bias row b[1, n]) (then ReLU). A and W hold bf16 (bits 15:0 of
// each 32-bit word), the bias fp32; C is fp32, or with out_bf16 bf16 in bits 15:0. The refs must
// have the layer's shapes: a m x k, w k x n (stored with padded_rows(k) rows), b 1 x n, c m x n.
struct MatmulLayer {
  uint32_t m = 0, k = 0, n = 0;
  bool bias = false, relu = false, out_bf16 = false;
  MatrixRef a, w, b, c;
};

// How to write the program (docs/compiler.md).
//  loops:     each layer a loop nest over its M blocks, column tiles and K-tiles, with addresses
//             in scalar registers: the program's size does not grow with the shapes; but a layer
//             that written out takes no more instructions than its nest is written out (its
//             loops would run a few trips, which buys nothing and costs the front end's cycles);
//  nests:     loops, with every layer its loop nest however short (to measure and test the nests),
//             but a layer whose A is bf16x2, which every form writes out (the nests load A plain);
//  unrolled:  every tile written out, as before the ISA had loops (it fits the instruction
//             memory only for small layers);
//  automatic: loops, unless the unrolled program fits the instruction memory and is not longer
//             (the loops keep the MXU as fed: the front end's dual issue).
enum class Form { automatic, loops, unrolled, nests };
struct Options {
  Form form = Form::automatic;
};
std::string_view form_name(Form);  // "automatic", "loops", "unrolled", "nests"

// What compile() writes for these layers: the form it picks and both forms' sizes (unrolled 0: it
// does not fit the instruction memory), and the loop nest's front-end cycles over the MXU's
// lower bound (above about 1, the loops are slower than the MXU).
struct CompileInfo {
  Form form = Form::loops;
  uint64_t instructions = 0, looped_instructions = 0, unrolled_instructions = 0;
  uint64_t layers_written_out = 0;  // layers the loops form writes out (none in nests)
  double front_per_mxu = 0;
};
CompileInfo compile_info(const Preset&, const std::vector<MatmulLayer>&, const Options& = {});

// One program: the layers in order, each layer's loads waiting for the previous layer's stores,
// then halt. Throws CompileError (zero shapes, shapes that do not match the refs, matrices that
// overlap or run past the end of HBM, a layer that does not fit VMEM or the accumulators, a
// program longer than the instruction memory).
// info (optional): what compile_info() would say, from the same build.
struct CompileInfo;
isa::Program compile(const Preset&, const std::vector<MatmulLayer>&, const Options& = {}, CompileInfo* info = nullptr);

// The semaphores compile()'s programs use: 1 .. kSemaphores (docs/compiler.md "Queues and
// semaphores"). A program that runs beside one (seg::overlapped) uses others.
inline constexpr unsigned kSemaphores = 10;

// The semaphore counts compile()'s program leaves when it is done: its queues' initial tokens
// (the free A buffers, weight slots, accumulator and output buffers), back. A program that goes on
// after it (a segment of a sharded program, sw/driver/shard.h) takes them first.
std::vector<isa::build::Drain> leftover_tokens();

// The same program as commented assembly text (labels for the branch targets):
// isa::assemble() of it gives compile()'s Program.
std::string compile_asm(const Preset&, const std::vector<MatmulLayer>&, const Options& = {});

// Beats of a rows x cols matrix in HBM: rows * ceil(cols / n).
uint64_t padded_beats(const Preset&, uint32_t rows, uint32_t cols);

// rows rounded up to a multiple of n: the rows a weight matrix occupies in HBM.
uint32_t padded_rows(const Preset&, uint32_t rows);

// A layer m x k x n with A, W, the bias row (with bias) and C one after another from HBM beat 0:
// for compile-only uses (sizes, tiling), whose programs do not depend on where the matrices sit.
MatmulLayer packed_layer(const Preset&, uint32_t m, uint32_t k, uint32_t n, bool bias = false);

// The tiling the compiler picks for one layer (for reports and tests).
struct Tiling {
  uint32_t kb = 0, nb = 0;  // weight tiles along K and along N
  uint32_t tm = 0;          // rows per M block
  uint32_t mb = 0;          // M blocks
  uint32_t vmem_rows = 0;   // VMEM rows the layer uses
};
Tiling plan(const Preset&, const MatmulLayer&);

// bf16 two per word (MatrixRef::bf16x2), as the compiler's programs read them. An activation
// matrix (weights false): rows x ceil(Kt / 2) beats for its Kt = ceil(cols / n) column tiles, beat
// (r, j) lane l holding element (r, 2j n + l) in bits 15:0 and (r, (2j + 1) n + l) in bits 31:16
// (zero past the matrix). A weight matrix (weights true; n even): padded_rows(rows) / 2 beat-rows
// x ceil(cols / n) beats, beat-row kb n/2 + i of column tile c holding rows kb n + i (bits 15:0) and
// kb n + n/2 + i (bits 31:16) of the tile: n/2 beats are one n x n tile, read by a packed mxu.lw.
uint64_t bf16x2_beats(const Preset&, uint32_t rows, uint32_t cols, bool weights);
std::vector<uint32_t> pack_bf16x2(const Preset&, uint32_t rows, uint32_t cols, std::span<const uint16_t> row_major,
                                  bool weights);
// The beats a matrix takes in HBM as its ref says (padded, or bf16x2); weights: a W operand.
uint64_t matrix_beats(const Preset&, const MatrixRef&, bool weights);
// What "bf16x2 operands" means for a layer, as the driver and the tool apply it: W bf16x2 at an
// even n, A bf16x2 where the layer still compiles with it (a bf16x2 A is written out, which the
// instruction memory may not hold). Returns the layer with those flags; its refs' beats are
// unchanged (the caller places the matrices with matrix_beats).
MatmulLayer prefer_bf16x2(const Preset&, MatmulLayer, const Options& = {});

// Host helpers. pack_bf16: row-major rows x cols bf16 values -> padded HBM words (value in bits
// 15:0, padding zero); pack_fp32: the same for fp32 bit patterns (the bias row). With
// pad_rows, the rows are padded with zero rows to a multiple of n (weights). unpack: padded words
// -> row-major rows x cols words.
std::vector<uint32_t> pack_bf16(const Preset&, uint32_t rows, uint32_t cols, std::span<const uint16_t> row_major,
                                bool pad_rows = false);
std::vector<uint32_t> pack_fp32(const Preset&, uint32_t rows, uint32_t cols, std::span<const uint32_t> row_major,
                                bool pad_rows = false);
std::vector<uint32_t> unpack(const Preset&, uint32_t rows, uint32_t cols, std::span<const uint32_t> padded);

}  // namespace tp::compiler
