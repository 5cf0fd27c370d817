// Load DMA (docs/chip.md): dma.ld copies a 2D block of HBM beats into consecutive VMEM rows.
// Requests go out one beat per cycle as the memory takes them; responses come back in order and
// are written into VMEM as the bank arbiter lets them. The next instruction's requests go out
// while the previous ones' data still arrives (up to four instructions in flight), so the
// memory's latency is paid once per stream of loads, not once per load: with two, a short load
// between two long ones (a weight tile between two K-tiles of A) exposed the latency again.
// A packed load (bf16 two per word in HBM) writes each beat as two VMEM rows, its low halves at
// vaddr + i and its high halves at vaddr + rows*cols + i, one write per grant, each lane's bf16
// in bits 15:0 of its word.
module tp_dma_ld
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
  output logic         moving_o,  // a beat was requested or written this cycle
  output logic         err_o,     // the memory answered with an error
  output logic [31:0]  err_pc_o,
  // memory requests (reads) and responses
  output logic         req_valid_o,
  input  logic         req_ready_i,
  output logic [31:0]  req_addr_o,
  input  logic         rsp_valid_i,
  output logic         rsp_ready_o,
  input  logic [W-1:0] rsp_data_i,
  input  logic         rsp_err_i,
  // VMEM writes
  output logic         wr_req_o,
  output logic [19:0]  wr_addr_o,
  output logic [W-1:0] wr_data_o,
  input  logic         wr_gnt_i,
  output logic [63:0]  cnt_bytes_o
);
  localparam logic [63:0] RowBytes = 64'(W) / 64'd8;
  // An instruction's write side: where its rows go, how many, what to signal.
  localparam int unsigned DW = 1 + 20 + 32 + SemW + 32;
  localparam int unsigned NL = W / 32;

  // Request side: one instruction's beats, one per cycle as the memory takes them.
  logic        req_busy_q;
  logic [31:0] total_q, issued_q;
  logic        req_fire, wr_fire, beat_done;
  // Write side: the instructions whose requests are out, oldest first.
  logic          d_in_ready, d_valid, d_pop;
  logic [DW-1:0] d_in, d_out;
  logic [19:0]   d_vaddr;
  logic [31:0]   d_total, d_pc, written_q;
  logic          d_packed, hi_q;  // hi_q: the beat's low half is written, its high half is next
  logic [W-1:0]  half;
  logic [SemW-1:0] d_sig;
  logic [63:0]   bytes_q;

  assign d_in = {dma_packed(instr_i), 20'(dma_vaddr(instr_i)), 32'(dma_rows(instr_i)) * 32'(dma_cols(instr_i)), f_signal(instr_i), pc_i};
  tp_fifo #(.Width(DW), .Depth(4)) u_desc (
    .clk_i,
    .rst_ni,
    .valid_i (start_i),
    .ready_o (d_in_ready),
    .data_i  (d_in),
    .valid_o (d_valid),
    .ready_i (d_pop),
    .data_o  (d_out)
  );
  assign {d_packed, d_vaddr, d_total, d_sig, d_pc} = d_out;

  // The next instruction's requests start while the previous one's data is still arriving.
  assign ready_o     = !req_busy_q && d_in_ready;
  assign idle_o      = !req_busy_q && !d_valid;
  assign req_valid_o = req_busy_q;
  assign req_fire    = req_valid_o && req_ready_i;
  assign wr_req_o    = d_valid && rsp_valid_i;
  assign wr_addr_o   = d_vaddr + 20'(written_q) + (hi_q ? 20'(d_total) : 20'd0);
  always_comb begin
    for (int l = 0; l < NL; l++) half[32*l+:32] = {16'd0, hi_q ? rsp_data_i[32*l+16+:16] : rsp_data_i[32*l+:16]};
  end
  assign wr_data_o   = d_packed ? half : rsp_data_i;
  assign wr_fire     = wr_req_o && wr_gnt_i;
  assign rsp_ready_o = wr_gnt_i && (!d_packed || hi_q);  // a packed beat is taken with its second write
  assign beat_done   = wr_fire && (!d_packed || hi_q);
  assign d_pop       = beat_done && (written_q + 1 == d_total);
  assign moving_o    = req_fire || wr_fire;
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
      written_q  <= '0;
      hi_q       <= 1'b0;
      err_o      <= 1'b0;
      err_pc_o   <= '0;
      bytes_q    <= '0;
    end else begin
      if (start_i) begin
        req_busy_q <= 1'b1;
        total_q    <= 32'(dma_rows(instr_i)) * 32'(dma_cols(instr_i));
        issued_q   <= '0;
      end else if (req_fire) begin
        issued_q <= issued_q + 1;
        if (issued_q + 1 == total_q) req_busy_q <= 1'b0;
      end
      if (wr_fire && d_packed) hi_q <= !hi_q;
      if (beat_done) begin  // bytes count the memory's beats
        written_q <= d_pop ? '0 : written_q + 1;
        bytes_q   <= bytes_q + RowBytes;
        if (rsp_err_i && !err_o) begin  // the first error and its instruction
          err_o    <= 1'b1;
          err_pc_o <= d_pc;
        end
      end
    end
  end
endmodule
