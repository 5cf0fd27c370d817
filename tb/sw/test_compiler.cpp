// The compiler and the driver on the golden backend: matmuls and MLPs bit-exact against the host
// reference over many shapes, compile errors, assembly round trip, driver errors.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "collectives.h"
#include "compiler.h"
#include "driver.h"
#include "matmul_shapes.h"
#include "pod_comm.h"
#include "pod_programs.h"
#include "random_program.h"
#include "slice.h"
#include "tb_util.h"

namespace {

using tp::compiler::CompileError;
using tp::compiler::MatmulLayer;
using tp::driver::Backend;
using tp::driver::Chip;
using tp::driver::DriverError;

std::unique_ptr<Chip> golden(const std::string& preset) { return Chip::open(preset, Backend::golden); }

// Checks one run and says which shape and seed failed.
void expect_pass(const tp::driver::MatmulRun& run, const std::string& preset) {
  SCOPED_TRACE(fmt::format("{} on preset {} seed {}", run.what, preset, run.seed));
  EXPECT_TRUE(run.status.ok()) << tp::driver::describe(run.status);
  EXPECT_EQ(run.mismatches, 0u);
  if (run.first_mismatch) {
    const auto& m = *run.first_mismatch;
    ADD_FAILURE() << fmt::format("first mismatch at row {} col {}: got {:#010x}, expected {:#010x}", m.row, m.col,
                                 m.got, m.expected);
  }
  EXPECT_TRUE(run.pass);
}

// A layer placed at fixed beats, for compile-only tests.
MatmulLayer layer_at(const tp::Preset& p, uint32_t m, uint32_t k, uint32_t n, bool bias = false) {
  return tp::compiler::packed_layer(p, m, k, n, bias);
}

using tp::tb::Shape;

using tp::compiler::Form;

// Every golden matmul test runs on each preset in each form of the program: the loops (with the
// shortest layers written out), the unrolled one, and the nests (none written out); automatic
// picks between the first two, the tests force each.
struct FormCase {
  std::string preset;
  Form form;
};

class GoldenMatmul : public ::testing::TestWithParam<FormCase> {};

// Fixed shapes that hit the edges of the tiling: 1x1x1, sizes off multiples of n, several K and N
// tiles, and M larger than one block (the odd preset's 100 accumulator rows give blocks of at most
// 50 rows).
TEST_P(GoldenMatmul, FixedShapes) {
  const std::string preset = GetParam().preset;
  const Form form = GetParam().form;
  auto chip = golden(preset);
  const uint32_t n = chip->lanes();
  const std::vector<Shape> shapes = tp::tb::edge_shapes(n);

  uint64_t seed = tp::tb::test_seed(tp::tb::current_test_name());
  for (const auto& s : shapes) {
    const auto run = tp::driver::run_matmul(*chip, {s.m, s.k, s.n, s.bias, s.relu, form}, seed++);
    expect_pass(run, preset);
    EXPECT_EQ(run.form, form);
    EXPECT_GT(run.mxu_rows, 0u);
  }
  EXPECT_EQ(chip->allocated(), 0u) << "run_matmul releases its HBM";
}

TEST_P(GoldenMatmul, RandomShapes) {
  const std::string preset = GetParam().preset;
  const Form form = GetParam().form;
  auto chip = golden(preset);
  const uint32_t n = chip->lanes();
  const uint64_t seed = tp::tb::test_seed(tp::tb::current_test_name());
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 12; ++i) {
    const Shape s{static_cast<uint32_t>(1 + rng() % 150), static_cast<uint32_t>(1 + rng() % (4 * n)),
                  static_cast<uint32_t>(1 + rng() % (3 * n)), rng() % 2 == 0, rng() % 2 == 0};
    expect_pass(tp::driver::run_matmul(*chip, {s.m, s.k, s.n, s.bias, s.relu, form}, rng()), preset);
  }
}

TEST_P(GoldenMatmul, Mlp) {
  const std::string preset = GetParam().preset;
  const Form form = GetParam().form;
  auto chip = golden(preset);
  const uint32_t n = chip->lanes();
  uint64_t seed = tp::tb::test_seed(tp::tb::current_test_name());
  expect_pass(tp::driver::run_mlp(*chip, {1, 1, 1, 1, form}, seed++), preset);
  expect_pass(tp::driver::run_mlp(*chip, {n + 3, 2 * n + 1, n + 5, n - 1, form}, seed++), preset);
  expect_pass(tp::driver::run_mlp(*chip, {120, n, 3 * n, 2, form}, seed++), preset);
}

// A and W as bf16 two per word in HBM (MatrixRef::bf16x2): the edge shapes and random ones,
// including an odd number of K-tiles (the last one alone in its beat) and a short last M block
// (its packed K-tiles its rows apart, not TM), bit-exact with the host reference.
TEST_P(GoldenMatmul, Bf16x2Operands) {
  const std::string preset = GetParam().preset;
  const Form form = GetParam().form;
  auto chip = golden(preset);
  const uint32_t n = chip->lanes();
  uint64_t seed = tp::tb::test_seed(tp::tb::current_test_name());
  std::mt19937_64 rng(seed);
  auto shapes = tp::tb::edge_shapes(n);
  for (int i = 0; i < 8; ++i)
    shapes.push_back({static_cast<uint32_t>(1 + rng() % 150), static_cast<uint32_t>(1 + rng() % (5 * n)),
                      static_cast<uint32_t>(1 + rng() % (3 * n)), rng() % 2 == 0, rng() % 2 == 0});
  for (const auto& s : shapes) {
    for (const bool a_too : {true, false}) {  // W alone: the loop nests load it packed
      tp::driver::MatmulSpec spec{s.m, s.k, s.n, s.bias, s.relu, form};
      spec.bf16x2 = true;
      spec.bf16x2_a = a_too;
      const auto run = tp::driver::run_matmul(*chip, spec, seed++);
      SCOPED_TRACE(run.what + (a_too ? "" : " (A plain)"));
      expect_pass(run, preset);
    }
  }
  EXPECT_EQ(chip->allocated(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Presets, GoldenMatmul,
                         ::testing::Values(FormCase{"tiny", Form::loops}, FormCase{"odd", Form::loops},
                                           FormCase{"small", Form::loops}, FormCase{"tiny", Form::unrolled},
                                           FormCase{"odd", Form::unrolled}, FormCase{"small", Form::unrolled},
                                           FormCase{"tiny", Form::nests}, FormCase{"odd", Form::nests},
                                           FormCase{"small", Form::nests}),
                         [](const ::testing::TestParamInfo<FormCase>& param) {
                           return param.param.preset + "_" + std::string(tp::compiler::form_name(param.param.form));
                         });

// The loop nest's size does not grow with the shapes: the two targets (58,229 and 29,117
// instructions unrolled) and a 16x larger M give programs of at most 300 instructions, and M, K
// and N past a few tiles change it only by the layer's last epilogue, whose chunks follow the
// last M block's rows (last_epilogue_chunks: up to 8, each a vector instruction, a store and
// an mxu.mm, with the last pass's copy of the last tile: at most 24 more than with one).
TEST(Compiler, LoopProgramSizeIsIndependentOfTheShape) {
  const tp::Preset small = tp::load_preset("small"), tiny = tp::load_preset("tiny");
  const auto big = tp::compiler::compile_info(small, {layer_at(small, 1024, 1024, 1024)});
  EXPECT_EQ(big.form, Form::loops);
  EXPECT_EQ(big.unrolled_instructions, 0u) << "58,223 instructions do not fit 8192";
  EXPECT_LE(big.instructions, 300u);
  const auto t = tp::compiler::compile_info(tiny, {layer_at(tiny, 256, 256, 256)});
  EXPECT_EQ(t.form, Form::loops);
  EXPECT_LE(t.instructions, 300u);
  const auto tall = tp::compiler::compile_info(small, {layer_at(small, 3072, 1024, 1024)});
  EXPECT_NEAR(double(tall.instructions), double(big.instructions), 24.0);
  const auto deep = tp::compiler::compile_info(small, {layer_at(small, 1024, 2048, 1024)});
  EXPECT_NEAR(double(deep.instructions), double(big.instructions), 24.0);
  // The unrolled form of the big layer is refused with its size.
  try {
    (void)tp::compiler::compile(small, {layer_at(small, 1024, 1024, 1024)}, {.form = Form::unrolled});
    ADD_FAILURE() << "no CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("58229 instructions (unrolled)"), std::string::npos) << e.what();
  }
}

// MatmulSpec::load_words pads the program with halts (equal load times for a fair comparison on
// HBM): the run is the same and reports the compiled size; past the instruction memory it is
// refused before the run.
TEST(Compiler, LoadWordsPadsTheProgram) {
  auto chip = golden("tiny");
  const uint64_t seed = tp::tb::test_seed(tp::tb::current_test_name());
  const auto plain = tp::driver::run_matmul(*chip, {20, 9, 30, true, false, Form::loops}, seed);
  const auto padded = tp::driver::run_matmul(*chip, {20, 9, 30, true, false, Form::loops, 1000}, seed);
  expect_pass(plain, "tiny");
  expect_pass(padded, "tiny");
  EXPECT_EQ(padded.output, plain.output);
  EXPECT_EQ(padded.instructions, plain.instructions);
  EXPECT_EQ(padded.cycles, plain.cycles);
  const uint32_t past = chip->preset().chip.imem_words + 1;
  EXPECT_THROW((void)tp::driver::run_matmul(*chip, {20, 9, 30, true, false, Form::loops, past}, seed), DriverError);
}

// The two targets run as loops, bit-exact with the host reference, on the golden backend
// (chip_bench runs them on the RTL).
TEST(Compiler, LoopTargetsRunBitExact) {
  const uint64_t seed = tp::tb::test_seed(tp::tb::current_test_name());
  for (const auto& [preset, size] : {std::pair<std::string, uint32_t>{"tiny", 256}, {"small", 1024}}) {
    auto chip = golden(preset);
    const auto run = tp::driver::run_matmul(*chip, {size, size, size, false, false, Form::loops}, seed);
    expect_pass(run, preset);
    EXPECT_LE(run.instructions, 300u);
  }
}

// automatic: the unrolled program where it fits and is not longer (a small layer), the loops
// otherwise, also where the front end is busiest (one K-tile, many column tiles, few rows: the
// groups' loop in four copies, whose scalar work pairs with the unit instructions).
TEST(Compiler, AutomaticForm) {
  const tp::Preset p = tp::load_preset("tiny");
  const auto small = tp::compiler::compile_info(p, {layer_at(p, 8, 8, 8)});
  EXPECT_EQ(small.form, Form::unrolled);
  EXPECT_EQ(small.layers_written_out, 1u) << "the loops form writes it out too";
  EXPECT_EQ(small.unrolled_instructions, small.looped_instructions);
  EXPECT_LT(small.unrolled_instructions,
            tp::compiler::compile_info(p, {layer_at(p, 8, 8, 8)}, {.form = Form::nests}).instructions);
  const auto frontbound = tp::compiler::compile_info(p, {layer_at(p, 3, 8, 400)});
  EXPECT_EQ(frontbound.form, Form::loops);
  EXPECT_GT(frontbound.unrolled_instructions, frontbound.looped_instructions);
  EXPECT_LT(frontbound.front_per_mxu, 1.0);
  const tp::Preset sp = tp::load_preset("small");
  const auto mid = tp::compiler::compile_info(sp, {layer_at(sp, 256, 256, 256)});
  EXPECT_EQ(mid.form, Form::loops);
  EXPECT_LT(mid.front_per_mxu, 0.4);
  EXPECT_EQ(mid.instructions, mid.looped_instructions);
}

// A layer's last mxu.mm goes in its last epilogue's chunks (256 rows on `small`: a last block
// of 128 rows, eight chunks of 16), each signalling ACC_FULL, and each chunk's vmov takes one:
// unrolled, 15 groups' last mm and vmov and the last group's eight.
TEST(Compiler, LastMmInTheEpiloguesChunks) {
  const tp::Preset p = tp::load_preset("small");
  const auto prog = tp::compiler::compile(p, {layer_at(p, 256, 256, 256)}, {.form = Form::unrolled});
  constexpr unsigned kAccFull = 5;  // the compiler's semaphore (its listing's header)
  unsigned mm_signals = 0, vec_waits = 0, chunk_rows = 0;
  for (const auto& word : prog.code) {
    const auto in = tp::isa::decode(word).instr;
    if (in.op == tp::isa::Op::mxu_mm && in.signal == kAccFull) {
      ++mm_signals;
      if (in.f.rows == 16) ++chunk_rows;
    }
    if (in.op == tp::isa::Op::vmov && in.wait == kAccFull) ++vec_waits;
  }
  EXPECT_EQ(mm_signals, 15u + 8u);
  EXPECT_EQ(chunk_rows, 8u);
  EXPECT_EQ(vec_waits, mm_signals);
}

// The loops form writes out a layer whose unrolled code is no longer than its nest (a few
// column tiles and K-tiles: the nest would run a few trips): the same code as unrolled, counted
// in layers_written_out; nests keeps the nest. A long layer stays a nest, and a chain mixes
// the two, bit-exact.
TEST(Compiler, LoopsFormWritesOutShortLayers) {
  const tp::Preset p = tp::load_preset("odd");
  const std::vector<MatmulLayer> short_layer = {layer_at(p, 56, 30, 28, true)};
  const auto loops = tp::compiler::compile(p, short_layer, {.form = Form::loops});
  const auto unrolled = tp::compiler::compile(p, short_layer, {.form = Form::unrolled});
  EXPECT_EQ(loops.code, unrolled.code);
  const auto info = tp::compiler::compile_info(p, short_layer, {.form = Form::loops});
  EXPECT_EQ(info.layers_written_out, 1u);
  EXPECT_EQ(info.form, Form::loops);
  const auto nest = tp::compiler::compile_info(p, short_layer, {.form = Form::nests});
  EXPECT_EQ(nest.layers_written_out, 0u);
  EXPECT_EQ(nest.form, Form::nests);
  EXPECT_GT(nest.instructions, info.instructions);
  EXPECT_NE(tp::compiler::compile_asm(p, short_layer, {.form = Form::loops}).find("written out"), std::string::npos);
  const tp::Preset sp = tp::load_preset("small");
  const auto big = tp::compiler::compile_info(sp, {layer_at(sp, 1024, 1024, 1024)}, {.form = Form::loops});
  EXPECT_EQ(big.layers_written_out, 0u);
  // An MLP whose first layer has many column tiles (a nest) and whose second one (a single
  // column tile) is written out.
  auto chip = golden("odd");
  const uint64_t seed = tp::tb::test_seed(tp::tb::current_test_name());
  const tp::driver::MlpSpec mlp{20, 12, 240, 5, Form::loops};
  const auto mixed = tp::compiler::compile_info(
      p, {layer_at(p, mlp.m, mlp.k, mlp.h, true), layer_at(p, mlp.m, mlp.h, mlp.n, true)}, {.form = Form::loops});
  EXPECT_EQ(mixed.layers_written_out, 1u);
  const auto run = tp::driver::run_mlp(*chip, mlp, seed);
  expect_pass(run, "odd");
  auto nests = mlp;
  nests.form = Form::nests;
  const auto again = tp::driver::run_mlp(*chip, nests, seed);
  expect_pass(again, "odd");
  EXPECT_EQ(run.output, again.output);
}

// Wherever the unrolled form fits too, the nests cost at most 1% more cycles on the golden
// timing estimate (which models the front end's dual issue exactly, not the memory port), or
// 32 cycles on a layer of a few hundred: on one-column-tile layers of several blocks with one to
// three K-tiles the estimate puts the next blocks' A loads a little differently (the RTL runs
// these loops faster than unrolled). Random shapes at every preset, half of them the front
// end's hardest (few rows, one to three K-tiles, many column tiles), bit-exact both ways; and
// in total within 1%.
TEST(Compiler, LoopsKeepTheMxuFedOnTheGoldenEstimate) {
  const uint64_t seed = tp::tb::test_seed(tp::tb::current_test_name());
  std::mt19937_64 rng(seed);
  int compared = 0;
  double loops_total = 0, unrolled_total = 0;
  for (const std::string preset : {"tiny", "odd", "small"}) {
    auto chip = golden(preset);
    const uint32_t n = chip->lanes();
    for (int i = 0, here = 0; i < 120 && here < 16; ++i) {
      const bool busy = i % 2 == 1;
      const tp::driver::MatmulSpec s{static_cast<uint32_t>(1 + rng() % ((busy ? 2 : 16) * n)),
                                     static_cast<uint32_t>(1 + rng() % ((busy ? 3 : 8) * n)),
                                     static_cast<uint32_t>(1 + rng() % ((busy ? 40 : 6) * n)), rng() % 2 == 0,
                                     rng() % 2 == 0};
      const tp::Preset& p = chip->preset();
      const auto info = tp::compiler::compile_info(p, {layer_at(p, s.m, s.k, s.n, s.bias)});
      if (info.unrolled_instructions == 0) continue;
      ++compared;
      ++here;
      auto loops = s, unrolled = s;
      loops.form = Form::nests;  // the nests themselves (the loops form writes the shortest out)
      unrolled.form = Form::unrolled;
      const uint64_t run_seed = rng();
      const auto a = tp::driver::run_matmul(*chip, loops, run_seed);
      const auto b = tp::driver::run_matmul(*chip, unrolled, run_seed);
      SCOPED_TRACE(fmt::format("{} on {} (test seed {})", a.what, preset, seed));
      expect_pass(a, preset);
      expect_pass(b, preset);
      EXPECT_EQ(a.output, b.output);
      EXPECT_LE(static_cast<double>(a.cycles), std::max(1.01 * static_cast<double>(b.cycles), double(b.cycles + 32)));
      loops_total += static_cast<double>(a.cycles);
      unrolled_total += static_cast<double>(b.cycles);
    }
  }
  EXPECT_GE(compared, 36) << "too few shapes where both forms fit";
  EXPECT_LE(loops_total, 1.01 * unrolled_total);
}

// The program order keeps every wait covered by earlier signals, so no queue depth can deadlock
// it; the queue depth is not part of the preset fingerprint, so the same program runs on each.
TEST(Compiler, NoDeadlockAtAnyQueueDepth) {
  const uint64_t base = tp::tb::test_seed(tp::tb::current_test_name());
  for (unsigned depth : {1u, 2u, 7u}) {
    tp::Preset p = tp::load_preset("odd");
    p.chip.queue = depth;
    auto chip = tp::driver::make_golden_chip(p);
    const uint32_t n = p.mxu.n;
    const uint64_t seed = base + 2 * depth;
    for (const Form form : {Form::loops, Form::unrolled, Form::nests}) {
      expect_pass(tp::driver::run_matmul(*chip, {130, 3 * n + 1, 2 * n + 1, true, true, form}, seed), "odd");
      expect_pass(tp::driver::run_mlp(*chip, {101, n + 1, 2 * n, 3, form}, seed + 1), "odd");
      tp::driver::MatmulSpec packed{130, 3 * n + 1, 2 * n + 1, true, true, form};
      packed.bf16x2 = true;  // A's K-tiles in pairs, the last one (Kb = 3) alone
      expect_pass(tp::driver::run_matmul(*chip, packed, seed + 2), "odd");
    }
  }
}

TEST(Compiler, AssemblyTextAssemblesToTheSameProgram) {
  for (const std::string name : {"tiny", "odd"}) {
    const tp::Preset p = tp::load_preset(name);
    std::vector<MatmulLayer> layers = {layer_at(p, 70, 3 * p.mxu.n + 1, 2 * p.mxu.n + 2, true)};
    layers[0].relu = true;
    layers[0].out_bf16 = true;
    // A second layer reading the first one's output.
    MatmulLayer l2 = layer_at(p, 70, layers[0].n, 5);
    l2.a = layers[0].c;
    l2.w.beat = l2.c.beat = layers[0].c.beat + tp::compiler::padded_beats(p, 70, layers[0].n);
    l2.c.beat = l2.w.beat + tp::compiler::padded_beats(p, tp::compiler::padded_rows(p, l2.k), l2.n);
    layers.push_back(l2);
    // And with bf16x2 operands (mxu.lw packed=1 and mxu.mm hi=1 in the text): layer 0's A and W,
    // layer 1's W.
    std::vector<MatmulLayer> packed = layers;
    packed[0].a.bf16x2 = packed[0].w.bf16x2 = packed[1].w.bf16x2 = true;
    for (const auto& [form, ls] :
         {std::pair{Form::loops, layers}, std::pair{Form::unrolled, layers}, std::pair{Form::nests, layers},
          std::pair{Form::loops, packed}, std::pair{Form::nests, packed}}) {
      const auto prog = tp::compiler::compile(p, ls, {.form = form});
      const std::string text = tp::compiler::compile_asm(p, ls, {.form = form});
      const auto again = tp::isa::assemble(text, "compile_asm", p);
      EXPECT_EQ(again.preset, prog.preset);
      EXPECT_EQ(again.fingerprint, prog.fingerprint);
      EXPECT_EQ(again.code, prog.code) << text;
      EXPECT_NO_THROW(tp::isa::check_preset(prog, p));
      EXPECT_EQ(text.find("packed=1") != std::string::npos, ls[0].w.bf16x2);
      EXPECT_EQ(text.find("hi=1") != std::string::npos, ls[0].a.bf16x2);
      if (form == Form::nests && !ls[0].a.bf16x2) {  // (a bf16x2 A: layer 0 written out)
        EXPECT_NE(text.find("loop r1, "), std::string::npos) << "labels as branch targets";
      }
    }
  }
}

TEST(Compiler, Tiling) {
  const tp::Preset p = tp::load_preset("odd");  // n = 12, 100 accumulator rows
  const uint32_t n = p.mxu.n;
  auto t = tp::compiler::plan(p, layer_at(p, 100, 2 * n + 1, n + 1));
  EXPECT_EQ(t.kb, 3u);
  EXPECT_EQ(t.nb, 2u);
  EXPECT_EQ(t.mb, 2u);  // two accumulator buffers of at most 50 rows
  EXPECT_EQ(t.tm, 50u);
  t = tp::compiler::plan(p, layer_at(p, 101, 2 * n + 1, n + 1));
  EXPECT_EQ(t.mb, 3u);
  EXPECT_EQ(t.tm, 34u);  // evened out: 34 + 34 + 33, not 50 + 50 + 1
  EXPECT_LE(t.vmem_rows, p.chip.vmem_rows);
  // Many K-tiles: VMEM, not the accumulators, limits the block, and the largest block that fits is
  // taken.
  const uint32_t kb = p.chip.vmem_rows / (2 * 5);
  t = tp::compiler::plan(p, layer_at(p, 100, kb * n, 5));
  EXPECT_EQ(t.kb, kb);
  EXPECT_LE(t.vmem_rows, p.chip.vmem_rows);
  // VMEM: 2 A buffers of kb rows per block row, 2 output rows per block row, 4 weight slots.
  const uint32_t tm_max = (p.chip.vmem_rows - 4 * n) / (2 * kb + 2);
  EXPECT_EQ(t.mb, (100 + tm_max - 1) / tm_max);
}

TEST(Compiler, Errors) {
  const tp::Preset p = tp::load_preset("odd");
  auto expect_error = [&](const std::vector<MatmulLayer>& layers, const std::string& needle) {
    try {
      (void)tp::compiler::compile(p, layers);
      ADD_FAILURE() << "no CompileError; expected one containing '" << needle << "'";
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error({}, "no layers");
  auto l = layer_at(p, 4, 0, 4);
  expect_error({l}, "at least 1");
  l = layer_at(p, 0, 4, 4);
  expect_error({l}, "at least 1");
  l = layer_at(p, 4, 4, 4);
  l.c.beat = l.w.beat;  // C on top of W
  expect_error({l}, "overlap");
  l = layer_at(p, 4, 4, 4, true);
  l.b.beat = l.a.beat + 1;
  expect_error({l}, "overlap");
  l = layer_at(p, 4, 4, 4);
  l.a.cols = 5;
  expect_error({l}, "A is 4x5, the layer needs 4x4");
  l = layer_at(p, 4, 4, 4);
  l.c.beat = p.chip.hbm_beats - 1;
  expect_error({l}, "past the end of HBM");
  // 500 K-tiles: two A buffers need 1000 rows for a single M row.
  expect_error({layer_at(p, 1, 6000, 4)}, "does not fit preset 'odd'");
  // Many tiles, unrolled: more instructions than the 3000-word instruction memory (the loops fit).
  try {
    (void)tp::compiler::compile(p, {layer_at(p, 100, 12 * 20, 12 * 20)}, {.form = Form::unrolled});
    ADD_FAILURE() << "no CompileError for the unrolled form";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("imem_words"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW((void)tp::compiler::compile(p, {layer_at(p, 100, 12 * 20, 12 * 20)}));
}

TEST(Compiler, PackUnpack) {
  const tp::Preset p = tp::load_preset("odd");  // n = 12
  std::vector<uint16_t> v(3 * 13);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint16_t>(i + 1);
  const auto packed = tp::compiler::pack_bf16(p, 3, 13, v);
  ASSERT_EQ(packed.size(), 3u * 24u);
  EXPECT_EQ(packed[24], 14u);  // row 1 starts at beat 2
  EXPECT_EQ(packed[13], 0u);   // padding
  const auto w = tp::compiler::pack_bf16(p, 3, 13, v, true);
  EXPECT_EQ(w.size(), 12u * 24u);  // rows padded to n
  std::vector<uint32_t> back = tp::compiler::unpack(p, 3, 13, packed);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(back[i], v[i]);
  EXPECT_THROW(tp::compiler::pack_bf16(p, 3, 14, v), CompileError);
  EXPECT_EQ(tp::compiler::padded_beats(p, 3, 13), 6u);
}

// bf16x2 halves A's and W's beats: one M block (each loaded once), 4 K-tiles and 2 column tiles
// on tiny (n = 8): A 20 x 4 beats plain, 20 x 2 packed; W 4 x 8 x 2 plain, half packed.
TEST(Compiler, Bf16x2LoadsHalfTheBeats) {
  auto chip = golden("tiny");
  const uint64_t row_bytes = 4 * chip->lanes();
  tp::driver::MatmulSpec spec{20, 3 * 8 + 1, 16, false, false, Form::unrolled};
  const auto plain = tp::driver::run_matmul(*chip, spec, 7);
  spec.bf16x2 = true;
  const auto packed = tp::driver::run_matmul(*chip, spec, 7);
  expect_pass(plain, "tiny");
  expect_pass(packed, "tiny");
  EXPECT_EQ(plain.bytes_loaded, (20 * 4 + 4 * 8 * 2) * row_bytes);
  EXPECT_EQ(packed.bytes_loaded, (20 * 2 + 2 * 8 * 2) * row_bytes);
  EXPECT_EQ(plain.output, packed.output);
  EXPECT_LT(packed.roofline_cycles, plain.roofline_cycles);  // bytes as stored
}

// The packed layouts, word by word (tiny: n = 8).
TEST(Compiler, PackBf16x2Layout) {
  const tp::Preset p = tp::load_preset("tiny");
  std::vector<uint16_t> v(3 * 20);  // 3 x 20: 3 column tiles, so pairs (0, 1) and (2, zero)
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint16_t>(i + 1);
  const auto a = tp::compiler::pack_bf16x2(p, 3, 20, v, false);
  ASSERT_EQ(a.size(), 3u * 2u * 8u);
  ASSERT_EQ(tp::compiler::bf16x2_beats(p, 3, 20, false), 6u);
  EXPECT_EQ(a[0], 1u | 9u << 16);                               // row 0: element 0 low, element 8 high
  EXPECT_EQ(a[8 + 3], 20u);                                     // row 0, beat 1: element 19 low, nothing high
  EXPECT_EQ(a[8 + 4], 0u);                                      // past the matrix
  EXPECT_EQ(a[16 + 2], 23u | 31u << 16);                        // row 1: elements 2 and 10
  const auto w = tp::compiler::pack_bf16x2(p, 3, 20, v, true);  // rows padded to 8: 4 beat-rows
  ASSERT_EQ(w.size(), 4u * 3u * 8u);
  EXPECT_EQ(w[0], 1u);                            // row 0 with row 4 (zero padding)
  EXPECT_EQ(w[(1 * 3 + 1) * 8 + 2], 31u);         // beat-row 1, column tile 1: row 1 element 10
  EXPECT_EQ(w[(2 * 3) * 8 + 0], 41u);             // beat-row 2: row 2 element 0
  const tp::Preset odd = tp::load_preset("odd");  // n = 12 is even: W packs
  EXPECT_EQ(tp::compiler::pack_bf16x2(odd, 3, 20, v, true).size(), 6u * 2u * 12u);
  EXPECT_THROW(tp::compiler::pack_bf16x2(p, 3, 19, v, false), CompileError);
}

// What bf16x2 cannot do is an error that says so.
TEST(Compiler, Bf16x2Errors) {
  const tp::Preset p = tp::load_preset("tiny");
  auto l = layer_at(p, 4, 8, 8);
  l.c.bf16x2 = true;
  EXPECT_THROW((void)tp::compiler::compile(p, {l}), CompileError);
  // A layer whose A is bf16x2 is written out; past the instruction memory that is refused.
  auto big = layer_at(p, 16, 8 * 64, 8 * 64);
  big.a.bf16x2 = true;
  try {
    (void)tp::compiler::compile(p, {big}, {.form = Form::loops});
    ADD_FAILURE() << "no CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("A in bf16x2 needs the layer written out"), std::string::npos) << e.what();
  }
  big.a.bf16x2 = false;
  big.w.bf16x2 = true;  // W packed alone: the loop nests take it
  EXPECT_NO_THROW((void)tp::compiler::compile(p, {big}, {.form = Form::loops}));
  // Past the lower bound: 1 x 8 x 8000 is 3000 tiles' worth (3 x 1000 <= 4096) but about 7000
  // instructions written out (each column tile's epilogue too).
  auto wide = layer_at(p, 1, 8, 8000);
  wide.a.bf16x2 = true;
  try {
    (void)tp::compiler::compile(p, {wide});
    ADD_FAILURE() << "no CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("give A unpacked"), std::string::npos) << e.what();
  }
  // prefer_bf16x2 (what --bf16x2 does): A where it still compiles, W at an even n.
  const auto chosen = tp::compiler::prefer_bf16x2(p, layer_at(p, 1, 8, 8000));
  EXPECT_FALSE(chosen.a.bf16x2);
  EXPECT_TRUE(chosen.w.bf16x2);
  const auto small = tp::compiler::prefer_bf16x2(p, layer_at(p, 20, 30, 40));
  EXPECT_TRUE(small.a.bf16x2);
  EXPECT_TRUE(small.w.bf16x2);
  auto spec = tp::driver::MatmulSpec{1, 8, 8000, false, false, Form::automatic};
  spec.bf16x2 = true;  // the driver falls back to a plain A and runs
  auto chip = golden("tiny");
  expect_pass(tp::driver::run_matmul(*chip, spec, 3), "tiny");
}

TEST(Driver, Errors) {
  EXPECT_THROW(Chip::open("no_such_preset", Backend::golden), DriverError);
  try {
    (void)Chip::open("tiny", Backend::rtl);
    // A binary that links an RTL backend for tiny may open it.
  } catch (const DriverError& e) {
    EXPECT_NE(std::string(e.what()).find("tiny"), std::string::npos) << e.what();
  }
  EXPECT_THROW(tp::driver::parse_backend("verilog"), DriverError);
  EXPECT_EQ(tp::driver::parse_backend("golden"), Backend::golden);

  auto chip = golden("tiny");
  EXPECT_EQ(chip->backend_name(), "golden");
  const uint64_t total = chip->preset().chip.hbm_beats;
  EXPECT_EQ(chip->alloc(10), 0u);
  EXPECT_EQ(chip->alloc(5), 10u);
  EXPECT_THROW(chip->alloc(total), DriverError);
  chip->release(0);
  EXPECT_EQ(chip->alloc(total), 0u);
  EXPECT_THROW(chip->alloc(1), DriverError);
  chip->release(0);

  // HBM access past the end, and a partial beat.
  EXPECT_THROW(chip->write(total, std::vector<uint32_t>(chip->lanes())), DriverError);
  EXPECT_THROW(chip->write(0, std::vector<uint32_t>(chip->lanes() + 1)), DriverError);
  EXPECT_THROW(chip->read(total - 1, 2), DriverError);

  // A program compiled for another preset.
  const tp::Preset odd = tp::load_preset("odd");
  const auto prog = tp::compiler::compile(odd, {layer_at(odd, 4, 4, 4)});
  EXPECT_THROW(chip->load(prog), DriverError);
}

// A timeout is reported, not hung on: a program that waits on a semaphore no one signals is a
// deadlock error, and one that runs longer than the timeout is timed_out.
TEST(Driver, TimeoutAndChipErrors) {
  auto chip = golden("tiny");
  const tp::Preset& p = chip->preset();
  auto prog = tp::isa::assemble("fence unit=load wait=3\nhalt\n", "deadlock.s", p);
  chip->load(prog);
  auto s = chip->run(1000);
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.err, tp::isa::Err::deadlock);
  const auto big = tp::compiler::compile(p, {layer_at(p, 64, 64, 64)});
  chip->load(big);
  s = chip->run(3);
  EXPECT_TRUE(s.timed_out);
  EXPECT_FALSE(s.ok());
}

// ---- The fast backend (docs/scale.md) ---------------------------------------------------------
//
// The golden interpreter with the fast model's timing: the golden backend's bits, its own cycles;
// in timing-only mode the same cycles and statistics without the data.
TEST(FastBackend, GoldenBitsAndTimingOnlyCycles) {
  for (const std::string preset : {"tiny", "small", "odd", "v2"}) {
    const tp::Preset p = tp::load_preset(preset);
    const uint32_t n = p.mxu.n;
    for (const bool mlp : {false, true}) {
      SCOPED_TRACE(fmt::format("{} {}", preset, mlp ? "mlp" : "matmul"));
      const auto run = [&](Chip& c) {
        return mlp ? tp::driver::run_mlp(c, {4 * n, 2 * n, 3 * n, n}, 7)
                   : tp::driver::run_matmul(c, {3 * n + 1, 2 * n + 3, n + 5, true, true}, 7);
      };
      const auto g = run(*Chip::open(preset, Backend::golden));
      const auto f = run(*Chip::open(preset, Backend::fast));
      const auto t = run(*tp::driver::make_golden_chip(p, true, true));
      ASSERT_TRUE(g.pass);
      ASSERT_TRUE(f.pass) << f.what << ": " << tp::driver::describe(f.status);
      EXPECT_EQ(f.output, g.output);
      ASSERT_TRUE(t.status.ok());
      EXPECT_EQ(t.cycles, f.cycles);
      for (const char* k : {"bytes_loaded", "bytes_stored", "mxu_rows", "instructions", "vec_rows"})
        EXPECT_EQ(t.counters.at(k), f.counters.at(k)) << k;
      EXPECT_NE(f.cycles, g.cycles) << "the fast chip has the dataflow estimate's cycles";
    }
    // A random program (every vector operation, packed DMA, accumulator operands): timing-only
    // gives the fast run's cycles and counters.
    for (const uint64_t seed : {1u, 2u}) {
      SCOPED_TRACE(fmt::format("{} random program {}", preset, seed));
      auto fc = Chip::open(preset, Backend::fast);
      auto tc = tp::driver::make_golden_chip(p, true, true);
      const auto f = tp::tb::run_random_program(*fc, seed);
      const auto t = tp::tb::run_random_program(*tc, seed);
      ASSERT_TRUE(f.pass) << f.what;
      ASSERT_TRUE(t.status.ok()) << tp::driver::describe(t.status);
      EXPECT_EQ(t.cycles, f.cycles);
      const auto fcs = fc->counters(), tcs = tc->counters();
      for (const char* k : {"bytes_loaded", "bytes_stored", "mxu_rows", "instructions", "vec_rows"})
        EXPECT_EQ(tcs.at(k), fcs.at(k)) << k;
    }
  }
}

TEST(FastBackend, NamesAndErrors) {
  EXPECT_EQ(tp::driver::parse_backend("fast"), Backend::fast);
  EXPECT_EQ(tp::driver::backend_label(Backend::fast), "fast");
  EXPECT_EQ(Chip::open("tiny", Backend::fast)->backend_name(), "fast");
  EXPECT_EQ(Chip::open("tiny", Backend::golden)->backend_name(), "golden");
  EXPECT_THROW((void)tp::driver::make_golden_chip(tp::load_preset("tiny"), false, true), DriverError);
  try {
    (void)tp::driver::parse_backend("quick");
    ADD_FAILURE() << "parse_backend(\"quick\") did not throw";
  } catch (const DriverError& e) {
    EXPECT_NE(std::string(e.what()).find("rtl, golden, fast"), std::string::npos) << e.what();
  }
}

// A pod on the fast backend: the golden pod's bits, every chip with the fast model's timing and
// the pod's link latency (not the preset's).
TEST(FastBackend, PodMatchesTheGoldenPod) {
  auto pod = tp::driver::torus_pod(tp::load_preset("tiny"), 2, 2);
  const tp::driver::SliceShape all{0, 0, 2, 2};
  const auto run = [&](Backend be) {
    auto s = tp::driver::Slice::open(pod, all, be);
    EXPECT_EQ(s->backend_name(), tp::driver::backend_label(be));
    auto r = tp::driver::run_collective(*s, tp::driver::Collective::all_reduce, 64, 3);
    EXPECT_TRUE(r.pass) << r.status.report;
    return r;
  };
  const auto rg = run(Backend::golden), rf = run(Backend::fast);
  EXPECT_EQ(rf.outputs, rg.outputs);
  EXPECT_NE(rf.status.cycles, rg.status.cycles) << "the fast pod has the dataflow estimate's cycles";
  pod.link_latency = 50;  // a send's rows arrive later: the collective takes longer
  const auto slow = run(Backend::fast);
  EXPECT_EQ(slow.outputs, rf.outputs);
  EXPECT_GT(slow.status.cycles, rf.status.cycles + 49);
}

// The pod split over ranks (golden/pod_comm.h), here threads of this process as MPI ranks are
// processes: every rank gets the one-process run's bits, cycles, per-chip counters and rounds,
// on golden and fast pods, for 2 and 3 ranks over an odd 3x3 (the blocks cut rows of the torus).
TEST(Distributed, RanksGiveTheOneProcessRun) {
  const auto pod = tp::driver::torus_pod(tp::load_preset("tiny"), 3, 3);
  const tp::driver::SliceShape all{0, 0, 3, 3};
  for (const Backend be : {Backend::golden, Backend::fast}) {
    struct Run {
      tp::driver::CollectiveRun coll;
      tp::driver::PodMatmulRun mm;
      std::vector<std::map<std::string, uint64_t>> counters;
    };
    const auto run = [&](std::shared_ptr<tp::golden::PodComm> comm) {
      Run out;
      tp::driver::SliceOptions so;
      so.comm = comm;
      auto s = tp::driver::Slice::open(pod, all, be, so);
      out.coll = tp::driver::run_collective(*s, tp::driver::Collective::all_reduce, 40, 5);
      for (const auto& c : out.coll.status.chips) out.counters.push_back(s->counters(c.x, c.y));
      auto m = tp::driver::Slice::open(pod, all, be, so);
      out.mm = tp::driver::run_pod_matmul(*m, {9 * 8, 32, 8, true, false}, 7);
      return out;
    };
    const Run one = run(nullptr);
    ASSERT_TRUE(one.coll.pass) << one.coll.status.report;
    ASSERT_TRUE(one.mm.pass) << one.mm.status.report;
    for (const unsigned ranks : {2u, 3u}) {
      SCOPED_TRACE(fmt::format("{} ranks, {}", ranks, tp::driver::backend_label(be)));
      const auto comms = tp::golden::thread_comms(ranks);
      std::vector<Run> got(ranks);
      std::vector<std::thread> threads;
      for (unsigned r = 0; r < ranks; ++r) threads.emplace_back([&, r] { got[r] = run(comms[r]); });
      for (auto& t : threads) t.join();
      for (unsigned r = 0; r < ranks; ++r) {
        const Run& g = got[r];
        EXPECT_TRUE(g.coll.pass && g.mm.pass) << "rank " << r;
        EXPECT_EQ(g.coll.outputs, one.coll.outputs) << "rank " << r;
        EXPECT_EQ(g.coll.status.cycles, one.coll.status.cycles) << "rank " << r;
        EXPECT_EQ(g.coll.status.rounds, one.coll.status.rounds) << "rank " << r;
        EXPECT_EQ(g.counters, one.counters) << "rank " << r;
        EXPECT_EQ(g.mm.output, one.mm.output) << "rank " << r;
        EXPECT_EQ(g.mm.status.cycles, one.mm.status.cycles) << "rank " << r;
        EXPECT_EQ(g.mm.counters, one.mm.counters) << "rank " << r;
        EXPECT_EQ(g.coll.status.ranks, ranks);
        EXPECT_GT(g.coll.status.rounds, 1u);
        EXPECT_GT(comms[r]->syncs(), g.coll.status.rounds) << "a synchronisation a round, and the reads";
      }
    }
  }
}

// Every rank refuses what cannot run distributed, and a read's error reaches every rank.
TEST(Distributed, Errors) {
  const auto pod = tp::driver::torus_pod(tp::load_preset("tiny"), 2, 2);
  const tp::driver::SliceShape all{0, 0, 2, 2};
  tp::driver::SliceOptions so;
  so.comm = tp::golden::thread_comms(1).front();
  EXPECT_THROW((void)tp::driver::Slice::open(pod, all, Backend::rtl, so), DriverError);
  auto traced = tp::driver::Slice::open(pod, all, Backend::fast, so);
  traced->set_tracing(true);
  EXPECT_THROW((void)traced->run(1000), DriverError);
  // Two ranks: rank 1 owns chip (1, 1); a read past its memory throws on both ranks, a write too.
  const auto comms = tp::golden::thread_comms(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (unsigned r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      tp::driver::SliceOptions o;
      o.comm = comms[r];
      auto s = tp::driver::Slice::open(pod, all, Backend::golden, o);
      const uint64_t beats = s->preset().chip.hbm_beats;
      try {
        (void)s->read(1, 1, beats - 1, 2);
      } catch (const DriverError& e) {
        errors[r] = e.what();
      }
      try {
        s->write(1, 1, beats, std::vector<uint32_t>(s->preset().mxu.n, 0));
      } catch (const DriverError& e) {
        errors[r] += std::string(" | ") + e.what();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors[0], errors[1]);
  EXPECT_NE(errors[0].find("read on chip (1,1)"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("write on chip (1,1)"), std::string::npos) << errors[0];
}

}  // namespace
