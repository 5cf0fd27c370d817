// Load DMA (docs/chip.md): dma.ld copies a 2D block of HBM beats into consecutive VMEM rows.
// Requests go out one beat per cycle as the memory takes them; responses come back in order and
// are written into VMEM as the bank arbiter lets them. One instruction at a time.
module tp_dma_ld
  import tp_isa_pkg::*;
#(
  parameter int unsigned W = 256
) (
  input  logic         clk_i,
  input  logic         rst_ni,
  input  logic         start_i,
  input  instr_t       instr_i,
  input  logic [31:0]  pc_i,
  output logic         idle_o,
  output logic         cmpl_o,    // the instruction completed this cycle
  output logic [3:0]   cmpl_sig_o,
  output logic         moving_o,  // a beat was requested or written this cycle
  output logic         err_o,     // the memory answered with an error
  output logic [31:0]  err_pc_o,
  // memory requests (reads) and responses
  output logic         req_valid_o,
  input  logic         req_ready_i,
  output logic [31:0]  req_addr_o,
  input  logic         rsp_valid_i,
  output logic         rsp_ready_o,
  input  logic [W-1:0] rsp_data_i,
  input  logic         rsp_err_i,
  // VMEM writes
  output logic         wr_req_o,
  output logic [19:0]  wr_addr_o,
  output logic [W-1:0] wr_data_o,
  input  logic         wr_gnt_i,
  output logic [63:0]  cnt_bytes_o
);
  localparam logic [63:0] RowBytes = 64'(W) / 64'd8;
  logic        busy_q;
  logic [31:0] total_q, issued_q, written_q, row_q, hstride_q;
  logic [11:0] col_q, cols_q;
  logic [19:0] vaddr_q;
  logic [3:0]  sig_q;
  logic [31:0] pc_q;
  logic [63:0] bytes_q;
  logic        req_fire, wr_fire;

  assign idle_o      = !busy_q;
  assign req_valid_o = busy_q && (issued_q != total_q);
  assign req_addr_o  = row_q + 32'(col_q);
  assign req_fire    = req_valid_o && req_ready_i;
  assign wr_req_o    = busy_q && rsp_valid_i;
  assign wr_addr_o   = vaddr_q + 20'(written_q);
  assign wr_data_o   = rsp_data_i;
  assign rsp_ready_o = wr_gnt_i;
  assign wr_fire     = wr_req_o && wr_gnt_i;
  assign moving_o    = req_fire || wr_fire;
  assign cmpl_o      = busy_q && wr_fire && (written_q + 1 == total_q);
  assign cmpl_sig_o  = sig_q;
  assign err_pc_o    = pc_q;
  assign cnt_bytes_o = bytes_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      busy_q    <= 1'b0;
      total_q   <= '0;
      issued_q  <= '0;
      written_q <= '0;
      row_q     <= '0;
      hstride_q <= '0;
      col_q     <= '0;
      cols_q    <= '0;
      vaddr_q   <= '0;
      sig_q     <= '0;
      pc_q      <= '0;
      err_o     <= 1'b0;
      bytes_q   <= '0;
    end else begin
      if (start_i) begin
        busy_q    <= 1'b1;
        total_q   <= 32'(dma_rows(instr_i)) * 32'(dma_cols(instr_i));
        issued_q  <= '0;
        written_q <= '0;
        row_q     <= dma_haddr(instr_i);
        hstride_q <= dma_hstride(instr_i);
        col_q     <= '0;
        cols_q    <= dma_cols(instr_i);
        vaddr_q   <= dma_vaddr(instr_i);
        sig_q     <= f_signal(instr_i);
        pc_q      <= pc_i;
      end else begin
        if (req_fire) begin
          issued_q <= issued_q + 1;
          if (col_q + 1 == cols_q) begin
            col_q <= '0;
            row_q <= row_q + hstride_q;
          end else begin
            col_q <= col_q + 1;
          end
        end
        if (wr_fire) begin
          written_q <= written_q + 1;
          bytes_q   <= bytes_q + RowBytes;
          if (rsp_err_i) err_o <= 1'b1;
        end
        if (cmpl_o) busy_q <= 1'b0;
      end
    end
  end
endmodule
