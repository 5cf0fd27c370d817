// Store DMA (docs/chip.md): dma.st copies consecutive VMEM rows to a 2D block of HBM beats.
// VMEM rows stream in through a read stream, go out as write requests, and the instruction is
// complete when the memory has acknowledged every beat. The next instruction's requests start
// as soon as the previous one's last request is out, while its acknowledgements are still on
// the way (up to four instructions awaiting them, completing in order): one at a time, every
// store paid the memory's write latency before the next could start, which is what kept a
// layer's last epilogue from going out in more than two chunks. A packed
// store (bf16 two per word in HBM) reads two VMEM rows per beat, vaddr + i and vaddr + rows*cols
// + i, and writes bits 15:0 of each lane of the first as the word's low half, of the second as
// its high half.
module tp_dma_st
  import tp_isa_pkg::*;
#(
  parameter int unsigned W = 256
) (
  input  logic         clk_i,
  input  logic         rst_ni,
  input  logic         start_i,
  input  instr_t       instr_i,
  input  logic [31:0]  pc_i,
  output logic         ready_o,   // can take the next instruction
  output logic         idle_o,
  output logic         cmpl_o,    // the oldest instruction completed this cycle
  output logic [SemW-1:0] cmpl_sig_o,
  output logic         moving_o,
  output logic         err_o,
  output logic [31:0]  err_pc_o,
  // memory requests (writes) and acknowledgements
  output logic         req_valid_o,
  input  logic         req_ready_i,
  output logic [31:0]  req_addr_o,
  output logic [W-1:0] req_data_o,
  input  logic         rsp_valid_i,
  input  logic         rsp_err_i,
  // VMEM reads
  output logic         rd_req_o,
  output logic [19:0]  rd_addr_o,
  input  logic         rd_gnt_i,
  input  logic         rd_rvalid_i,
  input  logic [W-1:0] rd_rdata_i,
  output logic [63:0]  cnt_bytes_o
);
  localparam logic [63:0] RowBytes = 64'(W) / 64'd8;
  localparam int unsigned NL = W / 32;
  // An instruction's acknowledgement side: how many beats, what to signal.
  localparam int unsigned DW = 32 + SemW + 32;
  // Request side: one instruction's beats, one per cycle as the memory takes them.
  logic        req_busy_q;
  logic [31:0] total_q, issued_q;
  // Acknowledgement side: the instructions whose requests are going or gone out, oldest first.
  logic          d_in_ready, d_valid, d_pop;
  logic [DW-1:0] d_out;
  logic [31:0]   d_total, d_pc, acked_q;
  logic [SemW-1:0] d_sig;
  logic [63:0] bytes_q;
  logic        s_valid, s_idle, s_req_done, req_fire;
  logic        s_ready, packed_q, lo_valid_q;
  logic [W-1:0] s_data, lo_q, joined;
  logic [31:0] count;

  tp_fifo #(.Width(DW), .Depth(4)) u_desc (
    .clk_i,
    .rst_ni,
    .valid_i (start_i),
    .ready_o (d_in_ready),
    .data_i  ({count, f_signal(instr_i), pc_i}),
    .valid_o (d_valid),
    .ready_i (d_pop),
    .data_o  (d_out)
  );
  assign {d_total, d_sig, d_pc} = d_out;

  tp_rd_stream #(.W(W)) u_rows (
    .clk_i,
    .rst_ni,
    .start_i  (start_i),
    .addr_i   (20'(dma_vaddr(instr_i))),
    .count_i  (dma_packed(instr_i) ? 2 * count : count),
    .step_i   (20'd1),
    .pair_off_i (dma_packed(instr_i) ? 20'(count) : 20'd0),
    .idle_o   (s_idle),
    .req_done_o (s_req_done),
    .req_o    (rd_req_o),
    .addr_o   (rd_addr_o),
    .gnt_i    (rd_gnt_i),
    .rvalid_i (rd_rvalid_i),
    .rdata_i  (rd_rdata_i),
    .valid_o  (s_valid),
    .ready_i  (s_ready),
    .data_o   (s_data)
  );
  assign count = 32'(dma_rows(instr_i)) * 32'(dma_cols(instr_i));

  // Packed: the pair's first row waits in lo_q; the beat goes out with the second.
  always_comb begin
    for (int l = 0; l < NL; l++) joined[32*l+:32] = {s_data[32*l+:16], lo_q[32*l+:16]};
  end
  assign s_ready    = packed_q && !lo_valid_q ? 1'b1 : req_ready_i;
  assign req_data_o = packed_q ? joined : s_data;

  assign ready_o     = !req_busy_q && d_in_ready;
  assign idle_o      = !req_busy_q && !d_valid;
  assign req_valid_o = s_valid && (!packed_q || lo_valid_q);
  assign req_fire    = req_valid_o && req_ready_i;
  assign moving_o    = req_fire || rsp_valid_i || (packed_q && s_valid && !lo_valid_q);
  // Acknowledgements come back in request order, so the oldest instruction owns the next one.
  assign d_pop       = d_valid && rsp_valid_i && (acked_q + 1 == d_total);
  assign cmpl_o      = d_pop;
  assign cmpl_sig_o  = d_sig;
  assign cnt_bytes_o = bytes_q;

  tp_dma_walk u_walk (
    .clk_i,
    .rst_ni,
    .start_i   (start_i),
    .haddr_i   (32'(dma_haddr(instr_i))),
    .hstride_i (32'(dma_hstride(instr_i))),
    .cols_i    (dma_cols(instr_i)),
    .step_i    (req_fire),
    .addr_o    (req_addr_o)
  );

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      req_busy_q <= 1'b0;
      total_q    <= '0;
      issued_q   <= '0;
      acked_q    <= '0;
      err_o      <= 1'b0;
      err_pc_o   <= '0;
      bytes_q    <= '0;
      packed_q   <= 1'b0;
      lo_valid_q <= 1'b0;
      lo_q       <= '0;
    end else begin
      if (packed_q && s_valid && !lo_valid_q) begin
        lo_q       <= s_data;
        lo_valid_q <= 1'b1;
      end else if (req_fire) begin
        lo_valid_q <= 1'b0;
      end
      if (start_i) begin
        req_busy_q <= 1'b1;
        total_q    <= count;
        issued_q   <= '0;
        packed_q   <= dma_packed(instr_i);
      end else if (req_fire) begin
        issued_q <= issued_q + 1;
        if (issued_q + 1 == total_q) req_busy_q <= 1'b0;
      end
      if (req_fire) bytes_q <= bytes_q + RowBytes;
      if (rsp_valid_i) begin
        acked_q <= d_pop ? '0 : acked_q + 1;
        if (rsp_err_i && !err_o) begin  // the first error and its instruction
          err_o    <= 1'b1;
          err_pc_o <= d_pc;
        end
      end
    end
  end
  /* verilator lint_off UNUSEDSIGNAL */
  logic unused_ok;
  assign unused_ok = s_idle ^ s_req_done;
  /* verilator lint_on UNUSEDSIGNAL */
endmodule
