// One tensorpod chip (docs/chip.md, docs/pod.md): core, MXU unit + MXU, vector unit, load and
// store DMA, the ICI unit and the torus router with its four links, banked VMEM, the memory port
// (HBM side) and the host's control and status registers (the map is generated from
// sw/isa/hw.json into tp_isa_pkg: Csr*, Cnt*).
module tp_chip
  import tp_isa_pkg::*;
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
  // the ICI router (preset section ici)
  parameter int unsigned IciVcs    = 2,
  parameter int unsigned IciBuf    = 4,
  parameter int unsigned IciFlitW  = 32,
  parameter int unsigned IciReplay = 16,
  parameter int unsigned IciSaIters = 1,      // the router's SaIters and ClassChoice (docs/ici.md)
  parameter int unsigned IciClassChoice = 0,
  parameter int unsigned IciLocals = 1,       // router local ports = ICI unit send engines (1..4)
  parameter int unsigned IciTurnRoom = 1,     // the router's TurnRoom (bubble on turns into Y)
  localparam int unsigned W        = N * 32,
  localparam int unsigned IVW      = (IciVcs > 1) ? $clog2(IciVcs) : 1,
  localparam int unsigned IFW      = 2 + IVW + 4 * CW + HOPW + IciFlitW,
  localparam int unsigned ILW      = IFW + SEQW + CRCW,
  localparam int unsigned IRVW     = SEQW + ERRW + IciVcs * CNTW + CRCW
) (
  input  logic         clk_i,
  input  logic         rst_ni,
  // host registers
  input  logic         csr_valid_i,
  input  logic         csr_write_i,
  input  logic [11:0]  csr_addr_i,
  input  logic [31:0]  csr_wdata_i,
  output logic [31:0]  csr_rdata_o,
  output logic         done_o,
  // memory port
  output logic         mem_req_valid_o,
  input  logic         mem_req_ready_i,
  output logic         mem_req_write_o,
  output logic [31:0]  mem_req_addr_o,
  output logic [3:0]   mem_req_id_o,
  output logic [W-1:0] mem_req_wdata_o,
  input  logic         mem_rsp_valid_i,
  output logic         mem_rsp_ready_o,
  input  logic         mem_rsp_write_i,
  input  logic [3:0]   mem_rsp_id_i,
  input  logic [W-1:0] mem_rsp_rdata_i,
  input  logic         mem_rsp_err_i,
  // ICI links, indexed P_N, P_S, P_E, P_W (tp_ici_router): link words out and in, reverse words
  output logic            ici_tx_valid_o [4],
  output logic [ILW-1:0]  ici_tx_data_o  [4],
  input  logic            ici_rx_valid_i [4],
  input  logic [ILW-1:0]  ici_rx_data_i  [4],
  output logic [IRVW-1:0] ici_rv_out_o   [4],
  input  logic [IRVW-1:0] ici_rv_in_i    [4],
  output logic            ici_busy_o,  // the network interface has flits in flight (sent or received)
  output logic            waiting_o,   // STATUS.waiting: in a pod, every queue waits and nothing moves
  // trace probe (docs/observability.md), read by the harness each cycle when it records a trace:
  // per queue (the ISA table's order) the head pops this cycle (dbg_go_o) with its PC, the unit
  // counter that counts this cycle (dbg_kind_o, 2 bits per queue), valid while dbg_count_o; the
  // last row of an arriving transfer written this cycle (dbg_rx_end_o) and its sender {y, x}
  output logic [NumQueues-1:0]   dbg_go_o,
  output logic [31:0]            dbg_pc_o [NumQueues],
  output logic [2*NumQueues-1:0] dbg_kind_o,
  output logic                   dbg_count_o,
  output logic                   dbg_rx_end_o,
  output logic [2*CW-1:0]        dbg_rx_src_o
);
  localparam int unsigned NCnt = NumCounters;

  // ---- host registers -----------------------------------------------------------------------
  logic        start, running, done, error;
  logic [7:0]  err_code;
  logic [31:0] err_pc, prog_len_q, imem_addr_q;
  logic [2:0][31:0] imem_data_q;
  logic        imem_we;
  logic        csr_wr;
  logic [63:0] cnt [NCnt];
  logic         host_req_q, host_busy_q, host_write_q, host_err_q, host_fire, host_rsp;
  logic [31:0]  host_addr_q;
  logic [W-1:0] host_data_q;
  logic [11:0]  host_off;
  logic [7:0]   host_word;  // up to 256 lanes: the window is 0x800..0xbff
  assign host_off  = csr_addr_i - CsrHostData;
  assign host_word = host_off[9:2];

  logic [11:0] cnt_off;
  logic [5:0]  cnt_idx;
  assign cnt_off = csr_addr_i - CsrCounter;
  assign cnt_idx = cnt_off[8:3];
  assign csr_wr  = csr_valid_i && csr_write_i;
  assign start   = csr_wr && csr_addr_i == CsrCtrl && csr_wdata_i[0];
  assign imem_we = csr_wr && csr_addr_i == CsrImemData3;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      prog_len_q  <= '0;
      imem_addr_q <= '0;
      imem_data_q <= '0;
    end else if (csr_wr) begin
      case (csr_addr_i)
        CsrProgLen:   prog_len_q <= csr_wdata_i;
        CsrImemAddr:  imem_addr_q <= csr_wdata_i;
        CsrImemData0: imem_data_q[0] <= csr_wdata_i;
        CsrImemData1: imem_data_q[1] <= csr_wdata_i;
        CsrImemData2: imem_data_q[2] <= csr_wdata_i;
        CsrImemData3: imem_addr_q <= imem_addr_q + 1;
        default: ;
      endcase
    end
  end
  always_comb begin
    csr_rdata_o = '0;
    case (csr_addr_i)
      CsrStatus:     csr_rdata_o = {28'b0, waiting, error, done, running};
      CsrErrCode:    csr_rdata_o = {24'b0, err_code};
      CsrErrPc:      csr_rdata_o = err_pc;
      CsrProgLen:    csr_rdata_o = prog_len_q;
      CsrImemAddr:   csr_rdata_o = imem_addr_q;
      CsrInfo:       csr_rdata_o = {8'b0, 8'(IsaVersion), 16'(N)};
      CsrHostAddr:   csr_rdata_o = host_addr_q;
      CsrHostStatus: csr_rdata_o = {30'b0, host_err_q, host_busy_q};
      CsrWaitPc:     csr_rdata_o = wait_pc;
      CsrIciTorus:   csr_rdata_o = {18'b0, ky_q, 2'b0, kx_q};
      CsrIciCoord:   csr_rdata_o = {19'b0, my_y_q, 3'b0, my_x_q};
      CsrIciSlice0:  csr_rdata_o = {19'b0, sy0_q, 3'b0, sx0_q};
      CsrIciSlice1:  csr_rdata_o = {18'b0, sh_q, 2'b0, sw_q};
      CsrIciFault0:  csr_rdata_o = {16'b0, fault_q[0]};
      CsrIciFault1:  csr_rdata_o = {16'b0, fault_q[1]};
      CsrIciFault2:  csr_rdata_o = {16'b0, fault_q[2]};
      CsrIciFault3:  csr_rdata_o = {16'b0, fault_q[3]};
      CsrIciStatus:  csr_rdata_o = {28'b0, ici_busy_o, r_err_inj, r_err_slice, r_err_cfg};
      default: begin
        if (csr_addr_i >= CsrCounter && csr_addr_i < CsrCounter + 12'(8 * NCnt)) begin
          csr_rdata_o = csr_addr_i[2] ? cnt[cnt_idx][63:32] : cnt[cnt_idx][31:0];
        end else if (csr_addr_i >= CsrHostData && csr_addr_i < CsrHostData + 12'(4 * N)) begin
          csr_rdata_o = host_data_q[32 * host_word +: 32];
        end
      end
    endcase
  end
  assign done_o = done;

  // ICI registers: written by the host before a run, ignored while the chip runs.
  logic [CW:0]   kx_q, ky_q, sw_q, sh_q;
  logic [CW-1:0] my_x_q, my_y_q, sx0_q, sy0_q;
  logic [15:0]   fault_q [4];
  logic          pod;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      kx_q   <= 6'd1;
      ky_q   <= 6'd1;
      my_x_q <= '0;
      my_y_q <= '0;
      sx0_q  <= '0;
      sy0_q  <= '0;
      sw_q   <= 6'd1;
      sh_q   <= 6'd1;
      for (int p = 0; p < 4; p++) fault_q[p] <= '0;
    end else if (csr_wr) begin
      if (!running) begin
        case (csr_addr_i)
          CsrIciTorus:  {ky_q, kx_q} <= {csr_wdata_i[13:8], csr_wdata_i[5:0]};
          CsrIciCoord:  {my_y_q, my_x_q} <= {csr_wdata_i[12:8], csr_wdata_i[4:0]};
          CsrIciSlice0: {sy0_q, sx0_q} <= {csr_wdata_i[12:8], csr_wdata_i[4:0]};
          CsrIciSlice1: {sh_q, sw_q} <= {csr_wdata_i[13:8], csr_wdata_i[5:0]};
          default: ;
        endcase
      end
      case (csr_addr_i)
        CsrIciFault0: fault_q[0] <= csr_wdata_i[15:0];
        CsrIciFault1: fault_q[1] <= csr_wdata_i[15:0];
        CsrIciFault2: fault_q[2] <= csr_wdata_i[15:0];
        CsrIciFault3: fault_q[3] <= csr_wdata_i[15:0];
        default: ;
      endcase
    end
  end
  assign pod = (sw_q != 6'd1) || (sh_q != 6'd1);

  // ---- core ---------------------------------------------------------------------------------
  localparam int unsigned NQ = NumQueues;
  logic [NQ-1:0] u_start, u_ready, u_idle, u_cmpl, u_moving;
  instr_t      u_instr [NQ];
  logic [31:0] u_pc [NQ];
  logic [SemW-1:0] u_sig [NQ];
  logic [63:0] cnt_unit [NQ][4];
  logic        waiting, ici_err;
  logic [7:0]  ici_err_code;
  logic [31:0] wait_pc, ici_err_pc;
  logic [SemW-1:0] rsig;
  logic [63:0] cnt_cycles, cnt_instrs;
  logic        ld_err, st_err;
  logic [31:0] ld_err_pc, st_err_pc;

  tp_core #(
    .N(N), .AccRows(AccRows), .VmemRows(VmemRows), .ImemWords(ImemWords), .Queue(Queue), .HbmBeats(HbmBeats)
  ) u_core (
    .clk_i,
    .rst_ni,
    .imem_we_i    (imem_we),
    .imem_addr_i  (imem_addr_q),
    .imem_wdata_i ({csr_wdata_i, imem_data_q[2], imem_data_q[1], imem_data_q[0]}),
    .prog_len_i   (prog_len_q),
    .start_i      (start),
    .running_o    (running),
    .done_o       (done),
    .error_o      (error),
    .err_code_o   (err_code),
    .err_pc_o     (err_pc),
    .u_start_o    (u_start),
    .u_instr_o    (u_instr),
    .u_pc_o       (u_pc),
    .u_ready_i    (u_ready),
    .u_idle_i     (u_idle),
    .u_cmpl_i     (u_cmpl),
    .u_cmpl_sig_i (u_sig),
    .u_moving_i   (u_moving),
    .mem_err_i    (ld_err || st_err),
    .mem_err_pc_i (ld_err ? ld_err_pc : st_err_pc),
    .unit_err_i      (ici_err),
    .unit_err_code_i (ici_err_code),
    .unit_err_pc_i   (ici_err_pc),
    .rsig_i       (rsig),
    .ici_busy_i   (ici_busy_o),
    .pod_i        (pod),
    .waiting_o    (waiting),
    .wait_pc_o    (wait_pc),
    .cnt_unit_o   (cnt_unit),
    .cnt_cycles_o (cnt_cycles),
    .cnt_instrs_o (cnt_instrs),
    .dbg_go_o     (dbg_go_o),
    .dbg_kind_o   (dbg_kind_o),
    .dbg_count_o  (dbg_count_o)
  );
  assign waiting_o = waiting;
  assign dbg_pc_o  = u_pc;

  // ---- VMEM: reads 0 MXU rows, 1 MXU weights, 2 store, 3.. vector (a, b, mask per sublane),
  //      last the ICI unit's sends; writes 0 load, 1.. vector (one per sublane), last ICI arrivals
  localparam int unsigned NR = 3 + 3 * Sublanes + 1, NW = 1 + Sublanes + 1;
  logic [NR-1:0] v_rd_req, v_rd_gnt, v_rd_rvalid;
  logic [19:0]   v_rd_addr [NR];
  logic [W-1:0]  v_rd_rdata [NR];
  logic [NW-1:0] v_wr_req, v_wr_gnt;
  logic [19:0]   v_wr_addr [NW];
  logic [W-1:0]  v_wr_data [NW];
  logic [63:0]   cnt_conflicts;
  tp_vmem #(.W(W), .Rows(VmemRows), .Banks(VmemBanks), .NR(NR), .NW(NW)) u_vmem (
    .clk_i,
    .rst_ni,
    .rd_req_i        (v_rd_req),
    .rd_addr_i       (v_rd_addr),
    .rd_gnt_o        (v_rd_gnt),
    .rd_rvalid_o     (v_rd_rvalid),
    .rd_rdata_o      (v_rd_rdata),
    .wr_req_i        (v_wr_req),
    .wr_addr_i       (v_wr_addr),
    .wr_data_i       (v_wr_data),
    .wr_gnt_o        (v_wr_gnt),
    .cnt_conflicts_o (cnt_conflicts)
  );

  // ---- memory port: the host's beat access first, then load and store DMA, round-robin -------
  logic         ld_req_valid, ld_req_ready, st_req_valid, st_req_ready, last_st_q;
  logic [31:0]  ld_req_addr, st_req_addr;
  logic [W-1:0] st_req_data;
  logic         ld_rsp_valid, ld_rsp_ready, st_rsp_valid;
  logic [1:0]   pick, hold_pick_q;  // 0 load, 1 store, 2 host
  logic         hold_q;
  // A request waiting for ready keeps its place: valid/ready payloads hold until taken.
  always_comb begin
    if (hold_q) pick = hold_pick_q;
    else if (host_req_q) pick = 2'd2;
    else pick = (st_req_valid && (!ld_req_valid || !last_st_q)) ? 2'd1 : 2'd0;
  end
  assign mem_req_valid_o = host_req_q || ld_req_valid || st_req_valid;
  assign mem_req_write_o = (pick == 2'd1) || (pick == 2'd2 && host_write_q);
  assign mem_req_addr_o  = (pick == 2'd2) ? host_addr_q : (pick == 2'd1) ? st_req_addr : ld_req_addr;
  assign mem_req_id_o    = 4'(pick);
  assign mem_req_wdata_o = (pick == 2'd2) ? host_data_q : st_req_data;
  assign ld_req_ready    = mem_req_ready_i && pick == 2'd0;
  assign st_req_ready    = mem_req_ready_i && pick == 2'd1;
  assign host_fire       = mem_req_ready_i && pick == 2'd2 && host_req_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      last_st_q   <= 1'b0;
      hold_q      <= 1'b0;
      hold_pick_q <= 2'd0;
    end else begin
      if (mem_req_valid_o && mem_req_ready_i && pick != 2'd2) last_st_q <= pick == 2'd1;
      hold_q      <= mem_req_valid_o && !mem_req_ready_i;
      hold_pick_q <= pick;
    end
  end
  tp_assert_stable #(.Width(1 + 32 + 4 + W), .Name("tp_chip memory requests")) u_check_mem (
    .clk_i,
    .rst_ni,
    .valid_i (mem_req_valid_o),
    .ready_i (mem_req_ready_i),
    .data_i  ({mem_req_write_o, mem_req_addr_o, mem_req_id_o, mem_req_write_o ? mem_req_wdata_o : '0})
  );
  assign ld_rsp_valid    = mem_rsp_valid_i && mem_rsp_id_i == 4'd0;
  assign st_rsp_valid    = mem_rsp_valid_i && mem_rsp_id_i == 4'd1;
  assign host_rsp        = mem_rsp_valid_i && mem_rsp_id_i == 4'd2;
  assign mem_rsp_ready_o = (mem_rsp_id_i == 4'd0) ? ld_rsp_ready : 1'b1;

  // The host's beat access (HOST_ADDR, HOST_CMD, HOST_STATUS, the data window): one beat read
  // or written through the memory port, for loading and reading back memory without a program.
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      host_req_q   <= 1'b0;
      host_busy_q  <= 1'b0;
      host_write_q <= 1'b0;
      host_err_q   <= 1'b0;
      host_addr_q  <= '0;
    end else begin
      if (csr_wr && csr_addr_i == CsrHostAddr && !host_busy_q) host_addr_q <= csr_wdata_i;  // held while busy
      if (csr_wr && csr_addr_i == CsrHostCmd && !host_busy_q && (csr_wdata_i[1:0] == 2'd1 || csr_wdata_i[1:0] == 2'd2))
      begin
        if (host_addr_q >= HbmBeats) begin
          host_err_q <= 1'b1;  // past the end of memory: refused, nothing sent
        end else begin
          host_err_q   <= 1'b0;
          host_req_q   <= 1'b1;
          host_busy_q  <= 1'b1;
          host_write_q <= csr_wdata_i[1:0] == 2'd2;
        end
      end
      if (host_fire) host_req_q <= 1'b0;
      if (host_rsp) begin
        host_busy_q <= 1'b0;
        host_err_q  <= mem_rsp_err_i;
      end
    end
  end
  always_ff @(posedge clk_i) begin
    if (csr_wr && csr_addr_i >= CsrHostData && csr_addr_i < CsrHostData + 12'(4 * N) && !host_busy_q)
      host_data_q[32 * host_word +: 32] <= csr_wdata_i;
    if (host_rsp && !host_write_q) host_data_q <= mem_rsp_rdata_i;
  end

  // ---- units --------------------------------------------------------------------------------
  logic [63:0] bytes_ld, bytes_st;
  tp_dma_ld #(.W(W)) u_ld (
    .clk_i,
    .rst_ni,
    .start_i     (u_start[0]),
    .instr_i     (u_instr[0]),
    .pc_i        (u_pc[0]),
    .ready_o     (u_ready[0]),
    .idle_o      (u_idle[0]),
    .cmpl_o      (u_cmpl[0]),
    .cmpl_sig_o  (u_sig[0]),
    .moving_o    (u_moving[0]),
    .err_o       (ld_err),
    .err_pc_o    (ld_err_pc),
    .req_valid_o (ld_req_valid),
    .req_ready_i (ld_req_ready),
    .req_addr_o  (ld_req_addr),
    .rsp_valid_i (ld_rsp_valid),
    .rsp_ready_o (ld_rsp_ready),
    .rsp_data_i  (mem_rsp_rdata_i),
    .rsp_err_i   (mem_rsp_err_i),
    .wr_req_o    (v_wr_req[0]),
    .wr_addr_o   (v_wr_addr[0]),
    .wr_data_o   (v_wr_data[0]),
    .wr_gnt_i    (v_wr_gnt[0]),
    .cnt_bytes_o (bytes_ld)
  );

  tp_dma_st #(.W(W)) u_st (
    .clk_i,
    .rst_ni,
    .start_i     (u_start[3]),
    .instr_i     (u_instr[3]),
    .pc_i        (u_pc[3]),
    .ready_o     (u_ready[3]),
    .idle_o      (u_idle[3]),
    .cmpl_o      (u_cmpl[3]),
    .cmpl_sig_o  (u_sig[3]),
    .moving_o    (u_moving[3]),
    .err_o       (st_err),
    .err_pc_o    (st_err_pc),
    .req_valid_o (st_req_valid),
    .req_ready_i (st_req_ready),
    .req_addr_o  (st_req_addr),
    .req_data_o  (st_req_data),
    .rsp_valid_i (st_rsp_valid),
    .rsp_err_i   (mem_rsp_err_i),
    .rd_req_o    (v_rd_req[2]),
    .rd_addr_o   (v_rd_addr[2]),
    .rd_gnt_i    (v_rd_gnt[2]),
    .rd_rvalid_i (v_rd_rvalid[2]),
    .rd_rdata_i  (v_rd_rdata[2]),
    .cnt_bytes_o (bytes_st)
  );

  // MXU unit + MXU
  logic               mw_valid, mw_ready, mw_t, ma_valid, ma_ready, ma_first, ma_accum;
  logic [N-1:0][15:0] mw_data, ma_data;
  logic [15:0]        ma_acc;
  logic               acc_rd_valid, acc_rd_ready, acc_rsp_valid;
  logic [15:0]        acc_rd_addr;
  logic [N-1:0][31:0] acc_rsp_data;
  logic [63:0]        mxu_rows, mxu_macs, mxu_busy, mxu_acc_writes;
  tp_mxu_unit #(.N(N)) u_mxu_unit (
    .clk_i,
    .rst_ni,
    .start_i            (u_start[1]),
    .instr_i            (u_instr[1]),
    .ready_o            (u_ready[1]),
    .idle_o             (u_idle[1]),
    .cmpl_o             (u_cmpl[1]),
    .cmpl_sig_o         (u_sig[1]),
    .moving_o           (u_moving[1]),
    .w_req_o            (v_rd_req[1]),
    .w_addr_o           (v_rd_addr[1]),
    .w_gnt_i            (v_rd_gnt[1]),
    .w_rvalid_i         (v_rd_rvalid[1]),
    .w_rdata_i          (v_rd_rdata[1]),
    .a_req_o            (v_rd_req[0]),
    .a_addr_o           (v_rd_addr[0]),
    .a_gnt_i            (v_rd_gnt[0]),
    .a_rvalid_i         (v_rd_rvalid[0]),
    .a_rdata_i          (v_rd_rdata[0]),
    .mxu_w_valid_o      (mw_valid),
    .mxu_w_ready_i      (mw_ready),
    .mxu_w_data_o       (mw_data),
    .mxu_w_t_o          (mw_t),
    .mxu_a_valid_o      (ma_valid),
    .mxu_a_ready_i      (ma_ready),
    .mxu_a_data_o       (ma_data),
    .mxu_a_first_o      (ma_first),
    .mxu_a_acc_addr_o   (ma_acc),
    .mxu_a_accumulate_o (ma_accum),
    .mxu_acc_writes_i   (mxu_acc_writes)
  );

  /* verilator lint_off PINCONNECTEMPTY */
  tp_mxu #(.N(N), .AccRows(AccRows)) u_mxu (
    .clk_i,
    .rst_ni,
    .w_valid_i        (mw_valid),
    .w_ready_o        (mw_ready),
    .w_data_i         (mw_data),
    .w_t_i            (mw_t),
    .a_valid_i        (ma_valid),
    .a_ready_o        (ma_ready),
    .a_data_i         (ma_data),
    .a_first_i        (ma_first),
    .a_acc_addr_i     (ma_acc),
    .a_accumulate_i   (ma_accum),
    .rd_valid_i       (acc_rd_valid),
    .rd_ready_o       (acc_rd_ready),
    .rd_addr_i        (acc_rd_addr),
    .rsp_valid_o      (acc_rsp_valid),
    .rsp_ready_i      (1'b1),
    .rsp_data_o       (acc_rsp_data),
    .idle_o           (),
    .err_no_tile_o    (),
    .err_addr_o       (),
    .cfg_n_o          (),
    .cfg_acc_rows_o   (),
    .cnt_rows_o       (mxu_rows),
    .cnt_macs_o       (mxu_macs),
    .cnt_busy_o       (mxu_busy),
    .cnt_stall_out_o  (),
    .cnt_stall_wgt_o  (),
    .cnt_wrows_o      (),
    .cnt_acc_writes_o (mxu_acc_writes)
  );
  /* verilator lint_on PINCONNECTEMPTY */

  logic [63:0] vpu_rows;
  tp_vpu #(.N(N), .S(Sublanes)) u_vpu (
    .clk_i,
    .rst_ni,
    .start_i         (u_start[2]),
    .instr_i         (u_instr[2]),
    .idle_o          (u_idle[2]),
    .cmpl_o          (u_cmpl[2]),
    .cmpl_sig_o      (u_sig[2]),
    .moving_o        (u_moving[2]),
    .rd_req_o        (v_rd_req[NR-2:3]),
    .rd_addr_o       (v_rd_addr[3:NR-2]),
    .rd_gnt_i        (v_rd_gnt[NR-2:3]),
    .rd_rvalid_i     (v_rd_rvalid[NR-2:3]),
    .rd_rdata_i      (v_rd_rdata[3:NR-2]),
    .acc_rd_valid_o  (acc_rd_valid),
    .acc_rd_ready_i  (acc_rd_ready),
    .acc_rd_addr_o   (acc_rd_addr),
    .acc_rsp_valid_i (acc_rsp_valid),
    .acc_rsp_data_i  (acc_rsp_data),
    .wr_req_o        (v_wr_req[NW-2:1]),
    .wr_addr_o       (v_wr_addr[1:NW-2]),
    .wr_data_o       (v_wr_data[1:NW-2]),
    .wr_gnt_i        (v_wr_gnt[NW-2:1]),
    .cnt_rows_o      (vpu_rows)
  );
  assign u_ready[2] = u_idle[2];

  // ---- ICI: the unit (fifth queue) and the router ------------------------------------------
  localparam int unsigned INP = 4 + IciLocals;  // router ports
  logic           inj_valid [IciLocals], inj_ready [IciLocals], ej_valid [IciLocals], ej_ready [IciLocals];
  logic           r_refused [IciLocals];
  logic [IFW-1:0] inj_flit [IciLocals], ej_flit [IciLocals];
  logic           r_err_slice, r_err_cfg, r_err_inj, rx_busy, tx_busy, r_busy, ej_any;
  logic [31:0]    r_flits [INP], r_cstall [INP], r_flits_local;
  logic [31:0]    r_retx [4], r_crc [4], r_dropped [4], r_rv_bad [4], r_faults [4], r_refused_cnt;
  logic [63:0]    ici_sent, ici_recv;
  logic           send_idle, send_ready;
  tp_ici_unit #(.W(W), .V(IciVcs), .FlitW(IciFlitW), .Engines(IciLocals)) u_ici (
    .clk_i,
    .rst_ni,
    .start_i          (u_start[UnitIci]),
    .instr_i          (u_instr[UnitIci]),
    .pc_i             (u_pc[UnitIci]),
    .ready_o          (send_ready),
    .idle_o           (send_idle),
    .cmpl_o           (u_cmpl[UnitIci]),
    .cmpl_sig_o       (u_sig[UnitIci]),
    .moving_o         (u_moving[UnitIci]),
    .err_o            (ici_err),
    .err_code_o       (ici_err_code),
    .err_pc_o         (ici_err_pc),
    .cfg_ok_i         (!r_err_cfg),
    .kx_i             (kx_q),
    .ky_i             (ky_q),
    .my_x_i           (my_x_q),
    .my_y_i           (my_y_q),
    .slice_x0_i       (sx0_q),
    .slice_y0_i       (sy0_q),
    .slice_w_i        (sw_q),
    .slice_h_i        (sh_q),
    .rd_req_o         (v_rd_req[NR-1]),
    .rd_addr_o        (v_rd_addr[NR-1]),
    .rd_gnt_i         (v_rd_gnt[NR-1]),
    .rd_rvalid_i      (v_rd_rvalid[NR-1]),
    .rd_rdata_i       (v_rd_rdata[NR-1]),
    .wr_req_o         (v_wr_req[NW-1]),
    .wr_addr_o        (v_wr_addr[NW-1]),
    .wr_data_o        (v_wr_data[NW-1]),
    .wr_gnt_i         (v_wr_gnt[NW-1]),
    .rsig_o           (rsig),
    .rx_end_o         (dbg_rx_end_o),
    .rx_src_o         (dbg_rx_src_o),
    .inj_valid_o      (inj_valid),
    .inj_ready_i      (inj_ready),
    .inj_flit_o       (inj_flit),
    .ej_valid_i       (ej_valid),
    .ej_ready_o       (ej_ready),
    .ej_flit_i        (ej_flit),
    .tx_busy_o        (tx_busy),
    .rx_busy_o        (rx_busy),
    .cnt_bytes_sent_o (ici_sent),
    .cnt_bytes_recv_o (ici_recv)
  );
  assign u_idle[UnitIci]  = send_idle;
  assign u_ready[UnitIci] = send_ready;
  // In flight on this chip: a send, an arrival being written, or a flit inside the router.
  always_comb begin
    ej_any        = 1'b0;
    r_flits_local = '0;
    for (int i = 0; i < int'(IciLocals); i++) begin
      ej_any        = ej_any || ej_valid[i];
      r_flits_local = r_flits_local + r_flits[P_L + i];
    end
  end
  assign ici_busy_o = !send_idle || rx_busy || tx_busy || ej_any || r_busy;

  tp_ici_router #(.V(IciVcs), .B(IciBuf), .FlitW(IciFlitW), .R(IciReplay), .SaIters(IciSaIters),
                  .ClassChoice(IciClassChoice), .Locals(IciLocals), .TurnRoom(IciTurnRoom)) u_router (
    .clk_i,
    .rst_ni,
    .kx_i               (kx_q),
    .ky_i               (ky_q),
    .my_x_i             (my_x_q),
    .my_y_i             (my_y_q),
    .slice_x0_i         (sx0_q),
    .slice_y0_i         (sy0_q),
    .slice_w_i          (sw_q),
    .slice_h_i          (sh_q),
    .tx_valid_o         (ici_tx_valid_o),
    .tx_data_o          (ici_tx_data_o),
    .rx_valid_i         (ici_rx_valid_i),
    .rx_data_i          (ici_rx_data_i),
    .rv_out_o           (ici_rv_out_o),
    .rv_in_i            (ici_rv_in_i),
    .fault_rate_i       (fault_q),
    .inj_valid_i        (inj_valid),
    .inj_ready_o        (inj_ready),
    .inj_flit_i         (inj_flit),
    .ej_valid_o         (ej_valid),
    .ej_ready_i         (ej_ready),
    .ej_flit_o          (ej_flit),
    .refused_o          (r_refused),
    .busy_o             (r_busy),
    .err_slice_o        (r_err_slice),
    .err_cfg_o          (r_err_cfg),
    .err_inj_o          (r_err_inj),
    .cnt_flits_o        (r_flits),
    .cnt_credit_stall_o (r_cstall),
    .cnt_retx_o         (r_retx),
    .cnt_crc_err_o      (r_crc),
    .cnt_dropped_o      (r_dropped),
    .cnt_rv_bad_o       (r_rv_bad),
    .cnt_faults_o       (r_faults),
    .cnt_refused_o      (r_refused_cnt)
  );

  // ---- counters (sw/isa/hw.json; docs/chip.md) ------------------------------------------------
  always_comb begin
    for (int k = 0; k < int'(NCnt); k++) cnt[k] = '0;
    cnt[CntCycles] = cnt_cycles;
    for (int q = 0; q < 4; q++) for (int k = 0; k < 4; k++) cnt[CntLoadBusy + 4 * q + k] = cnt_unit[q][k];
    for (int k = 0; k < 4; k++) cnt[CntIciBusy + k] = cnt_unit[UnitIci][k];
    cnt[CntBytesLoaded]     = bytes_ld;
    cnt[CntBytesStored]     = bytes_st;
    cnt[CntMxuRows]         = mxu_rows;
    cnt[CntMxuArrayBusy]    = mxu_busy;
    cnt[CntInstructions]    = cnt_instrs;
    cnt[CntVecRows]         = vpu_rows;
    cnt[CntVmemConflicts]   = cnt_conflicts;
    cnt[CntMxuMacs]         = mxu_macs;
    cnt[CntIciBytesSent]    = ici_sent;
    cnt[CntIciBytesReceived] = ici_recv;
    cnt[CntIciRefused]      = 64'(r_refused_cnt);
    for (int p = 0; p < 4; p++) begin
      cnt[CntIciFlitsN + p]       = 64'(r_flits[p]);
      cnt[CntIciRetxN + p]        = 64'(r_retx[p]);
      cnt[CntIciCreditStallN + p] = 64'(r_cstall[p]);
      cnt[CntIciCrcErrN + p]      = 64'(r_crc[p]);
    end
    cnt[CntIciFlitsLocal] = 64'(r_flits_local);  // ejected, over the local ports
  end

  /* verilator lint_off UNUSEDSIGNAL */
  logic unused_ok;
  logic unused_local;
  always_comb begin
    unused_local = 1'b0;
    for (int i = 0; i < int'(IciLocals); i++) unused_local = unused_local ^ r_refused[i] ^ (^r_cstall[P_L + i]);
  end
  assign unused_ok = ^{mem_rsp_write_i, cnt_off[11:9], cnt_off[2:0], host_off[11:10], host_off[1:0], unused_local,
                       r_dropped[0], r_dropped[1], r_dropped[2], r_dropped[3], r_rv_bad[0],
                       r_rv_bad[1], r_rv_bad[2], r_rv_bad[3], r_faults[0], r_faults[1], r_faults[2], r_faults[3]};
  /* verilator lint_on UNUSEDSIGNAL */
endmodule
