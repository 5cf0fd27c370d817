// The vector unit (docs/chip.md): one vector instruction at a time, S sublanes of N lanes, so
// S rows per cycle. Row i of an instruction belongs to sublane i % S: each sublane streams its
// own rows of a, b and the vsel mask from VMEM (rows s, s+S, s+2S, ... of each operand), and the
// sublanes take a group of S consecutive rows together. Operand a from the MXU accumulators
// comes through the accumulators' single read port, one row per cycle, and is gathered into
// groups, the next group's first row in the cycle the last group goes on. Each row goes through
// N lanes of tp_vpu_pkg::vpu_lane (or a reduction across its lanes) into a result register per
// sublane and from there into VMEM. The pipelined ops (the ISA table's latency 4: vexp, vrcp)
// go through three stage registers of tp_vpu_pkg::vx_t first (vpu_x1 .. vpu_x4), so a group's
// result reaches the result registers three cycles later; the stages move together, when the
// result registers are free. The instruction is complete when its last row is written.
module tp_vpu
  import tp_isa_pkg::*;
#(
  parameter int unsigned N = 8,
  parameter int unsigned S = 1,  // sublanes
  localparam int unsigned W = N * 32
) (
  input  logic            clk_i,
  input  logic            rst_ni,
  input  logic            start_i,
  input  instr_t          instr_i,
  output logic            idle_o,
  output logic            cmpl_o,
  output logic [SemW-1:0] cmpl_sig_o,
  output logic            moving_o,
  // VMEM reads: a, b, mask of sublane s are clients 3s, 3s+1, 3s+2
  output logic [3*S-1:0]  rd_req_o,
  output logic [19:0]     rd_addr_o [3*S],
  input  logic [3*S-1:0]  rd_gnt_i,
  input  logic [3*S-1:0]  rd_rvalid_i,
  input  logic [W-1:0]    rd_rdata_i [3*S],
  // accumulator reads (operand a when a_acc)
  output logic            acc_rd_valid_o,
  input  logic            acc_rd_ready_i,
  output logic [15:0]     acc_rd_addr_o,
  input  logic            acc_rsp_valid_i,
  input  logic [W-1:0]    acc_rsp_data_i,
  // VMEM writes: sublane s is client s
  output logic [S-1:0]    wr_req_o,
  output logic [19:0]     wr_addr_o [S],
  output logic [W-1:0]    wr_data_o [S],
  input  logic [S-1:0]    wr_gnt_i,
  output logic [63:0]     cnt_rows_o
);
  localparam int unsigned SW = (S > 1) ? $clog2(S) : 1;

  localparam int unsigned XS = 3;  // stage registers of the pipelined ops (latency XS + 1)

  logic        busy_q, a_acc_q, use_b_q, use_m_q, xop_q;
  logic [5:0]  op_q;
  logic [31:0] imm_q, rows_q, written_q, group_q;
  logic [19:0] dst_q;
  logic [SemW-1:0] sig_q;
  logic [63:0] rows_cnt_q;

  // Rows of an instruction that belong to sublane s.
  function automatic logic [31:0] rows_of(input logic [31:0] rows, input int unsigned s);
    return (rows > 32'(s)) ? (rows - 32'(s) - 1) / 32'(S) + 1 : 32'd0;
  endfunction

  // The current group: rows group_q*S .. group_q*S + S - 1, those below rows_q are live.
  logic [S-1:0] live;
  always_comb begin
    for (int s = 0; s < S; s++) live[s] = busy_q && (group_q * 32'(S) + 32'(s) < rows_q);
  end

  // ---- operand streams: per sublane a (VMEM), b, mask ----------------------------------------
  logic [S-1:0] a_valid, b_valid, m_valid;
  logic [W-1:0] a_data [S], b_data [S], m_data [S];
  logic         take;
  logic [S-1:0] s_idle [3], s_req_done [3];

  for (genvar s = 0; s < S; s++) begin : gen_sub
    logic [31:0] cnt;
    assign cnt = rows_of(32'(vec_rows(instr_i)), s);
    tp_rd_stream #(.W(W)) u_a (
      .clk_i,
      .rst_ni,
      .start_i    (start_i && !vec_a_acc(instr_i)),
      .addr_i     (20'(vec_a(instr_i)) + 20'(s)),
      .count_i    (cnt),
      .step_i     (20'(S)),
      .pair_off_i ('0),
      .idle_o     (s_idle[0][s]),
      .req_done_o (s_req_done[0][s]),
      .req_o      (rd_req_o[3*s]),
      .addr_o     (rd_addr_o[3*s]),
      .gnt_i      (rd_gnt_i[3*s]),
      .rvalid_i   (rd_rvalid_i[3*s]),
      .rdata_i    (rd_rdata_i[3*s]),
      .valid_o    (a_valid[s]),
      .ready_i    (take && live[s] && !a_acc_q),
      .data_o     (a_data[s])
    );
    tp_rd_stream #(.W(W)) u_b (
      .clk_i,
      .rst_ni,
      .start_i    (start_i && op_uses_b(f_opcode(instr_i))),
      .addr_i     (vec_b_bcast(instr_i) ? 20'(vec_b(instr_i)) : 20'(vec_b(instr_i)) + 20'(s)),
      .count_i    (cnt),
      .step_i     (vec_b_bcast(instr_i) ? 20'd0 : 20'(S)),
      .pair_off_i ('0),
      .idle_o     (s_idle[1][s]),
      .req_done_o (s_req_done[1][s]),
      .req_o      (rd_req_o[3*s+1]),
      .addr_o     (rd_addr_o[3*s+1]),
      .gnt_i      (rd_gnt_i[3*s+1]),
      .rvalid_i   (rd_rvalid_i[3*s+1]),
      .rdata_i    (rd_rdata_i[3*s+1]),
      .valid_o    (b_valid[s]),
      .ready_i    (take && live[s] && use_b_q),
      .data_o     (b_data[s])
    );
    tp_rd_stream #(.W(W)) u_m (
      .clk_i,
      .rst_ni,
      .start_i    (start_i && op_uses_mask(f_opcode(instr_i))),
      .addr_i     (20'(vec_imm(instr_i)) + 20'(s)),
      .count_i    (cnt),
      .step_i     (20'(S)),
      .pair_off_i ('0),
      .idle_o     (s_idle[2][s]),
      .req_done_o (s_req_done[2][s]),
      .req_o      (rd_req_o[3*s+2]),
      .addr_o     (rd_addr_o[3*s+2]),
      .gnt_i      (rd_gnt_i[3*s+2]),
      .rvalid_i   (rd_rvalid_i[3*s+2]),
      .rdata_i    (rd_rdata_i[3*s+2]),
      .valid_o    (m_valid[s]),
      .ready_i    (take && live[s] && use_m_q),
      .data_o     (m_data[s])
    );
  end

  // ---- operand a from the accumulators: one stream, gathered into groups ----------------------
  logic         acc_valid, acc_pop, acc_idle, acc_req_done;
  logic [W-1:0] acc_row;
  logic [W-1:0] gather_q [S];
  logic [SW:0]  gathered_q;
  logic [SW:0]  group_size;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [19:0]  a_first;  // the 15-bit a field, widened (the range check bounds accumulator rows)
  /* verilator lint_on UNUSEDSIGNAL */
  logic [15:0]  acc_first;
  assign a_first   = 20'(vec_a(instr_i));
  assign acc_first = a_first[15:0];
  assign group_size = (rows_q - group_q * 32'(S) >= 32'(S)) ? (SW + 1)'(S) : (SW + 1)'(rows_q - group_q * 32'(S));
  tp_rd_stream #(.W(W), .AW(16)) u_acc (
    .clk_i,
    .rst_ni,
    .start_i    (start_i && vec_a_acc(instr_i)),
    .addr_i     (acc_first),
    .count_i    (32'(vec_rows(instr_i))),
    .step_i     (16'd1),
    .pair_off_i ('0),
    .idle_o     (acc_idle),
    .req_done_o (acc_req_done),
    .req_o      (acc_rd_valid_o),
    .addr_o     (acc_rd_addr_o),
    .gnt_i      (acc_rd_ready_i),
    .rvalid_i   (acc_rsp_valid_i),
    .rdata_i    (acc_rsp_data_i),
    .valid_o    (acc_valid),
    .ready_i    (acc_pop),
    .data_o     (acc_row)
  );
  // A group goes through the lanes (take) in the cycle the next group's first row is gathered:
  // the lanes read gather_q before the clock edge that overwrites its first row, so the
  // accumulators stream one row a cycle.
  assign acc_pop = busy_q && a_acc_q && acc_valid && ((gathered_q < group_size) || take);
  always_ff @(posedge clk_i) begin
    if (acc_pop) gather_q[take ? '0 : gathered_q[SW-1:0]] <= acc_row;
  end

  // ---- one group through the lanes -----------------------------------------------------------
  logic         ops_ready;
  logic [W-1:0] a_row [S];
  always_comb begin
    ops_ready = busy_q && (!a_acc_q || gathered_q == group_size);
    for (int s = 0; s < S; s++) begin
      a_row[s] = a_acc_q ? gather_q[s] : a_data[s];
      if (live[s]) begin
        if (!a_acc_q && !a_valid[s]) ops_ready = 1'b0;
        if (use_b_q && !b_valid[s]) ops_ready = 1'b0;
        if (use_m_q && !m_valid[s]) ops_ready = 1'b0;
      end
    end
  end

  logic [W-1:0] row [S];
  always_comb begin
    for (int s = 0; s < S; s++) begin
      logic [31:0] fold;
      fold = tp_vpu_pkg::fp32_is_nan(a_row[s][31:0]) ? 32'h7fc00000 : tp_vpu_pkg::fp32_daz(a_row[s][31:0]);
      for (int j = 1; j < N; j++) begin
        fold = (op_q == OpVredsum) ? tp_fp_pkg::fp32_add(fold, a_row[s][j*32+:32])
                                   : tp_vpu_pkg::fp32_max(fold, a_row[s][j*32+:32]);
      end
      for (int j = 0; j < N; j++) begin
        row[s][j*32+:32] = (op_q == OpVredsum || op_q == OpVredmax) ? fold :
            tp_vpu_pkg::vpu_lane(op_q, a_row[s][j*32+:32], b_data[s][j*32+:32], m_data[s][j*32+:32], imm_q);
      end
    end
  end

  // ---- the pipelined ops: stages 1 .. 3 (vx_t per lane), stage 4 into the result registers -------
  // The N x S lanes' stage registers x_q are updated in place by blocking assignments, the last
  // stage first, so that each reads the value from before the clock edge (as the MXU's array
  // does, docs/mxu.md "Simulation speed"): Verilator keeps the lane loops as C++ loops. x_q is
  // read only in this process. The result registers xres_q, which VMEM samples on the same
  // edge, take a non-blocking assignment (a packed vector, which Verilator delays inside a kept
  // loop).
  logic [S-1:0]          xv_q [XS];  // the live rows of the group in each stage
  logic [31:0]           xg_q [XS];  // its group number
  tp_vpu_pkg::vx_t       x_q [XS][S][N];
  logic [S-1:0][W-1:0]   xres_q;
  logic                  adv;   // the result registers take a group this cycle
  logic                  xadv;  // a pipelined op's stages all move this cycle
  assign xadv = xop_q && busy_q && adv;
  /* verilator lint_off BLKSEQ */
  always_ff @(posedge clk_i) begin : x_pipe
    if (xadv) begin
      for (int s = 0; s < S; s++) begin
        for (int j = 0; j < N; j++) begin
          xres_q[s][j*32+:32] <= tp_vpu_pkg::vpu_x4(op_q, x_q[2][s][j]);
          x_q[2][s][j] = tp_vpu_pkg::vpu_x3(op_q, x_q[1][s][j]);
          x_q[1][s][j] = tp_vpu_pkg::vpu_x2(op_q, x_q[0][s][j]);
          x_q[0][s][j] = tp_vpu_pkg::vpu_x1(op_q, a_row[s][j*32+:32]);
        end
      end
    end
  end
  /* verilator lint_on BLKSEQ */

  // ---- result registers -> VMEM ----------------------------------------------------------------
  logic [S-1:0]  out_valid_q, wr_fire;
  logic [31:0]   out_group_q;
  logic [W-1:0]  out_q [S];
  logic          out_free;
  logic [SW:0] nfire;  // rows written this cycle
  // Requests in one block, grants in another: Verilator orders processes, not signals.
  always_comb begin
    for (int s = 0; s < S; s++) begin
      wr_req_o[s]  = out_valid_q[s];
      wr_addr_o[s] = dst_q + 20'(out_group_q * 32'(S) + 32'(s));
    end
  end
  always_comb begin
    nfire = '0;
    for (int s = 0; s < S; s++) begin
      wr_fire[s] = out_valid_q[s] && wr_gnt_i[s];
      nfire      = nfire + (SW + 1)'(wr_fire[s]);
    end
  end
  assign out_free   = (out_valid_q & ~wr_fire) == '0;
  assign adv        = out_free;
  assign take       = ops_ready && adv && |live;  // no empty group past the last row
  assign moving_o   = take || (|wr_fire) || (xadv && (|{xv_q[0], xv_q[1], xv_q[2]}));
  assign idle_o     = !busy_q;
  assign cmpl_o     = busy_q && (|wr_fire) && (written_q + 32'(nfire) == rows_q);
  assign cmpl_sig_o = sig_q;
  assign cnt_rows_o = rows_cnt_q;

  for (genvar s = 0; s < S; s++) begin : gen_out
    always_ff @(posedge clk_i) begin
      if (take && live[s] && !xop_q) out_q[s] <= row[s];
    end
    assign wr_data_o[s] = xop_q ? xres_q[s] : out_q[s];
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      busy_q      <= 1'b0;
      a_acc_q     <= 1'b0;
      use_b_q     <= 1'b0;
      use_m_q     <= 1'b0;
      op_q        <= '0;
      imm_q       <= '0;
      rows_q      <= '0;
      written_q   <= '0;
      group_q     <= '0;
      dst_q       <= '0;
      sig_q       <= '0;
      xop_q       <= 1'b0;
      out_valid_q <= '0;
      out_group_q <= '0;
      for (int i = 0; i < int'(XS); i++) begin
        xv_q[i] <= '0;
        xg_q[i] <= '0;
      end
      gathered_q  <= '0;
      rows_cnt_q  <= '0;
    end else begin
      if (start_i) begin
        busy_q     <= 1'b1;
        a_acc_q    <= vec_a_acc(instr_i);
        use_b_q    <= op_uses_b(f_opcode(instr_i));
        use_m_q    <= op_uses_mask(f_opcode(instr_i));
        op_q       <= f_opcode(instr_i);
        xop_q      <= op_latency(f_opcode(instr_i)) != 3'd1;
        imm_q      <= f_opcode(instr_i) == OpVscale ? vsc_imm(instr_i) : 32'(vec_imm(instr_i));
        rows_q     <= 32'(vec_rows(instr_i));
        written_q  <= '0;
        group_q    <= '0;
        dst_q      <= 20'(vec_dst(instr_i));
        sig_q      <= f_signal(instr_i);
        gathered_q <= '0;
      end else begin
        if (xadv) begin
          // every stage moves: stage 3 into the result registers, the operands into stage 1
          out_valid_q <= xv_q[XS-1];
          out_group_q <= xg_q[XS-1];
          for (int i = int'(XS) - 1; i > 0; i--) begin
            xv_q[i] <= xv_q[i-1];
            xg_q[i] <= xg_q[i-1];
          end
          xv_q[0] <= take ? live : '0;
          xg_q[0] <= group_q;
        end else if (take) begin
          out_valid_q <= live;
          out_group_q <= group_q;
        end else begin
          out_valid_q <= out_valid_q & ~wr_fire;
        end
        if (take) begin
          group_q    <= group_q + 1;
          gathered_q <= (SW + 1)'(acc_pop);
        end else if (acc_pop) begin
          gathered_q <= gathered_q + 1;
        end
        if (|wr_fire) begin
          written_q  <= written_q + 32'(nfire);
          rows_cnt_q <= rows_cnt_q + 64'(nfire);
        end
        if (cmpl_o) busy_q <= 1'b0;
      end
    end
  end

  /* verilator lint_off UNUSEDSIGNAL */
  logic unused_ok;
  assign unused_ok = ^{s_idle[0], s_idle[1], s_idle[2], s_req_done[0], s_req_done[1], s_req_done[2], acc_idle,
                       acc_req_done};
  /* verilator lint_on UNUSEDSIGNAL */
endmodule
