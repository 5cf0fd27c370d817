// HBM controller for one pseudo-channel (docs/hbm.md).
//
// Requests (one burst each) wait in a queue; each cycle the scheduler issues at most one DRAM
// command, FR-FCFS: among requests allowed to go (the oldest of their ID, in the current read/write
// mode), the oldest row hit whose column command is legal now, else a precharge or activate for the
// oldest bank owner (each bank's oldest request needing another row; the current mode's first)
// whose command is legal now, so rows open in many banks at once. A request that waited StarveLimit
// cycles blocks the hits that would pass it. Writes collect until HiWm and drain down to LoWm;
// reads go first otherwise; a switch waits for the rows opened for the current mode's requests.
// Refresh is all-bank, every tREFI, postponed while work is pending but never more than MaxPostpone
// times; or with PerBankRefresh single-bank (REFSB), one bank every tREFI / banks, the others
// going on. The banks go in rounds, each once per round: of the banks left in the round that no
// queued request wants, the one activated last is closed and refreshed (when MaxPostpone are due
// and every bank left is wanted, the lowest, whatever is queued for it); once it is closed, its
// requests wait for its refresh, so that they cannot reopen it first; it then rests tRFCSB, and
// no activate follows within tRREFD. Every timing rule is tracked as the earliest cycle a
// command may issue. Write data is SECDED-encoded per 64 bits; reads are decoded, single-bit
// errors corrected and counted, double-bit errors reported with the response. With WQD > 0
// writes have a buffer of their own (WQD entries after the QD read entries), so a batch of writes
// waiting to drain does not take the reads' lookahead; only its entries hold write data. With
// WQD = 0 reads and writes share the QD entries.
module tp_hbm_ctrl
  import tp_secded_pkg::*;
#(
  parameter int unsigned IdW = 4,
  parameter int unsigned QD = 8,            // request queue entries (reads only if WQD > 0)
  parameter int unsigned WQD = 0,           // write buffer entries (0: writes share the QD)
  parameter int unsigned BankGroups = 4,
  parameter int unsigned BanksPerGroup = 4,
  parameter int unsigned RowW = 14,
  parameter int unsigned ColW = 5,          // bursts per row = 2^ColW
  parameter int unsigned BankLow = 0,       // address map: row|col|bank (1) or row|bank|col (0)
  parameter int unsigned ClosedPage = 0,
  parameter int unsigned HiWm = 6, LoWm = 2,
  parameter int unsigned StarveLimit = 512,  // cycles; long enough not to break write batches
  parameter int unsigned MaxPostpone = 8,
  parameter int unsigned PerBankRefresh = 0,  // 1: single-bank refresh (REFSB) instead of all-bank
  // Timing (controller cycles).
  parameter int unsigned CL = 14, CWL = 4, TRCD = 14, TRP = 14, TRAS = 34, TRC = 48,
  parameter int unsigned TCCDS = 1, TCCDL = 2, TRRDS = 4, TRRDL = 6, TFAW = 30,
  parameter int unsigned TWTRS = 4, TWTRL = 9, TRTP = 4, TWR = 16, TRFC = 260, TREFI = 3900,
  parameter int unsigned TRFCSB = 160, TRREFD = 8,  // single-bank refresh: the bank's rest, REFSB to ACT
  parameter int unsigned BurstCycles = 2,
  localparam int unsigned NB = BankGroups * BanksPerGroup,
  localparam int unsigned BW = $clog2(NB),
  localparam int unsigned AW = RowW + BW + ColW
) (
  input  logic            clk_i,
  input  logic            rst_ni,
  // Requests: one burst of 256 bits each.
  input  logic            req_valid_i,
  output logic            req_ready_o,
  input  logic            req_write_i,
  input  logic [AW-1:0]   req_addr_i,   // burst address
  input  logic [IdW-1:0]  req_id_i,
  input  logic [255:0]    req_wdata_i,
  input  logic [31:0]     req_wmask_i,  // byte enables
  // Responses: read data, or the acknowledgement of a write; in order per ID.
  output logic            rsp_valid_o,
  input  logic            rsp_ready_i,
  output logic            rsp_write_o,
  output logic [IdW-1:0]  rsp_id_o,
  output logic [255:0]    rsp_rdata_o,
  output logic            rsp_err_o,    // uncorrectable (double-bit) ECC error in the data
  output logic            err_mask_o,   // sticky: a write mask enabled part of a 64-bit word
  // DRAM commands (to the device model) and read data back from it, CL cycles after RD.
  output logic            cmd_valid_o,
  output logic [2:0]      cmd_o,        // 0 ACT, 1 PRE, 2 RD, 3 WR, 4 REF, 5 REFSB
  output logic [BW-1:0]   cmd_bank_o,
  output logic [RowW-1:0] cmd_row_o,
  output logic [ColW-1:0] cmd_col_o,
  output logic [287:0]    cmd_wdata_o,  // four SECDED codewords
  output logic [35:0]     cmd_wmask_o,  // byte enables of the codeword bytes
  input  logic            rd_valid_i,
  input  logic [287:0]    rd_data_i,
  // Counters.
  output logic [31:0]     cnt_reads_o, cnt_writes_o, cnt_hits_o, cnt_misses_o, cnt_conflicts_o,
  output logic [31:0]     cnt_refreshes_o, cnt_ecc_corrected_o, cnt_ecc_fatal_o,
  output logic [31:0]     cnt_bus_busy_o,  // data-bus cycles used (BurstCycles per RD or WR)
  output logic [31:0]     cnt_rd_latency_sum_o, cnt_rd_latency_max_o
);
  // Command codes on cmd_o (sw/isa/hw.json "hbm_commands", generated into tp_hw_pkg).
  localparam logic [2:0] C_ACT = tp_hw_pkg::HbmCmdAct, C_PRE = tp_hw_pkg::HbmCmdPre, C_RD = tp_hw_pkg::HbmCmdRd,
                         C_WR = tp_hw_pkg::HbmCmdWr, C_REF = tp_hw_pkg::HbmCmdRef, C_REFSB = tp_hw_pkg::HbmCmdRefsb;
  // Refreshes fall due every tREFI (all-bank) or every tREFI / banks (one bank each).
  localparam int unsigned RefEvery = (PerBankRefresh != 0) ? TREFI / (BankGroups * BanksPerGroup) : TREFI;
  localparam int unsigned QT = QD + WQD;   // all entries: reads in 0..QD-1, writes after
  localparam int unsigned DQ = (WQD > 0) ? WQD : QD;  // entries that hold write data
  localparam int unsigned QW = $clog2(QT);
  localparam int unsigned DW = (DQ > 1) ? $clog2(DQ) : 1;
  localparam int unsigned TW = 32;  // cycle counter; "earliest" times are absolute cycles
  localparam int unsigned GW = (BankGroups > 1) ? $clog2(BankGroups) : 1;

  typedef struct packed {
    logic            valid;
    logic            write;
    logic [IdW-1:0]  id;
    logic [BW-1:0]   bank;
    logic [RowW-1:0] row;
    logic [ColW-1:0] col;
    logic [TW-1:0]   arrived;
    logic            touched;  // the scheduler has issued ACT or PRE for it (not a row hit)
    logic            conflict; // ... and the first was PRE (another row was open)
  } entry_t;

  entry_t        q_q [QT];
  logic [255:0]  qdata_q [DQ];
  logic [31:0]   qmask_q [DQ];
  logic [TW-1:0] now_q;

  // ---------------------------------------------------------------------------------------------
  // Timing state: the earliest cycle each kind of command may issue
  // ---------------------------------------------------------------------------------------------
  logic [TW-1:0] b_act_q [NB], b_pre_q [NB], b_col_q [NB];     // per bank
  logic          b_open_q [NB];
  logic [RowW-1:0] b_row_q [NB];
  logic [TW-1:0] g_act_q [BankGroups], g_col_q [BankGroups], g_rd_q [BankGroups];  // per group
  logic [TW-1:0] act_q, col_q, wr_q, ref_ok_q;                 // channel-wide
  logic [TW-1:0] faw_q [4];                                    // last four activates
  logic [TW-1:0] bus_q;                                        // data bus free from
  logic          bus_read_q;

  function automatic logic [GW-1:0] group_of(input logic [BW-1:0] b);
    return GW'(b / BW'(BanksPerGroup));
  endfunction

  // ---------------------------------------------------------------------------------------------
  // Request intake: decode the address into the first free entry of the request's kind (a read
  // in 0..QD-1; a write after them if it has a buffer of its own, else there too)
  // ---------------------------------------------------------------------------------------------
  logic [QW-1:0] free_idx;
  logic          has_free;
  always_comb begin
    has_free = 1'b0;
    free_idx = '0;
    for (int i = QT - 1; i >= 0; i--) begin
      if (!q_q[i].valid && ((WQD == 0) || ((i >= int'(QD)) == req_write_i))) begin
        has_free = 1'b1;
        free_idx = QW'(i);
      end
    end
  end
  assign req_ready_o = has_free;

  // The write-data slot of entry i.
  function automatic logic [DW-1:0] dslot(input logic [QW-1:0] i);
    return (WQD > 0) ? DW'(i - QW'(QD)) : DW'(i);
  endfunction

  logic [BW-1:0]   in_bank;
  logic [RowW-1:0] in_row;
  logic [ColW-1:0] in_col;
  always_comb begin
    if (BankLow != 0) begin
      in_bank = req_addr_i[BW-1:0];
      in_col  = req_addr_i[BW +: ColW];
    end else begin
      in_col  = req_addr_i[ColW-1:0];
      in_bank = req_addr_i[ColW +: BW];
    end
    in_row = req_addr_i[AW-1 -: RowW];
  end

  // ---------------------------------------------------------------------------------------------
  // Scheduling
  // ---------------------------------------------------------------------------------------------
  logic [$clog2(QT+1)-1:0] nwrites;
  logic wmode_q, wmode_d;  // draining writes
  logic switch_held;       // a mode switch waits for the rows opened for this mode
  logic [QT-1:0] opened;   // entry i may go and its row was opened for it
  logic [3:0] pend_ref_q, pend_ref_d;  // refreshes due
  logic [TW-1:0] next_ref_q;
  logic refreshing;  // closing banks for a refresh: no new activates or column commands
  // Single-bank refresh goes in rounds: each bank once per round, in any order.
  logic [NB-1:0] rdone_q;  // banks refreshed in this round
  logic          rheld_q;  // the refresh has closed rbank_q: it is refreshed next, whatever comes
  logic [BW-1:0] rbank_q;
  logic          sb_hold;  // rbank's requests wait (its activates and column commands)
  logic sb_due, sb_force;  // a refresh is due; MaxPostpone are (a bank closes whatever is queued)
  logic [NB-1:0] bank_busy;  // a queued request is for bank b
  logic [BW-1:0] rbank;      // the bank to refresh: of those left in the round that no request
  logic rbank_ok;            // wants, the one activated last (a stream has left it; the banks it
                             // goes to next are the ones it has not used for longest); when forced
                             // and every bank left is wanted, the lowest (its commands then wait)
  logic sb_issue;          // this cycle's command is the single-bank refresh's (PRE or REFSB)
  always_comb begin
    sb_due = (PerBankRefresh != 0) && (pend_ref_q != '0);
    sb_force = sb_due && (pend_ref_q >= 4'(MaxPostpone));
    bank_busy = '0;
    for (int i = 0; i < QT; i++)
      if (q_q[i].valid) bank_busy[q_q[i].bank] = 1'b1;
    rbank = '0;
    rbank_ok = 1'b0;
    for (int b = 0; b < NB; b++) begin  // an idle bank, whenever there is one (not once held)
      if (!rdone_q[b] && !bank_busy[b] && (!rbank_ok || b_act_q[b] > b_act_q[rbank])) begin
        rbank = BW'(b);
        rbank_ok = 1'b1;
      end
    end
    // Forced: the lowest bank left, a choice that holds until its refresh (whatever its
    // precharge does to the banks' timing), so that its requests cannot reopen it meanwhile.
    if (!rbank_ok && sb_force) begin
      for (int b = NB - 1; b >= 0; b--) begin
        if (!rdone_q[b]) begin
          rbank = BW'(b);
          rbank_ok = 1'b1;
        end
      end
    end
    if (rheld_q) begin
      rbank = rbank_q;
      rbank_ok = 1'b1;
    end
    sb_hold = rheld_q || sb_force;
  end

  logic [QT-1:0] eligible, hit, can_col, older_same_id;
  logic [QT-1:0] mode_ok;  // the request's kind may go in the current read/write mode
  logic          any_open, all_closed_long;
  always_comb begin
    nwrites = '0;
    for (int i = 0; i < QT; i++) nwrites = nwrites + ($bits(nwrites))'(q_q[i].valid && q_q[i].write);
    wmode_d = wmode_q;
    if (nwrites >= ($bits(nwrites))'(HiWm)) wmode_d = 1'b1;
    else if (nwrites <= ($bits(nwrites))'(LoWm)) wmode_d = 1'b0;
    // A switch waits for the rows already opened for this mode's requests (they go within tRCD):
    // the other kind would otherwise close them unused, an activate lost (about 6% of them on
    // random traffic). Meanwhile this mode opens no new rows (switch_held, below). Only with a
    // write buffer of its own: in a shared queue the other kind's arrivals fill the entries while
    // the mode waits (a tiny chip's matmul came out 1.1% slower).
    switch_held = (WQD > 0) && (wmode_d != wmode_q) && (opened != '0);
    if (switch_held) wmode_d = wmode_q;
    // While the oldest request has waited StarveLimit cycles, the mode is its kind: neither
    // reads nor writes wait forever behind a stream of the other.
    if (mode_starving) wmode_d = q_q[mode_old_idx].write;
    any_open = 1'b0;
    all_closed_long = 1'b1;  // tRP (and tRC) met on every bank: a refresh may start
    for (int b = 0; b < NB; b++) begin
      any_open = any_open || b_open_q[b];
      all_closed_long = all_closed_long && (now_q >= b_act_q[b]);
    end
  end

  // The oldest request its order lets go, whatever the read/write mode (for the mode's
  // starvation bound).
  logic          mode_starving;
  logic [QW-1:0] mode_old_idx;
  always_comb begin
    logic found;
    found        = 1'b0;
    mode_old_idx = '0;
    for (int i = 0; i < QT; i++) begin
      if (q_q[i].valid && !older_same_id[i] && (!found || q_q[i].arrived < q_q[mode_old_idx].arrived)) begin
        found        = 1'b1;
        mode_old_idx = QW'(i);
      end
    end
    mode_starving = found && (now_q - q_q[mode_old_idx].arrived >= TW'(StarveLimit));
  end

  // Order: an entry may go only if no older entry of its ID, and no older entry to the same
  // address (of any ID), is waiting: per-ID response order and read-after-write hold.
  always_comb begin
    logic any_rd, any_wr;
    any_rd = 1'b0;
    any_wr = 1'b0;
    for (int i = 0; i < QT; i++) begin
      older_same_id[i] = 1'b0;
      for (int j = 0; j < QT; j++) begin
        if (j != i && q_q[j].valid && q_q[i].valid &&
            ((q_q[j].id == q_q[i].id) ||
             (q_q[j].bank == q_q[i].bank && q_q[j].row == q_q[i].row && q_q[j].col == q_q[i].col)) &&
            (q_q[j].arrived < q_q[i].arrived || (q_q[j].arrived == q_q[i].arrived && j < i)))
          older_same_id[i] = 1'b1;
      end
    end
    for (int i = 0; i < QT; i++) begin
      if (q_q[i].valid && !older_same_id[i]) begin
        any_rd = any_rd || !q_q[i].write;
        any_wr = any_wr || q_q[i].write;
      end
    end
    for (int i = 0; i < QT; i++) begin
      // In write mode writes go (reads too if no write can); in read mode reads (writes if none).
      mode_ok[i] = wmode_q ? (q_q[i].write || !any_wr) : (!q_q[i].write || !any_rd);
      eligible[i] = q_q[i].valid && !older_same_id[i] && mode_ok[i];
      hit[i] = eligible[i] && b_open_q[q_q[i].bank] && (b_row_q[q_q[i].bank] == q_q[i].row);
      opened[i] = hit[i] && q_q[i].touched;
      // A single-bank refresh that is forced, or has closed its bank, stops that bank's column
      // commands (and, below, its activates), so that it can close and stay closed.
      if (sb_hold && q_q[i].bank == rbank)
        can_col[i] = 1'b0;
      else if (q_q[i].write)
        can_col[i] = hit[i] && (now_q >= b_col_q[q_q[i].bank]) && (now_q >= col_q) &&
                     (now_q >= g_col_q[group_of(q_q[i].bank)]) && (now_q + CWL >= bus_q + (bus_read_q ? 1 : 0));
      else
        can_col[i] = hit[i] && (now_q >= b_col_q[q_q[i].bank]) && (now_q >= col_q) &&
                     (now_q >= g_col_q[group_of(q_q[i].bank)]) && (now_q >= wr_q) &&
                     (now_q >= g_rd_q[group_of(q_q[i].bank)]) && (now_q + CL >= bus_q + (bus_read_q ? 0 : 1));
    end
  end

  // Pick: the oldest issuable hit; in a cycle without one, prepare a row: of the requests that
  // need their row opened, each bank's oldest owns the bank, and the oldest owner whose command
  // (a precharge, if no request that may go wants the open row, or an activate) is legal now gets
  // it. So rows open in as many banks as tRRD, tFAW and the command bus allow while other banks
  // stream, instead of one row at a time behind the oldest request's tRP and tRCD.
  logic          pick_col, pick_any, pick_prep;
  logic [QW-1:0] col_idx, old_idx, prep_idx;
  logic          starving;
  logic [QT-1:0] wants_open;  // a request not held by its order hits the row open in entry i's bank
  logic [QT-1:0] held_by_bank;  // entry j waits behind an older request (its ID, its address) on its bank
  logic [NB-1:0] cur_need;      // a request of the current mode needs bank b's row changed
  logic [QT-1:0] needs_prep;  // entry i's row is not open and it may prepare its bank
  logic [QT-1:0] prep_ok;     // ... and its command is legal now
  logic          act_ok_ch;   // channel-wide activate timing (tRRD_S, tFAW, refresh)
  always_comb begin
    act_ok_ch = now_q >= act_q && now_q >= faw_q[0] && now_q >= ref_ok_q;
    for (int j = 0; j < QT; j++) begin
      held_by_bank[j] = 1'b0;
      for (int k = 0; k < QT; k++)
        if (k != j && q_q[k].valid && q_q[j].valid && q_q[k].bank == q_q[j].bank &&
            (q_q[k].id == q_q[j].id || (q_q[k].row == q_q[j].row && q_q[k].col == q_q[j].col)) &&
            (q_q[k].arrived < q_q[j].arrived || (q_q[k].arrived == q_q[j].arrived && k < j)))
          held_by_bank[j] = 1'b1;
    end
    for (int i = 0; i < QT; i++) begin
      // The current mode's requests come first: they ignore the other kind's hits, and the
      // other kind opens rows only in banks that no request of the current mode needs (so the
      // rows for the next mode are ready when it comes, without taking banks from this one). A
      // hit that waits behind an older request of its ID (or address) on the same bank does not
      // keep the row open: that older request needs this bank, so the precharge goes instead of
      // both waiting for the starvation limit.
      wants_open[i] = 1'b0;
      for (int j = 0; j < QT; j++)
        if (q_q[j].valid && (mode_ok[j] || !mode_ok[i]) && !held_by_bank[j] && q_q[j].bank == q_q[i].bank &&
            q_q[j].row == b_row_q[q_q[i].bank])
          wants_open[i] = 1'b1;
    end
    cur_need = '0;
    for (int i = 0; i < QT; i++)
      if (q_q[i].valid && mode_ok[i] && !(b_open_q[q_q[i].bank] && b_row_q[q_q[i].bank] == q_q[i].row))
        cur_need[q_q[i].bank] = 1'b1;
    for (int i = 0; i < QT; i++) begin
      logic owner;
      owner = q_q[i].valid && !(b_open_q[q_q[i].bank] && b_row_q[q_q[i].bank] == q_q[i].row) &&
              (mode_ok[i] || !cur_need[q_q[i].bank]);
      for (int j = 0; j < QT; j++)
        if (j != i && q_q[j].valid && (mode_ok[j] || !mode_ok[i]) && q_q[j].bank == q_q[i].bank &&
            !(b_open_q[q_q[j].bank] && b_row_q[q_q[j].bank] == q_q[j].row) &&
            (q_q[j].arrived < q_q[i].arrived || (q_q[j].arrived == q_q[i].arrived && j < i)))
          owner = 1'b0;  // an older request (of the current mode first) needs this bank's row changed
      needs_prep[i] = owner && (!b_open_q[q_q[i].bank] || !wants_open[i]) &&
                      !(switch_held && mode_ok[i] && !q_q[i].touched);
      prep_ok[i] = needs_prep[i] &&
                   (b_open_q[q_q[i].bank] ? (now_q >= b_pre_q[q_q[i].bank])
                                          : (act_ok_ch && now_q >= b_act_q[q_q[i].bank] &&
                                             now_q >= g_act_q[group_of(q_q[i].bank)] &&
                                             !(sb_hold && q_q[i].bank == rbank)));
    end
    pick_col  = 1'b0;
    col_idx   = '0;
    pick_any  = 1'b0;
    old_idx   = '0;
    pick_prep = 1'b0;
    prep_idx  = '0;
    for (int i = 0; i < QT; i++) begin
      if (eligible[i] && (!pick_any || q_q[i].arrived < q_q[old_idx].arrived)) begin
        pick_any = 1'b1;
        old_idx  = QW'(i);
      end
    end
    starving = pick_any && (now_q - q_q[old_idx].arrived >= TW'(StarveLimit));
    for (int i = 0; i < QT; i++) begin
      // A starving request's bank is its own: no other request's hit or row there passes it.
      // Other banks go on as usual (stopping them too would serve one request at a time, and
      // after a refresh or a burst every queued request would starve in turn: a collapse).
      logic mine;
      mine = starving && i != int'(old_idx) && q_q[i].bank == q_q[old_idx].bank;
      if (can_col[i] && !mine && (!pick_col || q_q[i].arrived < q_q[col_idx].arrived)) begin
        pick_col = 1'b1;
        col_idx  = QW'(i);
      end
      // Opening a row for a request that may not be served yet is safe (ordering only matters
      // for column commands, which produce the responses), and it is what hides tRP and tRCD.
      if (prep_ok[i] && !mine &&
          (!pick_prep || (mode_ok[i] && !mode_ok[prep_idx]) ||
           (mode_ok[i] == mode_ok[prep_idx] && q_q[i].arrived < q_q[prep_idx].arrived))) begin
        pick_prep = 1'b1;
        prep_idx  = QW'(i);
      end
    end
    if (starving && !hit[old_idx]) begin
      // Its own row first: a precharge even if another request wants the open row; when its
      // command is not legal yet, the other banks' preparation may use the cycle.
      if (b_open_q[q_q[old_idx].bank] ? (now_q >= b_pre_q[q_q[old_idx].bank])
                                      : (act_ok_ch && now_q >= b_act_q[q_q[old_idx].bank] &&
                                         now_q >= g_act_q[group_of(q_q[old_idx].bank)] &&
                                         !(sb_hold && q_q[old_idx].bank == rbank))) begin
        pick_prep = 1'b1;
        prep_idx  = old_idx;
        pick_col  = pick_col && q_q[col_idx].bank != q_q[old_idx].bank;
      end
    end
  end

  // Banks whose open row some queued request wants (the closed-page policy keeps those open).
  logic [NB-1:0] bank_wanted;
  always_comb begin
    bank_wanted = '0;
    for (int i = 0; i < QT; i++)
      if (q_q[i].valid && q_q[i].row == b_row_q[q_q[i].bank]) bank_wanted[q_q[i].bank] = 1'b1;
  end

  // The command of this cycle.
  logic          issue;
  logic [2:0]    cmd;
  logic [BW-1:0] cbank;
  logic [RowW-1:0] crow;
  logic [ColW-1:0] ccol;
  logic [QW-1:0] served;    // queue entry completed by a column command
  logic          serve;
  logic [BW-1:0] pre_bank;  // a bank to close (refresh, closed page)
  logic          pre_any;

  always_comb begin
    issue = 1'b0;
    cmd = C_ACT;
    cbank = '0;
    crow = '0;
    ccol = '0;
    serve = 1'b0;
    served = '0;
    pend_ref_d = pend_ref_q + 4'(now_q == next_ref_q);
    refreshing = (PerBankRefresh == 0) && (pend_ref_q != '0) && ((!pick_any) || (pend_ref_q >= 4'(MaxPostpone)));
    pre_any = 1'b0;
    pre_bank = '0;
    sb_issue = 1'b0;
    if (sb_due && rbank_ok &&
        (b_open_q[rbank] ? (now_q >= b_pre_q[rbank])
                         : (now_q >= b_act_q[rbank] && now_q >= act_q && now_q >= g_act_q[group_of(rbank)] &&
                              now_q >= ref_ok_q))) begin
      // Single-bank refresh: close the bank, then refresh it (ref_ok_q: tRREFD since the last).
      issue = 1'b1;
      sb_issue = 1'b1;
      cmd = b_open_q[rbank] ? C_PRE : C_REFSB;
      cbank = rbank;
      if (!b_open_q[rbank]) pend_ref_d = pend_ref_d - 1'b1;
    end else if (refreshing) begin
      // Close every bank, then refresh.
      for (int b = NB - 1; b >= 0; b--) begin
        if (b_open_q[b] && now_q >= b_pre_q[b]) begin
          pre_any = 1'b1;
          pre_bank = BW'(b);
        end
      end
      if (pre_any) begin
        issue = 1'b1;
        cmd = C_PRE;
        cbank = pre_bank;
      end else if (!any_open && now_q >= ref_ok_q && all_closed_long) begin
        issue = 1'b1;
        cmd = C_REF;
        pend_ref_d = pend_ref_d - 1'b1;
      end
    end else if (pick_col && col_room) begin
      issue = 1'b1;
      cmd = q_q[col_idx].write ? C_WR : C_RD;
      cbank = q_q[col_idx].bank;
      crow = q_q[col_idx].row;
      ccol = q_q[col_idx].col;
      serve = 1'b1;
      served = col_idx;
    end else if (pick_prep) begin
      cbank = q_q[prep_idx].bank;
      crow = q_q[prep_idx].row;
      if (b_open_q[cbank] && b_row_q[cbank] != crow) begin
        if (now_q >= b_pre_q[cbank]) begin
          issue = 1'b1;
          cmd = C_PRE;
        end
      end else if (!b_open_q[cbank]) begin
        if (now_q >= b_act_q[cbank] && now_q >= act_q && now_q >= g_act_q[group_of(cbank)] &&
            now_q >= faw_q[0] && now_q >= ref_ok_q) begin
          issue = 1'b1;
          cmd = C_ACT;
        end
      end
    end
    // Closed-page policy: close an idle open bank that no queued request hits.
    if (!issue && (ClosedPage != 0) && !refreshing) begin
      for (int b = NB - 1; b >= 0; b--) begin
        if (b_open_q[b] && !bank_wanted[b] && now_q >= b_pre_q[b]) begin
          issue = 1'b1;
          cmd = C_PRE;
          cbank = BW'(b);
        end
      end
    end
  end

  assign cmd_valid_o = issue;
  assign cmd_o       = cmd;
  assign cmd_bank_o  = cbank;
  assign cmd_row_o   = crow;
  assign cmd_col_o   = ccol;

  // Write data: four codewords, byte enables widened to whole codewords' bytes.
  always_comb begin
    for (int w = 0; w < 4; w++) begin
      cmd_wdata_o[w * 72 +: 72] = secded64_encode(qdata_q[dslot(served)][w * 64 +: 64]);
      // A partial write would need a read-modify-write to keep ECC whole: only whole 64-bit
      // words are written (a word with any byte enabled is written whole).
      cmd_wmask_o[w * 9 +: 9] = (qmask_q[dslot(served)][w * 8 +: 8] != '0) ? 9'h1ff : 9'h000;
    end
  end

  // ---------------------------------------------------------------------------------------------
  // State updates
  // ---------------------------------------------------------------------------------------------
  function automatic logic [TW-1:0] max2(input logic [TW-1:0] a, input logic [TW-1:0] b);
    return (a > b) ? a : b;
  endfunction

  logic accept;
  assign accept = req_valid_i && req_ready_o;

  // Responses owed (column commands issued, responses not yet taken): column commands issue
  // only while the response FIFO could take every owed response, so read data, which cannot be
  // stalled, always has room.
  localparam int unsigned RspDepth = 16;
  logic [$clog2(RspDepth+1)-1:0] owed_q;
  logic col_room;
  assign col_room = (owed_q < ($bits(owed_q))'(RspDepth));

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      now_q <= TW'(1);
      for (int i = 0; i < QT; i++) q_q[i] <= '0;
      for (int b = 0; b < NB; b++) begin
        b_act_q[b] <= '0; b_pre_q[b] <= '0; b_col_q[b] <= '0; b_open_q[b] <= 1'b0; b_row_q[b] <= '0;
      end
      for (int g = 0; g < BankGroups; g++) begin
        g_act_q[g] <= '0; g_col_q[g] <= '0; g_rd_q[g] <= '0;
      end
      act_q <= '0; col_q <= '0; wr_q <= '0; ref_ok_q <= '0; bus_q <= '0;
      bus_read_q <= 1'b1;
      for (int k = 0; k < 4; k++) faw_q[k] <= '0;
      wmode_q <= 1'b0;
      pend_ref_q <= '0;
      next_ref_q <= TW'(RefEvery);
      rdone_q <= '0;
      rheld_q <= 1'b0;
      rbank_q <= '0;
    end else begin
      now_q <= now_q + 1'b1;
      wmode_q <= wmode_d;
      pend_ref_q <= pend_ref_d;
      if (now_q == next_ref_q) next_ref_q <= next_ref_q + TW'(RefEvery);
      if (accept) begin
        q_q[free_idx] <= '{valid: 1'b1, write: req_write_i, id: req_id_i, bank: in_bank, row: in_row,
                           col: in_col, arrived: now_q, touched: 1'b0, conflict: 1'b0};
        if (req_write_i) begin
          qdata_q[dslot(free_idx)] <= req_wdata_i;
          qmask_q[dslot(free_idx)] <= req_wmask_i;
        end
      end
      if (serve) q_q[served].valid <= 1'b0;
      if (issue && !refreshing && !sb_issue && !serve && (cmd == C_ACT || cmd == C_PRE) && pick_prep &&
          cbank == q_q[prep_idx].bank && !q_q[prep_idx].touched) begin
        q_q[prep_idx].touched  <= 1'b1;
        q_q[prep_idx].conflict <= (cmd == C_PRE);
      end
      if (sb_issue && cmd == C_PRE) begin  // the bank is now the refresh's until its REFSB
        rheld_q <= 1'b1;
        rbank_q <= cbank;
      end
      if (issue) begin
        case (cmd)
          C_ACT: begin
            b_open_q[cbank] <= 1'b1;
            b_row_q[cbank]  <= crow;
            b_col_q[cbank]  <= now_q + TW'(TRCD);
            b_pre_q[cbank]  <= now_q + TW'(TRAS);
            b_act_q[cbank]  <= now_q + TW'(TRC);
            act_q <= now_q + TW'(TRRDS);
            g_act_q[group_of(cbank)] <= now_q + TW'(TRRDL);
            faw_q[0] <= faw_q[1]; faw_q[1] <= faw_q[2]; faw_q[2] <= faw_q[3];
            faw_q[3] <= now_q + TW'(TFAW);
          end
          C_PRE: begin
            b_open_q[cbank] <= 1'b0;
            b_act_q[cbank]  <= max2(b_act_q[cbank], now_q + TW'(TRP));
          end
          C_RD: begin
            col_q <= now_q + TW'(TCCDS);
            g_col_q[group_of(cbank)] <= now_q + TW'(TCCDL);
            b_pre_q[cbank] <= max2(b_pre_q[cbank], now_q + TW'(TRTP));
            bus_q <= now_q + TW'(CL + BurstCycles);
            bus_read_q <= 1'b1;
          end
          C_WR: begin
            col_q <= now_q + TW'(TCCDS);
            g_col_q[group_of(cbank)] <= now_q + TW'(TCCDL);
            b_pre_q[cbank] <= max2(b_pre_q[cbank], now_q + TW'(CWL + BurstCycles + TWR));
            bus_q <= now_q + TW'(CWL + BurstCycles);
            bus_read_q <= 1'b0;
            wr_q <= now_q + TW'(CWL + BurstCycles + TWTRS);
            g_rd_q[group_of(cbank)] <= now_q + TW'(CWL + BurstCycles + TWTRL);
          end
          C_REFSB: begin  // the bank rests tRFCSB; no activate anywhere, nor REFSB, within tRREFD
            b_act_q[cbank] <= max2(b_act_q[cbank], now_q + TW'(TRFCSB));
            act_q <= max2(act_q, now_q + TW'(TRREFD));
            ref_ok_q <= now_q + TW'(TRREFD);
            // The round ends when every bank has had its refresh.
            rdone_q <= ((rdone_q | (NB'(1) << cbank)) == '1) ? '0 : (rdone_q | (NB'(1) << cbank));
            rheld_q <= 1'b0;
          end
          default: begin  // REF
            ref_ok_q <= now_q + TW'(TRFC);
            for (int b = 0; b < NB; b++) b_act_q[b] <= max2(b_act_q[b], now_q + TW'(TRFC));
          end
        endcase
      end
    end
  end

  // Completion order = column command order: {write, id, arrived}. Read data (which arrives CL
  // cycles after its RD, in order) waits in rdf until its entry reaches the head.
  localparam int unsigned CQW = 1 + IdW + TW;
  logic           cq_valid, cq_pop;
  logic [CQW-1:0] cq_out;
  logic           cq_write;
  logic [IdW-1:0] cq_id;
  logic [TW-1:0]  cq_arrived;
  logic cq_ready, rdf_ready;
  tp_fifo #(.Width(CQW), .Depth(RspDepth), .CheckInput(1'b0)) u_cq (
    .clk_i,
    .rst_ni,
    .valid_i (serve),
    .ready_o (cq_ready),
    .data_i  ({q_q[served].write, q_q[served].id, q_q[served].arrived}),
    .valid_o (cq_valid),
    .ready_i (cq_pop),
    .data_o  (cq_out)
  );
  assign {cq_write, cq_id, cq_arrived} = cq_out;

  // Read data queue as they come from the DRAM, and are decoded at the queue's output: the decode
  // then depends on flops only, not on the inputs (in a Verilated model, logic fed by the inputs
  // is evaluated again on every eval(), about a quarter of a chip-on-HBM model's time).
  logic         rdf_valid, rdf_pop;
  logic [287:0] rdf_raw;
  tp_fifo #(.Width(288), .Depth(RspDepth), .CheckInput(1'b0)) u_rdf (
    .clk_i,
    .rst_ni,
    .valid_i (rd_valid_i),
    .ready_o (rdf_ready),
    .data_i  (rd_data_i),
    .valid_o (rdf_valid),
    .ready_i (rdf_pop),
    .data_o  (rdf_raw)
  );

  logic [255:0] rdata;
  logic         corr, fatal;
  logic [256:0] rdf_out;
  always_comb begin
    corr  = 1'b0;
    fatal = 1'b0;
    rdata = '0;
    for (int w = 0; w < 4; w++) begin
      secded_dec_t d;
      d = secded64_decode(rdf_raw[w * 72 +: 72]);
      rdata[w * 64 +: 64] = d.data;
      corr  = corr | d.corrected;
      fatal = fatal | d.fatal;
    end
    rdf_out = {rdata, fatal};
  end

  logic               rsp_push, rsp_fifo_ready;
  logic [IdW+258-1:0] rsp_in, rsp_out;
  always_comb begin
    rsp_push = cq_valid && (cq_write || rdf_valid);
    cq_pop   = rsp_push;  // the FIFO has room: owed_q counts everything in it
    rdf_pop  = rsp_push && !cq_write;
    rsp_in   = cq_write ? {1'b1, cq_id, 256'h0, 1'b0} : {1'b0, cq_id, rdf_out};
  end

  tp_fifo #(.Width(IdW + 258), .Depth(RspDepth), .CheckInput(1'b0)) u_rsp (
    .clk_i,
    .rst_ni,
    .valid_i (rsp_push),
    .ready_o (rsp_fifo_ready),
    .data_i  (rsp_in),
    .valid_o (rsp_valid_o),
    .ready_i (rsp_ready_i),
    .data_o  (rsp_out)
  );
  assign {rsp_write_o, rsp_id_o, rsp_rdata_o, rsp_err_o} = rsp_out;

  // ---------------------------------------------------------------------------------------------
  // Counters
  // ---------------------------------------------------------------------------------------------
  logic [31:0] reads_q, writes_q, hits_q, misses_q, conflicts_q, refs_q, busy_q, corr_q, fatal_q;
  logic [31:0] lat_sum_q, lat_max_q, lat;
  assign lat = 32'(now_q - cq_arrived);
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      owed_q <= '0;
      {reads_q, writes_q, hits_q, misses_q, conflicts_q, refs_q, busy_q, corr_q, fatal_q} <= '0;
      lat_sum_q <= '0;
      lat_max_q <= '0;
    end else begin
      owed_q <= owed_q + ($bits(owed_q))'(serve) - ($bits(owed_q))'(rsp_valid_o && rsp_ready_i);
      if (serve) begin
        reads_q     <= reads_q + 32'(!q_q[served].write);
        writes_q    <= writes_q + 32'(q_q[served].write);
        hits_q      <= hits_q + 32'(!q_q[served].touched);
        misses_q    <= misses_q + 32'(q_q[served].touched && !q_q[served].conflict);
        conflicts_q <= conflicts_q + 32'(q_q[served].conflict);
      end
      refs_q  <= refs_q + 32'(issue && (cmd == C_REF || cmd == C_REFSB));
      busy_q  <= busy_q + ((issue && (cmd == C_RD || cmd == C_WR)) ? 32'(BurstCycles) : 32'h0);
      corr_q  <= corr_q + 32'(rdf_pop && corr);
      fatal_q <= fatal_q + 32'(rdf_pop && fatal);
      if (rdf_pop) begin
        lat_sum_q <= lat_sum_q + lat;
        if (lat > lat_max_q) lat_max_q <= lat;
      end
    end
  end
  // ECC covers whole 64-bit words, so byte enables come in groups of 8 (no read-modify-write).
  logic partial, err_mask_q;
  always_comb begin
    partial = 1'b0;
    for (int w = 0; w < 4; w++)
      partial = partial || ((req_wmask_i[w * 8 +: 8] != 8'h00) && (req_wmask_i[w * 8 +: 8] != 8'hff));
  end
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) err_mask_q <= 1'b0;
    else err_mask_q <= err_mask_q || (accept && req_write_i && partial);
  end
  assign err_mask_o = err_mask_q;

  assign cnt_reads_o          = reads_q;
  assign cnt_writes_o         = writes_q;
  assign cnt_hits_o           = hits_q;
  assign cnt_misses_o         = misses_q;
  assign cnt_conflicts_o      = conflicts_q;
  assign cnt_refreshes_o      = refs_q;
  assign cnt_bus_busy_o       = busy_q;
  assign cnt_ecc_corrected_o  = corr_q;
  assign cnt_ecc_fatal_o      = fatal_q;
  assign cnt_rd_latency_sum_o = lat_sum_q;
  assign cnt_rd_latency_max_o = lat_max_q;

`ifndef SYNTHESIS
  always_ff @(posedge clk_i) begin
    if (rst_ni) begin
      a_rsp_room: assert (!rsp_push || rsp_fifo_ready)
        else $error("tp_hbm_ctrl: response FIFO overflow (owed-response accounting is wrong)");
      a_cq_room: assert (!serve || cq_ready)
        else $error("tp_hbm_ctrl: completion queue overflow");
      a_rdf_room: assert (!rd_valid_i || rdf_ready)
        else $error("tp_hbm_ctrl: read data with no room (more reads in flight than owed)");
    end
  end
`endif
endmodule
