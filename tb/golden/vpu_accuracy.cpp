// make bench: the accuracy of the vector unit's vexp and vrcp, and of the activations built on
// them (sw/isa/instr_build.h), against the correctly rounded result (docs/numerics.md, "exp and
// reciprocal"). The golden functions are bit-exact with the RTL (tb/vpu/test_vpu_lane.cpp), so
// these are the chip's figures. The reference is the host's double-precision function rounded
// to fp32, and flushed like a result (FTZ). Writes build/reports/numerics.json; with --check it
// also fails (exit 1) when a figure is worse than the bound docs/numerics.md gives.
//
// exp is measured over every fp32 value of its range and the reciprocal over every significand
// (--step 1, the default); the activations over every 64th value of [-20, 20] (sigmoid, tanh; --act-step), and softmax
// over --rows random rows of 8 and 128 lanes.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "instr_build.h"
#include "vpu_ops.h"

namespace {

using namespace tp::golden;
using tp::isa::build::Activation;

// The distance in ulps between two finite fp32 values (the integers in between).
int64_t ulp_distance(uint32_t a, uint32_t b) {
  auto ord = [](uint32_t x) -> int64_t {
    return (x >> 31) ? -static_cast<int64_t>(x & 0x7fffffffu) : static_cast<int64_t>(x);
  };
  return std::llabs(ord(a) - ord(b));
}

// The correctly rounded fp32 result of an exact value (double), flushed like a result.
uint32_t rounded(double exact) { return fp32_canon(fp32_bits(static_cast<float>(exact))); }

struct Figure {
  std::string name, range;
  uint64_t inputs = 0, exact = 0;
  int64_t max_ulp = 0;
  uint32_t worst_input = 0;
  bool abs = false;  // report the absolute error (the activations: results of at most 1)
  double max_abs = 0;
  void add(uint32_t x, uint32_t got, double want) {
    ++inputs;
    const int64_t u = ulp_distance(got, rounded(want));
    if (u == 0) ++exact;
    if (u > max_ulp) max_ulp = u, worst_input = x;
    if (std::isfinite(fp32_value(got)) && std::isfinite(want))
      max_abs = std::max(max_abs, std::fabs(static_cast<double>(fp32_value(got)) - want));
  }
  nlohmann::json json() const {
    return {{"function", name},
            {"range", range},
            {"inputs", inputs},
            {"max_ulp", max_ulp},
            {"correctly_rounded", inputs ? double(exact) / double(inputs) : 0.0},
            {"max_abs_error", abs ? max_abs : std::nan("")},
            {"worst_input", fmt::format("{:#010x}", worst_input)}};
  }
};

// Every fp32 bit pattern x (stepping by `step`) whose value lies in [lo, hi], both signs.
void for_each_value(float lo, float hi, uint32_t step, const std::function<void(uint32_t)>& f) {
  for (uint64_t b = 0; b < (1ull << 32); b += step) {
    const auto x = static_cast<uint32_t>(b);
    if (fp32_is_nan(x) || fp32_is_denormal(x)) continue;
    const float v = fp32_value(x);
    if (v >= lo && v <= hi) f(x);
  }
}

// A list of vector instructions on one VMEM, as the chip's vector unit runs them (in order, row
// by row, through the golden lane functions): enough for the activation programs.
void run_vector(const std::vector<tp::isa::Instr>& code, std::vector<std::vector<uint32_t>>& vmem) {
  std::vector<uint32_t> out(vmem[0].size());
  for (const auto& in : code) {
    const auto& f = in.f;
    for (uint64_t r = 0; r < f.rows; ++r) {
      vpu_row(in.op, vmem[f.a + r], vmem[f.b_bcast ? f.b : f.b + r], {}, static_cast<uint32_t>(f.imm), out);
      vmem[f.dst + r] = out;
    }
  }
}

// One lane through an activation program: VMEM row 0 = x, row 1 = tmp, row 2 = out, row 3 = ones.
class Lane {
 public:
  explicit Lane(Activation act) : code_(tp::isa::build::activation(act, 2, 0, 1, 1, 3)) { vmem_[3][0] = 0x3f800000u; }
  uint32_t operator()(uint32_t x) {
    vmem_[0][0] = x;
    run_vector(code_, vmem_);
    return vmem_[2][0];
  }

 private:
  std::vector<tp::isa::Instr> code_;
  std::vector<std::vector<uint32_t>> vmem_ = std::vector<std::vector<uint32_t>>(4, std::vector<uint32_t>(1, 0u));
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tensorpod vector-unit accuracy: vexp, vrcp and the activations against the correctly rounded results"};
  uint32_t step = 1, act_step = 64;
  unsigned rows = 20000;
  uint64_t seed = 1;
  bool check = false;
  std::string out = "build/reports/numerics.json";
  app.add_option("--step", step, "measure exp and the reciprocal on every step-th fp32 bit pattern")
      ->check(CLI::Range(1u, 1u << 24))
      ->capture_default_str();
  app.add_option("--act-step", act_step, "the same for sigmoid and tanh")
      ->check(CLI::Range(1u, 1u << 24))
      ->capture_default_str();
  app.add_option("--rows", rows, "random softmax rows per width")
      ->check(CLI::Range(1u, 10'000'000u))
      ->capture_default_str();
  app.add_option("--seed", seed, "softmax inputs")->capture_default_str();
  app.add_flag("--check", check, "exit 1 when a figure exceeds docs/numerics.md's bound");
  app.add_option("--out", out, "JSON report")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::vector<Figure> figs;
  // exp over [-104, 100] but |a| < 2^-25, where e^a rounds to 1 (checked apart: exactly 1).
  Figure ex{"vexp", "[-104, 100] without |a| < 2^-25"};
  uint64_t tiny_not_one = 0;
  for_each_value(-104.0f, 100.0f, step, [&](uint32_t x) {
    if ((x & 0x7fffffffu) < 0x33000000u) {
      tiny_not_one += fp32_exp(x) != 0x3f800000u;
      return;
    }
    ex.add(x, fp32_exp(x), std::exp(double(fp32_value(x))));
  });
  figs.push_back(ex);
  // 1/a depends on a's significand; its exponent only scales the result (exactly, but for the
  // flush below 2^-126), so every significand at the exponents around 1 and at both ends is all.
  // (at exponents 126 and 127 every 1/a flushes to 0 but 1/2^126 = 2^-126: checked apart)
  Figure r{"vrcp", "every significand at exponents -126, -125, -1, 0, 1, 125"};
  uint64_t big_not_zero = 0;
  for (uint32_t e : {253u, 254u})
    for (uint32_t f = 0; f < (1u << 23); f += step)
      big_not_zero += fp32_rcp((e << 23) | f) != ((e == 253 && f == 0) ? 0x00800000u : 0u);
  for (uint32_t e : {1u, 2u, 126u, 127u, 128u, 252u})
    for (uint32_t f = 0; f < (1u << 23); f += step) {
      const uint32_t x = (e << 23) | f;
      r.add(x, fp32_rcp(x), 1.0 / double(fp32_value(x)));
    }
  figs.push_back(r);
  Figure s{"sigmoid", "[-20, 20]"}, t{"tanh", "[-20, 20]"};
  s.abs = t.abs = true;
  Lane sigmoid(Activation::sigmoid), tanh(Activation::tanh);
  for_each_value(-20.0f, 20.0f, act_step, [&](uint32_t x) {
    const double v = fp32_value(x);
    s.add(x, sigmoid(x), 1.0 / (1.0 + std::exp(-v)));
    t.add(x, tanh(x), std::tanh(v));
  });
  figs.push_back(s);
  figs.push_back(t);
  std::mt19937_64 rng(seed);
  for (unsigned lanes : {8u, 128u}) {
    Figure m{fmt::format("softmax{}", lanes), fmt::format("{} random rows of {} lanes in [-20, 20]", rows, lanes)};
    m.abs = true;
    std::vector<std::vector<uint32_t>> vmem(4, std::vector<uint32_t>(lanes, 0u));
    for (unsigned k = 0; k < rows; ++k) {
      for (auto& x : vmem[0]) x = fp32_bits(std::uniform_real_distribution<float>(-20.0f, 20.0f)(rng));
      run_vector(tp::isa::build::activation(Activation::softmax, 2, 0, 1, 1, 3), vmem);
      double mx = -1e300, sum = 0;
      for (uint32_t x : vmem[0]) mx = std::max(mx, double(fp32_value(x)));
      for (uint32_t x : vmem[0]) sum += std::exp(double(fp32_value(x)) - mx);
      for (unsigned j = 0; j < lanes; ++j)
        m.add(vmem[0][j], vmem[2][j], std::exp(double(fp32_value(vmem[0][j])) - mx) / sum);
    }
    figs.push_back(m);
  }

  // The bounds docs/numerics.md states: ulps against the correctly rounded result; tanh's absolute error.
  const std::vector<std::pair<std::string, int64_t>> bound_ulp = {
      {"vexp", 1}, {"vrcp", 1}, {"sigmoid", 3}, {"softmax8", 48}, {"softmax128", 48}};
  bool ok = tiny_not_one == 0 && big_not_zero == 0;
  if (!ok)
    fmt::print("vexp of |a| < 2^-25 not 1: {}; vrcp of a >= 2^126 not flushed: {}\n", tiny_not_one, big_not_zero);
  nlohmann::json report = {{"benchmark", "numerics"}, {"results", nlohmann::json::array()}};
  for (const auto& f : figs) {
    auto j = f.json();
    for (const auto& [name, b] : bound_ulp)
      if (name == f.name) j["bound_ulp"] = b, ok = ok && f.max_ulp <= b;
    if (f.name == "tanh") j["bound_abs_error"] = 3e-7, ok = ok && f.max_abs <= 3e-7;
    fmt::print("{:>10}: {:>10} inputs, max {} ulp (at {}), correctly rounded {:.4f}{}\n", f.name, f.inputs, f.max_ulp,
               j["worst_input"].get<std::string>(), j["correctly_rounded"].get<double>(),
               f.abs ? fmt::format(", max abs error {:.3g}", f.max_abs) : "");
    report["results"].push_back(j);
  }
  report["exp_tiny_not_one"] = tiny_not_one;
  report["rcp_huge_not_zero"] = big_not_zero;
  report["step"] = step;
  report["act_step"] = act_step;
  std::ofstream(out) << report.dump(2) << "\n";
  fmt::print("wrote {}\n", out);
  if (check && !ok) {
    fmt::print(stderr, "vpu_accuracy: a figure exceeds its bound (docs/numerics.md)\n");
    return 1;
  }
  return 0;
}
