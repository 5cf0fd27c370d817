// The core (docs/chip.md): instruction memory, the front end that checks and dispatches one
// instruction per cycle into the unit queues (NumQueues of them, from the ISA table: load, mxu,
// vec, store, ici), the semaphores, and the error and done logic. Units see their queue's head
// instruction (u_instr_o) and take it with u_start_o.
//
// The front end is also the scalar unit: 32 registers (r0 = 0), and a taken branch fetches its
// target in the next cycle (no bubble: the instruction memory is read combinationally). It issues
// up to two instructions a cycle: the one at PC, and the one at PC + 1 as well when that is a
// scalar instruction or branch that passes its checks, the first is not a taken branch, and it
// reads no register the first writes (a unit instruction writes none, and pairs only when it
// dispatches). A unit instruction's register fields are resolved here (R[reg] + field, checked
// exactly) and the unit gets the resolved word.
//
// In a pod (pod_i: the chip's slice has more than one chip) another chip may still signal a
// semaphore, so a chip whose queues all wait is not a deadlock here: it raises waiting_o (with
// the oldest waiting PC) and the pod decides (docs/pod.md).
module tp_core
  import tp_isa_pkg::*;
#(
  parameter int unsigned N         = 8,
  parameter int unsigned AccRows   = 64,
  parameter int unsigned VmemRows  = 1024,
  parameter int unsigned ImemWords = 1024,
  parameter int unsigned Queue     = 4,
  parameter int unsigned HbmBeats  = 65536,
  localparam int unsigned NQ       = NumQueues,
  localparam int unsigned QIW      = $clog2(NQ)
) (
  input  logic         clk_i,
  input  logic         rst_ni,
  // host
  input  logic         imem_we_i,
  input  logic [31:0]  imem_addr_i,
  input  instr_t       imem_wdata_i,
  input  logic [31:0]  prog_len_i,
  input  logic         start_i,
  output logic         running_o,
  output logic         done_o,
  output logic         error_o,
  output logic [7:0]   err_code_o,
  output logic [31:0]  err_pc_o,
  // units 0 load, 1 mxu, 2 vec, 3 store, 4 ici (the ISA table's order)
  output logic [NQ-1:0] u_start_o,
  output instr_t       u_instr_o [NQ],
  output logic [31:0]  u_pc_o [NQ],
  input  logic [NQ-1:0] u_ready_i,  // the unit can take its head instruction now
  input  logic [NQ-1:0] u_idle_i,   // nothing in progress, nothing left to complete
  input  logic [NQ-1:0] u_cmpl_i,
  input  logic [SemW-1:0] u_cmpl_sig_i [NQ],
  input  logic [NQ-1:0] u_moving_i,
  input  logic         mem_err_i,  // a DMA got an error response
  input  logic [31:0]  mem_err_pc_i,
  input  logic         unit_err_i,  // a unit stopped with an error of its own (the ICI unit)
  input  logic [7:0]   unit_err_code_i,
  input  logic [31:0]  unit_err_pc_i,
  input  logic [SemW-1:0] rsig_i,     // a semaphore signalled from another chip (0: none)
  input  logic         ici_busy_i, // ICI traffic in flight on this chip: a signal may still come
  input  logic         pod_i,      // in a slice of several chips: no local deadlock verdict
  output logic         waiting_o,  // pod_i: every queue waits and nothing moves
  output logic [31:0]  wait_pc_o,  // the oldest waiting PC
  // counters: per unit busy, waiting, stalled, idle; cycles; instructions
  output logic [63:0]  cnt_unit_o [NQ][4],
  output logic [63:0]  cnt_cycles_o,
  output logic [63:0]  cnt_instrs_o,
  // trace probe (docs/observability.md): per queue, the head starts (pops) this cycle, and which
  // of the four unit counters counts this cycle (0 busy, 1 waiting, 2 stalled, 3 idle), valid
  // while dbg_count_o (the counters count)
  output logic [NQ-1:0]   dbg_go_o,
  output logic [2*NQ-1:0] dbg_kind_o,
  output logic            dbg_count_o
);
  localparam int unsigned QW = $bits(instr_t) + 32;
  localparam int unsigned LwPackedRows = (N + 1) / 2;  // the VMEM rows of a packed mxu.lw

  typedef enum logic [1:0] {
    Idle,
    Run,
    Halted,
    Stopped
  } state_e;
  state_e state_q;

  instr_t      imem_q [ImemWords];
  logic [31:0] pc_q;
  instr_t      raw, ins;  // the fetched word; ins: its register fields resolved
  regs_t       regs_q;    // scalar registers; regs_q[0] stays 0
  logic        scalar;    // a scalar instruction or branch (executed here, not queued)
  logic [5:0]  op;
  logic [7:0]  chk;
  logic [2:0]  unit;
  logic [QIW-1:0] uq;  // the queue of the fetched instruction
  logic        lw_seen_q, lw_unused_q;

  always_ff @(posedge clk_i) begin
    if (imem_we_i && imem_addr_i < 32'(ImemWords)) imem_q[imem_addr_i] <= imem_wdata_i;
  end
  assign raw    = (pc_q < 32'(ImemWords)) ? imem_q[pc_q] : '0;
  assign ins    = resolve(raw, regs_q);
  assign op     = f_opcode(raw);
  function automatic logic is_scalar(input instr_t i);
    return op_legal(f_opcode(i)) && op_unit(f_opcode(i)) == UnitFront && f_opcode(i) != OpHalt;
  endfunction
  // A scalar instruction's own checks (after the opcode and the reserved bits).
  function automatic logic [7:0] scalar_chk(input instr_t i, input logic [31:0] len);
    logic [5:0] o;
    logic [7:0] e;
    o = f_opcode(i);
    e = ErrNone;
    if (f_wait(i) != 0 || f_signal(i) != 0) e = ErrBadField;  // the front end has no semaphores
    else if ((o == OpSlli || o == OpSrli) && alui_simm(i) > 32'd31) e = ErrBadField;
    else if (o == OpLoop && loop_rd(i) == 0) e = ErrBadField;
    else if (o == OpLoop && 32'(loop_target(i)) >= len) e = ErrBranchRange;
    else if ((o == OpBeq || o == OpBne || o == OpBlt || o == OpBge) && 32'(br_target(i)) >= len) e = ErrBranchRange;
    return e;
  endfunction
  // Whether scalar instruction i reads register r (r0 is never a dependence).
  function automatic logic reads_reg(input instr_t i, input logic [4:0] r);
    logic [5:0] o;
    logic       d;
    o = f_opcode(i);
    d = 1'b0;  // li reads none
    if (o >= OpAdd && o <= OpSltu) d = alu_rs1(i) == r || alu_rs2(i) == r;
    else if (o == OpAddi || o == OpSlli || o == OpSrli) d = alui_rs1(i) == r;
    else if (o >= OpBeq && o <= OpBge) d = br_rs1(i) == r || br_rs2(i) == r;
    else if (o == OpLoop) d = loop_rd(i) == r;
    return d && r != 0;
  endfunction
  assign scalar = is_scalar(raw);

  // ---- checks, in the order docs/chip.md gives --------------------------------------------
  function automatic logic [63:0] w(input logic [31:0] x);
    return 64'(x);
  endfunction
  // [s, s+l) and [d, d+r): equal or disjoint
  function automatic logic bad_overlap(input logic [63:0] s, input logic [63:0] l, input logic [63:0] d,
                                       input logic [63:0] r);
    return !((s == d && l == r) || s + l <= d || d + r <= s);
  endfunction

  // The checks see the exact values R[reg] + field (64 bits) of the register fields: a rows that
  // does not fit its field is bad_field, an address past its field fails its range check.
  logic [63:0] r, e_va, e_ha, e_rows, e_acc, e_ra, e_dst, e_a, e_b;
  always_comb begin
    e_va = '0; e_ha = '0; e_rows = '0; e_acc = '0; e_ra = '0; e_dst = '0; e_a = '0; e_b = '0;
    case (op)
      OpDmaLd, OpDmaSt: begin
        e_va = dma_vaddr_eff(raw, regs_q); e_ha = dma_haddr_eff(raw, regs_q); e_rows = dma_rows_eff(raw, regs_q);
      end
      OpMxuLw: e_va = lw_vaddr_eff(raw, regs_q);
      OpMxuMm: begin
        e_va = mm_vaddr_eff(raw, regs_q); e_acc = mm_acc_eff(raw, regs_q); e_rows = mm_rows_eff(raw, regs_q);
      end
      OpIciSend: begin
        e_va = ici_vaddr_eff(raw, regs_q); e_ra = ici_raddr_eff(raw, regs_q); e_rows = ici_rows_eff(raw, regs_q);
      end
      default: begin
        e_dst = vec_dst_eff(raw, regs_q); e_a = vec_a_eff(raw, regs_q); e_b = vec_b_eff(raw, regs_q);
        e_rows = vec_rows_eff(raw, regs_q);
      end
    endcase
  end
  assign r = e_rows;
  always_comb begin
    chk  = ErrNone;
    unit = op_unit(op);
    if (unit == UnitField) unit = 3'(fence_unit(raw));
    if (!op_legal(op)) begin
      chk = ErrIllegalOpcode;
    end else if (reserved_set(raw)) begin
      chk = ErrBadField;
    end else if (scalar) begin
      chk = scalar_chk(raw, prog_len_i);
    end else begin
      case (op)
        OpDmaLd, OpDmaSt: begin
          if (e_rows == 0 || dma_cols(raw) == 0 || e_rows > 64'hffff) chk = ErrBadField;
          else if (e_va + (e_rows * w(32'(dma_cols(raw))) << dma_packed(raw)) > 64'(VmemRows))
            chk = ErrVmemRange;
          else if (e_ha + (e_rows - 1) * w(32'(dma_hstride(raw))) + w(32'(dma_cols(raw))) > 64'(HbmBeats))
            chk = ErrHbmRange;
        end
        OpMxuLw: begin
          if (e_va + (lw_packed(raw) ? 64'(LwPackedRows) : 64'(N)) > 64'(VmemRows)) chk = ErrVmemRange;
          else if (lw_unused_q) chk = ErrMxuWeightsUnused;
        end
        OpMxuMm: begin
          if (e_rows == 0 || e_rows > 64'hffff) chk = ErrBadField;
          else if (e_va + e_rows > 64'(VmemRows)) chk = ErrVmemRange;
          else if (e_acc + e_rows > 64'(AccRows)) chk = ErrAccRange;
          else if (!lw_seen_q) chk = ErrMxuNoWeights;
        end
        OpIciSend: begin
          if (e_rows == 0 || e_rows > 64'hffff) chk = ErrBadField;
          else if (e_va + e_rows > 64'(VmemRows)) chk = ErrVmemRange;
          else if (e_ra + e_rows > 64'(VmemRows)) chk = ErrVmemRange;
        end
        OpFence: begin
          if (32'(fence_unit(raw)) >= NQ) chk = ErrBadField;
        end
        OpHalt: ;
        default: begin  // vector
          if (r == 0 || r > 64'h7fff) chk = ErrBadField;
          else if (e_dst + r > 64'(VmemRows)) chk = ErrVmemRange;
          else if (vec_a_acc(raw) && e_a + r > 64'(AccRows)) chk = ErrAccRange;
          else if (!vec_a_acc(raw) && e_a + r > 64'(VmemRows)) chk = ErrVmemRange;
          else if (op_uses_b(op) && e_b + (vec_b_bcast(raw) ? 64'd1 : r) > 64'(VmemRows))
            chk = ErrVmemRange;
          else if (op_uses_mask(op) && w(32'(vec_imm(raw))) + r > 64'(VmemRows)) chk = ErrVmemRange;
          else if (!vec_a_acc(raw) && bad_overlap(e_a, r, e_dst, r)) chk = ErrOverlap;
          else if (op_uses_b(op) && bad_overlap(e_b, vec_b_bcast(raw) ? 64'd1 : r, e_dst, r))
            chk = ErrOverlap;
          else if (op_uses_mask(op) && bad_overlap(w(32'(vec_imm(raw))), r, e_dst, r)) chk = ErrOverlap;
        end
      endcase
    end
  end

  // ---- the scalar unit: two issue slots ------------------------------------------------------
  typedef struct packed {
    logic        we;
    logic [4:0]  rd;
    logic [31:0] res;
    logic [31:0] next;
  } s_out_t;
  function automatic s_out_t scalar_exec(input instr_t i, input regs_t rg, input logic [31:0] pc);
    s_out_t      o;
    logic [31:0] a, b, imm;
    logic [5:0]  opc;
    opc    = f_opcode(i);
    a      = rg[alu_rs1(i)];
    b      = rg[alu_rs2(i)];
    imm    = alui_simm(i);
    o.rd   = alu_rd(i);
    o.we   = 1'b1;
    o.res  = '0;
    o.next = pc + 1;
    case (opc)
      OpAdd:  o.res = a + b;
      OpSub:  o.res = a - b;
      OpAnd:  o.res = a & b;
      OpOr:   o.res = a | b;
      OpXor:  o.res = a ^ b;
      OpSll:  o.res = a << b[4:0];
      OpSrl:  o.res = a >> b[4:0];
      OpSlt:  o.res = 32'($signed(a) < $signed(b));
      OpSltu: o.res = 32'(a < b);
      OpAddi: o.res = a + imm;
      OpSlli: o.res = a << imm[4:0];
      OpSrli: o.res = a >> imm[4:0];
      OpLi: begin
        o.rd  = li_rd(i);
        o.res = li_simm(i);
      end
      OpBeq, OpBne, OpBlt, OpBge: begin
        o.we = 1'b0;
        a    = rg[br_rs1(i)];
        b    = rg[br_rs2(i)];
        if ((opc == OpBeq && a == b) || (opc == OpBne && a != b) || (opc == OpBlt && $signed(a) < $signed(b)) ||
            (opc == OpBge && $signed(a) >= $signed(b)))
          o.next = 32'(br_target(i));
      end
      OpLoop: begin
        o.rd  = loop_rd(i);
        o.res = rg[loop_rd(i)] - 1;
        if (o.res != 0) o.next = 32'(loop_target(i));
      end
      default: o.we = 1'b0;
    endcase
    if (o.rd == 0) o.we = 1'b0;
    return o;
  endfunction

  // Slot 0: the instruction at PC when it is scalar. Slot 1: the one at PC + 1, when it pairs.
  instr_t      raw2;
  logic [31:0] pc2;
  s_out_t      s0, s1;
  assign pc2  = pc_q + 1;
  assign raw2 = (pc2 < 32'(ImemWords)) ? imem_q[pc2] : '0;
  assign s0   = scalar_exec(raw, regs_q, pc_q);
  assign s1   = scalar_exec(raw2, regs_q, pc2);  // valid when it pairs: it reads none of slot 0's writes

  // ---- queues -------------------------------------------------------------------------------
  logic [NQ-1:0] q_push, q_ready, q_valid, q_pop;
  logic [QW-1:0] q_out [NQ];
  logic          fetch_ok, dispatch;
  assign uq       = QIW'(unit);
  assign fetch_ok = (state_q == Run) && (pc_q < prog_len_i) && (pc_q < 32'(ImemWords));
  assign dispatch = fetch_ok && chk == ErrNone && op != OpHalt && !scalar && q_ready[uq];
  logic s_exec;  // a scalar instruction or branch executes this cycle
  assign s_exec = fetch_ok && chk == ErrNone && scalar;
  logic pair;  // the instruction at PC + 1 issues in the same cycle (a scalar one)
  assign pair = (dispatch || (s_exec && s0.next == pc2 && !(s0.we && reads_reg(raw2, s0.rd)))) &&
                pc2 < prog_len_i && pc2 < 32'(ImemWords) && is_scalar(raw2) && !reserved_set(raw2) &&
                scalar_chk(raw2, prog_len_i) == ErrNone;

  for (genvar q = 0; q < NQ; q++) begin : gen_q
    assign q_push[q] = dispatch && uq == QIW'(q);
    tp_fifo #(.Width(QW), .Depth(Queue)) u_q (
      .clk_i,
      .rst_ni,
      .valid_i (q_push[q]),
      .ready_o (q_ready[q]),
      .data_i  ({ins, pc_q}),
      .valid_o (q_valid[q]),
      .ready_i (q_pop[q]),
      .data_o  (q_out[q])
    );
    assign u_instr_o[q] = q_out[q][QW-1:32];
    assign u_pc_o[q]    = q_out[q][31:0];
  end

  // ---- semaphores ---------------------------------------------------------------------------
  logic [NumSems-1:0][15:0] sem_q, sem_d;
  logic [SemW-1:0] h_wait [NQ], h_sig [NQ];
  logic [NQ-1:0] h_fence, wait_ok, go;
  logic [16:0] sem_next [NumSems];
  logic        sem_over;
  logic [31:0] over_pc;
  always_comb begin
    logic [4:0] taken [NumSems];
    for (int s = 0; s < NumSems; s++) taken[s] = '0;
    for (int q = 0; q < NQ; q++) begin
      h_wait[q]  = f_wait(u_instr_o[q]);
      h_sig[q]   = f_signal(u_instr_o[q]);
      h_fence[q] = f_opcode(u_instr_o[q]) == OpFence;
      wait_ok[q] = (h_wait[q] == 0) || (17'(sem_q[h_wait[q]]) > 17'(taken[h_wait[q]]));
      // A fence that only waits goes as soon as it has its count. One that signals waits for
      // its queue to be complete, except in the MXU queue, whose unit orders the signal behind
      // the work in flight (so the MXU pipeline does not drain).
      go[q] = (state_q == Run || state_q == Halted) && q_valid[q] && wait_ok[q] &&
              (!h_fence[q] ? u_ready_i[q] : (h_sig[q] == 0 || (q == 32'(UnitMxu) ? u_ready_i[q] : u_idle_i[q])));
      if (go[q] && h_wait[q] != 0) taken[h_wait[q]] = taken[h_wait[q]] + 1;
    end
    // A count past 65535. Which completion overflowed is not tracked: the error PC is all ones.
    sem_over = 1'b0;
    over_pc  = 32'hffffffff;
    for (int s = 0; s < NumSems; s++) sem_next[s] = 17'(sem_q[s]) - 17'(taken[s]);
    for (int q = 0; q < NQ; q++) begin
      if (u_cmpl_i[q] && u_cmpl_sig_i[q] != 0) sem_next[u_cmpl_sig_i[q]] = sem_next[u_cmpl_sig_i[q]] + 1;
      if (go[q] && h_fence[q] && q != 32'(UnitMxu) && h_sig[q] != 0) sem_next[h_sig[q]] = sem_next[h_sig[q]] + 1;
    end
    if (rsig_i != 0) sem_next[rsig_i] = sem_next[rsig_i] + 1;
    for (int s = 1; s < NumSems; s++) begin
      if (sem_next[s] > 17'd65535) sem_over = 1'b1;
    end
    sem_next[0] = '0;
    for (int s = 0; s < NumSems; s++) sem_d[s] = sem_next[s][15:0];
  end
  assign q_pop = go;
  for (genvar q = 0; q < NQ; q++) begin : gen_start
    assign u_start_o[q] = go[q] && (!h_fence[q] || (q == 32'(UnitMxu) && h_sig[q] != 0));
  end

  // ---- done, errors, deadlock ---------------------------------------------------------------
  logic        all_idle, stuck;
  logic [31:0] stuck_pc;
  logic [1:0]  stuck_q;
  always_comb begin
    all_idle = &u_idle_i;
    stuck_pc = 32'hffffffff;
    for (int q = 0; q < NQ; q++) begin
      if (q_valid[q] && u_pc_o[q] < stuck_pc) stuck_pc = u_pc_o[q];
    end
    // Nothing runs, nothing can start, the front end cannot dispatch, yet work is left.
    stuck = all_idle && (go == '0) && (u_cmpl_i == '0) && (rsig_i == '0) && !ici_busy_i && (|q_valid) &&
            (state_q == Halted ||
             (state_q == Run && fetch_ok && chk == ErrNone && op != OpHalt && !scalar && !dispatch));
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q     <= Idle;
      pc_q        <= '0;
      lw_seen_q   <= 1'b0;
      lw_unused_q <= 1'b0;
      error_o     <= 1'b0;
      err_code_o  <= ErrNone;
      err_pc_o    <= '0;
      stuck_q     <= '0;
      sem_q       <= '0;
      regs_q      <= '0;
    end else begin
      sem_q <= sem_d;
      stuck_q <= stuck ? ((stuck_q == 2'd3) ? stuck_q : stuck_q + 1) : '0;
      case (state_q)
        Idle, Stopped: begin
          if (start_i) begin
            state_q     <= Run;
            pc_q        <= '0;
            lw_seen_q   <= 1'b0;
            lw_unused_q <= 1'b0;
            error_o     <= 1'b0;
            err_code_o  <= ErrNone;
            err_pc_o    <= '0;
            regs_q      <= '0;
            // The semaphores keep their counts: only reset clears them (the host resets a chip
            // before every run), so a signal from another chip that arrives before this chip's
            // start is not lost.
          end
        end
        default: begin
          if (state_q == Run && fetch_ok && chk != ErrNone) begin
            state_q <= Stopped; error_o <= 1'b1; err_code_o <= chk; err_pc_o <= pc_q;
          end else if (state_q == Run && !fetch_ok) begin
            state_q <= Stopped; error_o <= 1'b1; err_code_o <= ErrNoHalt; err_pc_o <= pc_q;
          end else if (mem_err_i) begin
            state_q <= Stopped; error_o <= 1'b1; err_code_o <= ErrMemError; err_pc_o <= mem_err_pc_i;
          end else if (unit_err_i) begin
            state_q <= Stopped; error_o <= 1'b1; err_code_o <= unit_err_code_i; err_pc_o <= unit_err_pc_i;
          end else if (sem_over) begin
            state_q <= Stopped; error_o <= 1'b1; err_code_o <= ErrSemOverflow; err_pc_o <= over_pc;
          end else if (stuck_q == 2'd3 && !pod_i) begin
            state_q <= Stopped; error_o <= 1'b1; err_code_o <= ErrDeadlock; err_pc_o <= stuck_pc;
          end else if (state_q == Halted && all_idle && q_valid == '0) begin
            state_q <= Stopped;
          end else if (state_q == Run && fetch_ok && op == OpHalt) begin
            state_q <= Halted;
          end else if (s_exec) begin
            pc_q <= pair ? s1.next : s0.next;
            if (s0.we) regs_q[s0.rd] <= s0.res;
            if (pair && s1.we) regs_q[s1.rd] <= s1.res;  // the later write wins
          end else if (dispatch) begin
            pc_q <= pair ? s1.next : pc2;
            if (pair && s1.we) regs_q[s1.rd] <= s1.res;
            if (op == OpMxuLw) begin
              lw_seen_q   <= 1'b1;
              lw_unused_q <= 1'b1;
            end
            if (op == OpMxuMm) lw_unused_q <= 1'b0;
          end
        end
      endcase
    end
  end
  assign running_o = (state_q == Run || state_q == Halted);
  assign waiting_o = pod_i && (state_q == Run || state_q == Halted) && stuck_q == 2'd3;
  assign wait_pc_o = stuck_pc;
  assign done_o    = (state_q == Stopped);

  // ---- counters -----------------------------------------------------------------------------
  logic [NQ-1:0][3:0][63:0] cnt_q, cnt_d;  // [unit][busy, waiting, stalled, idle]
  logic [63:0] cycles_q, instrs_q;
  logic [1:0] kind [NQ];  // the counter this cycle counts per unit
  always_comb begin
    cnt_d = cnt_q;
    for (int q = 0; q < NQ; q++) begin
      if (!u_idle_i[q] && u_moving_i[q]) kind[q] = 2'd0;
      else if (!u_idle_i[q]) kind[q] = 2'd2;
      else if (q_valid[q] && !wait_ok[q]) kind[q] = 2'd1;
      else kind[q] = 2'd3;
      cnt_d[q][kind[q]] = cnt_q[q][kind[q]] + 1;
      dbg_kind_o[2*q +: 2] = kind[q];
    end
  end
  assign dbg_go_o    = go;
  assign dbg_count_o = running_o;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      cnt_q    <= '0;
      cycles_q <= '0;
      instrs_q <= '0;
    end else if (start_i && !running_o) begin
      cnt_q    <= '0;
      cycles_q <= '0;
      instrs_q <= '0;
    end else if (running_o) begin
      cnt_q    <= cnt_d;
      cycles_q <= cycles_q + 1;
      instrs_q <= instrs_q + 64'(dispatch || s_exec || (state_q == Run && fetch_ok && chk == ErrNone && op == OpHalt)) + 64'(pair);
    end
  end
  always_comb begin
    for (int q = 0; q < NQ; q++) for (int k = 0; k < 4; k++) cnt_unit_o[q][k] = cnt_q[q][k];
  end
  assign cnt_cycles_o = cycles_q;
  assign cnt_instrs_o = instrs_q;
endmodule
