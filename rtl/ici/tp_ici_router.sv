// ICI router for a 2D torus (docs/ici.md): four link ports (N, S, E, W) and Locals local ports
// (injection and ejection; 1, or up to 4 so that a chip can drive all four links at once).
//
// - Input-buffered: V virtual channels of B flits per input port; wormhole, credit-based.
// - Routing: dimension order (X, then Y), each dimension the shorter way round the ring; a tie
//   goes positive to an even destination coordinate, negative to an odd one. Inside a slice that does not span the whole ring of a dimension,
//   the route never takes that dimension's wrap-around link.
// - Deadlock freedom on the rings: dateline VCs. VCs are split into two classes of L = V/2
//   lanes; a packet enters each dimension in class 0 and moves to class 1 when it crosses that
//   dimension's wrap-around link. A packet keeps its lane (injection VC) end to end, so packets
//   of one source, destination and lane stay in order. With ClassChoice, a packet that does not
//   cross a dimension's dateline enters it in the class of its entry coordinate's parity, or
//   in class 1 when it ends next to the dateline (entry_class).
// - Allocation, round-robin throughout: VC allocation per output VC (each input VC asks for
//   exactly one output VC: its lane in the class the dateline rule gives), then separable
//   input-first switch allocation. A head flit that wins its output VC may win the switch in
//   the same cycle, so every flit spends one cycle in the router plus the link latency. With
//   SaIters > 1, further iterations may send a VC's second flit (a one-flit packet for another
//   port) before its front, and the local port files packets by first output port.
// - Links: tp_ici_link_tx/rx add sequence numbers and CRC and retransmit (go-back-N).
// - Local ports: the network interface injects a packet on local port (first hop) mod Locals,
//   and a packet is ejected on local port (arrival port) mod Locals (a local input i: i), so
//   every flow enters and leaves by one port. With Locals = 1 this is the one local port.
// - Slices: the local port refuses a packet whose destination lies outside this chip's slice
//   (counted, pulsed on refused_o); nothing is injected across a slice boundary.
module tp_ici_router
  import tp_ici_pkg::*;
#(
  parameter int unsigned V     = 2,   // virtual channels per port (even, >= 2)
  parameter int unsigned B     = 8,   // flits per VC buffer
  parameter int unsigned FlitW = 64,  // data bits per flit
  parameter int unsigned R     = 16,  // link replay buffer depth
  parameter int unsigned SaIters = 1,  // switch allocation iterations (at least 1)
  parameter int unsigned ClassChoice = 0,  // 1: on a ring whose dateline it does not cross, a
                                           // packet takes the class of its entry coordinate's
                                           // parity (see the route)
  parameter int unsigned Locals = 1,  // local (injection and ejection) ports, 1..4
  parameter int unsigned TurnRoom = 1,  // a packet turning from the X ring into the Y ring takes
                                        // its output VC only with room for this many flits there
  localparam int unsigned NP   = 4 + Locals,  // router ports: the four links, then the local ports
  localparam int unsigned VW   = (V > 1) ? $clog2(V) : 1,
  localparam int unsigned FW   = 2 + VW + 4 * CW + HOPW + FlitW,
  localparam int unsigned LW   = FW + SEQW + CRCW,
  localparam int unsigned RVW  = SEQW + ERRW + V * CNTW + CRCW
) (
  input  logic           clk_i,
  input  logic           rst_ni,
  // Configuration (control registers): torus size, this chip, its slice [x0, x0+w) x [y0, y0+h).
  input  logic [CW:0]    kx_i,
  input  logic [CW:0]    ky_i,
  input  logic [CW-1:0]  my_x_i,
  input  logic [CW-1:0]  my_y_i,
  input  logic [CW-1:0]  slice_x0_i,
  input  logic [CW-1:0]  slice_y0_i,
  input  logic [CW:0]    slice_w_i,
  input  logic [CW:0]    slice_h_i,
  // Links, indexed P_N, P_S, P_E, P_W. tx/rx carry flits; rv_out_o is this router's reverse
  // word for the neighbour that sends to rx, rv_in_i the reverse word for what tx sends.
  output logic           tx_valid_o [4],
  output logic [LW-1:0]  tx_data_o  [4],
  input  logic           rx_valid_i [4],
  input  logic [LW-1:0]  rx_data_i  [4],
  output logic [RVW-1:0] rv_out_o   [4],
  input  logic [RVW-1:0] rv_in_i    [4],
  // Test hook (a control register): flip one bit of a word sent on link p with probability
  // fault_rate_i[p] / 65536; 0 turns it off.
  input  logic [15:0]    fault_rate_i [4],
  // Local ports: injection and ejection.
  input  logic           inj_valid_i [Locals],
  output logic           inj_ready_o [Locals],
  input  logic [FW-1:0]  inj_flit_i  [Locals],
  output logic           ej_valid_o  [Locals],
  input  logic           ej_ready_i  [Locals],
  output logic [FW-1:0]  ej_flit_o   [Locals],
  output logic           refused_o   [Locals],  // pulse: a packet aimed outside the slice was dropped
  output logic           busy_o,     // a flit is in an injection FIFO, an input VC buffer or an ejection FIFO
  // Status and counters.
  output logic           err_slice_o,  // sticky: a flit arrived whose destination is outside
  output logic           err_cfg_o,    // the configuration inputs are inconsistent (see below)
  output logic           err_inj_o,    // sticky: malformed injection (VC >= V/2, stray flits)
  output logic [31:0]    cnt_flits_o [NP],            // flits sent per output port
  output logic [31:0]    cnt_credit_stall_o [NP],     // cycles a flit waited for a credit
  output logic [31:0]    cnt_retx_o [4],              // flits retransmitted per link
  output logic [31:0]    cnt_crc_err_o [4],           // flits received with a bad CRC
  output logic [31:0]    cnt_dropped_o [4],           // good flits dropped after a lost one
  output logic [31:0]    cnt_rv_bad_o [4],            // reverse words with a bad CRC
  output logic [31:0]    cnt_faults_o [4],            // bits flipped by the fault hook
  output logic [31:0]    cnt_refused_o                // packets refused at injection
);
  localparam int unsigned L   = V / 2;  // lanes per class
  localparam int unsigned BW  = $clog2(B + 1);
  localparam int unsigned PW  = $clog2(B > 1 ? B : 2);
  localparam int unsigned NIV = NP * V;  // input VCs
  localparam int unsigned VIW = $clog2(NIV);

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

  if (B < 1 || B > 64) begin : gen_bad_b
    $error("tp_ici_router: B = %0d must be in [1, 64] (credit counters are %0d bits)", B, CNTW);
  end

  if (V < 2 || (V % 2) != 0) begin : gen_bad_v
    $error("tp_ici_router: V = %0d must be even and at least 2 (two dateline classes)", V);
  end

  if (TurnRoom < 1 || TurnRoom > B) begin : gen_bad_turn_room
    $error("tp_ici_router: TurnRoom = %0d must be in [1, B = %0d]", TurnRoom, B);
  end

  if (Locals < 1 || Locals > 4) begin : gen_bad_locals
    $error("tp_ici_router: Locals = %0d must be in [1, 4] (port numbers are 3 bits)", Locals);
  end

  // -----------------------------------------------------------------------------------------
  // Link receivers and the injection port feed the input buffers
  // -----------------------------------------------------------------------------------------
  logic          wr_valid [NP];
  flit_t         wr_flit  [NP];
  logic [V-1:0]  pop      [NP];  // input VC buffer pops this cycle
  logic [V-1:0]  pop2     [NP];  // ... of the second flit, not the front
  logic [VW-1:0] wr_vc    [NP];  // the input buffer a flit is written into

  for (genvar p = 0; p < 4; p++) begin : gen_rx
    logic [FW-1:0] flit;
    tp_ici_link_rx #(.FW(FW), .V(V)) u_rx (
      .clk_i,
      .rst_ni,
      .rx_valid_i    (rx_valid_i[p]),
      .rx_data_i     (rx_data_i[p]),
      .out_valid_o   (wr_valid[p]),
      .out_flit_o    (flit),
      .pop_i         (pop[p]),
      .rv_data_o     (rv_out_o[p]),
      .cnt_crc_err_o (cnt_crc_err_o[p]),
      .cnt_dropped_o (cnt_dropped_o[p])
    );
    assign wr_flit[p] = flit_t'(flit);
    assign wr_vc[p]   = wr_flit[p].vc;
  end

  function automatic logic in_slice(input logic [CW-1:0] x, input logic [CW-1:0] y,
                                    input logic [CW-1:0] x0, input logic [CW-1:0] y0,
                                    input logic [CW:0] w, input logic [CW:0] h);
    return ({1'b0, x} >= {1'b0, x0}) && ({1'b0, x} < {1'b0, x0} + w) &&
           ({1'b0, y} >= {1'b0, y0}) && ({1'b0, y} < {1'b0, y0} + h);
  endfunction

  // The configuration must describe a torus of 1..32 per side, a non-empty slice inside it
  // (slices do not wrap round the torus edge) and this chip inside the slice. Otherwise the
  // router raises err_cfg_o and injects nothing: routes would be meaningless.
  logic cfg_ok;
  assign cfg_ok = (kx_i >= 1) && (kx_i <= 32) && (ky_i >= 1) && (ky_i <= 32) && (slice_w_i >= 1) &&
                  (slice_h_i >= 1) && ({1'b0, slice_x0_i} + slice_w_i <= kx_i) &&
                  ({1'b0, slice_y0_i} + slice_h_i <= ky_i) &&
                  in_slice(my_x_i, my_y_i, slice_x0_i, slice_y0_i, slice_w_i, slice_h_i);
  assign err_cfg_o = !cfg_ok;

  // -----------------------------------------------------------------------------------------
  // Input VC buffers
  // -----------------------------------------------------------------------------------------
  flit_t         mem_q   [NP][V][B];
  logic [PW-1:0] rd_q    [NP][V];
  logic [PW-1:0] wr_q    [NP][V];
  logic [BW-1:0] count_q [NP][V];
  flit_t         front   [NP][V];
  logic          nonempty[NP][V];

  // -----------------------------------------------------------------------------------------
  // Injection, per local port: a small FIFO (so inj_ready_o comes from a flop), the slice check
  // and the packet framing. A head starts a packet on its VC (a lane), body and tail flits follow
  // on the same VC. A stray body or tail flit is dropped; a head that arrives inside a packet
  // still starts a new one. Both are flagged on err_inj_o, as is a head on a VC >= V/2.
  // -----------------------------------------------------------------------------------------
  logic [Locals-1:0] refused_now;  // a packet refused for its destination this cycle
  logic [Locals-1:0] inj_err;      // a malformed injection this cycle
  logic [Locals-1:0] inj_pending;  // a flit waits in the injection FIFO
  logic [31:0]       refused_q;

  for (genvar i = 0; i < Locals; i++) begin : gen_inj
    localparam int unsigned PI = P_L + i;  // this local port's input
    logic          inj_valid, inj_pop, dropping_q, dropping_d, outside, refuse, bad_vc;
    logic [FW-1:0] inj_raw;
    flit_t         inj_flit;
    logic          inpkt_q, inpkt_d, stray, head_err;
    logic [VW-1:0] pkt_vc_q, pkt_vc_d;
    logic [VW-1:0] pkt_buf_q, pkt_buf_d;  // the local input buffer the packet goes into
    logic [VW-1:0] inj_buf;
    /* verilator lint_off UNUSEDSIGNAL */
    logic [3+VW-1:0] inj_route;  // only its port is used
    /* verilator lint_on UNUSEDSIGNAL */
    logic          drop_body;  // inside a refused packet: drop until its tail

    tp_fifo #(.Width(FW), .Depth(2)) u_inj_fifo (
      .clk_i,
      .rst_ni,
      .valid_i (inj_valid_i[i]),
      .ready_o (inj_ready_o[i]),
      .data_i  (inj_flit_i[i]),
      .valid_o (inj_valid),
      .ready_i (inj_pop),
      .data_o  (inj_raw)
    );
    assign inj_flit = flit_t'(inj_raw);
    assign outside  = !in_slice(inj_flit.dst_x, inj_flit.dst_y, slice_x0_i, slice_y0_i, slice_w_i,
                                slice_h_i);
    assign bad_vc   = (32'(inj_flit.vc) >= L);

    always_comb begin
      // Refused (counted, reported): outside the slice. Dropped as errors: a bad VC or config.
      refuse    = inj_valid && inj_flit.head && (outside || !cfg_ok || bad_vc);
      drop_body = inj_valid && !inj_flit.head && dropping_q;
      stray     = inj_valid && !inj_flit.head && !dropping_q && (!inpkt_q || (inj_flit.vc != pkt_vc_q));
      head_err  = inj_valid && inj_flit.head && (inpkt_q || dropping_q);
      inj_pop      = 1'b0;
      wr_valid[PI] = 1'b0;
      wr_flit[PI]  = inj_flit;
      dropping_d   = dropping_q;
      inpkt_d      = inpkt_q;
      pkt_vc_d     = pkt_vc_q;
      pkt_buf_d    = pkt_buf_q;
      // The local port's buffers are split by the packet's first output port (port mod V), not
      // by lane: a packet waiting for one link never blocks one for another behind it. Packets
      // of one flow leave by the same port, so they stay in order.
      inj_route = route(PI, 32'(inj_flit.vc), inj_flit.dst_x, inj_flit.dst_y);
      // (With SaIters > 1; with one iteration a packet goes into the buffer of its lane.)
      if (!inj_flit.head) inj_buf = pkt_buf_q;
      else if (SaIters > 1) inj_buf = VW'(32'(inj_route[3+VW-1:VW]) % V);
      else inj_buf = inj_flit.vc;
      wr_vc[PI] = inj_buf;
      if (inj_valid && inj_flit.head) begin
        dropping_d = 1'b0;  // a head ends whatever came before
        inpkt_d    = 1'b0;
      end
      if (inj_valid) begin
        if (refuse || drop_body || stray) begin
          inj_pop = 1'b1;  // drop the flit
          if (refuse) dropping_d = !inj_flit.tail;
          else if (drop_body && inj_flit.tail) dropping_d = 1'b0;
        end else if (count_q[PI][inj_buf] < BW'(B)) begin
          inj_pop      = 1'b1;
          wr_valid[PI] = 1'b1;
          if (inj_flit.head) begin
            inpkt_d   = !inj_flit.tail;
            pkt_vc_d  = inj_flit.vc;
            pkt_buf_d = inj_buf;
          end else if (inj_flit.tail) begin
            inpkt_d = 1'b0;
          end
        end
      end
    end

    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) begin
        inpkt_q    <= 1'b0;
        pkt_vc_q   <= '0;
        pkt_buf_q  <= '0;
        dropping_q <= 1'b0;
      end else begin
        inpkt_q    <= inpkt_d;
        pkt_vc_q   <= pkt_vc_d;
        pkt_buf_q  <= pkt_buf_d;
        dropping_q <= dropping_d;
      end
    end

    assign inj_pending[i] = inj_valid;
    assign refused_now[i] = refuse && outside && cfg_ok && !bad_vc;
    assign refused_o[i]   = refused_now[i];
    assign inj_err[i]     = (refuse && bad_vc) || stray || head_err;
  end

  always_comb begin
    for (int p = 0; p < NP; p++) begin
      for (int v = 0; v < V; v++) begin
        front[p][v]    = mem_q[p][v][rd_q[p][v]];
        nonempty[p][v] = (count_q[p][v] != '0);
      end
    end
  end

  always_ff @(posedge clk_i) begin
    for (int p = 0; p < NP; p++) begin
      if (wr_valid[p]) mem_q[p][wr_vc[p]][wr_q[p][wr_vc[p]]] <= wr_flit[p];
      // The second flit left: the front moves into its slot, and the read pointer past it.
      for (int v = 0; v < V; v++) if (pop2[p][v]) mem_q[p][v][incr(rd_q[p][v])] <= front[p][v];
    end
  end

  function automatic logic [PW-1:0] incr(input logic [PW-1:0] x);
    return (x == PW'(B - 1)) ? '0 : x + 1'b1;
  endfunction

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int p = 0; p < NP; p++) begin
        for (int v = 0; v < V; v++) begin
          rd_q[p][v]    <= '0;
          wr_q[p][v]    <= '0;
          count_q[p][v] <= '0;
        end
      end
    end else begin
      for (int p = 0; p < NP; p++) begin
        for (int v = 0; v < V; v++) begin
          logic w;
          w = wr_valid[p] && (wr_vc[p] == VW'(v));
          if (w) wr_q[p][v] <= incr(wr_q[p][v]);
          if (pop[p][v]) rd_q[p][v] <= incr(rd_q[p][v]);
          count_q[p][v] <= count_q[p][v] + BW'(w) - BW'(pop[p][v]);
        end
      end
    end
  end

  // -----------------------------------------------------------------------------------------
  // Route computation for the head flit at the front of each input VC
  // -----------------------------------------------------------------------------------------
  logic [2:0]    rc_port [NP][V];
  logic [VW-1:0] rc_vc   [NP][V];

  // The class a packet enters a ring in (before the dateline rule of the route): 0, or with
  // ClassChoice, for a packet whose way along this ring does not cross the dateline, the parity
  // of the entry coordinate (a fixed split of such flows between the classes; it keeps them in
  // order), except that one ending next to the dateline takes class 1: on the link into that
  // node the packets that will cross are all in class 0, so it takes the other VCs.
  function automatic logic entry_class(input logic [CW-1:0] here, input logic [CW-1:0] dst,
                                       input logic [CW:0] k, input logic full_ring, input logic pos);
    logic crosses, last;
    crosses = full_ring && (pos ? (dst < here) : (dst > here));
    last    = full_ring && (pos ? ({1'b0, dst} == k - 1'b1) : (dst == '0));
    return (ClassChoice != 0) && !crosses && (here[0] || last);
  endfunction

  // The output port and VC of a head flit in input VC v of port p: {port, vc}.
  function automatic logic [3+VW-1:0] route(input int p, input int v, input logic [CW-1:0] dx,
                                            input logic [CW-1:0] dy);
    logic [1:0]    step;
    logic          cls;
    logic [VW-1:0] lane;
    logic [2:0]    port;
    lane = VW'(v % L);
    cls  = 1'b0;
    step = 2'b00;
    if (dx != my_x_i) begin
      step = ring_step(my_x_i, dx, kx_i, slice_w_i == kx_i);
      port = step[1] ? 3'(P_E) : 3'(P_W);
      // Same dimension as the way in: keep the class, unless crossing the dateline now.
      // Entering it: entry_class (0 without ClassChoice).
      if ((p == P_E) || (p == P_W)) cls = (v >= L);
      else cls = entry_class(my_x_i, dx, kx_i, slice_w_i == kx_i, step[1]);
    end else if (dy != my_y_i) begin
      step = ring_step(my_y_i, dy, ky_i, slice_h_i == ky_i);
      port = step[1] ? 3'(P_N) : 3'(P_S);
      if ((p == P_N) || (p == P_S)) cls = (v >= L);
      else cls = entry_class(my_y_i, dy, ky_i, slice_h_i == ky_i, step[1]);
    end else begin
      // Ejection on local port (arrival port) mod Locals, a local input's own: one port per
      // arriving link when there are four. In the class of the arrival dimension (1 from the Y
      // ring), so that an ejection port shared by several inputs has V output VCs for them, not
      // only the L lanes of class 0 (with lanes by source a node's four neighbours all send on one
      // lane). A flow always arrives by the same port, so it keeps one ejection port and VC.
      port = 3'(P_L + ((p < P_L) ? (p % Locals) : (p - P_L)));
      cls  = (p == P_N) || (p == P_S);
    end
    if (step[0]) cls = 1'b1;
    return {port, cls ? lane + VW'(L) : lane};
  endfunction

  // The second flit of each input VC, when it is a one-flit packet (Bypass): it may leave
  // before the front flit if it goes to another output port (so it belongs to another flow).
  flit_t         second [NP][V];
  logic [2:0]    rc2_port [NP][V];
  logic [VW-1:0] rc2_vc   [NP][V];
  always_comb begin
    for (int p = 0; p < NP; p++) begin
      for (int v = 0; v < V; v++) begin
        // At a local port the lane is in the flit (its buffers are not lanes with SaIters > 1).
        {rc_port[p][v], rc_vc[p][v]} = route(p, (p >= P_L) ? 32'(front[p][v].vc) : v,
                                             front[p][v].dst_x, front[p][v].dst_y);
        second[p][v] = mem_q[p][v][incr(rd_q[p][v])];
        {rc2_port[p][v], rc2_vc[p][v]} = route(p, (p >= P_L) ? 32'(second[p][v].vc) : v,
                                               second[p][v].dst_x, second[p][v].dst_y);
      end
    end
  end

  // -----------------------------------------------------------------------------------------
  // VC allocation: one round-robin arbiter per output VC
  // -----------------------------------------------------------------------------------------
  logic          act_q  [NP][V];  // input VC holds an output VC
  logic [2:0]    oport_q[NP][V];
  logic [VW-1:0] ovc_q  [NP][V];
  logic          busy_q [NP][V];  // output VC allocated
  logic [NIV-1:0] va_req [NP][V];
  // Bubble flow control on the turn into the Y ring (TurnRoom > 1): a packet that turns from X
  // into Y takes its output VC only when the VC's downstream buffer has room for TurnRoom flits;
  // a packet going straight on needs one. The Y rings keep a free slot for the packets already
  // on them, so a 2-VC torus does not clog past saturation (docs/ici.md, "Turns into Y").
  logic [V-1:0]   room [4];  // a link's downstream buffers have room for TurnRoom flits
  function automatic logic turns(input int p, input int o);
    return (p == P_E || p == P_W) && (o == P_N || o == P_S);
  endfunction
  logic          va_gv  [NP][V];
  logic [VIW-1:0] va_gi [NP][V];

  always_comb begin
    for (int o = 0; o < NP; o++) begin
      for (int ov = 0; ov < V; ov++) begin
        va_req[o][ov] = '0;
        for (int p = 0; p < NP; p++) begin
          for (int v = 0; v < V; v++) begin
            va_req[o][ov][p * V + v] = !busy_q[o][ov] && !act_q[p][v] && nonempty[p][v] &&
                                       front[p][v].head && (rc_port[p][v] == 3'(o)) &&
                                       (rc_vc[p][v] == VW'(ov)) && (!turns(p, o) || room[o % 4][ov]);
          end
        end
      end
    end
  end

  for (genvar o = 0; o < NP; o++) begin : gen_va_o
    for (genvar ov = 0; ov < V; ov++) begin : gen_va_v
      tp_rr_arb #(.N(NIV)) u_arb (
        .clk_i,
        .rst_ni,
        .req_i       (va_req[o][ov]),
        .advance_i   (1'b1),
        .gnt_valid_o (va_gv[o][ov]),
        .gnt_idx_o   (va_gi[o][ov])
      );
    end
  end

  // -----------------------------------------------------------------------------------------
  // Switch allocation: input-first separable, round-robin at both stages
  // -----------------------------------------------------------------------------------------
  // The output an input VC's front flit goes to: its allocated one, or, for a head winning VC
  // allocation this cycle, the one it is being granted (so it can traverse in the same cycle).
  logic          va_won  [NP][V];
  logic          go      [NP][V];
  logic [2:0]    eff_port[NP][V];
  logic [VW-1:0] eff_vc  [NP][V];
  always_comb begin
    for (int p = 0; p < NP; p++) begin
      for (int v = 0; v < V; v++) begin
        va_won[p][v] = va_gv[rc_port[p][v]][rc_vc[p][v]] &&
                       (va_gi[rc_port[p][v]][rc_vc[p][v]] == VIW'(p * V + v)) && !act_q[p][v];
        go[p][v]       = act_q[p][v] || va_won[p][v];
        eff_port[p][v] = act_q[p][v] ? oport_q[p][v] : rc_port[p][v];
        eff_vc[p][v]   = act_q[p][v] ? ovc_q[p][v] : rc_vc[p][v];
      end
    end
  end

  logic [V-1:0]      credit_ok [NP];
  logic              out_ready [NP];
  logic [V-1:0]      sa1_req   [NP];
  logic              sa1_gv    [NP];
  logic [VW-1:0]     sa1_gi    [NP];
  logic [NP-1:0] sa2_req   [NP];
  logic              sa2_gv    [NP];
  logic [2:0]        sa2_gi    [NP];
  logic              sa1_won   [NP];
  logic [NP-1:0] stall_credit;

  always_comb begin
    stall_credit = '0;
    for (int p = 0; p < NP; p++) begin
      for (int v = 0; v < V; v++) begin
        sa1_req[p][v] = go[p][v] && nonempty[p][v] && out_ready[eff_port[p][v]] &&
                        credit_ok[eff_port[p][v]][eff_vc[p][v]];
        if (go[p][v] && nonempty[p][v] && !credit_ok[eff_port[p][v]][eff_vc[p][v]])
          stall_credit[eff_port[p][v]] = 1'b1;
      end
    end
    for (int o = 0; o < NP; o++) begin
      for (int p = 0; p < NP; p++) begin
        sa2_req[o][p] = sa1_gv[p] && (eff_port[p][sa1_gi[p]] == 3'(o));
      end
    end
    for (int p = 0; p < NP; p++) begin
      sa1_won[p] = sa1_gv[p] && sa2_gv[eff_port[p][sa1_gi[p]]] &&
                   (sa2_gi[eff_port[p][sa1_gi[p]]] == 3'(p));
    end
  end

  for (genvar p = 0; p < NP; p++) begin : gen_sa
    tp_rr_arb #(.N(V)) u_sa1 (
      .clk_i,
      .rst_ni,
      .req_i       (sa1_req[p]),
      .advance_i   (sa1_won[p]),
      .gnt_valid_o (sa1_gv[p]),
      .gnt_idx_o   (sa1_gi[p])
    );
    tp_rr_arb #(.N(NP)) u_sa2 (
      .clk_i,
      .rst_ni,
      .req_i       (sa2_req[p]),
      .advance_i   (1'b1),
      .gnt_valid_o (sa2_gv[p]),
      .gnt_idx_o   (sa2_gi[p])
    );
  end

  // SaIters > 1: more iterations (as iSLIP's) match the inputs left unmatched to the outputs left
  // free, without moving the arbiters' pointers: each such input offers its next requesting VC
  // whose output is still free, after the one it offered first; each free output takes the first
  // such input after a start that rotates every cycle.
  logic [2:0]    rot_q;
  logic          m_in  [NP];  // input port matched: its VC
  logic [VW-1:0] m_v   [NP];
  logic          m_out [NP];  // output port matched: its input port
  logic [2:0]    m_p   [NP];
  logic          m_s   [NP];  // input port matched with its VC's second flit
  logic [V-1:0]  byp   [NP];  // the second flit of the VC may bypass the front
  always_comb begin
    for (int p = 0; p < NP; p++) begin
      for (int v = 0; v < V; v++) begin
        byp[p][v] = (SaIters > 1) && (count_q[p][v] >= BW'(2)) && second[p][v].head &&
                    second[p][v].tail && (rc2_port[p][v] != eff_port[p][v]) &&
                    !busy_q[rc2_port[p][v]][rc2_vc[p][v]] && !va_gv[rc2_port[p][v]][rc2_vc[p][v]] &&
                    out_ready[rc2_port[p][v]] && credit_ok[rc2_port[p][v]][rc2_vc[p][v]] &&
                    (!turns(p, int'(rc2_port[p][v])) || room[rc2_port[p][v] % 4][rc2_vc[p][v]]);
      end
    end
  end
  always_comb begin
    logic          off [NP];
    logic [VW-1:0] off_v [NP];
    logic          off_s [NP];
    logic [VW-1:0] c;
    logic [2:0]    q, qs;
    logic          hit;
    c   = '0;
    q   = '0;
    qs  = '0;
    hit = 1'b0;
    for (int p = 0; p < NP; p++) begin
      m_in[p] = sa1_won[p];
      m_v[p]  = sa1_gi[p];
      m_out[p] = sa2_gv[p];
      m_p[p]   = sa2_gi[p];
      m_s[p]   = 1'b0;
      off[p]   = 1'b0;
      off_v[p] = '0;
      off_s[p] = 1'b0;
    end
    for (int it = 1; it < SaIters; it++) begin
      for (int p = 0; p < NP; p++) begin
        off[p]   = 1'b0;
        off_v[p] = '0;
        off_s[p] = 1'b0;
        if (!m_in[p]) begin
          for (int k = V - 1; k >= 0; k--) begin
            c = VW'((32'(sa1_gi[p]) + k) % V);
            if (sa1_req[p][c] && !m_out[eff_port[p][c]]) begin
              off[p]   = 1'b1;
              off_v[p] = c;
              off_s[p] = 1'b0;
            end else if (byp[p][c] && !m_out[rc2_port[p][c]]) begin
              off[p]   = 1'b1;
              off_v[p] = c;
              off_s[p] = 1'b1;
            end
          end
        end
      end
      for (int o = 0; o < NP; o++) begin
        if (!m_out[o]) begin
          hit = 1'b0;
          qs  = '0;
          for (int k = NP - 1; k >= 0; k--) begin
            q = 3'((32'(rot_q) + k) % NP);
            if (off[q] &&
                ((off_s[q] ? rc2_port[q][off_v[q]] : eff_port[q][off_v[q]]) == 3'(o))) begin
              hit = 1'b1;
              qs  = q;
            end
          end
          if (hit) begin
            m_out[o] = 1'b1;
            m_p[o]   = qs;
            m_in[qs] = 1'b1;
            m_v[qs]  = off_v[qs];
            m_s[qs]  = off_s[qs];
          end
        end
      end
    end
  end
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) rot_q <= '0;
    else rot_q <= (rot_q == 3'(NP - 1)) ? '0 : rot_q + 1'b1;
  end

  // Switch traversal: the winning flit of each output port, with its new VC and hop count.
  logic          out_valid [NP];
  flit_t         out_flit  [NP];
  logic [2:0]    st_p      [NP];  // input port and VC feeding each output
  logic [VW-1:0] st_v      [NP];

  always_comb begin
    for (int p = 0; p < NP; p++) begin
      pop[p]  = '0;
      pop2[p] = '0;
    end
    for (int o = 0; o < NP; o++) begin
      out_valid[o] = 1'b0;
      out_flit[o]  = '0;
      st_p[o]      = m_p[o];
      st_v[o]      = m_v[m_p[o]];
      if (m_out[o] && m_s[st_p[o]]) begin
        out_valid[o]   = 1'b1;
        out_flit[o]    = second[st_p[o]][st_v[o]];
        out_flit[o].vc = rc2_vc[st_p[o]][st_v[o]];
        if (o < P_L) out_flit[o].hops = out_flit[o].hops + 1'b1;
        pop[st_p[o]][st_v[o]]  = 1'b1;
        pop2[st_p[o]][st_v[o]] = 1'b1;
      end else if (m_out[o]) begin
        out_valid[o]   = 1'b1;
        out_flit[o]    = front[st_p[o]][st_v[o]];
        out_flit[o].vc = eff_vc[st_p[o]][st_v[o]];
        if (out_flit[o].head && (o < P_L)) out_flit[o].hops = out_flit[o].hops + 1'b1;
        pop[st_p[o]][st_v[o]] = 1'b1;
      end
    end
  end

  // Input VC and output VC state.
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int p = 0; p < NP; p++) begin
        for (int v = 0; v < V; v++) begin
          act_q[p][v]   <= 1'b0;
          oport_q[p][v] <= '0;
          ovc_q[p][v]   <= '0;
          busy_q[p][v]  <= 1'b0;
        end
      end
    end else begin
      // Allocation (for input VCs that are idle) ...
      for (int o = 0; o < NP; o++) begin
        for (int ov = 0; ov < V; ov++) begin
          if (va_gv[o][ov]) begin
            act_q[3'(va_gi[o][ov] / VIW'(V))][VW'(va_gi[o][ov] % VIW'(V))]   <= 1'b1;
            oport_q[3'(va_gi[o][ov] / VIW'(V))][VW'(va_gi[o][ov] % VIW'(V))] <= 3'(o);
            ovc_q[3'(va_gi[o][ov] / VIW'(V))][VW'(va_gi[o][ov] % VIW'(V))]   <= VW'(ov);
            busy_q[o][ov] <= 1'b1;
          end
        end
      end
      // ... and release when a tail leaves, possibly in the cycle it was allocated (this
      // assignment comes last, so it wins over the allocation above).
      for (int p = 0; p < NP; p++) begin
        for (int v = 0; v < V; v++) begin
          if (pop[p][v] && !pop2[p][v] && front[p][v].tail) begin
            act_q[p][v] <= 1'b0;
            busy_q[eff_port[p][v]][eff_vc[p][v]] <= 1'b0;
          end
        end
      end
    end
  end

  // -----------------------------------------------------------------------------------------
  // Output ports: four link senders and the ejection FIFO
  // -----------------------------------------------------------------------------------------
  for (genvar o = 0; o < 4; o++) begin : gen_tx
    logic rdy;
    tp_ici_link_tx #(.FW(FW), .V(V), .B(B), .R(R), .Room(TurnRoom), .FaultSeed(16'hace1 + 16'(o) * 16'h1f3)) u_tx (
      .clk_i,
      .rst_ni,
      .in_valid_i   (out_valid[o]),
      .in_ready_o   (rdy),
      .in_flit_i    (out_flit[o]),
      .in_vc_i      (out_flit[o].vc),
      .credit_ok_o  (credit_ok[o]),
      .room_o       (room[o]),
      .tx_valid_o   (tx_valid_o[o]),
      .tx_data_o    (tx_data_o[o]),
      .rv_data_i    (rv_in_i[o]),
      .fault_rate_i (fault_rate_i[o]),
      .cnt_retx_o   (cnt_retx_o[o]),
      .cnt_rv_bad_o (cnt_rv_bad_o[o]),
      .cnt_faults_o (cnt_faults_o[o])
    );
    assign out_ready[o] = rdy;
  end

  for (genvar i = 0; i < Locals; i++) begin : gen_ej
    logic ej_ready_in;
    tp_fifo #(.Width(FW), .Depth(2), .CheckInput(1'b0)) u_ej_fifo (
      .clk_i,
      .rst_ni,
      .valid_i (out_valid[P_L + i]),
      .ready_o (ej_ready_in),
      .data_i  (out_flit[P_L + i]),
      .valid_o (ej_valid_o[i]),
      .ready_i (ej_ready_i[i]),
      .data_o  (ej_flit_o[i])
    );
    assign out_ready[P_L + i] = ej_ready_in;
    assign credit_ok[P_L + i] = '1;  // the ejection FIFO's ready covers every VC
  end

  // -----------------------------------------------------------------------------------------
  // Counters and checks
  // -----------------------------------------------------------------------------------------
  logic [31:0] flits_q [NP], cstall_q [NP];
  logic        err_slice_q, err_inj_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int o = 0; o < NP; o++) begin
        flits_q[o]  <= '0;
        cstall_q[o] <= '0;
      end
      refused_q   <= '0;
      err_inj_q   <= 1'b0;
      err_slice_q <= 1'b0;
    end else begin
      for (int o = 0; o < NP; o++) begin
        flits_q[o]  <= flits_q[o] + 32'(out_valid[o]);
        cstall_q[o] <= cstall_q[o] + 32'(stall_credit[o]);
      end
      refused_q <= refused_q + 32'($countones(refused_now));
      err_inj_q <= err_inj_q || (|inj_err);
      for (int p = 0; p < 4; p++) begin
        if (wr_valid[p] && wr_flit[p].head &&
            !in_slice(wr_flit[p].dst_x, wr_flit[p].dst_y, slice_x0_i, slice_y0_i, slice_w_i, slice_h_i))
          err_slice_q <= 1'b1;
      end
    end
  end
  for (genvar o = 0; o < NP; o++) begin : gen_cnt
    assign cnt_flits_o[o]        = flits_q[o];
    assign cnt_credit_stall_o[o] = cstall_q[o];
  end
  assign cnt_refused_o = refused_q;
  always_comb begin
    busy_o = 1'b0;
    for (int i = 0; i < Locals; i++) busy_o = busy_o || inj_pending[i] || ej_valid_o[i];
    for (int p = 0; p < NP; p++) for (int v = 0; v < V; v++) busy_o = busy_o || (count_q[p][v] != '0);
  end
  assign err_inj_o     = err_inj_q;
  assign err_slice_o   = err_slice_q;

`ifndef SYNTHESIS
  // Credits guarantee room: a flit arriving for a full buffer is a protocol error.
  always_ff @(posedge clk_i) begin
    if (rst_ni) begin
      for (int p = 0; p < 4; p++) begin
        a_room: assert (!wr_valid[p] || count_q[p][wr_vc[p]] < BW'(B))
          else $error("tp_ici_router (%0d,%0d): flit for a full VC buffer on port %0d", my_x_i, my_y_i, p);
      end
    end
  end
`endif
endmodule
