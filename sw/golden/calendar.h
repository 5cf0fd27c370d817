// A calendar of busy intervals on one resource (the fast chip model's memory port and data
// buses, fast_timing.cpp): the model places each queue's instructions in an order of its own,
// not in time order, so a later-placed booking fills the gaps an earlier one left.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <utility>
#include <vector>

namespace tp::golden {

// Busy intervals of one resource (in any unit of time); book() places `count` slots of `len` units
// each at or after `from`, in the earliest gaps, and returns the first slot's start and the last
// one's end (nothing is booked for a count or a length of 0: {from, from}).
class Calendar {
 public:
  void clear() {
    busy_.clear();
    first_ = 0;
  }
  std::size_t intervals() const { return busy_.size() - first_; }  // disjoint, touching ones merged
  void presize(std::size_t n) { busy_.reserve(n); }                // room for n intervals before any regrowth

  std::pair<uint64_t, uint64_t> book(uint64_t from, uint64_t count, uint64_t len) {
    return book_runs(from, count, len, [](uint64_t, uint64_t) {});
  }

  // book(), telling `run(start, slots)` of each run of back-to-back slots it placed, in order.
  // Inlined: most bookings go at or after the last interval (extend it or append, no search);
  // the rest fill gaps (book_gaps). This is the fast chip model's hottest path.
  template <class Run>
  [[gnu::always_inline]] std::pair<uint64_t, uint64_t> book_runs(uint64_t from, uint64_t count, uint64_t len,
                                                                 Run&& run) {
    if (count == 0 || len == 0) return {from, from};
    const bool any = busy_.size() > first_;
    if (!any || from >= busy_.back().second) {
      const uint64_t end = from + count * len;
      if (any && busy_.back().second == from)
        busy_.back().second = end;
      else
        busy_.emplace_back(from, end);
      run(from, count);
      return {from, end};
    }
    return book_gaps(from, count, len, run);
  }

  // The earliest t >= from at which a slot of `len` fits a gap (nothing is booked).
  uint64_t first_fit(uint64_t from, uint64_t len) const {
    uint64_t t = from;
    for (std::size_t i = after(t);; ++i) {
      if (i > first_ && busy_[i - 1].second > t) t = busy_[i - 1].second;
      if (i == busy_.size() || busy_[i].first >= t + len) return t;
    }
  }

  // Marks [s, e) busy whatever was booked there (merged with what it overlaps or touches).
  void reserve(uint64_t s, uint64_t e) {
    if (s >= e) return;
    std::size_t i = after(s);  // the first interval starting after s
    if (i > first_ && busy_[i - 1].second >= s) {
      --i;
      s = busy_[i].first;
    }
    std::size_t j = i;
    while (j < busy_.size() && busy_[j].first <= e) e = std::max(e, busy_[j++].second);
    busy_.erase(busy_.begin() + static_cast<std::ptrdiff_t>(i), busy_.begin() + static_cast<std::ptrdiff_t>(j));
    busy_.insert(busy_.begin() + static_cast<std::ptrdiff_t>(i), {s, e});
  }

  // Forget what ends before t (no booking will start before it).
  void prune(uint64_t t) {
    while (first_ < busy_.size() && busy_[first_].second <= t) ++first_;
    if (first_ > 64 && first_ * 2 > busy_.size()) {  // drop the forgotten prefix now and then
      busy_.erase(busy_.begin(), busy_.begin() + static_cast<std::ptrdiff_t>(first_));
      first_ = 0;
    }
  }

 private:
  // book_runs() where the slots go into gaps: apart from the fast path above, so that the
  // appending case inlines into its callers (the fast model's hottest path).
  template <class Run>
  std::pair<uint64_t, uint64_t> book_gaps(uint64_t from, uint64_t count, uint64_t len, Run& run) {
    uint64_t first = 0, end = from;
    bool have_first = false;
    uint64_t t = from;
    while (count > 0) {
      // The interval that contains t or the next one after it.
      std::size_t i = after(t);  // the first interval starting after t
      if (i > first_ && busy_[i - 1].second > t) {
        t = busy_[i - 1].second;
        continue;
      }
      const uint64_t gap_end = i == busy_.size() ? UINT64_MAX : busy_[i].first;
      // (A division only where the gap is short of all of them: this is the model's hot path.)
      const uint64_t room = gap_end - t;
      uint64_t need = 0;
      const bool all = !__builtin_mul_overflow(count, len, &need) && need <= room;
      const uint64_t fit = all ? count : room / len;
      if (fit == 0) {
        t = busy_[i].second;
        continue;
      }
      if (!have_first) first = t, have_first = true;
      end = t + fit * len;
      insert(i, t, end);
      run(t, fit);
      count -= fit;
      t = end;
    }
    return {have_first ? first : from, end};
  }

  // Index of the first (live) interval that starts after t. Bookings mostly land near the end
  // (the model places instructions roughly in time order), so the search gallops back from the
  // end: steps of 1, 2, 4, ... until an interval starts at or before t, then a binary search in
  // the last step.
  std::size_t after(uint64_t t) const {
    std::size_t hi = busy_.size(), step = 1;
    while (hi > first_ && busy_[hi - 1].first > t) {
      const std::size_t lo = hi - first_ > step ? hi - step : first_;
      if (busy_[lo].first <= t) {
        const auto it = std::upper_bound(
            busy_.begin() + static_cast<std::ptrdiff_t>(lo), busy_.begin() + static_cast<std::ptrdiff_t>(hi), t,
            [](uint64_t v, const std::pair<uint64_t, uint64_t>& b) { return v < b.first; });
        return static_cast<std::size_t>(it - busy_.begin());
      }
      hi = lo;
      step *= 2;
    }
    return hi;
  }
  // [s, e) into the gap before interval i, merged with the neighbours it touches.
  void insert(std::size_t i, uint64_t s, uint64_t e) {
    const bool prev = i > first_ && busy_[i - 1].second == s, next = i < busy_.size() && busy_[i].first == e;
    if (prev && next) {
      busy_[i - 1].second = busy_[i].second;
      busy_.erase(busy_.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (prev) {
      busy_[i - 1].second = e;
    } else if (next) {
      busy_[i].first = s;
    } else {
      busy_.insert(busy_.begin() + static_cast<std::ptrdiff_t>(i), {s, e});
    }
  }
  std::vector<std::pair<uint64_t, uint64_t>> busy_;  // [start, end), sorted, disjoint; live from first_
  std::size_t first_ = 0;
};

}  // namespace tp::golden
