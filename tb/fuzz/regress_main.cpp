// The regression driver of a fuzz target (tb/fuzz/tests.cmake): runs every file under the
// directories given (recursively, in name order) through the target's LLVMFuzzerTestOneInput,
// as libFuzzer would. A finding aborts, which fails the test; the input's name is printed first.
//   fuzz_regress_<name> DIR...   a directory that does not exist is reported and skipped (a target
//                                may have no regression inputs yet); no input at all is an error.
// Without AddressSanitizer the address space is limited to 2 GiB, like libFuzzer's memory limit.
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR...  (runs every file under each DIR through the fuzz target)\n", argv[0]);
    return 2;
  }
#if defined(__SANITIZE_ADDRESS__)
#define TP_FUZZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TP_FUZZ_ASAN 1
#endif
#endif
#ifndef TP_FUZZ_ASAN
  // As libFuzzer's -rss_limit_mb=2048: an input must not make a parser allocate without bound (a
  // bad_alloc ends the run). Not under AddressSanitizer, which maps terabytes of shadow memory.
  const rlimit limit{2048ull << 20, 2048ull << 20};
  if (setrlimit(RLIMIT_AS, &limit) != 0) std::perror("setrlimit");
#endif
  size_t inputs = 0;
  for (int a = 1; a < argc; ++a) {
    const fs::path dir = argv[a];
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      std::printf("%s: not a directory, skipped\n", dir.c_str());
      continue;
    }
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      std::ifstream in(f, std::ios::binary);
      if (!in) {
        std::fprintf(stderr, "%s: cannot read\n", f.c_str());
        return 1;
      }
      const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::printf("%s (%zu bytes)\n", f.c_str(), bytes.size());
      std::fflush(stdout);
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++inputs;
    }
  }
  if (inputs == 0) {
    std::fprintf(stderr, "no inputs found: the corpus directory is missing or empty\n");
    return 1;
  }
  std::printf("%zu inputs, no finding\n", inputs);
  return 0;
}
