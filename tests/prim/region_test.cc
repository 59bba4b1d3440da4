// Region (memfd + two views) and the /proc helpers in maps.h.
#include "libsvm/prim/region.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "libsvm/prim/fault.h"
#include "libsvm/prim/maps.h"

namespace svm::prim {
namespace {

constexpr uintptr_t kBase = 0x310000000000;  // inside ASan's high memory too

TEST(RegionTest, TwoViewsShowTheSameFrames) {
  std::unique_ptr<Region> r;
  ASSERT_TRUE(Region::Create({kBase, 16 * 4096, "svm-region-test"}, &r).ok());
  EXPECT_EQ(uintptr_t(r->app()), kBase);
  EXPECT_NE(r->proto(), nullptr);
  EXPECT_EQ(r->page_count(), 16 * 4096 / r->page_size());
  EXPECT_TRUE(r->Contains(r->app() + r->size() - 1));
  EXPECT_FALSE(r->Contains(r->app() + r->size()));
  EXPECT_FALSE(r->Contains(r->app() - 1));
  EXPECT_EQ(r->PageOf(r->AppPage(3) + 17), 3u);

  // Until a trap opens it, the application view is inaccessible.
  std::string maps = DescribeMappings(kBase, kBase + r->size());
  EXPECT_NE(maps.find("---s"), std::string::npos) << maps;
  EXPECT_NE(maps.find("memfd:svm-region-test"), std::string::npos) << maps;

  std::memcpy(r->ProtoPage(2), "hello", 6);
  ASSERT_EQ(mprotect(r->app(), r->size(), PROT_READ | PROT_WRITE), 0);
  EXPECT_STREQ(r->AppPage(2), "hello");
  std::memcpy(r->AppPage(5) + 100, "world", 6);
  EXPECT_STREQ(r->ProtoPage(5) + 100, "world");
}

// The VmFlags of the mapping that starts at addr (/proc/self/smaps).
std::string VmFlagsAt(const void* addr) {
  FILE* f = fopen("/proc/self/smaps", "r");
  if (f == nullptr) return "";
  char line[512];
  bool in = false;
  std::string flags;
  while (fgets(line, sizeof(line), f) != nullptr) {
    unsigned long lo = 0, hi = 0;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      in = lo == reinterpret_cast<uintptr_t>(addr);
    } else if (in && strncmp(line, "VmFlags:", 8) == 0) {
      flags = line + 8;
      break;
    }
  }
  fclose(f);
  return flags;
}

// A core dump holds neither view unless asked (a sparse memfd is written
// page by page: a node's heap made cores of tens of GiB); the globals' app
// view is asked for.
TEST(RegionTest, ViewsAreLeftOutOfCoreDumps) {
  for (bool dump_app : {false, true}) {
    RegionOptions o;
    o.size = 64 * 4096;
    o.dump_app = dump_app;
    std::unique_ptr<Region> r;
    ASSERT_TRUE(Region::Create(o, &r).ok());
    EXPECT_NE(VmFlagsAt(r->proto()).find(" dd"), std::string::npos) << VmFlagsAt(r->proto());
    EXPECT_EQ(VmFlagsAt(r->app()).find(" dd") != std::string::npos, !dump_app) << VmFlagsAt(r->app());
  }
}

TEST(RegionTest, CollisionNamesTheRange) {
  std::unique_ptr<Region> first, second;
  ASSERT_TRUE(Region::Create({kBase, 8 * 4096, "svm-first"}, &first).ok());
  Status s = Region::Create({kBase + 4 * 4096, 8 * 4096, "svm-second"}, &second);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(second, nullptr);
  // The requested range, and what is in the way.
  EXPECT_NE(s.message().find("[0x310000004000, 0x31000000c000)"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("collides"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("memfd:svm-first"), std::string::npos) << s.message();
}

TEST(RegionTest, RejectsBadGeometry) {
  std::unique_ptr<Region> r;
  EXPECT_EQ(Region::Create({kBase, 0}, &r).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(Region::Create({kBase, 4096 + 1}, &r).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(Region::Create({kBase + 1, 4096}, &r).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(r, nullptr);
  // base 0: the kernel chooses.
  ASSERT_TRUE(Region::Create({0, 4096}, &r).ok());
  EXPECT_NE(r->app(), nullptr);
}

TEST(MapsTest, CountsVmasOfARange) {
  const size_t page = size_t(getpagesize());
  char* p = static_cast<char*>(
      mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  const uintptr_t lo = uintptr_t(p), hi = lo + 3 * page;
  EXPECT_EQ(CountMappings(lo, hi), 1);
  ASSERT_EQ(mprotect(p + page, page, PROT_READ), 0);
  EXPECT_EQ(CountMappings(lo, hi), 3);
  EXPECT_EQ(CountMappings(lo + page, lo + page + 1), 1);
  ASSERT_EQ(mprotect(p + page, page, PROT_READ | PROT_WRITE), 0);
  EXPECT_EQ(CountMappings(lo, hi), 1);
  EXPECT_GT(CountMappings(0, UINTPTR_MAX), 3);
  munmap(p, 3 * page);
  EXPECT_GT(ReadMaxMapCount(), 0);
}

TEST(BackendTest, NamesRoundTrip) {
  for (Backend b : kAllBackends) {
    Backend parsed = Backend::kMprotect == b ? Backend::kUffd : Backend::kMprotect;
    ASSERT_TRUE(ParseBackend(ToString(b), &parsed));
    EXPECT_EQ(parsed, b);
  }
  Backend b = Backend::kUffd;
  EXPECT_FALSE(ParseBackend("uffd_thread", &b));
  EXPECT_TRUE(NeedsPrefault(Backend::kUffd));
  EXPECT_FALSE(NeedsPrefault(Backend::kUffdThread));
  EXPECT_TRUE(NeedsPrefault(Backend::kMprotect));
}

}  // namespace
}  // namespace svm::prim
