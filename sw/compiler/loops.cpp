// The compiler's default form: each layer as a loop nest with its addresses in scalar registers,
// so that the program's size does not grow with M, K or N (docs/compiler.md).
//
// DESIGN
//
// The tiling, the VMEM map, the semaphores and their single-taker discipline are the unrolled
// form's (compiler.cpp): the same instructions reach the units, in nearly the same order. What
// the loops change is how the order is written.
//
// Streams. The compute stream walks the layer's tiles j = (mb, nb, kb) in order: M block mb,
// column tile (a "pass", one accumulator group g = mb * Nb + nb) nb, K-tile kb. Each tile is
// mxu.lw of its weight slot (j mod 4) and mxu.mm of the block's K-tile. The weight loads run D =
// min(4, Kb) tiles ahead: after tile j's compute comes the dma.ld of tile j + D's weights (its
// W_FREE count is the mxu.lw of tile j + D - 4, already emitted). Within a pass the first Kb - D
// tiles load weights of the same pass ("part 1"), the last D tiles the next pass's first D
// ("part 2"), so each part is a loop whose weight address steps by n * Nb. The A tiles (K-tiles
// of a block) come one per tile from a third stream, a counter of A loads left: the first block's
// first D K-tiles go in the layer's prologue (each before its weights), its others one per tile
// in pass 0; block mb + 1's from pass 1 of block mb (with Nb = 1, from block mb + 1's own start:
// one tile ahead). The first K-tile of a block takes A_FREE, which the A_FREE fence at the end of
// block mb - 1 gives, already emitted; so every wait is still covered by signals earlier in
// program order, and the program cannot deadlock at any queue depth.
//
// Loops. One pass loop (a pass: one column tile of one M block, one accumulator group) holds:
//   tile kb = 0: (pass 0: an mxu fence takes A_FULL) lw, mm overwriting the accumulators and
//     taking ACC_FREE; then the previous group's epilogue (vector ops and store, one group late
//     as in the unrolled form); then its loads;
//   tiles 1 .. Kb - 2: the part-1 and part-2 loops (`loop`), each in up to three copies chosen by
//     one branch per pass: pass 0 (mm takes A_FULL; the A stream may run), pass 1 (the stream
//     may run), the others (no stream check);
//   tile Kb - 1: its mm signals ACC_FULL;
//   end: the group's registers saved for its epilogue; the next group's buffers; at a block's
//     end the A_FREE fence, the other A buffer and the last block's rows; the next pass's setup
//     (its weight addresses; the A stream's opening); back to the top.
// The layer's prologue issues as many of its loads as the load queue takes before the registers
// and the first pass's setup, so that memory starts at once and the front end's setup overlaps
// it. After the loop, the last group's epilogue. Weight tile j + 4 goes to the slot tile j has
// just read, so with D = 4 the two streams share one slot register. Per tile the common path is
// about 10 front-end instructions, per pass about 45; LoopCost estimates the total against the
// MXU's lower bound, and the automatic form takes the unrolled program when the loops would slow
// the MXU (compiler.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "builder.h"

namespace tp::compiler::detail {

namespace {

using isa::Instr;
using isa::Op;

// The scalar registers of a layer's loop nest.
enum Reg : unsigned {
  rK = 1,       // the K-tile loop's counter
  rNb,          // column tile (pass) in the block
  rMb,          // M block
  rWs,          // the compute stream's weight slot (VMEM row)
  rWl,          // the load stream's weight slot (with D = 4 it is rWs)
  rWend,        // the row after the last weight slot (wrap-around)
  rWh,          // part 1's weight address (HBM beat)
  rWh2,         // part 2's weight address (the next pass's tiles)
  rAv,          // the mm's A rows: the block's buffer + kb * TM
  rAbuf,        // the block's A buffer
  rAbufSum,     // A[0] + A[1]: the other buffer is rAbufSum - rAbuf
  rRows,        // the block's rows
  rAcc,         // the group's accumulator buffer
  rAccSum,      // ACC[0] + ACC[1]
  rOut,         // the group's output buffer
  rOutSum,      // OUT[0] + OUT[1]
  rC,           // the group's first C beat
  rB,           // the group's bias row
  rPOut,        // the previous group (its epilogue): output buffer,
  rPAcc,        // accumulator buffer,
  rPC,          // first C beat,
  rPRows,       // rows,
  rPB,          // bias row
  rHavePrev,    // 1 once a group is complete (the first pass has no epilogue)
  rNoMore,      // 1 in the layer's last pass: part 2 has no next pass to load
  rAL,          // A stream: loads left,
  rAh,          // its next HBM beat,
  rAvS,         // its next VMEM row,
  rAr,          // its rows
  rAblk,        // the block's first A beat
  rT,           // scratch
  kNumLoopRegs  // 32: every register is taken
};
static_assert(kNumLoopRegs == isa::kNumRegs);

class LoopBuilder {
 public:
  explicit LoopBuilder(const Preset& p) : p_(p) {}

  const LoopCost& cost() const { return cost_; }

  Lines build(const std::vector<MatmulLayer>& layers, const std::vector<Tiling>& plans) {
    program_start(lines_, p_, layers, plans);
    for (size_t i = 0; i < layers.size(); ++i) layer(i, layers[i], plans[i], i + 1 == layers.size());
    program_end(lines_);
    return std::move(lines_);
  }

 private:
  // ---- emitting -------------------------------------------------------------------------------
  void comment(std::string text) { lines_.push_back({std::nullopt, std::move(text), {}, {}}); }
  void emit(const Instr& i, std::string text = {}) { lines_.push_back({i, std::move(text), {}, {}}); }
  std::string fresh(std::string_view what) { return fmt::format("l{}_{}_{}", layer_, what, labels_++); }
  void label(const std::string& name) { lines_.push_back({std::nullopt, {}, name, {}}); }
  uint64_t instrs() const {
    return static_cast<uint64_t>(
        std::count_if(lines_.begin(), lines_.end(), [](const Line& l) { return l.instr.has_value(); }));
  }

  void li(unsigned rd, int64_t v, std::string text = {}) {
    Instr i;
    i.op = Op::li;
    i.f.rd = rd;
    i.f.simm = static_cast<uint64_t>(v);
    emit(i, std::move(text));
  }
  void addi(unsigned rd, unsigned rs, int64_t v, std::string text = {}) {
    Instr i;
    i.op = Op::addi;
    i.f.rd = rd;
    i.f.rs1 = rs;
    i.f.simm = static_cast<uint64_t>(v);
    emit(i, std::move(text));
  }
  void mv(unsigned rd, unsigned rs) { addi(rd, rs, 0); }
  void sub(unsigned rd, unsigned rs1, unsigned rs2, std::string text = {}) {
    Instr i;
    i.op = Op::sub;
    i.f.rd = rd;
    i.f.rs1 = rs1;
    i.f.rs2 = rs2;
    emit(i, std::move(text));
  }
  void branch(Op op, unsigned rs1, unsigned rs2, const std::string& to, std::string text = {}) {
    Instr i;
    i.op = op;
    i.f.rs1 = rs1;
    i.f.rs2 = rs2;
    lines_.push_back({i, std::move(text), {}, to});
  }
  void jump(const std::string& to) { branch(Op::beq, 0, 0, to); }
  void loop(unsigned counter, const std::string& to) {
    Instr i;
    i.op = Op::loop;
    i.f.rd = counter;
    lines_.push_back({i, {}, {}, to});
  }
  // if (r != value) / (r == value) goto to: a register against a constant, through rT.
  void branch_ne_const(unsigned r, int64_t value, const std::string& to) {
    addi(rT, r, -value);
    branch(Op::bne, rT, 0, to);
  }
  void branch_eq_const(unsigned r, int64_t value, const std::string& to) {
    addi(rT, r, -value);
    branch(Op::beq, rT, 0, to);
  }
  // A register that steps through the weight slots: + n, wrapping after the last.
  void next_slot(unsigned r) {
    const std::string ok = fresh("slot");
    addi(r, r, n_);
    branch(Op::blt, r, rWend, ok);
    addi(r, r, -static_cast<int64_t>(kWeightSlots * n_));
    label(ok);
  }

  // ---- one layer ------------------------------------------------------------------------------
  void layer(size_t index, const MatmulLayer& l, const Tiling& t, bool last) {
    layer_ = index;
    l_ = &l;
    lay_ = layout(p_, t);
    n_ = p_.mxu.n;
    kb_ = t.kb;
    nb_ = t.nb;
    mb_ = t.mb;
    tm_ = t.tm;
    d_ = std::min<uint64_t>(kWeightSlots, kb_);
    const uint64_t last_rows = l.m - (mb_ - 1) * tm_;
    const uint64_t rows0 = mb_ == 1 ? last_rows : tm_;

    comment("");
    comment(fmt::format("{}: VMEM A[0]@{} A[1]@{} ({} rows each), W slots@{} ({} x {} rows), OUT@{},{}{}; ACC@0,{}",
                        layer_name(index, l), lay_.a_buf[0], lay_.a_buf[1], tm_ * kb_, lay_.w_slot0, kWeightSlots, n_,
                        lay_.out_buf[0], lay_.out_buf[1], l.bias ? fmt::format(", BIAS@{}", lay_.bias_buf) : "",
                        lay_.acc_buf[1]));
    comment(fmt::format("loop nest: {} block(s) x {} pass(es) x {} K-tile(s); weights loaded {} tile(s) ahead", mb_,
                        nb_, kb_, d_));
    if (index > 0) emit(fence(Queue::load, kLayer, 0), "barrier: the previous layer's stores are complete");
    if (l.bias) {
      emit(dma(Op::dma_ld, lay_.bias_buf, l.b.beat, t.nb, 1, 1, 0, kBias), "bias row");
      emit(fence(Queue::vec, kBias, 0), "bias row loaded (before the layer's first vector op)");
    }
    // The prologue's loads: as many as the load queue takes go first, so that memory starts at
    // once; then the registers and the first pass's setup, which the front end runs while they
    // load; then the rest, on which the front end waits for queue slots right before tile 0.
    std::vector<std::pair<Instr, std::string>> prologue;
    for (uint64_t kb = 0; kb < d_; ++kb) {
      prologue.push_back(
          {dma(Op::dma_ld, lay_.a_buf[0] + kb * tm_, l.a.beat + kb, rows0, 1, kb_, kb == 0 ? kAFree : 0, kAFull),
           fmt::format("A block 0 K-tile {} -> A[0]", kb)});
      prologue.push_back({dma(Op::dma_ld, lay_.w_slot0 + (kb % kWeightSlots) * n_, l.w.beat + kb * n_ * nb_, n_, 1, nb_,
                              kWFree, kWFull),
                          fmt::format("W tile (k {}, n 0) -> slot {}", kb, kb % kWeightSlots)});
    }
    const uint64_t queued = (index > 0 ? 1 : 0) + (l.bias ? 1 : 0);
    const size_t first_loads = std::min<size_t>(prologue.size(), p_.chip.queue > queued ? p_.chip.queue - queued : 1);
    comment(fmt::format("prologue: block 0's first {} K-tile(s) and weight tiles", d_));
    for (size_t i = 0; i < first_loads; ++i) emit(prologue[i].first, prologue[i].second);
    comment("the loop nest's registers");
    li(rWs, static_cast<int64_t>(lay_.w_slot0), "compute stream: weight slot of tile 0");
    if (d_ < kWeightSlots) li(rWl, static_cast<int64_t>(lay_.w_slot0 + d_ * n_), "load stream: weight slot of tile D");
    li(rWend, static_cast<int64_t>(lay_.w_slot0 + kWeightSlots * n_));
    li(rAbuf, static_cast<int64_t>(lay_.a_buf[0]), "block 0 in A[0]");
    li(rAbufSum, static_cast<int64_t>(lay_.a_buf[0] + lay_.a_buf[1]));
    li(rRows, static_cast<int64_t>(rows0));
    li(rAcc, static_cast<int64_t>(lay_.acc_buf[0]), "group 0 in ACC[0], OUT[0]");
    li(rAccSum, static_cast<int64_t>(lay_.acc_buf[0] + lay_.acc_buf[1]));
    li(rOut, static_cast<int64_t>(lay_.out_buf[0]));
    li(rOutSum, static_cast<int64_t>(lay_.out_buf[0] + lay_.out_buf[1]));
    li(rC, static_cast<int64_t>(l.c.beat));
    li(rB, static_cast<int64_t>(lay_.bias_buf));
    li(rHavePrev, 0);
    li(rMb, 0);
    li(rNb, 0);
    li(rAblk, static_cast<int64_t>(l.a.beat));
    li(rAL, static_cast<int64_t>(kb_ - d_), "A stream: block 0's other K-tiles, one per tile");
    li(rAh, static_cast<int64_t>(l.a.beat + d_));
    li(rAvS, static_cast<int64_t>(lay_.a_buf[0] + d_ * tm_));
    li(rAr, static_cast<int64_t>(rows0));
    pass_setup(last_rows);
    for (size_t i = first_loads; i < prologue.size(); ++i) emit(prologue[i].first, prologue[i].second);

    // The pass loop: tiles, then the pass's end and (in pass_end) the next pass's setup.
    const std::string pass_top = fresh("pass"), layer_done = fresh("layerdone");
    label(pass_top);
    const uint64_t pass_first = instrs();
    loop_static_ = loop_dyn_ = 0;
    tiles();
    pass_end(last_rows, pass_top, layer_done);
    label(layer_done);
    // The cost model (LoopCost): the pass's code runs once per pass, less the loop copies it
    // skips; the MXU needs at least max(n, rows) cycles per tile (weights in, rows through).
    const uint64_t passes = mb_ * nb_;
    cost_.front_cycles += passes * (instrs() - pass_first - loop_static_ + loop_dyn_);
    cost_.mxu_cycles += passes * kb_ * std::max<uint64_t>(n_, tm_);
    comment("the last group's epilogue");
    epilogue();
    if (!last) emit(fence(Queue::store, 0, kLayer), "barrier: this layer's stores are complete");
  }

  void pass_setup(uint64_t last_rows) {
    const MatmulLayer& l = *l_;
    comment("pass setup");
    mv(rAv, rAbuf);
    // Part 1 loads this pass's tiles D.., part 2 the next pass's first D (the next column tile, or
    // column tile 0 of the next block).
    addi(rWh, rNb, static_cast<int64_t>(l.w.beat + d_ * n_ * nb_), "part 1: W (k D, this n)");
    const std::string wrap = fresh("nbwrap");
    addi(rWh2, rNb, static_cast<int64_t>(l.w.beat + 1), "part 2: W (k 0, next n)");
    branch_ne_const(rNb, static_cast<int64_t>(nb_ - 1), wrap);
    li(rWh2, static_cast<int64_t>(l.w.beat));
    label(wrap);
    const std::string more = fresh("more");
    li(rNoMore, 0);
    branch_ne_const(rMb, static_cast<int64_t>(mb_ - 1), more);
    branch_ne_const(rNb, static_cast<int64_t>(nb_ - 1), more);
    li(rNoMore, 1, "the layer's last pass");
    label(more);
    if (mb_ < 2) return;
    // The A stream of the next block opens in pass 1 (with a single pass: the block's own, at its
    // start, from block 1 on). Its first K-tile takes A_FREE here.
    const std::string no_open = fresh("noopen");
    if (nb_ >= 2) {
      branch_ne_const(rNb, 1, no_open);
      branch_eq_const(rMb, static_cast<int64_t>(mb_ - 1), no_open);  // the last block has no next
    } else {
      branch(Op::beq, rMb, 0, no_open);
    }
    comment("open the A stream");
    if (nb_ >= 2) {
      sub(rAvS, rAbufSum, rAbuf, "the next block's buffer");
      addi(rAh, rAblk, static_cast<int64_t>(tm_ * kb_), "the next block's first beat");
      li(rAr, static_cast<int64_t>(tm_));
      const std::string full = fresh("full");
      branch_ne_const(rMb, static_cast<int64_t>(mb_ - 2), full);
      li(rAr, static_cast<int64_t>(last_rows), "the next block is the last");
      label(full);
    } else {
      mv(rAvS, rAbuf);
      mv(rAh, rAblk);
      mv(rAr, rRows);
    }
    stream_load(kAFree, "A K-tile 0 of the stream's block");
    li(rAL, static_cast<int64_t>(kb_ - 1));
    label(no_open);
  }

  // The A stream's next K-tile (rows rAr from beat rAh to VMEM row rAvS), then its registers on.
  void stream_load(unsigned wait, std::string text) {
    Instr a = dma(Op::dma_ld, 0, 0, 0, 1, kb_, wait, kAFull);
    a.f.vaddr_r = rAvS;
    a.f.haddr_r = rAh;
    a.f.rows_r = rAr;
    emit(a, std::move(text));
    addi(rAvS, rAvS, static_cast<int64_t>(tm_));
    addi(rAh, rAh, 1);
  }

  // The loads after one tile's compute: its weight tile D ahead (part 1: this pass's, part 2: the
  // next pass's, none in the layer's last pass), then (stream: in a pass where the A stream may
  // run, passes 0 and 1) the A stream's next K-tile. With D = 4 tile j + 4's slot is tile j's,
  // which its mxu.lw has just read (W_FREE): the load stream shares rWs, before it steps on.
  void loads(int part, bool stream) {
    const unsigned slot = d_ == kWeightSlots ? unsigned{rWs} : unsigned{rWl};
    Instr w = dma(Op::dma_ld, 0, 0, n_, 1, nb_, kWFree, kWFull);
    w.f.vaddr_r = slot;
    w.f.haddr_r = part == 1 ? rWh : rWh2;
    const std::string skip = fresh("now");
    if (part == 2) branch(Op::bne, rNoMore, 0, skip);
    emit(w, part == 1 ? "W tile D ahead" : "W tile of the next pass");
    if (slot == rWl) next_slot(rWl);
    addi(part == 1 ? rWh : rWh2, part == 1 ? rWh : rWh2, static_cast<int64_t>(n_ * nb_));
    if (part == 2) label(skip);
    if (!stream) return;
    const std::string none = fresh("noa");
    branch(Op::beq, rAL, 0, none);
    stream_load(0, "A stream: next K-tile");
    addi(rAL, rAL, -1);
    label(none);
  }

  // One tile's lw and mm. kb_kind: 0 the first K-tile (overwrite, ACC_FREE), 1 a middle one, 2
  // the last (ACC_FULL); with Kb = 1 the first is also the last. pass0: the mm takes A_FULL.
  void compute(int kb_kind, bool pass0) {
    Instr lw;
    lw.op = Op::mxu_lw;
    lw.f.vaddr_r = rWs;
    lw.wait = kWFull;
    lw.signal = kWFree;
    emit(lw, "weights");
    Instr mm;
    mm.op = Op::mxu_mm;
    mm.f.vaddr_r = rAv;
    mm.f.acc_r = rAcc;
    mm.f.rows_r = rRows;
    mm.f.accumulate = kb_kind == 0 ? 0 : 1;
    mm.wait = kb_kind == 0 ? kAccFree : (pass0 ? kAFull : 0);
    mm.signal = (kb_kind == 2 || (kb_kind == 0 && kb_ == 1)) ? kAccFull : 0;
    emit(mm, kb_kind == 0 ? "A K-tile 0 -> ACC (overwrite)" : "A K-tile -> ACC (accumulate)");
  }

  void tiles() {
    // Tile 0.
    comment("K-tile 0");
    const std::string not0 = fresh("not0");
    branch(Op::bne, rNb, 0, not0);
    emit(fence(Queue::mxu, kAFull, 0), "pass 0: A K-tile 0 loaded");
    label(not0);
    compute(0, false);
    const std::string no_epi = fresh("noepi");
    branch(Op::beq, rHavePrev, 0, no_epi);
    comment("the previous group's epilogue");
    epilogue();
    label(no_epi);
    loads(kb_ > d_ ? 1 : 2, true);
    next_slot(rWs);
    addi(rAv, rAv, static_cast<int64_t>(tm_));
    // Tiles 1 .. Kb-2 in their parts (part 1 while kb < Kb - D), each loop in one copy per kind of
    // pass: 0 (its mm takes A_FULL; the A stream may run), 1 (the stream may run), the others.
    const uint64_t split = kb_ - d_;
    if (kb_ > 2) {
      const uint64_t lo1 = 1, hi1 = std::max<uint64_t>(1, split);
      const uint64_t lo2 = std::max<uint64_t>(1, split), hi2 = kb_ - 1;
      const unsigned kinds = static_cast<unsigned>(std::min<uint64_t>(nb_, 3));
      for (int part : {1, 2}) {
        const uint64_t trips = part == 1 ? hi1 - lo1 : hi2 - lo2;
        if (trips == 0) continue;
        comment(fmt::format("K-tiles {} .. {} (part {})", part == 1 ? lo1 : lo2, (part == 1 ? hi1 : hi2) - 1, part));
        const std::string done = fresh("done");
        std::string next;
        for (unsigned kind = 0; kind < kinds; ++kind) {
          if (kind > 0) label(next);
          next = fresh("kind");
          if (kind == 0 && kinds > 1) branch(Op::bne, rNb, 0, next);
          if (kind == 1 && kinds > 2) branch_ne_const(rNb, 1, next);
          const std::string top = fresh("tile");
          const uint64_t first = instrs();
          li(rK, static_cast<int64_t>(trips));
          label(top);
          const uint64_t body = instrs();
          compute(1, kind == 0);
          loads(part, kind < 2);
          next_slot(rWs);
          addi(rAv, rAv, static_cast<int64_t>(tm_));
          loop(rK, top);
          if (kind + 1 < kinds) jump(done);
          loop_static_ += instrs() - first;
          if (kind == 0) loop_dyn_ += (instrs() - first) + (trips - 1) * (instrs() - body);
        }
        label(done);
      }
    }
    if (kb_ >= 2) {
      comment(fmt::format("K-tile {} (the last)", kb_ - 1));
      const std::string other = fresh("other"), done = fresh("done");
      branch(Op::bne, rNb, 0, other);
      compute(2, true);
      jump(done);
      label(other);
      compute(2, false);
      label(done);
      loads(2, true);
      next_slot(rWs);
    }
  }

  // The pass's end, then the next pass's setup and the jump back to pass_top; after the layer's
  // last pass, to done.
  void pass_end(uint64_t last_rows, const std::string& pass_top, const std::string& done) {
    comment("pass end: the group waits for its epilogue; the next group's buffers");
    mv(rPOut, rOut);
    mv(rPAcc, rAcc);
    mv(rPC, rC);
    mv(rPRows, rRows);
    mv(rPB, rB);
    li(rHavePrev, 1);
    sub(rAcc, rAccSum, rAcc);
    sub(rOut, rOutSum, rOut);
    addi(rC, rC, 1);
    addi(rB, rB, 1);
    addi(rNb, rNb, 1);
    const std::string next = fresh("next");
    branch_ne_const(rNb, static_cast<int64_t>(nb_), next);
    comment("block end");
    emit(fence(Queue::mxu, 0, kAFree), "the block's A buffer read by every mm");
    sub(rAbuf, rAbufSum, rAbuf);
    addi(rC, rC, static_cast<int64_t>(tm_ * nb_) - static_cast<int64_t>(nb_));
    addi(rB, rB, -static_cast<int64_t>(nb_));
    addi(rAblk, rAblk, static_cast<int64_t>(tm_ * kb_));
    li(rNb, 0);
    addi(rMb, rMb, 1);
    branch_eq_const(rMb, static_cast<int64_t>(mb_), done);
    const std::string not_last = fresh("notlast");
    branch_ne_const(rMb, static_cast<int64_t>(mb_ - 1), not_last);
    li(rRows, static_cast<int64_t>(last_rows), "the last block's rows");
    label(not_last);
    label(next);
    pass_setup(last_rows);
    jump(pass_top);
  }

  // The previous group's epilogue: accumulators (+ bias) (ReLU) (-> bf16) into its output buffer,
  // then its store.
  void epilogue() {
    const MatmulLayer& l = *l_;
    emit(fence(Queue::vec, kOutFree, 0), "the output buffer is free");
    Instr first = vec(l.bias ? Op::vadd : Op::vmov, 0, 0, 0, true);
    first.f.dst_r = rPOut;
    first.f.a_r = rPAcc;
    first.f.rows_r = rPRows;
    if (l.bias) {
      first.f.b_r = rPB;
      first.f.b_bcast = 1;
    }
    first.wait = kAccFull;
    first.signal = kAccFree;
    std::vector<std::pair<Instr, std::string>> ops;
    ops.push_back({first, l.bias ? "ACC + bias -> OUT" : "ACC -> OUT"});
    auto in_place = [&](Op op) {
      Instr i = vec(op, 0, 0, 0, false);
      i.f.dst_r = i.f.a_r = rPOut;
      i.f.rows_r = rPRows;
      return i;
    };
    if (l.relu) ops.push_back({in_place(Op::vrelu), "relu"});
    if (l.out_bf16) ops.push_back({in_place(Op::vcvtbf), "to bf16"});
    if (ops.size() > 1) ops.back().first.signal = kOutFull;
    for (const auto& [ins, text] : ops) emit(ins, text);
    if (ops.size() == 1) emit(fence(Queue::vec, 0, kOutFull));
    Instr st = dma(Op::dma_st, 0, 0, 0, 1, nb_, kOutFull, kOutFree);
    st.f.vaddr_r = rPOut;
    st.f.haddr_r = rPC;
    st.f.rows_r = rPRows;
    emit(st, "C rows of the group");
  }

  const Preset& p_;
  Lines lines_;
  LoopCost cost_;
  uint64_t loop_static_ = 0, loop_dyn_ = 0;  // the pass's loop copies: their size, one copy's run
  size_t layer_ = 0;
  unsigned labels_ = 0;
  const MatmulLayer* l_ = nullptr;
  Layout lay_{};
  uint64_t n_ = 0, kb_ = 0, nb_ = 0, mb_ = 0, tm_ = 0, d_ = 0;
};

}  // namespace

Lines build_looped(const Preset& p, const std::vector<MatmulLayer>& layers, const std::vector<Tiling>& plans,
                   LoopCost* cost) {
  LoopBuilder b(p);
  Lines lines = b.build(layers, plans);
  if (cost) *cost = b.cost();
  return lines;
}

}  // namespace tp::compiler::detail
