// Fuzz target: the .npy reading path of layer files (tp::driver::load_layer_file), and the
// --shard parser (tp::driver::parse_sharding). The input is written as x.npy next to a fixed
// layer file ({"x": "x.npy", "layers": [{"w": "w0.npy"}]}) and a well-formed w0.npy (2 x 3
// float32), in a directory of this process's own; then it is parsed as a --shard text.
// DriverError is the expected outcome for a bad file or text. A file that loads must give a chain
// x[m, 2] x W[2, 3]; a sharding that parses must parse again from its name to the same sharding.
// Any other exception, a crash, a leak or UB is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "driver.h"
#include "fuzz_util.h"
#include "layer_file.h"
#include "shard.h"

namespace {

namespace fs = std::filesystem;

// The directory with the layer file and w0.npy, made once per process and removed at exit.
const fs::path& work_dir() {
  static const fs::path dir = [] {
    std::string tmpl = (fs::temp_directory_path() / "tp_fuzz_layers.XXXXXX").string();
    if (!mkdtemp(tmpl.data())) tp::fuzz::fail("cannot make a temporary directory from {}", tmpl);
    const fs::path d = tmpl;
    std::ofstream(d / "model.json") << R"({"x": "x.npy", "layers": [{"w": "w0.npy"}]})"
                                    << "\n";
    tp::driver::save_npy_fp32(d / "w0.npy", 2, 3, {0x3f800000, 0x40000000, 0x40400000, 0xbf800000, 0, 0x3f000000});
    return d;
  }();
  // Registered once dir is made, so it runs before dir is destroyed.
  static const bool cleanup = (std::atexit([] {
                                 std::error_code ec;
                                 fs::remove_all(dir, ec);
                               }),
                               true);
  (void)cleanup;
  return dir;
}

void layer_file(const uint8_t* data, size_t size) {
  const fs::path& dir = work_dir();
  {
    std::ofstream out(dir / "x.npy", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) tp::fuzz::fail("cannot write {}", (dir / "x.npy").string());
  }
  tp::driver::LayerFile f;
  try {
    f = tp::driver::load_layer_file(dir / "model.json");
  } catch (const tp::driver::DriverError&) {
    return;
  }
  if (f.chain.k != 2 || f.chain.layers.size() != 1 || f.chain.layers[0].n != 3 ||
      f.operands.x.size() != uint64_t{f.chain.m} * 2 || f.operands.w.size() != 1 || f.operands.w[0].size() != 6)
    tp::fuzz::fail("x.npy ({} bytes) loaded as a chain {} with {} values of x", size, tp::driver::chain_name(f.chain),
                   f.operands.x.size());
}

void sharding(std::string_view text) {
  tp::driver::Sharding s;
  try {
    s = tp::driver::parse_sharding(text);
  } catch (const tp::driver::DriverError&) {
    return;
  }
  const std::string name = tp::driver::sharding_name(s);
  if (name == "none") return;  // the empty sharding's name is not a --shard text
  try {
    const std::string again = tp::driver::sharding_name(tp::driver::parse_sharding(name));
    if (again != name) tp::fuzz::fail("sharding '{}' is '{}', which parses as '{}'", text, name, again);
  } catch (const tp::driver::DriverError& e) {
    tp::fuzz::fail("sharding '{}' is '{}', which does not parse: {}", text, name, e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  layer_file(data, size);
  sharding(tp::fuzz::text_of(data, size));
  return 0;
}
