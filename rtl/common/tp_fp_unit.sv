// The MXU's arithmetic as a stand-alone block, so that it can be regressed exhaustively
// against the golden numerics (tb/fp): a bf16 multiplier, an fp32 adder and their fusion as the
// array uses it. Purely combinational.
module tp_fp_unit
  import tp_fp_pkg::*;
(
  input  logic [15:0] mul_a_i,
  input  logic [15:0] mul_b_i,
  output logic [31:0] mul_o,
  input  logic [31:0] add_a_i,
  input  logic [31:0] add_b_i,
  output logic [31:0] add_o,
  output logic [31:0] mac_o,       // add_a_i + mul_a_i * mul_b_i
  // the same MAC as the array computes it: the branch-free common case where it holds, else mac_o
  output logic [31:0] mac_fast_o,
  output logic        mac_fast_ok_o  // the common case holds
);
  assign mul_o = bf16_mul(mul_a_i, mul_b_i);
  assign add_o = fp32_add(add_a_i, add_b_i);
  assign mac_o = bf16_mac(add_a_i, mul_a_i, mul_b_i);
  assign mac_fast_ok_o = bf16_mac_is_fast(add_a_i, mul_a_i, mul_b_i);
  assign mac_fast_o = mac_fast_ok_o ? bf16_mac_fast(add_a_i, mul_a_i, mul_b_i) : mac_o;
endmodule
