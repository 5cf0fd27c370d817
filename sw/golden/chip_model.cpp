#include "chip_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <type_traits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "interrupt.h"
#include "vpu_ops.h"

// The function of the chip; its timing estimate is chip_timing.cpp's (ChipTiming).

namespace tp::golden {

using isa::Err;
using isa::Op;

namespace {

bool is_vector(Op op) { return vpu_is_vector_op(op); }

// dst = src, an instruction a dispatch: 16 bytes at a time where the host has SSE2, since the
// compiler's own copy of the (large) struct is `rep movs`, whose start-up costs more than the
// copy (the timing-only model's front end spent a third of its time there).
void copy_instr(isa::Instr& dst, const isa::Instr& src) {
  static_assert(std::is_trivially_copyable_v<isa::Instr>);
#if defined(__SSE2__)
  constexpr std::size_t kVecs = sizeof(isa::Instr) / 16;
  auto* d = reinterpret_cast<unsigned char*>(&dst);
  const auto* s = reinterpret_cast<const unsigned char*>(&src);
  for (std::size_t i = 0; i < kVecs; ++i)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 16 * i),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16 * i)));
  std::memcpy(d + 16 * kVecs, s + 16 * kVecs, sizeof(isa::Instr) % 16);
#else
  dst = src;
#endif
}

}  // namespace

ChipModel::ChipModel(const tp::Preset& p)
    : preset_(p),
      n_(p.mxu.n),
      page_beats_(std::max<uint64_t>(1, 1024 / std::max(1u, p.mxu.n))),
      vmem_(std::size_t{p.chip.vmem_rows} * p.mxu.n),
      mxu_(p.mxu.n, p.mxu.acc_rows),
      timing_(make_dataflow_timing(p)) {
  if (p.chip.queue == 0) throw std::invalid_argument("ChipModel: chip.queue must be positive");
  for (auto& q : queues_) q.reset(p.chip.queue);
  timeline_.keep_events(false);  // totals only, until someone asks for a trace
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

void ChipModel::check_loadable(const isa::Program& prog) const {
  isa::check_preset(prog, preset_);
  if (prog.code.size() > preset_.chip.imem_words)
    throw std::invalid_argument(
        fmt::format("ChipModel::load: program of {} instructions does not fit the {}-word "
                    "instruction memory",
                    prog.code.size(), preset_.chip.imem_words));
}

void ChipModel::load(const isa::Program& prog) {
  check_loadable(prog);
  code_ = prog.code;
  decoded_.resize(code_.size());
  for (std::size_t i = 0; i < code_.size(); ++i) {
    Fetch& fe = decoded_[i];
    fe = Fetch{};
    fe.d = isa::decode(code_[i]);
    if (fe.d.err != Err::none) continue;
    const isa::Instr& in = fe.d.instr;
    fe.desc = &isa::desc(in.op);
    fe.scalar = isa::is_scalar(in.op);
    fe.branch = isa::is_branch(in.op);
    if (fe.scalar) fe.use = isa::reg_use(in);
    if (!fe.scalar && (in.op != Op::fence || in.f.unit < isa::kQueues))
      fe.unit = static_cast<unsigned>(isa::unit_of(in));
  }
  loaded_ = true;
  pc_ = 0;
  have_fetched_ = false;
  halted_ = false;
  finished_ = false;
  result_ = Result{};
  seen_lw_ = lw_unused_ = switch_pending_ = pair_open_ = false;
  pair_writes_ = 0;
  regs_.fill(0);
  for (auto& q : queues_) q.clear();
  sems_.fill(0);
  steps_ = 0;
  stats_ = Stats{};
  for (auto& t : tokens_) t.clear();
  seq_.fill(0);
  timing_->reset();
  timeline_.start(code_);
  timeline_.set_ici(ici_);
}

void ChipModel::set_timing(std::unique_ptr<ChipTiming> t) {
  if (!t) throw std::invalid_argument("ChipModel::set_timing: no timing model");
  timing_ = TimingHolder(std::move(t));
  timing_->reset();
}

void ChipModel::set_ici(const IciRegs& r) {
  ici_ = r;
  pod_mode_ = uint64_t{r.w} * r.h > 1;
  timeline_.set_ici(r);
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
  // Not done (the budget ran out, or waiting): the estimate so far includes the front end's time,
  // so a run stopped inside a loop of scalar instructions still reports its cycles.
  auto stopped = [&](Result r) {
    stats_.est_cycles = std::max(stats_.est_cycles, timing_->front_time());
    return r;
  };
  while (!finished_) {
    if ((steps_ & 0xffffu) == 0 && tp::interrupted()) return stopped(Result{Err::none, pc_, false, steps_});  // Ctrl-C
    if (dispatch(budget)) return stopped(Result{Err::none, pc_, false, steps_});
    if (finished_) break;
    bool progressed = false;
    for (unsigned q = 0; q < isa::kQueues && !finished_; ++q) {
      if (!can_start(q)) continue;
      if (budget == 0) return stopped(Result{Err::none, pc_, false, steps_});
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
      stats_.est_cycles = std::max(stats_.est_cycles, timing_->front_time());
    } else if (pod_mode_) {
      // Every non-empty queue's head waits on a semaphore with no count; another chip's message
      // may still bring one.
      Result r{Err::none, pc_, false, steps_};
      r.waiting = true;
      r.wait_pc = min_pc;
      for (const auto& q : queues_)
        if (!q.empty() && q.front().pc == min_pc) r.wait_sem = q.front().instr.wait;
      return stopped(r);
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
    case Op::fence:  // the unit field has room for 5..7, which name no queue
      return f.unit < isa::kQueues ? Err::none : Err::bad_field;
    case Op::halt:
      return Err::none;
    case Op::ici_send:
      if (f.rows == 0) return Err::bad_field;
      if (f.vaddr + f.rows > vmem_rows) return Err::vmem_range;
      if (f.raddr + f.rows > vmem_rows) return Err::vmem_range;
      return Err::none;
    case Op::dma_ld:
    case Op::dma_st:
      if (f.rows == 0 || f.cols == 0) return Err::bad_field;
      if (f.vaddr + (f.rows * f.cols << f.packed) > vmem_rows) return Err::vmem_range;
      if (f.haddr + (f.rows - 1) * f.hstride + f.cols > preset_.chip.hbm_beats) return Err::hbm_range;
      return Err::none;
    case Op::mxu_lw:
      if (f.vaddr + (f.packed ? (n_ + 1) / 2 : n_) > vmem_rows) return Err::vmem_range;
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

// A field with a register (FieldDesc::has_reg) becomes R[reg] + field, exactly (64 bits), and
// its register field 0: the unit sees the computed value. A computed rows that does not fit its
// field is bad_field; a computed address that does not fit fails its range check (every memory
// is smaller than its field's range, docs/isa.md).
Err ChipModel::resolve(isa::Instr& in, const isa::InstrDesc& d) const {
  for (unsigned k = 0; k < d.nfields; ++k) {
    const isa::FieldDesc& fd = d.fields[k];
    if (!fd.has_reg) continue;
    uint64_t& r = isa::field(in.f, fd.reg);
    uint64_t& v = isa::field(in.f, fd.id);
    v += regs_[r];
    r = 0;
    if (fd.id == isa::FieldId::rows && (v >> fd.width) != 0) return Err::bad_field;
  }
  return Err::none;
}

Err ChipModel::check_scalar(const isa::Instr& in, bool branch) const {
  if (in.wait != 0 || in.signal != 0) return Err::bad_field;  // the front end has no semaphores
  const isa::Fields& f = in.f;
  switch (in.op) {
    case Op::slli:
    case Op::srli:
      if (f.simm > 31) return Err::bad_field;  // simm holds the sign-extended value: negative is huge
      return Err::none;
    case Op::loop:
      if (f.rd == 0) return Err::bad_field;
      break;
    default:
      break;
  }
  if (branch && f.target >= code_.size()) return Err::branch_range;
  return Err::none;
}

// One scalar instruction or branch: registers and the next PC.
void ChipModel::exec_scalar(const isa::Instr& in) {
  const isa::Fields& f = in.f;
  const uint32_t a = regs_[f.rs1], b = regs_[f.rs2], imm = static_cast<uint32_t>(f.simm);
  uint32_t next = pc_ + 1;
  std::optional<uint32_t> rd;
  switch (in.op) {
    case Op::add:
      rd = a + b;
      break;
    case Op::sub:
      rd = a - b;
      break;
    case Op::and_:
      rd = a & b;
      break;
    case Op::or_:
      rd = a | b;
      break;
    case Op::xor_:
      rd = a ^ b;
      break;
    case Op::sll:
      rd = a << (b & 31u);
      break;
    case Op::srl:
      rd = a >> (b & 31u);
      break;
    case Op::slt:
      rd = static_cast<int32_t>(a) < static_cast<int32_t>(b) ? 1u : 0u;
      break;
    case Op::sltu:
      rd = a < b ? 1u : 0u;
      break;
    case Op::addi:
      rd = a + imm;
      break;
    case Op::slli:
      rd = a << imm;
      break;
    case Op::srli:
      rd = a >> imm;
      break;
    case Op::li:
      rd = imm;
      break;
    case Op::beq:
      if (a == b) next = static_cast<uint32_t>(f.target);
      break;
    case Op::bne:
      if (a != b) next = static_cast<uint32_t>(f.target);
      break;
    case Op::blt:
      if (static_cast<int32_t>(a) < static_cast<int32_t>(b)) next = static_cast<uint32_t>(f.target);
      break;
    case Op::bge:
      if (static_cast<int32_t>(a) >= static_cast<int32_t>(b)) next = static_cast<uint32_t>(f.target);
      break;
    case Op::loop: {
      const uint32_t c = regs_[f.rd] - 1;
      rd = c;
      if (c != 0) next = static_cast<uint32_t>(f.target);
      break;
    }
    default:
      throw std::logic_error(fmt::format("ChipModel: {} is not a scalar instruction", isa::desc(in.op).name));
  }
  if (rd && f.rd != 0) regs_[f.rd] = *rd;
  pc_ = next;
}

bool ChipModel::dispatch(uint64_t& budget) {
  bool yield_next = false;  // a unit instruction just dispatched can start (see below)
  while (!halted_ && !finished_) {
    if (!have_fetched_) {
      if (pc_ >= code_.size()) {
        fail(Err::no_halt, pc_);
        return false;
      }
      const Fetch& fe = decoded_[pc_];
      const isa::Decoded& d = fe.d;
      if (d.err != Err::none) {
        fail(d.err, pc_);
        return false;
      }
      if (fe.scalar) {
        if (const Err e = check_scalar(d.instr, fe.branch); e != Err::none) {
          fail(e, pc_);
          return false;
        }
        if (budget == 0) return true;  // the budget ran out first
        --budget;
        ++steps_;
        ++stats_.instructions;
        // It pairs with the instruction before it unless that one writes a register it reads.
        const isa::RegUse& use = fe.use;
        const bool paired = pair_open_ && (use.reads & pair_writes_) == 0;
        timing_->scalar(paired);
        const uint32_t at = pc_;
        exec_scalar(d.instr);
        pair_open_ = !paired && pc_ == at + 1;
        pair_writes_ = use.writes;
        // On the chip the units run while the front end computes: after a scalar instruction
        // the units that can start get their turn, so a long or endless loop does not keep them
        // (and their errors, ici_slice say) waiting.
        for (unsigned q = 0; q < isa::kQueues; ++q)
          if (can_start(q)) return false;
        continue;
      }
      // Resolved in place (the registers' values go into its fields): straight into its queue's
      // next entry when the queue has room, which saves copying the instruction twice; else
      // into fetched_ until it has.
      fetched_unit_ = fe.unit;
      const bool direct = d.instr.op != Op::halt && queues_[fe.unit].size() < preset_.chip.queue;
      isa::Instr& in = direct ? queues_[fe.unit].next_slot().instr : fetched_;
      copy_instr(in, d.instr);
      if (const Err e = resolve(in, *fe.desc); e != Err::none) {
        fail(e, pc_);
        return false;
      }
      if (const Err e = check(in); e != Err::none) {
        fail(e, pc_);
        return false;
      }
      if (in.op == Op::mxu_lw) seen_lw_ = lw_unused_ = true;
      if (in.op == Op::mxu_mm) lw_unused_ = false;
      have_fetched_ = true;
      if (direct) {
        push_fetched(false);
        if (yield_next) return false;
        yield_next = can_start(fetched_unit_);
        continue;
      }
    }
    if (fetched_.op == Op::halt) {
      halted_ = true;
      have_fetched_ = false;
      ++stats_.instructions;
      timing_->halt();
      return false;  // pc_ stays at the halt: the PC reported on success
    }
    const unsigned q = fetched_unit_;
    if (queues_[q].size() >= preset_.chip.queue) return false;  // stalled on a full queue
    push_fetched(true);
    // The units run while the front end fetches: the chip finds an error of an instruction it
    // has just started (ici_slice, ici_config) about when the front end checks the instruction
    // after it, so that one more is checked first (a fetch error there wins, as on the chip),
    // and then the unit runs.
    if (yield_next) return false;
    yield_next = can_start(q);
  }
  return false;
}

// The fetched instruction into its queue (copied from fetched_, or already in the next entry).
void ChipModel::push_fetched(bool copy) {
  const unsigned q = fetched_unit_;
  Entry& e = queues_[q].next_slot();
  if (copy) copy_instr(e.instr, fetched_);
  e.pc = pc_;
  e.seq = seq_[q]++;
  e.dispatch_t = timing_->dispatch(q, e.seq);
  queues_[q].push();
  have_fetched_ = false;
  ++pc_;
  ++stats_.instructions;
  pair_open_ = true;  // a scalar instruction after it issues in the same cycle
  pair_writes_ = 0;
}

// ---------------------------------------------------------------------------------------------
// Units

bool ChipModel::can_start(unsigned q) const {
  if (queues_[q].empty()) return false;
  const unsigned w = queues_[q].front().instr.wait;
  return w == 0 || sems_[w] > 0;
}

void ChipModel::execute(unsigned q) {
  const Entry& e = queues_[q].front();  // readable until the next dispatch (Ring)
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

  // ici.send's checks at execution (docs/isa.md): the registers, then an absolute destination.
  Coord dst;
  unsigned engine = 0;
  if (in.op == Op::ici_send) {
    if (!ici_regs_ok(ici_)) return fail(Err::ici_config, e.pc);
    const std::optional<Coord> d =
        ici_destination(ici_, static_cast<int64_t>(f.dx), static_cast<int64_t>(f.dy), f.abs != 0);
    if (!d) return fail(Err::ici_slice, e.pc);
    dst = *d;
    engine = injection_port(torus_of(ici_), slice_of(ici_), coord_of(ici_), dst, preset_.ici.local_ports);
  }

  const TimeSpan span = timing_->execute(q, e.seq, in, std::max(e.dispatch_t, token_t), engine);
  timeline_.span(q, e.pc, e.dispatch_t, token_t, span.start, span.complete);
  if (timeline_.keeps_events()) {  // the estimate's counter tracks (docs/observability.md)
    if (in.op == Op::mxu_mm) timeline_.activity("mxu busy", span.start, span.start + f.rows, double(f.rows));
    if (in.op == Op::dma_ld || in.op == Op::dma_st)
      timeline_.activity("memory bytes/cycle", span.start, span.complete, double(f.rows * f.cols * 4ull * n_));
  }

  // Timing only: the statistics without the data (ici.send still carries its rows); the switch
  // then moves nothing (a fence does nothing).
  const bool data = !timing_only_ || in.op == Op::ici_send;
  if (!data) {
    if (in.op == Op::dma_ld) stats_.bytes_loaded += f.rows * f.cols * 4ull * n_;
    if (in.op == Op::dma_st) stats_.bytes_stored += f.rows * f.cols * 4ull * n_;
    if (in.op == Op::mxu_mm) stats_.mxu_rows += f.rows;
    if (isa::unit_of(in) == isa::Unit::vec && in.op != Op::fence) stats_.vec_rows += f.rows;
  }
  switch (data ? in.op : Op::fence) {
    case Op::fence:
      break;
    case Op::dma_ld: {
      const uint64_t total = f.rows * f.cols;  // packed: the high halves' rows start there
      for (uint64_t r = 0; r < f.rows; ++r)
        for (uint64_t c = 0; c < f.cols; ++c) {
          const uint64_t i = r * f.cols + c;
          uint32_t* to = &vmem_[(f.vaddr + i) * n_];
          const uint32_t* src = hbm_beat(f.haddr + r * f.hstride + c);
          if (!f.packed) {
            if (src)
              std::copy_n(src, n_, to);
            else
              std::fill_n(to, n_, 0u);
            continue;
          }
          uint32_t* hi = &vmem_[(f.vaddr + total + i) * n_];
          for (unsigned l = 0; l < n_; ++l) {
            to[l] = src ? src[l] & 0xffffu : 0u;
            hi[l] = src ? src[l] >> 16 : 0u;
          }
        }
      stats_.bytes_loaded += f.rows * f.cols * 4ull * n_;
      break;
    }
    case Op::dma_st: {
      const uint64_t total = f.rows * f.cols;
      for (uint64_t r = 0; r < f.rows; ++r)
        for (uint64_t c = 0; c < f.cols; ++c) {
          const uint64_t i = r * f.cols + c;
          const uint32_t* from = &vmem_[(f.vaddr + i) * n_];
          uint32_t* to = hbm_beat_mut(f.haddr + r * f.hstride + c);
          if (!f.packed) {
            std::copy_n(from, n_, to);
            continue;
          }
          const uint32_t* hi = &vmem_[(f.vaddr + total + i) * n_];
          for (unsigned l = 0; l < n_; ++l) to[l] = (hi[l] & 0xffffu) << 16 | (from[l] & 0xffffu);
        }
      stats_.bytes_stored += f.rows * f.cols * 4ull * n_;
      break;
    }
    case Op::mxu_lw: {
      // packed: the tile's row i is the low halves of VMEM row vaddr + i for i < h, the high
      // halves of row vaddr + i - h after.
      const unsigned h = f.packed ? (n_ + 1) / 2 : n_;
      std::vector<uint16_t> tile(std::size_t{n_} * n_);
      for (unsigned i = 0; i < n_; ++i) {
        const unsigned shift = i < h ? 0 : 16;
        for (unsigned j = 0; j < n_; ++j)
          tile[f.t ? std::size_t{j} * n_ + i : std::size_t{i} * n_ + j] =
              static_cast<uint16_t>(vmem_[(f.vaddr + i % h) * n_ + j] >> shift);  // t: row i is column i
      }
      mxu_.load_weights(tile);
      switch_pending_ = true;
      break;
    }
    case Op::mxu_mm: {
      // The tile switch comes with the first row (check() rejects rows == 0, so there is one).
      if (switch_pending_) {
        mxu_.switch_tile();
        switch_pending_ = false;
      }
      // The rows go through the array in chunks (MxuModel::rows), with buffers allocated once
      // per instruction; the results are written in row order, as before.
      constexpr uint64_t kChunk = 64;
      const uint64_t chunk = std::min(f.rows, kChunk);
      std::vector<uint16_t> act(chunk * n_);
      std::vector<uint32_t> res(chunk * n_);
      for (uint64_t first = 0; first < f.rows; first += chunk) {
        const uint64_t rows = std::min(chunk, f.rows - first);
        for (uint64_t r = 0; r < rows; ++r) {
          const uint32_t* src = &vmem_[(f.vaddr + first + r) * n_];
          for (unsigned j = 0; j < n_; ++j) act[r * n_ + j] = static_cast<uint16_t>(src[j] >> (f.hi ? 16 : 0));
        }
        mxu_.rows({act.data(), rows * n_}, {res.data(), rows * n_});
        for (uint64_t r = 0; r < rows; ++r)
          mxu_.write_acc(static_cast<unsigned>(f.acc + first + r), {&res[r * n_], n_}, f.accumulate != 0);
      }
      stats_.mxu_rows += f.rows;
      break;
    }
    case Op::ici_send:
      exec_send(e, dst, span);
      break;
    default:
      exec_vector(in);
      stats_.vec_rows += f.rows;
      break;
  }

  stats_.est_cycles = std::max(stats_.est_cycles, span.complete);
  if (finished_) return;  // a send delivered to this chip overflowed a semaphore

  if (in.signal != 0) {
    if (sems_[in.signal] >= 65535) return fail(Err::sem_overflow, 0xffffffffu);  // PC not tracked (docs/chip.md)
    ++sems_[in.signal];
    tokens_[in.signal].push_back(span.complete);
  }
}

// The rows leave at once (the function is atomic); the message carries when they arrive.
void ChipModel::exec_send(const Entry& e, Coord dst, const TimeSpan& span) {
  const isa::Fields& f = e.instr.f;
  IciMessage m;
  m.src = coord_of(ici_);
  m.dst = dst;
  m.raddr = static_cast<uint32_t>(f.raddr);
  m.rsem = static_cast<unsigned>(f.rsem);
  m.pc = e.pc;
  const auto first = vmem_.begin() + static_cast<std::ptrdiff_t>(f.vaddr * n_);
  m.words.assign(first, first + static_cast<std::ptrdiff_t>(f.rows * n_));
  m.send_t = span.start;
  m.sent_t = span.complete;
  m.arrive_t = timing_->ici_arrival(e.instr, span, hops(torus_of(ici_), slice_of(ici_), m.src, dst));
  timeline_.send(span.start, e.pc, {dst.x, dst.y});
  stats_.ici_bytes_sent += f.rows * 4ull * n_;
  if (sender_) return sender_(std::move(m));
  if (dst != m.src)
    throw std::logic_error(
        fmt::format("ChipModel: the ici.send at pc {} goes from chip ({}, {}) to chip ({}, {}), but this chip has "
                    "no ICI sender hook (set_ici_sender) to deliver it",
                    e.pc, m.src.x, m.src.y, dst.x, dst.y));
  deliver(m.raddr, m.words, m.rsem, m.arrive_t);
  note_arrival(m.src, m.arrive_t);
}

void ChipModel::deliver(uint32_t raddr, std::span<const uint32_t> words, unsigned rsem, uint64_t arrive_t) {
  if (words.size() % n_ != 0)
    throw std::invalid_argument(
        fmt::format("ChipModel::deliver: {} words is not a whole number of {}-lane rows", words.size(), n_));
  if (rsem >= sems_.size())
    throw std::invalid_argument(fmt::format("ChipModel::deliver: semaphore {} is not 0..{}", rsem, sems_.size() - 1));
  const uint64_t rows = words.size() / n_;
  if (raddr + rows > preset_.chip.vmem_rows)
    throw std::out_of_range(fmt::format("ChipModel::deliver: rows {} .. {} run past the {} VMEM rows", raddr,
                                        raddr + rows, preset_.chip.vmem_rows));
  std::copy(words.begin(), words.end(), vmem_.begin() + static_cast<std::ptrdiff_t>(uint64_t{raddr} * n_));
  stats_.ici_bytes_received += words.size() * 4ull;
  if (rsem == 0) return;
  if (sems_[rsem] >= 65535) {
    if (!finished_) fail(Err::sem_overflow, 0xffffffffu);  // PC not tracked (docs/chip.md)
    return;
  }
  ++sems_[rsem];
  tokens_[rsem].push_back(arrive_t);
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
