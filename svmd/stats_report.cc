#include "svmd/stats_report.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

namespace svm::svmd {
namespace {

using json = nlohmann::json;

// The order categories appear in (libsvm/stats.h's Category); unknown ones
// from a newer runtime follow in their own order.
constexpr const char* kOrder[] = {"compute",       "data_protocol", "data_wait",        "lock_protocol",
                                  "lock_wait",     "barrier_protocol", "barrier_wait", "threads",
                                  "twin",          "diff",          "protect",          "handler",
                                  "idle"};

const char* Label(const std::string& c) {
  static const std::map<std::string, const char*> labels = {
      {"compute", "compute"},
      {"data_protocol", "data wait: protocol"},
      {"data_wait", "data wait: blocked"},
      {"lock_protocol", "lock: protocol"},
      {"lock_wait", "lock: wait"},
      {"barrier_protocol", "barrier: protocol"},
      {"barrier_wait", "barrier: wait"},
      {"threads", "thread create/join"},
      {"twin", "overhead: twin"},
      {"diff", "overhead: diff"},
      {"protect", "overhead: protection"},
      {"handler", "handler"},
      {"idle", "idle"},
  };
  auto it = labels.find(c);
  return it == labels.end() ? c.c_str() : it->second;
}

// min / avg / max / total of a list of values.
json Spread(const std::vector<double>& v) {
  if (v.empty()) return {{"min", 0}, {"avg", 0}, {"max", 0}, {"total", 0}};
  double lo = std::numeric_limits<double>::max(), hi = 0, sum = 0;
  for (double x : v) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
  }
  return {{"min", lo}, {"avg", sum / double(v.size())}, {"max", hi}, {"total", sum}};
}

// Adds the numbers of v into acc, recursing through objects.
void AddInto(json& acc, const json& v) {
  if (v.is_number()) {
    acc = (acc.is_number() ? acc.get<uint64_t>() : 0) + v.get<uint64_t>();
    return;
  }
  if (!v.is_object()) return;
  if (!acc.is_object()) acc = json::object();
  for (auto it = v.begin(); it != v.end(); ++it) AddInto(acc[it.key()], it.value());
}

Status CheckThread(const json& t, uint32_t node) {
  const std::string where = "node " + std::to_string(node) + "'s report: ";
  if (!t.is_object() || !t.contains("kind") || !t["kind"].is_string() || !t.contains("elapsed_ns") ||
      !t["elapsed_ns"].is_number() || !t.contains("time_ns") || !t["time_ns"].is_object())
    return Status::InvalidArgument(where + "a thread record lacks kind, elapsed_ns or time_ns");
  for (auto& v : t["time_ns"])
    if (!v.is_number()) return Status::InvalidArgument(where + "a time is not a number");
  return Status::Ok();
}

// The categories of these threads' times, in kOrder first.
std::vector<std::string> CategoriesOf(const std::vector<const json*>& times) {
  std::vector<std::string> out;
  for (const char* c : kOrder)
    for (const json* t : times)
      if (t->contains(c)) {
        out.push_back(c);
        break;
      }
  for (const json* t : times)
    for (auto it = t->begin(); it != t->end(); ++it)
      if (std::find(out.begin(), out.end(), it.key()) == out.end()) out.push_back(it.key());
  return out;
}

// Spreads of each category over a set of time objects (one per thread),
// their sums ("elapsed") and compute / elapsed.
json Breakdown(const std::vector<const json*>& times) {
  json out;
  json per = json::object();
  std::vector<double> totals(times.size(), 0);
  const std::vector<std::string> categories = CategoriesOf(times);
  out["categories"] = categories;  // JSON objects do not keep an order
  for (const std::string& c : categories) {
    std::vector<double> v;
    for (size_t i = 0; i < times.size(); ++i) {
      const double x = times[i]->value(c, 0.0);
      v.push_back(x);
      totals[i] += x;
    }
    per[c] = Spread(v);
  }
  out["time_ns"] = std::move(per);
  out["elapsed_ns"] = Spread(totals);
  double compute = 0, all = 0;
  for (size_t i = 0; i < times.size(); ++i) {
    compute += times[i]->value("compute", 0.0);
    all += totals[i];
  }
  out["efficiency"] = all > 0 ? compute / all : 0.0;
  out["threads"] = times.size();
  return out;
}

std::string Ms(double ns) { return fmt::format("{:.3f}", ns / 1e6); }

std::string Bytes(uint64_t n) {
  if (n < 10 * 1024) return fmt::format("{} B", n);
  if (n < 10 * 1024 * 1024) return fmt::format("{:.1f} KiB", double(n) / 1024);
  if (n < 10ull * 1024 * 1024 * 1024) return fmt::format("{:.1f} MiB", double(n) / (1024 * 1024));
  return fmt::format("{:.1f} GiB", double(n) / (1024 * 1024 * 1024));
}

// A row of the time table: a label and three columns, then `note`.
void Row(std::string& out, std::string_view label, std::string_view min, std::string_view avg, std::string_view max,
         std::string_view note = "") {
  out += fmt::format("  {:<24} {:>12} {:>12} {:>12}{}\n", label, min, avg, max, note);
}

// A min / avg / max spread of nanoseconds, in ms.
void SpreadRow(std::string& out, std::string_view label, const json& s, std::string_view note = "") {
  Row(out, label, Ms(s["min"]), Ms(s["avg"]), Ms(s["max"]), note);
}

void Table(std::string& out, const json& breakdown, bool skip_zero) {
  Row(out, "time per thread (ms)", "min", "avg", "max");
  for (const json& c : breakdown["categories"]) {
    const std::string name = c.get<std::string>();
    const json& times = breakdown["time_ns"][name];
    if (skip_zero && name != "compute" && times["max"].get<double>() == 0) continue;
    SpreadRow(out, Label(name), times);
  }
  SpreadRow(out, "elapsed", breakdown["elapsed_ns"]);
}

uint64_t U(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<uint64_t>() : 0;
}

}  // namespace

Status ReadNodeReports(const std::string& dir, uint32_t nodes, std::vector<json>* reports,
                       std::vector<uint32_t>* missing) {
  for (uint32_t i = 0; i < nodes; ++i) {
    const std::string path = dir + "/node-" + std::to_string(i) + ".json";
    std::ifstream in(path);
    if (!in) {
      missing->push_back(i);
      continue;
    }
    json j = json::parse(in, nullptr, false);
    if (j.is_discarded()) return Status::InvalidArgument(path + ": not valid JSON");
    reports->push_back(std::move(j));
  }
  return Status::Ok();
}

Status MergeStats(const std::vector<json>& reports, uint32_t nodes, const std::vector<uint32_t>& missing,
                  int64_t elapsed_ns, json* out) {
  json m;
  m["version"] = 1;
  m["nodes"] = nodes;
  m["elapsed_ns"] = elapsed_ns;
  m["missing_nodes"] = missing;
  json threads = json::array();
  json counters = json::object();
  json per_node = json::array();
  for (const json& r : reports) {
    if (!r.is_object() || !r.contains("node") || !r["node"].is_number_unsigned() ||
        !r.contains("threads") || !r["threads"].is_array() || !r.contains("counters") ||
        !r["counters"].is_object())
      return Status::InvalidArgument("a node report lacks node, threads or counters");
    const auto node = r["node"].get<uint32_t>();
    for (const json& t : r["threads"]) {
      if (Status s = CheckThread(t, node); !s.ok()) return s;
      threads.push_back(t);
    }
    AddInto(counters, r["counters"]);
    json one = {{"node", node}, {"pid", r.value("pid", 0)}, {"counters", r["counters"]}};
    // How the node waited and found writes (not counts: not added up).
    for (const char* k : {"write_detection", "waiting_threads_spin", "host_wake_ns"})
      if (r.contains(k)) one[k] = r[k];
    per_node.push_back(std::move(one));
  }
  // Program threads first, by node and number; then the handlers.
  std::stable_sort(threads.begin(), threads.end(), [](const json& a, const json& b) {
    auto key = [](const json& t) {
      return std::tuple(t["kind"].get<std::string>() != "app", t.value("node", 0u), t.value("thread", uint64_t(0)));
    };
    return key(a) < key(b);
  });

  std::vector<const json*> app, handler;
  std::map<std::string, std::vector<const json*>> phases;
  for (const json& t : threads) {
    const bool is_app = t["kind"] == "app";
    (is_app ? app : handler).push_back(&t["time_ns"]);
    if (!t.contains("phases") || !t["phases"].is_array()) continue;
    for (const json& p : t["phases"])
      if (p.is_object() && p.contains("name") && p["name"].is_string() && p.contains("time_ns") &&
          p["time_ns"].is_object())
        phases[p["name"].get<std::string>()].push_back(&p["time_ns"]);
  }
  json summary = Breakdown(app);
  std::vector<double> busy;
  for (const json* h : handler) {
    double b = 0;
    for (auto it = h->begin(); it != h->end(); ++it)
      if (it.key() != "idle") b += it.value().get<double>();
    busy.push_back(b);
  }
  summary["handler_busy_ns"] = Spread(busy);
  summary["handlers"] = handler.size();
  json phase_summary = json::object();
  for (auto& [name, times] : phases) phase_summary[name] = Breakdown(times);

  m["threads"] = std::move(threads);
  m["counters"] = std::move(counters);
  m["per_node"] = std::move(per_node);
  m["summary"] = std::move(summary);
  m["phases"] = std::move(phase_summary);
  *out = std::move(m);
  return Status::Ok();
}

json JobConfig(const Options& o, const std::string& path) {
  json j;
  j["program"] = o.program.empty() ? "" : o.program[0];
  j["path"] = path;
  j["args"] = o.program.size() > 1 ? json(std::vector<std::string>(o.program.begin() + 1, o.program.end()))
                                   : json::array();
  j["nodes"] = o.nodes;
  j["threads_per_node"] = o.threads_per_node;
  j["mode"] = o.mode;
  j["fault"] = o.fault;
  j["transport"] = o.transport;
  j["home"] = o.home;
  j["place"] = o.place;
  j["pin"] = o.pin;
  j["spin"] = o.spin;
  j["hosts"] = o.hosts;
  j["net_latency_ns"] = o.net_latency_ns;
  j["net_bandwidth"] = o.net_bandwidth;
  j["svm_version"] = SVM_VERSION;
  j["git_commit"] = SVM_GIT_COMMIT;
  return j;
}

std::string DescribeJob(const json& m) {
  if (!m.contains("job") || !m["job"].is_object()) return "";
  const json& j = m["job"];
  auto str = [&](const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : "?"; };
  auto num = [&](const char* k) { return j.contains(k) && j[k].is_number() ? j[k].get<uint64_t>() : 0; };
  std::string prog = str("program");
  prog = prog.substr(prog.rfind('/') + 1);
  if (j.contains("args") && j["args"].is_array())
    for (const json& a : j["args"]) prog += " " + (a.is_string() ? a.get<std::string>() : a.dump());
  const uint64_t n = num("nodes"), t = num("threads_per_node");
  std::string out = prog + " | " + std::to_string(n) + (n == 1 ? " node" : " nodes") + " x " +
                    std::to_string(t) + (t == 1 ? " thread" : " threads") + " | " + str("mode") + ", " +
                    str("fault") + ", " + str("transport");
  if (num("net_latency_ns")) out += ", +" + std::to_string(num("net_latency_ns")) + " ns/msg";
  const size_t hosts = j.contains("hosts") && j["hosts"].is_array() ? j["hosts"].size() : 0;
  if (hosts) out += " | " + std::to_string(hosts) + (hosts == 1 ? " host" : " hosts");
  return out;
}

std::string FormatStatsSummary(const json& m) {
  const json& s = m["summary"];
  std::string out = fmt::format("svm statistics: {} nodes, {} threads, elapsed {} ms", m["nodes"].get<uint32_t>(),
                                s["threads"].get<size_t>(), Ms(m["elapsed_ns"]));
  if (!m["missing_nodes"].empty()) out += " (no report from nodes " + m["missing_nodes"].dump() + ")";
  out += "\n";
  if (const std::string job = DescribeJob(m); !job.empty()) {
    const json& j = m["job"];
    out += fmt::format("  job: {} | svm {} ({})\n", job, j.value("svm_version", "?"), j.value("git_commit", "?"));
  }
  Table(out, s, true);
  if (s["handlers"].get<size_t>() > 0) {
    SpreadRow(out, "handler busy", s["handler_busy_ns"],
              fmt::format("  ({} handler threads)", s["handlers"].get<size_t>()));
  }
  out += fmt::format("  protocol efficiency (compute / elapsed): {:.1f} %\n", 100.0 * s["efficiency"].get<double>());

  const json& c = m["counters"];
  auto n = [&](const char* key) { return U(c, key); };
  out += fmt::format(
      "  faults {} read / {} write; fetches {} (retries {}; pages {}, {} ahead ({} strided): {} used, {} unused); "
      "twins {}; writes found by scans {} ({} scans); diffs {} ({}, {} runs, {} masked); invalidations {}\n",
      n("read_faults"), n("write_faults"), n("fetches"), n("fetch_retries"), n("pages_fetched"), n("pages_ahead"),
      n("pages_strided"), n("ahead_used"), n("ahead_unused"), n("twins"), n("pages_found_written"),
      n("write_scans"), n("diffs"), Bytes(n("diff_bytes")), n("diff_runs"), n("masked_diffs"), n("invalidations"));
  out += fmt::format(
      "  acquires {} local / {} remote; barriers {} ({} notices collected, {} gathers given up); protections {}; "
      "home pages untracked {} (tracked later {}, untracked again {}, written ahead {}); marks given back {}; "
      "messages {} ({})\n",
      n("local_acquires"), n("remote_acquires"), n("barriers"), n("notices_collected"), n("gathers_given_up"),
      n("protections"),
      n("untracked_pages"), n("tracked_pages"), n("untracked_again"), n("pages_written_ahead"), n("marks_dropped"),
      n("messages_sent"), Bytes(n("bytes_sent")));
  if (c.contains("messages") && !c["messages"].empty()) {
    out += "  messages by type:";
    for (auto it = c["messages"].begin(); it != c["messages"].end(); ++it)
      out += " " + it.key() + " " + std::to_string(U(it.value(), "count")) + " (" +
             Bytes(U(it.value(), "bytes")) + ")";
    out += "\n";
  }
  if (c.contains("handler")) {
    out += "  handler invocations:";
    for (auto it = c["handler"].begin(); it != c["handler"].end(); ++it)
      if (it.value().is_number() && it.value().get<uint64_t>() > 0)
        out += " " + it.key() + " " + std::to_string(it.value().get<uint64_t>());
    out += "\n";
  }
  for (auto it = m["phases"].begin(); it != m["phases"].end(); ++it) {
    out += fmt::format("phase \"{}\": {} threads, efficiency {:.1f} %\n", it.key(), it.value()["threads"].get<size_t>(),
                       100.0 * it.value()["efficiency"].get<double>());
    Table(out, it.value(), true);
  }
  return out;
}

}  // namespace svm::svmd
