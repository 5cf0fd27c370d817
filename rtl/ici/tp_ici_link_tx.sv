// Link-layer sender of one torus port: sequence numbers, CRC, a replay buffer for go-back-N,
// and the credit counters of the downstream router's input buffers.
//
// Every accepted flit gets the next sequence number and is kept in the replay buffer until the
// receiver acknowledges it (cumulatively). When the receiver reports a new CRC error, or nothing
// is acknowledged for Timeout cycles, transmission goes back to the oldest unacknowledged flit.
module tp_ici_link_tx
  import tp_ici_pkg::*;
#(
  parameter int unsigned FW      = 32,  // flit bits
  parameter int unsigned V       = 2,   // virtual channels
  parameter int unsigned B       = 8,   // downstream buffer depth per VC (credits)
  parameter int unsigned R       = 16,  // replay buffer depth (flits in flight)
  parameter int unsigned Timeout = 256,  // > the longest round trip (2 x 64-cycle links + R)
  parameter int unsigned Room    = 1,   // credits that room_o asks for (1..B)
  parameter logic [15:0] FaultSeed = 16'hace1,  // LFSR seed of the fault-injection hook
  localparam int unsigned VW     = (V > 1) ? $clog2(V) : 1,
  localparam int unsigned LW     = FW + SEQW + CRCW,
  localparam int unsigned RVW    = SEQW + ERRW + V * CNTW + CRCW
) (
  input  logic          clk_i,
  input  logic          rst_ni,
  // Flits from the switch.
  input  logic          in_valid_i,
  output logic          in_ready_o,
  input  logic [FW-1:0] in_flit_i,
  input  logic [VW-1:0] in_vc_i,
  output logic [V-1:0]  credit_ok_o,  // the downstream buffer of VC v has room
  output logic [V-1:0]  room_o,       // ... for Room flits (the router's turns into Y)
  // The wire.
  output logic          tx_valid_o,
  output logic [LW-1:0] tx_data_o,
  input  logic [RVW-1:0] rv_data_i,
  // Test hook: flip one bit of a sent word with probability fault_rate_i / 65536 (0: off).
  input  logic [15:0]   fault_rate_i,
  // Counters.
  output logic [31:0]   cnt_retx_o,    // flits sent again
  output logic [31:0]   cnt_rv_bad_o,  // reverse words rejected by their CRC
  output logic [31:0]   cnt_faults_o   // bits flipped by the test hook
);
  localparam int unsigned RIW = $clog2(R);

  logic [SEQW-1:0] next_q, next_d, ack_q, ack_d, snd_q, snd_d;
  logic [ERRW-1:0] err_q, err_d;
  logic [CNTW-1:0] sent_q [V], sent_d [V], freed_q [V], freed_d [V];
  logic [FW-1:0]   rbuf_q [R];
  logic [$clog2(Timeout+1)-1:0] idle_q, idle_d;
  logic            tx_valid_d;
  logic [LW-1:0]   tx_data_d;
  logic [31:0]     retx_q, retx_d, rv_bad_q, rv_bad_d;
  logic            accept, rewind, rv_ok, ack_adv;
  logic [SEQW-1:0] occ, rv_ack;
  logic [ERRW-1:0] rv_err;
  logic [CRCW-1:0] rv_crc;
  logic [FW-1:0]   send_flit;
  logic [SEQW-1:0] send_seq, snd_from;
  logic            send;
  logic [CRCW-1:0] tx_crc;
  logic [SEQW+FW-1:0] tx_body;

  assign occ        = next_q - ack_q;
  assign in_ready_o = (occ < SEQW'(R));
  assign accept     = in_valid_i && in_ready_o;

  // Reverse word: check its CRC (only when it changed: it is state, repeated every cycle).
  logic [RVW-1:0] rv_last_q;
  logic           rv_last_ok_q, rv_new;
  assign rv_new = (rv_data_i != rv_last_q);
  always_comb begin
    rv_crc = 16'hffff;
    if (rv_new) begin
      for (int i = RVW - CRCW - 1; i >= 0; i--) rv_crc = crc16_bit(rv_crc, rv_data_i[i]);
      rv_ok = (rv_crc == rv_data_i[RVW-1 -: CRCW]);
    end else begin
      rv_ok = rv_last_ok_q;
    end
  end
  assign rv_ack = rv_data_i[SEQW-1:0];
  assign rv_err = rv_data_i[SEQW +: ERRW];
  // A cumulative ack may only move forward, and never past what was accepted for sending.
  assign ack_adv = rv_ok && (rv_ack != ack_q) && ((rv_ack - ack_q) <= (next_q - ack_q));

  always_comb begin
    ack_d   = ack_adv ? rv_ack : ack_q;
    err_d   = rv_ok ? rv_err : err_q;
    idle_d  = ((occ != '0) && !ack_adv) ? idle_q + 1'b1 : '0;
    rewind  = (rv_ok && (rv_err != err_q)) || (idle_q == ($bits(idle_q))'(Timeout));
    if (rewind) idle_d = '0;
    next_d  = next_q + SEQW'(accept);
    // Send from the replay buffer first; a new flit goes straight out when nothing is waiting.
    // After a go-back, an acknowledgement already on its way may overtake the resend point:
    // skip what the receiver has.
    snd_from  = ((ack_d - ack_q) > (snd_q - ack_q)) ? ack_d : snd_q;
    send      = 1'b0;
    send_flit = in_flit_i;
    send_seq  = snd_from;
    snd_d     = snd_from;
    if (rewind) begin
      snd_d = ack_d;
    end else if (snd_from != next_q) begin
      send      = 1'b1;
      send_flit = rbuf_q[snd_from[RIW-1:0]];
      snd_d     = snd_from + 1'b1;
    end else if (accept) begin
      send  = 1'b1;
      snd_d = snd_from + 1'b1;
    end
    tx_valid_d = send;
    tx_body    = {send_seq, send_flit};
    tx_crc     = 16'hffff;
    if (send) begin
      for (int i = SEQW + FW - 1; i >= 0; i--) tx_crc = crc16_bit(tx_crc, tx_body[i]);
    end
    tx_data_d = {tx_crc, tx_body};
    retx_d   = retx_q + ((rewind && (snd_q - ack_q) >= (ack_d - ack_q)) ? {24'h0, SEQW'(snd_q - ack_d)} : 32'h0);
    rv_bad_d = rv_bad_q + 32'(rv_new && !rv_ok);
    for (int v = 0; v < V; v++) begin
      sent_d[v]  = sent_q[v] + CNTW'(accept && (in_vc_i == VW'(v)));
      freed_d[v] = rv_ok ? rv_data_i[SEQW + ERRW + v * CNTW +: CNTW] : freed_q[v];
      credit_ok_o[v] = ((sent_q[v] - freed_q[v]) < CNTW'(B));
      room_o[v]      = ({1'b0, sent_q[v] - freed_q[v]} + (CNTW + 1)'(Room) <= (CNTW + 1)'(B));
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      next_q       <= '0;
      ack_q        <= '0;
      snd_q        <= '0;
      err_q        <= '0;
      idle_q       <= '0;
      tx_valid_o   <= 1'b0;
      retx_q       <= '0;
      rv_bad_q     <= '0;
      rv_last_q    <= '0;
      rv_last_ok_q <= 1'b0;
      for (int v = 0; v < V; v++) begin
        sent_q[v]  <= '0;
        freed_q[v] <= '0;
      end
    end else begin
      next_q       <= next_d;
      ack_q        <= ack_d;
      snd_q        <= snd_d;
      err_q        <= err_d;
      idle_q       <= idle_d;
      tx_valid_o   <= tx_valid_d;
      retx_q       <= retx_d;
      rv_bad_q     <= rv_bad_d;
      rv_last_q    <= rv_data_i;
      rv_last_ok_q <= rv_ok;
      for (int v = 0; v < V; v++) begin
        sent_q[v]  <= sent_d[v];
        freed_q[v] <= freed_d[v];
      end
    end
  end

  // Fault injection: a 16-bit maximal-length LFSR (x^16 + x^14 + x^13 + x^11 + 1) steps once
  // per sent word; its value decides whether to flip and which bit.
  logic [15:0] lfsr_q, lfsr_d;
  logic        fault;
  logic [LW-1:0] fault_mask;
  logic [31:0] faults_q;
  always_comb begin
    lfsr_d     = tx_valid_d ? {lfsr_q[14:0], lfsr_q[15] ^ lfsr_q[13] ^ lfsr_q[12] ^ lfsr_q[10]} : lfsr_q;
    fault      = tx_valid_d && (fault_rate_i != '0) && (lfsr_q < fault_rate_i);
    fault_mask = '0;
    if (fault) fault_mask[32'({lfsr_q[7:0], lfsr_q[15:8]}) % LW] = 1'b1;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      lfsr_q   <= FaultSeed;
      faults_q <= '0;
    end else begin
      lfsr_q   <= lfsr_d;
      faults_q <= faults_q + 32'(fault);
    end
  end
  assign cnt_faults_o = faults_q;

  always_ff @(posedge clk_i) begin
    if (accept) rbuf_q[next_q[RIW-1:0]] <= in_flit_i;
    if (tx_valid_d) tx_data_o <= tx_data_d ^ fault_mask;
  end

  assign cnt_retx_o   = retx_q;
  assign cnt_rv_bad_o = rv_bad_q;

  if (FaultSeed == '0) begin : gen_bad_seed
    $error("tp_ici_link_tx: FaultSeed must not be zero (the LFSR would stay at zero)");
  end

  if (R > (1 << (SEQW - 1)) || (1 << RIW) != R) begin : gen_bad_r
    $error("tp_ici_link_tx: R = %0d must be a power of two no larger than %0d", R, 1 << (SEQW - 1));
  end
endmodule
