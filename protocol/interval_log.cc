// The bins of HLRC-SMP (interval_log.h).
#include "protocol/interval_log.h"

#include <algorithm>
#include <cassert>
#include <string>
#include <utility>

namespace svm {

IntervalLog::IntervalLog(size_t nodes) : known_(nodes), floor_(nodes), bins_(nodes) {}

Status IntervalLog::Add(WriteNotice notice) {
  const NodeId m = notice.node;
  if (m >= bins_.size())
    return Status::OutOfRange("notice from node " + std::to_string(m) + " but there are " +
                              std::to_string(bins_.size()) + " nodes");
  if (notice.interval == 0)
    return Status::InvalidArgument("notice for interval 0 of node " + std::to_string(m) +
                                   "; intervals start at 1");
  // Notices travel with every grant and release, so repeats are normal.
  if (notice.interval <= known_[m]) return Status::Ok();
  if (notice.interval != known_[m] + 1)
    return Status::OutOfRange("interval " + std::to_string(notice.interval) + " of node " +
                              std::to_string(m) + " leaves a gap after " +
                              std::to_string(known_[m]));
  bins_[m].push_back(std::move(notice.pages));
  known_[m] = notice.interval;
  ++held_;
  assert(bins_[m].size() == known_[m] - floor_[m]);
  return Status::Ok();
}

void IntervalLog::Missing(const VectorTime& have, std::vector<WriteNotice>* out) const {
  assert(have.size() == bins_.size());
  assert(have.Covers(floor_));
  for (NodeId m = 0; m < bins_.size(); ++m) {
    // max() keeps release builds in bounds if the REQUIRES is broken.
    for (IntervalId i = std::max(have[m], floor_[m]) + 1; i <= known_[m]; ++i)
      out->push_back(WriteNotice{m, i, bins_[m][i - floor_[m] - 1]});
  }
}

void IntervalLog::ForEachPage(const VectorTime& from, const VectorTime& to,
                              const std::function<void(NodeId, IntervalId, PageId)>& fn) const {
  assert(from.size() == bins_.size() && to.size() == bins_.size());
  assert(from.Covers(floor_));
  assert(known_.Covers(to));
  for (NodeId m = 0; m < bins_.size(); ++m) {
    const IntervalId last = std::min(to[m], known_[m]);
    for (IntervalId i = std::max(from[m], floor_[m]) + 1; i <= last; ++i)
      for (PageId p : bins_[m][i - floor_[m] - 1]) fn(m, i, p);
  }
}

void IntervalLog::CollectGarbage(const VectorTime& upto) {
  assert(upto.size() == bins_.size());
  for (NodeId m = 0; m < bins_.size(); ++m) {
    const IntervalId target = std::min(upto[m], known_[m]);
    if (target <= floor_[m]) continue;
    const size_t drop = target - floor_[m];
    bins_[m].erase(bins_[m].begin(), bins_[m].begin() + static_cast<ptrdiff_t>(drop));
    held_ -= drop;
    floor_[m] = target;
  }
}

}  // namespace svm
