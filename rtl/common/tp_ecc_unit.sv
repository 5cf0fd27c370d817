// The SECDED code as a stand-alone block for exhaustive regression (tb/ecc). Combinational.
module tp_ecc_unit
  import tp_secded_pkg::*;
(
  input  logic [63:0] enc_data_i,
  output logic [71:0] enc_code_o,
  input  logic [71:0] dec_code_i,
  output logic [63:0] dec_data_o,
  output logic        dec_corrected_o,
  output logic        dec_fatal_o
);
  secded_dec_t dec;
  assign enc_code_o      = secded64_encode(enc_data_i);
  assign dec             = secded64_decode(dec_code_i);
  assign dec_data_o      = dec.data;
  assign dec_corrected_o = dec.corrected;
  assign dec_fatal_o     = dec.fatal;
endmodule
