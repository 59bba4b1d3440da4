#include "protocol/vector_time.h"

#include <algorithm>
#include <cassert>

namespace svm {

bool VectorTime::Covers(const VectorTime& o) const {
  assert(size() == o.size());
  for (size_t i = 0; i < t_.size(); ++i)
    if (o.t_[i] > t_[i]) return false;
  return true;
}

bool VectorTime::HappenedBefore(const VectorTime& o) const {
  return o.Covers(*this) && !(*this == o);
}

bool VectorTime::ConcurrentWith(const VectorTime& o) const {
  return !Covers(o) && !o.Covers(*this);
}

void VectorTime::Merge(const VectorTime& o) {
  assert(size() == o.size());
  for (size_t i = 0; i < t_.size(); ++i) t_[i] = std::max(t_[i], o.t_[i]);
}

void VectorTime::Meet(const VectorTime& o) {
  assert(size() == o.size());
  for (size_t i = 0; i < t_.size(); ++i) t_[i] = std::min(t_[i], o.t_[i]);
}

std::string VectorTime::ToString() const {
  std::string s = "<";
  for (size_t i = 0; i < t_.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(t_[i]);
  }
  return s + ">";
}

}  // namespace svm
