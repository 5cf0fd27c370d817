// ICI (inter-chip interconnect) definitions shared by the router and its link layer.
//
// Flit layout, LSB first (FW = 2 + VW + 4*CW + HOPW + FlitW bits):
//   [0] head  [1] tail  [2 +: VW] vc  then dst_x, dst_y, src_x, src_y (CW each), hops (HOPW),
//   data (FlitW). Routing fields are meaningful in head flits.
// Link word (forward, one per flit): {crc16, seq, flit}. Reverse word (every cycle, state):
//   {crc16, freed[V-1] .. freed[0], err, ack}: the receiver's next expected sequence number
//   (cumulative ack), its count of CRC errors (a change asks the sender to go back N), and per VC
//   the number of flits it has freed from its input buffer (credits, as running counters, so a
//   lost or corrupted reverse word costs nothing: the next one carries the same state).
// The widths come from sw/isa/hw.json ("ici"), generated into tp_hw_pkg, which the harnesses'
// C++ (isa::hw::ici) shares.
package tp_ici_pkg;
  localparam int unsigned CW   = tp_hw_pkg::IciCoordW;   // coordinate bits: tori up to 32 x 32
  localparam int unsigned HOPW = tp_hw_pkg::IciHopW;     // hop counter in the head flit
  localparam int unsigned SEQW = tp_hw_pkg::IciSeqW;     // link sequence numbers
  localparam int unsigned ERRW = tp_hw_pkg::IciErrW;     // receiver CRC error counter (mod 16)
  localparam int unsigned CNTW = tp_hw_pkg::IciCreditW;  // freed-credit counters (mod 256)
  localparam int unsigned CRCW = tp_hw_pkg::IciCrcW;     // CRC-16-CCITT, polynomial 0x1021, initial value 0xffff

  // Router ports: four torus links, then the local (injection/ejection) ports from P_L on
  // (tp_ici_router's Locals of them).
  localparam int unsigned P_N = 0;  // towards y + 1
  localparam int unsigned P_S = 1;  // towards y - 1
  localparam int unsigned P_E = 2;  // towards x + 1
  localparam int unsigned P_W = 3;  // towards x - 1
  localparam int unsigned P_L = 4;

  // Direction and dateline crossing in one dimension of the route (tp_ici_router; the ICI unit
  // picks its send engine by the first hop): go positive? wraps the wrap link?
  function automatic logic [1:0] ring_step(input logic [CW-1:0] here, input logic [CW-1:0] dst,
                                           input logic [CW:0] k, input logic full_ring);
    logic [CW:0] fwd, back;
    logic        pos, wraps;
    fwd  = ({1'b0, dst} >= {1'b0, here}) ? {1'b0, dst} - {1'b0, here} : {1'b0, dst} + k - {1'b0, here};
    back = k - fwd;
    // The shorter way; a tie (k even, half way round) goes positive to an even destination and
    // negative to an odd one: a fixed rule that splits tie traffic evenly between directions.
    if (full_ring) pos = (fwd < back) || ((fwd == back) && !dst[0]);
    else pos = (dst > here);             // inside a partial slice: never wrap
    if (pos) wraps = full_ring && ({1'b0, here} == k - 1'b1);
    else wraps = full_ring && (here == '0);
    return {pos, wraps};
  endfunction

  function automatic logic [CRCW-1:0] crc16_bit(input logic [CRCW-1:0] crc, input logic b);
    return {crc[CRCW-2:0], 1'b0} ^ ((crc[CRCW-1] ^ b) ? 16'h1021 : 16'h0000);
  endfunction
endpackage
