// MXU accumulator memory: AccRows rows of N fp32 values. Result rows from the array either
// overwrite their row or are added to it element-wise (to sum over K tiles); the caller reads
// rows back through a request/response port. A write to a row >= AccRows is dropped, a read of one
// returns zeros; both raise the sticky error flag.
module tp_mxu_acc
  import tp_fp_pkg::*;
#(
  parameter int unsigned N       = 8,
  parameter int unsigned AccRows = 64
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  // Result rows from the array (always accepted: one read-modify-write per cycle).
  input  logic               wr_valid_i,
  output logic               wr_ready_o,
  input  logic [N-1:0][31:0] wr_data_i,
  input  logic [15:0]        wr_addr_i,
  input  logic               wr_acc_i,
  // Caller reads.
  input  logic               rd_valid_i,
  output logic               rd_ready_o,
  input  logic [15:0]        rd_addr_i,
  output logic               rsp_valid_o,
  input  logic               rsp_ready_i,
  output logic [N-1:0][31:0] rsp_data_o,
  output logic               err_addr_o,
  output logic [63:0]        cnt_writes_o
);
  localparam int unsigned AW = (AccRows > 1) ? $clog2(AccRows) : 1;

  // Addresses are 16 bits wide.
  if (AccRows < 1 || AccRows > 65535) begin : gen_bad_acc_rows
    $error("tp_mxu_acc: AccRows = %0d is out of range [1, 65535]", AccRows);
  end

  logic [31:0]        mem_q [AccRows][N];
  logic [31:0]        wr_row [N];
  logic [N-1:0][31:0] rd_row;
  logic               wr_ok, rd_ok, wr_en, rd_fire;
  logic [AW-1:0]      wr_idx, rd_idx;
  logic               err_q;
  logic [63:0]        writes_q;

  assign wr_ready_o = 1'b1;
  assign wr_ok      = (wr_addr_i < 16'(AccRows));
  assign rd_ok      = (rd_addr_i < 16'(AccRows));
  assign wr_idx     = wr_ok ? wr_addr_i[AW-1:0] : '0;
  assign rd_idx     = rd_ok ? rd_addr_i[AW-1:0] : '0;
  assign wr_en      = wr_valid_i && wr_ok;
  assign rd_fire    = rd_valid_i && rd_ready_o;

  // Two loops, not one: the read side depends on the caller's inputs and is re-evaluated
  // whenever they change, the adders only when a result row arrives.
  always_comb begin
    for (int j = 0; j < N; j++) begin
      wr_row[j] = wr_acc_i ? fp32_add(mem_q[wr_idx][j], wr_data_i[j]) : wr_data_i[j];
    end
  end

  always_comb begin
    for (int j = 0; j < N; j++) begin
      rd_row[j] = rd_ok ? mem_q[rd_idx][j] : 32'h0;
    end
  end

  for (genvar j = 0; j < N; j++) begin : gen_col
    always_ff @(posedge clk_i) begin
      if (wr_en) mem_q[wr_idx][j] <= wr_row[j];
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      err_q    <= 1'b0;
      writes_q <= '0;
    end else begin
      err_q    <= err_q || (wr_valid_i && !wr_ok) || (rd_fire && !rd_ok);
      writes_q <= writes_q + 64'(wr_en);
    end
  end
  assign err_addr_o   = err_q;
  assign cnt_writes_o = writes_q;

  // The caller holds the read address, not the row read: a write may change the row while the
  // read waits. So the protocol check is on the address, not on the FIFO's input.
  tp_assert_stable #(.Width(16), .Name("tp_mxu_acc reads")) u_check_rd (
    .clk_i,
    .rst_ni,
    .valid_i (rd_valid_i),
    .ready_i (rd_ready_o),
    .data_i  (rd_addr_i)
  );

  tp_fifo #(.Width(32 * N), .Depth(2), .CheckInput(1'b0)) u_rsp_fifo (
    .clk_i,
    .rst_ni,
    .valid_i (rd_valid_i),
    .ready_o (rd_ready_o),
    .data_i  (rd_row),
    .valid_o (rsp_valid_o),
    .ready_i (rsp_ready_i),
    .data_o  (rsp_data_o)
  );
endmodule
