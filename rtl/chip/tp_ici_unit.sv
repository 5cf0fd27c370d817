// The ICI unit (docs/pod.md): the fifth decoupled queue's engines, which send VMEM rows to
// another chip's VMEM over the router, and the network interface that writes arriving rows into
// this chip's VMEM and signals their semaphore.
//
// Send (ici.send): the destination comes from dx, dy (relative to this chip, wrapping round the
// slice, or slice coordinates with abs). Engines send engines (tp_ici_send) each feed one router
// injection port: an ici.send goes to the engine of its first hop, (port of the route's first
// link) mod Engines, a send to this chip itself to engine 0, so that every transfer to one
// destination uses one engine and one port, and arrives in issue order. The queue's head starts
// when its engine is idle; transfers on different engines run at once (one engine per link: a
// chip drives all four links), and complete in any order, one completion (its signal semaphore)
// reported a cycle. The engines share the unit's VMEM read port, round robin. Every packet of a
// chip uses one lane, (x + y) mod L of the chip's coordinates (L = V / 2 lanes per dateline
// class): the router keeps the packets of one source, destination and lane in order, and
// neighbouring senders' flows sit in different lanes (docs/ici.md, lanes by source: what keeps a
// loaded torus from collapsing). A transfer completes when the router has taken its last flit.
// Errors, at execution: ici_config when the ICI registers are inconsistent (nothing is sent);
// ici_slice when abs coordinates lie outside the slice: a one-flit probe goes to the router,
// which refuses it (and counts the refusal), and the unit stops with the error.
//
// Receive: the router ejects on Engines ports (one per arriving link when there are four). Flits
// come off each tagged with their output VC (an output VC is held from head to tail, so the
// flits of packets on different VCs may interleave but each VC's packets arrive whole, one after
// another); each (port, VC) keeps its own reassembly state and row, complete rows queue per port
// for the VMEM write port (round robin over the ports, a request held until granted), and the row
// written last of a packet marked last signals rsem.
module tp_ici_unit
  import tp_isa_pkg::*;
  import tp_ici_pkg::*;
#(
  parameter int unsigned W       = 256,  // VMEM row bits
  parameter int unsigned V       = 2,    // router VCs
  parameter int unsigned FlitW   = 32,   // flit data bits
  parameter int unsigned PktRows = tp_hw_pkg::IciPktRows,  // rows per packet at most
  parameter int unsigned Engines = 1,    // send engines = router local ports (1..4)
  localparam int unsigned VW     = (V > 1) ? $clog2(V) : 1,
  localparam int unsigned FW     = 2 + VW + 4 * CW + HOPW + FlitW
) (
  input  logic          clk_i,
  input  logic          rst_ni,
  // the ICI queue
  input  logic          start_i,
  input  instr_t        instr_i,
  input  logic [31:0]   pc_i,
  output logic          ready_o,  // the head (instr_i) may start: its engine is free
  output logic          idle_o,
  output logic          cmpl_o,
  output logic [SemW-1:0] cmpl_sig_o,
  output logic          moving_o,
  output logic          err_o,
  output logic [7:0]    err_code_o,
  output logic [31:0]   err_pc_o,
  // ICI registers
  input  logic          cfg_ok_i,
  input  logic [CW:0]   kx_i,
  input  logic [CW:0]   ky_i,
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
  output logic [SemW-1:0] rsig_o,  // a semaphore to signal this cycle (0: none)
  output logic          rx_end_o,  // trace probe: the last row of a transfer is written this cycle
  output logic [2*CW-1:0] rx_src_o,  // ... sent by the chip {y, x}
  // the router's local ports
  output logic          inj_valid_o [Engines],
  input  logic          inj_ready_i [Engines],
  output logic [FW-1:0] inj_flit_o  [Engines],
  input  logic          ej_valid_i  [Engines],
  output logic          ej_ready_o  [Engines],
  input  logic [FW-1:0] ej_flit_i   [Engines],
  // status and counters
  output logic          tx_busy_o,  // a flit waits at an injection port
  output logic          rx_busy_o,  // a packet is being received or a row waits for VMEM
  output logic [63:0]   cnt_bytes_sent_o,
  output logic [63:0]   cnt_bytes_recv_o
);
  localparam int unsigned NF  = (W + FlitW - 1) / FlitW;  // body flits per row
  localparam int unsigned NFW = $clog2(NF + 1);
  localparam int unsigned RW  = NF * FlitW;  // a row padded to whole flits
  localparam logic [63:0] RowBytes = 64'(W) / 64'd8;
  localparam int unsigned L   = V / 2;  // lanes per dateline class

  if (FlitW < tp_hw_pkg::IciHeadW) begin : gen_bad_flit
    $error("tp_ici_unit: FlitW = %0d cannot hold a head {last, rsem, raddr} (%0d bits)", FlitW, tp_hw_pkg::IciHeadW);
  end
  // The head data layout (sw/isa/hw.json "head_data"): raddr, rsem, last from bit 0 up.
  if (tp_hw_pkg::IciHeadRaddrLsb != 0 || tp_hw_pkg::IciHeadRaddrW != 20 || tp_hw_pkg::IciHeadRsemLsb != 20 ||
      tp_hw_pkg::IciHeadRsemW != SemW || tp_hw_pkg::IciHeadLastLsb != 20 + SemW) begin : gen_bad_head
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
  localparam int unsigned EW = (Engines > 1) ? $clog2(Engines) : 1;

  // The engine of the head: its first hop's port mod Engines (dimension order, the shorter way
  // round, as the router routes), engine 0 for this chip itself or the probe.
  /* verilator lint_off UNUSEDSIGNAL */
  logic [1:0]    step;  // only its direction
  /* verilator lint_on UNUSEDSIGNAL */
  logic [2:0]    hop;
  logic [EW-1:0] eng;
  always_comb begin
    step = 2'b00;
    hop  = 3'(P_L);
    if (dst_x != my_x_i) begin
      step = ring_step(my_x_i, dst_x, kx_i, slice_w_i == kx_i);
      hop  = step[1] ? 3'(P_E) : 3'(P_W);
    end else if (dst_y != my_y_i) begin
      step = ring_step(my_y_i, dst_y, ky_i, slice_h_i == ky_i);
      hop  = step[1] ? 3'(P_N) : 3'(P_S);
    end
    eng = (hop == 3'(P_L) || outside) ? '0 : EW'(32'(hop) % Engines);
  end

  // This chip's lane (fixed, so one sender's packets stay in order).
  logic [VW-1:0] lane;
  assign lane = VW'((32'(my_x_i) + 32'(my_y_i)) % L);

  logic [Engines-1:0] e_start, e_idle, e_cmpl, e_fire, e_rd_req, e_rd_gnt, e_rd_rvalid, e_report;
  logic [19:0]        e_rd_addr [Engines];
  logic [63:0]        e_sent    [Engines];
  logic               go;
  assign go = start_i && cfg_ok_i && (!outside || probe_ok);

  for (genvar e = 0; e < Engines; e++) begin : gen_send
    assign e_start[e] = go && (eng == EW'(e));
    tp_ici_send #(.W(W), .VW(VW), .FlitW(FlitW), .PktRows(PktRows)) u_send (
      .clk_i,
      .rst_ni,
      .start_i          (e_start[e]),
      .probe_i          (outside),
      .vaddr_i          (20'(ici_vaddr(instr_i))),
      .raddr_i          (20'(ici_raddr(instr_i))),
      .rows_i           (ici_rows(instr_i)),
      .rsem_i           (ici_rsem(instr_i)),
      .dx_i             (outside ? probe_x : dst_x),
      .dy_i             (outside ? probe_y : dst_y),
      .my_x_i,
      .my_y_i,
      .lane_i           (lane),
      .idle_o           (e_idle[e]),
      .cmpl_o           (e_cmpl[e]),
      .fire_o           (e_fire[e]),
      .cnt_bytes_sent_o (e_sent[e]),
      .rd_req_o         (e_rd_req[e]),
      .rd_addr_o        (e_rd_addr[e]),
      .rd_gnt_i         (e_rd_gnt[e]),
      .rd_rvalid_i      (e_rd_rvalid[e]),
      .rd_rdata_i       (rd_rdata_i),
      .inj_valid_o      (inj_valid_o[e]),
      .inj_ready_i      (inj_ready_i[e]),
      .inj_flit_o       (inj_flit_o[e])
    );
  end

  // The VMEM read port: round robin over the engines that request; the row comes back a cycle
  // after the grant (tp_vmem) to the engine granted then.
  logic          rd_any;
  logic [EW-1:0] rd_who, rd_who_q;
  tp_rr_arb #(.N(Engines)) u_rd_arb (
    .clk_i,
    .rst_ni,
    .req_i       (e_rd_req),
    .advance_i   (rd_gnt_i),
    .gnt_valid_o (rd_any),
    .gnt_idx_o   (rd_who)
  );
  assign rd_req_o  = rd_any;
  assign rd_addr_o = e_rd_addr[rd_who];
  always_comb begin
    e_rd_gnt    = '0;
    e_rd_rvalid = '0;
    e_rd_gnt[rd_who]      = rd_any && rd_gnt_i;
    e_rd_rvalid[rd_who_q] = rd_rvalid_i;
  end

  // Completions: one a cycle to the core, round robin; an engine whose completion waits holds it
  // (pend_q, with its signal) and takes no new transfer until it is reported.
  logic [Engines-1:0] pend_q, pend_d, cand;
  logic [SemW-1:0]    sig_q [Engines];
  logic               rep_any;
  logic [EW-1:0]      rep_who;
  assign cand = e_cmpl | pend_q;
  tp_rr_arb #(.N(Engines)) u_cmpl_arb (
    .clk_i,
    .rst_ni,
    .req_i       (cand),
    .advance_i   (1'b1),
    .gnt_valid_o (rep_any),
    .gnt_idx_o   (rep_who)
  );
  always_comb begin
    e_report = '0;
    e_report[rep_who] = rep_any;
    pend_d = cand & ~e_report;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rd_who_q <= '0;
      pend_q   <= '0;
      for (int e = 0; e < Engines; e++) sig_q[e] <= '0;
    end else begin
      rd_who_q <= rd_who;
      pend_q   <= pend_d;
      for (int e = 0; e < Engines; e++) if (e_start[e]) sig_q[e] <= f_signal(instr_i);
    end
  end

  logic [63:0] sent_sum;
  always_comb begin
    sent_sum  = '0;
    moving_o  = 1'b0;
    tx_busy_o = 1'b0;
    for (int e = 0; e < Engines; e++) begin
      sent_sum  = sent_sum + e_sent[e];
      moving_o  = moving_o || e_fire[e];
      tx_busy_o = tx_busy_o || inj_valid_o[e];
    end
  end

  assign ready_o    = e_idle[eng] && !pend_q[eng];
  assign idle_o     = (&e_idle) && (pend_q == '0);
  assign cmpl_o     = rep_any;
  assign cmpl_sig_o = sig_q[rep_who];
  assign err_o      = start_i && (!cfg_ok_i || outside);
  assign err_code_o = !cfg_ok_i ? ErrIciConfig : ErrIciSlice;
  assign err_pc_o   = pc_i;
  assign cnt_bytes_sent_o = sent_sum;

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

  // Complete rows wait per port for the VMEM write port: {end, src, sig, addr, row} (end: the
  // transfer's last row; end and src only feed the trace probe).
  localparam int unsigned WQW = 1 + 2 * CW + SemW + 20 + W;
  logic [Engines-1:0] wq_valid, wq_pop, rx_act;
  logic [WQW-1:0]     wq_out [Engines];

  for (genvar e = 0; e < Engines; e++) begin : gen_recv
    flit_t ej;
    assign ej = flit_t'(ej_flit_i[e]);

    logic [RW-1:0]       rrow_q  [V];
    logic [NFW-1:0]      rfi_q   [V];
    logic [19:0]         raddr_r [V];
    logic [SemW-1:0]     rsem_r  [V];
    logic                rlast_r [V];
    logic                inpkt_q [V];
    logic [2*CW-1:0]     rsrc_r  [V];

    logic           wq_ready;
    logic [WQW-1:0] wq_in;
    logic           ej_fire, row_done;
    assign ej_ready_o[e] = wq_ready;
    assign ej_fire       = ej_valid_i[e] && ej_ready_o[e];
    assign row_done      = ej_fire && !ej.head && (32'(rfi_q[ej.vc]) == NF - 1);

    logic [RW-1:0] full;  // the VC's row with this flit in place (padding past W unused)
    always_comb begin
      full = rrow_q[ej.vc];
      full[32'(rfi_q[ej.vc]) * FlitW +: FlitW] = ej.data;
      wq_in = {ej.tail && rlast_r[ej.vc], rsrc_r[ej.vc], (ej.tail && rlast_r[ej.vc]) ? rsem_r[ej.vc] : SemW'(0),
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
      end else if (ej_fire) begin
        if (ej.head) begin
          raddr_r[ej.vc] <= ej.data[tp_hw_pkg::IciHeadRaddrLsb +: 20];
          rsem_r[ej.vc]  <= ej.data[tp_hw_pkg::IciHeadRsemLsb +: SemW];
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
    end
    always_ff @(posedge clk_i) begin
      if (ej_fire && !ej.head) rrow_q[ej.vc][32'(rfi_q[ej.vc]) * FlitW +: FlitW] <= ej.data;
    end

    tp_fifo #(.Width(WQW), .Depth(2)) u_wq (
      .clk_i,
      .rst_ni,
      .valid_i (row_done),
      .ready_o (wq_ready),
      .data_i  (wq_in),
      .valid_o (wq_valid[e]),
      .ready_i (wq_pop[e]),
      .data_o  (wq_out[e])
    );

    always_comb begin
      rx_act[e] = 1'b0;
      for (int v = 0; v < V; v++) rx_act[e] = rx_act[e] || inpkt_q[v];
    end

    /* verilator lint_off UNUSEDSIGNAL */
    logic unused_rx;
    assign unused_rx = ^{ej.hops, ej.dst_x, ej.dst_y, ej.data, full};
    /* verilator lint_on UNUSEDSIGNAL */
  end

  // The VMEM write port: round robin over the ports with a row, the choice held while its request
  // waits for the grant (the request stays stable, as the check below requires).
  logic          wr_any, lock_q;
  logic [EW-1:0] wr_rr, wr_who, wr_who_q;
  tp_rr_arb #(.N(Engines)) u_wr_arb (
    .clk_i,
    .rst_ni,
    .req_i       (wq_valid),
    .advance_i   (wr_gnt_i),
    .gnt_valid_o (wr_any),
    .gnt_idx_o   (wr_rr)
  );
  assign wr_who = lock_q ? wr_who_q : wr_rr;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      lock_q   <= 1'b0;
      wr_who_q <= '0;
    end else begin
      lock_q   <= wr_req_o && !wr_gnt_i;
      wr_who_q <= wr_who;
    end
  end
  always_comb begin
    wq_pop = '0;
    wq_pop[wr_who] = wr_gnt_i;
  end

  logic [63:0] recv_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) recv_q <= '0;
    else if (wr_req_o && wr_gnt_i) recv_q <= recv_q + RowBytes;
  end

  assign wr_req_o  = wr_any || lock_q;
  assign wr_addr_o = wq_out[wr_who][W +: 20];
  assign wr_data_o = wq_out[wr_who][W-1:0];
  assign rsig_o    = (wr_req_o && wr_gnt_i) ? wq_out[wr_who][W+20 +: SemW] : '0;
  assign rx_end_o  = wr_req_o && wr_gnt_i && wq_out[wr_who][WQW-1];
  assign rx_src_o  = wq_out[wr_who][W+20+SemW +: 2*CW];
  assign rx_busy_o = (wq_valid != '0) || (rx_act != '0);
  assign cnt_bytes_recv_o = recv_q;

  // ---- protocol checks: the ejection channels (valid/ready; the injection channels are checked
  //      in tp_ici_send), the VMEM write request (held until granted) --------------------------
  for (genvar e = 0; e < Engines; e++) begin : gen_check_ej
    tp_assert_stable #(.Width(FW), .Name("tp_ici_unit ejection (the router's side)")) u_check_ej (
      .clk_i,
      .rst_ni,
      .valid_i (ej_valid_i[e]),
      .ready_i (ej_ready_o[e]),
      .data_i  (ej_flit_i[e])
    );
  end
  tp_assert_stable #(.Width(20 + W), .Name("tp_ici_unit VMEM writes")) u_check_wr (
    .clk_i,
    .rst_ni,
    .valid_i (wr_req_o),
    .ready_i (wr_gnt_i),
    .data_i  ({wr_addr_o, wr_data_o})
  );
`ifndef SYNTHESIS
  always_ff @(posedge clk_i) begin
    if (rst_ni && start_i && !ready_o) $error("tp_ici_unit: a transfer started while its engine was busy");
  end
`endif
endmodule
