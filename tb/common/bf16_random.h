// Random bf16 operands for tests, demos and benchmarks.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <vector>

namespace tp::tb {

struct ValueMix {
  unsigned exp_lo = 120, exp_hi = 134;  // biased exponent range of ordinary values
  double special_rate = 0.0;            // fraction drawn from the specials below
};

// Zeros, denormals, the normal extremes, infinities and NaNs, both signs.
inline constexpr std::array<uint16_t, 14> kBf16Specials = {0x0000, 0x8000, 0x0001, 0x807f, 0x0080, 0x8080, 0x7f7f,
                                                           0xff7f, 0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x7f81, 0x3f80};

template <class Rng>
uint16_t random_bf16(Rng& rng, const ValueMix& mix) {
  const uint64_t r = rng();
  if (mix.special_rate > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < mix.special_rate)
    return kBf16Specials[r % kBf16Specials.size()];
  const unsigned e = mix.exp_lo + static_cast<unsigned>((r >> 8) % (mix.exp_hi - mix.exp_lo + 1));
  return static_cast<uint16_t>(((r & 1u) << 15) | (e << 7) | ((r >> 1) & 0x7fu));
}

template <class Rng>
std::vector<uint16_t> random_bf16s(Rng& rng, std::size_t count, const ValueMix& mix) {
  std::vector<uint16_t> v(count);
  for (auto& x : v) x = random_bf16(rng, mix);
  return v;
}

}  // namespace tp::tb
