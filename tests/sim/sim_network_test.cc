#include "tests/sim/sim_network.h"

#include <gtest/gtest.h>

namespace svm::sim {
namespace {

std::vector<uint8_t> Msg(uint8_t b) { return {b}; }

TEST(SimNetwork, FifoPerPair) {
  SimNetwork net(3);
  net.Send(0, 1, Msg(1));
  net.Send(0, 1, Msg(2));
  net.Send(2, 1, Msg(3));
  net.Send(0, 1, Msg(4));
  EXPECT_EQ(net.in_flight(), 4u);
  EXPECT_EQ(net.ready_count(), 2u);
  EXPECT_EQ(net.Pop({0, 1}).bytes, Msg(1));
  EXPECT_EQ(net.Pop({2, 1}).bytes, Msg(3));
  EXPECT_EQ(net.ready_count(), 1u);
  EXPECT_EQ(net.Pop({0, 1}).bytes, Msg(2));
  EXPECT_EQ(net.Pop({0, 1}).bytes, Msg(4));
  EXPECT_EQ(net.ready_count(), 0u);
  EXPECT_EQ(net.in_flight(), 0u);
  EXPECT_EQ(net.sent(), 4u);
}

TEST(SimNetwork, DelayedPairsAreListedApart) {
  SimNetwork net(3);
  net.SetDelayed(0, 2, true);
  net.Send(0, 2, Msg(1));
  net.Send(1, 2, Msg(2));
  ASSERT_EQ(net.ready_count(), 1u);
  ASSERT_EQ(net.delayed_count(), 1u);
  EXPECT_EQ(net.ready(0).from, 1u);
  EXPECT_EQ(net.delayed(0).from, 0u);
  // Moving a non-empty pair between the lists keeps its messages.
  net.SetDelayed(0, 2, false);
  EXPECT_EQ(net.ready_count(), 2u);
  EXPECT_EQ(net.delayed_count(), 0u);
  EXPECT_EQ(net.Pop({0, 2}).bytes, Msg(1));
  EXPECT_EQ(net.queued({0, 2}), 0u);
}

TEST(SimNetwork, ListOrderDependsOnlyOnOperations) {
  auto run = [] {
    SimNetwork net(4);
    for (NodeId i = 0; i < 4; ++i) {
      for (NodeId j = 0; j < 4; ++j) {
        if (i != j) net.Send(i, j, Msg(static_cast<uint8_t>(i * 4 + j)));
      }
    }
    net.Pop({1, 2});
    net.Pop({3, 0});
    std::vector<std::pair<NodeId, NodeId>> order;
    for (size_t k = 0; k < net.ready_count(); ++k)
      order.emplace_back(net.ready(k).from, net.ready(k).to);
    return order;
  };
  EXPECT_EQ(run(), run());
}

}  // namespace
}  // namespace svm::sim
