// The spin policy (SVM_SPIN, libsvm/options.h): when waiting threads spin.
#include <gtest/gtest.h>

#include "libsvm/options.h"

namespace svm::rt {
namespace {

Options Job(uint32_t nodes, uint32_t threads, uint32_t host_cpus) {
  Options o;
  o.nodes = nodes;
  o.threads_per_node = threads;
  o.transport = "shm";
  o.host_nodes = nodes;
  o.host_cpus = host_cpus;
  return o;
}

// Unpinned, a node may run on every CPU of the host.
Cpus Unpinned(uint32_t online) { return {online, online}; }

TEST(SpinPolicy, NodesThatFitTheHostSpin) {
  EXPECT_TRUE(ShouldSpin(Job(2, 1, 16), Unpinned(16)));
  EXPECT_TRUE(ShouldSpinLong(Job(2, 1, 16), Unpinned(16)));
  EXPECT_TRUE(ShouldSpin(Job(8, 1, 16), Unpinned(16)));
}

TEST(SpinPolicy, MoreSingleThreadNodesThanCpusSleepAtOnce) {
  EXPECT_FALSE(ShouldSpin(Job(4, 1, 2), Unpinned(2)));
  EXPECT_FALSE(ShouldSpinLong(Job(4, 1, 2), Unpinned(2)));
}

// A one-node job waits only for its own threads: with more of them than
// CPUs nobody spins; with as many, or in a job of several nodes, they do;
// SVM_SPIN=on and off are obeyed as they are.
TEST(SpinPolicy, AOneNodeJobWithMoreThreadsThanCpusDoesNotSpin) {
  const Options one = Job(1, 8, 2);
  EXPECT_TRUE(ShouldSpin(one, Unpinned(2)));
  EXPECT_TRUE(Crowded(one, 8, NodeCpus(one, Unpinned(2))));
  EXPECT_TRUE(Crowded(one, 3, 2));
  EXPECT_FALSE(Crowded(one, 2, 2));
  EXPECT_FALSE(Crowded(one, 1, 1));
  EXPECT_FALSE(Crowded(Job(4, 2, 2), 2, 1));
  EXPECT_FALSE(Crowded(Job(2, 8, 2), 8, 1));
  Options on = one;
  on.spin = SpinPolicy::kOn;
  EXPECT_FALSE(Crowded(on, 8, 2));
}

TEST(SpinPolicy, NodesOfSeveralThreadsSpinButNotLong) {
  EXPECT_TRUE(ShouldSpin(Job(4, 2, 2), Unpinned(2)));
  EXPECT_FALSE(ShouldSpinLong(Job(4, 2, 2), Unpinned(2)));
}

// svmrun --pin node: 8 nodes of one thread on 16 CPUs get 2 each, fewer
// than the program thread, the handler and the NIC thread that would spin.
TEST(SpinPolicy, SingleThreadNodePinnedToFewerCpusThanItsSpinnersSleeps) {
  EXPECT_FALSE(ShouldSpin(Job(8, 1, 16), {16, 2}));
  EXPECT_FALSE(ShouldSpinLong(Job(8, 1, 16), {16, 2}));
  EXPECT_FALSE(ShouldSpin(Job(2, 1, 2), {2, 1}));
}

// Where a wake-up from another CPU is dear (a virtual machine: 25-50 us),
// a cramped node spins all the same: each message that finds its receiver
// asleep would pay one. Cheap or unknown, it sleeps at once as above.
TEST(SpinPolicy, CrampedNodeSpinsWhereWakeUpsAreDear) {
  Options dear = Job(2, 1, 2), cheap = Job(2, 1, 2);
  dear.host_wake_ns = 25'000;
  cheap.host_wake_ns = 5'000;
  EXPECT_TRUE(ShouldSpin(dear, {2, 1}));
  EXPECT_TRUE(ShouldSpinLong(dear, {2, 1}));
  EXPECT_FALSE(ShouldSpin(cheap, {2, 1}));
  EXPECT_FALSE(ShouldSpinLong(cheap, {2, 1}));
  Options eight = Job(8, 1, 16);
  eight.host_wake_ns = 25'000;
  EXPECT_TRUE(ShouldSpin(eight, {16, 2}));
}

// Dear wake-ups do not make nodes that share CPUs spin: there a spinner
// holds the CPU of the node it waits for (10^5 lock pairs 4 x 1 on 2 CPUs,
// base: 0.28 s asleep, 8.6 s spinning).
TEST(SpinPolicy, DearWakeUpsDoNotMakeCpuSharingNodesSpin) {
  Options o = Job(4, 1, 2);
  o.host_wake_ns = 25'000;
  EXPECT_FALSE(ShouldSpin(o, Unpinned(2)));
  EXPECT_FALSE(ShouldSpin(o, {2, 1}));
  EXPECT_FALSE(ShouldSpinLong(o, {2, 1}));
}

TEST(SpinPolicy, PinnedNodeWithRoomForItsSpinnersSpins) {
  EXPECT_TRUE(ShouldSpin(Job(4, 1, 16), {16, 4}));
  EXPECT_TRUE(ShouldSpinLong(Job(4, 1, 16), {16, 4}));
  EXPECT_TRUE(ShouldSpin(Job(2, 1, 16), {16, 8}));
  EXPECT_TRUE(ShouldSpin(Job(5, 1, 16), {16, 3}));
}

// Nodes of several threads keep spinning when pinned: their threads hand
// locks to each other (lock pairs 4 x 2 measured faster spinning).
TEST(SpinPolicy, PinnedNodeOfSeveralThreadsStillSpins) {
  EXPECT_TRUE(ShouldSpin(Job(8, 2, 16), {16, 2}));
}

// A container limited to 2 CPUs of 16 (svmrun's mask, SVM_HOST_CPUS=2):
// its nodes share those 2, as on a 2-CPU host; only a smaller mask pins.
TEST(SpinPolicy, ContainerCpusetIsNotPinning) {
  EXPECT_TRUE(ShouldSpin(Job(2, 1, 2), {16, 2}));
  EXPECT_TRUE(ShouldSpinLong(Job(2, 1, 2), {16, 2}));
  EXPECT_FALSE(ShouldSpin(Job(2, 1, 2), {16, 1}));
}

// A one-CPU machine is not pinning: every thread shares the one CPU anyway.
TEST(SpinPolicy, AffinityOfEveryCpuIsNotPinning) {
  EXPECT_TRUE(ShouldSpin(Job(1, 1, 1), Unpinned(1)));
  EXPECT_TRUE(ShouldSpin(Job(2, 1, 2), Unpinned(2)));
  EXPECT_TRUE(ShouldSpin(Job(2, 1, 2), {2, 0}));  // mask unknown
}

TEST(SpinPolicy, ExplicitSettingWins) {
  Options on = Job(8, 1, 16), off = Job(2, 1, 16);
  on.spin = SpinPolicy::kOn;
  off.spin = SpinPolicy::kOff;
  EXPECT_TRUE(ShouldSpin(on, {16, 2}));
  EXPECT_TRUE(ShouldSpinLong(on, {16, 2}));
  EXPECT_FALSE(ShouldSpin(off, Unpinned(16)));
}

TEST(NodeCpus, AffinityCapsTheShare) {
  EXPECT_EQ(NodeCpus(Job(8, 1, 16), Unpinned(16)), 2u);
  EXPECT_EQ(NodeCpus(Job(2, 1, 16), {16, 3}), 3u);
  EXPECT_EQ(NodeCpus(Job(4, 1, 2), Unpinned(2)), 1u);
}

}  // namespace
}  // namespace svm::rt
