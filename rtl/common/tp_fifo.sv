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

`ifdef FORMAL
  // Proof obligations (make formal, tb/formal/formal_fifo.sv). They hold for any input sequence,
  // so they are checked wherever the FIFO is instantiated in a proof.
  // - f_count_q counts the interface's pushes minus pops: it equals cnt_q, never exceeds Depth,
  //   and the status flags follow it (no overflow, no underflow);
  // - one entry, any one the solver picks (f_pick), is tracked from its push: it leaves after
  //   exactly the entries pushed before it, with its data (order kept);
  // - the output holds while it waits for ready_i (valid/ready stability).
  // The pointer relations and the tracked slot's contents make the proof inductive.
  /* verilator lint_off UNDRIVEN */
  (* anyseq *) logic f_pick;  // free: the solver drives it
  /* verilator lint_on UNDRIVEN */
  logic [CntW-1:0]  f_count_q, f_ahead_q;
  logic             f_in_q;
  logic [PtrW-1:0]  f_slot_q;
  logic [Width-1:0] f_data_q;
  logic [PtrW:0]    f_wr;
  always_comb begin
    f_wr = {1'b0, rd_q} + (PtrW + 1)'(cnt_q);
    if (f_wr >= (PtrW + 1)'(Depth)) f_wr = f_wr - (PtrW + 1)'(Depth);
  end
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      f_count_q <= '0;
      f_in_q    <= 1'b0;
      f_ahead_q <= '0;
    end else begin
      f_count_q <= f_count_q + CntW'(push) - CntW'(pop);
      if (f_in_q && pop) begin
        if (f_ahead_q == '0) f_in_q <= 1'b0;
        else f_ahead_q <= f_ahead_q - 1'b1;
      end
      if (push && f_pick && !f_in_q) begin
        f_in_q    <= 1'b1;
        f_slot_q  <= wr_q;
        f_data_q  <= data_i;
        f_ahead_q <= cnt_q - CntW'(pop);
      end
    end
  end
  always_comb begin
    if (rst_ni) begin
      assert (f_count_q == cnt_q);
      assert (cnt_q <= CntW'(Depth));
      assert (ready_o == (f_count_q != CntW'(Depth)));
      assert (valid_o == (f_count_q != '0));
      assert ((PtrW + 1)'(rd_q) < (PtrW + 1)'(Depth));
      assert (wr_q == f_wr[PtrW-1:0]);
      if (f_in_q) begin
        assert (f_ahead_q < cnt_q);
        assert (mem_q[f_slot_q] == f_data_q);
        assert ((PtrW + 1)'(f_slot_q) == (((PtrW + 1)'(rd_q) + (PtrW + 1)'(f_ahead_q) >= (PtrW + 1)'(Depth))
                                          ? (PtrW + 1)'(rd_q) + (PtrW + 1)'(f_ahead_q) - (PtrW + 1)'(Depth)
                                          : (PtrW + 1)'(rd_q) + (PtrW + 1)'(f_ahead_q)));
        if (f_ahead_q == '0) assert (data_o == f_data_q);
      end
    end
  end
  logic             f_wait_q;
  logic [Width-1:0] f_out_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) f_wait_q <= 1'b0;
    else         f_wait_q <= valid_o && !ready_i;
  end
  always_ff @(posedge clk_i) f_out_q <= data_o;
  always_comb begin
    if (rst_ni && f_wait_q) begin
      assert (valid_o);
      assert (data_o == f_out_q);
    end
  end
`endif

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
