// Link-layer receiver of one torus port: checks each flit's CRC and sequence number, delivers
// the next expected flit to the input buffers and drops everything else (go-back-N: after an
// error the sender resends from the first flit not delivered). It reports back, every cycle,
// the next expected sequence number, its CRC error count and the credits freed per VC.
module tp_ici_link_rx
  import tp_ici_pkg::*;
#(
  parameter int unsigned FW   = 32,
  parameter int unsigned V    = 2,
  localparam int unsigned LW  = FW + SEQW + CRCW,
  localparam int unsigned RVW = SEQW + ERRW + V * CNTW + CRCW
) (
  input  logic           clk_i,
  input  logic           rst_ni,
  input  logic           rx_valid_i,
  input  logic [LW-1:0]  rx_data_i,
  output logic           out_valid_o,  // deliver out_flit_o to the input buffers this cycle
  output logic [FW-1:0]  out_flit_o,
  input  logic [V-1:0]   pop_i,        // a flit left input buffer v (a credit to return)
  output logic [RVW-1:0] rv_data_o,
  output logic [31:0]    cnt_crc_err_o,
  output logic [31:0]    cnt_dropped_o  // good flits dropped because an earlier one was lost
);
  logic [SEQW-1:0] exp_q, exp_d;
  logic [ERRW-1:0] err_q, err_d;
  logic [CNTW-1:0] freed_q [V], freed_d [V];
  logic [31:0]     crc_err_q, crc_err_d, dropped_q, dropped_d;
  logic [CRCW-1:0] crc;
  logic            crc_ok;
  logic [RVW-CRCW-1:0] body_d, body_q;
  logic [CRCW-1:0] body_crc;

  // The reverse word of the reset state (all counters zero), with its CRC, so that the sender
  // sees a valid word from the first cycle after reset.
  function automatic logic [CRCW-1:0] zero_body_crc();
    logic [CRCW-1:0] c;
    c = 16'hffff;
    for (int i = 0; i < RVW - CRCW; i++) c = crc16_bit(c, 1'b0);
    return c;
  endfunction
  localparam logic [CRCW-1:0] RESET_CRC = zero_body_crc();

  always_comb begin
    crc = 16'hffff;
    if (rx_valid_i) begin
      for (int i = SEQW + FW - 1; i >= 0; i--) crc = crc16_bit(crc, rx_data_i[i]);
    end
    crc_ok      = rx_valid_i && (crc == rx_data_i[LW-1 -: CRCW]);
    out_valid_o = crc_ok && (rx_data_i[FW +: SEQW] == exp_q);
    out_flit_o  = rx_data_i[FW-1:0];
    exp_d       = exp_q + SEQW'(out_valid_o);
    err_d       = err_q + ERRW'(rx_valid_i && !crc_ok);
    crc_err_d   = crc_err_q + 32'(rx_valid_i && !crc_ok);
    dropped_d   = dropped_q + 32'(crc_ok && !out_valid_o);
    for (int v = 0; v < V; v++) freed_d[v] = freed_q[v] + CNTW'(pop_i[v]);
    body_d = '0;
    body_d[SEQW-1:0] = exp_d;
    body_d[SEQW +: ERRW] = err_d;
    for (int v = 0; v < V; v++) body_d[SEQW + ERRW + v * CNTW +: CNTW] = freed_d[v];
  end

  // The reverse word only changes when the state does; its CRC is computed then.
  always_comb begin
    body_crc = 16'hffff;
    if (body_d != body_q) begin
      for (int i = RVW - CRCW - 1; i >= 0; i--) body_crc = crc16_bit(body_crc, body_d[i]);
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      exp_q     <= '0;
      err_q     <= '0;
      crc_err_q <= '0;
      dropped_q <= '0;
      body_q    <= '0;
      rv_data_o <= {RESET_CRC, {(RVW - CRCW){1'b0}}};
      for (int v = 0; v < V; v++) freed_q[v] <= '0;
    end else begin
      exp_q     <= exp_d;
      err_q     <= err_d;
      crc_err_q <= crc_err_d;
      dropped_q <= dropped_d;
      for (int v = 0; v < V; v++) freed_q[v] <= freed_d[v];
      if (body_d != body_q) begin
        body_q    <= body_d;
        rv_data_o <= {body_crc, body_d};
      end
    end
  end

  assign cnt_crc_err_o = crc_err_q;
  assign cnt_dropped_o = dropped_q;
endmodule
