// A chip whose memory port is HBM (docs/chip.md, docs/hbm.md): tp_chip and tp_mem_hbm (the
// beat port over channels x pseudo-channels controllers, with its reorder buffer). The DRAM command ports of the pseudo-channels come out to the testbench, which
// attaches one HBM device model to each; the HBM counters come out too.
//
// The HBM controllers have their own reset (hbm_rst_ni): the host may reset the chip between programs
// (after mem_idle_o, so that no response is in flight) while the memory keeps its contents, its
// open rows and its refresh schedule, as DRAM must.
module tp_chip_hbm
  import tp_ici_pkg::*;
#(
  parameter int unsigned N         = 8,
  parameter int unsigned AccRows   = 64,
  parameter int unsigned VmemRows  = 1024,
  parameter int unsigned VmemBanks = 4,
  parameter int unsigned Sublanes  = 1,
  parameter int unsigned ImemWords = 1024,
  parameter int unsigned Queue     = 4,
  parameter int unsigned HbmBeats  = 65536,
  parameter int unsigned IciVcs    = 2,
  parameter int unsigned IciBuf    = 4,
  parameter int unsigned IciFlitW  = 32,
  parameter int unsigned IciReplay = 16,
  parameter int unsigned IciSaIters = 1,      // the router's SaIters and ClassChoice (docs/ici.md)
  parameter int unsigned IciClassChoice = 0,
  parameter int unsigned IciLocals = 1,       // router local ports = ICI unit send engines
  parameter int unsigned IciTurnRoom = 1,     // the router's TurnRoom
  // the HBM subsystem (tp_hbm)
  parameter int unsigned NC = 2,
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
  localparam int unsigned IVW  = (IciVcs > 1) ? $clog2(IciVcs) : 1,
  localparam int unsigned ILW  = 2 + IVW + 4 * CW + HOPW + IciFlitW + SEQW + CRCW,
  localparam int unsigned IRVW = SEQW + ERRW + IciVcs * CNTW + CRCW
) (
  input  logic            clk_i,
  input  logic            rst_ni,      // the chip and the bridge
  input  logic            hbm_rst_ni,  // the HBM subsystem
  output logic            mem_idle_o,  // no memory request in flight
  input  logic            csr_valid_i,
  input  logic            csr_write_i,
  input  logic [11:0]     csr_addr_i,
  input  logic [31:0]     csr_wdata_i,
  output logic [31:0]     csr_rdata_o,
  output logic            done_o,
  output logic            hbm_err_mask_o,
  // ICI links (tp_chip)
  output logic            ici_tx_valid_o [4],
  output logic [ILW-1:0]  ici_tx_data_o  [4],
  input  logic            ici_rx_valid_i [4],
  input  logic [ILW-1:0]  ici_rx_data_i  [4],
  output logic [IRVW-1:0] ici_rv_out_o   [4],
  input  logic [IRVW-1:0] ici_rv_in_i    [4],
  output logic            ici_busy_o,
  output logic            waiting_o,
  // trace probe (tp_chip)
  output logic [tp_isa_pkg::NumQueues-1:0]   dbg_go_o,
  output logic [31:0]            dbg_pc_o [tp_isa_pkg::NumQueues],
  output logic [2*tp_isa_pkg::NumQueues-1:0] dbg_kind_o,
  output logic                   dbg_count_o,
  output logic                   dbg_rx_end_o,
  output logic [2*CW-1:0]        dbg_rx_src_o,
  // one DRAM interface per pseudo-channel
  output logic            cmd_valid_o [NC],
  output logic [2:0]      cmd_o       [NC],
  output logic [BW-1:0]   cmd_bank_o  [NC],
  output logic [RowW-1:0] cmd_row_o   [NC],
  output logic [ColW-1:0] cmd_col_o   [NC],
  output logic [287:0]    cmd_wdata_o [NC],
  output logic [35:0]     cmd_wmask_o [NC],
  input  logic            rd_valid_i  [NC],
  input  logic [287:0]    rd_data_i   [NC],
  output logic [31:0]     cnt_reads_o [NC], cnt_writes_o [NC], cnt_hits_o [NC], cnt_misses_o [NC],
  output logic [31:0]     cnt_conflicts_o [NC], cnt_refreshes_o [NC], cnt_bus_busy_o [NC],
  output logic [31:0]     cnt_ecc_corrected_o [NC], cnt_ecc_fatal_o [NC],
  output logic [31:0]     cnt_rd_latency_sum_o [NC], cnt_rd_latency_max_o [NC]
);
  localparam int unsigned W = N * 32;

  logic         m_req_valid, m_req_ready, m_req_write, m_rsp_valid, m_rsp_ready, m_rsp_write, m_rsp_err;
  logic [31:0]  m_req_addr;
  logic [3:0]   m_req_id, m_rsp_id;
  logic [W-1:0] m_req_wdata, m_rsp_rdata;

  tp_chip #(
    .N(N), .AccRows(AccRows), .VmemRows(VmemRows), .VmemBanks(VmemBanks), .Sublanes(Sublanes),
    .ImemWords(ImemWords), .Queue(Queue), .HbmBeats(HbmBeats), .IciVcs(IciVcs), .IciBuf(IciBuf),
    .IciFlitW(IciFlitW), .IciReplay(IciReplay), .IciSaIters(IciSaIters),
    .IciClassChoice(IciClassChoice), .IciLocals(IciLocals), .IciTurnRoom(IciTurnRoom)
  ) u_chip (
    .clk_i,
    .rst_ni,
    .csr_valid_i,
    .csr_write_i,
    .csr_addr_i,
    .csr_wdata_i,
    .csr_rdata_o,
    .done_o,
    .mem_req_valid_o (m_req_valid),
    .mem_req_ready_i (m_req_ready),
    .mem_req_write_o (m_req_write),
    .mem_req_addr_o  (m_req_addr),
    .mem_req_id_o    (m_req_id),
    .mem_req_wdata_o (m_req_wdata),
    .mem_rsp_valid_i (m_rsp_valid),
    .mem_rsp_ready_o (m_rsp_ready),
    .mem_rsp_write_i (m_rsp_write),
    .mem_rsp_id_i    (m_rsp_id),
    .mem_rsp_rdata_i (m_rsp_rdata),
    .mem_rsp_err_i   (m_rsp_err),
    .ici_tx_valid_o,
    .ici_tx_data_o,
    .ici_rx_valid_i,
    .ici_rx_data_i,
    .ici_rv_out_o,
    .ici_rv_in_i,
    .ici_busy_o,
    .waiting_o,
    .dbg_go_o,
    .dbg_pc_o,
    .dbg_kind_o,
    .dbg_count_o,
    .dbg_rx_end_o,
    .dbg_rx_src_o
  );

  tp_mem_hbm #(
    .W(W), .NC(NC), .QD(QD), .WQD(WQD), .BankGroups(BankGroups), .BanksPerGroup(BanksPerGroup), .RowW(RowW), .ColW(ColW),
    .BankLow(BankLow), .ClosedPage(ClosedPage), .HiWm(HiWm), .LoWm(LoWm), .StarveLimit(StarveLimit), .CL(CL), .CWL(CWL), .TRCD(TRCD),
    .TRP(TRP), .TRAS(TRAS), .TRC(TRC), .TCCDS(TCCDS), .TCCDL(TCCDL), .TRRDS(TRRDS), .TRRDL(TRRDL), .TFAW(TFAW),
    .TWTRS(TWTRS), .TWTRL(TWTRL), .TRTP(TRTP), .TWR(TWR), .TRFC(TRFC), .TREFI(TREFI),
      .PerBankRefresh(PerBankRefresh), .TRFCSB(TRFCSB), .TRREFD(TRREFD)
  ) u_mem (
    .clk_i,
    .rst_ni,
    .hbm_rst_ni,
    .req_valid_i  (m_req_valid),
    .req_ready_o  (m_req_ready),
    .req_write_i  (m_req_write),
    .req_addr_i   (m_req_addr),
    .req_id_i     (m_req_id),
    .req_wdata_i  (m_req_wdata),
    .rsp_valid_o  (m_rsp_valid),
    .rsp_ready_i  (m_rsp_ready),
    .rsp_write_o  (m_rsp_write),
    .rsp_id_o     (m_rsp_id),
    .rsp_rdata_o  (m_rsp_rdata),
    .rsp_err_o    (m_rsp_err),
    .idle_o       (mem_idle_o),
    .err_mask_o   (hbm_err_mask_o),
    .cmd_valid_o,
    .cmd_o,
    .cmd_bank_o,
    .cmd_row_o,
    .cmd_col_o,
    .cmd_wdata_o,
    .cmd_wmask_o,
    .rd_valid_i,
    .rd_data_i,
    .cnt_reads_o,
    .cnt_writes_o,
    .cnt_hits_o,
    .cnt_misses_o,
    .cnt_conflicts_o,
    .cnt_refreshes_o,
    .cnt_bus_busy_o,
    .cnt_ecc_corrected_o,
    .cnt_ecc_fatal_o,
    .cnt_rd_latency_sum_o,
    .cnt_rd_latency_max_o
  );
endmodule
