// Shared by the fuzz targets (tb/fuzz/fuzz_<name>.cpp): a finding is reported by aborting, which
// libFuzzer records as a crash (with the input) and the regression driver as a failed test.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace tp::fuzz {

// A broken invariant (a round trip that changes the words, an exception of the wrong type).
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  fmt::print(stderr, "fuzz: {}\n", fmt::format(format, std::forward<Args>(args)...));
  std::fflush(stderr);
  std::abort();
}

inline std::string_view text_of(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace tp::fuzz
