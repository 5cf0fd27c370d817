// Vector memory (docs/chip.md): Rows rows of W bits in Banks banks, row r in bank r % Banks at
// index r / Banks. Each bank does one read and one write per cycle; the read and write clients
// that want the same bank in the same cycle are arbitrated per bank: read client 0 first (the
// MXU's activation stream, which must not miss a cycle), the rest round-robin. A read granted
// in cycle t returns its row in cycle t+1 (rvalid). A read and a write of the same row in the
// same cycle return the old row.
module tp_vmem #(
  parameter int unsigned W     = 256,
  parameter int unsigned Rows  = 1024,
  parameter int unsigned Banks = 4,
  parameter int unsigned NR    = 2,  // read clients
  parameter int unsigned NW    = 2,  // write clients
  localparam int unsigned AW   = 20
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  input  logic [NR-1:0]         rd_req_i,
  input  logic [AW-1:0]         rd_addr_i [NR],
  output logic [NR-1:0]         rd_gnt_o,
  output logic [NR-1:0]         rd_rvalid_o,
  output logic [W-1:0]          rd_rdata_o [NR],
  input  logic [NW-1:0]         wr_req_i,
  input  logic [AW-1:0]         wr_addr_i [NW],
  input  logic [W-1:0]          wr_data_i [NW],
  output logic [NW-1:0]         wr_gnt_o,
  output logic [63:0]           cnt_conflicts_o  // client-cycles lost to another client
);
  localparam int unsigned Depth = Rows / Banks;
  localparam int unsigned BW    = (Banks > 1) ? $clog2(Banks) : 1;
  localparam int unsigned IW    = (Depth > 1) ? $clog2(Depth) : 1;
  localparam int unsigned RIW   = (NR > 1) ? $clog2(NR) : 1;
  localparam int unsigned WIW   = (NW > 1) ? $clog2(NW) : 1;

  if (Rows % Banks != 0) begin : gen_bad_rows
    $error("tp_vmem: Rows (%0d) is not a multiple of Banks (%0d)", Rows, Banks);
  end

  logic [W-1:0] mem_q [Banks][Depth];

  logic [BW-1:0] rd_bank [NR];
  logic [IW-1:0] rd_idx  [NR];
  logic [BW-1:0] wr_bank [NW];
  logic [IW-1:0] wr_idx  [NW];
  always_comb begin
    for (int c = 0; c < NR; c++) begin
      rd_bank[c] = BW'(rd_addr_i[c] % AW'(Banks));
      rd_idx[c]  = IW'(rd_addr_i[c] / AW'(Banks));
    end
    for (int c = 0; c < NW; c++) begin
      wr_bank[c] = BW'(wr_addr_i[c] % AW'(Banks));
      wr_idx[c]  = IW'(wr_addr_i[c] / AW'(Banks));
    end
  end

  logic [NR-1:0]  rd_gnt_bank [Banks];
  logic [NW-1:0]  wr_gnt_bank [Banks];
  logic           rd_any [Banks];
  logic           wr_any [Banks];
  logic [RIW-1:0] rd_who [Banks];
  logic [WIW-1:0] wr_who [Banks];

  for (genvar b = 0; b < Banks; b++) begin : gen_bank
    logic [NR-1:0] rreq;
    logic [NW-1:0] wreq;
    logic [NR-1:0] rreq_rr;
    always_comb begin
      for (int c = 0; c < NR; c++) rreq[c] = rd_req_i[c] && (rd_bank[c] == BW'(b));
      for (int c = 0; c < NW; c++) wreq[c] = wr_req_i[c] && (wr_bank[c] == BW'(b));
      // Read client 0 has priority; the others share what it leaves, round-robin.
      rreq_rr = rreq;
      if (rreq[0]) rreq_rr = '0;
    end
    logic          rr_any;
    logic [RIW-1:0] rr_who;
    tp_rr_arb #(.N(NR)) u_rd_arb (
      .clk_i,
      .rst_ni,
      .req_i       (rreq_rr),
      .advance_i   (rr_any),
      .gnt_valid_o (rr_any),
      .gnt_idx_o   (rr_who)
    );
    assign rd_any[b] = rreq[0] || rr_any;
    assign rd_who[b] = rreq[0] ? '0 : rr_who;
    tp_rr_arb #(.N(NW)) u_wr_arb (
      .clk_i,
      .rst_ni,
      .req_i       (wreq),
      .advance_i   (wr_any[b]),
      .gnt_valid_o (wr_any[b]),
      .gnt_idx_o   (wr_who[b])
    );
    always_comb begin
      rd_gnt_bank[b] = '0;
      wr_gnt_bank[b] = '0;
      if (rd_any[b]) rd_gnt_bank[b][rd_who[b]] = 1'b1;
      if (wr_any[b]) wr_gnt_bank[b][wr_who[b]] = 1'b1;
    end
    always_ff @(posedge clk_i) begin
      if (wr_any[b]) mem_q[b][wr_idx[wr_who[b]]] <= wr_data_i[wr_who[b]];
    end
  end

  always_comb begin
    rd_gnt_o = '0;
    wr_gnt_o = '0;
    for (int b = 0; b < Banks; b++) begin
      rd_gnt_o |= rd_gnt_bank[b];
      wr_gnt_o |= wr_gnt_bank[b];
    end
  end

  logic [63:0] conflicts_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rd_rvalid_o <= '0;
      conflicts_q <= '0;
    end else begin
      rd_rvalid_o <= rd_gnt_o;
      conflicts_q <= conflicts_q + 64'($countones(rd_req_i & ~rd_gnt_o)) +
                     64'($countones(wr_req_i & ~wr_gnt_o));
    end
  end
  for (genvar c = 0; c < NR; c++) begin : gen_rdata
    always_ff @(posedge clk_i) begin
      if (rd_gnt_o[c]) rd_rdata_o[c] <= mem_q[rd_bank[c]][rd_idx[c]];
    end
  end
  assign cnt_conflicts_o = conflicts_q;
endmodule
