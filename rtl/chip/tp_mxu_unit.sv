// The MXU unit (docs/chip.md): runs the MXU queue. mxu.lw goes to the weight loader and mxu.mm
// to the row streamer; the two run at the same time, so the next tile's weights load while the
// current tile streams. Completions (semaphore signals) leave in queue order from a small FIFO:
// an lw is complete when its n rows are in the MXU's shadow buffer, an mm when its last result
// row is in the accumulators (the MXU's accumulator-write counter reaches the mm's target), a
// fence (that signals) when everything before it is complete.
//
// bf16 two per lane (docs/isa.md): an mm with hi takes each lane's bits 31:16; a packed lw reads
// its h = ceil(N/2) rows twice, as two row jobs: the tile's rows 0 .. h-1 from bits 15:0, rows
// h .. N-1 from bits 31:16.
module tp_mxu_unit
  import tp_isa_pkg::*;
#(
  parameter int unsigned N = 8,
  parameter int unsigned CplDepth = 8
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  input  logic               start_i,
  input  instr_t             instr_i,
  output logic               ready_o,  // can take instr_i now
  output logic               idle_o,   // nothing in progress, no completion pending
  output logic               cmpl_o,
  output logic [SemW-1:0]    cmpl_sig_o,
  output logic               moving_o,
  // VMEM reads: weights and activations
  output logic               w_req_o,
  output logic [19:0]        w_addr_o,
  input  logic               w_gnt_i,
  input  logic               w_rvalid_i,
  input  logic [N*32-1:0]    w_rdata_i,
  output logic               a_req_o,
  output logic [19:0]        a_addr_o,
  input  logic               a_gnt_i,
  input  logic               a_rvalid_i,
  input  logic [N*32-1:0]    a_rdata_i,
  // the MXU
  output logic               mxu_w_valid_o,
  input  logic               mxu_w_ready_i,
  output logic [N-1:0][15:0] mxu_w_data_o,
  output logic               mxu_w_t_o,     // the lw's t: the tile loads transposed
  output logic               mxu_a_valid_o,
  input  logic               mxu_a_ready_i,
  output logic [N-1:0][15:0] mxu_a_data_o,
  output logic               mxu_a_first_o,
  output logic [15:0]        mxu_a_acc_addr_o,
  output logic               mxu_a_accumulate_o,
  input  logic [63:0]        mxu_acc_writes_i
);
  // Completion FIFO entry: {is_mm, target, signal}.
  localparam int unsigned CW = 1 + 64 + SemW;

  logic          is_lw, is_mm, is_fence;
  logic          w_idle, a_idle, w_busy_q, a_busy, w_req_done;
  logic          w_valid, a_valid;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [N*32-1:0] w_row, a_row;  // the MXU takes bits 15:0 of each lane
  /* verilator lint_on UNUSEDSIGNAL */
  logic [31:0]   w_left_q, a_idx_q;
  logic          new_tile_q;
  logic          w_t_q;  // the current lw's t
  logic          w_packed_q, w_second_q;  // the current lw is packed; its second job is next
  logic [19:0]   w_vaddr_q;
  logic          w_hi;  // the row the MXU takes now is a high half
  logic          a_req_done;
  // Row jobs whose rows are requested or streaming, oldest first: {acc, rows, accumulate, hi, first}.
  localparam int unsigned JW = 16 + 16 + 1 + 1 + 1;
  logic          j_in_ready, j_valid, j_pop;
  logic [JW-1:0] j_out;
  logic [15:0]   j_acc, j_rows;
  logic          j_accum, j_hi, j_first;
  logic [63:0]   lw_started_q, lw_done_q, mm_rows_q;
  logic          c_in_ready, c_valid, c_pop;
  logic [CW-1:0] c_in, c_out;
  logic          c_is_mm;
  logic [63:0]   c_target;
  logic [SemW-1:0] c_sig;
  logic          w_fire, a_fire;

  assign is_lw = (f_opcode(instr_i) == OpMxuLw);
  assign is_mm = (f_opcode(instr_i) == OpMxuMm);
  assign is_fence = (f_opcode(instr_i) == OpFence);
  // A fence only queues its signal behind everything started before it.
  assign ready_o = c_in_ready && ((is_lw && !w_busy_q) || (is_mm && a_req_done && j_in_ready) || is_fence);
  assign idle_o = !w_busy_q && !a_busy && !c_valid;
  assign a_busy = !a_idle || j_valid;

  // Weight loader. A packed lw's second job (the same H rows again) is handed over in the next
  // cycle, while its first one requests: the stream's next-job slot is free then (no lw was in
  // progress), and it takes over as the first one's last row is granted.
  localparam int unsigned H = (N + 1) / 2;
  tp_rd_stream #(.W(N * 32)) u_w_rows (
    .clk_i,
    .rst_ni,
    .start_i  ((start_i && is_lw) || w_second_q),
    .addr_i   (w_second_q ? w_vaddr_q : 20'(lw_vaddr(instr_i))),
    .count_i  (w_second_q ? 32'(N - H) : (lw_packed(instr_i) ? 32'(H) : 32'(N))),
    .step_i   (20'd1),
    .pair_off_i ('0),
    .idle_o   (w_idle),
    .req_done_o (w_req_done),
    .req_o    (w_req_o),
    .addr_o   (w_addr_o),
    .gnt_i    (w_gnt_i),
    .rvalid_i (w_rvalid_i),
    .rdata_i  (w_rdata_i),
    .valid_o  (w_valid),
    .ready_i  (mxu_w_ready_i),
    .data_o   (w_row)
  );
  assign mxu_w_valid_o = w_valid;
  assign mxu_w_t_o     = w_t_q;
  assign w_fire = w_valid && mxu_w_ready_i;
  assign w_hi = w_packed_q && (w_left_q <= 32'(N - H));
  for (genvar j = 0; j < N; j++) begin : gen_w_lane
    assign mxu_w_data_o[j] = w_hi ? w_row[j*32+16+:16] : w_row[j*32+:16];
    assign mxu_a_data_o[j] = j_hi ? a_row[j*32+16+:16] : a_row[j*32+:16];
  end

  // Row streamer.
  tp_rd_stream #(.W(N * 32)) u_a_rows (
    .clk_i,
    .rst_ni,
    .start_i  (start_i && is_mm),
    .addr_i   (20'(mm_vaddr(instr_i))),
    .count_i  (32'(mm_rows(instr_i))),
    .step_i   (20'd1),
    .pair_off_i ('0),
    .idle_o   (a_idle),
    .req_done_o (a_req_done),
    .req_o    (a_req_o),
    .addr_o   (a_addr_o),
    .gnt_i    (a_gnt_i),
    .rvalid_i (a_rvalid_i),
    .rdata_i  (a_rdata_i),
    .valid_o  (a_valid),
    .ready_i  (mxu_a_ready_i),
    .data_o   (a_row)
  );
  // The next mm's rows are requested while this one's stream: no bubble between row jobs.
  tp_fifo #(.Width(JW), .Depth(2)) u_jobs (
    .clk_i,
    .rst_ni,
    .valid_i (start_i && is_mm),
    .ready_o (j_in_ready),
    .data_i  ({16'(mm_acc(instr_i)), mm_rows(instr_i), mm_accumulate(instr_i), mm_hi(instr_i), new_tile_q}),
    .valid_o (j_valid),
    .ready_i (j_pop),
    .data_o  (j_out)
  );
  assign {j_acc, j_rows, j_accum, j_hi, j_first} = j_out;
  assign mxu_a_valid_o      = a_valid;
  assign mxu_a_first_o      = j_first && (a_idx_q == 0);
  assign mxu_a_acc_addr_o   = j_acc + 16'(a_idx_q);
  assign mxu_a_accumulate_o = j_accum;
  assign a_fire             = a_valid && mxu_a_ready_i;
  assign j_pop              = a_fire && (a_idx_q + 1 == 32'(j_rows));
  assign moving_o           = w_fire || a_fire;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      w_busy_q     <= 1'b0;
      w_left_q     <= '0;
      a_idx_q      <= '0;
      new_tile_q   <= 1'b0;
      w_t_q        <= 1'b0;
      w_packed_q   <= 1'b0;
      w_second_q   <= 1'b0;
      w_vaddr_q    <= '0;
      lw_started_q <= '0;
      lw_done_q    <= '0;
      mm_rows_q    <= '0;
    end else begin
      if (start_i && is_lw) begin
        w_busy_q     <= 1'b1;
        w_left_q     <= 32'(N);
        lw_started_q <= lw_started_q + 1;
        new_tile_q   <= 1'b1;
        w_t_q        <= lw_t(instr_i);
        w_packed_q   <= lw_packed(instr_i);
        w_second_q   <= lw_packed(instr_i) && (N > 1);
        w_vaddr_q    <= 20'(lw_vaddr(instr_i));
      end else if (w_fire) begin
        w_left_q <= w_left_q - 1;
        if (w_left_q == 1) begin
          w_busy_q  <= 1'b0;
          lw_done_q <= lw_done_q + 1;
        end
      end
      if (w_second_q) w_second_q <= 1'b0;
      if (start_i && is_mm) begin
        new_tile_q <= 1'b0;
        mm_rows_q  <= mm_rows_q + 64'(mm_rows(instr_i));
      end
      if (a_fire) a_idx_q <= j_pop ? '0 : a_idx_q + 1;
    end
  end

  // Completions in queue order.
  assign c_in = {is_mm, is_mm ? mm_rows_q + 64'(mm_rows(instr_i)) : lw_started_q + 64'(is_lw), f_signal(instr_i)};
  tp_fifo #(.Width(CW), .Depth(CplDepth)) u_cpl (
    .clk_i,
    .rst_ni,
    .valid_i (start_i),
    .ready_o (c_in_ready),
    .data_i  (c_in),
    .valid_o (c_valid),
    .ready_i (c_pop),
    .data_o  (c_out)
  );
  assign {c_is_mm, c_target, c_sig} = c_out;
  assign c_pop      = c_valid && (c_is_mm ? (mxu_acc_writes_i >= c_target) : (lw_done_q >= c_target));
  assign cmpl_o     = c_pop;
  assign cmpl_sig_o = c_sig;

  /* verilator lint_off UNUSEDSIGNAL */
  logic unused_ok;
  assign unused_ok = w_idle ^ w_req_done;
  /* verilator lint_on UNUSEDSIGNAL */
endmodule
