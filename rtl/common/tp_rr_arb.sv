// Round-robin arbiter: grants the first request at or after the position following the last
// grant that was taken (advance_i). Combinational grant, registered priority pointer.
module tp_rr_arb #(
  parameter int unsigned N = 4
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  input  logic [N-1:0]         req_i,
  input  logic                 advance_i,  // the grant was used: move priority past it
  output logic                 gnt_valid_o,
  output logic [$clog2(N > 1 ? N : 2)-1:0] gnt_idx_o
);
  localparam int unsigned IW = $clog2(N > 1 ? N : 2);
  logic [IW-1:0] ptr_q;  // highest-priority position

  logic [IW:0] pos;
  always_comb begin
    gnt_valid_o = 1'b0;
    gnt_idx_o   = '0;
    pos         = '0;
    for (int k = 0; k < N; k++) begin
      pos = {1'b0, ptr_q} + (IW + 1)'(k);  // ptr_q + k, wrapped
      if (pos >= (IW + 1)'(N)) pos = pos - (IW + 1)'(N);
      if (!gnt_valid_o && req_i[pos[IW-1:0]]) begin
        gnt_valid_o = 1'b1;
        gnt_idx_o   = pos[IW-1:0];
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ptr_q <= '0;
    end else if (advance_i && gnt_valid_o) begin
      ptr_q <= (gnt_idx_o == IW'(N - 1)) ? '0 : gnt_idx_o + 1'b1;
    end
  end

`ifdef FORMAL
  // Proof obligations (make formal, tb/formal/formal_rr_arb.sv), for any input sequence:
  // - a grant whenever something requests, only to a requester, and within range;
  // - round robin: the grant is the first request at or after the priority pointer;
  // - no starvation: a request held since it was first refused sees at most N - 1 grants taken
  //   by others (f_wait), so it is served within N rounds. f_wait + the request's distance from
  //   the pointer never grows, which makes the proof inductive.
  localparam int unsigned FW = IW + 1;
  logic [N*FW-1:0] f_wait_q, f_dist;
  always_comb begin
    for (int j = 0; j < N; j++) begin
      f_dist[j*FW +: FW] = (FW'(j) >= {1'b0, ptr_q}) ? FW'(j) - {1'b0, ptr_q} : FW'(j) + FW'(N) - {1'b0, ptr_q};
    end
  end
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      f_wait_q <= '0;
    end else begin
      for (int j = 0; j < N; j++) begin
        if (!req_i[j] || (advance_i && gnt_valid_o && gnt_idx_o == IW'(j))) f_wait_q[j*FW +: FW] <= '0;
        else if (advance_i && gnt_valid_o) f_wait_q[j*FW +: FW] <= f_wait_q[j*FW +: FW] + 1'b1;
      end
    end
  end
  always_comb begin
    if (rst_ni) begin
      assert ({1'b0, ptr_q} < FW'(N));
      assert (gnt_valid_o == (req_i != '0));
      if (gnt_valid_o) begin
        assert ({1'b0, gnt_idx_o} < FW'(N));
        assert (req_i[gnt_idx_o]);
      end
      for (int j = 0; j < N; j++) begin
        if (gnt_valid_o && req_i[j]) assert (f_dist[gnt_idx_o*FW +: FW] <= f_dist[j*FW +: FW]);
        assert (f_wait_q[j*FW +: FW] + f_dist[j*FW +: FW] <= FW'(N - 1));
        assert (f_wait_q[j*FW +: FW] <= FW'(N - 1));
      end
    end
  end
`endif
endmodule
