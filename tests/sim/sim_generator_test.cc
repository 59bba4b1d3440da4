#include "tests/sim/sim_generator.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace svm::sim {
namespace {

GenOptions Options(uint32_t nodes, uint32_t threads, uint64_t pages) {
  GenOptions o;
  o.nodes = nodes;
  o.threads = threads;
  o.pages = pages;
  return o;
}

bool SameOps(const Program& a, const Program& b) {
  if (a.ops.size() != b.ops.size() || a.vars.size() != b.vars.size()) return false;
  for (size_t v = 0; v < a.vars.size(); ++v) {
    if (a.vars[v].addr != b.vars[v].addr || a.vars[v].len != b.vars[v].len) return false;
  }
  for (size_t g = 0; g < a.ops.size(); ++g) {
    if (a.ops[g].size() != b.ops[g].size()) return false;
    for (size_t i = 0; i < a.ops[g].size(); ++i) {
      if (ToString(a.ops[g][i]) != ToString(b.ops[g][i])) return false;
    }
  }
  return true;
}

TEST(Generator, Deterministic) {
  const GenOptions o = Options(4, 2, 6);
  EXPECT_TRUE(SameOps(Generate(o, 123), Generate(o, 123)));
  EXPECT_FALSE(SameOps(Generate(o, 123), Generate(o, 124)));
}

TEST(Generator, ProgramsAreValid) {
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    const GenOptions o = Options(2 + seed % 15, 1 + seed % 4, 4 + seed % 5);
    const Program p = Generate(o, seed);
    const Status s = p.Validate();
    ASSERT_TRUE(s.ok()) << "seed " << seed << ": " << s.ToString();
  }
}

// The layout puts false sharing everywhere: several variables in one 8-byte
// word, variables across 64-byte lines and across pages.
TEST(Generator, LayoutHasTheHardCases) {
  size_t shared_words = 0, line_crossers = 0, page_crossers = 0, one_byte = 0;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    const Program p = Generate(Options(4, 2, 6), seed);
    std::map<uint64_t, int> per_word;
    for (const Var& v : p.vars) {
      const uint64_t last = v.addr + v.len - 1;
      ++per_word[v.addr / 8];
      if (v.addr / 64 != last / 64) ++line_crossers;
      if (v.addr / p.page_size != last / p.page_size) ++page_crossers;
      if (v.len == 1) ++one_byte;
    }
    for (const auto& [word, n] : per_word) shared_words += n > 1;
  }
  EXPECT_GT(shared_words, 100u);
  EXPECT_GT(line_crossers, 50u);
  EXPECT_GT(page_crossers, 10u);
  EXPECT_GT(one_byte, 20u);
}

// Every barrier episode gathers its total; most gather every thread, and now
// and then some threads sit one out (they wait for a flag instead), so a
// node's threads do not always take part together (Node::kGather).
TEST(Generator, BarrierEpisodesFormAndSomeLeaveThreadsOut) {
  size_t partial = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const Program p = Generate(Options(3, 3, 5), seed);
    const std::vector<Program::Episode> episodes = p.BarrierEpisodes();
    ASSERT_GE(episodes.size(), 3u) << "seed " << seed;  // >= 2 phases and the final check
    EXPECT_EQ(episodes.back().threads.size(), p.thread_count()) << "the final check meets everyone";
    for (const auto& e : episodes) partial += e.threads.size() < p.thread_count();
  }
  EXPECT_GT(partial, 0u);
}

TEST(Generator, UsesLocksCountersAndOwnedVariables) {
  std::set<VarClass> classes;
  size_t adds = 0, acquires = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const Program p = Generate(Options(2, 2, 4), seed);
    for (const Var& v : p.vars) classes.insert(v.cls);
    for (const auto& ops : p.ops) {
      for (const Op& op : ops) {
        adds += op.kind == OpKind::kAdd;
        acquires += op.kind == OpKind::kAcquire;
      }
    }
  }
  EXPECT_EQ(classes.size(), 3u);
  EXPECT_GT(adds, 20u);
  EXPECT_GT(acquires, 100u);
}

}  // namespace
}  // namespace svm::sim
