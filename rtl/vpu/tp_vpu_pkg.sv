// tensorpod vector-unit arithmetic: one lane of every vector operation (docs/chip.md, "Vector
// operations, per lane").
//
// Numerics policy (docs/numerics.md): DAZ on the inputs, FTZ on the results, canonical NaN
// 0x7fc00000, round to nearest even. The golden model (sw/golden/vpu_ops.h) computes the same
// with the host's IEEE float unit; this package is a bit-level algorithm, and the tests compare
// the two bit for bit (tb/vpu/test_vpu_lane.cpp).
package tp_vpu_pkg;

  import tp_fp_pkg::*;

  // fp32 x fp32, IEEE round to nearest even, then the policy. A product below the normal range
  // is rounded at the denormal precision (2^-149, IEEE gradual underflow) first and flushed to
  // a signed zero after, so only a product that rounds up to 2^-126 survives (as 2^-126). This
  // is exactly what the host's IEEE multiply followed by a flush gives.
  function automatic logic [31:0] fp32_mul(input logic [31:0] a, input logic [31:0] b);
    logic        s;
    logic [7:0]  ea, eb;
    logic        a_zero, b_zero, a_inf, b_inf, a_nan, b_nan;
    logic [47:0] p;         // 24 x 24-bit significand product, in [2^46, 2^48)
    logic [9:0]  be;        // biased result exponent, two's complement (may be <= 0)
    logic [23:0] mant;      // hidden bit and fraction before rounding
    /* verilator lint_off UNUSEDSIGNAL */
    logic [24:0] rmant;     // after rounding (bit 24: carried out; bit 23, the hidden bit, unused)
    /* verilator lint_on UNUSEDSIGNAL */
    logic        guard, sticky, round_up;
    logic [9:0]  esum;      // ea + eb, 2 .. 508
    logic [7:0]  sh;        // right shift of p onto the denormal grid (denormal case), >= 24
    logic [47:0] q;
    s      = a[31] ^ b[31];
    ea     = a[30:23];
    eb     = b[30:23];
    a_zero = (ea == 8'h00);  // zero or denormal (DAZ)
    b_zero = (eb == 8'h00);
    a_inf  = (ea == 8'hff) && (a[22:0] == '0);
    b_inf  = (eb == 8'hff) && (b[22:0] == '0);
    a_nan  = (ea == 8'hff) && (a[22:0] != '0);
    b_nan  = (eb == 8'hff) && (b[22:0] != '0);
    if (a_nan || b_nan || (a_inf && b_zero) || (a_zero && b_inf)) return FP32_QNAN;
    if (a_inf || b_inf) return {s, 8'hff, 23'h0};
    if (a_zero || b_zero) return {s, 31'h0};
    p    = {24'h0, 1'b1, a[22:0]} * {24'h0, 1'b1, b[22:0]};
    esum = {2'b00, ea} + {2'b00, eb};
    // value = p * 2^(esum - 300); normalised exponent biased: esum - 127 (+1 if p[47]).
    be   = esum - 10'd127 + {9'h000, p[47]};
    if (!be[9] && (be != '0)) begin
      // Normal range (before rounding).
      if (p[47]) begin
        mant   = p[47:24];
        guard  = p[23];
        sticky = (p[22:0] != '0);
      end else begin
        mant   = p[46:23];
        guard  = p[22];
        sticky = (p[21:0] != '0);
      end
      round_up = guard & (sticky | mant[0]);
      rmant    = {1'b0, mant} + {24'h0, round_up};
      if (rmant[24]) be = be + 10'd1;  // rounded up to the next power of two: fraction is zero
      if (be >= 10'd255) return {s, 8'hff, 23'h0};
      return {s, be[7:0], rmant[22:0]};
    end
    // Below the normal range: the denormal grid is 2^-149, so the result in units of 2^-149 is
    // p * 2^(esum - 151), a right shift by 151 - esum (>= 24 here).
    if (esum < 10'd103) return {s, 31'h0};  // shift > 48: even the guard bit is gone
    sh       = 8'(10'd151 - esum);
    q        = p >> sh;
    guard    = p[6'(sh - 8'd1)];
    sticky   = (p & ~({48{1'b1}} << (sh - 8'd1))) != '0;
    round_up = guard & (sticky | q[0]);
    q        = q + {47'h0, round_up};
    // q <= 2^23: only a round-up to exactly 2^23 is a normal number (2^-126); the rest flush.
    if (q[23]) return {s, 8'h01, 23'h0};
    return {s, 31'h0};
  endfunction

  // fp32 -> bf16, round to nearest even on the upper 16 bits; NaN -> 0x7fc0; a denormal -> the
  // zero of its sign; values that round past the largest bf16 become infinity.
  function automatic logic [15:0] fp32_to_bf16(input logic [31:0] x);
    logic [31:0] y;
    /* verilator lint_off UNUSEDSIGNAL */
    logic [31:0] r;  // the low half is rounded away
    /* verilator lint_on UNUSEDSIGNAL */
    if ((x[30:23] == 8'hff) && (x[22:0] != '0)) return 16'h7fc0;
    y = (x[30:23] == 8'h00) ? {x[31], 31'h0} : x;
    r = y + 32'h0000_7fff + {31'h0, y[16]};
    return r[31:16];
  endfunction

  /* verilator lint_off UNUSEDSIGNAL */
  function automatic logic fp32_is_nan(input logic [31:0] x);  // the sign does not matter
    return (x[30:23] == 8'hff) && (x[22:0] != '0);
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  // DAZ: a denormal reads as the zero of its sign.
  function automatic logic [31:0] fp32_daz(input logic [31:0] x);
    return (x[30:23] == 8'h00) ? {x[31], 31'h0} : x;
  endfunction

  // IEEE a < b and a == b after DAZ; false when either is a NaN; +0 == -0.
  function automatic logic fp32_lt(input logic [31:0] a, input logic [31:0] b);
    logic [31:0] x, y;
    logic        x_zero, y_zero;
    if (fp32_is_nan(a) || fp32_is_nan(b)) return 1'b0;
    x = fp32_daz(a);
    y = fp32_daz(b);
    x_zero = (x[30:0] == '0);
    y_zero = (y[30:0] == '0);
    if (x_zero && y_zero) return 1'b0;
    if (x[31] != y[31]) return x[31];             // different signs, not both zero
    if (!x[31]) return x[30:0] < y[30:0];         // both positive
    return x[30:0] > y[30:0];                     // both negative
  endfunction

  function automatic logic fp32_eq(input logic [31:0] a, input logic [31:0] b);
    logic [31:0] x, y;
    if (fp32_is_nan(a) || fp32_is_nan(b)) return 1'b0;
    x = fp32_daz(a);
    y = fp32_daz(b);
    if ((x[30:0] == '0) && (y[30:0] == '0)) return 1'b1;
    return x == y;
  endfunction

  function automatic logic fp32_le(input logic [31:0] a, input logic [31:0] b);
    return fp32_lt(a, b) || fp32_eq(a, b);
  endfunction

  // NaN if either is a NaN; else the larger / smaller; max(+0, -0) = +0, min(+0, -0) = -0.
  function automatic logic [31:0] fp32_max(input logic [31:0] a, input logic [31:0] b);
    logic [31:0] x, y;
    if (fp32_is_nan(a) || fp32_is_nan(b)) return FP32_QNAN;
    x = fp32_daz(a);
    y = fp32_daz(b);
    if ((x[30:0] == '0) && (y[30:0] == '0)) return {x[31] & y[31], 31'h0};
    return fp32_lt(x, y) ? y : x;
  endfunction

  function automatic logic [31:0] fp32_min(input logic [31:0] a, input logic [31:0] b);
    logic [31:0] x, y;
    if (fp32_is_nan(a) || fp32_is_nan(b)) return FP32_QNAN;
    x = fp32_daz(a);
    y = fp32_daz(b);
    if ((x[30:0] == '0) && (y[30:0] == '0)) return {x[31] | y[31], 31'h0};
    return fp32_lt(y, x) ? y : x;
  endfunction

  // NaN if a is a NaN; a if a > 0 (after DAZ); else +0.
  function automatic logic [31:0] fp32_relu(input logic [31:0] a);
    if (fp32_is_nan(a)) return FP32_QNAN;
    if (!a[31] && (a[30:23] != 8'h00)) return a;
    return 32'h0;
  endfunction

  // ---- exp and reciprocal: four pipeline stages (docs/numerics.md, "exp and reciprocal") ------
  // The same fixed sequence of fp32 operations as sw/golden/vpu_ops.h (fp32_exp, fp32_rcp), so
  // the bits match; vpu_x1 .. vpu_x4 are the stages, vx_t what one lane carries between them.
  localparam logic [31:0] VxOne   = 32'h3f80_0000;
  localparam logic [31:0] VxLog2e = 32'h3fb8_aa3b;  // log2(e)
  localparam logic [31:0] VxMagic = 32'h4b40_0000;  // 1.5 x 2^23
  localparam logic [31:0] VxLn2Hi = 32'h3f31_8000;  // 0.693359375
  localparam logic [31:0] VxLn2Lo = 32'hb95e_8083;  // ln 2 - VxLn2Hi
  localparam logic [31:0] VxExpHi = 32'h42c8_0000;  // 100
  localparam logic [31:0] VxExpLo = 32'hc2d0_0000;  // -104
  // the polynomial's coefficients, P0 (highest degree) to P5
  function automatic logic [31:0] vx_exp_p(input int unsigned i);
    case (i)
      0:       return 32'h3950_6967;
      1:       return 32'h3ab7_43ce;
      2:       return 32'h3c08_8908;
      3:       return 32'h3d2a_a9c1;
      4:       return 32'h3e2a_aaaa;
      default: return 32'h3f00_0000;
    endcase
  endfunction
  localparam logic [31:0] VxRcpC1 = 32'h3fb4_b4b5;  // 24/17
  localparam logic [31:0] VxRcpC2 = 32'h3ef0_f0f1;  // 8/17

  typedef struct packed {
    logic        done;  // res is the result (a special case)
    logic [31:0] res;
    logic [31:0] a;     // exp: the input; rcp: its significand m in [1, 2)
    logic [31:0] r;     // exp: the reduced argument; rcp: the estimate of 1/m
    logic [31:0] y;     // exp: k as fp32 (stage 1), then the polynomial
    logic [31:0] z;     // exp: r^2
    logic [8:0]  k;     // the power of two to scale by (two's complement)
    logic        sign;  // rcp: the input's sign
  } vx_t;

  function automatic logic [31:0] fp32_neg(input logic [31:0] x);
    return {~x[31], x[30:0]};
  endfunction

  // x (normal, positive: the sign bit is not read) times 2^k: FTZ below the normal range,
  // infinity above it.
  /* verilator lint_off UNUSEDSIGNAL */
  function automatic logic [31:0] vx_scale(input logic [31:0] x, input logic [8:0] k);
  /* verilator lint_on UNUSEDSIGNAL */
    logic [9:0] e;
    e = {2'b00, x[30:23]} + {k[8], k};
    if (e[9] || e == '0) return 32'h0;
    if (e >= 10'd255) return 32'h7f80_0000;
    return {1'b0, e[7:0], x[22:0]};
  endfunction

  // Newton step for 1/m: r + r (1 - m r).
  function automatic logic [31:0] vx_newton(input logic [31:0] m, input logic [31:0] r);
    return fp32_add(r, fp32_mul(r, fp32_add(VxOne, fp32_neg(fp32_mul(m, r)))));
  endfunction

  // Stage 1: the special cases; exp: k; rcp: the first estimate.
  function automatic vx_t vpu_x1(input logic [5:0] op, input logic [31:0] a_in);
    vx_t         v;
    logic [31:0] a, t, tm;
    /* verilator lint_off UNUSEDSIGNAL */
    logic [22:0] kq;  // k + 2^22 - 2^22: only its low 9 bits are k
    /* verilator lint_on UNUSEDSIGNAL */
    v = '0;
    a = fp32_daz(a_in);
    if (op == tp_isa_pkg::OpVexp) begin
      v.a = a;
      if (fp32_is_nan(a)) begin v.done = 1'b1; v.res = FP32_QNAN; end
      else if (a[30:0] == '0) begin v.done = 1'b1; v.res = VxOne; end
      else if (!a[31] && a > VxExpHi) begin v.done = 1'b1; v.res = 32'h7f80_0000; end
      else if (a[31] && a > VxExpLo) begin v.done = 1'b1; v.res = 32'h0; end
      t   = fp32_mul(a, VxLog2e);
      tm  = fp32_add(t, VxMagic);         // in [2^23, 2^24): the fraction field is 2^22 + k
      v.y = fp32_add(tm, fp32_neg(VxMagic));  // k as fp32, exactly
      kq  = tm[22:0] - 23'h40_0000;
      v.k = kq[8:0];
    end else begin  // vrcp
      v.sign = a[31];
      v.a    = {9'h07f, a[22:0]};
      if (fp32_is_nan(a)) begin v.done = 1'b1; v.res = FP32_QNAN; end
      else if (a[30:23] == 8'h00) begin v.done = 1'b1; v.res = {a[31], 8'hff, 23'h0}; end
      else if (a[30:23] == 8'hff) begin v.done = 1'b1; v.res = {a[31], 31'h0}; end
      v.r = fp32_add(VxRcpC1, fp32_neg(fp32_mul(VxRcpC2, v.a)));
      v.k = 9'd127 - {1'b0, a[30:23]};
    end
    return v;
  endfunction

  // Stage 2: exp: r = a - k ln2 (two constants), r^2 and the polynomial's first step; rcp: a
  // Newton step.
  function automatic vx_t vpu_x2(input logic [5:0] op, input vx_t v_in);
    vx_t v;
    v = v_in;
    if (op == tp_isa_pkg::OpVexp) begin
      v.r = fp32_add(v.a, fp32_neg(fp32_mul(v.y, VxLn2Hi)));
      v.r = fp32_add(v.r, fp32_neg(fp32_mul(v.y, VxLn2Lo)));
      v.z = fp32_mul(v.r, v.r);
      v.y = fp32_add(fp32_mul(vx_exp_p(0), v.r), vx_exp_p(1));
    end else begin
      v.r = vx_newton(v.a, v.r);
    end
    return v;
  endfunction

  // Stage 3: exp: the rest of the polynomial; rcp: a Newton step.
  function automatic vx_t vpu_x3(input logic [5:0] op, input vx_t v_in);
    vx_t v;
    v = v_in;
    if (op == tp_isa_pkg::OpVexp) begin
      for (int unsigned i = 2; i < 6; i++) v.y = fp32_add(fp32_mul(v.y, v.r), vx_exp_p(i));
    end else begin
      v.r = vx_newton(v.a, v.r);
    end
    return v;
  endfunction

  // Stage 4: exp: 1 + r + r^2 y, times 2^k; rcp: the last Newton step, times 2^k, the sign.
  function automatic logic [31:0] vpu_x4(input logic [5:0] op, input vx_t v);
    if (v.done) return v.res;
    if (op == tp_isa_pkg::OpVexp) return vx_scale(fp32_add(fp32_add(fp32_mul(v.y, v.z), v.r), VxOne), v.k);
    return {v.sign, 31'h0} | vx_scale(vx_newton(v.a, v.r), v.k);
  endfunction

  // vexp and vrcp through all four stages at once (the lane test's wrapper, tp_vpu_lane).
  function automatic logic [31:0] vpu_x(input logic [5:0] op, input logic [31:0] a);
    return vpu_x4(op, vpu_x3(op, vpu_x2(op, vpu_x1(op, a))));
  endfunction

  // One lane of a one-stage vector op (op_latency 1; vpu_x has the others). a, b: the operand
  // lanes; m: the mask lane (vsel); imm: the instruction's 32-bit field (vscale). For vredsum /
  // vredmax this is one step of the fold, a (the running value) with b (the next lane):
  // fp32_add / fp32_max. Other opcodes give 0.
  function automatic logic [31:0] vpu_lane(input logic [5:0] op, input logic [31:0] a, input logic [31:0] b,
                                           input logic [31:0] m, input logic [31:0] imm);
    logic [31:0] r;
    unique case (op)
      tp_isa_pkg::OpVadd:    r = fp32_add(a, b);
      tp_isa_pkg::OpVsub:    r = fp32_add(a, {~b[31], b[30:0]});
      tp_isa_pkg::OpVmul:    r = fp32_mul(a, b);
      tp_isa_pkg::OpVmax:    r = fp32_max(a, b);
      tp_isa_pkg::OpVmin:    r = fp32_min(a, b);
      tp_isa_pkg::OpVrelu:   r = fp32_relu(a);
      tp_isa_pkg::OpVcmplt:  r = {32{fp32_lt(a, b)}};
      tp_isa_pkg::OpVcmple:  r = {32{fp32_le(a, b)}};
      tp_isa_pkg::OpVcmpeq:  r = {32{fp32_eq(a, b)}};
      tp_isa_pkg::OpVsel:    r = (m != '0) ? a : b;
      tp_isa_pkg::OpVcvtbf:  r = {16'h0, fp32_to_bf16(a)};
      tp_isa_pkg::OpVcvtf:   r = {a[15:0], 16'h0};
      tp_isa_pkg::OpVredsum: r = fp32_add(a, b);
      tp_isa_pkg::OpVredmax: r = fp32_max(a, b);
      tp_isa_pkg::OpVscale:  r = fp32_mul(a, imm);
      tp_isa_pkg::OpVmov:    r = a;
      default:               r = 32'h0;
    endcase
    return r;
  endfunction

endpackage
