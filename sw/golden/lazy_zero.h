// Memory that reads as zero and costs the host nothing until it is written: a std::vector whose
// allocator takes fresh anonymous pages (mmap, from 2 MiB on; calloc below) and whose
// value-initialisation writes nothing. The kernel maps such pages only when they are first
// touched, so a chip's VMEM and accumulators (16 MiB and 2 MiB on v2) take resident memory only
// for the parts a program uses (in huge pages of 2 MiB where the kernel gives them, else 4 KiB):
// how a 1024-chip pod fits the machine (docs/scale.md).
#pragma once

#include <sys/mman.h>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace tp::golden {

template <class T>
struct LazyZeroAllocator {
  static_assert(std::is_trivially_default_constructible_v<T>, "zero bytes must be the value-initialised T");
  static_assert(alignof(T) <= alignof(std::max_align_t), "calloc aligns to max_align_t only");
  using value_type = T;
  LazyZeroAllocator() = default;
  template <class U>
  explicit LazyZeroAllocator(const LazyZeroAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes >= kHuge) {
      // Fresh anonymous pages, zero and untouched; huge pages where the kernel has them
      // (transparent huge pages in madvise mode): a 16 MiB VMEM faults in 2 MiB at a time, not 4 KiB.
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      (void)madvise(p, bytes, MADV_HUGEPAGE);
      return static_cast<T*>(p);
    }
    void* p = std::calloc(n, sizeof(T));
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n * sizeof(T) >= kHuge)
      (void)munmap(p, n * sizeof(T));
    else
      std::free(p);
  }
  static constexpr std::size_t kHuge = std::size_t{2} << 20;
  // Value-initialisation: calloc's zeros already are the value, so the pages stay untouched. Only
  // on fresh memory: a vector that shrinks and grows again within its capacity keeps the old
  // values (VMEM and the accumulators never change size). A copy writes every word.
  template <class U>
  void construct(U*) noexcept {}
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  friend bool operator==(const LazyZeroAllocator&, const LazyZeroAllocator&) { return true; }
};

// n words, all zero; construct as LazyZeroWords(n), not (n, 0u), which writes every word.
using LazyZeroWords = std::vector<uint32_t, LazyZeroAllocator<uint32_t>>;

}  // namespace tp::golden
