// Formal harness of tp_rr_arb (make formal): requests, advance and reset free. The properties are
// tp_rr_arb's own (its FORMAL block).
module formal_rr_arb #(
  parameter int unsigned N = 4
) (
  input logic clk_i
);
  localparam int unsigned IW = $clog2(N > 1 ? N : 2);
  (* anyseq *) logic         rst_ni, advance_i;
  (* anyseq *) logic [N-1:0] req_i;
  logic          gnt_valid_o;
  logic [IW-1:0] gnt_idx_o;

  always_comb if ($initstate) assume (!rst_ni);

  tp_rr_arb #(.N(N)) u_dut (.*);

  // Not vacuous: every requester asks and the last one is served.
  always_comb if (rst_ni) cover (req_i == '1 && advance_i && gnt_idx_o == IW'(N - 1));
endmodule
