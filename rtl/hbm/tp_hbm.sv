// The HBM subsystem: channels x pseudo-channels independent controllers (tp_hbm_ctrl) behind
// one request port (docs/hbm.md). Consecutive blocks of 2^IlvW bursts go to consecutive
// pseudo-channels. Responses keep the per-ID order across pseudo-channels: a request waits while
// its ID has requests outstanding in another pseudo-channel.
//
// A request covers req_len_i + 1 consecutive bursts from req_addr_i. A read is one handshake and
// gets one response per burst; a write is one handshake per burst (the requester holds address,
// length and ID and gives each burst's data and mask in turn) and gets one acknowledgement per
// burst. The bursts are split here into single-burst requests to the pseudo-channels.
module tp_hbm
  import tp_secded_pkg::*;
#(
  parameter int unsigned NC = 2,      // pseudo-channels in all (channels x pseudo-channels)
  parameter int unsigned IlvW = 3,    // interleave: 2^IlvW bursts per block
  parameter int unsigned IdW = 4,
  parameter int unsigned LenW = 4,    // request length field: up to 2^LenW bursts
  parameter int unsigned QD = 8,
  parameter int unsigned BankGroups = 4,
  parameter int unsigned BanksPerGroup = 4,
  parameter int unsigned RowW = 14,
  parameter int unsigned ColW = 5,
  parameter int unsigned BankLow = 0,
  parameter int unsigned ClosedPage = 0,
  parameter int unsigned WQD = 0,  // write buffer entries (0: writes share the QD)
  parameter int unsigned HiWm = 6, LoWm = 2,
  parameter int unsigned StarveLimit = 512,
  parameter int unsigned CL = 14, CWL = 4, TRCD = 14, TRP = 14, TRAS = 34, TRC = 48,
  parameter int unsigned TCCDS = 1, TCCDL = 2, TRRDS = 4, TRRDL = 6, TFAW = 30,
  parameter int unsigned TWTRS = 4, TWTRL = 9, TRTP = 4, TWR = 16, TRFC = 260, TREFI = 3900,
  parameter int unsigned PerBankRefresh = 0, TRFCSB = 160, TRREFD = 8,
  localparam int unsigned NB = BankGroups * BanksPerGroup,
  localparam int unsigned BW = $clog2(NB),
  localparam int unsigned LAW = RowW + BW + ColW,             // address within a pseudo-channel
  localparam int unsigned CB = (NC > 1) ? $clog2(NC) : 1,
  localparam int unsigned AW = LAW + ((NC > 1) ? $clog2(NC) : 0)
) (
  input  logic            clk_i,
  input  logic            rst_ni,
  input  logic            req_valid_i,
  output logic            req_ready_o,
  input  logic            req_write_i,
  input  logic [AW-1:0]   req_addr_i,
  input  logic [LenW-1:0] req_len_i,   // bursts - 1
  input  logic [IdW-1:0]  req_id_i,
  input  logic [255:0]    req_wdata_i,
  input  logic [31:0]     req_wmask_i,
  output logic            rsp_valid_o,
  input  logic            rsp_ready_i,
  output logic            rsp_write_o,
  output logic [IdW-1:0]  rsp_id_o,
  output logic [255:0]    rsp_rdata_o,
  output logic            rsp_err_o,
  output logic            err_mask_o,
  // One DRAM interface per pseudo-channel.
  output logic            cmd_valid_o [NC],
  output logic [2:0]      cmd_o       [NC],
  output logic [BW-1:0]   cmd_bank_o  [NC],
  output logic [RowW-1:0] cmd_row_o   [NC],
  output logic [ColW-1:0] cmd_col_o   [NC],
  output logic [287:0]    cmd_wdata_o [NC],
  output logic [35:0]     cmd_wmask_o [NC],
  input  logic            rd_valid_i  [NC],
  input  logic [287:0]    rd_data_i   [NC],
  // Counters per pseudo-channel.
  output logic [31:0]     cnt_reads_o [NC], cnt_writes_o [NC], cnt_hits_o [NC], cnt_misses_o [NC],
  output logic [31:0]     cnt_conflicts_o [NC], cnt_refreshes_o [NC], cnt_bus_busy_o [NC],
  output logic [31:0]     cnt_ecc_corrected_o [NC], cnt_ecc_fatal_o [NC],
  output logic [31:0]     cnt_rd_latency_sum_o [NC], cnt_rd_latency_max_o [NC]
);
  localparam int unsigned PW = 1 + LAW + IdW + 256 + 32;

  // Input register (registered ready), then dispatch to the pseudo-channel of the address.
  logic          in_valid, in_pop;
  logic [PW-1:0] in_payload;
  logic            in_write;
  logic [LAW-1:0]  in_laddr;
  logic [IdW-1:0]  in_id;
  logic [255:0]    in_wdata;
  logic [31:0]     in_wmask;
  logic [CB-1:0]   ch;
  logic [CB-1:0]   req_ch;
  logic [LAW-1:0]  req_laddr;

  // Bursts of a request: a read's later bursts come from here (req_ready_o low meanwhile); a
  // write's bursts arrive one per handshake, counted in wbeat_q.
  logic            x_active_q, x_write, x_valid, x_ready;
  logic [AW-1:0]   x_addr_q, x_addr;
  logic [LenW-1:0] x_left_q, wbeat_q;
  logic [IdW-1:0]  x_id_q, x_id;
  assign x_valid     = x_active_q || req_valid_i;
  assign x_write     = !x_active_q && req_write_i;
  assign x_addr      = x_active_q ? x_addr_q : req_addr_i + (req_write_i ? AW'(wbeat_q) : '0);
  assign x_id        = x_active_q ? x_id_q : req_id_i;
  assign req_ready_o = !x_active_q && x_ready;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      x_active_q <= 1'b0;
      x_addr_q   <= '0;
      x_left_q   <= '0;
      x_id_q     <= '0;
      wbeat_q    <= '0;
    end else if (x_active_q) begin
      if (x_ready) begin
        x_addr_q <= x_addr_q + 1;
        x_left_q <= x_left_q - 1;
        if (x_left_q == LenW'(1)) x_active_q <= 1'b0;
      end
    end else if (req_valid_i && req_ready_o) begin
      if (req_write_i) begin
        wbeat_q <= (wbeat_q == req_len_i) ? '0 : wbeat_q + 1;
      end else if (req_len_i != '0) begin
        x_active_q <= 1'b1;
        x_addr_q   <= req_addr_i + 1;
        x_left_q   <= req_len_i;
        x_id_q     <= req_id_i;
      end
    end
  end

  always_comb begin
    if (NC > 1) begin
      req_ch    = CB'(x_addr >> IlvW);
      req_laddr = LAW'({x_addr >> (IlvW + CB), x_addr[IlvW-1:0]});
    end else begin
      req_ch    = '0;
      req_laddr = LAW'(x_addr);
    end
  end

  tp_fifo #(.Width(PW + CB), .Depth(2), .CheckInput(1'b0)) u_in (
    .clk_i,
    .rst_ni,
    .valid_i (x_valid),
    .ready_o (x_ready),
    .data_i  ({req_ch, x_write, req_laddr, x_id, req_wdata_i, req_wmask_i}),
    .valid_o (in_valid),
    .ready_i (in_pop),
    .data_o  ({ch, in_payload})
  );
  assign {in_write, in_laddr, in_id, in_wdata, in_wmask} = in_payload;

  // Per-ID lock: the pseudo-channel holding the ID's outstanding requests, and how many.
  logic [15:0]   id_cnt_q [2**IdW];
  logic [CB-1:0] id_ch_q  [2**IdW];
  logic          c_ready  [NC];
  logic          may_go;
  assign may_go = (id_cnt_q[in_id] == '0) || (id_ch_q[in_id] == ch);
  assign in_pop = in_valid && may_go && c_ready[ch];

  // Responses: round-robin over the pseudo-channels.
  logic [NC-1:0] c_rsp_valid;
  logic          c_rsp_write [NC], c_rsp_err [NC], c_err_mask [NC];
  logic [IdW-1:0] c_rsp_id [NC];
  logic [255:0]  c_rsp_rdata [NC];
  logic          g_valid;
  logic [$clog2(NC > 1 ? NC : 2)-1:0] g_idx;
  logic          rsp_fire;

  tp_rr_arb #(.N(NC)) u_rsp_arb (
    .clk_i,
    .rst_ni,
    .req_i       (c_rsp_valid),
    .advance_i   (rsp_fire),
    .gnt_valid_o (g_valid),
    .gnt_idx_o   (g_idx)
  );
  assign rsp_valid_o = g_valid;
  assign rsp_write_o = c_rsp_write[g_idx];
  assign rsp_id_o    = c_rsp_id[g_idx];
  assign rsp_rdata_o = c_rsp_rdata[g_idx];
  assign rsp_err_o   = c_rsp_err[g_idx];
  assign rsp_fire    = rsp_valid_o && rsp_ready_i;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int i = 0; i < 2 ** IdW; i++) begin
        id_cnt_q[i] <= '0;
        id_ch_q[i]  <= '0;
      end
    end else begin
      if (in_pop) id_ch_q[in_id] <= ch;
      for (int i = 0; i < 2 ** IdW; i++) begin
        id_cnt_q[i] <= id_cnt_q[i] + 16'(in_pop && in_id == IdW'(i)) - 16'(rsp_fire && rsp_id_o == IdW'(i));
      end
    end
  end

  logic err_mask_any;
  always_comb begin
    err_mask_any = 1'b0;
    for (int c = 0; c < NC; c++) err_mask_any = err_mask_any | c_err_mask[c];
  end
  assign err_mask_o = err_mask_any;

  for (genvar c = 0; c < NC; c++) begin : gen_pc
    tp_hbm_ctrl #(
      .IdW(IdW), .QD(QD), .WQD(WQD), .BankGroups(BankGroups), .BanksPerGroup(BanksPerGroup), .RowW(RowW),
      .ColW(ColW), .BankLow(BankLow), .ClosedPage(ClosedPage), .HiWm(HiWm), .LoWm(LoWm), .StarveLimit(StarveLimit), .CL(CL),
      .CWL(CWL), .TRCD(TRCD), .TRP(TRP), .TRAS(TRAS), .TRC(TRC), .TCCDS(TCCDS), .TCCDL(TCCDL),
      .TRRDS(TRRDS), .TRRDL(TRRDL), .TFAW(TFAW), .TWTRS(TWTRS), .TWTRL(TWTRL), .TRTP(TRTP),
      .TWR(TWR), .TRFC(TRFC), .TREFI(TREFI),
      .PerBankRefresh(PerBankRefresh), .TRFCSB(TRFCSB), .TRREFD(TRREFD)
    ) u_ctrl (
      .clk_i,
      .rst_ni,
      .req_valid_i          (in_valid && may_go && (ch == CB'(c))),
      .req_ready_o          (c_ready[c]),
      .req_write_i          (in_write),
      .req_addr_i           (in_laddr),
      .req_id_i             (in_id),
      .req_wdata_i          (in_wdata),
      .req_wmask_i          (in_wmask),
      .rsp_valid_o          (c_rsp_valid[c]),
      .rsp_ready_i          (rsp_ready_i && g_valid && (g_idx == ($bits(g_idx))'(c))),
      .rsp_write_o          (c_rsp_write[c]),
      .rsp_id_o             (c_rsp_id[c]),
      .rsp_rdata_o          (c_rsp_rdata[c]),
      .rsp_err_o            (c_rsp_err[c]),
      .err_mask_o           (c_err_mask[c]),
      .cmd_valid_o          (cmd_valid_o[c]),
      .cmd_o                (cmd_o[c]),
      .cmd_bank_o           (cmd_bank_o[c]),
      .cmd_row_o            (cmd_row_o[c]),
      .cmd_col_o            (cmd_col_o[c]),
      .cmd_wdata_o          (cmd_wdata_o[c]),
      .cmd_wmask_o          (cmd_wmask_o[c]),
      .rd_valid_i           (rd_valid_i[c]),
      .rd_data_i            (rd_data_i[c]),
      .cnt_reads_o          (cnt_reads_o[c]),
      .cnt_writes_o         (cnt_writes_o[c]),
      .cnt_hits_o           (cnt_hits_o[c]),
      .cnt_misses_o         (cnt_misses_o[c]),
      .cnt_conflicts_o      (cnt_conflicts_o[c]),
      .cnt_refreshes_o      (cnt_refreshes_o[c]),
      .cnt_bus_busy_o       (cnt_bus_busy_o[c]),
      .cnt_ecc_corrected_o  (cnt_ecc_corrected_o[c]),
      .cnt_ecc_fatal_o      (cnt_ecc_fatal_o[c]),
      .cnt_rd_latency_sum_o (cnt_rd_latency_sum_o[c]),
      .cnt_rd_latency_max_o (cnt_rd_latency_max_o[c])
    );
  end
endmodule
