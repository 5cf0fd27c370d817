// The compiler's default form: each layer as a loop nest with its addresses in scalar registers,
// so that the program's size does not grow with M, K or N (docs/compiler.md).
//
// DESIGN
//
// The tiling, the VMEM map, the semaphores and their single-taker discipline are the unrolled
// form's (compiler.cpp): the same instructions reach the units, in the unrolled form's order
// (but for where a few scalar-computed loads sit). What the loops change is how the order is
// written; the front end's dual issue runs their scalar work in the cycles of the unit
// instructions it follows, and schedule_pairs (pairing.cpp) orders each basic block for it.
//
// Two nests. A layer of one M block and at most kShortK K-tiles (where the front end is busiest:
// few rows, few K-tiles, many column tiles) is short_layer's groups' loop in four copies, one per
// g mod 4: every VMEM address static, every HBM address one register plus a constant (see there).
// The others get the general nest below. A layer whose unrolled code is no longer than its nest
// (a few column tiles and K-tiles: its loops would run a few trips) is written out instead, the
// unrolled form's code for that layer (layer()); Form::nests keeps every nest.
//
// Streams. The compute stream walks the layer's tiles j = (mb, nb, kb) in order: M block mb,
// column tile (a "pass", one accumulator group g = mb * Nb + nb) nb, K-tile kb. Each tile is
// mxu.lw of its weight slot (j mod 4) and mxu.mm of the block's K-tile. The weight loads run
// four tiles ahead, as unrolled: after tile j's compute comes the dma.ld of tile j + 4's weights
// into the slot tile j has just read (its W_FREE count is tile j's mxu.lw). With Kb >= 4, D = 4:
// within a pass the first Kb - D tiles load weights of the same pass ("part 1"), the last D the
// next pass's first D ("part 2"), so each part is a loop whose weight address steps by n * Nb.
// With Kb < 4 (far_) each tile's load is K-tile (kb + 4) mod Kb of the pass (kb + 4) / Kb ahead,
// whose column two registers follow. The A tiles (K-tiles of a block) come from a third stream,
// a counter of A loads left, one per tile: the first block's first K-tiles go in the layer's
// prologue and its others in pass 0, each before its weights; the next block's where unrolled
// has them (open_stream, far_open, next_block_a), with three passes or more every other tile
// (a_stream_spacing: a counter of tiles left, loading on even counts). The first K-tile of a
// block takes A_FREE, which the A_FREE fence at the end of block mb - 1 gives, already emitted;
// so every wait is still covered by signals earlier in program order, and the program cannot
// deadlock at any queue depth.
//
// Loops. One pass loop (a pass: one column tile of one M block, one accumulator group), entered
// after tile 0's epilogue (the first pass's tile 0 is written before it), holds:
//   tile kb = 0: lw, mm overwriting the accumulators and taking ACC_FREE (a block's first pass
//     has the A_FULL fence before it, in the block end); then the previous group's epilogue
//     (vector ops and store, one group late as in the unrolled form); then its loads;
//   tiles 1 .. Kb - 2: the part-1 and part-2 loops (`loop`), each in up to three copies chosen by
//     one branch per pass: pass 0 (mm takes A_FULL; the A stream may run), pass 1 (the stream
//     may run; with the stream every other tile, passes 1 and 2), the others (no stream check);
//   tile Kb - 1: its mm signals ACC_FULL; the group's registers saved for its epilogue and the
//     next group's buffers (before the tile's loads, so that no scalar work waits behind a load
//     that waits for a queue slot);
//   end: at a block's end the A_FREE fence, the other A buffer, the last block's rows and the
//     next block's A_FULL fence; the next pass's setup; back to the top.
// The layer's prologue issues as many of its loads as the load queue takes before the registers
// and the first pass's setup, so that memory starts at once and the front end's setup overlaps
// it. After the loop, the last group's epilogue. LoopCost estimates the front end's issue cycles
// against the MXU's lower bound (compile_info's front_per_mxu).
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "builder.h"

namespace tp::compiler::detail {

namespace {

using isa::Instr;
using isa::Op;

// A layer of one M block and at most this many K-tiles gets the groups' loop in four copies
// (short_layer); the others the general nest.
constexpr uint64_t kShortK = 8;

// The scalar registers of a layer's loop nest.
enum Reg : unsigned {
  rK = 1,        // the K-tile loop's counter
  rNb,           // column tile (pass) in the block
  rMb,           // M block
  rWs,           // the compute stream's weight slot (VMEM row)
  rWl,           // the compute stream's next weight slot (slot_prepare)
  rWend,         // the row after the last weight slot (wrap-around)
  rWh,           // part 1's weight address (HBM beat)
  rWh2,          // part 2's weight address (the next pass's tiles)
  rAv,           // the mm's A rows: the block's buffer + kb * TM
  rAbuf,         // the block's A buffer
  rAbufSum,      // A[0] + A[1]: the other buffer is rAbufSum - rAbuf
  rRows,         // the block's rows
  rAcc,          // the group's accumulator buffer
  rAccSum,       // ACC[0] + ACC[1]
  rOut,          // the group's output buffer
  rOutSum,       // OUT[0] + OUT[1]
  rC,            // the group's first C beat
  rB,            // the group's bias row
  rPOut,         // the previous group (its epilogue): output buffer,
  rPAcc,         // accumulator buffer,
  rPC,           // first C beat,
  rPRows,        // rows,
  rPB,           // bias row
  rNbEnd,        // Nb: the block ends when rNb reaches it
  rStop,         // Nb - 1 in the last block (else past any rNb): in that pass part 2 loads nothing
  rAL,           // A stream: loads left,
  rAh,           // its next HBM beat,
  rAvS,          // its next VMEM row,
  rAr,           // its rows
  rAblk,         // the block's first A beat
  rT,            // scratch
  kNumLoopRegs,  // 32: every register is taken
  // With Kb < 4 (far_) part 1 and 2's weight addresses and the last-pass stop are not used:
  rCol0 = rWh,   // the column tile of the pass delta0 ahead
  rCol1 = rWh2,  // of the pass delta0 + 1 ahead
  rLeft = rStop  // passes left, plus one
};
static_assert(kNumLoopRegs == isa::kNumRegs);

class LoopBuilder {
 public:
  LoopBuilder(const Preset& p, bool write_out) : p_(p), write_out_(write_out) {}

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
  size_t line() const { return lines_.size(); }

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
  void mv(unsigned rd, unsigned rs, std::string text = {}) { addi(rd, rs, 0, std::move(text)); }
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
  // r = the weight slot after from's: + n, wrapping after the last.
  void next_slot(unsigned r, unsigned from) {
    const std::string ok = fresh("slot");
    addi(r, from, n_);
    branch(Op::blt, r, rWend, ok);
    addi(r, r, -static_cast<int64_t>(slots_ * n_));
    label(ok);
  }
  // The compute stream's next slot, computed into rWl before the tile's loads, which use rWs (the
  // load goes into the slot tile j has just read), and taken after them in a move that pairs with
  // the last load: so no scalar work waits behind a load that waits for a queue slot.
  void slot_prepare() { next_slot(rWl, rWs); }
  void slot_advance() { mv(rWs, rWl); }

  // ---- one layer ------------------------------------------------------------------------------
  // Its nest; or with write_out_, the unrolled form's code where that is no longer: a nest of a
  // few trips (a short layer of a few column tiles and K-tiles) costs more instructions than it
  // replaces, and its bookkeeping front-end cycles that unrolled code does not spend.
  void layer(size_t index, const MatmulLayer& l, const Tiling& t, bool last) {
    const size_t first = line();
    const LoopCost before = cost_;
    // Every tile takes at least its weight load, mxu.lw and mxu.mm written out: a layer longer
    // than that is not built unrolled at all (a large one would take seconds and gigabytes).
    const uint64_t least = 3 * uint64_t{t.mb} * t.nb * t.kb;
    if (l.a.bf16x2) {  // the nests stream A's K-tiles one plain load each: written out, in every form
      auto too_long = [&](uint64_t count, const char* what) {
        return CompileError(
            fmt::format("{}: A in bf16x2 needs the layer written out (the loop nests load A unpacked), {} {} "
                        "instructions, more than preset '{}' holds ({}); give A unpacked",
                        layer_name(index, l), what, count, p_.name, p_.chip.imem_words));
      };
      if (least > p_.chip.imem_words) throw too_long(least, "at least");
      Lines out = unrolled_layer(p_, index, l, t, last);
      if (const uint64_t count = count_instrs(out.begin(), out.end()); count > p_.chip.imem_words)
        throw too_long(count, "its");
      write_out(index, l, t, before, std::move(out), "A in bf16x2");
      return;
    }
    nest(index, l, t, last);
    if (!write_out_) return;
    const uint64_t looped = count_instrs(lines_.begin() + first, lines_.end());
    if (least > looped) return;
    Lines out = unrolled_layer(p_, index, l, t, last);
    if (count_instrs(out.begin(), out.end()) > looped) return;
    lines_.resize(first);
    write_out(index, l, t, before, std::move(out), fmt::format("its loop nest: {}", looped));
  }
  template <class It>
  static uint64_t count_instrs(It b, It e) {
    return static_cast<uint64_t>(std::count_if(b, e, [](const Line& x) { return x.instr.has_value(); }));
  }
  // The unrolled form's code of the layer in place of its nest; cost back to before it.
  void write_out(size_t index, const MatmulLayer& l, const Tiling& t, const LoopCost& before, Lines out,
                 const std::string& why) {
    const uint64_t unrolled = count_instrs(out.begin(), out.end());
    comment("");
    comment(fmt::format("{}: written out, {} instructions ({})", layer_name(index, l), unrolled, why));
    lines_.insert(lines_.end(), std::make_move_iterator(out.begin()), std::make_move_iterator(out.end()));
    cost_ = before;
    cost_.front_cycles += static_cast<uint64_t>(unrolled);
    cost_.mxu_cycles += uint64_t{t.mb} * t.nb * t.kb * std::max<uint64_t>(p_.mxu.n, t.tm);
    ++cost_.written_out;
  }

  void nest(size_t index, const MatmulLayer& l, const Tiling& t, bool last) {
    layer_ = index;
    l_ = &l;
    const size_t layer_first = line();
    lay_ = layout(p_, t);
    n_ = p_.mxu.n;
    kb_ = t.kb;
    nb_ = t.nb;
    wk_ = w_kstep(p_, l, nb_);
    mb_ = t.mb;
    tm_ = t.tm;
    d_ = std::min<uint64_t>(kWeightSlots, kb_);
    slots_ = kWeightSlots;
    spread_ = a_stream_spacing(t);
    const uint64_t last_rows = l.m - (mb_ - 1) * tm_;
    last_rows_ = last_rows;
    const uint64_t rows0 = mb_ == 1 ? last_rows : tm_;
    if (mb_ == 1 && kb_ <= kShortK) {
      short_layer(index, last);
      return;
    }
    // The nest's weights D tiles ahead through D slots: 4, or 3 where the load queue holds fewer
    // than four and Kb >= 6. In a block's first pass every tile loads a K-tile of A and a weight
    // tile, and the front end waits for a queue slot at each: with 4 ahead and a queue of 3 it
    // reached a tile's mxu.lw and mxu.mm about a tile of loads after their operands were in
    // (`odd`, 2026-12-07: 96^3 6491 -> 6444 cycles with 3, 144x72x36 2911 -> 2864; but with
    // Kb = 5, 144x60x21, 1849 -> 1878; on `small`'s HBM, queue 8, 3 ahead lost 2%).
    if (kb_ > kWeightSlots + 1 && p_.chip.queue < 4) d_ = slots_ = kWeightSlots - 1;

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
    for (uint64_t i = slots_; i < kWeightSlots; ++i)
      emit(fence(Queue::load, kWFree, 0), "a weight slot this layer leaves unused: its W_FREE token held");
    // The prologue's loads: as many as the load queue takes go first, so that memory starts at
    // once; then the registers and the first pass's setup, which the front end runs while they
    // load; then the rest, on which the front end waits for queue slots right before tile 0.
    std::vector<std::pair<Instr, std::string>> prologue;
    far_ = kb_ < kWeightSlots;
    for (uint64_t j = 0; far_ && j < std::min<uint64_t>(kWeightSlots, mb_ * nb_ * kb_); ++j) {
      // Weights four tiles ahead: tiles 0..3, over the first passes (A's K-tiles with pass 0's).
      const uint64_t g = j / kb_, kb = j % kb_;
      if (g == 0)
        prologue.push_back(
            {dma(Op::dma_ld, lay_.a_buf[0] + kb * tm_, l.a.beat + kb, rows0, 1, kb_, kb == 0 ? kAFree : 0, kAFull),
             fmt::format("A block 0 K-tile {} -> A[0]", kb)});
      prologue.push_back({w_load(p_, l, nb_, lay_.w_slot0 + j * n_, l.w.beat + kb * wk_ + g % nb_),
                          fmt::format("W tile (k {}, n {}) -> slot {}", kb, g % nb_, j)});
      if (far_stream() && j == kb_)  // block 1's K-tile 0 goes with the weights of tile Kb, as unrolled
        prologue.push_back(
            {dma(Op::dma_ld, lay_.a_buf[1], l.a.beat + tm_ * kb_, mb_ == 2 ? last_rows : tm_, 1, kb_, kAFree, kAFull),
             "A block 1 K-tile 0 -> A[1]"});
    }
    for (uint64_t kb = 0; !far_ && kb < d_; ++kb) {
      prologue.push_back(
          {dma(Op::dma_ld, lay_.a_buf[0] + kb * tm_, l.a.beat + kb, rows0, 1, kb_, kb == 0 ? kAFree : 0, kAFull),
           fmt::format("A block 0 K-tile {} -> A[0]", kb)});
      prologue.push_back({w_load(p_, l, nb_, lay_.w_slot0 + kb * n_, l.w.beat + kb * wk_),
                          fmt::format("W tile (k {}, n 0) -> slot {}", kb, kb)});
    }
    // With one column tile and Kb <= D, block 1's K-tiles follow block 0's weights at once, as
    // unrolled (the A_FREE tokens cover them); see next_block_a.
    if (nb_ == 1 && mb_ >= 2 && kb_ <= d_) {
      const uint64_t rows1 = mb_ == 2 ? last_rows : tm_;
      for (uint64_t kb = 0; kb < kb_; ++kb)
        prologue.push_back({dma(Op::dma_ld, lay_.a_buf[1] + kb * tm_, l.a.beat + tm_ * kb_ + kb, rows1, 1, kb_,
                                kb == 0 ? kAFree : 0, kAFull),
                            fmt::format("A block 1 K-tile {} -> A[1]", kb)});
    }
    const uint64_t queued = (index > 0 ? 1 : 0) + (l.bias ? 1 : 0);
    const size_t first_loads = std::min<size_t>(prologue.size(), p_.chip.queue > queued ? p_.chip.queue - queued : 1);
    comment(fmt::format("prologue: block 0's first {} K-tile(s) and weight tiles", d_));
    for (size_t i = 0; i < first_loads; ++i) emit(prologue[i].first, prologue[i].second);
    comment("the loop nest's registers");
    li(rWs, static_cast<int64_t>(lay_.w_slot0), "compute stream: weight slot of tile 0");
    if (far_) {
      // rCol0/1: the column tile (HBM beat of K-tile 0) of the pass delta0 / delta0 + 1 ahead,
      // one pass behind (tile 0 steps them on, also in pass 0); rLeft: passes left, plus one.
      delta0_ = kWeightSlots / kb_;
      li(rCol0, static_cast<int64_t>(l.w.beat + (delta0_ + nb_ - 1) % nb_));
      li(rCol1, static_cast<int64_t>(l.w.beat + (delta0_ + nb_) % nb_));
      li(rLeft, static_cast<int64_t>(mb_ * nb_ + 1), "passes left, plus one");
    }
    li(rWend, static_cast<int64_t>(lay_.w_slot0 + slots_ * n_));
    li(rAbuf, static_cast<int64_t>(lay_.a_buf[0]), "block 0 in A[0]");
    li(rAbufSum, static_cast<int64_t>(lay_.a_buf[0] + lay_.a_buf[1]));
    li(rRows, static_cast<int64_t>(rows0));
    li(rAcc, static_cast<int64_t>(lay_.acc_buf[0]), "group 0 in ACC[0], OUT[0]");
    li(rAccSum, static_cast<int64_t>(lay_.acc_buf[0] + lay_.acc_buf[1]));
    li(rOut, static_cast<int64_t>(lay_.out_buf[0]));
    li(rOutSum, static_cast<int64_t>(lay_.out_buf[0] + lay_.out_buf[1]));
    li(rC, static_cast<int64_t>(l.c.beat));
    li(rB, static_cast<int64_t>(lay_.bias_buf));
    li(rNbEnd, static_cast<int64_t>(nb_));
    if (!far_) li(rStop, mb_ == 1 ? static_cast<int64_t>(nb_ - 1) : int64_t{0xffff}, "the last block's last pass");
    li(rMb, 0);
    li(rNb, 0);
    li(rAblk, static_cast<int64_t>(l.a.beat));
    if (far_stream()) {
      li(rAL, static_cast<int64_t>(kb_ - 1), "A stream: block 1's other K-tiles, one per tile");
      li(rAh, static_cast<int64_t>(l.a.beat + tm_ * kb_ + 1));
      li(rAvS, static_cast<int64_t>(lay_.a_buf[1] + tm_));
      li(rAr, static_cast<int64_t>(mb_ == 2 ? last_rows : tm_));
    } else {
      li(rAL, static_cast<int64_t>(kb_ - d_), "A stream: block 0's other K-tiles, one per tile");
      li(rAh, static_cast<int64_t>(l.a.beat + d_));
      li(rAvS, static_cast<int64_t>(lay_.a_buf[0] + d_ * tm_));
      li(rAr, static_cast<int64_t>(rows0));
    }
    pass_setup(last_rows);
    // The first pass's tile 0 (it has no previous group's epilogue) as soon as its K-tile and
    // weights are in the load queue, before the prologue's other loads, for which the front end
    // waits for queue slots (with a shallow load queue the MXU's first instructions waited behind
    // them: `odd`'s first mxu.mm started at 146 cycles, its operands in by 80); then into the loop.
    const size_t tile0_loads = std::max<size_t>(first_loads, 2);  // A K-tile 0, W tile 0
    for (size_t i = first_loads; i < tile0_loads; ++i) emit(prologue[i].first, prologue[i].second);
    comment("K-tile 0 of the first pass");
    emit(fence(Queue::mxu, kAFull, 0), "A K-tile 0 loaded");
    compute(0, false);
    tile0_book();
    for (size_t i = tile0_loads; i < prologue.size(); ++i) emit(prologue[i].first, prologue[i].second);
    after_epilogue_ = fresh("first");
    jump(after_epilogue_);

    // The pass loop: tiles, then the pass's end and (in pass_end) the next pass's setup.
    const std::string pass_top = fresh("pass"), layer_done = fresh("layerdone");
    label(pass_top);
    const size_t pass_first = line();
    copies_.clear();
    tiles();
    pass_end(last_rows, pass_top, layer_done);
    const size_t pass_last = line();
    label(layer_done);
    comment("the last group's epilogue");
    epilogue(true);
    for (uint64_t i = slots_; i < kWeightSlots; ++i)
      emit(fence(Queue::load, 0, kWFree), "the unused slot's token back");
    if (!last) emit(fence(Queue::store, 0, kLayer), "barrier: this layer's stores are complete");
    // Each basic block reordered so that scalar instructions pair with the one before them.
    schedule_pairs(lines_, layer_first, line());
    // The cost model (LoopCost), in the front end's issue cycles: the pass's code runs once per
    // pass, less the loop copies it skips (one runs, its body trips times); the MXU needs at
    // least max(n, rows) cycles per tile (weights in, rows through).
    uint64_t pass_cycles = issue_cycles(lines_, pass_first, pass_last);
    for (const Copy& c : copies_) {
      const uint64_t all = issue_cycles(lines_, c.first, c.end);
      pass_cycles -= all;
      if (c.runs) pass_cycles += all + (c.trips - 1) * issue_cycles(lines_, c.body, c.end);
    }
    const uint64_t passes = mb_ * nb_;
    cost_.front_cycles += passes * pass_cycles;
    cost_.mxu_cycles += passes * kb_ * std::max<uint64_t>(n_, tm_);
  }

  // ---- one block of at most kShortK K-tiles: the groups' loop in four copies ------------------
  //
  // With one M block, group g is column tile g: its C rows start at beat c + g, its bias row is
  // BIAS + g and its weight tile kb at beat w + kb n Nb + g, all linear in g; and tile j = g Kb
  // + kb uses weight slot j mod 4. So four copies of the group's code, one per g mod 4, have
  // every VMEM address static (slots, ACC and OUT by g mod 2) and every HBM address one
  // register (rG) plus a constant; the unit instructions are the unrolled form's, in its order
  // (weights four tiles ahead), and the scalar work per group is a guard per load near the end
  // and the `loop` that counts the groups, which pair with the unit instructions (dual issue).
  // Group 0 (its A_FULL waits) is written out before the loop, which starts at copy 1.
  enum ShortReg : unsigned { sLeft = 1, sG, sDelta0, sDelta1 };

  // The compute of tile kb of group g (copy c = g mod 4, or the peeled group 0). last: the
  // group's last mm goes in the layer's last epilogue's chunks (emit_mm_chunks) if this is the
  // layer's last group: Last::yes (the peeled group 0 of one group), Last::if_last (a copy: the
  // last group when R[sLeft] = 1, its `loop` about to leave).
  enum class Last { no, yes, if_last };
  void short_tile(uint64_t g_mod4, uint64_t kb, bool group0, Last last = Last::no) {
    Instr lw = weights_lw(*l_);
    lw.f.vaddr = lay_.w_slot0 + ((g_mod4 * kb_ + kb) % kWeightSlots) * n_;
    emit(lw, fmt::format("weights (k {})", kb));
    Instr mm;
    mm.op = Op::mxu_mm;
    mm.f.vaddr = lay_.a_buf[0] + kb * tm_;
    mm.f.acc = lay_.acc_buf[g_mod4 % 2];
    mm.f.rows = l_->m;
    mm.f.accumulate = kb > 0 ? 1 : 0;
    mm.wait = kb == 0 ? kAccFree : (group0 ? kAFull : 0);
    mm.signal = kb + 1 == kb_ ? kAccFull : 0;
    const std::string text = fmt::format("A K-tile {} -> ACC[{}]{}", kb, g_mod4 % 2, kb > 0 ? " (accumulate)" : "");
    const unsigned chunks = last_epilogue_chunks(*l_, l_->m);
    if (kb + 1 < kb_ || chunks == 1 || last == Last::no) {
      emit(mm, text);
      return;
    }
    const std::string whole = fresh("whole"), done = fresh("mmdone");
    if (last == Last::if_last) {
      branch_ne_const(sLeft, 1, whole);
    }
    emit_mm_chunks([&](const Instr& i, std::string t) { emit(i, std::move(t)); }, mm, text, l_->m, chunks);
    if (last == Last::if_last) {
      jump(done);
      label(whole);
      emit(mm, text);
      label(done);
    }
  }

  // The epilogue of the group whose C beat is R[sG] + off from c (g mod 2 = parity); chunked: the
  // layer's last group (emit_epilogue).
  void short_epilogue(uint64_t parity, int64_t off, bool chunked = false) {
    const MatmulLayer& l = *l_;
    const uint64_t out = lay_.out_buf[parity];
    Epilogue e;
    e.free_text = fmt::format("OUT[{}] is free", parity);
    e.first = vec(l.bias ? Op::vadd : Op::vmov, out, lay_.acc_buf[parity], l.m, true);
    if (l.bias) {
      e.first.f.b_r = sG;
      e.first.f.b = static_cast<uint64_t>(static_cast<int64_t>(lay_.bias_buf) + off);
      e.first.f.b_bcast = 1;
    }
    e.first.wait = kAccFull;
    e.first.signal = kAccFree;
    e.first_text = fmt::format("ACC[{}]{} -> OUT[{}]", parity, l.bias ? " + bias" : "", parity);
    if (l.relu) e.in_place.push_back({vec(Op::vrelu, out, out, l.m, false), "relu"});
    if (l.out_bf16) e.in_place.push_back({vec(Op::vcvtbf, out, out, l.m, false), "to bf16"});
    e.store = dma(Op::dma_st, out, static_cast<uint64_t>(static_cast<int64_t>(l.c.beat) + off), l.m, 1, nb_, kOutFull,
                  kOutFree);
    e.store.f.haddr_r = sG;
    e.store_text = "C rows of the group";
    emit_epilogue([&](const Instr& i, std::string text) { emit(i, std::move(text)); }, e, l.m,
                  chunked ? last_epilogue_chunks(l, l.m) : 1, chunked);
  }

  // The weight load after tile kb of a group: tile j + 4, that is K-tile (kb + 4) mod Kb of the
  // group delta = (kb + 4) / Kb later, into the slot tile j has just read. off: that group's
  // column tile is R[sG] + off. In the loop it is guarded: it exists while delta groups are
  // left (R[sLeft] = groups left from this one).
  void short_load(uint64_t g_mod4, uint64_t kb, uint64_t off, bool guarded) {
    const uint64_t delta = (kb + kWeightSlots) / kb_, k2 = (kb + kWeightSlots) % kb_;
    Instr w = w_load(p_, *l_, nb_, lay_.w_slot0 + ((g_mod4 * kb_ + kb) % kWeightSlots) * n_,
                     l_->w.beat + k2 * wk_ + off + delta);
    w.f.haddr_r = sG;
    const std::string text = fmt::format("W tile (k {}) of the group {} ahead", k2, delta);
    if (!guarded && delta == 0)  // group 0's own K-tile: A's K-tile goes just before it, as unrolled
      emit(dma(Op::dma_ld, lay_.a_buf[0] + k2 * tm_, l_->a.beat + k2, l_->m, 1, kb_, 0, kAFull),
           fmt::format("A K-tile {}", k2));
    if (!guarded || delta == 0) {
      emit(w, text);
      return;
    }
    const std::string skip = fresh("nol");
    branch(Op::bge, delta == delta0_ ? sDelta0 : sDelta1, sLeft, skip);
    emit(w, text);
    label(skip);
  }

  void short_layer(size_t index, bool last) {
    const MatmulLayer& l = *l_;
    const size_t layer_first = line();
    const uint64_t groups = nb_, tiles = groups * kb_;
    comment(fmt::format("{}: VMEM A@{} ({} rows), W slots@{} ({} x {} rows), OUT@{},{}{}; ACC@0,{}",
                        layer_name(index, l), lay_.a_buf[0], tm_ * kb_, lay_.w_slot0, kWeightSlots, n_, lay_.out_buf[0],
                        lay_.out_buf[1], l.bias ? fmt::format(", BIAS@{}", lay_.bias_buf) : "", lay_.acc_buf[1]));
    comment(fmt::format("one block, {} column tile(s) of {} K-tile(s): the groups' loop in four copies", groups, kb_));
    if (index > 0) emit(fence(Queue::load, kLayer, 0), "barrier: the previous layer's stores are complete");
    if (l.bias) emit(dma(Op::dma_ld, lay_.bias_buf, l.b.beat, nb_, 1, 1, 0, kBias), "bias row");
    // Tiles 0..3's loads (A's K-tiles each before its first weight tile), as unrolled.
    comment("the first four tiles' loads");
    for (uint64_t j = 0; j < std::min<uint64_t>(kWeightSlots, tiles); ++j) {
      const uint64_t g = j / kb_, kb = j % kb_;
      if (g == 0)
        emit(dma(Op::dma_ld, lay_.a_buf[0] + kb * tm_, l.a.beat + kb, l.m, 1, kb_, kb == 0 ? kAFree : 0, kAFull),
             fmt::format("A K-tile {}", kb));
      emit(w_load(p_, l, nb_, lay_.w_slot0 + (j % kWeightSlots) * n_, l.w.beat + kb * wk_ + g),
           fmt::format("W tile (k {}, n {}) -> slot {}", kb, g, j));
    }
    // The guards' constants: the two group distances of the loads (kb + 4) / Kb.
    delta0_ = kWeightSlots / kb_;
    li(sG, 0, "the group base: copy c runs group R + c");
    li(sLeft, static_cast<int64_t>(groups - 1), "groups left from group 1");
    li(sDelta0, static_cast<int64_t>(delta0_));
    li(sDelta1, static_cast<int64_t>(delta0_ + 1));
    comment("group 0");
    emit(fence(Queue::mxu, kAFull, 0), "A K-tile 0 loaded");
    for (uint64_t kb = 0; kb < kb_; ++kb) {
      short_tile(0, kb, true, groups == 1 ? Last::yes : Last::no);
      const uint64_t j = kb + kWeightSlots;
      if (j < tiles) short_load(0, kb, 0, false);
    }
    if (l.bias) emit(fence(Queue::vec, kBias, 0), "bias row loaded (before the first vector op)");
    const std::string done = fresh("done");
    std::string copy_label[4];
    for (unsigned c = 0; c < 4; ++c) copy_label[c] = fresh(fmt::format("copy{}", c));
    const size_t loop_first = line();
    std::vector<std::pair<size_t, size_t>> bodies;  // each copy's group code, for the cost
    if (groups > 1) {
      branch(Op::beq, 0, 0, copy_label[1]);
      for (uint64_t c = 0; c < 4; ++c) {
        label(copy_label[c]);
        const size_t body = line();
        // Group g = R + c (copy 0: R + 4 until R moves on by 4: right after its first mm, where
        // it pairs, so its epilogue's group is R - 1; when C starts at beat 0, after the epilogue).
        const bool step_early = l.c.beat >= 1;
        for (uint64_t kb = 0; kb < kb_; ++kb) {
          short_tile(c, kb, false, Last::if_last);
          if (kb == 0) {
            if (c == 0 && step_early) addi(sG, sG, 4, "the next four groups");
            short_epilogue((c + 1) % 2, c == 0 ? (step_early ? -1 : 3) : static_cast<int64_t>(c) - 1);
            if (c == 0 && !step_early) addi(sG, sG, 4, "the next four groups");
          }
          short_load(c, kb, c, true);
        }
        loop(sLeft, copy_label[(c + 1) % 4]);
        bodies.push_back({body, line()});
        comment("the last group");
        emit(fence(Queue::mxu, 0, kAFree), "the A block read by every mm");
        short_epilogue(c % 2, c, true);
        if (c < 3) jump(done);
      }
    } else {
      emit(fence(Queue::mxu, 0, kAFree), "the A block read by every mm");
      short_epilogue(0, 0, true);
    }
    label(done);
    const size_t loop_last = line();
    if (!last) emit(fence(Queue::store, 0, kLayer), "barrier: this layer's stores are complete");
    schedule_pairs(lines_, layer_first, line());
    // The cost (LoopCost): the code before the loop once, a copy's group code per group after
    // group 0, a last group's end.
    uint64_t copies = 0;
    for (const auto& [b, e] : bodies) copies += issue_cycles(lines_, b, e);
    cost_.front_cycles += issue_cycles(lines_, layer_first, loop_first) + (groups - 1) * copies / 4 +
                          (loop_last - loop_first > 0 ? 8 : 0);
    cost_.mxu_cycles += tiles * std::max<uint64_t>(n_, tm_);
  }

  void pass_setup(uint64_t last_rows) {
    const MatmulLayer& l = *l_;
    comment("pass setup");
    mv(rAv, rAbuf);
    // Part 1 loads this pass's tiles D.., part 2 the next pass's first D (the next column tile, or
    // column tile 0 of the next block).
    if (far_) return;
    addi(rWh, rNb, static_cast<int64_t>(l.w.beat + d_ * wk_), "part 1: W (k D, this n)");
    (void)last_rows;
  }

  // With one column tile (Nb = 1) a block's K-tiles all go right after the weights of the block
  // before's last tile, as unrolled (a block ahead): ahead = 1, at the part-1/part-2 boundary of
  // the block before (Kb > D: those weights are loaded in part 1); ahead = 2, in the block end of
  // the block two before, after its A_FREE fence (Kb <= D: the last tile of that block loads
  // them); block 1 then comes with the prologue. Its first K-tile takes A_FREE.
  void next_block_a(uint64_t ahead) {
    if (nb_ != 1 || mb_ <= ahead) return;
    const std::string skip = fresh("noa");
    addi(rT, rMb, -static_cast<int64_t>(mb_ - ahead));
    branch(Op::bge, rT, 0, skip);
    comment(fmt::format("the K-tiles of the block {} ahead", ahead));
    if (ahead == 1)
      sub(rAvS, rAbufSum, rAbuf, "its buffer: the other one");
    else
      mv(rAvS, rAbuf, "its buffer: this one's");
    addi(rAh, rAblk, static_cast<int64_t>(ahead * tm_ * kb_), "its first beat");
    li(rAr, static_cast<int64_t>(tm_));
    const std::string full = fresh("full");
    branch_ne_const(rMb, static_cast<int64_t>(mb_ - 1 - ahead), full);
    li(rAr, static_cast<int64_t>(last_rows_), "it is the last block");
    label(full);
    stream_load(kAFree, "A K-tile 0");
    if (kb_ > 1) {
      const std::string top = fresh("atile");
      li(rK, static_cast<int64_t>(kb_ - 1));
      label(top);
      stream_load(0, "A K-tile");
      loop(rK, top);
    }
    label(skip);
  }

  // With several passes, the next block's A stream opens in a block's first pass where its weight
  // loads reach the next pass (part 2): its K-tile 0, which takes A_FREE, goes right after the
  // weights of tile Kb - 1 (the last part-1 tile's), and K-tile p with those of tile Kb - 1 +
  // spread_ p, as unrolled (a_stream_first). Not in the last block.
  // tile0: the stream opens at tile 0 (Kb <= D): the first load itself takes A_FREE, right after
  // tile 0's weights, and the code goes on at `done`; otherwise the code falls through to the
  // tile's loads.
  void open_stream(bool tile0 = false, const std::string& done = {}) {
    if (mb_ < 2 || nb_ < 2 || far_) return;
    const std::string no_open = fresh("noopen");
    branch(Op::bne, rNb, 0, no_open);
    branch_eq_const(rMb, static_cast<int64_t>(mb_ - 1), no_open);
    comment("open the next block's A stream");
    sub(rAvS, rAbufSum, rAbuf, "the next block's buffer");
    addi(rAh, rAblk, static_cast<int64_t>(tm_ * kb_), "the next block's first beat");
    li(rAr, static_cast<int64_t>(tm_));
    const std::string full = fresh("full");
    branch_ne_const(rMb, static_cast<int64_t>(mb_ - 2), full);
    li(rAr, static_cast<int64_t>(last_rows_), "the next block is the last");
    label(full);
    if (tile0) loads(2, false);  // else after the last part-1 tile's weights (a_stream_first)
    stream_load(kAFree, "A stream: the next block's K-tile 0");
    li(rAL, static_cast<int64_t>(spread_ * (kb_ - 1)), spread_ == 1 ? "one per tile from here" : "tiles left");
    if (tile0) jump(done);
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

  // The loads after one tile's compute: its weight tile four ahead (part 1: this pass's, part 2:
  // the next pass's, none in the layer's last pass; with Kb < 4 far_load's), then (stream: in a
  // pass where the A stream may run) the A stream's next K-tile. Tile j + 4's slot is tile j's,
  // which its mxu.lw has just read (W_FREE): the load uses rWs before it steps on.
  void loads(int part, bool stream, bool a_first = false) {
    if (stream && a_first) stream_part(true);
    if (far_) {
      far_load();
      if (stream && !a_first) stream_part(false);
      return;
    }
    Instr w = w_load(p_, *l_, nb_, 0, 0);
    w.f.vaddr_r = rWs;
    w.f.haddr_r = part == 1 ? rWh : rWh2;
    const std::string skip = fresh("now");
    if (part == 2) branch(Op::beq, rNb, rStop, skip);
    emit(w, part == 1 ? "W tile D ahead" : "W tile of the next pass");
    addi(part == 1 ? rWh : rWh2, part == 1 ? rWh : rWh2, static_cast<int64_t>(wk_));
    if (part == 2) label(skip);
    if (stream && !a_first) stream_part(false);
  }
  // With Kb < 4, the weights of tile j + 4 (as unrolled), after tile j = kb_now_ of its pass: K-tile
  // (kb + 4) mod Kb of the pass delta = (kb + 4) / Kb ahead, into the slot tile j has just read;
  // none past the layer's last pass.
  void far_load() {
    const uint64_t delta = (kb_now_ + kWeightSlots) / kb_, k2 = (kb_now_ + kWeightSlots) % kb_;
    Instr w = w_load(p_, *l_, nb_, 0, k2 * wk_);
    w.f.vaddr_r = rWs;
    w.f.haddr_r = delta == delta0_ ? rCol0 : rCol1;
    const std::string skip = fresh("now");
    addi(rT, rLeft, -static_cast<int64_t>(delta + 1));  // R[rLeft] = passes left from this one
    branch(Op::blt, rT, 0, skip);
    emit(w, fmt::format("W tile (k {}) of the pass {} ahead", k2, delta));
    label(skip);
  }
  // With Kb < 4 and several passes, a block's K-tiles go with the weights of its pass 1, which
  // are loaded four tiles ahead: so at once after the A_FREE fence of the block two before (block
  // 1's with the prologue), the first here, the others one per tile (the stream).
  bool far_stream() const { return far_ && nb_ >= 2 && mb_ >= 2; }
  void far_open() {
    if (mb_ < 3) return;
    const std::string skip = fresh("noa");
    addi(rT, rMb, -static_cast<int64_t>(mb_ - 2));
    branch(Op::bge, rT, 0, skip);
    comment("the K-tiles of the block 2 ahead");
    mv(rAvS, rAbuf, "its buffer: this one's");
    addi(rAh, rAblk, static_cast<int64_t>(2 * tm_ * kb_), "its first beat");
    li(rAr, static_cast<int64_t>(tm_));
    const std::string full = fresh("full");
    branch_ne_const(rMb, static_cast<int64_t>(mb_ - 3), full);
    li(rAr, static_cast<int64_t>(last_rows_), "it is the last block");
    label(full);
    stream_load(kAFree, "A K-tile 0");
    li(rAL, static_cast<int64_t>(kb_ - 1));
    label(skip);
  }

  // Tile 0's bookkeeping without branches, in the basic block of its compute and the previous
  // group's epilogue (so that it pairs with their unit instructions; the first pass runs its own
  // copy before it enters the loop): the next tile's A rows, with Kb = 1 the group's end (after the
  // epilogue), the passes left.
  void tile0_book() {
    addi(rAv, rAv, static_cast<int64_t>(tm_));
    if (kb_ == 1) group_done();
    if (far_) addi(rLeft, rLeft, -1);
  }
  // Tile 0 (after its compute): the passes ahead's columns step on.
  void far_step() {
    if (!far_) return;
    const MatmulLayer& l = *l_;
    // Kb = 1, 2: every load is delta0 ahead; Kb = 3: delta0 or delta0 + 1.
    const std::vector<unsigned> cols = kb_ == 3 ? std::vector<unsigned>{rCol0, rCol1} : std::vector<unsigned>{rCol0};
    for (unsigned r : cols) {
      const std::string ok = fresh("col");
      addi(r, r, 1);
      addi(rT, r, -static_cast<int64_t>(l.w.beat + nb_));
      branch(Op::bne, rT, 0, ok);
      li(r, static_cast<int64_t>(l.w.beat));
      label(ok);
    }
  }

  // The A stream's next K-tile, if any is left. The first block's own (its first pass, part 1)
  // goes just before the weight tile that first uses it (a_first, as unrolled), one per tile;
  // the next block's after the tile's weights, one every spread_ tiles (a_stream_spacing): with
  // spread_ 2, R[rAL] counts the stream's tiles left, and a tile loads when it leaves an even
  // count (bit 0 shifted to bit 31 is zero).
  void stream_part(bool a_first) {
    const std::string none = fresh("noa");
    branch(Op::beq, rAL, 0, none);
    if (spread_ == 1 || a_first) {
      stream_load(0, "A stream: next K-tile");
      addi(rAL, rAL, -1);
    } else {
      addi(rAL, rAL, -1);
      Instr odd;
      odd.op = Op::slli;
      odd.f.rd = rT;
      odd.f.rs1 = rAL;
      odd.f.simm = 31;
      emit(odd, "an odd count of tiles left: no load here");
      branch(Op::bne, rT, 0, none);
      stream_load(0, "A stream: next K-tile");
    }
    label(none);
  }
  // Tile 0's loads: in a block's first pass the A stream (the first block's) before the weights,
  // in the others after them. With Kb <= D they are part 2's: the next block's stream opens first.
  void tile0_loads(int part) {
    if (part == 2) {
      const std::string done = fresh("t0end");
      open_stream(true, done);
      loads(part, true);
      label(done);
      return;
    }
    const std::string later = fresh("later"), end = fresh("t0end");
    branch(Op::bne, rNb, 0, later);
    loads(part, true, true);
    jump(end);
    label(later);
    loads(part, true);
    label(end);
  }

  // The last epilogue's chunks, in which the layer's last mm goes too, with Kb >= 2 (the last
  // tile has its own code).
  unsigned last_chunks() const { return kb_ < 2 ? 1 : last_epilogue_chunks(*l_, last_rows_); }

  // One tile's lw and mm. kb_kind: 0 the first K-tile (overwrite, ACC_FREE), 1 a middle one, 2
  // the last (ACC_FULL); with Kb = 1 the first is also the last. pass0: the mm takes A_FULL.
  // chunks > 1: the mm in that many row chunks (emit_mm_chunks; R[rRows] is the last block's).
  void compute(int kb_kind, bool pass0, unsigned chunks = 1) {
    Instr lw = weights_lw(*l_);
    lw.f.vaddr_r = rWs;
    emit(lw, "weights");
    Instr mm;
    mm.op = Op::mxu_mm;
    mm.f.vaddr_r = rAv;
    mm.f.acc_r = rAcc;
    mm.f.rows_r = rRows;
    mm.f.accumulate = kb_kind == 0 ? 0 : 1;
    mm.wait = kb_kind == 0 ? kAccFree : (pass0 ? kAFull : 0);
    mm.signal = (kb_kind == 2 || (kb_kind == 0 && kb_ == 1)) ? kAccFull : 0;
    const std::string text = kb_kind == 0 ? "A K-tile 0 -> ACC (overwrite)" : "A K-tile -> ACC (accumulate)";
    if (chunks > 1)
      emit_mm_chunks([&](const Instr& i, std::string t) { emit(i, std::move(t)); }, mm, text, last_rows_, chunks);
    else
      emit(mm, text);
  }

  void tiles() {
    // Tile 0.
    comment("K-tile 0 (a block's first pass: after the A_FULL fence at the block end)");
    compute(0, false);
    comment("the previous group's epilogue");
    epilogue();
    tile0_book();
    label(after_epilogue_);
    far_step();
    kb_now_ = 0;
    if (!far_) part2_address();
    slot_prepare();
    tile0_loads(kb_ > d_ ? 1 : 2);
    slot_advance();
    // Tiles 1 .. Kb-2 in their parts (part 1 while kb < Kb - D), each loop in one copy per kind of
    // pass: 0 (its mm takes A_FULL; the A stream may run), 1 (the stream may run; with
    // spread_ 2, passes 1 and 2), the others.
    const uint64_t split = kb_ - d_;
    if (kb_ > 2) {
      const uint64_t lo1 = 1, hi1 = std::max<uint64_t>(1, split);
      const uint64_t lo2 = std::max<uint64_t>(1, split), hi2 = kb_ - 1;
      const unsigned kinds = static_cast<unsigned>(std::min<uint64_t>(nb_, 3));
      for (int part : {1, 2}) {
        const uint64_t trips = part == 1 ? hi1 - lo1 : hi2 - lo2;
        if (trips == 0) continue;
        if (part == 2 && kb_ > d_) {
          open_stream();
          next_block_a(1);
        }
        comment(fmt::format("K-tiles {} .. {} (part {})", part == 1 ? lo1 : lo2, (part == 1 ? hi1 : hi2) - 1, part));
        const std::string done = fresh("done");
        std::string next;
        for (unsigned kind = 0; kind < kinds; ++kind) {
          if (kind > 0) label(next);
          next = fresh("kind");
          if (kind == 0 && kinds > 1) branch(Op::bne, rNb, 0, next);
          if (kind == 1 && kinds > 2) {
            if (spread_ == 1) {
              branch_ne_const(rNb, 1, next);
            } else {  // the stream runs to pass spread_
              addi(rT, rNb, -static_cast<int64_t>(spread_ + 1));
              branch(Op::bge, rT, 0, next);
            }
          }
          const std::string top = fresh("tile");
          Copy c;
          c.first = line();
          li(rK, static_cast<int64_t>(trips));
          label(top);
          c.body = line();
          compute(1, kind == 0);
          kb_now_ = lo2;  // with far_ (Kb = 3) the only middle tile
          addi(rAv, rAv, static_cast<int64_t>(tm_));
          slot_prepare();
          loads(part, kind < 2, kind == 0 && part == 1);
          slot_advance();
          loop(rK, top);
          if (kind + 1 < kinds) jump(done);
          c.end = line();
          c.trips = trips;
          c.runs = kind == 0;  // one copy runs per pass: count the first kind's
          copies_.push_back(c);
        }
        label(done);
      }
    }
    if (kb_ >= 2) {
      comment(fmt::format("K-tile {} (the last)", kb_ - 1));
      const std::string other = fresh("other"), done = fresh("done"), layer_last = fresh("layerlast");
      // The layer's last pass (R[rStop] is its column tile in the last block; with Kb < 4, R[rLeft]
      // counts the passes left from this one): its mm in the chunks of the layer's last epilogue
      // (emit_mm_chunks).
      const unsigned chunks = last_chunks();
      if (chunks > 1 && far_) branch_eq_const(rLeft, 1, layer_last);
      if (chunks > 1 && !far_) branch(Op::beq, rNb, rStop, layer_last);
      branch(Op::bne, rNb, 0, other);
      compute(2, true);
      jump(done);
      label(other);
      compute(2, false);
      if (chunks > 1) {
        jump(done);
        label(layer_last);
        compute(2, nb_ == 1, chunks);
      }
      label(done);
      group_done();
      kb_now_ = kb_ - 1;
      slot_prepare();
      loads(2, true);
      slot_advance();
    }
  }

  // Part 2's first weight address: W (k 0) of the next pass (the next column tile, or column tile
  // 0 of the next block). In tile 0, after its compute: it is needed from tile 0's loads on.
  void part2_address() {
    const MatmulLayer& l = *l_;
    const std::string wrap = fresh("nbwrap");
    addi(rWh2, rNb, static_cast<int64_t>(l.w.beat + 1), "part 2: W (k 0, next n)");
    branch_ne_const(rNb, static_cast<int64_t>(nb_ - 1), wrap);
    li(rWh2, static_cast<int64_t>(l.w.beat));
    label(wrap);
  }

  // After the group's last mm (and with Kb = 1 after the previous group's epilogue), before the
  // last tile's loads (so that this work does not wait behind a load that waits for a queue
  // slot): the group's registers saved for its epilogue, the next group's buffers and beats.
  void group_done() {
    comment("the group waits for its epilogue; the next group's buffers");
    mv(rPOut, rOut);
    mv(rPAcc, rAcc);
    mv(rPC, rC);
    mv(rPRows, rRows);
    mv(rPB, rB);
    sub(rAcc, rAccSum, rAcc);
    sub(rOut, rOutSum, rOut);
    addi(rC, rC, 1);
    addi(rB, rB, 1);
  }

  // The pass's end, then the next pass's setup and the jump back to pass_top; after the layer's
  // last pass, to done.
  void pass_end(uint64_t last_rows, const std::string& pass_top, const std::string& done) {
    comment("pass end");
    addi(rNb, rNb, 1);
    const std::string next = fresh("next");
    branch(Op::bne, rNb, rNbEnd, next);
    comment("block end");
    emit(fence(Queue::mxu, 0, kAFree), "the block's A buffer read by every mm");
    if (kb_ <= d_) next_block_a(2);
    if (far_stream()) far_open();
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
    if (!far_) li(rStop, static_cast<int64_t>(nb_ - 1));
    label(not_last);
    emit(fence(Queue::mxu, kAFull, 0), "the next block's first pass: A K-tile 0 loaded");
    label(next);
    pass_setup(last_rows);
    jump(pass_top);
  }

  // The previous group's epilogue: accumulators (+ bias) (ReLU) (-> bf16) into its output buffer,
  // then its store. last: the layer's last group, after the loop: its rows are the last block's,
  // and it goes in chunks (emit_epilogue).
  void epilogue(bool last = false) {
    const MatmulLayer& l = *l_;
    Epilogue e;
    e.free_text = "the output buffer is free";
    e.first = vec(l.bias ? Op::vadd : Op::vmov, 0, 0, 0, true);
    e.first.f.dst_r = rPOut;
    e.first.f.a_r = rPAcc;
    e.first.f.rows_r = rPRows;
    if (l.bias) {
      e.first.f.b_r = rPB;
      e.first.f.b_bcast = 1;
    }
    e.first.wait = kAccFull;
    e.first.signal = kAccFree;
    e.first_text = l.bias ? "ACC + bias -> OUT" : "ACC -> OUT";
    auto in_place = [&](Op op) {
      Instr i = vec(op, 0, 0, 0, false);
      i.f.dst_r = i.f.a_r = rPOut;
      i.f.rows_r = rPRows;
      return i;
    };
    if (l.relu) e.in_place.push_back({in_place(Op::vrelu), "relu"});
    if (l.out_bf16) e.in_place.push_back({in_place(Op::vcvtbf), "to bf16"});
    e.store = dma(Op::dma_st, 0, 0, 0, 1, nb_, kOutFull, kOutFree);
    e.store.f.vaddr_r = rPOut;
    e.store.f.haddr_r = rPC;
    e.store.f.rows_r = rPRows;
    e.store_text = "C rows of the group";
    emit_epilogue([&](const Instr& i, std::string text) { emit(i, std::move(text)); }, e, last ? last_rows_ : 0,
                  last ? last_epilogue_chunks(l, last_rows_) : 1, last && last_chunks() > 1);
  }

  const Preset& p_;
  const bool write_out_;
  Lines lines_;
  LoopCost cost_;
  uint64_t delta0_ = 0;         // short_layer: the smaller group distance of its loads
  std::string after_epilogue_;  // the pass loop's entry: tile 0's loads (the first pass)
  uint64_t last_rows_ = 0;      // the last M block's rows
  bool far_ = false;            // Kb < 4: the weights four tiles ahead (far_load), not Kb
  uint64_t kb_now_ = 0;         // far_load: the K-tile whose loads are being written
  // The pass's loop copies (line ranges: from the count's li, the body, the end), for the cost.
  struct Copy {
    size_t first = 0, body = 0, end = 0;
    uint64_t trips = 0;
    bool runs = false;
  };
  std::vector<Copy> copies_;
  size_t layer_ = 0;
  unsigned labels_ = 0;
  const MatmulLayer* l_ = nullptr;
  Layout lay_{};
  uint64_t n_ = 0, kb_ = 0, nb_ = 0, mb_ = 0, tm_ = 0, d_ = 0;
  uint64_t slots_ = kWeightSlots;  // the weight slots the nest cycles through (d_, or 4 with Kb < 4)
  uint64_t spread_ = 1;            // the next block's A stream: a K-tile every spread_ tiles (a_stream_spacing)
  uint64_t wk_ = 0;                // W's beats from one K-tile to the next (w_kstep)
};

}  // namespace

Lines build_looped(const Preset& p, const std::vector<MatmulLayer>& layers, const std::vector<Tiling>& plans,
                   bool write_out, LoopCost* cost) {
  LoopBuilder b(p, write_out);
  Lines lines = b.build(layers, plans);
  if (cost) *cost = b.cost();
  return lines;
}

}  // namespace tp::compiler::detail
