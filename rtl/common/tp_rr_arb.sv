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
endmodule
