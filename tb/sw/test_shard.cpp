// The sharding compiler (sw/driver/shard.h) on golden pods: every sharding of a few chains on
// 1x1, 1x2, 2x1, 2x2 and 1x4 slices, against the 1-chip result (bit for bit where the order of
// additions is unchanged) and the sharded reference. A failure prints the seed and the command
// that reproduces it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <bit>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>
#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

#include "fp.h"
#include "layer_file.h"
#include "shard.h"
#include "slice.h"
#include "tb_util.h"

namespace {

using namespace tp::driver;

PodSpec pod(unsigned kx, unsigned ky) { return torus_pod(tp::load_preset("tiny"), kx, ky); }

using tp::tb::seed_or;

std::string rerun(uint64_t seed) {
  return fmt::format("rerun: TP_SEED={} build/tb/test_shard --gtest_filter={}", seed, tp::tb::current_test_name());
}

// Runs chain c sharded on a golden w x h slice; exact: the result must equal the 1-chip result.
// A contraction split sums in another order: fp32 rounding, far below this.
constexpr double kOrderBound = 1e-5;

// test_seed: the seed TP_SEED reproduces the case with (the test's own, for a case drawn from it).
ShardRun check(const Chain& c, const std::string& sharding, unsigned w, unsigned h, uint64_t seed, bool exact,
               uint64_t test_seed = 0) {
  if (test_seed == 0) test_seed = seed;
  auto s = Slice::open(pod(w, h), {0, 0, w, h}, Backend::golden);
  const auto ops = random_operands(c, seed);
  auto r = run_sharded(*s, c, parse_sharding(sharding), ops);
  EXPECT_TRUE(r.status.ok()) << r.what << ": " << describe_outcomes(r.status) << "\n" << rerun(test_seed);
  EXPECT_TRUE(r.pass) << r.what << ": " << r.mismatches << " elements differ from the sharded reference\n"
                      << r.summary << rerun(test_seed);
  if (exact) {
    EXPECT_EQ(r.one_chip_differences, 0u) << r.what << ": differs from the 1-chip result\n"
                                          << r.summary << rerun(test_seed);
  } else {
    EXPECT_LT(r.one_chip_max_rel, kOrderBound) << r.what << ": too far from the 1-chip result\n"
                                               << r.summary << rerun(test_seed);
  }
  return r;
}

TEST(Shard, ParseAndName) {
  EXPECT_EQ(sharding_name(parse_sharding("batch=x,model=y")), "batch=x,model=y");
  EXPECT_EQ(sharding_name(parse_sharding("model=xy:k")), "model=xy:k");
  EXPECT_EQ(sharding_name(parse_sharding("model=y:cols/k/cols")), "model=y:cols/k/cols");
  EXPECT_EQ(sharding_name(parse_sharding("")), "none");
  EXPECT_EQ(sharding_name(parse_sharding("model=xy:k/k,overlap")), "model=xy:k/k,overlap");
  EXPECT_EQ(sharding_name(parse_sharding("model=xy:k/k,overlap=off")), "model=xy:k/k,overlap=off");
  EXPECT_EQ(sharding_name(parse_sharding("model=xy:k/k,overlap=auto")), "model=xy:k/k");
  EXPECT_EQ(parse_sharding("model=xy:k").overlap, Overlap::automatic);
  EXPECT_THROW(parse_sharding("model=y:k,overlap=maybe"), DriverError);
  for (const char* bad : {"batch=z", "batch=x,batch=y", "model=x,batch=x", "model=y:rows", "foo=x", "batch",
                          "model=", "batch=xx", "model=y:cols/", "batch=y,", ",model=x"})
    EXPECT_THROW(parse_sharding(bad), DriverError) << bad;
}

TEST(Shard, BadPlans) {
  const tp::Preset t = tp::load_preset("tiny");
  const Chain c = mlp_chain({16, 24, 40, 8});
  const auto ops = random_operands(c, 1);
  // An axis of more than one chip with no role, a batch smaller than its groups, a split list of
  // the wrong length, operands of the wrong size.
  EXPECT_THROW(compile_sharded(t, c, parse_sharding("batch=x"), 2, 2, ops), DriverError);
  EXPECT_THROW(compile_sharded(t, mlp_chain({1, 24, 40, 8}), parse_sharding("batch=y"), 1, 2,
                               random_operands(mlp_chain({1, 24, 40, 8}), 1)),
               DriverError);
  EXPECT_THROW(compile_sharded(t, c, parse_sharding("model=y:cols/k/k"), 1, 2, ops), DriverError);
  auto short_ops = ops;
  short_ops.w[1].pop_back();
  EXPECT_THROW(compile_sharded(t, c, parse_sharding("model=y"), 1, 2, short_ops), DriverError);
  EXPECT_NO_THROW(compile_sharded(t, c, parse_sharding("model=y"), 1, 2, ops));
  // HBM: a matrix larger than a chip's memory, refused before any operand is drawn.
  EXPECT_THROW(check_chain(t, mlp_chain({4096, 4096, 8})), DriverError);
  // The instruction memory: 200 contraction-split layers, each with its all-reduce and epilogue.
  std::vector<uint32_t> deep = {8, 8};
  for (int i = 0; i < 200; ++i) deep.push_back(8);
  const Chain dc = mlp_chain(deep);
  EXPECT_THROW(compile_sharded(t, dc, parse_sharding("model=y:k"), 1, 2, random_operands(dc, 1)), DriverError);
  // VMEM: a row of 2100 beats does not fit the epilogue's buffer (or the layer's tiling).
  const Chain wide = mlp_chain({2, 8, 8 * 2100, 8});
  EXPECT_THROW(compile_sharded(t, wide, parse_sharding("model=y:k"), 1, 2, random_operands(wide, 1)),
               std::runtime_error);
  // A contraction split on a model group of one chip is a whole layer: no collective.
  EXPECT_EQ(compile_sharded(t, c, parse_sharding("batch=x,model=y:k"), 2, 1, ops).collectives, 0u);
}

// Collectives and epilogues larger than VMEM, cut into chunks: two all-gather chunks, three
// all-reduce chunks; an epilogue of more rows than its buffer.
TEST(Shard, ChunkedCollectivesAndEpilogues) {
  const uint64_t seed = seed_or(107);
  auto r = check(mlp_chain({200, 24, 64, 40, 72}), "model=y:cols/cols/k", 1, 2, seed, false);
  EXPECT_GE(r.collectives, 5u) << r.summary;
  r = check(mlp_chain({1100, 8, 16, 8}), "model=y:k/k", 1, 2, seed, false);
  EXPECT_GE(r.collectives, 4u) << r.summary;
  check(mlp_chain({300, 16, 200, 8}), "model=x:cols/cols", 2, 1, seed, true);
}

// Data parallel and column splits: the 1-chip result bit for bit.
TEST(Shard, DataParallelIsBitExact) {
  const uint64_t seed = seed_or(101);
  const Chain c = mlp_chain({37, 24, 40, 17});
  check(c, "", 1, 1, seed, true);
  check(c, "batch=y", 1, 2, seed, true);
  check(c, "batch=x", 2, 1, seed, true);
  check(c, "batch=xy", 2, 2, seed, true);
  check(c, "batch=y", 1, 4, seed, true);
}

TEST(Shard, ColumnSplitIsBitExact) {
  const uint64_t seed = seed_or(102);
  // 5 beats of columns over 4 chips: blocks of 2, 2, 1 and 0 beats; 43 columns end mid-beat.
  const Chain c = mlp_chain({21, 30, 43, 36, 11});
  check(c, "model=y:cols", 1, 2, seed, true);
  check(c, "model=x:cols", 2, 1, seed, true);
  check(c, "model=xy:cols", 2, 2, seed, true);
  check(c, "model=y:cols", 1, 4, seed, true);
  check(c, "batch=x,model=y:cols", 2, 2, seed, true);
}

// The contraction split changes the order of additions: the sharded reference's bits, close to the
// 1-chip result.
TEST(Shard, ContractionSplitMatchesItsOrder) {
  const uint64_t seed = seed_or(103);
  const Chain c = mlp_chain({19, 45, 40, 24});
  for (const auto& [sh, w, h] : std::vector<std::tuple<std::string, unsigned, unsigned>>{{"model=y:k", 1, 2},
                                                                                         {"model=x:k", 2, 1},
                                                                                         {"model=xy:k", 2, 2},
                                                                                         {"model=y:k", 1, 4},
                                                                                         {"batch=y,model=x:k", 2, 2}}) {
    check(c, sh, w, h, seed, false);
  }
}

// The k layers' all-reduce in row blocks, each beside the next block's matmul (",overlap"; the
// default, automatic, keeps it where the golden estimate is faster):
// bit-exact with the sharded reference in its order (the blocks move the all-reduce's chunk
// boundaries, so the bits differ from the unsplit run's), on rings and the torus, with chips that
// have no K block (they run the collective alone), several blocks, a Megatron pair; and on 2x2
// the overlapped program takes fewer cycles (64x128x64x32, k/k: measured 11,829 -> 10,936 on the
// golden estimate).
TEST(Shard, OverlappedAllReduceIsBitExactAndFaster) {
  const uint64_t seed = seed_or(106);
  for (const auto& [dims, sh, w, h] : std::vector<std::tuple<std::vector<uint32_t>, std::string, unsigned, unsigned>>{
           {{19, 45, 40, 24}, "model=y:k", 1, 2},
           {{19, 45, 40, 24}, "model=xy:k", 2, 2},
           {{70, 45, 40, 24}, "model=y:k", 1, 4},
           {{40, 64, 48, 24}, "batch=y,model=x", 2, 2},
           {{64, 128, 64, 32}, "model=xy:k/k", 2, 2}}) {
    SCOPED_TRACE(fmt::format("{} {}x{}", sh, w, h));
    const Chain c = mlp_chain(dims);
    const auto plain = check(c, sh + ",overlap=off", w, h, seed, false);
    const auto over = check(c, sh + ",overlap", w, h, seed, false);
    const auto automatic = check(c, sh, w, h, seed, false);
    ASSERT_TRUE(plain.status.ok() && over.status.ok() && automatic.status.ok());
    if (dims[0] == 64) {
      EXPECT_LT(over.status.cycles, plain.status.cycles);
    }
    // The default keeps whichever the estimate found faster (here the golden pod is the estimate).
    EXPECT_EQ(automatic.status.cycles, std::min(over.status.cycles, plain.status.cycles)) << automatic.summary;
  }
}

// Megatron (cols then k) and both axes at once, the issue's user command in small.
TEST(Shard, MegatronAndBothAxes) {
  const uint64_t seed = seed_or(104);
  const Chain c = mlp_chain({32, 16, 32, 24, 8});
  for (const auto& [sh, w, h] : std::vector<std::tuple<std::string, unsigned, unsigned>>{{"model=y", 1, 2},
                                                                                         {"model=y", 1, 4},
                                                                                         {"batch=x,model=y", 2, 2},
                                                                                         {"model=y:cols/k/cols", 1, 4},
                                                                                         {"model=y:k/cols/k", 1, 2}}) {
    const auto r = check(c, sh, w, h, seed, false);
    EXPECT_GT(r.collectives, 0u) << r.what;
  }
}

// Random chains and shardings.
TEST(Shard, RandomChains) {
  const uint64_t seed = seed_or(105);
  std::mt19937_64 rng(seed);
  const std::vector<std::pair<unsigned, unsigned>> shapes = {{1, 1}, {1, 2}, {2, 1}, {2, 2}, {1, 4}};
  for (int t = 0; t < 12; ++t) {
    const auto [w, h] = shapes[rng() % shapes.size()];
    std::vector<uint32_t> dims = {static_cast<uint32_t>(4 + rng() % 40)};
    const unsigned layers = 1 + static_cast<unsigned>(rng() % 3);
    for (unsigned i = 0; i <= layers; ++i) dims.push_back(static_cast<uint32_t>(1 + rng() % 50));
    const Chain c = mlp_chain(dims);
    std::string sh;
    const unsigned kind = static_cast<unsigned>(rng() % 3);
    const std::string model = w > 1 && h > 1 ? (rng() % 2 ? "xy" : "y") : (w > 1 ? "x" : "y");
    if (w * h == 1) {
      sh = "";
    } else if (kind == 0 || (w > 1 && h > 1 && model == "y")) {
      sh = w > 1 && h > 1 && model == "y" ? "batch=x,model=y" : fmt::format("batch={}", model);
    } else {
      sh = fmt::format("model={}", model);
    }
    if (sh.find("model") != std::string::npos) {
      std::string list;
      for (unsigned i = 0; i < layers; ++i) list += fmt::format("{}{}", i ? "/" : "", rng() % 2 ? "cols" : "k");
      sh += ":" + list;
    }
    SCOPED_TRACE(fmt::format("case {}: {} {} on {}x{}", t, chain_name(c), sh, w, h));
    const uint64_t s = rng();
    check(c, sh, w, h, s, sh.find(":k") == std::string::npos && sh.find("/k") == std::string::npos, seed);
  }
}

// A layer file with .npy operands, as NumPy writes them: loaded, run on one chip and sharded,
// the output written as .npy and read back; and bad files refused with the file and the reason.
TEST(Shard, LayerFileWithNpy) {
  const uint64_t seed = seed_or(106);
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("tp_layer_file_{}", ::getpid());
  fs::create_directories(dir);
  const Chain want = [] {
    Chain c;
    c.m = 13;
    c.k = 20;
    c.layers = {{24, true, true}, {9, false, false}};
    return c;
  }();
  const auto ops = random_operands(want, seed);
  auto f32 = [](const std::vector<uint16_t>& v, size_t r, size_t c) {
    xt::xarray<float> a = xt::zeros<float>({r, c});
    for (size_t i = 0; i < r; ++i)
      for (size_t j = 0; j < c; ++j) a(i, j) = std::bit_cast<float>(uint32_t{v[i * c + j]} << 16);
    return a;
  };
  xt::dump_npy((dir / "x.npy").string(), f32(ops.x, 13, 20));
  xt::dump_npy((dir / "w0.npy").string(), f32(ops.w[0], 20, 24));
  xt::xarray<float> b0 = xt::zeros<float>({size_t{24}});
  for (size_t j = 0; j < 24; ++j) b0(j) = std::bit_cast<float>(ops.b[0][j]);
  xt::dump_npy((dir / "b0.npy").string(), b0);
  // The last weights as bf16 bit patterns (uint16).
  xt::xarray<uint16_t> w1 = xt::zeros<uint16_t>({size_t{24}, size_t{9}});
  for (size_t i = 0; i < 24 * 9; ++i) w1(i / 9, i % 9) = ops.w[1][i];
  xt::dump_npy((dir / "w1.npy").string(), w1);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return dir / name;
  };
  const auto good = write(
      "model.json", R"({"x": "x.npy", "layers": [{"w": "w0.npy", "b": "b0.npy", "relu": true}, {"w": "w1.npy"}]})");
  const LayerFile lf = load_layer_file(good);
  EXPECT_EQ(lf.rounded, 0u);
  EXPECT_EQ(chain_name(lf.chain), chain_name(want));
  EXPECT_TRUE(lf.chain.layers[0].bias && lf.chain.layers[0].relu && !lf.chain.layers[1].bias &&
              !lf.chain.layers[1].relu);
  EXPECT_EQ(lf.operands.x, ops.x);
  EXPECT_EQ(lf.operands.w, ops.w);
  EXPECT_EQ(lf.operands.b[0], ops.b[0]);
  const auto one = chain_reference(tp::load_preset("tiny"), lf.chain, lf.operands);
  for (const auto& [sh, w, h] : std::vector<std::tuple<std::string, unsigned, unsigned>>{
           {"", 1, 1}, {"model=y:cols", 1, 2}, {"batch=x", 2, 1}}) {
    auto s = Slice::open(pod(w, h), {0, 0, w, h}, Backend::golden);
    const auto r = run_sharded(*s, lf.chain, parse_sharding(sh), lf.operands);
    ASSERT_TRUE(r.pass) << sh << rerun(seed);
    EXPECT_EQ(r.output, one) << sh;
  }
  save_npy_fp32(dir / "y.npy", 13, 9, one);
  const auto y = xt::load_npy<float>((dir / "y.npy").string());
  ASSERT_EQ(y.dimension(), 2u);
  ASSERT_EQ(y.shape()[0], 13u);
  ASSERT_EQ(y.shape()[1], 9u);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(std::bit_cast<uint32_t>(y(i / 9, i % 9)), one[i]) << i;

  // A float32 value bf16 does not hold is rounded and counted.
  xt::xarray<float> x2 = f32(ops.x, 13, 20);
  x2(0, 0) = 1.0f + 1.0f / 1024;
  xt::dump_npy((dir / "x2.npy").string(), x2);
  EXPECT_EQ(load_layer_file(write("rounded.json", R"({"x": "x2.npy", "layers": [{"w": "w0.npy"}]})")).rounded, 1u);

  // Bad files: each error names the file and what is wrong.
  xt::xarray<int32_t> bad_type = xt::zeros<int32_t>({size_t{13}, size_t{20}});
  xt::dump_npy((dir / "int.npy").string(), bad_type);
  std::ofstream(dir / "junk.npy") << "not a numpy file";
  {  // a header that promises more data than the file holds
    const std::string full = xt::dump_npy(f32(ops.x, 13, 20));
    std::ofstream(dir / "short.npy", std::ios::binary) << full.substr(0, full.size() - 8);
  }
  for (const auto& [text, needle] : std::vector<std::pair<std::string, std::string>>{
           {R"({"layers": [{"w": "w0.npy"}]})", "\"x\""},
           {R"({"x": "x.npy", "layers": []})", "layers"},
           {R"({"x": "x.npy", "layers": [{"w": "w1.npy"}]})", "rows"},
           {R"({"x": "x.npy", "layers": [{"w": "w0.npy", "b": "w0.npy"}]})", "bias"},
           {R"({"x": "int.npy", "layers": [{"w": "w0.npy"}]})", "float32"},
           {R"({"x": "junk.npy", "layers": [{"w": "w0.npy"}]})", "junk.npy"},
           {R"({"x": "none.npy", "layers": [{"w": "w0.npy"}]})", "no such file"},
           {R"({"x": "x.npy", "layers": [{"w": "w0.npy", "gelu": true}]})", "gelu"},
           {R"({"x": "x.npy", "layers": [{"w": "w0.npy"}], "extra": 1})", "extra"},
           {R"({"x": "x.npy", )", "not JSON"},
           {R"({"x": "short.npy", "layers": [{"w": "w0.npy"}]})", "bytes of data"},
           {R"({"x": "x.npy", "layers": [{"w": "w0.npy", "relu": "yes"}]})", "true or false"}}) {
    const auto f = write("bad.json", text);
    try {
      (void)load_layer_file(f);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const DriverError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what() << " (wanted '" << needle << "')";
    }
  }
  fs::remove_all(dir);
}

}  // namespace
