// Formal harness of tp_fifo (make formal): every input free, reset at the start and at any later
// cycle. The properties are tp_fifo's own (its FORMAL block); none needs an assumption, so with
// Checked = 0 the input checker is off and the producer may do anything. With Checked = 1 the
// checker (tp_assert_stable, its simulation assertions read as proof obligations) is on, and the
// producer keeps the valid/ready rule: valid and data held until taken.
module formal_fifo #(
  parameter int unsigned Width   = 4,
  parameter int unsigned Depth   = 3,
  parameter bit          Checked = 1'b0
) (
  input logic clk_i
);
  (* anyseq *) logic             rst_ni, valid_i, ready_i;
  (* anyseq *) logic [Width-1:0] data_i;
  logic             ready_o, valid_o;
  logic [Width-1:0] data_o;

  always_comb if ($initstate) assume (!rst_ni);

  logic             wait_q;
  logic [Width-1:0] data_q;
  always_ff @(posedge clk_i) begin
    wait_q <= rst_ni && valid_i && !ready_o;
    data_q <= data_i;
  end
  always_comb if (Checked && rst_ni && wait_q) assume (valid_i && data_i == data_q);  // the producer's rule

  tp_fifo #(.Width(Width), .Depth(Depth), .CheckInput(Checked)) u_dut (.*);

  // Not vacuous: full, and a pop from full with a push in the same cycle refused.
  always_comb if (rst_ni) cover (!ready_o && valid_o && ready_i && valid_i);
endmodule
