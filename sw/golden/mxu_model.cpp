#include "mxu_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "fp.h"

namespace tp::golden {

namespace {

using Line = detail::MxuWeightLine;
constexpr unsigned kBlock = 16;  // columns per weight line

// A kernel: `count` rows of n activations (`a`, fp32, denormals already flushed) through the
// tile `w` (MxuModel::weights_'s layout). Writes each column's sum, not yet canonical, to
// `out` (count rows of n); rows() canonicalises it.
using KernelFn = void (*)(const float* a, std::size_t count, const Line* w, unsigned n, uint32_t* out);

// The definition, one MAC at a time: bf16_mac on the prepared operands. The operands are the
// flushed widened bf16 values, so canon(a * w) is bf16_mul's product, and fp32_add is the same
// call. The only variant off x86-64. It needs no floating-point mode; on x86-64 it runs in
// DazScope like the others, where DAZ changes nothing (its operands are flushed already).
void kernel_scalar(const float* a, std::size_t count, const Line* w, unsigned n, uint32_t* out) {
  for (std::size_t r = 0; r < count; ++r, a += n, out += n)
    for (unsigned j = 0; j < n; ++j) {
      const Line* col = w + std::size_t{j / kBlock} * n;
      uint32_t acc = 0;
      for (unsigned i = 0; i < n; ++i) acc = fp32_add(acc, fp32_canon(fp32_bits(a[i] * col[i].w[j % kBlock])));
      out[j] = acc;
    }
}

#if defined(__x86_64__)

// The SIMD kernels. Column j's sum is s(i+1) = s(i) + a[i] * W[i][j], in plain IEEE fp32 with
// round to nearest even, starting from s(0) = +0, run with MXCSR's DAZ on and FTZ off (DazScope):
//  - the product is the IEEE product bf16_mul forms (the same flushed operands, FTZ off) before
//    it applies fp32_canon: it may still be a NaN with a payload or a denormal;
//  - DAZ makes the addition read a denormal product or partial sum as the zero of its sign,
//    which is exactly what fp32_canon (for bf16_mul's product and fp32_add's sum) and then
//    fp32_add's input flush leave of it;
//  - a NaN stays NaN through every later addition, in both, so its canonical form can wait.
// By induction canon(s(i)) is bf16_mac's accumulator after i steps, and rows() canonicalises
// s(n). FTZ stays off: x86 flushes a result that is tiny after rounding, not "round, then flush a
// denormal" as the policy does. (With these operands it would agree, since a bf16 product near
// 2^-126 and a sum below it are exact, but with FTZ off the argument above needs no such care.)
// The kernels are separate functions called through a pointer, so that the compiler cannot move
// their arithmetic across the MXCSR writes (it does not model the floating-point mode).

// The MXCSR while a kernel runs: every exception masked (0x1f80), round to nearest even,
// FTZ (bit 15) off, DAZ (bit 6) on.
constexpr unsigned kKernelMxcsr = 0x1f80u | 0x0040u;

// Sets kKernelMxcsr, and on the way out the caller's MXCSR as it was (flags raised inside are
// dropped: the golden numerics have no exception flags).
class DazScope {
 public:
  DazScope() : saved_(_mm_getcsr()) { _mm_setcsr(kKernelMxcsr); }
  ~DazScope() { _mm_setcsr(saved_); }
  DazScope(const DazScope&) = delete;
  DazScope& operator=(const DazScope&) = delete;

 private:
  unsigned saved_;
};

// W fp32 lanes (GCC/Clang vector extension): +, * are lane-wise IEEE operations, lowered to
// whatever the enclosing function's target has (a struct, as an alias template drops the
// attribute). may_alias: the kernels read and write float arrays through it.
template <unsigned W>
struct Lanes {
  typedef float V __attribute__((vector_size(W * sizeof(float)), may_alias));
};

// Rows [0, count) in groups of R (then the rest in groups of R/2, ...), one 16-column block at a
// time: R x (16/W) independent sums in registers, enough to hide the adder's latency. Always
// inlined into the target-specific wrappers below, which decide the instruction set.
template <unsigned W, unsigned R>
[[gnu::always_inline]] inline void simd_rows(const float* a, std::size_t count, const Line* w, unsigned n,
                                             uint32_t* out) {
  using V = typename Lanes<W>::V;
  constexpr unsigned C = kBlock / W;
  const std::size_t groups = count / R;
  for (std::size_t g = 0; g < groups; ++g, a += std::size_t{R} * n, out += std::size_t{R} * n) {
    for (unsigned b = 0; b * kBlock < n; ++b) {
      const Line* col = w + std::size_t{b} * n;
      V acc[R][C] = {};  // +0: the column's sum starts at +0, as the array's does
      for (unsigned i = 0; i < n; ++i) {
        V wv[C];
#pragma GCC unroll 4
        for (unsigned c = 0; c < C; ++c) wv[c] = *reinterpret_cast<const V*>(col[i].w + c * W);  // aligned
#pragma GCC unroll 8
        for (unsigned r = 0; r < R; ++r)
#pragma GCC unroll 4
          for (unsigned c = 0; c < C; ++c) acc[r][c] = acc[r][c] + a[std::size_t{r} * n + i] * wv[c];
      }
      const unsigned valid = std::min(kBlock, n - b * kBlock);  // the padding columns are dropped
      for (unsigned r = 0; r < R; ++r) {
        alignas(64) float sums[kBlock];
#pragma GCC unroll 4
        for (unsigned c = 0; c < C; ++c) *reinterpret_cast<V*>(sums + c * W) = acc[r][c];
        std::memcpy(out + std::size_t{r} * n + b * kBlock, sums, valid * sizeof(float));
      }
    }
  }
  if constexpr (R > 1) {
    if (count % R) simd_rows<W, R / 2>(a, count % R, w, n, out);
  }
}

// One function per instruction set: 8 sums of 16 lanes in zmm, 4 x 2 ymm, 2 x 4 xmm.
[[gnu::target("avx512f"), gnu::noinline]] void kernel_avx512f(const float* a, std::size_t count, const Line* w,
                                                              unsigned n, uint32_t* out) {
  simd_rows<16, 8>(a, count, w, n, out);
}

[[gnu::target("avx2"), gnu::noinline]] void kernel_avx2(const float* a, std::size_t count, const Line* w, unsigned n,
                                                        uint32_t* out) {
  simd_rows<8, 4>(a, count, w, n, out);
}

[[gnu::noinline]] void kernel_default(const float* a, std::size_t count, const Line* w, unsigned n, uint32_t* out) {
  simd_rows<4, 2>(a, count, w, n, out);
}

#endif  // __x86_64__

struct Kernel {
  std::string_view name;
  KernelFn fn;
  bool (*supported)();
};

// Slowest first; the automatic choice is the last one the host supports.
constexpr std::array kKernels = {
    Kernel{"scalar", kernel_scalar, [] { return true; }},
#if defined(__x86_64__)
    Kernel{"default", kernel_default, [] { return true; }},
    Kernel{"avx2", kernel_avx2,
           [] {
             __builtin_cpu_init();
             return __builtin_cpu_supports("avx2") != 0;
           }},
    Kernel{"avx512f", kernel_avx512f,
           [] {
             __builtin_cpu_init();
             return __builtin_cpu_supports("avx512f") != 0;
           }},
#endif
};

int automatic_kernel() {
  static const int best = [] {
    int k = 0;
    for (int i = 0; i < static_cast<int>(kKernels.size()); ++i)
      if (kKernels[i].supported()) k = i;
    return k;
  }();
  return best;
}

std::atomic<int> selected_kernel{-1};  // -1: automatic

const Kernel& current_kernel() {
  const int k = selected_kernel.load(std::memory_order_relaxed);
  return kKernels[k < 0 ? automatic_kernel() : k];
}

}  // namespace

std::vector<std::string_view> mxu_kernels() {
  std::vector<std::string_view> names;
  for (const auto& k : kKernels) names.push_back(k.name);
  return names;
}

bool mxu_kernel_supported(std::string_view name) {
  for (const auto& k : kKernels)
    if (k.name == name) return k.supported();
  return false;
}

void mxu_select_kernel(std::string_view name) {
  if (name.empty()) {
    selected_kernel = -1;
    return;
  }
  for (int i = 0; i < static_cast<int>(kKernels.size()); ++i)
    if (kKernels[i].name == name) {
      if (!kKernels[i].supported())
        throw std::invalid_argument(fmt::format("MXU kernel '{}' needs an instruction set this host lacks", name));
      selected_kernel = i;
      return;
    }
  throw std::invalid_argument(
      fmt::format("unknown MXU kernel '{}' (built in: {})", name, fmt::join(mxu_kernels(), ", ")));
}

std::string_view mxu_kernel() { return current_kernel().name; }

MxuModel::MxuModel(unsigned n, unsigned acc_rows) : n_(n), acc_rows_(acc_rows), acc_(std::size_t{acc_rows} * n) {
  if (n == 0 || acc_rows == 0) throw std::invalid_argument("MxuModel: n and acc_rows must be positive");
  const std::size_t lines = std::size_t{(n + kBlock - 1) / kBlock} * n;
  weights_[0].assign(lines, Line{});
  weights_[1].assign(lines, Line{});
}

void MxuModel::load_weights(std::span<const uint16_t> tile) {
  if (tile.size() != std::size_t{n_} * n_)
    throw std::invalid_argument(fmt::format("MxuModel: weight tile has {} values, expected {}", tile.size(), n_ * n_));
  // Flushed once here rather than per MAC: bf16_mul reads a denormal weight as zero of its sign.
  auto& shadow = weights_[1 - current_];
  std::fill(shadow.begin(), shadow.end(), Line{});
  for (unsigned i = 0; i < n_; ++i)
    for (unsigned j = 0; j < n_; ++j)
      shadow[std::size_t{j / kBlock} * n_ + i].w[j % kBlock] =
          fp32_value(fp32_flush(bf16_to_fp32(tile[std::size_t{i} * n_ + j])));
}

void MxuModel::switch_tile() {
  current_ = 1 - current_;
  has_tile_ = true;
}

std::vector<uint32_t> MxuModel::row(std::span<const uint16_t> a) const {
  if (a.size() != n_)
    throw std::invalid_argument(fmt::format("MxuModel: row has {} values, expected {}", a.size(), n_));
  std::vector<uint32_t> out(n_, 0u);
  rows(a, out);
  return out;
}

void MxuModel::rows(std::span<const uint16_t> a, std::span<uint32_t> out) const {
  if (a.size() % n_ != 0 || out.size() != a.size())
    throw std::invalid_argument(
        fmt::format("MxuModel: {} activations and {} results; expected rows of {}, one result per activation", a.size(),
                    out.size(), n_));
  if (a.empty()) return;
  // The activations widened and flushed once, as bf16_mul reads them.
  std::vector<float> af(a.size());
  for (std::size_t k = 0; k < a.size(); ++k) af[k] = fp32_value(fp32_flush(bf16_to_fp32(a[k])));
  const Kernel& kernel = current_kernel();
  {
#if defined(__x86_64__)
    const DazScope daz;  // the scalar kernel does not need it, and is the same with it
#endif
    kernel.fn(af.data(), a.size() / n_, weights_[current_].data(), n_, out.data());
  }
  for (auto& x : out) x = fp32_canon(x);
}

void MxuModel::write_acc(unsigned addr, std::span<const uint32_t> result, bool accumulate) {
  if (addr >= acc_rows_) throw std::out_of_range(fmt::format("MxuModel: accumulator row {} >= {}", addr, acc_rows_));
  uint32_t* dst = &acc_[std::size_t{addr} * n_];
  for (unsigned j = 0; j < n_; ++j) dst[j] = accumulate ? fp32_add(dst[j], result[j]) : result[j];
}

std::span<const uint32_t> MxuModel::read_acc(unsigned addr) const {
  if (addr >= acc_rows_) throw std::out_of_range(fmt::format("MxuModel: accumulator row {} >= {}", addr, acc_rows_));
  return {&acc_[std::size_t{addr} * n_], n_};
}

std::vector<uint32_t> mxu_matmul(unsigned n, unsigned m, unsigned k, unsigned ncols, std::span<const uint16_t> a,
                                 std::span<const uint16_t> b) {
  if (a.size() != std::size_t{m} * k || b.size() != std::size_t{k} * ncols)
    throw std::invalid_argument("mxu_matmul: operand sizes do not match m, k, ncols");
  std::vector<uint32_t> c(std::size_t{m} * ncols, 0u);
  if (m == 0) return c;
  MxuModel mxu(n, 1);
  std::vector<uint16_t> rows(std::size_t{m} * n), tile(std::size_t{n} * n);
  std::vector<uint32_t> sums(std::size_t{m} * n);
  const unsigned ktiles = (k + n - 1) / n;
  // K tiles outermost, so that each element's tile sums are added in increasing kt. Zero padding
  // past k and ncols: a padded row adds (+0 * +0) = +0 terms, as the array's idle rows do.
  for (unsigned kt = 0; kt < ktiles; ++kt) {
    const unsigned kn = std::min(n, k - kt * n);
    for (unsigned r = 0; r < m; ++r) {
      uint16_t* dst = rows.data() + std::size_t{r} * n;
      std::copy_n(a.data() + std::size_t{r} * k + std::size_t{kt} * n, kn, dst);
      std::fill_n(dst + kn, n - kn, uint16_t{0});
    }
    for (unsigned c0 = 0; c0 < ncols; c0 += n) {
      const unsigned cn = std::min(n, ncols - c0);
      std::fill(tile.begin(), tile.end(), uint16_t{0});
      for (unsigned i = 0; i < kn; ++i)
        std::copy_n(b.data() + std::size_t{kt * n + i} * ncols + c0, cn, tile.data() + std::size_t{i} * n);
      mxu.load_weights(tile);
      mxu.switch_tile();
      mxu.rows(rows, sums);
      for (unsigned r = 0; r < m; ++r)
        for (unsigned j = 0; j < cn; ++j) {
          uint32_t& total = c[std::size_t{r} * ncols + c0 + j];
          const uint32_t sum = sums[std::size_t{r} * n + j];
          total = kt == 0 ? sum : fp32_add(total, sum);
        }
    }
  }
  return c;
}

}  // namespace tp::golden
