// SmallVector: a vector whose first N elements live in the object
// (boost::container::small_vector), for per-page and per-message state that
// the fault path must not allocate. Include this, not the boost header: GCC
// 12 at -O2 sees reads past the inline buffer in small_vector's moves that
// cannot happen (-Wstringop-overread, -Warray-bounds), and the pragmas only
// hold where the header is first included.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
#pragma GCC diagnostic ignored "-Warray-bounds"
#endif
#include <boost/container/small_vector.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <cstddef>

namespace svm {

template <typename T, size_t N>
using SmallVector = boost::container::small_vector<T, N>;

}  // namespace svm
