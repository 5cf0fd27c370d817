// Encode/decode, the table look-ups and .tpb program files (docs/isa.md).
#include "isa.h"

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <optional>
#include <string_view>

#include "isa_bits.h"

namespace tp::isa {

namespace {

// Opcode -> table row; the opcode field is 6 bits.
const std::array<const InstrDesc*, 64>& by_opcode() {
  static const auto table = [] {
    std::array<const InstrDesc*, 64> t{};
    for (const InstrDesc& d : kInstrs) t[static_cast<unsigned>(d.op)] = &d;
    return t;
  }();
  return table;
}

// One FieldDesc per field name over all formats, for checks of fields a format does not have.
const std::vector<const FieldDesc*>& all_fields() {
  static const auto list = [] {
    std::vector<const FieldDesc*> v;
    for (const InstrDesc& d : kInstrs)
      for (unsigned k = 0; k < d.nfields; ++k) {
        bool seen = false;
        for (const FieldDesc* f : v) seen = seen || f->id == d.fields[k].id;
        if (!seen) v.push_back(&d.fields[k]);
      }
    return v;
  }();
  return list;
}

void check_fits(const InstrDesc& d, std::string_view name, uint64_t value, unsigned width) {
  if (!fits(value, width))
    throw IsaError(
        fmt::format("{}: field {} = {} (0x{:x}) does not fit its {} bits", d.name, name, value, value, width));
}

void check_fits_signed(const InstrDesc& d, std::string_view name, uint64_t value, unsigned width) {
  if (!fits_signed(value, width))
    throw IsaError(fmt::format("{}: field {} = {} does not fit its {} bits (signed: {} .. {})", d.name, name,
                               static_cast<int64_t>(value), width, signed_min(width), signed_max(width)));
}

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (unsigned k = 0; k < 4; ++k) out.push_back(static_cast<uint8_t>(v >> (8 * k)));
}
void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (unsigned k = 0; k < 8; ++k) out.push_back(static_cast<uint8_t>(v >> (8 * k)));
}
uint64_t get_le(std::span<const uint8_t> bytes, size_t at, unsigned n) {
  uint64_t v = 0;
  for (unsigned k = 0; k < n; ++k) v |= uint64_t{bytes[at + k]} << (8 * k);
  return v;
}

constexpr uint32_t kMagic = 0x444f5054;  // "TPOD" in little-endian bytes
constexpr size_t kNameBytes = 32;
constexpr size_t kNameOffset = 24;
constexpr size_t kHeaderBytes = 4 + 4 + 4 + 4 + 8 + kNameBytes;
constexpr size_t kInstrBytes = 16;

// The preset name in a .tpb header is printable ASCII: the disassembly prints it in its header
// comment, where a newline would end the comment and turn the rest into source (the disassembly
// of such a file did not assemble back to its words). The index of the first other byte, if any.
std::optional<size_t> bad_name_byte(std::string_view name) {
  for (size_t k = 0; k < name.size(); ++k)
    if (name[k] < 0x20 || name[k] > 0x7e) return k;
  return std::nullopt;
}

}  // namespace

bool operator==(const Fields& x, const Fields& y) {
  for (const FieldDesc* f : all_fields())
    if (field(x, f->id) != field(y, f->id)) return false;
  return true;
}

AsmError::AsmError(std::string file, unsigned line, unsigned col, std::string message, std::string token)
    : IsaError(fmt::format("{}:{}:{}: {} '{}'", file, line, col, message, token)),
      file_(std::move(file)),
      line_(line),
      col_(col),
      message_(std::move(message)),
      token_(std::move(token)) {}

const InstrDesc& desc(Op op) {
  const auto code = static_cast<unsigned>(op);
  const InstrDesc* d = code < 64 ? by_opcode()[code] : nullptr;
  if (!d) throw IsaError(fmt::format("opcode {} is not in the ISA table", code));
  return *d;
}

const InstrDesc* find_mnemonic(std::string_view name) {
  for (const InstrDesc& d : kInstrs)
    if (d.name == name) return &d;
  return nullptr;
}

const FieldDesc* find_field(const InstrDesc& d, std::string_view name) {
  for (unsigned k = 0; k < d.nfields; ++k)
    if (d.fields[k].name == name) return &d.fields[k];
  return nullptr;
}

std::string_view err_name(Err e) {
  for (const ErrDesc& d : kErrors)
    if (d.err == e) return d.name;
  return "unknown";
}

Word encode(const Instr& in) {
  const InstrDesc& d = desc(in.op);
  check_fits(d, "wait", in.wait, kWaitWidth);
  check_fits(d, "signal", in.signal, kSignalWidth);
  Word w{};
  set_bits(w, kOpcodeLsb, kOpcodeWidth, static_cast<unsigned>(in.op));
  set_bits(w, kWaitLsb, kWaitWidth, in.wait);
  set_bits(w, kSignalLsb, kSignalWidth, in.signal);
  for (const FieldDesc* f : all_fields()) {
    const uint64_t v = field(in.f, f->id);
    const FieldDesc* own = find_field(d, f->name);
    if (own) {
      if (own->is_signed)
        check_fits_signed(d, own->name, v, own->width);
      else
        check_fits(d, own->name, v, own->width);
      set_bits(w, own->lsb, own->width, v);  // the low bits: two's complement for a signed field
    } else if (v != 0) {
      throw IsaError(
          fmt::format("{}: has no field {} (format '{}'), but it is set to {}", d.name, f->name, d.format, v));
    }
  }
  return w;
}

Decoded decode(const Word& w) {
  Decoded out;
  out.instr.wait = static_cast<unsigned>(get_bits(w, kWaitLsb, kWaitWidth));
  out.instr.signal = static_cast<unsigned>(get_bits(w, kSignalLsb, kSignalWidth));
  const InstrDesc* d = by_opcode()[get_bits(w, kOpcodeLsb, kOpcodeWidth)];
  if (!d) {
    out.err = Err::illegal_opcode;
    return out;
  }
  out.instr.op = d->op;
  // Every bit outside the common fields and the format's fields must be zero.
  Word used{};
  set_bits(used, kOpcodeLsb, kOpcodeWidth, ~uint64_t{0});
  set_bits(used, kWaitLsb, kWaitWidth, ~uint64_t{0});
  set_bits(used, kSignalLsb, kSignalWidth, ~uint64_t{0});
  for (unsigned k = 0; k < d->nfields; ++k) {
    const FieldDesc& f = d->fields[k];
    const uint64_t bits = get_bits(w, f.lsb, f.width);
    field(out.instr.f, f.id) = f.is_signed ? sign_extend(bits, f.width) : bits;
    set_bits(used, f.lsb, f.width, ~uint64_t{0});
  }
  if ((w[0] & ~used[0]) != 0 || (w[1] & ~used[1]) != 0) out.err = Err::bad_field;
  return out;
}

bool is_scalar(Op op) { return desc(op).unit == Unit::front && op != Op::halt; }
bool is_branch(Op op) { return desc(op).format == "br" || op == Op::loop; }

RegUse reg_use(const Instr& in) {
  RegUse u;
  const InstrDesc& d = desc(in.op);
  auto bit = [](uint64_t r) { return uint32_t{1} << r; };
  if (is_scalar(in.op)) {
    u.reads = bit(in.f.rs1) | bit(in.f.rs2) | (in.op == Op::loop ? bit(in.f.rd) : 0u);
    if (d.format != "br") u.writes = bit(in.f.rd);
  } else {
    for (unsigned k = 0; k < d.nfields; ++k)
      if (d.fields[k].has_reg) u.reads |= bit(field(in.f, d.fields[k].reg));
  }
  u.reads &= ~uint32_t{1};
  u.writes &= ~uint32_t{1};
  return u;
}

Unit unit_of(const Instr& in) {
  const InstrDesc& d = desc(in.op);
  if (d.unit != Unit::field) return d.unit;
  // The queues are Unit values 0 .. kQueues-1 (load, mxu, vec, store, ici); the field has
  // room for more, which are no queue (the chip's check makes such a fence bad_field).
  static_assert(static_cast<unsigned>(Unit::load) == 0 && static_cast<unsigned>(Unit::ici) == kQueues - 1);
  if (in.f.unit >= kQueues)
    throw IsaError(fmt::format("{}: unit {} is not a queue (0..{})", d.name, in.f.unit, kQueues - 1));
  return static_cast<Unit>(in.f.unit);
}

bool uses_b(Op op) { return desc(op).uses_b; }
bool uses_mask(Op op) { return desc(op).uses_mask; }
unsigned latency(Op op) { return desc(op).latency; }

uint64_t fingerprint(const Preset& p) {
  std::vector<uint8_t> bytes;
  put_u32(bytes, kIsaVersion);
  put_u32(bytes, p.mxu.n);
  put_u32(bytes, p.mxu.acc_rows);
  put_u32(bytes, p.chip.vmem_rows);
  put_u32(bytes, p.chip.imem_words);
  put_u64(bytes, p.chip.hbm_beats);
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64 offset basis and prime
  for (uint8_t b : bytes) h = (h ^ b) * 0x100000001b3ull;
  return h;
}

std::vector<uint8_t> serialize(const Program& p) {
  if (p.preset.size() > kNameBytes)
    throw IsaError(
        fmt::format("preset name '{}' is longer than the {} bytes a .tpb header holds", p.preset, kNameBytes));
  if (const auto k = bad_name_byte(p.preset))
    throw IsaError(fmt::format("preset name has byte 0x{:02x} at position {}: a .tpb header holds printable ASCII only",
                               static_cast<uint8_t>(p.preset[*k]), *k));
  if (p.code.size() > UINT32_MAX) throw IsaError(fmt::format("program of {} instructions is too long", p.code.size()));
  std::vector<uint8_t> out;
  out.reserve(kHeaderBytes + kInstrBytes * p.code.size());
  put_u32(out, kMagic);
  put_u32(out, kIsaVersion);
  put_u32(out, static_cast<uint32_t>(p.code.size()));
  put_u32(out, 0);
  put_u64(out, p.fingerprint);
  out.insert(out.end(), p.preset.begin(), p.preset.end());
  out.resize(kHeaderBytes, 0);
  for (const Word& w : p.code) {
    put_u64(out, w[0]);
    put_u64(out, w[1]);
  }
  return out;
}

Program deserialize(std::span<const uint8_t> bytes, const std::string& origin) {
  if (bytes.size() < kHeaderBytes)
    throw IsaError(
        fmt::format("{}: truncated program: {} bytes, the header alone is {}", origin, bytes.size(), kHeaderBytes));
  const uint64_t magic = get_le(bytes, 0, 4);
  if (magic != kMagic)
    throw IsaError(fmt::format("{}: not a tensorpod program: magic 0x{:08x}, expected 0x{:08x} (\"TPOD\")", origin,
                               magic, kMagic));
  const uint64_t version = get_le(bytes, 4, 4);
  if (version != kIsaVersion)
    throw IsaError(fmt::format("{}: program is for ISA version {}, this build implements version {}", origin, version,
                               kIsaVersion));
  const uint64_t count = get_le(bytes, 8, 4);
  const uint64_t reserved = get_le(bytes, 12, 4);
  if (reserved != 0) throw IsaError(fmt::format("{}: reserved header word is 0x{:08x}, must be 0", origin, reserved));
  const uint64_t expect = kHeaderBytes + kInstrBytes * count;
  if (bytes.size() < expect)
    throw IsaError(fmt::format("{}: truncated program: header says {} instructions ({} bytes), file has {} bytes",
                               origin, count, expect, bytes.size()));
  if (bytes.size() > expect)
    throw IsaError(
        fmt::format("{}: {} bytes after the {} instructions the header counts", origin, bytes.size() - expect, count));
  Program p;
  p.fingerprint = get_le(bytes, 16, 8);
  const auto name = bytes.subspan(kNameOffset, kNameBytes);
  size_t len = 0;
  while (len < name.size() && name[len] != 0) ++len;
  for (size_t k = len; k < name.size(); ++k)
    if (name[k] != 0) throw IsaError(fmt::format("{}: preset name in the header is not NUL padded", origin));
  p.preset.assign(name.begin(), name.begin() + static_cast<std::ptrdiff_t>(len));
  if (const auto k = bad_name_byte(p.preset))
    throw IsaError(fmt::format("{}: preset name in the header has byte 0x{:02x} at offset {} (printable ASCII only)",
                               origin, name[*k], kNameOffset + *k));
  p.code.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const size_t at = kHeaderBytes + kInstrBytes * i;
    p.code[i] = {get_le(bytes, at, 8), get_le(bytes, at + 8, 8)};
  }
  return p;
}

void check_preset(const Program& p, const Preset& preset) {
  const uint64_t fp = fingerprint(preset);
  if (p.fingerprint != fp)
    throw IsaError(
        fmt::format("program built for preset '{}' (fingerprint 0x{:016x}) cannot run on preset '{}' "
                    "(fingerprint 0x{:016x})",
                    p.preset, p.fingerprint, preset.name, fp));
}

Program read_program(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IsaError(fmt::format("cannot open program file '{}'", path.string()));
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw IsaError(fmt::format("cannot read program file '{}'", path.string()));
  return deserialize(bytes, path.string());
}

void write_program(const std::filesystem::path& path, const Program& p) {
  const std::vector<uint8_t> bytes = serialize(p);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw IsaError(fmt::format("cannot write program file '{}'", path.string()));
}

}  // namespace tp::isa
