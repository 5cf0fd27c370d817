// Layer files and .npy operands (layer_file.h), with xtensor's .npy reader and writer.
#include "layer_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <fstream>
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

Npy read_npy(const std::filesystem::path& path, const std::string& what) {
  auto fail = [&](const std::string& why) { return DriverError(fmt::format("{} ({}): {}", path.string(), what, why)); };
  if (!std::filesystem::is_regular_file(path)) throw fail("no such file");
  Npy out;
  // xtensor reads what the header promises and does not check the file holds it: the data's
  // size must be the shape's elements times the item size, exactly.
  const auto check_size = [&](std::size_t item) {
    std::ifstream f(path, std::ios::binary);
    char head[12] = {};
    f.read(head, sizeof head);
    const auto u8 = [&](int i) { return static_cast<uint64_t>(static_cast<unsigned char>(head[i])); };
    const bool v1 = u8(6) == 1;
    const uint64_t offset = v1 ? 10 + (u8(8) | u8(9) << 8) : 12 + (u8(8) | u8(9) << 8 | u8(10) << 16 | u8(11) << 24);
    uint64_t elems = 1;
    for (const auto d : out.shape) elems *= d;
    const uint64_t size = std::filesystem::file_size(path);
    if (size != offset + elems * item)
      throw fail(fmt::format("the header's shape {} needs {} bytes of data, the file has {}", fmt::join(out.shape, "x"),
                             elems * item, size > offset ? size - offset : 0));
  };
  auto take = [&](const auto& a, auto& dst) {
    out.shape.assign(a.shape().begin(), a.shape().end());
    dst.clear();
    if (a.dimension() == 1) {
      for (std::size_t i = 0; i < a.shape()[0]; ++i) dst.push_back(a(i));
    } else if (a.dimension() == 2) {
      for (std::size_t i = 0; i < a.shape()[0]; ++i)
        for (std::size_t j = 0; j < a.shape()[1]; ++j) dst.push_back(a(i, j));
    } else {
      throw fail(fmt::format("{} dimensions; expected a matrix", a.dimension()));
    }
  };
  try {
    take(xt::load_npy<float>(path.string()), out.f32);
    check_size(4);
  } catch (const DriverError&) {
    throw;
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    if (msg.find("Cast error: formats") == std::string::npos) throw fail(msg);
    try {
      take(xt::load_npy<uint16_t>(path.string()), out.u16);
      out.is_u16 = true;
      check_size(2);
    } catch (const DriverError&) {
      throw;
    } catch (const std::runtime_error&) {
      throw fail(fmt::format("{}; expected float32 ('<f4') or uint16 ('<u2', bf16 bit patterns)", msg));
    }
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
