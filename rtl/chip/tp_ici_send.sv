// One send engine of the ICI unit (tp_ici_unit, docs/pod.md): it streams an ici.send's rows out
// of VMEM and packs them into packets of up to PktRows rows for one router injection port: a head
// flit {last, rsem, raddr}, then NF body flits per row (NF = ceil(W / FlitW), the row's bits LSB
// first), on the chip's lane. Or, for an ici_slice error, one probe flit that the router refuses.
// The transfer completes (cmpl_o, for one cycle) when the router takes its last flit.
module tp_ici_send
  import tp_ici_pkg::*;
#(
  parameter int unsigned W       = 256,  // VMEM row bits
  parameter int unsigned VW      = 1,    // VC field bits
  parameter int unsigned FlitW   = 32,   // flit data bits
  parameter int unsigned PktRows = tp_hw_pkg::IciPktRows,  // rows per packet at most
  localparam int unsigned FW     = 2 + VW + 4 * CW + HOPW + FlitW
) (
  input  logic          clk_i,
  input  logic          rst_ni,
  // A transfer (only while idle_o): rows rows from VMEM row vaddr to row raddr of chip (dx, dy),
  // or (probe) one refused flit to (dx, dy) and no rows.
  input  logic          start_i,
  input  logic          probe_i,
  input  logic [19:0]   vaddr_i,
  input  logic [19:0]   raddr_i,
  input  logic [15:0]   rows_i,
  input  logic [tp_isa_pkg::SemW-1:0] rsem_i,
  input  logic [CW-1:0] dx_i,
  input  logic [CW-1:0] dy_i,
  input  logic [CW-1:0] my_x_i,
  input  logic [CW-1:0] my_y_i,
  input  logic [VW-1:0] lane_i,
  output logic          idle_o,   // nothing in progress: a transfer may start
  output logic          cmpl_o,   // the transfer's last flit goes now (not for a probe)
  output logic          fire_o,   // a flit goes now
  output logic [63:0]   cnt_bytes_sent_o,
  // VMEM read (a client of the unit's read port)
  output logic          rd_req_o,
  output logic [19:0]   rd_addr_o,
  input  logic          rd_gnt_i,
  input  logic          rd_rvalid_i,
  input  logic [W-1:0]  rd_rdata_i,
  // the router injection port
  output logic          inj_valid_o,
  input  logic          inj_ready_i,
  output logic [FW-1:0] inj_flit_o
);
  localparam int unsigned NF  = (W + FlitW - 1) / FlitW;  // body flits per row
  localparam int unsigned NFW = $clog2(NF + 1);
  localparam int unsigned PRW = $clog2(PktRows + 1);
  localparam int unsigned RW  = NF * FlitW;  // a row padded to whole flits
  localparam logic [63:0] RowBytes = 64'(W) / 64'd8;

  logic            busy_q, probe_q;
  logic [CW-1:0]   dx_q, dy_q;
  logic [19:0]     raddr_q;      // destination row of the next row to send
  logic [15:0]     left_q;       // rows not yet taken from the stream
  logic [tp_isa_pkg::SemW-1:0] rsem_q;
  logic            s_valid, s_ready, s_idle, s_req_done;
  logic [W-1:0]    s_data;
  logic [RW-1:0]   row_q;
  logic            have_q;       // row_q holds a row being sent
  logic [NFW-1:0]  fi_q;         // next body flit of row_q
  logic            hdr_q;        // the next flit is a head
  logic [PRW-1:0]  pkt_left_q;   // rows of the current packet after row_q
  logic [63:0]     sent_q;
  logic            fire, row_last_flit, take;

  tp_rd_stream #(.W(W)) u_rows (
    .clk_i,
    .rst_ni,
    .start_i    (start_i && !probe_i),
    .addr_i     (vaddr_i),
    .count_i    (32'(rows_i)),
    .step_i     (20'd1),
    .pair_off_i ('0),
    .idle_o     (s_idle),
    .req_done_o (s_req_done),
    .req_o      (rd_req_o),
    .addr_o     (rd_addr_o),
    .gnt_i      (rd_gnt_i),
    .rvalid_i   (rd_rvalid_i),
    .rdata_i    (rd_rdata_i),
    .valid_o    (s_valid),
    .ready_i    (s_ready),
    .data_o     (s_data)
  );

  // Flits of the current row: a head (when a packet starts), then NF body flits.
  logic [FlitW-1:0] body, head_data;
  logic             pkt_end, xfer_end;
  assign body          = row_q[32'(fi_q) * FlitW +: FlitW];
  assign row_last_flit = !hdr_q && (32'(fi_q) == NF - 1);
  assign pkt_end       = row_last_flit && (pkt_left_q == '0);
  assign xfer_end      = pkt_end && left_q == 0;  // the transfer's last flit
  assign head_data     = FlitW'({left_q == 16'(pkt_left_q), rsem_q, raddr_q});  // last: no rows after this packet
  assign fire          = inj_valid_o && inj_ready_i;
  // A new row is taken when none is held or the held row's last flit goes now.
  assign take          = s_valid && (!have_q || (fire && row_last_flit));
  assign s_ready       = take;

  always_comb begin
    inj_valid_o = probe_q || have_q;
    // {data, hops, src_y, src_x, dst_y, dst_x, vc, tail, head}, head at bit 0 (tp_ici_pkg)
    inj_flit_o  = {(probe_q || hdr_q) ? head_data : body, HOPW'(0), my_y_i, my_x_i, dy_q, dx_q, lane_i,
                   probe_q || (!hdr_q && pkt_end), probe_q || hdr_q};
  end

  // left_q counts the rows not yet taken from the stream; a packet holds min(PktRows, left_q)
  // rows from the row that starts it. A taken row starts a packet when the next flit is a head
  // (hdr_q) and no row is held, or when the held row ends the current packet now.
  logic        new_pkt;
  assign new_pkt    = (!have_q && hdr_q) || (fire && pkt_end);

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      busy_q     <= 1'b0;
      probe_q    <= 1'b0;
      dx_q       <= '0;
      dy_q       <= '0;
      raddr_q    <= '0;
      left_q     <= '0;
      rsem_q     <= '0;
      have_q     <= 1'b0;
      fi_q       <= '0;
      hdr_q      <= 1'b0;
      pkt_left_q <= '0;
      sent_q     <= '0;
    end else begin
      if (start_i) begin
        busy_q  <= 1'b1;
        probe_q <= probe_i;
        dx_q    <= dx_i;
        dy_q    <= dy_i;
        raddr_q <= raddr_i;
        left_q  <= probe_i ? '0 : rows_i;
        rsem_q  <= rsem_i;
        hdr_q   <= 1'b1;
      end
      if (probe_q && fire) begin
        probe_q <= 1'b0;
        busy_q  <= 1'b0;
      end
      if (fire && !probe_q) begin
        if (hdr_q) begin
          hdr_q <= 1'b0;
          fi_q  <= '0;
        end else if (row_last_flit) begin
          fi_q    <= '0;
          raddr_q <= raddr_q + 20'd1;
          if (pkt_end) hdr_q <= 1'b1;
          else pkt_left_q <= pkt_left_q - 1'b1;
          sent_q <= sent_q + RowBytes;
        end else begin
          fi_q <= fi_q + 1'b1;
        end
      end
      if (take) begin
        row_q  <= RW'(s_data);
        have_q <= 1'b1;
        left_q <= left_q - 16'd1;
        // A packet starts with this row: it holds min(PktRows, rows from here) rows.
        if (new_pkt) pkt_left_q <= (left_q > 16'(PktRows)) ? PRW'(PktRows - 1) : PRW'(left_q - 16'd1);
      end else if (fire && row_last_flit) begin
        have_q <= 1'b0;
      end
      if (busy_q && !probe_q && fire && xfer_end) busy_q <= 1'b0;
    end
  end

  assign idle_o           = !busy_q && s_idle;
  assign cmpl_o           = busy_q && !probe_q && fire && xfer_end;
  assign fire_o           = fire;
  assign cnt_bytes_sent_o = sent_q;

  tp_assert_stable #(.Width(FW), .Name("tp_ici_send injection")) u_check_inj (
    .clk_i,
    .rst_ni,
    .valid_i (inj_valid_o),
    .ready_i (inj_ready_i),
    .data_i  (inj_flit_o)
  );

  /* verilator lint_off UNUSEDSIGNAL */
  logic unused_ok;
  assign unused_ok = s_req_done;
  /* verilator lint_on UNUSEDSIGNAL */
endmodule
