// make bench: the HBM controller's bandwidth and latency per access pattern on the HBM2 preset,
// into build/reports/hbm.json; and a trace mode that replays "0xADDRESS READ|WRITE CYCLE" lines.
// Built from this file for two models (TP_HBM_CLASS): hbm_bench simulates one pseudo-channel
// (tp_hbm_ctrl), and hbm_system_bench (and hbm_system_trace, at a test preset) the whole subsystem (tp_hbm: every
// pseudo-channel behind its one request port), with the same patterns and trace mode over the subsystem's addresses.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <type_traits>

#include TP_HBM_HEADER
#include "config.h"
#include "hbm_harness.h"
#include "hbm_trace.h"

namespace {

using nlohmann::json;
using Harness = tp::tb::HbmHarness<TP_HBM_CLASS>;
constexpr bool kSystem = Harness::kMulti;  // tp_hbm: multi-burst requests, one counter per pseudo-channel
constexpr unsigned kMaxLen = 16;           // tp_hbm's LenW = 4: at most 16 bursts a request

// A counter summed over the pseudo-channels (the subsystem has one per pseudo-channel).
template <class V>
uint64_t total(const V& v, unsigned nc) {
  if constexpr (std::is_integral_v<V>) {
    (void)nc;
    return v;
  } else {
    uint64_t s = 0;
    for (unsigned c = 0; c < nc; ++c) s += v[c];
    return s;
  }
}

// The subsystem's own fields: its port answers one burst per cycle (read data or a write's
// acknowledgement), and each pseudo-channel's bus use.
template <class Top>
void add_system_fields(json& r, const Top& t, unsigned nc, uint64_t n, double cycles) {
  if constexpr (tp::tb::HbmHarness<Top>::kMulti) {
    r["pseudo_channels"] = nc;
    r["port_fraction"] = double(n) / cycles;
    json per = json::array();
    for (unsigned c = 0; c < nc; ++c) per.push_back(double(t.cnt_bus_busy_o[c]) / cycles);
    r["pseudo_channel_bus_fraction"] = per;
  } else {
    (void)r, (void)t, (void)nc, (void)n, (void)cycles;
  }
}

json measure(const tp::Preset& preset, const std::string& pattern, const std::vector<tp::tb::HbmRequest>& reqs,
             Harness::Feeder feeder = nullptr, uint64_t limit = 5'000'000) {
  Harness h(preset.hbm, 1);
  for (const auto& r : reqs) h.queue(r);
  const unsigned nc = h.channels();
  if (feeder) h.feed(std::move(feeder));
  const auto t0 = std::chrono::steady_clock::now();
  h.run(0, 0, limit);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!h.errors().empty()) throw std::runtime_error("scoreboard: " + h.errors().front());
  auto lat = h.read_latencies();
  std::sort(lat.begin(), lat.end());
  double avg = 0;
  for (auto l : lat) avg += double(l);
  avg = lat.empty() ? 0 : avg / double(lat.size());
  const double p99 = lat.empty() ? 0 : double(lat[std::min(lat.size() - 1, lat.size() * 99 / 100)]);
  auto wlat = h.write_latencies();
  std::sort(wlat.begin(), wlat.end());
  double wavg = 0;
  for (auto l : wlat) wavg += double(l);
  wavg = wlat.empty() ? 0 : wavg / double(wlat.size());
  auto& t = h.top();
  const uint64_t n = total(t.cnt_reads_o, nc) + total(t.cnt_writes_o, nc);  // bursts
  const uint64_t refreshes = total(t.cnt_refreshes_o, nc);
  const double cycles = double(h.cycle());
  // Refreshes due but still postponed at the end (at most 8 per pseudo-channel) were not paid for
  // in these cycles.
  const uint64_t banks = preset.hbm.per_bank_refresh ? preset.hbm.bank_groups * preset.hbm.banks_per_group : 1;
  const uint64_t due = h.cycle() / preset.hbm.timing.trefi * nc * banks;
  const uint64_t debt = due > refreshes ? due - refreshes : 0;
  json r = {{"pattern", pattern},
            {"requests", n},
            {"bytes", n * 32},
            {"cycles", h.cycle()},
            // 2 data-bus cycles per burst, over every pseudo-channel's bus
            {"bandwidth_fraction", double(n) * 2.0 / (cycles * nc)},
            {"row_hit_rate", double(total(t.cnt_hits_o, nc)) / double(n)},
            {"row_misses", total(t.cnt_misses_o, nc)},
            {"row_conflicts", total(t.cnt_conflicts_o, nc)},
            {"refreshes", refreshes},
            {"refreshes_postponed_at_end", debt},
            {"avg_read_latency", avg},
            {"p99_read_latency", p99},
            {"max_read_latency", lat.empty() ? 0 : lat.back()},
            {"avg_write_latency", wavg},
            {"p99_write_latency", wlat.empty() ? 0 : double(wlat[std::min(wlat.size() - 1, wlat.size() * 99 / 100)])},
            {"sim_cycles_per_s", cycles / wall}};
  add_system_fields(r, t, nc, n, cycles);
  return r;
}

// Request IDs: reads take 0..kIds-1 and writes kIds..2 kIds-1 (separate spaces, as AXI's read and
// write channels have, so per-ID order never chains a read behind a write), round robin per
// request; the bursts of one request share its ID. The chip's memory port tags every beat in
// flight with one of 63 IDs (tp_mem_hbm), so per-ID order seldom holds a request back there;
// 32 IDs per kind model that (with 8 the random patterns lost up to 10% to order alone; the
// subsystem, which holds a request while its ID is outstanding in another pseudo-channel, moved a
// sequential stream at 0.18 bursts per cycle with 8). The models have 6-bit IDs.
constexpr unsigned kIds = 32;
unsigned request_id(bool write, uint64_t& reads, uint64_t& writes) {
  return write ? kIds + static_cast<unsigned>(writes++ % kIds) : static_cast<unsigned>(reads++ % kIds);
}

// The harness requests of one request of `len` bursts from `addr` (within `bursts`, wrapping):
// one per burst for a single controller; for the subsystem, chunks of at most kMaxLen bursts
// that do not wrap, a read one handshake, a write one per burst (its data).
template <class Rng, class Out>
void split_request(bool write, uint32_t addr, unsigned len, unsigned id, uint64_t not_before, uint32_t bursts, Rng& rng,
                   Out&& out) {
  for (unsigned k = 0; k < len;) {
    const uint32_t a = (addr + k) % bursts;
    const unsigned n = kSystem ? std::min({kMaxLen, len - k, bursts - a}) : 1;
    for (unsigned b = 0; b < (write ? n : 1); ++b) {
      tp::tb::HbmRequest r;
      r.write = write;
      r.addr = a;
      r.id = id;
      r.not_before = not_before;
      r.len = n - 1;
      r.beat = b;
      for (auto& x : r.data.b) x = static_cast<uint8_t>(rng());  // (reads too: one random sequence)
      out(r);
    }
    k += n;
  }
}

// random_64B_paced offers a 64-byte request every 9 cycles: 4 of every 9 data-bus cycles, 0.444
// of peak, DRAMSim3's throughput on random 64 B (docs/benchmarks.md), so that the read latency
// compares at the same load.
constexpr unsigned kPacedGap = 9;

std::vector<tp::tb::HbmRequest> pattern_requests(const std::string& p, uint32_t bursts, unsigned n) {
  std::mt19937_64 rng(7);
  std::vector<tp::tb::HbmRequest> out;
  uint64_t reads = 0, writes = 0;
  uint64_t total_bursts = 0;
  auto add = [&](bool write, uint32_t addr, unsigned len = 1, uint64_t not_before = 0) {
    len = static_cast<unsigned>(std::min<uint64_t>(len, n - total_bursts));  // n bursts in all
    split_request(write, addr, len, request_id(write, reads, writes), not_before, bursts, rng,
                  [&](const tp::tb::HbmRequest& r) { out.push_back(r); });
    total_bursts += len;
  };
  for (unsigned i = 0; total_bursts < n; ++i) {
    if (p == "seq_read")
      add(false, i);
    else if (p == "seq_write")
      add(true, i);
    else if (p == "mix_2to1")
      add(i % 3 == 2, i);
    else if (p == "random_64B") {
      add(i % 3 == 2, static_cast<uint32_t>(rng() % bursts) & ~1u, 2);
    } else if (p == "random_64B_paced") {
      // The same traffic offered at a fixed rate, one request every kPacedGap cycles, for the
      // latency at a given load rather than at saturation.
      add(i % 3 == 2, static_cast<uint32_t>(rng() % bursts) & ~1u, 2, uint64_t{i} * kPacedGap);
    } else if (p == "random_32B") {
      add(i % 3 == 2, static_cast<uint32_t>(rng() % bursts));
    } else if (p == "random_4KiB") {
      const auto a = static_cast<uint32_t>(rng() % bursts) & ~127u;
      add(false, a, 128);
    } else if (p == "strided") {
      add(false, i * 64);  // every 2 KiB
    } else {
      throw std::invalid_argument(fmt::format("unknown pattern '{}'", p));
    }
  }
  return out;
}

// A trace: lines "0xADDRESS READ|WRITE CYCLE [BYTES]" (DRAMSim3's format plus an optional size,
// default 32); '#' starts a comment line. A request of BYTES takes ceil(BYTES / 32) consecutive
// bursts with the request's ID (request_id: separate spaces for reads and writes, round robin),
// handed to the harness as split_request cuts them (per burst, or subsystem chunks). The file is checked whole first (a
// bad line is reported before any simulation), then streamed: it is never held in memory.
class TraceReader {
 public:
  TraceReader(std::string file, uint32_t bursts) : file_(std::move(file)), bursts_(bursts) {
    std::ifstream in(file_);
    if (!in) throw std::runtime_error(fmt::format("{}: cannot open", file_));
    Line l;
    while (next_line(in, l)) ++lines_;
    in_.open(file_);
    lineno_ = 0;
    last_ = 0;
  }
  uint64_t lines() const { return lines_; }

  // The next harness request; false at the end of the trace.
  bool operator()(tp::tb::HbmRequest& r) {
    if (pending_.empty()) {
      if (!next_line(in_, cur_)) return false;
      split_request(cur_.write, static_cast<uint32_t>(cur_.burst % bursts_), cur_.bursts,
                    request_id(cur_.write, reads_, writes_), cur_.cycle, bursts_, rng_,
                    [&](const tp::tb::HbmRequest& x) { pending_.push_back(x); });
    }
    r = pending_.front();
    pending_.pop_front();
    return true;
  }

 private:
  using Line = tp::tb::TraceLine;
  // Each line is parsed by hbm_trace.h's parse_trace_line (shared with tb/fuzz/fuzz_trace.cpp).
  bool next_line(std::ifstream& in, Line& out) {
    std::string line;
    while (std::getline(in, line)) {
      ++lineno_;
      if (tp::tb::parse_trace_line(line, file_, lineno_, last_, out)) return true;
    }
    return false;
  }

  std::string file_;
  uint32_t bursts_;
  std::ifstream in_;
  uint64_t lines_ = 0, lineno_ = 0, last_ = 0, reads_ = 0, writes_ = 0;
  Line cur_;
  std::deque<tp::tb::HbmRequest> pending_;  // the current line's requests (at most 128 bursts)
  std::mt19937_64 rng_{7};                  // write data
};

// The pattern's limit as a fraction of the data bus's peak (docs/hbm.md "Bounds"): all-bank
// refresh takes tRFC of every tREFI (single-bank refresh takes one bank at a time, and a
// command slot, which the bound does not count); a pattern that needs a new row for every
// `bursts_per_row` bursts can open at most 4 rows per tFAW, each giving bursts_per_row bursts of
// 2 bus cycles.
// For the subsystem, the fraction is of all nc pseudo-channels' buses, and its port, one burst a
// cycle, bounds it at 2 / nc.
double bound_fraction(const tp::HbmConfig& c, const std::string& p, unsigned nc) {
  const double refresh = c.per_bank_refresh ? 1.0 : 1.0 - double(c.timing.trfc) / double(c.timing.trefi);
  const double faw = double(c.timing.tfaw);
  auto rows_bound = [&](double bursts_per_row) { return std::min(1.0, 4.0 * bursts_per_row * 2.0 / faw); };
  double b = refresh;  // streams: a row of 32 bursts per activate, far from the tFAW limit
  if (p == "random_64B") b = refresh * rows_bound(2);
  if (p == "random_64B_paced") b = std::min(refresh * rows_bound(2), 4.0 / kPacedGap / nc);  // the offered load
  if (p == "random_32B" || p == "strided") b = refresh * rows_bound(1);
  return kSystem ? std::min(b, 2.0 / nc) : b;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{fmt::format("tensorpod HBM {} benchmark ({} preset)", kSystem ? "subsystem" : "controller", TP_PRESET)};
  std::string out = kSystem ? "build/reports/hbm_system.json" : "build/reports/hbm.json", trace;
  unsigned n = 0;
  app.add_option("--out", out, "JSON report (patterns); with --trace the statistics also go to stdout");
  app.add_option("--requests", n,
                 "requests per pattern (default: 200000 for the streaming patterns, 20000 for the others)");
  app.add_option("--trace", trace,
                 "replay a trace file of '0xADDRESS READ|WRITE CYCLE [BYTES]' lines instead (streamed from disk)");
  uint64_t max_cycles = 0;
  app.add_option("--max-cycles", max_cycles, "--trace: stop with an error after this many cycles (0: no limit)")
      ->capture_default_str();
  std::vector<std::string> patterns = {"seq_read",         "seq_write",  "mix_2to1",    "random_64B",
                                       "random_64B_paced", "random_32B", "random_4KiB", "strided"};
  app.add_option("--patterns", patterns, "patterns to run")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    const tp::Preset preset = tp::load_preset(TP_PRESET);
    const auto& c = preset.hbm;
    const unsigned nc = kSystem ? c.channels * c.pseudo_channels : 1;
    const uint32_t bursts = nc * c.rows * c.columns * c.bank_groups * c.banks_per_group;
    json report = {{"benchmark", "hbm"},
                   {"config", json::parse(tp::preset_json(preset))["hbm"]},
                   {"simulated", kSystem ? "every pseudo-channel (tp_hbm)" : "one pseudo-channel"},
                   {"results", json::array()}};
    if (!trace.empty()) {
      TraceReader reader(trace, bursts);  // checks every line before the run
      json r = measure(preset, "trace:" + trace, {}, std::ref(reader), max_cycles);
      r["trace_lines"] = reader.lines();
      fmt::print("{}\n", r.dump(2));
      if (app.count("--out")) std::ofstream(out) << r.dump(2) << "\n";
      return 0;
    }
    for (const std::string& p : patterns) {
      // Streams run long enough that the up to 8 refreshes a controller may postpone are a
      // small part of the time (they are reported as refreshes_postponed_at_end).
      const bool stream = p == "seq_read" || p == "seq_write" || p == "random_4KiB";
      json r = measure(preset, p, pattern_requests(p, bursts, n ? n : (stream ? 200000u : 20000u)));
      r["bound_fraction"] = bound_fraction(c, p, nc);
      r["fraction_of_bound"] = r["bandwidth_fraction"].get<double>() / r["bound_fraction"].get<double>();
      fmt::print(
          "hbm bench {:12}: bandwidth {:.3f} of peak ({:.3f} of its bound {:.3f}), row hits {:.2f}, read latency avg "
          "{:.1f} p99 {:.0f}\n",
          p, r["bandwidth_fraction"].get<double>(), r["fraction_of_bound"].get<double>(),
          r["bound_fraction"].get<double>(), r["row_hit_rate"].get<double>(), r["avg_read_latency"].get<double>(),
          r["p99_read_latency"].get<double>());
      report["results"].push_back(r);
    }
    if (const auto dir = std::filesystem::path(out).parent_path(); !dir.empty())
      std::filesystem::create_directories(dir);
    std::ofstream(out) << report.dump(2) << "\n";
    fmt::print("wrote {}\n", out);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }
}
