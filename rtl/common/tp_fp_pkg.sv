// tensorpod floating-point arithmetic shared by the MXU and (later) the vector unit.
//
// Numerics policy (docs/numerics.md): denormal inputs are read as signed zero (DAZ), denormal
// results are flushed to signed zero (FTZ), every NaN result is the canonical quiet NaN with a
// clear sign bit, rounding is to nearest even. The golden model (sw/golden/fp.h) implements the
// same policy on top of the host's IEEE arithmetic, so the two are independent implementations.
package tp_fp_pkg;

  localparam logic [31:0] FP32_QNAN = 32'h7fc0_0000;

  // Leading zeros of a non-zero 32-bit value, as a five-step binary search (cheap in Verilator's
  // C++ and a normal priority encoder in synthesis).
  function automatic logic [4:0] clz32(input logic [31:0] v);
    logic [31:0] x;
    logic [4:0]  n;
    x = v;
    n = '0;
    if (x[31:16] == '0) begin n[4] = 1'b1; x = x << 16; end
    if (x[31:24] == '0) begin n[3] = 1'b1; x = x << 8;  end
    if (x[31:28] == '0) begin n[2] = 1'b1; x = x << 4;  end
    if (x[31:30] == '0) begin n[1] = 1'b1; x = x << 2;  end
    if (x[31]    == 1'b0) begin n[0] = 1'b1; end
    return n;
  endfunction

  // bf16 x bf16 -> fp32. The 8x8-bit significand product fits fp32's 24 bits, so the result is
  // exact unless it overflows (to infinity) or underflows (flushed to zero).
  function automatic logic [31:0] bf16_mul(input logic [15:0] a, input logic [15:0] b);
    logic        s;
    logic [7:0]  ea, eb;
    logic        a_zero, b_zero, a_inf, b_inf, a_nan, b_nan;
    logic [15:0] m;
    logic [9:0]  e;  // biased exponent plus 127, 2 .. 509
    logic [22:0] frac;
    s      = a[15] ^ b[15];
    ea     = a[14:7];
    eb     = b[14:7];
    a_zero = (ea == 8'h00);
    b_zero = (eb == 8'h00);
    a_inf  = (ea == 8'hff) && (a[6:0] == '0);
    b_inf  = (eb == 8'hff) && (b[6:0] == '0);
    a_nan  = (ea == 8'hff) && (a[6:0] != '0);
    b_nan  = (eb == 8'hff) && (b[6:0] != '0);
    if (a_nan || b_nan || (a_inf && b_zero) || (a_zero && b_inf)) return FP32_QNAN;
    if (a_inf || b_inf) return {s, 8'hff, 23'h0};
    if (a_zero || b_zero) return {s, 31'h0};
    m = {8'h01, a[6:0]} * {8'h01, b[6:0]};  // in [2^14, 2^16)
    e = {2'b00, ea} + {2'b00, eb} + {9'h000, m[15]};
    if (m[15]) frac = {m[14:0], 8'h00};
    else       frac = {m[13:0], 9'h000};
    if (e >= 10'd382) return {s, 8'hff, 23'h0};  // biased exponent >= 255
    if (e <= 10'd127) return {s, 31'h0};         // biased exponent <= 0: flush
    e = e - 10'd127;
    return {s, e[7:0], frac};
  endfunction

  // fp32 + fp32 for two normal operands, round to nearest even, with three guard bits (guard,
  // round, sticky). The result may overflow (infinity) or fall below the normal range (flushed).
  function automatic logic [31:0] fp32_add_normal(input logic [31:0] a, input logic [31:0] b);
    logic [31:0] x, y, r;
    logic [7:0]  d;
    logic [26:0] mx, my, sh;
    logic [27:0] sum;
    logic [4:0]  lz;
    logic [9:0]  e;  // biased exponent, two's complement: may dip below zero before the flush
    /* verilator lint_off UNUSEDSIGNAL */
    logic [24:0] mant;  // carry, hidden bit (not stored), fraction
    /* verilator lint_on UNUSEDSIGNAL */
    logic        round_up;
    // |x| >= |y|
    if (a[30:0] < b[30:0]) begin x = b; y = a; end
    else                   begin x = a; y = b; end
    d  = x[30:23] - y[30:23];
    mx = {1'b1, x[22:0], 3'b000};
    my = {1'b1, y[22:0], 3'b000};
    if (d >= 8'd27) sh = 27'h1;  // only the sticky bit survives
    else sh = (my >> d) | {26'h0, (my & ~({27{1'b1}} << d)) != '0};
    if (x[31] != y[31]) sum = {1'b0, mx} - {1'b0, sh};
    else                sum = {1'b0, mx} + {1'b0, sh};
    e = {2'b00, x[30:23]};
    if (sum[27]) begin
      sum = {1'b0, sum[27:2], sum[1] | sum[0]};
      e   = e + 10'd1;
    end else if (!sum[26]) begin  // cancellation: only here is a full normalisation needed
      lz  = clz32({sum[26:0], 5'b11111});
      sum = sum << lz;
      e   = e - {5'b00000, lz};
    end
    round_up = sum[2] & (sum[1] | sum[0] | sum[3]);
    mant = {1'b0, sum[26:3]} + {24'h0, round_up};
    if (mant[24]) e = e + 10'd1;  // rounded up to the next power of two: fraction is zero
    if (sum[26:0] == '0) r = 32'h0;  // exact cancellation is +0 under round to nearest
    else if (e[9] || (e == '0)) r = {x[31], 31'h0};  // below the normal range: flush
    else if (e >= 10'd255) r = {x[31], 8'hff, 23'h0};  // overflow
    else r = {x[31], e[7:0], mant[22:0]};
    return r;
  endfunction

  // fp32 + fp32 under the policy: specials first, then the normal path.
  function automatic logic [31:0] fp32_add(input logic [31:0] a, input logic [31:0] b);
    logic a_nan, b_nan, a_inf, b_inf, a_zero, b_zero;
    logic [31:0] r;
    a_nan  = (a[30:23] == 8'hff) && (a[22:0] != '0);
    b_nan  = (b[30:23] == 8'hff) && (b[22:0] != '0);
    a_inf  = (a[30:23] == 8'hff) && (a[22:0] == '0);
    b_inf  = (b[30:23] == 8'hff) && (b[22:0] == '0);
    a_zero = (a[30:23] == 8'h00);
    b_zero = (b[30:23] == 8'h00);
    if (a_nan || b_nan || (a_inf && b_inf && (a[31] != b[31]))) r = FP32_QNAN;
    else if (a_inf) r = a;
    else if (b_inf) r = b;
    else if (a_zero && b_zero) r = {a[31] & b[31], 31'h0};
    else if (a_zero) r = b;
    else if (b_zero) r = a;
    else r = fp32_add_normal(a, b);
    return r;
  endfunction

  // The MXU's common case without a branch: acc + a * w for normal a and w, a normal product and
  // a normal or zero (or denormal: DAZ) accumulator, which bf16_mac_is_fast says. Every step is a
  // select, not an if, so that a C++ compiler can run a row of PEs in SIMD lanes (docs/mxu.md,
  // "Simulation speed"); outside that case the result is meaningless and bf16_mac must be used.
  // The same bits as fp32_add_normal(acc, product) in that case.
  function automatic logic [31:0] bf16_mac_fast(input logic [31:0] acc, input logic [15:0] a,
                                                input logic [15:0] w);
    logic [15:0] m;
    logic [9:0]  e, ex;
    logic [31:0] p, x, y, r;
    logic [7:0]  d;
    logic [4:0]  dd, lz;
    logic        c4, c3, c2, c1, c0;
    logic [26:0] mx, my, sh;
    logic [27:0] sum, s1, s2;
    logic [31:0] z;
    logic        lt, carry, canc, round_up;
    /* verilator lint_off UNUSEDSIGNAL */
    logic [24:0] mant;
    /* verilator lint_on UNUSEDSIGNAL */
    m  = {8'h01, a[6:0]} * {8'h01, w[6:0]};
    e  = {2'b00, a[14:7]} + {2'b00, w[14:7]} + {9'h000, m[15]};
    p  = {a[15] ^ w[15], 8'(e - 10'd127), m[15] ? {m[14:0], 8'h00} : {m[13:0], 9'h000}};
    lt = acc[30:0] < p[30:0];
    x  = lt ? p : acc;
    y  = lt ? acc : p;
    d  = x[30:23] - y[30:23];
    mx = {1'b1, x[22:0], 3'b000};
    my = {1'b1, y[22:0], 3'b000};
    dd = (d > 8'd26) ? 5'd26 : d[4:0];
    sh = (d > 8'd26) ? 27'h1 : ((my >> dd) | {26'h0, (my & ~({27{1'b1}} << dd)) != '0});
    sum = (x[31] != y[31]) ? {1'b0, mx} - {1'b0, sh} : {1'b0, mx} + {1'b0, sh};
    carry = sum[27];
    canc  = !sum[27] && !sum[26];
    s1 = {1'b0, sum[27:2], sum[1] | sum[0]};
    // leading zeros of {sum[26:0], 5'b11111}, as selects
    z = {sum[26:0], 5'b11111};
    // (whole variables, no bit of one written alone: that would carry its other bits from the
    // previous PE, a dependence that stops the vectorisation)
    c4 = (z[31:16] == '0); z = c4 ? z << 16 : z;
    c3 = (z[31:24] == '0); z = c3 ? z << 8 : z;
    c2 = (z[31:28] == '0); z = c2 ? z << 4 : z;
    c1 = (z[31:30] == '0); z = c1 ? z << 2 : z;
    c0 = !z[31];
    lz = {c4, c3, c2, c1, c0};
    s2 = sum << lz;
    ex = carry ? {2'b00, x[30:23]} + 10'd1 : (canc ? {2'b00, x[30:23]} - {5'b00000, lz} : {2'b00, x[30:23]});
    sum = carry ? s1 : (canc ? s2 : sum);
    round_up = sum[2] & (sum[1] | sum[0] | sum[3]);
    mant = {1'b0, sum[26:3]} + {24'h0, round_up};
    ex = mant[24] ? ex + 10'd1 : ex;
    r = (ex >= 10'd255) ? {x[31], 8'hff, 23'h0} : {x[31], ex[7:0], mant[22:0]};
    r = (ex[9] || (ex == '0)) ? {x[31], 31'h0} : r;
    r = (sum[26:0] == '0) ? 32'h0 : r;
    return (acc[30:23] == 8'h00) ? p : r;
  endfunction

  // Whether bf16_mac_fast's case holds (the sign bits and fractions do not matter).
  /* verilator lint_off UNUSEDSIGNAL */
  function automatic logic bf16_mac_is_fast(input logic [31:0] acc, input logic [15:0] a, input logic [15:0] w);
    logic [15:0] m;
    logic [9:0]  e;
    m = {8'h01, a[6:0]} * {8'h01, w[6:0]};
    e = {2'b00, a[14:7]} + {2'b00, w[14:7]} + {9'h000, m[15]};
    return (a[14:7] != 8'h00) && (a[14:7] != 8'hff) && (w[14:7] != 8'h00) && (w[14:7] != 8'hff) &&
           (acc[30:23] != 8'hff) && (e > 10'd127) && (e < 10'd382);
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  // One multiply-accumulate step of the MXU: acc + a * w, the product exact, one rounding.
  // The common case (normal operands, a normal product, a normal or zero accumulator) skips the
  // special-value checks; everything else takes the general path. Both give the same bits.
  function automatic logic [31:0] bf16_mac(input logic [31:0] acc, input logic [15:0] a,
                                           input logic [15:0] w);
    logic [7:0]  ea, ew;
    logic [15:0] m;
    logic [9:0]  e;  // biased product exponent plus 127
    logic [31:0] p, r;
    ea = a[14:7];
    ew = w[14:7];
    m  = {8'h01, a[6:0]} * {8'h01, w[6:0]};
    e  = {2'b00, ea} + {2'b00, ew} + {9'h000, m[15]};
    if ((ea != 8'h00) && (ea != 8'hff) && (ew != 8'h00) && (ew != 8'hff) && (acc[30:23] != 8'hff) &&
        (e > 10'd127) && (e < 10'd382)) begin
      p = {a[15] ^ w[15], 8'(e - 10'd127), m[15] ? {m[14:0], 8'h00} : {m[13:0], 9'h000}};
      r = (acc[30:23] == 8'h00) ? p : fp32_add_normal(acc, p);
    end else begin
      r = fp32_add(acc, bf16_mul(a, w));
    end
    return r;
  endfunction

endpackage
