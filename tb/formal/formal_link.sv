// Formal harness of the link layer (make formal): tp_ici_link_tx and tp_ici_link_rx joined by a
// wire that loses words and flips up to Flips bits of any word it carries, in both directions,
// with one cycle of latency each way; behind the receiver, the downstream router's input buffers
// (one tp_fifo of B flits per VC), drained at will; reset at the start and at any later cycle.
// Proved (asserts below, with the FIFOs' own):
// - sequence numbers: the flits delivered are, in order, the flits the sender accepted: none
//   twice, none skipped, none changed (a reference queue of the accepted flits);
// - the replay buffer: never more than R flits accepted and not yet delivered;
// - the credit counters: a VC's credits in use as the sender counts them (flits sent minus the
//   freed count of the last reverse word it took) never go below zero nor above B, and a flit
//   delivered always finds room in its buffer, counting the flits still on the wire.
// The flit is {data, vc, tail, head} as in tp_ici_pkg, with DataW bits of data; make formal
// reads tp_hw_pkg with narrow sequence, error and credit fields so that the proof's depth
// reaches their wrap-around.
module formal_link
  import tp_ici_pkg::*;
#(
  parameter int unsigned V       = 2,
  parameter int unsigned B       = 2,
  parameter int unsigned R       = 4,
  parameter int unsigned Timeout = 6,
  parameter int unsigned DataW   = 2,
  parameter int unsigned Flips   = 1   // bits the wire may flip in one word: 1 or 3
) (
  input logic clk_i
);
  localparam int unsigned VW  = (V > 1) ? $clog2(V) : 1;
  localparam int unsigned FW  = 2 + VW + DataW;
  localparam int unsigned LW  = FW + SEQW + CRCW;
  localparam int unsigned RVW = SEQW + ERRW + V * CNTW + CRCW;
  localparam int unsigned NW  = 8;  // the harness's counters: wider than any run's flit count

  (* anyseq *) logic           rst_ni, in_valid_i, fwd_drop, rv_drop;
  (* anyseq *) logic [FW-1:0]  in_flit_i;
  (* anyseq *) logic [LW-1:0]  fwd_flip;
  (* anyseq *) logic [RVW-1:0] rv_flip;
  (* anyseq *) logic [V-1:0]   drain;

  always_comb if ($initstate) assume (!rst_ni);
  // The wire flips at most Flips bits of a word (CRC-16-CCITT detects every error of up to three
  // bits in words this short). x & (x - 1) clears the lowest set bit.
  logic [LW-1:0]  fwd_f1, fwd_f2;
  logic [RVW-1:0] rv_f1, rv_f2;
  assign fwd_f1 = fwd_flip & (fwd_flip - 1'b1);
  assign fwd_f2 = fwd_f1 & (fwd_f1 - 1'b1);
  assign rv_f1  = rv_flip & (rv_flip - 1'b1);
  assign rv_f2  = rv_f1 & (rv_f1 - 1'b1);
  always_comb begin
    if (Flips <= 1) assume (fwd_f1 == '0 && rv_f1 == '0);
    else assume ((fwd_f2 & (fwd_f2 - 1'b1)) == '0 && (rv_f2 & (rv_f2 - 1'b1)) == '0);
  end
  if (Flips != 1 && Flips != 3) begin : gen_bad_flips
    $error("formal_link: Flips must be 1 or 3");
  end

  logic [VW-1:0]  in_vc;
  logic           in_ready, tx_valid, out_valid;
  logic [V-1:0]   credit_ok, pop, buf_ready, buf_valid;
  logic [LW-1:0]  tx_data;
  logic [RVW-1:0] rv_data;
  logic [FW-1:0]  out_flit;
  logic [31:0]    cnt_retx, cnt_rv_bad, cnt_faults, cnt_crc_err, cnt_dropped;
  assign in_vc = in_flit_i[2 +: VW];
  // The router forwards a flit only to a VC with a credit.
  always_comb if (rst_ni && in_valid_i) assume (credit_ok[in_vc]);

  // The wire, one register each way.
  logic           fwd_valid_q, rv_clean_q;
  logic [LW-1:0]  fwd_data_q;
  logic [RVW-1:0] rv_q;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      fwd_valid_q <= 1'b0;
      rv_q        <= '0;  // a word with a bad CRC: the sender takes nothing from it
      rv_clean_q  <= 1'b0;
    end else begin
      fwd_valid_q <= tx_valid && !fwd_drop;
      fwd_data_q  <= tx_data ^ fwd_flip;
      if (!rv_drop) begin
        rv_q       <= rv_data ^ rv_flip;
        rv_clean_q <= (rv_flip == '0);
      end
    end
  end

  tp_ici_link_tx #(.FW(FW), .V(V), .B(B), .R(R), .Timeout(Timeout)) u_tx (
    .clk_i, .rst_ni,
    .in_valid_i, .in_ready_o (in_ready), .in_flit_i, .in_vc_i (in_vc), .credit_ok_o (credit_ok),
    .tx_valid_o (tx_valid), .tx_data_o (tx_data), .rv_data_i (rv_q),
    .fault_rate_i (16'h0), .cnt_retx_o (cnt_retx), .cnt_rv_bad_o (cnt_rv_bad), .cnt_faults_o (cnt_faults)
  );

  tp_ici_link_rx #(.FW(FW), .V(V)) u_rx (
    .clk_i, .rst_ni,
    .rx_valid_i (fwd_valid_q), .rx_data_i (fwd_data_q),
    .out_valid_o (out_valid), .out_flit_o (out_flit), .pop_i (pop), .rv_data_o (rv_data),
    .cnt_crc_err_o (cnt_crc_err), .cnt_dropped_o (cnt_dropped)
  );

  logic [FW-1:0] buf_flit [V];
  for (genvar v = 0; v < V; v++) begin : gen_buf
    tp_fifo #(.Width(FW), .Depth(B), .CheckInput(1'b0)) u_buf (
      .clk_i, .rst_ni,
      .valid_i (out_valid && out_flit[2 +: VW] == VW'(v)), .ready_o (buf_ready[v]), .data_i (out_flit),
      .valid_o (buf_valid[v]), .ready_i (drain[v]), .data_o (buf_flit[v])
    );
    assign pop[v] = buf_valid[v] && drain[v];
  end

  // Reference queue of the flits accepted and not yet delivered.
  localparam int unsigned QD = R + 1;
  logic [FW-1:0] ref_q [QD];
  logic [NW-1:0] acc_n_q, del_n_q;
  logic [NW-1:0] sent_q [V], popped_q [V];
  logic [CNTW-1:0] sent_mod_q [V], freed_seen_q [V];
  logic          accept;
  assign accept = in_valid_i && in_ready;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      acc_n_q <= '0;
      del_n_q <= '0;
      for (int v = 0; v < V; v++) begin
        sent_q[v]       <= '0;
        popped_q[v]     <= '0;
        sent_mod_q[v]   <= '0;
        freed_seen_q[v] <= '0;
      end
    end else begin
      if (accept) begin
        ref_q[acc_n_q % QD] <= in_flit_i;
        acc_n_q <= acc_n_q + 1'b1;
      end
      if (out_valid) del_n_q <= del_n_q + 1'b1;
      for (int v = 0; v < V; v++) begin
        if (accept && in_vc == VW'(v)) begin
          sent_q[v]     <= sent_q[v] + 1'b1;
          sent_mod_q[v] <= sent_mod_q[v] + 1'b1;
        end
        if (pop[v]) popped_q[v] <= popped_q[v] + 1'b1;
        // What the sender takes from the reverse word (a clean word passes its CRC check).
        if (rv_clean_q) freed_seen_q[v] <= rv_q[SEQW + ERRW + v * CNTW +: CNTW];
      end
    end
  end

  always_comb begin
    if (rst_ni) begin
      assert (del_n_q <= acc_n_q);
      assert (acc_n_q - del_n_q <= NW'(R));
      if (out_valid) begin
        assert (del_n_q != acc_n_q);
        assert (out_flit == ref_q[del_n_q % QD]);
        assert (buf_ready[out_flit[2 +: VW]]);
      end
      for (int v = 0; v < V; v++) begin
        assert (CNTW'(sent_mod_q[v] - freed_seen_q[v]) <= CNTW'(B));
        assert (popped_q[v] <= sent_q[v]);
        assert (sent_q[v] - popped_q[v] <= NW'(B));
      end
    end
  end

  // Not vacuous: make formal checks that these are reachable.
  always_comb begin
    if (rst_ni) begin
      cover (del_n_q == NW'(2 ** SEQW + 1));         // the sequence numbers wrapped
      cover (cnt_retx != '0 && del_n_q == NW'(3));    // flits sent again, and delivered
      cover (cnt_crc_err != '0 && cnt_rv_bad != '0);  // a bad word each way
    end
  end
endmodule
