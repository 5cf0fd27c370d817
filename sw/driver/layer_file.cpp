// Layer files and .npy operands (layer_file.h): a strict .npy reader of our own (below), and
// xtensor's .npy writer.
#include "layer_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

#include "fp.h"

namespace tp::driver {

namespace {

// A 2-D (or, with vector, 1-D or 1 x n) .npy array as row-major float32 or uint16 values.
struct Npy {
  std::vector<std::size_t> shape;
  std::vector<float> f32;
  std::vector<uint16_t> u16;
  bool is_u16 = false;
};

// The header of a .npy file (NumPy's format, versions 1.0, 2.0 and 3.0): a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), } with these three keys in any order,
// padded with spaces and a newline. Parsed strictly, before anything is allocated: xtensor's
// reader, used before, trusted the header (found by tb/fuzz/fuzz_layers: a 47-byte file whose
// header length said 1.9 GB made it allocate 1.9 GB twice; and a shape whose element count wraps
// round 2^64 made it read past its buffer).
class NpyHeader {
 public:
  // `text` starts at byte `offset` of the file; errors name the byte of the file.
  NpyHeader(std::string_view text, uint64_t offset, std::function<DriverError(const std::string&)> fail)
      : s_(text), offset_(offset), fail_(std::move(fail)) {
    ws();
    expect('{', "'{' (the header is a dict)");
    bool has_descr = false, has_fortran = false, has_shape = false;
    for (;;) {
      ws();
      if (eat('}')) break;
      const uint64_t at = i_;
      const std::string key = string_literal("a key in quotes or '}'");
      ws();
      expect(':', "':' after the key");
      ws();
      auto once = [&](bool& seen) {
        if (seen) throw error_at(at, fmt::format("key '{}' given twice", key));
        seen = true;
      };
      if (key == "descr") {
        once(has_descr);
        descr = string_literal("the dtype in quotes");
      } else if (key == "fortran_order") {
        once(has_fortran);
        fortran_order = boolean();
      } else if (key == "shape") {
        once(has_shape);
        shape = tuple();
      } else {
        throw error_at(at, fmt::format("unknown key '{}' (descr, fortran_order, shape)", key));
      }
      ws();
      if (eat(',')) continue;
      ws();
      expect('}', "',' or '}'");
      break;
    }
    ws();
    if (i_ != s_.size()) throw error_at(i_, "expected the end of the header (spaces and a newline)");
    for (const auto& [seen, key] :
         {std::pair{has_descr, "descr"}, {has_fortran, "fortran_order"}, {has_shape, "shape"}})
      if (!seen) throw fail_(fmt::format("bad header: no '{}' key", key));
  }

  std::string descr;
  bool fortran_order = false;
  std::vector<uint64_t> shape;

 private:
  DriverError error_at(uint64_t i, const std::string& why) const {
    const std::string_view near = s_.substr(std::min<uint64_t>(i, s_.size()), 16);
    std::string shown;
    for (const char c : near) shown += c >= 0x20 && c < 0x7f ? std::string(1, c) : fmt::format("\\x{:02x}", uint8_t(c));
    return fail_(fmt::format("bad header at byte {}: {}, got '{}'", offset_ + i, why, shown));
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c, std::string_view what) {
    if (!eat(c)) throw error_at(i_, fmt::format("expected {}", what));
  }
  std::string string_literal(std::string_view what) {
    const uint64_t at = i_;
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) throw error_at(at, fmt::format("expected {}", what));
    const char quote = s_[i_++];
    const size_t end = s_.find(quote, i_);
    if (end == std::string_view::npos) throw error_at(at, "a string without its closing quote");
    std::string out(s_.substr(i_, end - i_));
    if (out.find('\\') != std::string::npos) throw error_at(at, "a string with an escape");
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    if (s_.substr(i_, 4) == "True") {
      i_ += 4;
      return true;
    }
    if (s_.substr(i_, 5) == "False") {
      i_ += 5;
      return false;
    }
    throw error_at(i_, "expected True or False");
  }
  // (), (N,), (N, M), ... of non-negative integers.
  std::vector<uint64_t> tuple() {
    std::vector<uint64_t> out;
    expect('(', "'(' (the shape is a tuple)");
    for (;;) {
      ws();
      if (eat(')')) break;
      const uint64_t at = i_;
      if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '9') throw error_at(at, "expected a dimension or ')'");
      uint64_t v = 0;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
        if (v > (UINT64_MAX - 9) / 10) throw error_at(at, "a dimension that does not fit 64 bits");
        v = v * 10 + static_cast<uint64_t>(s_[i_++] - '0');
      }
      out.push_back(v);
      ws();
      if (eat(',')) continue;
      ws();
      expect(')', "',' or ')'");
      break;
    }
    return out;  // "(N)" counts as (N,), as it did with xtensor's reader
  }

  std::string_view s_;
  uint64_t offset_;
  std::function<DriverError(const std::string&)> fail_;
  uint64_t i_ = 0;
};

Npy read_npy(const std::filesystem::path& path, const std::string& what) {
  auto fail = [&](const std::string& why) { return DriverError(fmt::format("{} ({}): {}", path.string(), what, why)); };
  if (!std::filesystem::is_regular_file(path)) throw fail("no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw fail("cannot read");
  const uint64_t size = std::filesystem::file_size(path);
  auto read = [&](uint64_t at, uint64_t n) {
    std::string bytes(n, '\0');
    in.seekg(static_cast<std::streamoff>(at));
    in.read(bytes.data(), static_cast<std::streamsize>(n));
    if (!in) throw fail("cannot read");
    return bytes;
  };
  // Magic, version, the header's length: all before the header is read.
  constexpr std::string_view kMagic = "\x93NUMPY";
  const std::string pre = read(0, std::min<uint64_t>(size, 12));
  if (pre.size() < 10 || std::string_view(pre).substr(0, kMagic.size()) != kMagic)
    throw fail("not a .npy file (it does not start with \\x93NUMPY)");
  const auto u8 = [&](size_t i) { return static_cast<uint64_t>(static_cast<unsigned char>(pre[i])); };
  const uint64_t major = u8(6), minor = u8(7);
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    throw fail(fmt::format("unsupported .npy format version {}.{} (1.0, 2.0 or 3.0)", major, minor));
  if (major > 1 && pre.size() < 12) throw fail(fmt::format("truncated: {} bytes, shorter than the preamble", size));
  const uint64_t start = major == 1 ? 10 : 12;
  const uint64_t header_len = major == 1 ? (u8(8) | u8(9) << 8) : (u8(8) | u8(9) << 8 | u8(10) << 16 | u8(11) << 24);
  if (header_len > size - start)
    throw fail(
        fmt::format("truncated: the header is {} bytes, the file has {} after the preamble", header_len, size - start));
  const NpyHeader h(read(start, header_len), start, fail);
  Npy out;
  out.shape.assign(h.shape.begin(), h.shape.end());
  if (h.descr != "<f4" && h.descr != "<u2")
    throw fail(fmt::format("dtype '{}'; expected float32 ('<f4') or uint16 ('<u2', bf16 bit patterns)", h.descr));
  out.is_u16 = h.descr == "<u2";
  if (h.shape.size() != 1 && h.shape.size() != 2)
    throw fail(fmt::format("{} dimensions; expected a matrix", h.shape.size()));
  // The data's size must be the shape's elements times the item size, exactly.
  const uint64_t item = out.is_u16 ? 2 : 4, offset = start + header_len;
  uint64_t elems = 1, bytes = 0;
  for (const uint64_t d : h.shape) {
    if (d > UINT32_MAX)
      throw fail(fmt::format("the header's shape {} has a dimension above 2^32 - 1", fmt::join(h.shape, "x")));
    elems *= d;  // two dimensions below 2^32: no overflow
  }
  if (__builtin_mul_overflow(elems, item, &bytes))
    throw fail(fmt::format("the header's shape {} needs more than 2^64 bytes of data", fmt::join(h.shape, "x")));
  if (bytes != size - offset)
    throw fail(fmt::format("the header's shape {} needs {} bytes of data, the file has {}", fmt::join(h.shape, "x"),
                           bytes, size - offset));
  const std::string data = read(offset, bytes);
  const uint64_t rows = h.shape[0], cols = h.shape.size() == 2 ? h.shape[1] : 1;
  auto at = [&](uint64_t i, uint64_t j) {  // the element (i, j) of a row-major or Fortran-order array
    const uint64_t e = h.fortran_order ? j * rows + i : i * cols + j;
    uint32_t v = 0;
    for (uint64_t b = 0; b < item; ++b) v |= uint32_t{static_cast<unsigned char>(data[e * item + b])} << (8 * b);
    return v;
  };
  if (out.is_u16)
    out.u16.reserve(elems);
  else
    out.f32.reserve(elems);
  for (uint64_t i = 0; i < rows; ++i)
    for (uint64_t j = 0; j < cols; ++j) {
      if (out.is_u16)
        out.u16.push_back(static_cast<uint16_t>(at(i, j)));
      else
        out.f32.push_back(std::bit_cast<float>(at(i, j)));
    }
  return out;
}

// bf16 values of a float32 or uint16 array; counts the float32 values bf16 does not hold.
std::vector<uint16_t> as_bf16(const Npy& a, uint64_t& rounded) {
  if (a.is_u16) return a.u16;
  std::vector<uint16_t> out;
  out.reserve(a.f32.size());
  for (const float f : a.f32) {
    const uint32_t bits = std::bit_cast<uint32_t>(f);
    const uint16_t b = static_cast<uint16_t>(golden::fp32_to_bf16(bits));
    rounded += (uint32_t{b} << 16) != bits;
    out.push_back(b);
  }
  return out;
}

}  // namespace

LayerFile load_layer_file(const std::filesystem::path& file) {
  const std::string name = file.string();
  std::ifstream in(file);
  if (!in) throw DriverError(fmt::format("{}: cannot read the layer file", name));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw DriverError(fmt::format("{}: not JSON: {}", name, e.what()));
  }
  const auto dir = file.parent_path();
  auto path_of = [&](const nlohmann::json& obj, const std::string& key, const std::string& where) {
    if (!obj.is_object() || !obj.contains(key) || !obj[key].is_string())
      throw DriverError(fmt::format("{}: {}: expected \"{}\": \"FILE.npy\"", name, where, key));
    return dir / obj[key].get<std::string>();
  };
  if (!j.is_object()) throw DriverError(fmt::format("{}: expected an object with \"x\" and \"layers\"", name));
  for (const auto& [key, v] : j.items())
    if (key != "x" && key != "layers") throw DriverError(fmt::format("{}: unknown key \"{}\"", name, key));
  if (!j.contains("layers") || !j["layers"].is_array() || j["layers"].empty())
    throw DriverError(fmt::format("{}: \"layers\" must be a non-empty list", name));
  LayerFile out;
  const Npy x = read_npy(path_of(j, "x", "the input"), "x");
  if (x.shape.size() != 2) throw DriverError(fmt::format("{}: x must be a matrix (m x k)", name));
  out.chain.m = static_cast<uint32_t>(x.shape[0]);
  out.chain.k = static_cast<uint32_t>(x.shape[1]);
  out.operands.x = as_bf16(x, out.rounded);
  uint64_t k = x.shape[1];
  for (size_t i = 0; i < j["layers"].size(); ++i) {
    const auto& l = j["layers"][i];
    const std::string where = fmt::format("layer {}", i);
    if (!l.is_object()) throw DriverError(fmt::format("{}: {}: expected an object", name, where));
    for (const auto& [key, v] : l.items())
      if (key != "w" && key != "b" && key != "relu")
        throw DriverError(fmt::format("{}: {}: unknown key \"{}\" (w, b, relu)", name, where, key));
    const Npy w = read_npy(path_of(l, "w", where), where + " w");
    if (w.shape.size() != 2 || w.shape[0] != k)
      throw DriverError(fmt::format("{}: {}: W is {}, expected {} rows (the previous width)", name, where,
                                    fmt::join(w.shape, "x"), k));
    ChainLayer cl;
    cl.n = static_cast<uint32_t>(w.shape[1]);
    if (l.contains("relu") && !l["relu"].is_boolean())
      throw DriverError(fmt::format("{}: {}: \"relu\" must be true or false", name, where));
    cl.relu = l.value("relu", false);
    cl.bias = l.contains("b");
    out.operands.w.push_back(as_bf16(w, out.rounded));
    std::vector<uint32_t> bias;
    if (cl.bias) {
      const Npy b = read_npy(path_of(l, "b", where), where + " b");
      const bool row = b.shape.size() == 1 || (b.shape.size() == 2 && b.shape[0] == 1);
      if (!row || b.shape.back() != cl.n || b.is_u16)
        throw DriverError(fmt::format("{}: {}: the bias must be {} float32 values", name, where, cl.n));
      for (const float f : b.f32) bias.push_back(std::bit_cast<uint32_t>(f));
    }
    out.operands.b.push_back(std::move(bias));
    out.chain.layers.push_back(cl);
    k = cl.n;
  }
  check_operands(out.chain, out.operands);
  return out;
}

void save_npy_fp32(const std::filesystem::path& path, uint32_t rows, uint32_t cols, const std::vector<uint32_t>& bits) {
  if (bits.size() != uint64_t{rows} * cols)
    throw DriverError(fmt::format("{}: {} values for a {}x{} matrix", path.string(), bits.size(), rows, cols));
  xt::xarray<float> a = xt::zeros<float>({std::size_t{rows}, std::size_t{cols}});
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) a(i, j) = std::bit_cast<float>(bits[i * cols + j]);
  try {
    xt::dump_npy(path.string(), a);
  } catch (const std::exception& e) {
    throw DriverError(fmt::format("{}: cannot write: {}", path.string(), e.what()));
  }
  if (!std::filesystem::is_regular_file(path)) throw DriverError(fmt::format("{}: cannot write", path.string()));
}

}  // namespace tp::driver
