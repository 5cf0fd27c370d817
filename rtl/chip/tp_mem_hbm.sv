// The chip's memory port on HBM (docs/chip.md, docs/hbm.md): NC pseudo-channel controllers
// (tp_hbm_ctrl) fed one chip beat per cycle. A beat (one VMEM row, W bits) is Bpb = W / 256
// consecutive 32-byte bursts (1 to 64, a power of two). Up to 8 lie in one 8-burst block and so
// in one pseudo-channel; a wider beat spans S = Bpb / 8 blocks, which the address map puts on S
// different pseudo-channels (the block number's low bits XOR the rest: the S blocks differ only
// in their low log2 S bits), and the beat goes to all of them at once: a part of 8 bursts into
// each one's queue (so NC >= S). Each pseudo-channel has a queue of parts and sends their bursts
// to its controller one per cycle, so the pseudo-channels work in parallel and the port is not
// limited to one burst per cycle, as tp_hbm's single burst port is. Each read beat in flight has
// a tag (the controllers' request ID); a reorder buffer indexed by tag gathers the bursts of
// every part and hands the beats back in request order. Writes are posted: acknowledged when their beat is queued (a later read of the same
// place queues behind it in the same pseudo-channel, and the controller keeps same-address
// order), so a write waiting in a controller's write queue never holds up the reads.
module tp_mem_hbm #(
  parameter int unsigned W  = 256,  // chip beat: 1 to 64 bursts of 256 bits, a power of two
  parameter int unsigned NC = 2,    // pseudo-channels
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
  localparam int unsigned Bpb = W / 256,
  localparam int unsigned S   = (Bpb > 8) ? Bpb / 8 : 1,  // parts of a beat: pseudo-channels it spans
  localparam int unsigned Pb  = Bpb / S,                  // bursts in a part
  localparam int unsigned NB  = BankGroups * BanksPerGroup,
  localparam int unsigned BW  = $clog2(NB),
  localparam int unsigned LAW = RowW + BW + ColW,  // burst address within a pseudo-channel
  localparam int unsigned IdW = 6  // 63 read beats in flight (tag 63 is the writes' ID)
) (
  input  logic            clk_i,
  input  logic            rst_ni,      // the port: queues, tags, reorder buffer
  input  logic            hbm_rst_ni,  // the controllers
  // chip side
  input  logic            req_valid_i,
  output logic            req_ready_o,
  input  logic            req_write_i,
  input  logic [31:0]     req_addr_i,  // beat
  input  logic [3:0]      req_id_i,
  input  logic [W-1:0]    req_wdata_i,
  output logic            rsp_valid_o,
  input  logic            rsp_ready_i,
  output logic            rsp_write_o,
  output logic [3:0]      rsp_id_o,
  output logic [W-1:0]    rsp_rdata_o,
  output logic            rsp_err_o,
  output logic            idle_o,      // nothing in flight, every write in the DRAM
  output logic            err_mask_o,
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
  localparam int unsigned NT  = 2 ** IdW;
  localparam int unsigned CB  = (NC > 1) ? $clog2(NC) : 1;
  localparam int unsigned KW  = $clog2(Pb + 1);
  localparam int unsigned PW  = W / S;                  // a part's bits
  localparam int unsigned QW  = IdW + 1 + LAW + PW;     // queue entry: tag, write, first burst, data

  if (W % 256 != 0 || Bpb > 64 || (Bpb & (Bpb - 1)) != 0) begin : gen_bad_w
    $error("tp_mem_hbm: a beat of %0d bits is not 1 to 64 bursts of 256 bits, a power of two", W);
  end
  if (S > NC) begin : gen_bad_nc
    $error("tp_mem_hbm: a beat of %0d bursts spans %0d pseudo-channels, and there are %0d", Bpb, S, NC);
  end

  // ---- where a beat goes: burst address A = beat * Bpb; pseudo-channel (A >> 3) % NC --------
  // The pseudo-channel is the block number's low bits XOR every higher group of CB bits: a
  // matrix walked down its rows (a stride of a power of two blocks) still spreads over all
  // pseudo-channels. The rest of the block number and the burst in the block address the
  // pseudo-channel (sw/sim/chip_harness.h has the same map for the host's backdoor). Part j of a
  // beat of S parts is block beat * S + j: pseudo-channel pc ^ j.
  logic [63:0]    burst, blk;
  logic [CB-1:0]  pc;
  logic [CB-1:0]  part_pc    [S];
  logic [LAW-1:0] part_laddr [S];
  always_comb begin
    burst = 64'(req_addr_i) * 64'(Bpb);
    blk   = burst >> 3;
    pc    = '0;
    if (NC > 1) begin
      for (int k = 0; k < 64; k += CB) pc = pc ^ CB'(blk >> k);
    end
    for (int j = 0; j < int'(S); j++) begin
      part_pc[j] = pc ^ CB'(j);
      if (NC > 1) part_laddr[j] = LAW'({(blk + 64'(j)) >> CB, burst[2:0]});
      else part_laddr[j] = LAW'(burst + 64'(j * 8));
    end
  end

  // ---- read tags and the reorder buffer; posted write acknowledgements ----------------------
  localparam logic [IdW-1:0] WriteId = '1;
  logic [W-1:0]   rob_data_q [NT];
  logic [KW-1:0]  rob_cnt_q  [NT][S];  // bursts of each part answered
  logic [CB-1:0]  rob_pc_q   [NT];     // the beat's pseudo-channel (part 0's)
  logic           rob_err_q  [NT];
  logic [3:0]     rob_id_q   [NT];
  logic [IdW-1:0] tail_q, head_q;
  logic [IdW:0]   inflight_q;       // read beats
  logic           free, fire_req, fire_rd, fire_wr, rd_done, ack_valid, ack_in_ready;
  logic [3:0]     ack_id;
  logic [NC-1:0]  q_ready, q_empty;

  logic parts_ready, head_done;
  always_comb begin
    parts_ready = 1'b1;
    head_done   = 1'b1;
    for (int j = 0; j < int'(S); j++) begin
      parts_ready = parts_ready && q_ready[part_pc[j]];
      head_done   = head_done && rob_cnt_q[head_q][j] == KW'(Pb);
    end
  end
  assign free        = inflight_q != (IdW + 1)'(NT - 1);
  assign req_ready_o = parts_ready && (req_write_i ? ack_in_ready : free);
  assign fire_req    = req_valid_i && req_ready_o;
  // Reads first; a write's acknowledgement when no read beat is complete.
  assign rd_done     = inflight_q != '0 && head_done;
  assign rsp_valid_o = rd_done || ack_valid;
  assign rsp_write_o = !rd_done;
  assign rsp_id_o    = rd_done ? rob_id_q[head_q] : ack_id;
  assign rsp_rdata_o = rob_data_q[head_q];
  assign rsp_err_o   = rd_done && rob_err_q[head_q];
  assign fire_rd     = rsp_ready_i && rd_done;
  assign fire_wr     = rsp_ready_i && !rd_done && ack_valid;
  // Idle: no read in flight, no acknowledgement owed, and every posted write in the DRAM.
  logic [31:0] wr_out_q;  // write bursts the controllers have not answered yet
  logic [7:0]  wr_done;
  always_comb begin
    wr_done = '0;
    for (int c = 0; c < NC; c++) wr_done = wr_done + 8'(c_rsp_valid[c] && c_rsp_write[c]);
  end
  assign idle_o      = inflight_q == '0 && !ack_valid && &q_empty && wr_out_q == '0;

  tp_fifo #(.Width(4), .Depth(NT)) u_acks (
    .clk_i,
    .rst_ni,
    .valid_i (fire_req && req_write_i),
    .ready_o (ack_in_ready),
    .data_i  (req_id_i),
    .valid_o (ack_valid),
    .ready_i (fire_wr),
    .data_o  (ack_id)
  );

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      tail_q     <= '0;
      head_q     <= '0;
      inflight_q <= '0;
    end else begin
      if (fire_req && !req_write_i) tail_q <= (tail_q == IdW'(NT - 2)) ? '0 : tail_q + 1;
      if (fire_rd) head_q <= (head_q == IdW'(NT - 2)) ? '0 : head_q + 1;
      inflight_q <= inflight_q + (IdW + 1)'(fire_req && !req_write_i) - (IdW + 1)'(fire_rd);
    end
  end
  always_ff @(posedge clk_i or negedge hbm_rst_ni) begin
    if (!hbm_rst_ni) wr_out_q <= '0;
    else wr_out_q <= wr_out_q + ((fire_req && req_write_i) ? 32'(Bpb) : 32'd0) - 32'(wr_done);
  end

  // Controller responses (a part's bursts all come from one pseudo-channel, in order; part j of
  // a tag from its pseudo-channel rob_pc_q ^ j).
  logic           c_rsp_valid [NC], c_rsp_write [NC], c_rsp_err [NC], c_err_mask [NC];
  logic [IdW-1:0] c_rsp_id    [NC];
  logic [255:0]   c_rsp_rdata [NC];

  for (genvar t = 0; t < NT; t++) begin : gen_rob
    logic         hit [S], hit_err [S];
    logic [255:0] hit_data [S];
    always_comb begin
      for (int j = 0; j < int'(S); j++) begin
        hit[j]      = 1'b0;
        hit_err[j]  = 1'b0;
        hit_data[j] = '0;
      end
      for (int c = 0; c < NC; c++) begin
        for (int j = 0; j < int'(S); j++) begin
          if (c_rsp_valid[c] && !c_rsp_write[c] && c_rsp_id[c] == IdW'(t) && CB'(c) == (rob_pc_q[t] ^ CB'(j))) begin
            hit[j]      = 1'b1;
            hit_err[j]  = c_rsp_err[c];
            hit_data[j] = c_rsp_rdata[c];
          end
        end
      end
    end
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) begin
        for (int j = 0; j < int'(S); j++) rob_cnt_q[t][j] <= '0;
        rob_err_q[t] <= 1'b0;
        rob_id_q[t]  <= '0;
        rob_pc_q[t]  <= '0;
      end else if (fire_req && !req_write_i && tail_q == IdW'(t)) begin
        for (int j = 0; j < int'(S); j++) rob_cnt_q[t][j] <= '0;
        rob_err_q[t] <= 1'b0;
        rob_id_q[t]  <= req_id_i;
        rob_pc_q[t]  <= pc;
      end else begin
        for (int j = 0; j < int'(S); j++) begin
          if (hit[j]) begin
            rob_cnt_q[t][j] <= rob_cnt_q[t][j] + 1;
            if (hit_err[j]) rob_err_q[t] <= 1'b1;
          end
        end
      end
    end
    always_ff @(posedge clk_i) begin
      for (int j = 0; j < int'(S); j++)
        if (hit[j]) rob_data_q[t][PW * j + 256 * 32'(rob_cnt_q[t][j]) +: 256] <= hit_data[j];
    end
  end

  // ---- per pseudo-channel: a queue of parts, their bursts to the controller --------------------
  logic err_mask_any;
  always_comb begin
    err_mask_any = 1'b0;
    for (int c = 0; c < NC; c++) err_mask_any = err_mask_any | c_err_mask[c];
  end
  assign err_mask_o = err_mask_any;

  for (genvar c = 0; c < NC; c++) begin : gen_pc
    logic           h_valid, h_write, c_ready, pop;
    logic [QW-1:0]  h_entry;
    logic [IdW-1:0] h_tag;
    logic [LAW-1:0] h_addr;
    logic [PW-1:0]  h_data;
    logic [KW-1:0]  k_q;  // bursts of the head part sent
    // The part of this beat that goes here (at most one: the parts' pseudo-channels differ).
    logic           mine;
    logic [LAW-1:0] my_laddr;
    logic [PW-1:0]  my_data;
    always_comb begin
      mine     = 1'b0;
      my_laddr = '0;
      my_data  = '0;
      for (int j = 0; j < int'(S); j++) begin
        if (part_pc[j] == CB'(c)) begin
          mine     = 1'b1;
          my_laddr = part_laddr[j];
          my_data  = req_wdata_i[PW * j +: PW];
        end
      end
    end

    assign q_empty[c] = !h_valid;
    tp_fifo #(.Width(QW), .Depth(4)) u_beats (
      .clk_i,
      .rst_ni,
      .valid_i (fire_req && mine),
      .ready_o (q_ready[c]),
      .data_i  ({req_write_i ? WriteId : tail_q, req_write_i, my_laddr, my_data}),
      .valid_o (h_valid),
      .ready_i (pop),
      .data_o  (h_entry)
    );
    assign {h_tag, h_write, h_addr, h_data} = h_entry;
    assign pop = h_valid && c_ready && k_q == KW'(Pb - 1);
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) k_q <= '0;
      else if (h_valid && c_ready) k_q <= pop ? '0 : k_q + 1;
    end

    tp_hbm_ctrl #(
      .IdW(IdW), .QD(QD), .WQD(WQD), .BankGroups(BankGroups), .BanksPerGroup(BanksPerGroup), .RowW(RowW),
      .ColW(ColW), .BankLow(BankLow), .ClosedPage(ClosedPage), .HiWm(HiWm), .LoWm(LoWm), .StarveLimit(StarveLimit), .CL(CL),
      .CWL(CWL), .TRCD(TRCD), .TRP(TRP), .TRAS(TRAS), .TRC(TRC), .TCCDS(TCCDS), .TCCDL(TCCDL),
      .TRRDS(TRRDS), .TRRDL(TRRDL), .TFAW(TFAW), .TWTRS(TWTRS), .TWTRL(TWTRL), .TRTP(TRTP),
      .TWR(TWR), .TRFC(TRFC), .TREFI(TREFI),
      .PerBankRefresh(PerBankRefresh), .TRFCSB(TRFCSB), .TRREFD(TRREFD)
    ) u_ctrl (
      .clk_i,
      .rst_ni               (hbm_rst_ni),
      .req_valid_i          (h_valid),
      .req_ready_o          (c_ready),
      .req_write_i          (h_write),
      .req_addr_i           (h_addr + LAW'(k_q)),
      .req_id_i             (h_tag),
      .req_wdata_i          (h_data[256 * k_q +: 256]),
      .req_wmask_i          ('1),
      .rsp_valid_o          (c_rsp_valid[c]),
      .rsp_ready_i          (1'b1),
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

  /* verilator lint_off UNUSEDSIGNAL */
  logic unused_ok;
  assign unused_ok = ^burst;  // beat addresses are checked against the HBM size
  /* verilator lint_on UNUSEDSIGNAL */
endmodule
