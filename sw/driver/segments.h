// Segments of chip programs built from pieces (isa::build's segment protocol, instr_build.h),
// shared by the sharding compiler (shard.cpp) and the training step (train.cpp). Each returns the
// segment's instructions: seg_begin, the work, seg_end. Internal to sw/driver.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "collectives.h"
#include "compiler.h"
#include "config.h"
#include "isa.h"

namespace tp::driver::seg {

inline uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// VMEM rows a segment may use: all but the last (the ready token's, instr_build.h).
uint32_t data_vmem(const Preset&);

// Row ranges (first, rows) of an all-reduce over `rows` rows on p chips, each fitting VMEM.
std::vector<std::pair<uint64_t, uint32_t>> reduce_chunks(const Preset&, uint64_t rows, unsigned p);

// The reference of the vector epilogue on one element: + bias, ReLU, the bf16 rounding.
uint32_t epilogue_ref(uint32_t v, const uint32_t* bias, bool relu, bool bf16);

// From S (m x nb beats, fp32) the beats [c0, c0 + cw) of every row, + the bias row's beat (bias:
// nb beats at bias_beat), ReLU, bf16, to dst (m x cw beats).
std::vector<isa::Instr> epilogue(const Preset&, uint64_t s_beat, uint32_t m, uint32_t nb,
                                 std::optional<uint64_t> bias_beat, bool relu, bool bf16, uint64_t dst_beat,
                                 uint32_t c0, uint32_t cw);

// compile()'s program of the layers (for data_preset: the preset with one VMEM row fewer) as a
// segment placed at instruction `at` (its branch targets moved there).
std::vector<isa::Instr> compute(const Preset& data_preset, const std::vector<compiler::MatmulLayer>&, uint64_t at,
                                compiler::Form = compiler::Form::automatic);

// compute() and collective_segment() of plan in one segment, overlapped (docs/collectives.md
// "Overlap with compute"): the layers compiled (in `form`) into VMEM rows below the collective's
// buffers, which sit at the top of the segment's VMEM (plan.vmem_base is set here); the
// collective's semaphores renumbered onto those past the compiler's, the same on every chip; the
// collective's hand-shake first, then the two instruction streams interleaved in proportion, each
// in its own order, the collective's never inside a loop body of the layers (their branch
// targets moved). `at`: the instruction index where the segment goes. layers may be empty (a chip
// with nothing to compute beside the collective). Throws DriverError when the semaphores or VMEM
// do not go round.
std::vector<isa::Instr> overlapped(const Preset&, const std::vector<compiler::MatmulLayer>&, CollectivePlan plan,
                                   unsigned k, uint64_t at, compiler::Form form = compiler::Form::automatic);

// The transpose of a bf16 matrix through the MXU: src is rows x cols (ceil(cols / n) beats a row,
// rows padded with zero rows to a multiple of n), dst cols x rows (ceil(rows / n) beats a row,
// padded_rows(cols) rows). Each n x n tile is loaded transposed (mxu.lw t=1) and streamed out by
// the identity (n rows at ident_beat: lane i of row i is bf16 1.0), then rounded back to bf16:
// exact for every finite value except -0 and bf16 denormals (DAZ), which become +0.
std::vector<isa::Instr> transpose(const Preset&, uint64_t src_beat, uint32_t rows, uint32_t cols, uint64_t dst_beat,
                                  uint64_t ident_beat);
// Its reference on row-major bf16 (the golden MXU on the same tiles and the same rounding).
std::vector<uint16_t> transpose_ref(unsigned n, uint32_t rows, uint32_t cols, const std::vector<uint16_t>& src);

// Column sums of an fp32 matrix (rows x nb beats at src_beat) into one row of nb beats at
// dst_beat: for each beat a strided load of it from every row, then a tree of vadds in halves
// (row i += row i + ceil(len / 2) while len > 1; colsum_ref adds in the same order).
std::vector<isa::Instr> colsum(const Preset&, uint64_t src_beat, uint32_t rows, uint32_t nb, uint64_t dst_beat);
std::vector<uint32_t> colsum_ref(uint32_t rows, uint32_t cols, const std::vector<uint32_t>& m);

// A row-wise vector program over `rows` VMEM rows (flat beats): loads into VMEM buffers, vector
// ops between them, stores out (one chunk: the caller checks the rows fit).
struct Flat {
  struct Load {
    uint64_t vbuf, beat, rows;  // rows: the buffer's rows (0: the chunk's)
  };
  struct Store {
    uint64_t vbuf, beat;
    unsigned haddr_r = 0;  // a register added to beat
  };
  std::vector<Load> loads;
  std::vector<isa::Instr> ops;  // rows = the chunk's rows; vbufs as VMEM rows
  std::vector<Store> stores;
};
std::vector<isa::Instr> flat(const Preset&, const Flat&, uint64_t rows);

}  // namespace tp::driver::seg
