// The front end's second issue slot (docs/chip.md, "Dual issue"): a scalar instruction right after
// a unit instruction that dispatches, or after a scalar instruction that does not branch and
// writes no register it reads, issues in the same cycle. schedule_pairs reorders each basic block
// of a loop nest so that as many scalar instructions as possible pair; the unit instructions keep
// their order, and every register keeps the value program order gives it at each use.
#include <algorithm>

#include "builder.h"

namespace tp::compiler::detail {

namespace {

bool is_scalar(const Instr& i) { return isa::is_scalar(i.op); }
bool is_branch(const Instr& i) { return isa::is_branch(i.op); }

// Whether b may issue in the same cycle right after a (b a scalar instruction; a not a branch
// that is taken, which the caller knows): b reads nothing a writes.
bool pairs(const Instr& a, const Instr& b) {
  if (!is_scalar(b)) return false;
  return (isa::reg_use(a).writes & isa::reg_use(b).reads) == 0;
}

// One basic block: lines [begin, end) with no label inside and no branch before the last.
void schedule_block(Lines& lines, size_t begin, size_t end) {
  // Items: an instruction with the comment lines before it.
  struct Item {
    std::vector<Line> lines;
    Instr in;
    isa::RegUse use;
  };
  std::vector<Item> items;
  std::vector<Line> pending, trailing;
  for (size_t i = begin; i < end; ++i) {
    if (!lines[i].instr) {
      pending.push_back(std::move(lines[i]));
      continue;
    }
    const Instr in = *lines[i].instr;
    pending.push_back(std::move(lines[i]));
    items.push_back({std::move(pending), in, isa::reg_use(in)});
    pending.clear();
  }
  trailing = std::move(pending);
  const size_t n = items.size();
  // dep[j]: the items that must issue before j (in an earlier cycle, or for a read-before-write
  // or write-after-write, in j's cycle as its first slot).
  std::vector<std::vector<size_t>> raw(n), order(n);
  for (size_t j = 0; j < n; ++j) {
    for (size_t i = 0; i < j; ++i) {
      const isa::RegUse &a = items[i].use, &b = items[j].use;
      const bool both_units = !is_scalar(items[i].in) && !is_scalar(items[j].in);
      const bool last = j + 1 == n && (is_branch(items[j].in) || items[j].in.op == Op::halt);
      if (a.writes & b.reads)
        raw[j].push_back(i);  // j needs i's result: a later cycle
      else if (both_units || last || (a.reads & b.writes) || (a.writes & b.writes))
        order[j].push_back(i);  // i first, possibly in the same cycle
    }
  }
  std::vector<int> cycle_of(n, -1);
  std::vector<size_t> out;
  int cycle = 0;
  auto ready = [&](size_t j, int at) {
    for (size_t i : raw[j])
      if (cycle_of[i] < 0 || cycle_of[i] >= at) return false;
    for (size_t i : order[j])
      if (cycle_of[i] < 0 || cycle_of[i] > at) return false;
    return true;
  };
  while (out.size() < n) {
    // The first slot: the earliest ready unit instruction (it opens a pair and keeps the units
    // fed), else the earliest ready scalar one.
    size_t first = n, first_scalar = n;
    for (size_t j = 0; j < n && first == n; ++j) {
      if (cycle_of[j] >= 0 || !ready(j, cycle)) continue;
      if (!is_scalar(items[j].in) && items[j].in.op != Op::halt)
        first = j;
      else if (first_scalar == n)
        first_scalar = j;
    }
    if (first == n) first = first_scalar;
    if (first == n)  // only the block's last (a branch or halt) is left: it waits for the rest
      for (size_t j = 0; j < n && first == n; ++j)
        if (cycle_of[j] < 0 && ready(j, cycle)) first = j;
    cycle_of[first] = cycle;
    out.push_back(first);
    // The second: the earliest ready scalar that pairs (never after a branch, the block's last).
    if (!is_branch(items[first].in)) {
      for (size_t j = 0; j < n; ++j) {
        if (cycle_of[j] >= 0 || !is_scalar(items[j].in) || !pairs(items[first].in, items[j].in)) continue;
        if (!ready(j, cycle)) continue;
        cycle_of[j] = cycle;
        out.push_back(j);
        break;
      }
    }
    ++cycle;
  }
  size_t at = begin;
  for (size_t j : out)
    for (Line& l : items[j].lines) lines[at++] = std::move(l);
  for (Line& l : trailing) lines[at++] = std::move(l);
}

}  // namespace

void schedule_pairs(Lines& lines, size_t begin, size_t end) {
  size_t start = begin;
  for (size_t i = begin; i < end; ++i) {
    if (!lines[i].label.empty()) {
      schedule_block(lines, start, i);
      start = i + 1;
    } else if (lines[i].instr && (is_branch(*lines[i].instr) || lines[i].instr->op == Op::halt)) {
      schedule_block(lines, start, i + 1);
      start = i + 1;
    }
  }
  schedule_block(lines, start, end);
}

uint64_t issue_cycles(const Lines& lines, size_t begin, size_t end) {
  uint64_t cycles = 0;
  const Instr* prev = nullptr;  // the first slot of the last cycle, if the next may pair with it
  for (size_t i = begin; i < end; ++i) {
    if (!lines[i].instr) continue;
    const Instr& in = *lines[i].instr;
    if (prev && pairs(*prev, in)) {
      prev = nullptr;
      continue;
    }
    ++cycles;
    prev = is_branch(in) || in.op == Op::halt ? nullptr : &in;  // a branch: assume the next is its target
  }
  return cycles;
}

}  // namespace tp::compiler::detail
