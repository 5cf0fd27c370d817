// Synchronous FIFO with registered status: ready_o (not full) and valid_o (not empty) come from
// flops only, so no combinational path crosses the blocks on either side. Depth >= 2 gives full
// throughput; Depth == 1 is a plain half-throughput spill register.
module tp_fifo #(
  parameter int unsigned Width = 8,
  parameter int unsigned Depth = 2,
  // Check that the producer holds valid and the payload while it waits (off where the payload
  // is not the producer's to hold, or where the producer cannot wait by construction).
  parameter bit          CheckInput = 1'b1
) (
  input  logic             clk_i,
  input  logic             rst_ni,
  input  logic             valid_i,
  output logic             ready_o,
  input  logic [Width-1:0] data_i,
  output logic             valid_o,
  input  logic             ready_i,
  output logic [Width-1:0] data_o
);
  localparam int unsigned PtrW = (Depth > 1) ? $clog2(Depth) : 1;
  localparam int unsigned CntW = $clog2(Depth + 1);

  logic [Width-1:0] mem_q [Depth];
  logic [PtrW-1:0]  rd_q, rd_d, wr_q, wr_d;
  logic [CntW-1:0]  cnt_q, cnt_d;
  logic             push, pop;

  assign push    = valid_i && ready_o;
  assign pop     = valid_o && ready_i;
  assign ready_o = (cnt_q != CntW'(Depth));
  assign valid_o = (cnt_q != '0);
  assign data_o  = mem_q[rd_q];

  function automatic logic [PtrW-1:0] incr(input logic [PtrW-1:0] p);
    return (p == PtrW'(Depth - 1)) ? '0 : p + PtrW'(1);
  endfunction

  always_comb begin
    rd_d  = pop ? incr(rd_q) : rd_q;
    wr_d  = push ? incr(wr_q) : wr_q;
    cnt_d = cnt_q + CntW'(push) - CntW'(pop);
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rd_q  <= '0;
      wr_q  <= '0;
      cnt_q <= '0;
    end else begin
      rd_q  <= rd_d;
      wr_q  <= wr_d;
      cnt_q <= cnt_d;
    end
  end

  // Storage needs no reset: valid_o guards every read.
  always_ff @(posedge clk_i) begin
    if (push) mem_q[wr_q] <= data_i;
  end

  if (CheckInput) begin : gen_check
    tp_assert_stable #(.Width(Width), .Name("tp_fifo input")) u_check_in (
      .clk_i,
      .rst_ni,
      .valid_i,
      .ready_i (ready_o),
      .data_i
    );
  end
endmodule
