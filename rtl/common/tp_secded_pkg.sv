// SECDED (72,64): an extended Hamming code over 64 data bits, for the HBM controller's ECC
// (docs/hbm.md). Codeword bit 0 is the overall parity; bits 1..71 are Hamming positions, the
// powers of two (1, 2, 4, .. 64) holding check bits and the other 64 the data bits in order.
// Any single-bit error is corrected; any double-bit error is detected.
package tp_secded_pkg;

  typedef struct packed {
    logic [63:0] data;
    logic        corrected;  // a single-bit error was found and corrected
    logic        fatal;      // a double-bit error: data is not reliable
  } secded_dec_t;

  function automatic logic [71:0] secded64_encode(input logic [63:0] data);
    logic [71:0] c;
    int unsigned k;
    c = '0;
    k = 0;
    for (int pos = 1; pos < 72; pos++) begin
      if ((pos & (pos - 1)) != 0) begin  // not a power of two: a data position
        c[pos] = data[k];
        k++;
      end
    end
    for (int i = 0; i < 7; i++) begin
      logic p;
      p = 1'b0;
      for (int pos = 1; pos < 72; pos++) begin
        if (((pos >> i) & 1) != 0) p = p ^ c[pos];
      end
      c[1 << i] = p;
    end
    c[0] = ^c[71:1];
    return c;
  endfunction

  function automatic secded_dec_t secded64_decode(input logic [71:0] code);
    secded_dec_t r;
    logic [6:0]  syn;
    logic        parity;
    logic [71:0] c;
    int unsigned k;
    syn = '0;
    for (int pos = 1; pos < 72; pos++) begin
      if (code[pos]) syn = syn ^ 7'(pos);
    end
    parity      = ^code;
    c           = code;
    r.corrected = 1'b0;
    r.fatal     = 1'b0;
    if (parity) begin
      // Odd number of flips: one, at position syn (0: the overall parity bit itself), unless
      // the syndrome points outside the word, which takes three or more.
      if (syn < 7'd72) begin
        r.corrected = 1'b1;
        if (syn != '0) c[syn] = !c[syn];
      end else begin
        r.fatal = 1'b1;
      end
    end else if (syn != '0) begin
      r.fatal = 1'b1;  // even number of flips with a non-zero syndrome: two
    end
    r.data = '0;
    k = 0;
    for (int pos = 1; pos < 72; pos++) begin
      if ((pos & (pos - 1)) != 0) begin
        r.data[k] = c[pos];
        k++;
      end
    end
    return r;
  endfunction

endpackage
