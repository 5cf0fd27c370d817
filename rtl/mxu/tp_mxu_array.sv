// Weight-stationary N x N systolic array: bf16 activations x bf16 weights, fp32 partial sums.
//
// Dataflow (docs/mxu.md): activation element i of a row enters array row i, skewed by i cycles,
// and moves one column right per cycle; partial sums move one row down per cycle, so column j
// leaves the bottom with sum_i a[i] * W[i][j], added in the fixed order i = 0 .. N-1 starting
// from +0. Each activation carries the weight-buffer select of its tile, so a tile switch sweeps
// through the array as a diagonal wave and costs no bubble. The bottom edge is deskewed into
// whole rows that leave through a FIFO with the tag the row came in with.
//
// The array is written as arrays of registers updated by loops (d/q style), not as N^2 PE
// instances: Verilator then emits C++ loops whose size does not grow with N^2, which keeps the
// 128x128 preset buildable and fast (docs/mxu.md, "Simulation speed").
module tp_mxu_array
  import tp_fp_pkg::*;
#(
  parameter int unsigned N    = 8,
  parameter int unsigned TagW = 8
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  // Weight rows into the shadow buffer, rows 0 .. N-1 of a tile in order; with w_t_i (the same
  // for every row of a tile) row r is column r of the tile: the tile loads transposed.
  input  logic                   w_valid_i,
  output logic                   w_ready_o,
  input  logic [N-1:0][15:0]     w_data_i,
  input  logic                   w_t_i,
  // Activation rows. a_first_i switches to the shadow tile (which must be fully loaded).
  input  logic                   a_valid_i,
  output logic                   a_ready_o,
  input  logic [N-1:0][15:0]     a_data_i,
  input  logic                   a_first_i,
  input  logic [TagW-1:0]        a_tag_i,
  // Result rows, one per activation row, in order.
  output logic                   r_valid_o,
  input  logic                   r_ready_i,
  output logic [N-1:0][31:0]     r_data_o,
  output logic [TagW-1:0]        r_tag_o,
  // Status and performance counters.
  output logic                   idle_o,         // no accepted row is still in flight
  output logic [15:0]            cfg_n_o,        // N, for software to check its preset
  output logic                   err_no_tile_o,  // sticky: a row arrived before any tile
  output logic [63:0]            cnt_rows_o,     // activation rows entered
  output logic [63:0]            cnt_macs_o,     // multiply-accumulates done (N*N per row)
  output logic [63:0]            cnt_busy_o,     // cycles with a row inside the array
  output logic [63:0]            cnt_stall_out_o,  // cycles frozen by result back-pressure
  output logic [63:0]            cnt_stall_wgt_o,  // cycles a row waited for its weight tile
  output logic [63:0]            cnt_wrows_o     // weight rows loaded
);
  // History depths: the input skew reads rows up to N cycles back, the deskew keeps a result
  // row for up to N cycles, and a row's tag travels 2N+2 cycles from entry to exit.
  localparam int unsigned HD = 1 << $clog2(N);
  localparam int unsigned HW = $clog2(HD);
  localparam int unsigned DD = 2 * HD;  // deskew depth: writes never hit the slot being read
  localparam int unsigned DW = $clog2(DD);
  localparam int unsigned MD = 1 << $clog2(2 * N + 3);
  localparam int unsigned MW = $clog2(MD);
  localparam int unsigned RW = (N > 1) ? $clog2(N) : 1;
  localparam int unsigned LAT = 2 * N + 2;  // cycles from entry to the deskewed output row
  localparam int unsigned INW = 1 + TagW + 16 * N;
  localparam int unsigned OUTW = TagW + 32 * N;

  if (N < 2 || N > 256) begin : gen_bad_n
    $error("tp_mxu_array: N = %0d is out of range [2, 256]", N);
  end

  // ---------------------------------------------------------------------------------------------
  // Input FIFO (registers the inputs; a_ready_o comes from a flop)
  // ---------------------------------------------------------------------------------------------
  logic                  in_valid, in_pop, in_first;
  logic [TagW-1:0]       in_tag;
  logic [N-1:0][15:0]    in_data;
  logic [INW-1:0]        in_payload;

  tp_fifo #(.Width(INW), .Depth(2)) u_in_fifo (
    .clk_i,
    .rst_ni,
    .valid_i (a_valid_i),
    .ready_o (a_ready_o),
    .data_i  ({a_first_i, a_tag_i, a_data_i}),
    .valid_o (in_valid),
    .ready_i (in_pop),
    .data_o  (in_payload)
  );
  assign {in_first, in_tag, in_data} = in_payload;

  // ---------------------------------------------------------------------------------------------
  // Control: advance, tile switching, weight loading
  // ---------------------------------------------------------------------------------------------
  logic            adv;            // the whole array moves one step this cycle
  logic            take;           // a valid row enters the array this cycle
  logic            blocked_wgt, no_tile, sw;
  logic [MW-1:0]   cyc_q, cyc_d;   // advance counter, indexes the histories
  logic            act_q, act_d;   // weight buffer of the current tile
  logic            tile_q, tile_d; // a tile has been switched in
  logic            full_q, full_d; // the shadow buffer holds a complete tile
  logic [RW-1:0]   wrow_q, wrow_d;
  logic [RW:0]     drain_q, drain_d;
  logic            w_we;
  logic            err_q, err_d;
  logic            out_valid, out_ready;
  logic [MW-1:0]   out_slot;
  logic [$clog2(LAT+3)-1:0] fly_q, fly_d;  // valid rows between entry and the output FIFO

  assign out_slot    = cyc_q - MW'(LAT);
  assign adv         = !(out_valid && !out_ready);
  assign blocked_wgt = in_valid && in_first && !full_q;
  assign no_tile     = in_valid && !in_first && !tile_q;
  assign in_pop      = adv && in_valid && !blocked_wgt;
  assign take        = in_pop && !no_tile;
  assign sw          = take && in_first;
  assign w_ready_o   = adv && !full_q && (drain_q == '0);
  assign w_we        = w_valid_i && w_ready_o;

  always_comb begin
    cyc_d   = adv ? cyc_q + MW'(1) : cyc_q;
    act_d   = sw ? !act_q : act_q;
    tile_d  = tile_q || sw;
    full_d  = full_q;
    wrow_d  = wrow_q;
    drain_d = drain_q;
    if (adv && (drain_q != '0)) drain_d = drain_q - 1'b1;
    if (sw) begin
      full_d  = 1'b0;
      drain_d = (RW + 1)'(N - 1);  // the old tile's last row must clear the array first
    end
    if (w_we) begin
      if (wrow_q == RW'(N - 1)) begin
        wrow_d = '0;
        full_d = 1'b1;
      end else begin
        wrow_d = wrow_q + 1'b1;
      end
    end
    err_d = err_q || (in_pop && no_tile);
    fly_d = fly_q + ($bits(fly_q))'(take) - ($bits(fly_q))'(adv && out_valid);
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      cyc_q   <= '0;
      act_q   <= 1'b1;  // the first tile loads into buffer 0
      tile_q  <= 1'b0;
      full_q  <= 1'b0;
      wrow_q  <= '0;
      drain_q <= '0;
      err_q   <= 1'b0;
      fly_q   <= '0;
    end else begin
      cyc_q   <= cyc_d;
      act_q   <= act_d;
      tile_q  <= tile_d;
      full_q  <= full_d;
      wrow_q  <= wrow_d;
      drain_q <= drain_d;
      err_q   <= err_d;
      fly_q   <= fly_d;
    end
  end

  // ---------------------------------------------------------------------------------------------
  // Storage: weight buffers, input history (for the skew), row metadata
  // ---------------------------------------------------------------------------------------------
  logic [15:0]     wbuf_q  [2][N][N];
  logic [15:0]     ihist_q [HD][N];
  logic [HD-1:0]   shist_q;             // weight buffer select of each row
  logic [MD-1:0]   vhist_q;             // row valid
  logic [TagW-1:0] thist_q [MD];        // row tag

  // Per-column write ports (a generate loop, not a procedural one: Verilator does not support
  // delayed assignments to arrays inside loops it keeps as loops).
  for (genvar j = 0; j < N; j++) begin : gen_col
    always_ff @(posedge clk_i) begin
      if (w_we && !w_t_i) wbuf_q[!act_q][wrow_q][j] <= w_data_i[j];
      if (w_we && w_t_i) wbuf_q[!act_q][j][wrow_q] <= w_data_i[j];
      if (adv) ihist_q[cyc_q[HW-1:0]][j] <= in_data[j];
    end
  end

  always_ff @(posedge clk_i) begin
    if (adv) begin
      shist_q[cyc_q[HW-1:0]] <= in_first ? !act_q : act_q;
      thist_q[cyc_q] <= in_tag;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) vhist_q <= '0;
    else if (adv) vhist_q[cyc_q] <= take;
  end

  // ---------------------------------------------------------------------------------------------
  // The array and its deskew buffer
  // ---------------------------------------------------------------------------------------------
  // The one exception to the d/q style (docs/mxu.md, "Simulation speed"): the N x N state is
  // updated in place by blocking assignments, visited in reverse dependency order (rows bottom
  // first, a row's shift rightmost first) so that every read sees the value from before the
  // clock edge, exactly as separate flops would. Verilator keeps these as C++ loops; a d/q copy
  // of N^2 registers would be expanded into N^2 statements. The state is read only here, and obuf_q only by the output
  // logic below at slots this process does not write in the same cycle, so there is no race.
  logic [15:0] a_q [N][N];   // activation held by each PE
  logic        s_q [N][N];   // its weight buffer select
  logic [31:0] p_q [N][N];   // partial sum leaving each PE
  logic [31:0] obuf_q [N][DD];  // deskew: column j keeps its results until the row is whole

  // One clock edge of the array, as a task so that its loop variables are C++ locals in the
  // Verilated model (an always_ff block's are members of the model, which keeps the compiler from
  // vectorising the loops). Row by row, bottom first: every PE of the row takes the branch-
  // free common case (bf16_mac_fast), a loop the compiler runs in SIMD lanes; then the PEs whose
  // operands are not all normal are redone on the general path; then the row's activations move
  // one PE to the right. Row i reads only row i - 1's partial sums, which are still the old ones.
  // Synthesis (and the lowered model's test) takes one bf16_mac per PE instead, the same
  // function as one block of logic, not two (TP_MXU_ONE_MAC; yosys defines SYNTHESIS).
`ifdef SYNTHESIS
`define TP_MXU_ONE_MAC
`endif
  task automatic array_step;
    for (int j = 0; j < N; j++) begin
      obuf_q[j][DW'(cyc_q - MW'(N + 2 + j))] = p_q[N-1][j];
    end
    for (int i = N - 1; i >= 0; i--) begin
`ifdef TP_MXU_ONE_MAC
      for (int j = 0; j < N; j++) begin
        p_q[i][j] = bf16_mac((i == 0) ? 32'h0 : p_q[(i == 0) ? 0 : i - 1][j], a_q[i][j],
                             s_q[i][j] ? wbuf_q[1][i][j] : wbuf_q[0][i][j]);
      end
`else
      for (int j = 0; j < N; j++) begin
        p_q[i][j] = bf16_mac_fast((i == 0) ? 32'h0 : p_q[(i == 0) ? 0 : i - 1][j], a_q[i][j],
                                  s_q[i][j] ? wbuf_q[1][i][j] : wbuf_q[0][i][j]);
      end
      for (int j = 0; j < N; j++) begin
        if (!bf16_mac_is_fast((i == 0) ? 32'h0 : p_q[(i == 0) ? 0 : i - 1][j], a_q[i][j],
                              s_q[i][j] ? wbuf_q[1][i][j] : wbuf_q[0][i][j]))
          p_q[i][j] = bf16_mac((i == 0) ? 32'h0 : p_q[(i == 0) ? 0 : i - 1][j], a_q[i][j],
                               s_q[i][j] ? wbuf_q[1][i][j] : wbuf_q[0][i][j]);
      end
`endif
      for (int j = N - 1; j > 0; j--) begin
        a_q[i][j] = a_q[i][j-1];
        s_q[i][j] = s_q[i][j-1];
      end
      a_q[i][0] = ihist_q[HW'(cyc_q - MW'(1 + i))][i];
      s_q[i][0] = shist_q[HW'(cyc_q - MW'(1 + i))];
    end
  endtask

  always_ff @(posedge clk_i) begin : array_core
    if (adv) array_step();
  end

  // ---------------------------------------------------------------------------------------------
  // Output
  // ---------------------------------------------------------------------------------------------
  logic [N-1:0][31:0] out_data;
  always_comb begin
    for (int j = 0; j < N; j++) out_data[j] = obuf_q[j][out_slot[DW-1:0]];
  end
  assign out_valid = vhist_q[out_slot];

  logic [OUTW-1:0] r_payload;
  // The array pushes only when this FIFO has room, so its input never waits: no input check.
  tp_fifo #(.Width(OUTW), .Depth(2), .CheckInput(1'b0)) u_out_fifo (
    .clk_i,
    .rst_ni,
    .valid_i (adv && out_valid),
    .ready_o (out_ready),
    .data_i  ({thist_q[out_slot], out_data}),
    .valid_o (r_valid_o),
    .ready_i (r_ready_i),
    .data_o  (r_payload)
  );
  assign {r_tag_o, r_data_o} = r_payload;

  // ---------------------------------------------------------------------------------------------
  // Counters and status
  // ---------------------------------------------------------------------------------------------
  logic [63:0] rows_q, macs_q, busy_q, stall_out_q, stall_wgt_q, wrows_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rows_q      <= '0;
      macs_q      <= '0;
      busy_q      <= '0;
      stall_out_q <= '0;
      stall_wgt_q <= '0;
      wrows_q     <= '0;
    end else begin
      rows_q      <= rows_q + 64'(take);
      macs_q      <= macs_q + (take ? 64'(N * N) : 64'h0);
      busy_q      <= busy_q + 64'(fly_q != '0);
      stall_out_q <= stall_out_q + 64'(!adv);
      stall_wgt_q <= stall_wgt_q + 64'(adv && blocked_wgt);
      wrows_q     <= wrows_q + 64'(w_we);
    end
  end
  assign cnt_rows_o      = rows_q;
  assign cnt_macs_o      = macs_q;
  assign cnt_busy_o      = busy_q;
  assign cnt_stall_out_o = stall_out_q;
  assign cnt_stall_wgt_o = stall_wgt_q;
  assign cnt_wrows_o     = wrows_q;
  assign err_no_tile_o   = err_q;
  assign cfg_n_o         = 16'(N);
  assign idle_o          = !in_valid && (fly_q == '0) && !r_valid_o;

  tp_assert_stable #(.Width(16 * N), .Name("tp_mxu_array weights")) u_check_w (
    .clk_i,
    .rst_ni,
    .valid_i (w_valid_i),
    .ready_i (w_ready_o),
    .data_i  (w_data_i)
  );
  tp_assert_stable #(.Width(OUTW), .Name("tp_mxu_array results")) u_check_r (
    .clk_i,
    .rst_ni,
    .valid_i (r_valid_o),
    .ready_i (r_ready_i),
    .data_i  (r_payload)
  );

`ifndef SYNTHESIS
  always_ff @(posedge clk_i) begin
    if (rst_ni) begin
      a_fly: assert (fly_q <= ($bits(fly_q))'(LAT))
        else $error("tp_mxu_array: more rows in flight than the pipeline holds");
    end
  end
`endif
endmodule
