// The HBM side of a 2D DMA block (docs/chip.md): beat addresses haddr + r * hstride + c for
// rows r and columns c < cols, in row order, one step per beat issued.
module tp_dma_walk (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        start_i,    // a new block
  input  logic [31:0] haddr_i,
  input  logic [31:0] hstride_i,
  input  logic [11:0] cols_i,
  input  logic        step_i,     // the current beat was issued
  output logic [31:0] addr_o      // the current beat
);
  logic [31:0] row_q, hstride_q;
  logic [11:0] col_q, cols_q;

  assign addr_o = row_q + 32'(col_q);

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      row_q     <= '0;
      hstride_q <= '0;
      col_q     <= '0;
      cols_q    <= '0;
    end else if (start_i) begin
      row_q     <= haddr_i;
      hstride_q <= hstride_i;
      col_q     <= '0;
      cols_q    <= cols_i;
    end else if (step_i) begin
      if (col_q + 1 == cols_q) begin
        col_q <= '0;
        row_q <= row_q + hstride_q;
      end else begin
        col_q <= col_q + 1;
      end
    end
  end
endmodule
