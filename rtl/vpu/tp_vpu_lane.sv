// One lane of the vector unit, purely combinational: d_o = tp_vpu_pkg::vpu_lane(...), or for the
// pipelined ops (vexp, vrcp) their four stages at once, tp_vpu_pkg::vpu_x. A test
// wrapper (tb/vpu/test_vpu_lane.cpp drives it against sw/golden/vpu_ops.h).
module tp_vpu_lane (
  input  logic [5:0]  op_i,
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  input  logic [31:0] m_i,
  input  logic [31:0] imm_i,
  output logic [31:0] d_o
);
  assign d_o = (tp_isa_pkg::op_latency(op_i) != 3'd1) ? tp_vpu_pkg::vpu_x(op_i, a_i)
                                                     : tp_vpu_pkg::vpu_lane(op_i, a_i, b_i, m_i, imm_i);
endmodule
