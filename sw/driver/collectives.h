// Ring collectives over a slice (docs/collectives.md): all-reduce (fp32 sum), reduce-scatter and
// all-gather, as one chip program per chip of the slice, and a host reference in the programs'
// own order of additions, so that the golden pod and the RTL pod give the reference's bits.
//
// The ring visits the slice's chips in snake order (row 0 left to right, row 1 right to left,
// ...), so that every step of the ring is one hop; the wrap from the last chip back to the first
// is one hop on a slice of one row, or of an even number of rows with the torus's wrap links
// (otherwise a few). Each chip's rows are cut into p chunks (p chips; chunk c is rows
// [c*R/p, (c+1)*R/p), possibly empty), and chunks move one ring step per step:
//   reduce-scatter, p - 1 steps (at least one row per chip): at step s the chip at ring position k sends its partial
//   chunk
//     (k - s - 1) mod p to the next chip, which adds it to its own: d = received + own. Chunk c
//     is therefore summed in ring order starting after c: ((x[c+1] + x[c+2]) + ...) + x[c]
//     (positions mod p), and ends on the chip at position c;
//   all-gather, p - 1 steps: each chip forwards the chunk it received last (first its own) to the
//     next chip, into the same rows of that chip's output.
// All-reduce is the two in a row. A step's chunk moves in pieces (CollectivePlan::pieces), each
// sent as soon as its addition is done and added as soon as it arrives, so that sending,
// receiving and adding overlap. Receive buffers are not reused, so a transfer never waits for its
// receiver; the semaphores order the additions and the sends on each chip.
//
// The torus all-reduce (Algorithm::torus, what plan_collective picks for an all-reduce on more
// than one chip when every chip gets rows enough) runs the rows in streams that use every link
// at once: on a 2D slice four, a quarter of the rows each, reduce-scattered along x then y, or y
// then x, each way round (a ring per dimension in each direction), then all-gathered back; on a
// ring two, one each way. Its order of additions is the rings' order per phase
// (docs/collectives.md "The torus all-reduce").
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "instr_build.h"
#include "isa.h"
#include "slice.h"

namespace tp::driver {

enum class Collective { all_reduce, reduce_scatter, all_gather, broadcast, all_to_all };
// How an all-reduce, a reduce-scatter or an all-gather runs: one ring through every chip (the
// snake), or the torus streams (has_torus).
enum class Algorithm { ring, torus };
std::string_view algorithm_name(Algorithm);
inline bool has_torus(Collective c) {
  return c == Collective::all_reduce || c == Collective::reduce_scatter || c == Collective::all_gather;
}
// What a collective ran as: algorithm_name for those with a torus, "ring" for broadcast, "direct"
// for all-to-all.
std::string_view algorithm_name(Collective, Algorithm);
inline constexpr Collective kCollectives[] = {Collective::all_reduce, Collective::reduce_scatter,
                                              Collective::all_gather, Collective::broadcast, Collective::all_to_all};
// "all_reduce", "reduce_scatter", "all_gather", "broadcast", "all_to_all".
std::string_view collective_name(Collective);
// nccl-tests' bus bandwidth factor on p chips: busbw = algbw x this (2(p-1)/p for all-reduce,
// (p-1)/p for reduce-scatter, all-gather and all-to-all, 1 for broadcast).
double busbw_factor(Collective, unsigned p);

// One collective on a w x h slice. rows: each chip's input rows (lanes fp32 words each) for
// all-reduce and reduce-scatter; for all-gather each chip's block, the output being p blocks;
// for broadcast the root's rows (the chip at ring position 0), which every chip's output gets;
// for all-to-all each chip's input, cut into p chunks: chunk j goes to the chip at ring position
// j, whose output is the p chunks j of every chip, in ring order.
// Inputs at HBM beat 0 of every chip, outputs at out_beat.
struct CollectivePlan {
  Collective kind = Collective::all_reduce;
  Algorithm algorithm = Algorithm::ring;  // torus: all-reduce, reduce-scatter, all-gather (whole slices)
  unsigned w = 1, h = 1, lanes = 0;
  uint32_t rows = 0;
  unsigned pieces = 4;  // each step's chunk moves in this many pieces (fewer for a smaller chunk)
  uint64_t in_beat = 0, out_beat = 0;
  uint64_t vmem_base = 0;  // the first VMEM row the program uses (its buffers from there up)
  // The ring: slice indices in ring order. Empty: every chip of the slice, in snake order. A
  // group (a row or a column of the slice, for the sharding compiler) lists its chips.
  std::vector<unsigned> members;
  // All-gather into a matrix instead of p blocks in a row: the block of ring position b is a
  // rows x cols[b]-beat matrix (its first rows * cols[b] rows; cols[b] may be 0) stored at
  // out_beat + offset[b] with a row stride of `stride` beats (the column blocks of a
  // column-split layer joined into its full output).
  struct Placement {
    uint32_t rows = 0;
    uint64_t stride = 0;
    std::vector<uint32_t> cols;
    std::vector<uint64_t> offset;
  };
  std::optional<Placement> placement;
  unsigned p() const { return members.empty() ? w * h : static_cast<unsigned>(members.size()); }
  // Slice index (i + j * w) of the chip at ring position r, and back (ring_of throws
  // DriverError for a chip not in the ring).
  unsigned at_ring(unsigned r) const;
  unsigned ring_of(unsigned k) const;
  // Chunk c of the rows (reduce-scatter, all-reduce): first row and count.
  uint32_t chunk_first(unsigned c) const;
  uint32_t chunk_rows(unsigned c) const;
  // Rows each chip's output has: all-reduce and broadcast R, reduce-scatter its chunk (torus: its
  // own chunk of each stream, in stream order), all-gather p * R, all-to-all p times its chunk.
  uint32_t out_rows(unsigned k) const;
};

// Throws DriverError for a plan that does not fit the chip (VMEM, the instruction memory) or has
// no rows. The program loads the input, runs the collective and stores the output. An all-reduce
// or a reduce-scatter gets Algorithm::torus when the slice has more than one chip and rows >=
// streams x chips (every chunk of every phase at least a row; streams: 4 on a 2D slice, 2 on a
// ring) and it fits, an all-gather when rows >= streams, else the ring; `algorithm` forces one
// (a torus plan that cannot run is an error; broadcast and all-to-all have none).
CollectivePlan plan_collective(const Preset&, Collective, unsigned w, unsigned h, uint32_t rows,
                               std::optional<Algorithm> algorithm = std::nullopt);
isa::Program collective_program(const Preset&, const CollectivePlan&, unsigned k);

// The end of the VMEM rows a plan's program uses (input, receive buffers, output, from vmem_base).
uint64_t collective_vmem_rows(const CollectivePlan&);
// Sets c.algorithm to the torus where it can run c as a segment (a whole slice, no placement,
// rows and VMEM as plan_collective asks, VMEM's last row left free), else to the ring.
void torus_if_it_fits(const Preset&, CollectivePlan& c);
// The collective of slice chip k as a segment of a larger program (isa::build's segment
// protocol, instr_build.h): it waits for the segment before, tells each chip that sends to it
// that it is ready (and waits for the same from each chip it sends to), and ends with every
// semaphore back at 0. The plan must leave VMEM's last row free (collective_vmem_rows() <
// vmem_rows); throws DriverError otherwise, for a chip not in the ring, for broadcast and
// all-to-all (not segments yet), and for a torus plan on members or with a placement.
std::vector<isa::Instr> collective_segment(const Preset&, const CollectivePlan&, unsigned k);
// The semaphores a collective's program uses (collectives.cpp), in order; seg::overlapped
// renumbers them past the compiler's.
inline constexpr std::array<unsigned, 13> kCollectiveSems = {1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14};
// collective_segment's parts: between seg_begin and seg_end come `head` (the hand-shake with the
// neighbours: the ICI gate's load fence, the ready tokens) and `body`; seg_end takes `drains`
// (the counts the body leaves). overlapped_segment (segments.h) runs a body beside a compiled layer.
struct SegmentParts {
  std::vector<isa::Instr> head, body;
  std::vector<isa::build::Drain> drains;
};
SegmentParts collective_parts(const Preset&, const CollectivePlan&, unsigned k);

// The expected outputs (per slice index) from the inputs (per slice index, rows * lanes words).
std::vector<std::vector<uint32_t>> collective_reference(const CollectivePlan&,
                                                        const std::vector<std::vector<uint32_t>>& inputs);

struct CollectiveRun {
  std::string what;
  SliceStatus status;
  bool pass = false;  // ok and every chip's output bit-exact with the reference
  uint64_t mismatches = 0;
  uint64_t bytes = 0;                     // per chip: the input's bytes (all-gather: the output's), nccl-tests' "size"
  Algorithm algorithm = Algorithm::ring;  // the plan's
  std::vector<std::vector<uint32_t>> outputs;  // per slice index
};
// Random fp32 inputs from seed (both signs, exponents near 1, no NaN or infinity), the programs
// loaded on every chip of the slice, run, read back and compared.
CollectiveRun run_collective(Slice&, Collective, uint32_t rows, uint64_t seed, uint64_t timeout_cycles = 0,
                             std::optional<Algorithm> algorithm = std::nullopt);

}  // namespace tp::driver
