// svmd/stats_report: merging node reports and the summary table.
#include "svmd/stats_report.h"

#include <gtest/gtest.h>

namespace svm::svmd {
namespace {

using json = nlohmann::json;

json Thread(uint32_t node, uint64_t number, uint64_t compute, uint64_t lock_wait, uint64_t barrier_wait) {
  json t;
  t["node"] = node;
  t["thread"] = number;
  t["kind"] = "app";
  t["elapsed_ns"] = compute + lock_wait + barrier_wait;
  t["time_ns"] = {{"compute", compute}, {"lock_wait", lock_wait}, {"barrier_wait", barrier_wait}};
  t["counters"] = {{"barriers", 2}};
  t["phases"] = json::array({{{"name", "solve"}, {"count", 1}, {"time_ns", {{"compute", compute / 2}}}}});
  return t;
}

json Handler(uint32_t node, uint64_t busy, uint64_t idle) {
  return {{"node", node},        {"thread", 0},
          {"kind", "handler"},   {"elapsed_ns", busy + idle},
          {"time_ns", {{"handler", busy}, {"idle", idle}}}};
}

json Report(uint32_t node, std::vector<json> threads, uint64_t barriers, uint64_t lock_requests) {
  json r;
  r["version"] = 1;
  r["node"] = node;
  r["threads"] = std::move(threads);
  r["counters"] = {{"barriers", barriers},
                   {"remote_acquires", node},
                   {"messages", {{"lock-request", {{"count", lock_requests}, {"bytes", 40 * lock_requests}}}}},
                   {"handler", {{"lock", lock_requests}, {"fetch", 0}}}};
  return r;
}

std::vector<json> TwoNodes() {
  return {Report(0, {Thread(0, 0, 1000, 0, 0), Thread(0, 1, 600, 300, 100), Handler(0, 50, 950)}, 3, 2),
          Report(1, {Thread(1, 2, 200, 700, 100), Handler(1, 70, 930)}, 3, 5)};
}

TEST(StatsReport, MergesThreadsAndSumsCounters) {
  json m;
  ASSERT_TRUE(MergeStats(TwoNodes(), 2, {}, 5000, &m).ok());
  EXPECT_EQ(m["threads"].size(), 5u);
  // Program threads first, then handlers.
  EXPECT_EQ(m["threads"][0]["thread"], 0);
  EXPECT_EQ(m["threads"][2]["thread"], 2);
  EXPECT_EQ(m["threads"][3]["kind"], "handler");
  EXPECT_EQ(m["counters"]["barriers"], 6);
  EXPECT_EQ(m["counters"]["remote_acquires"], 1);
  EXPECT_EQ(m["counters"]["messages"]["lock-request"]["count"], 7);
  EXPECT_EQ(m["counters"]["messages"]["lock-request"]["bytes"], 280);
  EXPECT_EQ(m["counters"]["handler"]["lock"], 7);
  EXPECT_EQ(m["per_node"].size(), 2u);
  EXPECT_EQ(m["elapsed_ns"], 5000);
}

// How each node waited and found writes stays per node: a setting, not a
// count to add up.
TEST(StatsReport, PerNodeKeepsHowTheNodeWaited) {
  std::vector<json> reports = TwoNodes();
  reports[0]["write_detection"] = "scan";
  reports[0]["waiting_threads_spin"] = true;
  reports[0]["host_wake_ns"] = 24000;
  json m;
  ASSERT_TRUE(MergeStats(reports, 2, {}, 5000, &m).ok());
  EXPECT_EQ(m["per_node"][0]["write_detection"], "scan");
  EXPECT_EQ(m["per_node"][0]["waiting_threads_spin"], true);
  EXPECT_EQ(m["per_node"][0]["host_wake_ns"], 24000);
  EXPECT_FALSE(m["per_node"][1].contains("waiting_threads_spin"));  // an older report
  EXPECT_FALSE(m["counters"].contains("host_wake_ns"));
}

TEST(StatsReport, SummaryIsMinAvgMaxOverProgramThreads) {
  json m;
  ASSERT_TRUE(MergeStats(TwoNodes(), 2, {}, 5000, &m).ok());
  const json& s = m["summary"];
  EXPECT_EQ(s["threads"], 3);
  EXPECT_DOUBLE_EQ(s["time_ns"]["compute"]["min"].get<double>(), 200);
  EXPECT_DOUBLE_EQ(s["time_ns"]["compute"]["avg"].get<double>(), 600);
  EXPECT_DOUBLE_EQ(s["time_ns"]["compute"]["max"].get<double>(), 1000);
  EXPECT_DOUBLE_EQ(s["time_ns"]["lock_wait"]["max"].get<double>(), 700);
  EXPECT_DOUBLE_EQ(s["elapsed_ns"]["avg"].get<double>(), 1000);
  // 1800 ns of compute out of 3000 ns of thread time.
  EXPECT_DOUBLE_EQ(s["efficiency"].get<double>(), 0.6);
  EXPECT_EQ(s["handlers"], 2);
  EXPECT_DOUBLE_EQ(s["handler_busy_ns"]["max"].get<double>(), 70);
  // Categories keep the runtime's order, whatever order the JSON keys had.
  EXPECT_EQ(s["categories"], json::array({"compute", "lock_wait", "barrier_wait"}));
}

TEST(StatsReport, PhasesAreSummarisedByName) {
  json m;
  ASSERT_TRUE(MergeStats(TwoNodes(), 2, {}, 5000, &m).ok());
  ASSERT_TRUE(m["phases"].contains("solve"));
  const json& p = m["phases"]["solve"];
  EXPECT_EQ(p["threads"], 3);
  EXPECT_DOUBLE_EQ(p["time_ns"]["compute"]["total"].get<double>(), 900);
  EXPECT_DOUBLE_EQ(p["efficiency"].get<double>(), 1.0);
}

TEST(StatsReport, MissingNodesAreReported) {
  std::vector<json> one = {TwoNodes()[0]};
  json m;
  ASSERT_TRUE(MergeStats(one, 2, {1}, 5000, &m).ok());
  EXPECT_EQ(m["missing_nodes"], json::array({1}));
  EXPECT_NE(FormatStatsSummary(m).find("no report from nodes [1]"), std::string::npos);
}

TEST(StatsReport, MalformedReportIsAnError) {
  json m;
  EXPECT_FALSE(MergeStats({json{{"node", 0}}}, 1, {}, 1, &m).ok());
  json bad = Report(0, {json{{"kind", "app"}}}, 0, 0);
  EXPECT_FALSE(MergeStats({bad}, 1, {}, 1, &m).ok());
  json bad_time = Report(0, {Thread(0, 0, 1, 1, 1)}, 0, 0);
  bad_time["threads"][0]["time_ns"]["compute"] = "fast";
  EXPECT_FALSE(MergeStats({bad_time}, 1, {}, 1, &m).ok());
}

TEST(StatsReport, SummaryTableNamesEveryPart) {
  json m;
  ASSERT_TRUE(MergeStats(TwoNodes(), 2, {}, 5000, &m).ok());
  const std::string text = FormatStatsSummary(m);
  for (const char* want : {"svm statistics: 2 nodes, 3 threads", "compute", "lock: wait", "barrier: wait",
                           "elapsed", "handler busy", "protocol efficiency (compute / elapsed): 60.0 %",
                           "acquires 0 local / 1 remote; barriers 6", "lock-request 7 (280 B)",
                           "handler invocations: lock 7", "phase \"solve\""})
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  // Categories no thread spent time in are left out of the table.
  EXPECT_EQ(text.find("overhead: twin"), std::string::npos) << text;
}

// Diffs sent as masked blocks (diff.h) are summed over the nodes and said
// beside the runs.
TEST(StatsReport, MaskedDiffsAreSummedAndSaid) {
  std::vector<json> reports = TwoNodes();
  reports[0]["counters"]["masked_diffs"] = 7;
  reports[1]["counters"]["masked_diffs"] = 5;
  json m;
  ASSERT_TRUE(MergeStats(reports, 2, {}, 5000, &m).ok());
  EXPECT_EQ(m["counters"]["masked_diffs"], 12u);
  const std::string text = FormatStatsSummary(m);
  EXPECT_NE(text.find(" runs, 12 masked); invalidations"), std::string::npos) << text;
}

// Counters of a long run (billions of faults, bytes in GiB) print whole:
// the counter lines were formatted into a 256-byte buffer, which cut them
// off, newline included, once the numbers grew.
TEST(StatsReport, LargeCountersArePrintedWhole) {
  std::vector<json> reports = TwoNodes();
  const uint64_t big = 12'345'678'901ull;
  for (const char* c : {"read_faults", "write_faults", "fetches", "fetch_retries", "pages_fetched", "pages_ahead",
                        "pages_strided", "ahead_used", "ahead_unused", "twins", "pages_found_written", "write_scans",
                        "diffs", "diff_bytes", "diff_runs", "invalidations", "local_acquires", "protections",
                        "untracked_pages", "tracked_pages", "untracked_again", "pages_written_ahead",
                        "marks_dropped", "messages_sent", "bytes_sent", "notices_collected"})
    reports[0]["counters"][c] = big;
  json m;
  ASSERT_TRUE(MergeStats(reports, 2, {}, 5000, &m).ok());
  const std::string text = FormatStatsSummary(m);
  for (const char* want : {"invalidations 12345678901\n", "written ahead 12345678901", "marks given back 12345678901",
                           "messages 12345678901 (11.5 GiB)\n"})
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
}

TEST(StatsReport, JobConfigCarriesTheConfiguration) {
  Options o;
  o.nodes = 4;
  o.threads_per_node = 2;
  o.mode = "dd";
  o.fault = "mprotect";
  o.hosts = {"a:7117", "b"};
  o.transport = "tcp";  // as svmrun resolves auto for --hosts
  o.net_latency_ns = 2000;
  o.program = {"splash2/fft", "-p8", "-m16"};
  const json j = JobConfig(o, "/src/build/splash2/fft");
  EXPECT_EQ(j["program"], "splash2/fft");
  EXPECT_EQ(j["path"], "/src/build/splash2/fft");
  EXPECT_EQ(j["args"], json({"-p8", "-m16"}));
  EXPECT_EQ(j["nodes"], 4);
  EXPECT_EQ(j["threads_per_node"], 2);
  EXPECT_EQ(j["mode"], "dd");
  EXPECT_EQ(j["fault"], "mprotect");
  EXPECT_EQ(j["transport"], "tcp");
  EXPECT_EQ(j["home"], "first-touch");
  EXPECT_EQ(j["spin"], "auto");
  EXPECT_EQ(j["hosts"], json({"a:7117", "b"}));
  EXPECT_EQ(j["net_latency_ns"], 2000);
  EXPECT_FALSE(j["svm_version"].get<std::string>().empty());
  EXPECT_FALSE(j["git_commit"].get<std::string>().empty());

  json m;
  ASSERT_TRUE(MergeStats(TwoNodes(), 2, {}, 5000, &m).ok());
  EXPECT_EQ(DescribeJob(m), "");  // a document from an older svmrun
  m["job"] = j;
  EXPECT_EQ(DescribeJob(m), "fft -p8 -m16 | 4 nodes x 2 threads | dd, mprotect, tcp, +2000 ns/msg | 2 hosts");
  const std::string text = FormatStatsSummary(m);
  EXPECT_NE(text.find("  job: fft -p8 -m16 | 4 nodes x 2 threads"), std::string::npos) << text;
  EXPECT_NE(text.find(" | svm " + j["svm_version"].get<std::string>()), std::string::npos) << text;
}

TEST(StatsReport, ReadNodeReportsListsMissingFiles) {
  std::vector<json> reports;
  std::vector<uint32_t> missing;
  ASSERT_TRUE(ReadNodeReports("/nonexistent-svm-stats-dir", 2, &reports, &missing).ok());
  EXPECT_TRUE(reports.empty());
  EXPECT_EQ(missing, (std::vector<uint32_t>{0, 1}));
}

}  // namespace
}  // namespace svm::svmd
