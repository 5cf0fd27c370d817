#include "trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <tuple>

namespace tp::trace {

using json = nlohmann::json;

ChipTrace::ChipTrace(std::string name, golden::IciRegs ici) : name_(std::move(name)), ici_(ici) {}

void ChipTrace::start(std::span<const isa::Word> code) {
  code_.assign(code.begin(), code.end());
  passive_.assign(code_.size(), false);
  for (std::size_t pc = 0; pc < code_.size(); ++pc) {
    const auto d = isa::decode(code_[pc]);
    passive_[pc] = d.err == isa::Err::none && d.instr.op == isa::Op::fence && d.instr.signal == 0;
  }
  units_ = {};
  totals_ = {};
  unattributed_ = end_ = 0;
  first_ = UINT64_MAX;
  golden_ = false;
  slices_.clear();
  sends_.clear();
  arrivals_.clear();
  samples_.clear();
  bins_.clear();
}

void ChipTrace::take(Slice& s, unsigned q, uint32_t pc, uint64_t t) {
  // Field by field into s (the open slice itself, for open()): a Slice built on the stack and
  // copied into the open one stalled on store forwarding, a sixth of the fast model's run.
  Unit& u = units_[q];
  s.pc = pc;
  s.unit = static_cast<uint8_t>(q);
  s.start = s.end = t;
  s.busy = s.stall = 0;
  s.wait = u.pending_wait;
  s.wait_start = u.pending_wait_start;
  u.pending_wait = 0;
}

void ChipTrace::open(unsigned q, uint32_t pc, uint64_t t) {
  units_[q].open = true;
  take(units_[q].cur, q, pc, t);
}

void ChipTrace::mark(unsigned q, uint32_t pc, uint64_t t) {
  Slice m;
  take(m, q, pc, t);
  if (keep_) slices_.push_back(m);
}

void ChipTrace::close(unsigned q, uint64_t t) {
  Unit& u = units_[q];
  if (!u.open) return;
  u.open = false;
  Slice& s = u.cur;
  if (golden_) {
    s.end = std::max(s.start, std::min(s.end, t));
    s.busy = s.end - s.start;
    totals_[q][static_cast<unsigned>(Kind::busy)] += s.busy;
  } else {
    s.end = t;
  }
  if (keep_) slices_.push_back(s);
}

void ChipTrace::cycle(uint64_t t, unsigned go, const uint32_t* pc, unsigned kinds) {
  first_ = std::min(first_, t);
  for (unsigned q = 0; q < kUnits; ++q) {
    Unit& u = units_[q];
    const auto k = static_cast<Kind>((kinds >> (2 * q)) & 3u);
    if ((go >> q) & 1u) {
      if (pc[q] < passive_.size() && passive_[pc[q]]) {
        mark(q, pc[q], t);  // a fence that only waits: the running instruction keeps the unit
      } else {
        close(q, t);
        open(q, pc[q], t);
      }
    }
    ++totals_[q][static_cast<unsigned>(k)];
    switch (k) {
      case Kind::busy:
      case Kind::stall:
        if (u.open)
          ++(k == Kind::busy ? u.cur.busy : u.cur.stall);
        else
          ++unattributed_;
        break;
      case Kind::wait:  // the unit is idle too: its last instruction is done
        if (u.open && t > u.cur.start) close(q, t);
        if (u.pending_wait++ == 0) {
          u.pending_wait_start = t;
          u.pending_wait_pc = pc[q];  // the head that waits
        }
        break;
      case Kind::idle:
        if (u.open && t > u.cur.start) close(q, t);
        break;
    }
  }
  end_ = t + 1;
}

void ChipTrace::span(unsigned q, uint32_t pc, uint64_t dispatch_t, uint64_t token_t, uint64_t start,
                     uint64_t complete) {
  golden_ = true;
  Unit& u = units_[q];
  const uint64_t free_t = std::max(dispatch_t, u.last_end);
  if (token_t > free_t && start > free_t) {
    u.pending_wait = std::min(token_t, start) - free_t;
    u.pending_wait_start = free_t;
    totals_[q][static_cast<unsigned>(Kind::wait)] += u.pending_wait;
  }
  close(q, start);
  open(q, pc, start);
  u.cur.end = std::max(start, complete);
  u.last_end = std::max(u.last_end, u.cur.end);
  end_ = std::max(end_, u.cur.end);
}

void ChipTrace::send(uint64_t t, uint32_t pc, XY dst) {
  if (keep_) sends_.push_back({t, pc, dst});
}

void ChipTrace::send_at(uint64_t t, uint32_t pc) {
  if (!keep_ || pc >= code_.size() || !golden::ici_regs_ok(ici_)) return;
  const auto d = isa::decode(code_[pc]);
  if (d.err != isa::Err::none || d.instr.op != isa::Op::ici_send) return;
  const auto& f = d.instr.f;
  if (const auto dst =
          golden::ici_destination(ici_, static_cast<int64_t>(f.dx), static_cast<int64_t>(f.dy), f.abs != 0))
    sends_.push_back({t, pc, {dst->x, dst->y}});
}

void ChipTrace::arrival(uint64_t t, XY src) {
  if (keep_) arrivals_.push_back({t, src});
}

void ChipTrace::sample(std::string_view track, uint64_t t, double value) {
  if (!keep_) return;
  auto it = samples_.find(track);
  if (it == samples_.end()) it = samples_.emplace(std::string(track), std::vector<Sample>{}).first;
  it->second.push_back({t, value});
}

void ChipTrace::activity(std::string_view track, uint64_t start, uint64_t end, double amount) {
  if (!keep_) return;
  auto it = bins_.find(track);
  if (it == bins_.end()) it = bins_.emplace(std::string(track), std::vector<double>{}).first;
  auto& bins = it->second;
  end = std::max(end, start + 1);
  if (bins.size() < (end + kWindow - 1) / kWindow) bins.resize((end + kWindow - 1) / kWindow, 0.0);
  const double per_cycle = amount / static_cast<double>(end - start);
  for (uint64_t w = start / kWindow; w * kWindow < end; ++w) {
    const uint64_t a = std::max(start, w * kWindow), b = std::min(end, (w + 1) * kWindow);
    bins[w] += per_cycle * static_cast<double>(b - a);
  }
}

void ChipTrace::finish(uint64_t golden_end) {
  if (golden_) end_ = std::max(end_, golden_end);
  for (unsigned q = 0; q < kUnits; ++q) {
    close(q, end_);
    Unit& u = units_[q];
    if (u.pending_wait > 0) mark(q, u.pending_wait_pc, end_);  // the run stopped with this head waiting
  }
  // In start order per unit (a waiting fence's slice was recorded before the one around it).
  std::stable_sort(slices_.begin(), slices_.end(), [](const Slice& a, const Slice& b) {
    return std::tie(a.unit, a.start) < std::tie(b.unit, b.start);
  });
  if (golden_) {
    for (unsigned q = 0; q < kUnits; ++q) {
      auto& k = totals_[q];
      k[static_cast<unsigned>(Kind::idle)] = end_ - std::min(end_, k[0] + k[1] + k[2]);
    }
  }
  for (auto& [track, bins] : bins_) {  // the golden counter tracks, again from scratch
    auto& v = samples_[track];
    v.clear();
    for (std::size_t w = 0; w < bins.size(); ++w) v.push_back({w * kWindow, bins[w] / static_cast<double>(kWindow)});
  }
}

void ChipTrace::shift(uint64_t d) {
  for (auto& s : slices_) {
    s.start -= d;
    s.end -= d;
    if (s.wait > 0) s.wait_start -= d;
  }
  for (auto& s : sends_) s.t -= d;
  for (auto& a : arrivals_) a.t = a.t >= d ? a.t - d : 0;
  for (auto& [name, v] : samples_)
    for (auto& x : v) x.t = x.t >= d ? x.t - d : 0;
  end_ = end_ >= d ? end_ - d : 0;
  if (first_ != UINT64_MAX) first_ -= d;
}

void add_unit_counters(std::map<std::string, uint64_t>& m, const ChipTrace& c) {
  for (unsigned q = 0; q < kUnits; ++q) {
    m[fmt::format("{}_busy", kUnitNames[q])] = c.total(q, Kind::busy);
    m[fmt::format("{}_wait", kUnitNames[q])] = c.total(q, Kind::wait);
    m[fmt::format("{}_idle", kUnitNames[q])] = c.total(q, Kind::idle);
  }
}

// ---- the Chrome Trace Event file ----

namespace {

std::string mnemonic(const ChipTrace& c, uint32_t pc, isa::Instr* out = nullptr) {
  if (pc >= c.code().size()) return "?";
  const auto d = isa::decode(c.code()[pc]);
  if (d.err != isa::Err::none) return ".word";
  if (out) *out = d.instr;
  return std::string(isa::desc(d.instr.op).name);
}

std::string text_of(const ChipTrace& c, uint32_t pc) {
  if (pc >= c.code().size()) return "";
  const auto d = isa::decode(c.code()[pc]);
  if (d.err != isa::Err::none) return "(a word that does not decode)";
  try {
    return isa::disassemble(d.instr);
  } catch (const isa::IsaError&) {
    return "(a word that does not disassemble)";
  }
}

constexpr unsigned kRxTid = kUnits;  // the first "ici rx" track

}  // namespace

uint64_t write_chrome_trace(std::ostream& os, std::span<const ChipTrace* const> chips, const TraceInfo& info) {
  // Flows: the k-th send from A to B with the k-th arrival at B from A, within a group.
  struct Key {
    std::string group;
    XY src, dst;
    auto operator<=>(const Key&) const = default;
  };
  std::map<Key, std::vector<std::pair<unsigned, const Send*>>> sends;
  std::map<Key, std::vector<std::pair<unsigned, const Arrival*>>> arrivals;
  for (unsigned i = 0; i < chips.size(); ++i) {
    for (const Send& s : chips[i]->sends()) sends[{chips[i]->group(), chips[i]->self(), s.dst}].push_back({i, &s});
    for (const Arrival& a : chips[i]->arrivals())
      arrivals[{chips[i]->group(), a.src, chips[i]->self()}].push_back({i, &a});
  }
  uint64_t unmatched = 0;
  for (const auto& [k, v] : sends) {
    const auto it = arrivals.find(k);
    const std::size_t have = it == arrivals.end() ? 0 : it->second.size();
    unmatched += v.size() > have ? v.size() - have : have - v.size();
  }
  for (const auto& [k, v] : arrivals)
    if (!sends.count(k)) unmatched += v.size();

  os << "{\"otherData\":"
     << json{{"tool", info.tool},           {"backend", info.backend},
             {"preset", info.preset},       {"time_unit", "cycle (the viewer's 1 us is 1 cycle)"},
             {"clock_ghz", info.clock_ghz}, {"unmatched_flows", unmatched}}
            .dump()
     << ",\n\"traceEvents\":[\n";
  // Per chip, the "ici rx" track of each sender (by coordinates, after the unit tracks).
  std::vector<std::map<XY, unsigned>> rx_tids(chips.size());
  for (unsigned i = 0; i < chips.size(); ++i) {
    for (const Arrival& a : chips[i]->arrivals()) rx_tids[i].emplace(a.src, 0);
    unsigned next = kRxTid;
    for (auto& [src, tid] : rx_tids[i]) tid = next++;
  }
  bool first = true;
  auto emit = [&](const json& e) {
    if (!first) os << ",\n";
    first = false;
    os << e.dump();
  };
  for (unsigned i = 0; i < chips.size(); ++i) {
    const ChipTrace& c = *chips[i];
    const unsigned pid = i + 1;
    const std::string process = c.group().empty() ? c.name() : c.group() + " " + c.name();
    emit({{"ph", "M"}, {"pid", pid}, {"name", "process_name"}, {"args", {{"name", process}}}});
    emit({{"ph", "M"}, {"pid", pid}, {"name", "process_sort_index"}, {"args", {{"sort_index", i}}}});
    // Tracks: the units, then one "ici rx" track per sender.
    const auto& rx_tid = rx_tids[i];
    auto thread = [&](unsigned tid, const std::string& name) {
      emit({{"ph", "M"}, {"pid", pid}, {"tid", tid}, {"name", "thread_name"}, {"args", {{"name", name}}}});
      emit({{"ph", "M"}, {"pid", pid}, {"tid", tid}, {"name", "thread_sort_index"}, {"args", {{"sort_index", tid}}}});
    };
    for (unsigned q = 0; q < kUnits; ++q) thread(q, std::string(kUnitNames[q]));
    for (const auto& [src, tid] : rx_tid) thread(tid, fmt::format("ici rx from ({}, {})", src.x, src.y));
    for (const Slice& s : c.slices()) {
      isa::Instr in;
      const std::string op = mnemonic(c, s.pc, &in);
      if (s.wait > 0)
        emit({{"ph", "X"},
              {"pid", pid},
              {"tid", s.unit},
              {"ts", s.wait_start},
              {"dur", s.start - s.wait_start},
              {"name", fmt::format("wait s{}", in.wait)},
              {"cat", "wait"},
              {"args", {{"pc", s.pc}, {"semaphore", in.wait}, {"cycles", s.wait}}}});
      json args = {{"pc", s.pc}, {"instr", text_of(c, s.pc)}, {"busy", s.busy}, {"stall", s.stall}};
      if (s.stall > 0) args["stall_cause"] = kStallCause[s.unit];
      if (s.wait > 0) args["wait"] = s.wait;
      // rows when the instruction says it (not from a register: its value is the front end's)
      if (op != "?" && op != ".word" && isa::find_field(isa::desc(in.op), "rows") && in.f.rows_r == 0)
        args["rows"] = in.f.rows;
      emit({{"ph", "X"},
            {"pid", pid},
            {"tid", s.unit},
            {"ts", s.start},
            {"dur", s.end - s.start},
            {"name", op},
            {"cat", kUnitNames[s.unit]},
            {"args", args}});
    }
    for (const auto& [track, samples] : c.samples())
      for (const Sample& s : samples)
        emit({{"ph", "C"}, {"pid", pid}, {"name", track}, {"ts", s.t}, {"args", {{"value", s.value}}}});
    for (const Arrival& a : c.arrivals())
      emit({{"ph", "X"},
            {"pid", pid},
            {"tid", rx_tid.at(a.src)},
            {"ts", a.t},
            {"dur", 1},
            {"name", "arrival"},
            {"cat", "ici"},
            {"args", {{"from", fmt::format("({}, {})", a.src.x, a.src.y)}}}});
  }
  uint64_t id = 0;
  for (const auto& [k, v] : sends) {
    const auto it = arrivals.find(k);
    if (it == arrivals.end()) continue;
    for (std::size_t j = 0; j < std::min(v.size(), it->second.size()); ++j) {
      ++id;
      const json name = fmt::format("({}, {}) -> ({}, {})", k.src.x, k.src.y, k.dst.x, k.dst.y);
      // Half a cycle in: inside the send's slice and the arrival's, away from their neighbours.
      const unsigned to = it->second[j].first;
      emit({{"ph", "s"},
            {"id", id},
            {"pid", v[j].first + 1},
            {"tid", static_cast<unsigned>(isa::Unit::ici)},
            {"ts", static_cast<double>(v[j].second->t) + 0.5},
            {"name", name},
            {"cat", "ici"}});
      emit({{"ph", "f"},
            {"bp", "e"},
            {"id", id},
            {"pid", to + 1},
            {"tid", rx_tids[to].at(k.src)},
            {"ts", static_cast<double>(it->second[j].second->t) + 0.5},
            {"name", name},
            {"cat", "ici"}});
    }
  }
  os << "\n]}\n";
  return unmatched;
}

// ---- the op profile ----

Profile make_profile(const ChipTrace& c, unsigned top) {
  Profile p;
  for (unsigned k = 0; k < 4; ++k) p.cycles += c.total(0, static_cast<Kind>(k));  // every cycle is one kind
  if (p.cycles == 0) p.cycles = c.end();
  std::map<std::pair<unsigned, std::string>, ProfileRow> ops;
  std::map<uint32_t, ProfileWait> waits;
  for (const Slice& s : c.slices()) {
    const std::string op = mnemonic(c, s.pc);
    auto& r = ops[{s.unit, op}];
    r.unit = kUnitNames[s.unit];
    r.op = op;
    ++r.count;
    r.busy += s.busy;
    r.stall += s.stall;
    r.wait += s.wait;
    if (s.wait > 0) {
      auto& w = waits[s.pc];
      w.pc = s.pc;
      ++w.count;
      w.wait += s.wait;
    }
  }
  for (unsigned q = 0; q < kUnits; ++q) {
    ProfileRow r;
    r.unit = kUnitNames[q];
    r.op = "*";
    for (const auto& [k, v] : ops)
      if (k.first == q) r.count += v.count;
    r.busy = c.total(q, Kind::busy);
    r.stall = c.total(q, Kind::stall);
    r.wait = c.total(q, Kind::wait);
    p.units.push_back(r);
  }
  for (auto& [k, v] : ops) p.ops.push_back(std::move(v));
  std::stable_sort(p.ops.begin(), p.ops.end(),
                   [](const ProfileRow& a, const ProfileRow& b) { return a.busy + a.stall > b.busy + b.stall; });
  for (auto& [pc, w] : waits) {
    w.line = pc + 3;
    w.text = text_of(c, pc);
    p.top_waits.push_back(std::move(w));
  }
  std::stable_sort(p.top_waits.begin(), p.top_waits.end(),
                   [](const ProfileWait& a, const ProfileWait& b) { return a.wait > b.wait; });
  if (p.top_waits.size() > top) p.top_waits.resize(top);
  return p;
}

std::string format_profile(const Profile& p, const std::string& title) {
  auto pct = [&](uint64_t v) {
    return p.cycles ? 100.0 * static_cast<double>(v) / static_cast<double>(p.cycles) : 0.0;
  };
  std::string out = fmt::format("op profile: {} ({} cycles)\n", title, p.cycles);
  out += fmt::format("  {:<6} {:<10} {:>8} {:>10} {:>6} {:>10} {:>6} {:>10} {:>6}  {}\n", "unit", "op", "count", "busy",
                     "%", "stall", "%", "wait", "%", "stall cause");
  auto row = [&](const ProfileRow& r) {
    std::string cause;
    for (unsigned q = 0; q < kUnits; ++q)
      if (r.unit == kUnitNames[q] && r.stall > 0) cause = kStallCause[q];
    out += fmt::format("  {:<6} {:<10} {:>8} {:>10} {:>6.1f} {:>10} {:>6.1f} {:>10} {:>6.1f}  {}\n", r.unit, r.op,
                       r.count, r.busy, pct(r.busy), r.stall, pct(r.stall), r.wait, pct(r.wait), cause);
  };
  for (const auto& r : p.units) row(r);
  out += "  per instruction class:\n";
  for (const auto& r : p.ops) row(r);
  if (!p.top_waits.empty()) {
    out += "  longest semaphore waits (line: of the program's listing, tensorpod disasm):\n";
    for (const auto& w : p.top_waits)
      out += fmt::format("    pc {:<6} line {:<6} {:>10} cycles in {:>5} waits  {}\n", w.pc, w.line, w.wait, w.count,
                         w.text);
  }
  return out;
}

}  // namespace tp::trace
