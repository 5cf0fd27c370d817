// A calendar of busy intervals on one resource (the fast chip model's memory port and data
// buses, fast_timing.cpp): the model places each queue's instructions in an order of its own,
// not in time order, so a later-placed booking fills the gaps an earlier one left.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <utility>

namespace tp::golden {

// Busy intervals of one resource (in any unit of time); book() places `count` slots of `len` units
// each at or after `from`, in the earliest gaps, and returns the first slot's start and the last
// one's end (nothing is booked for a count or a length of 0: {from, from}).
class Calendar {
 public:
  void clear() { busy_.clear(); }
  std::size_t intervals() const { return busy_.size(); }  // disjoint, touching ones merged

  std::pair<uint64_t, uint64_t> book(uint64_t from, uint64_t count, uint64_t len) {
    if (count == 0 || len == 0) return {from, from};
    // Most bookings go at or after the last interval: extend it or append, no search.
    if (busy_.empty() || from >= busy_.rbegin()->second) {
      const uint64_t end = from + count * len;
      if (!busy_.empty() && busy_.rbegin()->second == from)
        busy_.rbegin()->second = end;
      else
        busy_.emplace_hint(busy_.end(), from, end);
      return {from, end};
    }
    uint64_t first = 0, end = from;
    bool have_first = false;
    uint64_t t = from;
    while (count > 0) {
      // The interval that contains t or the next one after it.
      auto it = busy_.upper_bound(t);
      if (it != busy_.begin()) {
        auto prev = std::prev(it);
        if (prev->second > t) {
          t = prev->second;
          continue;
        }
      }
      const uint64_t gap_end = it == busy_.end() ? UINT64_MAX : it->first;
      const uint64_t fit = std::min<uint64_t>(count, (gap_end - t) / len);
      if (fit == 0) {
        t = it->second;
        continue;
      }
      if (!have_first) first = t, have_first = true;
      end = t + fit * len;
      insert(t, end);
      count -= fit;
      t = end;
    }
    return {have_first ? first : from, end};
  }

  // Forget what ends before t (no booking will start before it).
  void prune(uint64_t t) {
    while (!busy_.empty() && busy_.begin()->second <= t) busy_.erase(busy_.begin());
  }

 private:
  void insert(uint64_t s, uint64_t e) {
    // Merge with neighbours that touch.
    auto next = busy_.lower_bound(s);
    if (next != busy_.begin()) {
      auto prev = std::prev(next);
      if (prev->second == s) {
        s = prev->first;
        busy_.erase(prev);
      }
    }
    next = busy_.find(e);
    if (next != busy_.end()) {
      e = next->second;
      busy_.erase(next);
    }
    busy_[s] = e;
  }

  std::map<uint64_t, uint64_t> busy_;  // start -> end, disjoint
};

}  // namespace tp::golden
