// Protocol checker for one valid/ready channel: once valid is high and ready low, the next cycle
// must still have valid high and the same payload (valid never waits for ready, the payload is
// held until the transfer). Simulation only.
//
// Written as an immediate assertion on a registered copy rather than as a concurrent
// "$stable(data)" property: Verilator 5.006 emits uncompilable C++ when it samples payloads wider
// than 2048 bits for concurrent assertions (the 128x128 preset's rows are 2048 to 4113 bits).
module tp_assert_stable #(
  parameter int unsigned Width = 8,
  parameter string       Name  = "channel"
) (
  input logic             clk_i,
  input logic             rst_ni,
  input logic             valid_i,
  input logic             ready_i,
  input logic [Width-1:0] data_i
);
`ifndef SYNTHESIS
  logic             held_q;
  logic [Width-1:0] data_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) held_q <= 1'b0;
    else         held_q <= valid_i && !ready_i;
  end

  always_ff @(posedge clk_i) begin
    if (valid_i && !ready_i) data_q <= data_i;
  end

  always_ff @(posedge clk_i) begin
    if (rst_ni && held_q) begin
      a_valid_held: assert (valid_i)
        else $error("%s: valid dropped before the transfer (valid must wait for ready)", Name);
      a_data_held: assert (data_i == data_q)
        else $error("%s: payload changed while valid waited for ready", Name);
    end
  end
`else
  // Nothing to check in synthesis.
  logic unused;
  assign unused = ^{clk_i, rst_ni, valid_i, ready_i, data_i};
`endif
endmodule
