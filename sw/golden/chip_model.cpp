#include "chip_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "vpu_ops.h"

// The timing estimate (Stats::est_cycles). Not cycle accurate; a first-order model of the
// decoupled units:
//  - the front end hands over one instruction per cycle; an instruction needs a free slot in
//    its queue, i.e. the instruction chip.queue places before it in that queue has completed;
//  - an instruction starts at max(its unit is free, its dispatch, the arrival of the semaphore
//    count it takes); durations: dma.ld / dma.st rows*cols + chip.mem_latency; mxu.lw n (on the
//    weight loader, after the previous mxu.mm started: that frees the shadow buffer); mxu.mm
//    rows on the row streamer (after its mxu.lw completed when it switches tiles), complete 2n
//    later (the array's drain); vector ceil(rows / sublanes) + 4; fence waits for its queue, takes no time;
//  - completions (signals) of a queue are in order; est_cycles is the last completion.
// Ignored: the load and store DMA sharing the memory port, VMEM bank conflicts, memory
// back-pressure, the front end's fetch pipeline.

namespace tp::golden {

using isa::Err;
using isa::Op;

namespace {

constexpr unsigned kLoad = 0, kMxu = 1, kVec = 2, kStore = 3;

bool is_vector(Op op) { return vpu_is_vector_op(op); }

}  // namespace

ChipModel::ChipModel(const tp::Preset& p)
    : preset_(p),
      n_(p.mxu.n),
      page_beats_(std::max<uint64_t>(1, 1024 / std::max(1u, p.mxu.n))),
      vmem_(std::size_t{p.chip.vmem_rows} * p.mxu.n, 0u),
      mxu_(p.mxu.n, p.mxu.acc_rows) {
  if (p.chip.queue == 0) throw std::invalid_argument("ChipModel: chip.queue must be positive");
}

// ---------------------------------------------------------------------------------------------
// HBM

void ChipModel::check_hbm_range(const char* what, uint64_t beat, uint64_t beats) const {
  if (beat > preset_.chip.hbm_beats || beats > preset_.chip.hbm_beats - beat)
    throw std::out_of_range(fmt::format("ChipModel::{}: beats {} .. {} run past the memory's {} beats", what, beat,
                                        beat + beats, preset_.chip.hbm_beats));
}

const uint32_t* ChipModel::hbm_beat(uint64_t beat) const {
  const auto it = hbm_.find(beat / page_beats_);
  if (it == hbm_.end()) return nullptr;
  return &it->second[(beat % page_beats_) * n_];
}

uint32_t* ChipModel::hbm_beat_mut(uint64_t beat) {
  auto& page = hbm_[beat / page_beats_];
  if (page.empty()) page.assign(page_beats_ * n_, 0u);
  return &page[(beat % page_beats_) * n_];
}

void ChipModel::write_hbm(uint64_t beat, std::span<const uint32_t> words) {
  if (words.size() % n_ != 0)
    throw std::invalid_argument(
        fmt::format("ChipModel::write_hbm: {} words is not a whole number of {}-word beats", words.size(), n_));
  const uint64_t beats = words.size() / n_;
  check_hbm_range("write_hbm", beat, beats);
  for (uint64_t k = 0; k < beats; ++k) std::copy_n(&words[k * n_], n_, hbm_beat_mut(beat + k));
}

std::vector<uint32_t> ChipModel::read_hbm(uint64_t beat, uint64_t beats) const {
  check_hbm_range("read_hbm", beat, beats);
  std::vector<uint32_t> out(beats * n_, 0u);
  for (uint64_t k = 0; k < beats; ++k)
    if (const uint32_t* src = hbm_beat(beat + k)) std::copy_n(src, n_, &out[k * n_]);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Program and run

void ChipModel::load(const isa::Program& prog) {
  isa::check_preset(prog, preset_);
  if (prog.code.size() > preset_.chip.imem_words)
    throw std::invalid_argument(
        fmt::format("ChipModel::load: program of {} instructions does not fit the {}-word "
                    "instruction memory",
                    prog.code.size(), preset_.chip.imem_words));
  code_ = prog.code;
  loaded_ = true;
  pc_ = 0;
  have_fetched_ = false;
  halted_ = false;
  finished_ = false;
  result_ = Result{};
  seen_lw_ = lw_unused_ = switch_pending_ = false;
  for (auto& q : queues_) q.clear();
  sems_.fill(0);
  steps_ = 0;
  stats_ = Stats{};
  for (auto& t : tokens_) t.clear();
  seq_.fill(0);
  for (auto& s : slot_free_) s.assign(preset_.chip.queue, 0);
  unit_free_.fill(0);
  queue_done_.fill(0);
  front_t_ = 0;
  mxu_handoff_ = loader_free_ = streamer_free_ = last_mm_start_ = lw_done_ = 0;
}

void ChipModel::fail(Err err, uint32_t pc) {
  finished_ = true;
  result_.err = err;
  result_.pc = pc;
  result_.done = true;
  result_.steps = steps_;
  for (auto& q : queues_) q.clear();
}

ChipModel::Result ChipModel::run(uint64_t max_steps) {
  if (!loaded_) throw std::logic_error("ChipModel::run: no program loaded");
  uint64_t budget = max_steps;
  while (!finished_) {
    dispatch();
    if (finished_) break;
    bool progressed = false;
    for (unsigned q = 0; q < isa::kQueues && !finished_; ++q) {
      if (!can_start(q)) continue;
      if (budget == 0) return Result{Err::none, pc_, false, steps_};
      --budget;
      execute(q);
      progressed = true;
    }
    if (finished_ || progressed) continue;
    // Nothing can move: the front end is halted or stalled on a full queue.
    bool empty = true;
    uint32_t min_pc = UINT32_MAX;
    for (const auto& q : queues_) {
      if (q.empty()) continue;
      empty = false;
      min_pc = std::min(min_pc, q.front().pc);
    }
    if (halted_ && empty) {
      finished_ = true;
      result_ = Result{Err::none, pc_, true, steps_};
      stats_.est_cycles = std::max(stats_.est_cycles, front_t_);
    } else {
      fail(Err::deadlock, min_pc);
    }
  }
  result_.steps = steps_;
  return result_;
}

// ---------------------------------------------------------------------------------------------
// Front end

// The checks of docs/chip.md "Checks and error codes" after decode (illegal_opcode and the
// reserved bits of bad_field), in order: rows/cols == 0, ranges, overlap, the MXU sequence.
Err ChipModel::check(const isa::Instr& in) {
  const isa::Fields& f = in.f;
  const uint64_t vmem_rows = preset_.chip.vmem_rows, acc_rows = preset_.mxu.acc_rows;
  switch (in.op) {
    case Op::fence:
    case Op::halt:
      return Err::none;
    case Op::dma_ld:
    case Op::dma_st:
      if (f.rows == 0 || f.cols == 0) return Err::bad_field;
      if (f.vaddr + f.rows * f.cols > vmem_rows) return Err::vmem_range;
      if (f.haddr + (f.rows - 1) * f.hstride + f.cols > preset_.chip.hbm_beats) return Err::hbm_range;
      return Err::none;
    case Op::mxu_lw:
      if (f.vaddr + n_ > vmem_rows) return Err::vmem_range;
      if (lw_unused_) return Err::mxu_weights_unused;
      return Err::none;
    case Op::mxu_mm:
      if (f.rows == 0) return Err::bad_field;
      if (f.vaddr + f.rows > vmem_rows) return Err::vmem_range;
      if (f.acc + f.rows > acc_rows) return Err::acc_range;
      if (!seen_lw_) return Err::mxu_no_weights;
      return Err::none;
    default:
      break;
  }
  if (!is_vector(in.op)) return Err::illegal_opcode;  // not reached: decode knows every op
  const bool use_b = vpu_uses_b(in.op), use_m = isa::uses_mask(in.op);
  const uint64_t rows = f.rows, b_rows = f.b_bcast ? 1 : rows;
  if (rows == 0) return Err::bad_field;
  if (f.dst + rows > vmem_rows) return Err::vmem_range;
  if (f.a_acc ? f.a + rows > acc_rows : f.a + rows > vmem_rows) return f.a_acc ? Err::acc_range : Err::vmem_range;
  if (use_b && f.b + b_rows > vmem_rows) return Err::vmem_range;
  if (use_m && f.imm + rows > vmem_rows) return Err::vmem_range;
  // A VMEM source is either exactly the destination range (in place) or disjoint from it.
  const auto bad_overlap = [&](uint64_t first, uint64_t count) {
    if (first == f.dst && count == rows) return false;
    return first < f.dst + rows && f.dst < first + count;
  };
  if ((!f.a_acc && bad_overlap(f.a, rows)) || (use_b && bad_overlap(f.b, b_rows)) ||
      (use_m && bad_overlap(f.imm, rows)))
    return Err::overlap;
  return Err::none;
}

void ChipModel::dispatch() {
  while (!halted_ && !finished_) {
    if (!have_fetched_) {
      if (pc_ >= code_.size()) return fail(Err::no_halt, pc_);
      const isa::Decoded d = isa::decode(code_[pc_]);
      if (d.err != Err::none) return fail(d.err, pc_);
      if (const Err e = check(d.instr); e != Err::none) return fail(e, pc_);
      if (d.instr.op == Op::mxu_lw) seen_lw_ = lw_unused_ = true;
      if (d.instr.op == Op::mxu_mm) lw_unused_ = false;
      fetched_ = d.instr;
      have_fetched_ = true;
    }
    if (fetched_.op == Op::halt) {
      halted_ = true;
      have_fetched_ = false;
      ++stats_.instructions;
      front_t_ += 1;
      return;  // pc_ stays at the halt: the PC reported on success
    }
    const unsigned q = static_cast<unsigned>(isa::unit_of(fetched_));
    const unsigned depth = preset_.chip.queue;
    if (queues_[q].size() >= depth) return;  // stalled on a full queue
    Entry e;
    e.instr = fetched_;
    e.pc = pc_;
    e.seq = seq_[q]++;
    // The slot this instruction takes was freed by the one `depth` places before it.
    const uint64_t slot = e.seq >= depth ? slot_free_[q][e.seq % depth] : 0;
    front_t_ = std::max(front_t_ + 1, slot);
    e.dispatch_t = front_t_;
    queues_[q].push_back(e);
    have_fetched_ = false;
    ++pc_;
    ++stats_.instructions;
  }
}

// ---------------------------------------------------------------------------------------------
// Units

bool ChipModel::can_start(unsigned q) const {
  if (queues_[q].empty()) return false;
  const unsigned w = queues_[q].front().instr.wait;
  return w == 0 || sems_[w] > 0;
}

void ChipModel::execute(unsigned q) {
  const Entry e = queues_[q].front();
  queues_[q].pop_front();
  const isa::Instr& in = e.instr;
  const isa::Fields& f = in.f;
  ++steps_;

  uint64_t token_t = 0;
  if (in.wait != 0) {
    --sems_[in.wait];
    if (!tokens_[in.wait].empty()) {
      token_t = tokens_[in.wait].front();
      tokens_[in.wait].pop_front();
    }
  }
  const uint64_t ready = std::max(e.dispatch_t, token_t);
  uint64_t start = 0, complete = 0;

  switch (in.op) {
    case Op::fence:
      start = std::max({ready, queue_done_[q], q == kMxu ? mxu_handoff_ : unit_free_[q]});
      complete = start;
      if (q == kMxu)
        mxu_handoff_ = start;
      else
        unit_free_[q] = complete;
      break;
    case Op::dma_ld:
      for (uint64_t r = 0; r < f.rows; ++r)
        for (uint64_t c = 0; c < f.cols; ++c) {
          uint32_t* dst = &vmem_[(f.vaddr + r * f.cols + c) * n_];
          if (const uint32_t* src = hbm_beat(f.haddr + r * f.hstride + c))
            std::copy_n(src, n_, dst);
          else
            std::fill_n(dst, n_, 0u);
        }
      stats_.bytes_loaded += f.rows * f.cols * 4ull * n_;
      start = std::max(ready, unit_free_[q]);
      complete = start + f.rows * f.cols + preset_.chip.mem_latency;
      unit_free_[q] = complete;
      break;
    case Op::dma_st:
      for (uint64_t r = 0; r < f.rows; ++r)
        for (uint64_t c = 0; c < f.cols; ++c)
          std::copy_n(&vmem_[(f.vaddr + r * f.cols + c) * n_], n_, hbm_beat_mut(f.haddr + r * f.hstride + c));
      stats_.bytes_stored += f.rows * f.cols * 4ull * n_;
      start = std::max(ready, unit_free_[q]);
      complete = start + f.rows * f.cols + preset_.chip.mem_latency;
      unit_free_[q] = complete;
      break;
    case Op::mxu_lw: {
      std::vector<uint16_t> tile(std::size_t{n_} * n_);
      for (unsigned i = 0; i < n_; ++i)
        for (unsigned j = 0; j < n_; ++j)
          tile[std::size_t{i} * n_ + j] = static_cast<uint16_t>(vmem_[(f.vaddr + i) * n_ + j] & 0xffffu);
      mxu_.load_weights(tile);
      switch_pending_ = true;
      // The shadow buffer is free once the mm that switched to the current tile has started.
      start = std::max({ready, mxu_handoff_, loader_free_, last_mm_start_});
      complete = start + n_;
      loader_free_ = complete;
      lw_done_ = complete;
      mxu_handoff_ = start;
      break;
    }
    case Op::mxu_mm: {
      start = std::max({ready, mxu_handoff_, streamer_free_});
      if (switch_pending_) start = std::max(start, lw_done_);
      std::vector<uint16_t> act(n_);
      for (uint64_t i = 0; i < f.rows; ++i) {
        if (switch_pending_) {
          mxu_.switch_tile();
          switch_pending_ = false;
        }
        const uint32_t* src = &vmem_[(f.vaddr + i) * n_];
        for (unsigned j = 0; j < n_; ++j) act[j] = static_cast<uint16_t>(src[j] & 0xffffu);
        mxu_.write_acc(static_cast<unsigned>(f.acc + i), mxu_.row(act), f.accumulate != 0);
      }
      stats_.mxu_rows += f.rows;
      streamer_free_ = start + f.rows;
      complete = start + f.rows + 2ull * n_;
      mxu_handoff_ = start;
      last_mm_start_ = start;
      break;
    }
    default:
      exec_vector(in);
      stats_.vec_rows += f.rows;
      start = std::max(ready, unit_free_[q]);
      complete = start + (f.rows + preset_.chip.sublanes - 1) / preset_.chip.sublanes + 4;  // sublanes rows a cycle
      unit_free_[q] = complete;
      break;
  }

  complete = std::max(complete, queue_done_[q]);  // a queue's completions are in order
  queue_done_[q] = complete;
  slot_free_[q][e.seq % preset_.chip.queue] = complete;
  stats_.est_cycles = std::max(stats_.est_cycles, complete);

  if (in.signal != 0) {
    if (sems_[in.signal] >= 65535) return fail(Err::sem_overflow, 0xffffffffu);  // PC not tracked (docs/chip.md)
    ++sems_[in.signal];
    tokens_[in.signal].push_back(complete);
  }
}

void ChipModel::exec_vector(const isa::Instr& in) {
  const isa::Fields& f = in.f;
  const bool use_b = vpu_uses_b(in.op), use_m = isa::uses_mask(in.op);
  std::vector<uint32_t> out(n_);
  const auto vrow = [&](uint64_t r) { return std::span<const uint32_t>(&vmem_[r * n_], n_); };
  for (uint64_t i = 0; i < f.rows; ++i) {
    const std::span<const uint32_t> a = f.a_acc ? mxu_.read_acc(static_cast<unsigned>(f.a + i)) : vrow(f.a + i);
    const std::span<const uint32_t> b = use_b ? vrow(f.b_bcast ? f.b : f.b + i) : std::span<const uint32_t>{};
    const std::span<const uint32_t> m = use_m ? vrow(f.imm + i) : std::span<const uint32_t>{};
    vpu_row(in.op, a, b, m, static_cast<uint32_t>(f.imm), out);
    std::copy(out.begin(), out.end(), &vmem_[(f.dst + i) * n_]);
  }
}

}  // namespace tp::golden
