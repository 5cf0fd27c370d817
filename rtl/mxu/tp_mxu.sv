// The matrix unit: systolic array + accumulator memory (docs/mxu.md).
//
// The caller loads weight tiles row by row (w_*), streams activation rows (a_*) each with the
// accumulator row its result goes to and whether it overwrites or accumulates, and reads
// accumulator rows back (rd_*/rsp_*). Reads are not ordered against rows still in the array:
// wait for idle_o before reading results.
module tp_mxu #(
  parameter int unsigned N       = 8,
  parameter int unsigned AccRows = 64
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  // Weight rows into the shadow buffer.
  input  logic               w_valid_i,
  output logic               w_ready_o,
  input  logic [N-1:0][15:0] w_data_i,
  input  logic               w_t_i,  // the tile's rows are its columns (a transposed load)
  // Activation rows.
  input  logic               a_valid_i,
  output logic               a_ready_o,
  input  logic [N-1:0][15:0] a_data_i,
  input  logic               a_first_i,       // first row of a new weight tile
  input  logic [15:0]        a_acc_addr_i,    // accumulator row for this row's result
  input  logic               a_accumulate_i,  // add to the row (1) or overwrite it (0)
  // Accumulator reads.
  input  logic               rd_valid_i,
  output logic               rd_ready_o,
  input  logic [15:0]        rd_addr_i,
  output logic               rsp_valid_o,
  input  logic               rsp_ready_i,
  output logic [N-1:0][31:0] rsp_data_o,
  // Status, configuration and counters.
  output logic               idle_o,  // no accepted row is still in flight (rows handed over
                                      // in this cycle are not counted yet)
  output logic               err_no_tile_o,
  output logic               err_addr_o,
  output logic [15:0]        cfg_n_o,
  output logic [31:0]        cfg_acc_rows_o,
  output logic [63:0]        cnt_rows_o,
  output logic [63:0]        cnt_macs_o,
  output logic [63:0]        cnt_busy_o,
  output logic [63:0]        cnt_stall_out_o,
  output logic [63:0]        cnt_stall_wgt_o,
  output logic [63:0]        cnt_wrows_o,
  output logic [63:0]        cnt_acc_writes_o
);
  logic               r_valid, r_ready, r_acc;
  logic [N-1:0][31:0] r_data;
  logic [15:0]        r_addr;
  logic               arr_idle;

  tp_mxu_array #(.N(N), .TagW(17)) u_array (
    .clk_i,
    .rst_ni,
    .w_valid_i,
    .w_ready_o,
    .w_data_i,
    .w_t_i,
    .a_valid_i,
    .a_ready_o,
    .a_data_i,
    .a_first_i,
    .a_tag_i         ({a_accumulate_i, a_acc_addr_i}),
    .r_valid_o       (r_valid),
    .r_ready_i       (r_ready),
    .r_data_o        (r_data),
    .r_tag_o         ({r_acc, r_addr}),
    .idle_o          (arr_idle),
    .cfg_n_o,
    .err_no_tile_o,
    .cnt_rows_o,
    .cnt_macs_o,
    .cnt_busy_o,
    .cnt_stall_out_o,
    .cnt_stall_wgt_o,
    .cnt_wrows_o
  );

  tp_mxu_acc #(.N(N), .AccRows(AccRows)) u_acc (
    .clk_i,
    .rst_ni,
    .wr_valid_i   (r_valid),
    .wr_ready_o   (r_ready),
    .wr_data_i    (r_data),
    .wr_addr_i    (r_addr),
    .wr_acc_i     (r_acc),
    .rd_valid_i,
    .rd_ready_o,
    .rd_addr_i,
    .rsp_valid_o,
    .rsp_ready_i,
    .rsp_data_o,
    .err_addr_o,
    .cnt_writes_o (cnt_acc_writes_o)
  );

  assign idle_o         = arr_idle;
  assign cfg_acc_rows_o = 32'(AccRows);
endmodule
