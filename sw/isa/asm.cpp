// The assembler and disassembler (docs/isa.md "Assembly").
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "isa.h"
#include "isa_bits.h"

namespace tp::isa {

namespace {

// fence's unit operand may be written as a queue name; the names are the Unit values 0 .. kQueues-1.
constexpr std::array<std::string_view, 5> kQueueNames = {"load", "mxu", "vec", "store", "ici"};
static_assert(kQueueNames.size() == kQueues);
static_assert(static_cast<unsigned>(Unit::load) == 0 && static_cast<unsigned>(Unit::mxu) == 1 &&
              static_cast<unsigned>(Unit::vec) == 2 && static_cast<unsigned>(Unit::store) == 3 &&
              static_cast<unsigned>(Unit::ici) == 4);

struct Tok {
  enum Kind { ident, number, punct } kind;
  std::string_view text;
  unsigned col;  // 1-based
  bool is(char c) const { return kind == punct && text.size() == 1 && text[0] == c; }
};

using Toks = std::vector<Tok>;

struct Line {
  unsigned no;
  std::string_view src;
  Toks toks;
};

bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool digit(char c) { return c >= '0' && c <= '9'; }
bool word_char(char c) { return ident_start(c) || digit(c) || c == '.'; }

// A scalar register name, r0 .. r31: its number.
std::optional<unsigned> reg_number(std::string_view s) {
  if (s.size() < 2 || s.size() > 3 || s[0] != 'r') return std::nullopt;
  unsigned v = 0;
  for (char c : s.substr(1)) {
    if (!digit(c)) return std::nullopt;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if ((s.size() == 3 && s[1] == '0') || v >= kNumRegs) return std::nullopt;
  return v;
}

// A name that .set or a label may define: [A-Za-z_][A-Za-z0-9_]*, and not a float keyword or a
// register name.
bool valid_name(std::string_view s) {
  if (s.empty() || !ident_start(s[0])) return false;
  for (char c : s)
    if (!ident_start(c) && !digit(c)) return false;
  return s != "inf" && s != "nan" && !reg_number(s);
}

class Assembler {
 public:
  Assembler(std::string_view text, const std::string& file, const Preset& preset)
      : text_(text), file_(file), preset_(preset) {}

  Program run() {
    lex();
    collect_labels();
    Program p;
    p.preset = preset_.name;
    p.fingerprint = fingerprint(preset_);
    for (const Line& line : lines_) statement(line, p.code);
    return p;
  }

 private:
  [[noreturn]] void fail(const Line& line, unsigned col, const std::string& message, std::string_view token) const {
    throw AsmError(file_, line.no, col, message, std::string(token));
  }
  [[noreturn]] void fail(const Line& line, const Tok& t, const std::string& message) const {
    fail(line, t.col, message, t.text);
  }
  // The source text of tokens [b, e), for messages about a whole operand.
  static std::string_view span_text(const Line& line, const Tok* b, const Tok* e) {
    const size_t from = b->col - 1, to = (e - 1)->col - 1 + (e - 1)->text.size();
    return line.src.substr(from, to - from);
  }

  void lex() {
    unsigned no = 0;
    size_t pos = 0;
    while (pos <= text_.size()) {
      size_t end = text_.find('\n', pos);
      if (end == std::string_view::npos) end = text_.size();
      Line line{++no, text_.substr(pos, end - pos), {}};
      lex_line(line);
      if (!line.toks.empty()) lines_.push_back(std::move(line));
      pos = end + 1;
    }
  }

  void lex_line(Line& line) {
    const std::string_view s = line.src;
    size_t i = 0;
    while (i < s.size()) {
      const char c = s[i];
      const auto col = static_cast<unsigned>(i + 1);
      if (c == '#' || c == ';') break;  // comment to end of line
      if (c == ' ' || c == '\t' || c == '\r') {
        ++i;
      } else if (ident_start(c) || (c == '.' && i + 1 < s.size() && ident_start(s[i + 1]))) {
        size_t j = i + 1;
        while (j < s.size() && word_char(s[j])) ++j;
        line.toks.push_back({Tok::ident, s.substr(i, j - i), col});
        i = j;
      } else if (digit(c) || (c == '.' && i + 1 < s.size() && digit(s[i + 1]))) {
        // Numbers and float literals: letters, digits and dots, plus a sign right after a decimal
        // exponent's e (a hex number has no exponent).
        const bool hex = c == '0' && i + 1 < s.size() && (s[i + 1] == 'x' || s[i + 1] == 'X');
        size_t j = i + 1;
        while (j < s.size() &&
               (word_char(s[j]) || (!hex && (s[j] == '+' || s[j] == '-') && (s[j - 1] == 'e' || s[j - 1] == 'E'))))
          ++j;
        line.toks.push_back({Tok::number, s.substr(i, j - i), col});
        i = j;
      } else if (c == ',' || c == '=' || c == ':' || c == '+' || c == '-') {
        line.toks.push_back({Tok::punct, s.substr(i, 1), col});
        ++i;
      } else {
        fail(line, col, "unexpected character", s.substr(i, 1));
      }
    }
  }

  // Leading `name:` labels of a line; returns the index of the first token after them.
  static size_t skip_labels(const Line& line) {
    size_t i = 0;
    while (i + 1 < line.toks.size() && line.toks[i].kind == Tok::ident && line.toks[i + 1].is(':')) i += 2;
    return i;
  }
  // Whether a line (after its labels) emits an instruction, so labels count the same way in both passes.
  static bool emits(const Line& line, size_t i) {
    if (i >= line.toks.size() || line.toks[i].kind != Tok::ident) return false;
    const std::string_view t = line.toks[i].text;
    return t[0] != '.' || t == ".word";
  }

  // Pass 1: every label's value is the index of the instruction after it, so labels may be used
  // before the line that defines them.
  void collect_labels() {
    uint64_t count = 0;
    for (const Line& line : lines_) {
      const size_t first = skip_labels(line);
      for (size_t i = 0; i < first; i += 2) define(line, line.toks[i], count, "label");
      if (emits(line, first)) ++count;
    }
  }

  void define(const Line& line, const Tok& name, uint64_t value, std::string_view what) {
    if (reg_number(name.text)) fail(line, name, fmt::format("a register name cannot be a {} name:", what));
    if (!valid_name(name.text)) fail(line, name, fmt::format("bad {} name", what));
    if (names_.count(name.text)) fail(line, name, "redefinition of");
    names_[name.text] = value;
  }

  // Pass 2: one line.
  void statement(const Line& line, std::vector<Word>& code) {
    const Toks& t = line.toks;
    const size_t i = skip_labels(line);
    if (i == t.size()) return;
    const Tok& head = t[i];
    if (head.kind != Tok::ident) fail(line, head, "expected a mnemonic or directive, got");
    const Tok* rest = t.data() + i + 1;
    const Tok* end = t.data() + t.size();
    if (head.text == ".set") {
      if (rest == end || rest->kind != Tok::ident) fail(line, head, "expected `.set NAME, value` after");
      if (rest + 1 == end || !rest[1].is(',')) fail(line, *rest, "expected ', value' after");
      if (rest + 2 == end) fail(line, rest[1], "expected a value after");
      define(line, *rest, value(line, rest + 2, end, Ctx{.floats = true}), "constant");
    } else if (head.text == ".preset") {
      if (rest == end || rest->kind != Tok::ident) fail(line, head, "expected a preset name after");
      if (rest + 1 != end) fail(line, rest[1], "unexpected text after the preset name");
      if (rest->text != preset_.name)
        fail(line, *rest, fmt::format("source is for another preset than the one assembled for ('{}'):", preset_.name));
    } else if (head.text == ".word") {
      const auto ops = operands(line, rest, end);
      if (ops.size() != 2) fail(line, head, "expected two operands (bits 63:0, bits 127:64) after");
      Word w{};
      for (size_t k = 0; k < 2; ++k) {
        if (ops[k].key) fail(line, *ops[k].key, "a .word operand cannot be named:");
        w[k] = value(line, ops[k].b, ops[k].e, Ctx{});
      }
      code.push_back(w);
    } else if (head.text[0] == '.') {
      fail(line, head, "unknown directive");
    } else {
      code.push_back(encode(instruction(line, head, rest, end)));
    }
  }

  // One operand: [key =] value tokens [b, e).
  struct Operand {
    const Tok* key;  // nullptr when positional
    const Tok* b;
    const Tok* e;
  };

  // Splits at commas; a `key=` also starts a new operand, so `... 4 wait=1` needs no comma.
  std::vector<Operand> operands(const Line& line, const Tok* b, const Tok* e) const {
    std::vector<Operand> ops;
    const Tok* start = b;
    auto close = [&](const Tok* at) {
      if (start == at) fail(line, at == e ? *(at - 1) : *at, "expected an operand before");
      const bool named = at - start >= 2 && start->kind == Tok::ident && start[1].is('=');
      if (named && at - start == 2) fail(line, start[1], "expected a value after");
      ops.push_back(named ? Operand{start, start + 2, at} : Operand{nullptr, start, at});
    };
    for (const Tok* p = b; p != e; ++p) {
      if (p->is(',')) {
        close(p);
        start = p + 1;
      } else if (p != start && p->kind == Tok::ident && p + 1 != e && p[1].is('=')) {
        close(p);
        start = p;
      }
    }
    if (start != e || (b != e && (e - 1)->is(','))) close(e);
    return ops;
  }

  Instr instruction(const Line& line, const Tok& mnemonic, const Tok* b, const Tok* e) {
    const InstrDesc* d = find_mnemonic(mnemonic.text);
    if (!d) fail(line, mnemonic, "unknown mnemonic");
    // Positional operands take the required fields in table order, then the optional ones. A
    // field's register (vaddr_r ...) is written with the field (vaddr=r3+16), not on its own.
    std::vector<const FieldDesc*> order;
    for (bool optional : {false, true})
      for (unsigned k = 0; k < d->nfields; ++k)
        if (d->fields[k].optional == optional && !d->fields[k].is_reg) order.push_back(&d->fields[k]);

    Instr in;
    in.op = d->op;
    std::vector<std::string_view> given;  // field names set so far, for duplicates
    size_t positional = 0;
    bool named_seen = false;
    for (const Operand& op : operands(line, b, e)) {
      const std::string_view text = span_text(line, op.key ? op.key : op.b, op.e);
      std::string_view name;
      unsigned width = 0;
      uint64_t* dest = nullptr;
      bool floats = false, queues = false, is_signed = false;
      const FieldDesc* f = nullptr;
      if (!op.key) {
        if (named_seen) fail(line, op.b->col, "positional operand after a named one:", text);
        if (positional == order.size())
          fail(line, op.b->col, fmt::format("too many operands for {} (it takes {})", d->name, order.size()), text);
        f = order[positional++];
        name = f->name;
      } else {
        named_seen = true;
        name = op.key->text;
        if (name == "wait" || name == "signal") {
          width = name == "wait" ? kWaitWidth : kSignalWidth;
        } else if (!(f = find_field(*d, name))) {
          fail(line, *op.key, fmt::format("{} has no field", d->name));
        } else if (f->is_reg) {
          fail(line, *op.key,
               fmt::format("a field's register is written with the field ({}=r3+16), not on its own:",
                           name.substr(0, name.size() - 2)));
        }
      }
      if (f) {
        width = f->width;
        dest = &field(in.f, f->id);
        floats = f->id == FieldId::imm;
        queues = d->op == Op::fence && f->id == FieldId::unit;
        is_signed = f->is_signed;
      }
      for (std::string_view g : given)
        if (g == name) fail(line, op.key ? op.key->col : op.b->col, fmt::format("field {} given twice:", name), text);
      given.push_back(name);
      const Tok* vb = op.b;
      if (f && f->names_reg) {  // rd, rs1, rs2: a register and nothing else
        const std::optional<unsigned> r = vb->kind == Tok::ident ? reg_number(vb->text) : std::nullopt;
        if (!r || vb + 1 != op.e)
          fail(line, vb->col, fmt::format("expected a scalar register (r0 .. r{}) for {}, got", kNumRegs - 1, name),
               span_text(line, op.b, op.e));
        *dest = *r;
        continue;
      }
      if (f && f->has_reg && vb->kind == Tok::ident && reg_number(vb->text)) {  // rN or rN+value
        field(in.f, f->reg) = *reg_number(vb->text);
        if (vb + 1 == op.e) continue;  // the immediate is 0
        if (!vb[1].is('+') || vb + 2 == op.e)
          fail(line, vb->col, "expected a value of the form rN, rN+VALUE or VALUE, got", span_text(line, op.b, op.e));
        vb += 2;
      }
      const uint64_t v = value(line, vb, op.e, Ctx{.floats = floats, .queues = queues, .is_signed = is_signed});
      if (is_signed) {
        if (!fits_signed(v, width))
          fail(line, op.b->col,
               fmt::format("value {} does not fit {} ({} bits, signed: {} .. {})", static_cast<int64_t>(v), name, width,
                           signed_min(width), signed_max(width)),
               span_text(line, op.b, op.e));
      } else if (!fits(v, width)) {
        const bool sem = name == "wait" || name == "signal" || name == "rsem";
        fail(line, op.b->col,
             fmt::format("value {} does not fit {} ({} bits{})", v, name, width,
                         sem ? fmt::format(": semaphores are 0..{}", kNumSems - 1) : ""),
             span_text(line, op.b, op.e));
      }
      if (name == "wait") {
        in.wait = static_cast<unsigned>(v);
      } else if (name == "signal") {
        in.signal = static_cast<unsigned>(v);
      } else {
        *dest = v;
      }
    }
    for (const FieldDesc* f : order)
      if (!f->optional && std::find(given.begin(), given.end(), f->name) == given.end())
        fail(line, mnemonic, fmt::format("missing operand {} of", f->name));
    return in;
  }

  struct Ctx {
    bool floats = false;     // imm: float literals and negative floats allowed
    bool queues = false;     // fence unit: queue names allowed
    bool is_signed = false;  // a signed field: negative integers allowed (the result is sign-extended)
  };

  // value := ['-'] float (only with floats) | ['-' (only signed)] atom [('+'|'-') number];
  // atom := number | name
  uint64_t value(const Line& line, const Tok* b, const Tok* e, Ctx ctx) const {
    const std::string_view text = span_text(line, b, e);
    const Tok* p = b;
    bool negative = false;
    if (p->is('-')) {
      if (!ctx.floats && !ctx.is_signed) fail(line, p->col, "negative values are not allowed here:", text);
      negative = true;
      if (++p == e) fail(line, (p - 1)->col, "expected a number after", "-");
    }
    uint64_t v = 0;
    if (std::optional<uint32_t> f = ctx.floats ? float_bits(line, *p) : std::nullopt) {
      if (p + 1 != e) fail(line, p[1], "unexpected token after a float");
      return negative ? *f ^ 0x80000000u : *f;
    }
    if (negative && !ctx.is_signed) fail(line, b->col, "a negative imm must be a float literal (like -2.0), not", text);
    if (p->kind == Tok::number) {
      v = number(line, *p);
    } else if (p->kind == Tok::ident) {
      v = lookup(line, *p, ctx);
    } else {
      fail(line, *p, "expected a value, got");
    }
    const bool offset = ++p != e;
    if (offset && ((!p->is('+') && !p->is('-')) || p + 1 == e || p[1].kind != Tok::number || p + 2 != e))
      fail(line, b->col, "expected a value of the form NUMBER, NAME, NAME+NUMBER or NAME-NUMBER, got", text);
    if (ctx.is_signed) {
      // Exact signed arithmetic in 64 bits; the caller checks the field's range.
      const uint64_t k = offset ? number(line, p[1]) : 0;
      if (v > uint64_t{INT64_MAX} || k > uint64_t{INT64_MAX}) fail(line, b->col, "value does not fit 64 bits:", text);
      int64_t s = negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
      if (offset && (p->is('+') ? __builtin_add_overflow(s, static_cast<int64_t>(k), &s)
                                : __builtin_sub_overflow(s, static_cast<int64_t>(k), &s)))
        fail(line, b->col, "value does not fit 64 bits:", text);
      return static_cast<uint64_t>(s);
    }
    if (!offset) return v;
    const uint64_t k = number(line, p[1]);
    if (p->is('+')) {
      if (v + k < v) fail(line, b->col, "value does not fit 64 bits:", text);
      return v + k;
    }
    if (k > v) fail(line, b->col, "negative values are not allowed here:", text);
    return v - k;
  }

  uint64_t number(const Line& line, const Tok& t) const {
    std::string_view s = t.text;
    int base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      base = 16;
      s.remove_prefix(2);
    } else if (s.size() > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) {
      base = 2;
      s.remove_prefix(2);
    }
    uint64_t v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (ec == std::errc::result_out_of_range) fail(line, t, "number does not fit 64 bits:");
    if (ec != std::errc() || ptr != s.data() + s.size()) fail(line, t, "bad number");
    return v;
  }

  // The fp32 bit pattern of a float literal (digits with a '.' or an exponent, inf, nan), or
  // nothing for a token that is not one (an integer is a bit pattern, not a float).
  std::optional<uint32_t> float_bits(const Line& line, const Tok& t) const {
    if (t.kind == Tok::ident) {
      if (t.text == "inf") return std::bit_cast<uint32_t>(std::numeric_limits<float>::infinity());
      if (t.text == "nan") return 0x7fc00000u;  // the canonical NaN
      return std::nullopt;
    }
    if (t.kind != Tok::number) return std::nullopt;
    const std::string_view s = t.text;
    const bool hex = s.size() > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    if (hex || s.find_first_of(".eE") == std::string_view::npos) return std::nullopt;
    float f = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), f, std::chars_format::general);
    if (ec == std::errc::result_out_of_range) fail(line, t, "float literal out of the fp32 range:");
    if (ec != std::errc() || ptr != s.data() + s.size()) fail(line, t, "bad number");
    return std::bit_cast<uint32_t>(f);
  }

  uint64_t lookup(const Line& line, const Tok& t, Ctx ctx) const {
    if (ctx.queues)
      for (size_t k = 0; k < kQueueNames.size(); ++k)
        if (kQueueNames[k] == t.text) return k;
    const auto it = names_.find(t.text);
    if (it == names_.end())
      fail(line, t, reg_number(t.text) ? "a scalar register is not allowed here:" : "unknown name");
    return it->second;
  }

  std::string_view text_;
  const std::string& file_;
  const Preset& preset_;
  std::vector<Line> lines_;
  std::map<std::string_view, uint64_t, std::less<>> names_;  // labels and .set constants
};

std::string field_text(const InstrDesc& d, const FieldDesc& f, uint64_t v) {
  if (f.id == FieldId::imm) return fmt::format("0x{:x}", v);
  if (f.is_signed) return fmt::format("{}", static_cast<int64_t>(v));
  if (d.op == Op::fence && f.id == FieldId::unit && v < kQueueNames.size()) return std::string(kQueueNames[v]);
  return fmt::format("{}", v);
}

}  // namespace

Program assemble(std::string_view text, const std::string& filename, const Preset& preset) {
  return Assembler(text, filename, preset).run();
}

std::string disassemble(const Instr& in) {
  encode(in);  // the same checks: a line we print must assemble
  const InstrDesc& d = desc(in.op);
  std::string out(d.name);
  const char* sep = " ";
  for (bool optional : {false, true})
    for (unsigned k = 0; k < d.nfields; ++k) {
      const FieldDesc& f = d.fields[k];
      const uint64_t v = field(in.f, f.id);
      const uint64_t r = f.has_reg ? field(in.f, f.reg) : 0;
      if (f.is_reg || f.optional != optional || (optional && v == 0 && r == 0)) continue;
      out += sep;
      if (optional) out += fmt::format("{}=", f.name);
      if (f.names_reg)
        out += fmt::format("r{}", v);
      else if (r != 0)
        out += v == 0 ? fmt::format("r{}", r) : fmt::format("r{}+{}", r, field_text(d, f, v));
      else
        out += field_text(d, f, v);
      sep = ", ";
    }
  if (in.wait) out += fmt::format(" wait={}", in.wait);
  if (in.signal) out += fmt::format(" signal={}", in.signal);
  if (in.op == Op::vscale) out += fmt::format("  # imm = {}", std::bit_cast<float>(static_cast<uint32_t>(in.f.imm)));
  return out;
}

std::string disassemble(const Program& p) {
  std::string out = fmt::format("# tensorpod program: preset '{}', fingerprint 0x{:016x}, {} instructions\n", p.preset,
                                p.fingerprint, p.code.size());
  for (const Word& w : p.code) {
    const Decoded dec = decode(w);
    if (dec.err == Err::none) {
      out += disassemble(dec.instr);
    } else {
      out += fmt::format(".word 0x{:016x}, 0x{:016x}  # {}", w[0], w[1], err_name(dec.err));
    }
    out += '\n';
  }
  return out;
}

}  // namespace tp::isa
