// Streams rows out of a memory with request/grant and a fixed one-cycle read latency (VMEM, or
// the MXU accumulators): a job is (first address, count, address step); rows come out in order
// on valid/ready. Requests are issued only while the output FIFO has room for every row in
// flight, so the read data never has to wait. A new job may be handed over while the previous
// one still requests (req_done_o: the one-job slot for the next is free); it takes over in the
// cycle the previous one's last row is granted, so the requests of back-to-back jobs leave no
// gap, and its rows follow the previous job's in the output. A job with a
// pair offset P (not 0) reads pairs: addr, addr + P, addr + step, addr + step + P, ... (count_i
// rows in all; the store DMA's packed beats).
module tp_rd_stream #(
  parameter int unsigned W     = 256,
  parameter int unsigned AW    = 20,
  parameter int unsigned Depth = 4
) (
  input  logic          clk_i,
  input  logic          rst_ni,
  input  logic          start_i,  // hand over a job (only while req_done_o)
  input  logic [AW-1:0] addr_i,
  input  logic [31:0]   count_i,
  input  logic [AW-1:0] step_i,   // address step: 1 consecutive rows, 0 the same row count_i times
  input  logic [AW-1:0] pair_off_i,  // 0: none; else each row's partner P rows on
  output logic          idle_o,   // no row left to request or deliver
  output logic          req_done_o,  // the next job may be handed over (no job waits for its turn)
  output logic          req_o,
  output logic [AW-1:0] addr_o,
  input  logic          gnt_i,
  input  logic          rvalid_i,
  input  logic [W-1:0]  rdata_i,
  output logic          valid_o,
  input  logic          ready_i,
  output logic [W-1:0]  data_o
);
  localparam int unsigned CW = $clog2(Depth + 1);
  logic [AW-1:0] addr_q;
  logic [31:0]   left_q;
  logic [AW-1:0] step_q, pair_q;
  logic          odd_q;  // the next request is the partner row
  logic [CW-1:0] held_q;  // rows requested and not yet taken from the FIFO
  logic          fifo_ready;
  logic          pop;
  // The job handed over while another still requests: it takes over when that one's last row is
  // granted (or at once when none is left to request).
  logic          nxt_q;
  logic [AW-1:0] nxt_addr_q, nxt_step_q, nxt_pair_q;
  logic [31:0]   nxt_count_q;
  logic          last_gnt, free, load, load_nxt;

  assign req_o  = (left_q != 0) && (held_q < CW'(Depth));
  assign addr_o = addr_q + (odd_q ? pair_q : '0);
  assign pop    = valid_o && ready_i;
  assign idle_o = (left_q == 0) && (held_q == '0) && !nxt_q;
  assign req_done_o = !nxt_q;
  assign last_gnt = req_o && gnt_i && (left_q == 1);
  assign free     = (left_q == 0) || last_gnt;  // the current job requests nothing after this cycle
  assign load_nxt = nxt_q && free;
  assign load     = load_nxt || (start_i && free);

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      addr_q      <= '0;
      left_q      <= '0;
      step_q      <= '0;
      pair_q      <= '0;
      odd_q       <= 1'b0;
      held_q      <= '0;
      nxt_q       <= 1'b0;
      nxt_addr_q  <= '0;
      nxt_count_q <= '0;
      nxt_step_q  <= '0;
      nxt_pair_q  <= '0;
    end else begin
      if (start_i && !free) begin
        nxt_q       <= 1'b1;
        nxt_addr_q  <= addr_i;
        nxt_count_q <= count_i;
        nxt_step_q  <= step_i;
        nxt_pair_q  <= pair_off_i;
      end else if (load_nxt) begin
        nxt_q <= 1'b0;
      end
      if (load) begin
        addr_q <= load_nxt ? nxt_addr_q : addr_i;
        left_q <= load_nxt ? nxt_count_q : count_i;
        step_q <= load_nxt ? nxt_step_q : step_i;
        pair_q <= load_nxt ? nxt_pair_q : pair_off_i;
        odd_q  <= 1'b0;
      end else if (req_o && gnt_i) begin
        if (pair_q == '0 || odd_q) addr_q <= addr_q + step_q;
        odd_q  <= pair_q != '0 && !odd_q;
        left_q <= left_q - 1;
      end
      held_q <= held_q + CW'(req_o && gnt_i) - CW'(pop);
    end
  end

  tp_fifo #(.Width(W), .Depth(Depth), .CheckInput(1'b0)) u_fifo (
    .clk_i,
    .rst_ni,
    .valid_i (rvalid_i),
    .ready_o (fifo_ready),
    .data_i  (rdata_i),
    .valid_o,
    .ready_i,
    .data_o
  );

`ifndef SYNTHESIS
  always_ff @(posedge clk_i) begin
    if (rst_ni && rvalid_i && !fifo_ready) $error("tp_rd_stream: read data arrived with the FIFO full");
    if (rst_ni && start_i && !req_done_o) $error("tp_rd_stream: job handed over while another waits for its turn");
  end
`endif
  /* verilator lint_off UNUSEDSIGNAL */
  logic unused_ok;
  assign unused_ok = fifo_ready;
  /* verilator lint_on UNUSEDSIGNAL */
endmodule
