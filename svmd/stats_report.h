// The job's statistics: svmrun merges the nodes' reports (libsvm/stats.h
// writes one JSON file per node into SVM_STATS_DIR) into one JSON document
// and a summary table. The formats are described in doc/stats.md.
//
// Pure functions over JSON values; no I/O but ReadNodeReports.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"
#include "svmd/options.h"

namespace svm::svmd {

// Reads dir/node-<i>.json for i in [0, nodes). Nodes without a readable
// report are listed in *missing; a report that does not parse is an error.
Status ReadNodeReports(const std::string& dir, uint32_t nodes, std::vector<nlohmann::json>* reports,
                       std::vector<uint32_t>* missing);

// Merges node reports into the job's document: every thread record, counters
// summed over nodes (and kept per node), and a "summary" with min/avg/max
// over the program's threads of each time category, the protocol efficiency
// (compute / elapsed, summed over threads), the handler threads' busy time,
// and the same per phase. elapsed_ns: the job's wall time as svmrun saw it.
// An error names the report that is malformed.
Status MergeStats(const std::vector<nlohmann::json>& reports, uint32_t nodes,
                  const std::vector<uint32_t>& missing, int64_t elapsed_ns, nlohmann::json* out);

// The job's configuration, for the merged document's "job": the program
// (as given, and `path` as resolved; "" for --hosts jobs, which resolve it
// remotely), its arguments, nodes x threads, mode, fault backend,
// transport, placement, hosts ([] = this host only), the injected network
// delay, and svm's version and git commit (fixed when CMake configured).
nlohmann::json JobConfig(const Options& o, const std::string& path);

// One line for titles: "fft -p4 -m16 | 4 nodes x 2 threads | base, uffd, tcp".
// Tolerates a document without "job" (older svmrun): "".
std::string DescribeJob(const nlohmann::json& merged);

// The summary table svmrun prints at the end of the job. REQUIRES: merged
// came from MergeStats.
std::string FormatStatsSummary(const nlohmann::json& merged);

}  // namespace svm::svmd
