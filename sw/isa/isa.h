// The tensorpod ISA in C++: encode/decode of 128-bit instructions, the assembler and
// disassembler, and .tpb program files (docs/isa.md). Everything about fields comes from the
// generated tables in isa_gen.h (sw/isa/isa.json), so adding an instruction needs no edit here.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "config.h"   // tp::Preset
#include "isa_gen.h"  // generated: Op, Unit, Err, Fields, FieldId, field(), FieldDesc, InstrDesc, kInstrs...

namespace tp::isa {

using Word = std::array<uint64_t, 2>;  // [0] = bits 63:0, [1] = bits 127:64

// Field-by-field equality (Fields is generated without one).
bool operator==(const Fields& x, const Fields& y);

// A field's value. A signed field (FieldDesc::is_signed: ici.send's dx and dy) holds its value
// sign-extended to 64 bits, an int64_t cast to uint64_t (dx = -1 is 0xffff'ffff'ffff'ffff);
// encode() writes its low `width` bits (two's complement) and decode() sign-extends them.
struct Instr {
  Op op = Op::fence;
  unsigned wait = 0, signal = 0;
  Fields f;
  bool operator==(const Instr&) const = default;
};

class IsaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An assembly error; what() is "file:line:col: message 'token'" (col is 1-based).
class AsmError : public IsaError {
 public:
  AsmError(std::string file, unsigned line, unsigned col, std::string message, std::string token);
  const std::string& file() const { return file_; }
  unsigned line() const { return line_; }
  unsigned col() const { return col_; }
  const std::string& message() const { return message_; }
  const std::string& token() const { return token_; }

 private:
  std::string file_;
  unsigned line_, col_;
  std::string message_, token_;
};

const InstrDesc& desc(Op op);                      // table row of an op; throws IsaError for an op not in it
const InstrDesc* find_mnemonic(std::string_view);  // nullptr if unknown
const FieldDesc* find_field(const InstrDesc&, std::string_view name);  // nullptr if the format has none
std::string_view err_name(Err);  // "vmem_range" ...; "unknown" for a code not in the table

// Throws IsaError naming the instruction and field when a value does not fit its width (a signed
// field: -2^(w-1) .. 2^(w-1)-1), or when a field the format does not have is nonzero.
Word encode(const Instr&);

// err is none, illegal_opcode (instr then holds only wait and signal) or bad_field (a bit outside
// the format's fields is set; instr holds the decoded fields). Range checks and rows/cols == 0 are
// the chip's checks (docs/chip.md), not decode's.
struct Decoded {
  Err err = Err::none;
  Instr instr;
};
Decoded decode(const Word&);

// The queue an instruction goes to: fence's `unit` field resolved to Unit::load .. Unit::ici
// (0..4; throws IsaError for 5..7, which name no queue); halt -> Unit::front.
Unit unit_of(const Instr&);
// The front end's own instructions: scalar ones and branches (unit front, not halt), and of
// those the branches (beq .. bge, loop).
bool is_scalar(Op);
bool is_branch(Op);
// The scalar registers an instruction reads and writes, as masks (bit r; r0 never counts): a
// scalar instruction's rs1, rs2 (a loop's counter too) and rd (none for a branch but loop); a
// unit instruction's register fields (it writes none). The dual-issue rule (docs/chip.md) pairs
// a scalar instruction with the one before it when it reads nothing that one writes.
struct RegUse {
  uint32_t reads = 0, writes = 0;
};
RegUse reg_use(const Instr&);
bool uses_b(Op);
bool uses_mask(Op);
// A vector op's pipeline stages from operands to result (the table's latency; 1 for most).
unsigned latency(Op);

// One line of assembly that assemble() reads back to the same encoding. Throws like encode().
std::string disassemble(const Instr&);

struct Program {
  std::string preset;
  uint64_t fingerprint = 0;
  std::vector<Word> code;
  bool operator==(const Program&) const = default;
};

uint64_t fingerprint(const Preset&);  // FNV-1a 64 over the bytes docs/isa.md defines

// Assembles `text` (docs/isa.md "Assembly"); `filename` only names the source in errors.
// Throws AsmError.
Program assemble(std::string_view text, const std::string& filename, const Preset&);

// A header comment line (preset, fingerprint), then one line per instruction; reassembles to the
// same code. A word that does not decode cleanly is written as `.word lo, hi`.
std::string disassemble(const Program&);

// The .tpb bytes (docs/isa.md "Program files").
std::vector<uint8_t> serialize(const Program&);
// Throws IsaError naming `origin`: bad magic, wrong ISA version, truncated, count mismatch...
Program deserialize(std::span<const uint8_t> bytes, const std::string& origin);

// Throws IsaError naming both presets when the program's fingerprint is not the preset's.
void check_preset(const Program&, const Preset&);

Program read_program(const std::filesystem::path&);  // .tpb binary; throws IsaError
void write_program(const std::filesystem::path&, const Program&);

}  // namespace tp::isa
