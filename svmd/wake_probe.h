// What a thread woken from another CPU costs on this host: svmrun and svmd
// measure it once before they start pinned nodes, and the nodes' spin
// policy weighs it (SVM_HOST_WAKE_NS, libsvm/options.h ShouldSpin).
#pragma once

#include <sched.h>

#include <cstdint>

namespace svm::svmd {

// The median one-way time of a futex ping-pong between two threads bound
// to the first two CPUs of `cpus`, each sleeping (never spinning) for every
// turn, so that each turn is a wake-up of a sleeping thread on another CPU.
// 0 (unknown) when `cpus` has fewer than two CPUs, or when the rounds did
// not finish within `budget_ns` (a loaded host: the figure would measure
// the load, not the wake-up).
uint64_t MeasureWakeUpNs(const cpu_set_t& cpus, int rounds = 15, uint64_t budget_ns = 50'000'000);

}  // namespace svm::svmd
