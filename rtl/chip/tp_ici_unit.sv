// The ICI unit (docs/pod.md): the fifth decoupled queue's engine, which sends VMEM rows to
// another chip's VMEM over the router, and the network interface that writes arriving rows into
// this chip's VMEM and signals their semaphore.
//
// Send (ici.send, one instruction at a time): the destination comes from dx, dy (relative to
// this chip, wrapping round the slice, or slice coordinates with abs); the rows stream out of
// VMEM and go out in packets of up to PktRows rows: a head flit {last, rsem, raddr} then NF body
// flits per row (NF = ceil(W / FlitW), the row's bits LSB first). Every packet of a chip uses
// one lane, (x + y) mod L of the chip's coordinates (L = V / 2 lanes per dateline class): the
// router keeps the packets of one source, destination and lane in order, so those of one sender
// to one destination arrive in order, and neighbouring senders' flows sit in different lanes
// (docs/ici.md, lanes by source: what keeps a loaded torus from collapsing). The instruction
// completes (its signal semaphore) when the router has taken its last flit.
// Errors, at execution: ici_config when the ICI registers are inconsistent (nothing is sent);
// ici_slice when abs coordinates lie outside the slice: a one-flit probe goes to the router,
// which refuses it (and counts the refusal), and the unit stops with the error.
//
// Receive: flits come off the router's ejection port tagged with their output VC (an output VC is
// held from head to tail, so the flits of packets on different VCs may interleave but each VC's
// packets arrive whole, one after another); each VC keeps its own reassembly state and rows,
// complete rows queue for a VMEM write port, and the row written last of a packet marked last
// signals rsem.
module tp_ici_unit
  import tp_isa_pkg::*;
  import tp_ici_pkg::*;
#(
  parameter int unsigned W       = 256,  // VMEM row bits
  parameter int unsigned V       = 2,    // router VCs
  parameter int unsigned FlitW   = 32,   // flit data bits
  parameter int unsigned PktRows = tp_hw_pkg::IciPktRows,  // rows per packet at most
  localparam int unsigned VW     = (V > 1) ? $clog2(V) : 1,
  localparam int unsigned FW     = 2 + VW + 4 * CW + HOPW + FlitW
) (
  input  logic          clk_i,
  input  logic          rst_ni,
  // the ICI queue
  input  logic          start_i,
  input  instr_t        instr_i,
  input  logic [31:0]   pc_i,
  output logic          idle_o,
  output logic          cmpl_o,
  output logic [3:0]    cmpl_sig_o,
  output logic          moving_o,
  output logic          err_o,
  output logic [7:0]    err_code_o,
  output logic [31:0]   err_pc_o,
  // ICI registers
  input  logic          cfg_ok_i,
  input  logic [CW-1:0] my_x_i,
  input  logic [CW-1:0] my_y_i,
  input  logic [CW-1:0] slice_x0_i,
  input  logic [CW-1:0] slice_y0_i,
  input  logic [CW:0]   slice_w_i,
  input  logic [CW:0]   slice_h_i,
  // VMEM read (rows to send)
  output logic          rd_req_o,
  output logic [19:0]   rd_addr_o,
  input  logic          rd_gnt_i,
  input  logic          rd_rvalid_i,
  input  logic [W-1:0]  rd_rdata_i,
  // VMEM write (rows received)
  output logic          wr_req_o,
  output logic [19:0]   wr_addr_o,
  output logic [W-1:0]  wr_data_o,
  input  logic          wr_gnt_i,
  output logic [3:0]    rsig_o,  // a semaphore to signal this cycle (0: none)
  output logic          rx_end_o,  // trace probe: the last row of a transfer is written this cycle
  output logic [2*CW-1:0] rx_src_o,  // ... sent by the chip {y, x}
  // the router's local port
  output logic          inj_valid_o,
  input  logic          inj_ready_i,
  output logic [FW-1:0] inj_flit_o,
  input  logic          ej_valid_i,
  output logic          ej_ready_o,
  input  logic [FW-1:0] ej_flit_i,
  // status and counters
  output logic          rx_busy_o,  // a packet is being received or a row waits for VMEM
  output logic [63:0]   cnt_bytes_sent_o,
  output logic [63:0]   cnt_bytes_recv_o
);
  localparam int unsigned NF  = (W + FlitW - 1) / FlitW;  // body flits per row
  localparam int unsigned NFW = $clog2(NF + 1);
  localparam int unsigned PRW = $clog2(PktRows + 1);
  localparam int unsigned RW  = NF * FlitW;  // a row padded to whole flits
  localparam logic [63:0] RowBytes = 64'(W) / 64'd8;
  localparam int unsigned L   = V / 2;  // lanes per dateline class

  if (FlitW < tp_hw_pkg::IciHeadW) begin : gen_bad_flit
    $error("tp_ici_unit: FlitW = %0d cannot hold a head {last, rsem, raddr} (%0d bits)", FlitW, tp_hw_pkg::IciHeadW);
  end
  // The head data layout (sw/isa/hw.json "head_data"): raddr, rsem, last from bit 0 up.
  if (tp_hw_pkg::IciHeadRaddrLsb != 0 || tp_hw_pkg::IciHeadRaddrW != 20 || tp_hw_pkg::IciHeadRsemLsb != 20 ||
      tp_hw_pkg::IciHeadRsemW != 4 || tp_hw_pkg::IciHeadLastLsb != 24) begin : gen_bad_head
    $error("tp_ici_unit: the head data layout of hw.json is not the one this unit packs");
  end

  // ---- destination ----------------------------------------------------------------------------
  // (a + d) mod m for a in [0, m), d in [-32, 31], m in [1, 32]: u = a + d + 64 is positive and
  // (a + d) mod m = (u mod m - 64 mod m) mod m.
  function automatic logic [CW-1:0] wrap(input logic [CW-1:0] a, input logic [5:0] d, input logic [CW:0] m);
    logic [7:0] u, mm, r, c;
    mm = (m == 0) ? 8'd1 : 8'(m);
    u  = 8'(a) + {{2{d[5]}}, d} + 8'd64;
    r  = u % mm;
    c  = 8'd64 % mm;
    return CW'((r >= c) ? r - c : r + mm - c);
  endfunction

  logic [5:0]    i_dx, i_dy;
  logic          i_abs, outside;
  logic [CW-1:0] dst_x, dst_y;
  assign i_dx  = ici_dx(instr_i);
  assign i_dy  = ici_dy(instr_i);
  assign i_abs = ici_abs(instr_i);
  always_comb begin
    outside = 1'b0;
    if (i_abs) begin
      outside = i_dx[5] || i_dy[5] || ({1'b0, i_dx[4:0]} >= slice_w_i) || ({1'b0, i_dy[4:0]} >= slice_h_i);
      dst_x   = slice_x0_i + i_dx[4:0];
      dst_y   = slice_y0_i + i_dy[4:0];
    end else begin
      dst_x = slice_x0_i + wrap(my_x_i - slice_x0_i, i_dx, slice_w_i);
      dst_y = slice_y0_i + wrap(my_y_i - slice_y0_i, i_dy, slice_h_i);
    end
  end

  // The ici_slice probe goes to a coordinate the router is sure to refuse: just past the slice's
  // edge in x (x0 + w, or x0 - 1 when the slice reaches x = 31), else in y; a slice of the whole
  // 32 x 32 range has no such coordinate, and then no probe goes out (the error alone).
  logic          probe_ok, px_ok, py_ok;
  logic [CW-1:0] probe_x, probe_y;
  logic [CW+1:0] x_end, y_end;
  always_comb begin
    x_end   = (CW+2)'(slice_x0_i) + (CW+2)'(slice_w_i);
    y_end   = (CW+2)'(slice_y0_i) + (CW+2)'(slice_h_i);
    px_ok   = (x_end < (CW+2)'(32)) || (slice_x0_i != '0);
    py_ok   = (y_end < (CW+2)'(32)) || (slice_y0_i != '0);
    probe_x = my_x_i;
    probe_y = my_y_i;
    if (px_ok) probe_x = (x_end < (CW+2)'(32)) ? CW'(x_end) : slice_x0_i - 1'b1;
    else if (py_ok) probe_y = (y_end < (CW+2)'(32)) ? CW'(y_end) : slice_y0_i - 1'b1;
    probe_ok = px_ok || py_ok;
  end

  // ---- send -----------------------------------------------------------------------------------
  logic            busy_q, probe_q;
  logic [CW-1:0]   dx_q, dy_q;
  logic [19:0]     raddr_q;      // destination row of the next row to send
  logic [15:0]     left_q;       // rows not yet taken from the stream
  logic [3:0]      rsem_q, sig_q;
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
    .start_i    (start_i && cfg_ok_i && !outside),
    .addr_i     (20'(ici_vaddr(instr_i))),
    .count_i    (32'(ici_rows(instr_i))),
    .step_i     (20'd1),
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

  // This chip's lane (fixed, so one sender's packets stay in order).
  logic [VW-1:0] lane;
  assign lane = VW'((32'(my_x_i) + 32'(my_y_i)) % L);

  always_comb begin
    inj_valid_o = probe_q || have_q;
    // {data, hops, src_y, src_x, dst_y, dst_x, vc, tail, head}, head at bit 0 (tp_ici_pkg)
    inj_flit_o  = {(probe_q || hdr_q) ? head_data : body, HOPW'(0), my_y_i, my_x_i, dy_q, dx_q, lane,
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
      sig_q      <= '0;
      have_q     <= 1'b0;
      fi_q       <= '0;
      hdr_q      <= 1'b0;
      pkt_left_q <= '0;
      sent_q     <= '0;
    end else begin
      if (start_i) begin
        busy_q  <= cfg_ok_i && (!outside || probe_ok);
        probe_q <= cfg_ok_i && outside && probe_ok;
        dx_q    <= outside ? probe_x : dst_x;
        dy_q    <= outside ? probe_y : dst_y;
        raddr_q <= 20'(ici_raddr(instr_i));
        left_q  <= (cfg_ok_i && !outside) ? ici_rows(instr_i) : '0;
        rsem_q  <= ici_rsem(instr_i);
        sig_q   <= f_signal(instr_i);
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

  assign idle_o     = !busy_q && s_idle;
  assign cmpl_o     = busy_q && !probe_q && fire && xfer_end;
  assign cmpl_sig_o = sig_q;
  assign moving_o   = fire;
  assign err_o      = start_i && (!cfg_ok_i || outside);
  assign err_code_o = !cfg_ok_i ? ErrIciConfig : ErrIciSlice;
  assign err_pc_o   = pc_i;
  assign cnt_bytes_sent_o = sent_q;

  // ---- receive --------------------------------------------------------------------------------
  typedef struct packed {
    logic [FlitW-1:0] data;
    logic [HOPW-1:0]  hops;
    logic [CW-1:0]    src_y;
    logic [CW-1:0]    src_x;
    logic [CW-1:0]    dst_y;
    logic [CW-1:0]    dst_x;
    logic [VW-1:0]    vc;
    logic             tail;
    logic             head;
  } flit_t;
  flit_t ej;
  assign ej = flit_t'(ej_flit_i);

  logic [RW-1:0]       rrow_q  [V];
  logic [NFW-1:0]      rfi_q   [V];
  logic [19:0]         raddr_r [V];
  logic [3:0]          rsem_r  [V];
  logic                rlast_r [V];
  logic                inpkt_q [V];
  logic [2*CW-1:0]     rsrc_r  [V];

  // Complete rows wait here for the VMEM write port: {end, src, sig, addr, row} (end: the
  // transfer's last row; end and src only feed the trace probe).
  localparam int unsigned WQW = 1 + 2 * CW + 4 + 20 + W;
  logic           wq_push, wq_ready, wq_valid;
  logic [WQW-1:0] wq_in, wq_out;
  logic           ej_fire, row_done;
  logic [63:0]    recv_q;
  assign ej_ready_o = wq_ready;
  assign ej_fire    = ej_valid_i && ej_ready_o;
  assign row_done   = ej_fire && !ej.head && (32'(rfi_q[ej.vc]) == NF - 1);
  assign wq_push    = row_done;

  logic [RW-1:0] full;  // the VC's row with this flit in place (padding past W unused)
  always_comb begin
    full = rrow_q[ej.vc];
    full[32'(rfi_q[ej.vc]) * FlitW +: FlitW] = ej.data;
    wq_in = {ej.tail && rlast_r[ej.vc], rsrc_r[ej.vc], (ej.tail && rlast_r[ej.vc]) ? rsem_r[ej.vc] : 4'd0,
             raddr_r[ej.vc], full[W-1:0]};
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int v = 0; v < V; v++) begin
        rfi_q[v]   <= '0;
        raddr_r[v] <= '0;
        rsem_r[v]  <= '0;
        rlast_r[v] <= 1'b0;
        inpkt_q[v] <= 1'b0;
        rsrc_r[v]  <= '0;
      end
      recv_q <= '0;
    end else begin
      if (ej_fire) begin
        if (ej.head) begin
          raddr_r[ej.vc] <= ej.data[tp_hw_pkg::IciHeadRaddrLsb +: 20];
          rsem_r[ej.vc]  <= ej.data[tp_hw_pkg::IciHeadRsemLsb +: 4];
          rlast_r[ej.vc] <= ej.data[tp_hw_pkg::IciHeadLastLsb];
          rfi_q[ej.vc]   <= '0;
          inpkt_q[ej.vc] <= !ej.tail;
          rsrc_r[ej.vc]  <= {ej.src_y, ej.src_x};
        end else if (32'(rfi_q[ej.vc]) == NF - 1) begin
          rfi_q[ej.vc]   <= '0;
          raddr_r[ej.vc] <= raddr_r[ej.vc] + 20'd1;
          if (ej.tail) inpkt_q[ej.vc] <= 1'b0;
        end else begin
          rfi_q[ej.vc] <= rfi_q[ej.vc] + 1'b1;
        end
      end
      if (wr_req_o && wr_gnt_i) recv_q <= recv_q + RowBytes;
    end
  end
  always_ff @(posedge clk_i) begin
    if (ej_fire && !ej.head) rrow_q[ej.vc][32'(rfi_q[ej.vc]) * FlitW +: FlitW] <= ej.data;
  end

  tp_fifo #(.Width(WQW), .Depth(2)) u_wq (
    .clk_i,
    .rst_ni,
    .valid_i (wq_push),
    .ready_o (wq_ready),
    .data_i  (wq_in),
    .valid_o (wq_valid),
    .ready_i (wr_gnt_i),
    .data_o  (wq_out)
  );
  assign wr_req_o  = wq_valid;
  assign wr_addr_o = wq_out[W +: 20];
  assign wr_data_o = wq_out[W-1:0];
  assign rsig_o    = (wq_valid && wr_gnt_i) ? wq_out[W+20 +: 4] : 4'd0;
  assign rx_end_o  = wq_valid && wr_gnt_i && wq_out[WQW-1];
  assign rx_src_o  = wq_out[W+24 +: 2*CW];

  always_comb begin
    rx_busy_o = wq_valid;
    for (int v = 0; v < V; v++) rx_busy_o = rx_busy_o || inpkt_q[v];
  end
  assign cnt_bytes_recv_o = recv_q;

  // ---- protocol checks: the injection and ejection channels (valid/ready), the VMEM write
  //      request (held until granted) -------------------------------------------------------
  tp_assert_stable #(.Width(FW), .Name("tp_ici_unit injection")) u_check_inj (
    .clk_i,
    .rst_ni,
    .valid_i (inj_valid_o),
    .ready_i (inj_ready_i),
    .data_i  (inj_flit_o)
  );
  tp_assert_stable #(.Width(FW), .Name("tp_ici_unit ejection (the router's side)")) u_check_ej (
    .clk_i,
    .rst_ni,
    .valid_i (ej_valid_i),
    .ready_i (ej_ready_o),
    .data_i  (ej_flit_i)
  );
  tp_assert_stable #(.Width(20 + W), .Name("tp_ici_unit VMEM writes")) u_check_wr (
    .clk_i,
    .rst_ni,
    .valid_i (wr_req_o),
    .ready_i (wr_gnt_i),
    .data_i  ({wr_addr_o, wr_data_o})
  );

  /* verilator lint_off UNUSEDSIGNAL */
  logic unused_ok;
  assign unused_ok = ^{ej.hops, ej.dst_x, ej.dst_y, s_req_done, ej.data, full};
  /* verilator lint_on UNUSEDSIGNAL */
endmodule
