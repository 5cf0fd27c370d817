// make bench: the ICI router's load-latency curves. For every variant in configs/bench.json
// built with this binary's router parameters, every torus size and every traffic pattern, the
// offered load is swept from low to past saturation. Results merge into build/reports/ici.json.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <utility>
#include <vector>

#include TP_ICI_HEADER
#include "config.h"
#include "ici_model.h"
#include "ici_network.h"
#include "ici_traffic.h"

namespace {

using nlohmann::json;
using tp::golden::Pattern;
using Net = tp::tb::IciNetwork<TP_ICI_CLASS>;

struct Point {
  double offered, accepted, avg_latency, p99_latency, avg_hops;
  bool drained;
  uint64_t packets;
};

Point measure(const tp::IciConfig& cfg, unsigned k, Pattern pattern, double load, unsigned packet_flits, const json& b,
              bool lane_by_source) {
  tp::tb::NetOptions o;
  o.torus = {k, k};
  o.seed = 12345;
  o.watchdog = 20000;
  Net net(cfg, o);
  std::mt19937_64 rng(777);
  tp::tb::TrafficSpec spec{pattern, load, packet_flits, packet_flits};
  spec.lane_by_source = lane_by_source;
  const unsigned warmup = b["warmup_cycles"], window = b["measure_cycles"], limit = b["drain_limit_cycles"];
  for (unsigned c = 0; c < warmup; ++c) {
    tp::tb::inject_traffic(net, spec, rng, cfg.vcs / 2);
    net.step();
  }
  const std::size_t first = net.packets().size();
  const uint64_t flits0 = net.network_flits_ejected();
  for (unsigned c = 0; c < window; ++c) {
    tp::tb::inject_traffic(net, spec, rng, cfg.vcs / 2);
    net.step();
  }
  const std::size_t last = net.packets().size();
  // Accepted: flits that crossed the network (a node's packets to itself do not count).
  const double accepted = double(net.network_flits_ejected() - flits0) / (double(k) * k * window);
  // Keep the load on while the measured packets finish (as an open-loop network would), up to
  // a limit; past saturation some will not, and the point says so.
  auto measured_done = [&] {
    for (std::size_t i = first; i < last; ++i)
      if (!net.packets()[i].done) return false;
    return true;
  };
  for (unsigned c = 0; c < limit && !measured_done(); ++c) {
    tp::tb::inject_traffic(net, spec, rng, cfg.vcs / 2);
    net.step();
  }
  std::vector<double> lat;
  double hops = 0;
  for (std::size_t i = first; i < last; ++i) {
    const auto& p = net.packets()[i];
    if (!p.done || p.refused) continue;
    lat.push_back(double(p.delivered - p.created));
    hops += tp::golden::hops(o.torus, tp::golden::full_slice(o.torus), p.src, p.dst);
  }
  if (!net.errors().empty()) throw std::runtime_error("scoreboard: " + net.errors().front());
  std::sort(lat.begin(), lat.end());
  double avg = 0;
  for (double l : lat) avg += l;
  avg = lat.empty() ? 0 : avg / double(lat.size());
  const double p99 =
      lat.empty() ? 0 : lat[std::min(lat.size() - 1, static_cast<std::size_t>(0.99 * double(lat.size())))];
  return {load,        accepted, avg, p99, lat.empty() ? 0 : hops / double(lat.size()), lat.size() == last - first,
          last - first};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{fmt::format("tensorpod ICI router benchmark (router {})", TP_ICI_TAG)};
  std::string out = "build/reports/ici.json";
  std::string bench_file = std::string(TP_SOURCE_DIR) + "/configs/bench.json";
  std::vector<unsigned> tori_override;
  std::vector<std::string> pattern_names;
  app.add_option("--out", out, "JSON report to merge into")->capture_default_str();
  app.add_option("--bench", bench_file, "benchmark description")->capture_default_str();
  app.add_option("--tori", tori_override, "torus sizes k (k x k), overriding the description");
  app.add_option("--patterns", pattern_names, "traffic patterns (default: all)");
  std::string lanes_override;
  app.add_option("--lanes", lanes_override,
                 "injection lane for every variant: by-source (each source its own, (x + y) mod lanes, as the "
                 "chip's ICI unit does) or random per packet; default: each variant's \"lanes\" (by-source "
                 "unless it says otherwise). A variant run with another policy than its own is reported as "
                 "<name>+<policy>")
      ->check(CLI::IsMember({"random", "by-source"}));
  CLI11_PARSE(app, argc, argv);
  try {
    std::ifstream in(bench_file);
    if (!in) throw std::runtime_error(fmt::format("{}: cannot open", bench_file));
    const json b = json::parse(in).at("ici");
    const tp::Preset base = tp::load_preset(b.at("base_preset").get<std::string>());
    json report = {{"benchmark", "ici"}, {"results", json::array()}, {"summary", json::array()}};
    if (std::ifstream old(out); old) {
      try {
        report = json::parse(old);
      } catch (const json::exception&) {
      }
    }
    const std::vector<unsigned> tori =
        tori_override.empty() ? b.at("tori").get<std::vector<unsigned>>() : tori_override;
    std::vector<Pattern> patterns;
    for (const auto& n : pattern_names) {
      const auto p = tp::golden::parse_pattern(n);
      if (!p) throw std::invalid_argument(fmt::format("--patterns: unknown pattern '{}'", n));
      patterns.push_back(*p);
    }
    if (patterns.empty()) patterns.assign(tp::golden::kAllPatterns.begin(), tp::golden::kAllPatterns.end());
    unsigned ran = 0;
    for (const json& var : b.at("variants")) {
      tp::IciConfig cfg = var.contains("preset") ? tp::load_preset(var["preset"].get<std::string>()).ici : base.ici;
      if (var.contains("vcs")) cfg.vcs = var["vcs"];
      if (var.contains("buf_flits")) cfg.buf_flits = var["buf_flits"];
      if (var.contains("sa_iters")) cfg.sa_iters = var["sa_iters"];
      if (var.contains("class_choice")) cfg.class_choice = var["class_choice"];
      if (var.contains("local_ports")) cfg.local_ports = var["local_ports"];
      if (var.contains("turn_room")) cfg.turn_room = var["turn_room"];
      const std::string own_lanes = var.value("lanes", std::string("by-source"));
      if (own_lanes != "by-source" && own_lanes != "random")
        throw std::invalid_argument(fmt::format("{}: ici.variants '{}': lanes '{}' is neither by-source nor random",
                                                bench_file, var.value("name", std::string("?")), own_lanes));
      if (cfg.vcs != TP_ICI_V || cfg.buf_flits != TP_ICI_B || cfg.flit_bits != TP_ICI_F ||
          cfg.replay_flits != TP_ICI_R || cfg.class_choice != (TP_ICI_CLASS_CHOICE != 0) ||
          cfg.sa_iters != unsigned{TP_ICI_SA_ITERS} || cfg.local_ports != unsigned{TP_ICI_LOCALS} ||
          cfg.turn_room != unsigned{TP_ICI_TURN_ROOM})
        continue;  // another binary's router
      ++ran;
      const std::string lanes = lanes_override.empty() ? own_lanes : lanes_override;
      const bool by_source = lanes == "by-source";
      const std::string name = var.at("name").get<std::string>() + (lanes != own_lanes ? "+" + lanes : "");
      const unsigned pf = var.at("packet_flits");
      for (auto* list : {&report["results"], &report["summary"]})
        list->erase(
            std::remove_if(list->begin(), list->end(), [&](const json& e) { return e.value("variant", "") == name; }),
            list->end());
      // Latency of a packet that travels no link (sent to its own node): injection, one router
      // and ejection, the part of zero-load latency that does not grow with the hops.
      double overhead = 0;
      {
        tp::tb::NetOptions o;
        o.torus = {2, 2};
        Net net(cfg, o);
        const auto id = net.send({0, 0}, {0, 0}, 0, pf);
        net.drain();
        overhead = double(net.packets()[id].delivered - net.packets()[id].created);
      }
      for (unsigned k : tori) {
        for (Pattern pat : patterns) {
          double sat = 0, zero = 0, zero_hops = 0;
          std::vector<std::pair<double, double>> curve;  // (offered, accepted)
          const auto t0 = std::chrono::steady_clock::now();
          for (double load : b.at("loads").get<std::vector<double>>()) {
            const Point pt = measure(cfg, k, pat, load, pf, b, by_source);
            if (zero == 0) {
              zero = pt.avg_latency;
              zero_hops = pt.avg_hops;
            }
            sat = std::max(sat, pt.accepted);
            curve.push_back({pt.offered, pt.accepted});
            report["results"].push_back({{"variant", name},
                                         {"k", k},
                                         {"pattern", tp::golden::pattern_name(pat)},
                                         {"vcs", cfg.vcs},
                                         {"buffer_flits", cfg.buf_flits},
                                         {"packet_flits", pf},
                                         {"lanes", lanes},
                                         {"offered", pt.offered},
                                         {"accepted", pt.accepted},
                                         {"avg_latency", pt.avg_latency},
                                         {"p99_latency", pt.p99_latency},
                                         {"measured_packets", pt.packets},
                                         {"all_measured_delivered", pt.drained}});
          }
          const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          // Past saturation: the lowest accepted throughput at offered loads above the one that
          // reached the peak (a router that collapses under overload shows here); the peak itself
          // when the sweep has no point past it.
          double post = sat;
          bool past = false;
          for (const auto& [offered, accepted] : curve) {
            if (!past) {
              past = accepted >= sat;
              continue;
            }
            post = std::min(post, accepted);
          }
          report["summary"].push_back(
              {{"variant", name},
               {"k", k},
               {"pattern", tp::golden::pattern_name(pat)},
               {"vcs", cfg.vcs},
               {"buffer_flits", cfg.buf_flits},
               {"packet_flits", pf},
               {"lanes", lanes},
               {"sa_iters", cfg.sa_iters},
               {"class_choice", cfg.class_choice},
               {"local_ports", cfg.local_ports},
               {"turn_room", cfg.turn_room},
               {"saturation", sat},
               {"post_saturation_min", post},
               {"post_saturation_fraction", sat > 0 ? post / sat : 0.0},
               {"zero_load_latency", zero},
               {"zero_load_avg_hops", zero_hops},
               {"zero_load_cycles_per_hop", zero_hops > 0 ? (zero - overhead) / zero_hops : 0.0},
               {"ideal_uniform", 8.0 / k},
               {"link_latency", cfg.link_latency},
               {"sweep_wall_s", secs}});
          fmt::print(
              "ici bench {} {}x{} {:9}: saturation {:.3f} flits/node/cycle (ideal uniform {:.2f}), past it at least "
              "{:.3f}, zero-load latency {:.1f} cycles = {:.1f} + {:.2f}/hop x {:.2f} hops ({:.0f} s)\n",
              name, k, k, tp::golden::pattern_name(pat), sat, 8.0 / k, post, zero, overhead,
              zero_hops > 0 ? (zero - overhead) / zero_hops : 0.0, zero_hops, secs);
        }
      }
    }
    if (ran == 0) fmt::print("ici bench: no variant in {} uses router {}\n", bench_file, TP_ICI_TAG);
    if (const auto dir = std::filesystem::path(out).parent_path(); !dir.empty())
      std::filesystem::create_directories(dir);
    std::ofstream(out) << report.dump(2) << "\n";
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }
}
