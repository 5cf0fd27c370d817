// The vector unit (docs/chip.md): one vector instruction at a time, one row per cycle. Operand
// a streams from VMEM or from the MXU accumulators, b and the vsel mask from VMEM; each row goes
// through N lanes of tp_vpu_pkg::vpu_lane (or a reduction across the lanes) into a result
// register and from there into VMEM. The instruction is complete when its last row is written.
module tp_vpu
  import tp_isa_pkg::*;
#(
  parameter int unsigned N = 8
) (
  input  logic            clk_i,
  input  logic            rst_ni,
  input  logic            start_i,
  input  instr_t          instr_i,
  output logic            idle_o,
  output logic            cmpl_o,
  output logic [3:0]      cmpl_sig_o,
  output logic            moving_o,
  // VMEM reads: a, b, mask
  output logic [2:0]      rd_req_o,
  output logic [19:0]     rd_addr_o [3],
  input  logic [2:0]      rd_gnt_i,
  input  logic [2:0]      rd_rvalid_i,
  input  logic [N*32-1:0] rd_rdata_i [3],
  // accumulator reads (operand a when a_acc)
  output logic            acc_rd_valid_o,
  input  logic            acc_rd_ready_i,
  output logic [15:0]     acc_rd_addr_o,
  input  logic            acc_rsp_valid_i,
  input  logic [N*32-1:0] acc_rsp_data_i,
  // VMEM writes
  output logic            wr_req_o,
  output logic [19:0]     wr_addr_o,
  output logic [N*32-1:0] wr_data_o,
  input  logic            wr_gnt_i,
  output logic [63:0]     cnt_rows_o
);
  logic        busy_q, a_acc_q, use_b_q, use_m_q;
  logic [5:0]  op_q;
  logic [31:0] imm_q, rows_q, written_q;
  logic [19:0] dst_q;
  logic [3:0]  sig_q;
  logic [63:0] rows_cnt_q;

  // Operand streams. Stream 0 (a) reads VMEM or the accumulators.
  logic [2:0]      s_idle, s_req_done, s_valid, s_req;
  logic [19:0]     s_addr [3];
  logic [N*32-1:0] s_data [3];
  logic            s_gnt0, s_rvalid0;
  logic [N*32-1:0] s_rdata0;
  logic            take;

  assign s_gnt0    = a_acc_q ? acc_rd_ready_i : rd_gnt_i[0];
  assign s_rvalid0 = a_acc_q ? acc_rsp_valid_i : rd_rvalid_i[0];
  assign s_rdata0  = a_acc_q ? acc_rsp_data_i : rd_rdata_i[0];

  tp_rd_stream #(.W(N * 32)) u_a (
    .clk_i,
    .rst_ni,
    .start_i  (start_i),
    .addr_i   (vec_a(instr_i)),
    .count_i  (32'(vec_rows(instr_i))),
    .step_i   (1'b1),
    .idle_o   (s_idle[0]),
    .req_done_o (s_req_done[0]),
    .req_o    (s_req[0]),
    .addr_o   (s_addr[0]),
    .gnt_i    (s_gnt0),
    .rvalid_i (s_rvalid0),
    .rdata_i  (s_rdata0),
    .valid_o  (s_valid[0]),
    .ready_i  (take),
    .data_o   (s_data[0])
  );
  tp_rd_stream #(.W(N * 32)) u_b (
    .clk_i,
    .rst_ni,
    .start_i  (start_i && op_uses_b(f_opcode(instr_i))),
    .addr_i   (vec_b(instr_i)),
    .count_i  (32'(vec_rows(instr_i))),
    .step_i   (!vec_b_bcast(instr_i)),
    .idle_o   (s_idle[1]),
    .req_done_o (s_req_done[1]),
    .req_o    (s_req[1]),
    .addr_o   (s_addr[1]),
    .gnt_i    (rd_gnt_i[1]),
    .rvalid_i (rd_rvalid_i[1]),
    .rdata_i  (rd_rdata_i[1]),
    .valid_o  (s_valid[1]),
    .ready_i  (take && use_b_q),
    .data_o   (s_data[1])
  );
  tp_rd_stream #(.W(N * 32)) u_m (
    .clk_i,
    .rst_ni,
    .start_i  (start_i && op_uses_mask(f_opcode(instr_i))),
    .addr_i   (20'(vec_imm(instr_i))),
    .count_i  (32'(vec_rows(instr_i))),
    .step_i   (1'b1),
    .idle_o   (s_idle[2]),
    .req_done_o (s_req_done[2]),
    .req_o    (s_req[2]),
    .addr_o   (s_addr[2]),
    .gnt_i    (rd_gnt_i[2]),
    .rvalid_i (rd_rvalid_i[2]),
    .rdata_i  (rd_rdata_i[2]),
    .valid_o  (s_valid[2]),
    .ready_i  (take && use_m_q),
    .data_o   (s_data[2])
  );
  assign rd_req_o[0]    = s_req[0] && !a_acc_q;
  assign rd_req_o[1]    = s_req[1];
  assign rd_req_o[2]    = s_req[2];
  assign rd_addr_o      = s_addr;
  assign acc_rd_valid_o = s_req[0] && a_acc_q;
  assign acc_rd_addr_o  = s_addr[0][15:0];

  // One row through the lanes.
  logic [N*32-1:0] row;
  logic [31:0]     fold;
  always_comb begin
    fold = tp_vpu_pkg::fp32_is_nan(s_data[0][31:0]) ? 32'h7fc00000 : tp_vpu_pkg::fp32_daz(s_data[0][31:0]);
    for (int j = 1; j < N; j++) begin
      fold = (op_q == OpVredsum) ? tp_fp_pkg::fp32_add(fold, s_data[0][j*32+:32])
                                 : tp_vpu_pkg::fp32_max(fold, s_data[0][j*32+:32]);
    end
    for (int j = 0; j < N; j++) begin
      row[j*32+:32] = (op_q == OpVredsum || op_q == OpVredmax) ? fold :
          tp_vpu_pkg::vpu_lane(op_q, s_data[0][j*32+:32], s_data[1][j*32+:32], s_data[2][j*32+:32], imm_q);
    end
  end

  // Result register -> VMEM.
  logic        out_valid_q;
  logic [31:0] out_idx_q;
  logic        wr_fire;
  assign wr_req_o  = out_valid_q;
  assign wr_addr_o = dst_q + 20'(out_idx_q);
  assign wr_fire   = wr_req_o && wr_gnt_i;
  assign take      = busy_q && s_valid[0] && (!use_b_q || s_valid[1]) && (!use_m_q || s_valid[2]) &&
                     (!out_valid_q || wr_fire);
  assign moving_o  = take || wr_fire;
  assign idle_o    = !busy_q;
  assign cmpl_o    = busy_q && wr_fire && (written_q + 1 == rows_q);
  assign cmpl_sig_o = sig_q;
  assign cnt_rows_o = rows_cnt_q;

  always_ff @(posedge clk_i) begin
    if (take) wr_data_o <= row;
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
      dst_q       <= '0;
      sig_q       <= '0;
      out_valid_q <= 1'b0;
      out_idx_q   <= '0;
      rows_cnt_q  <= '0;
    end else begin
      if (start_i) begin
        busy_q    <= 1'b1;
        a_acc_q   <= vec_a_acc(instr_i);
        use_b_q   <= op_uses_b(f_opcode(instr_i));
        use_m_q   <= op_uses_mask(f_opcode(instr_i));
        op_q      <= f_opcode(instr_i);
        imm_q     <= vec_imm(instr_i);
        rows_q    <= 32'(vec_rows(instr_i));
        written_q <= '0;
        dst_q     <= vec_dst(instr_i);
        sig_q     <= f_signal(instr_i);
        out_idx_q <= '0;
      end else begin
        if (take) out_valid_q <= 1'b1;
        else if (wr_fire) out_valid_q <= 1'b0;
        if (wr_fire) begin
          written_q  <= written_q + 1;
          out_idx_q  <= out_idx_q + 1;
          rows_cnt_q <= rows_cnt_q + 1;
        end
        if (cmpl_o) busy_q <= 1'b0;
      end
    end
  end

  /* verilator lint_off UNUSEDSIGNAL */
  logic unused_ok;
  assign unused_ok = ^{s_idle, s_req_done};
  /* verilator lint_on UNUSEDSIGNAL */
endmodule
