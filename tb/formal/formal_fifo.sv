// Formal harness of tp_fifo (make formal): every input free, reset at the start and at any later
// cycle. The properties are tp_fifo's own (its FORMAL block); none needs an assumption, so the
// input checker is off and the producer may do anything.
module formal_fifo #(
  parameter int unsigned Width = 4,
  parameter int unsigned Depth = 3
) (
  input logic clk_i
);
  (* anyseq *) logic             rst_ni, valid_i, ready_i;
  (* anyseq *) logic [Width-1:0] data_i;
  logic             ready_o, valid_o;
  logic [Width-1:0] data_o;

  always_comb if ($initstate) assume (!rst_ni);

  tp_fifo #(.Width(Width), .Depth(Depth), .CheckInput(1'b0)) u_dut (.*);

  // Not vacuous: full, and a pop from full with a push in the same cycle refused.
  always_comb if (rst_ni) cover (!ready_o && valid_o && ready_i && valid_i);
endmodule
