#include "tests/sim/sim_generator.h"

#include <algorithm>
#include <cassert>
#include <functional>
#include <random>
#include <vector>

namespace svm::sim {

uint32_t DefaultOps(uint32_t nodes, uint32_t threads) {
  return std::min<uint32_t>(240 + 16 * nodes * threads, 900);
}

namespace {

enum class PhaseKind { kNormal, kBurst, kLocky };

class Generator {
 public:
  Generator(const GenOptions& o, uint64_t seed)
      : o_(o),
        rng_(seed),
        b_(o.nodes, o.threads, o.pages, o.page_size),
        used_(o.pages * o.page_size, 0) {}

  Program Run();

 private:
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  bool Chance(uint32_t per_mille) { return Below(1000) < per_mille; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    assert(!v.empty());
    return v[Below(v.size())];
  }

  bool Place(uint64_t addr, uint32_t len);
  void PlaceCluster();
  void PlaceAcross(uint64_t boundary);
  void PlaceRandom();
  void Layout(uint32_t target);
  void Classify();
  void Phase(uint32_t phase);
  void CriticalSection(uint32_t g, const std::vector<size_t>& active);
  void SubsetBarrier(BarrierId b, uint32_t phase);

  GenOptions o_;
  std::mt19937_64 rng_;
  ProgramBuilder b_;
  std::vector<uint8_t> used_;
  std::vector<std::pair<uint64_t, uint32_t>> placed_;  // addr, len
  uint32_t page_crossers_ = 0;

  std::vector<LockId> locks_;                   // data locks, ascending
  std::vector<std::vector<uint32_t>> guarded_;  // by index into locks_
  std::vector<size_t> locks_with_vars_;         // indices into locks_
  std::vector<uint32_t> owned_;                 // owned variables
  LockId chain_lock_ = 0;
  std::vector<uint32_t> counters_;  // guarded by chain_lock_
  BarrierId barrier_base_ = 0;
  bool alternate_barriers_ = false;
};

bool Generator::Place(uint64_t addr, uint32_t len) {
  if (len == 0 || addr + len > used_.size()) return false;
  for (uint64_t a = addr; a < addr + len; ++a) {
    if (used_[a]) return false;
  }
  for (uint64_t a = addr; a < addr + len; ++a) used_[a] = 1;
  placed_.emplace_back(addr, len);
  return true;
}

// Neighbouring pieces of one 8-byte word: different variables, so different
// threads or locks write bytes of the same word.
void Generator::PlaceCluster() {
  const uint64_t page = Below(o_.pages);
  const uint64_t words = o_.page_size / 8;
  const uint64_t word = Chance(700) ? Below(std::min<uint64_t>(words, 64)) : Below(words);
  const uint64_t base = page * o_.page_size + word * 8;
  std::vector<uint32_t> cuts = {0, 8};
  const uint64_t pieces = 2 + Below(3);
  while (cuts.size() < pieces + 1) {
    const uint32_t c = static_cast<uint32_t>(1 + Below(7));
    if (std::find(cuts.begin(), cuts.end(), c) == cuts.end()) cuts.push_back(c);
  }
  std::sort(cuts.begin(), cuts.end());
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    if (Chance(150)) continue;  // leave a gap now and then
    Place(base + cuts[i], cuts[i + 1] - cuts[i]);
  }
}

void Generator::PlaceAcross(uint64_t boundary) {
  const uint32_t len = static_cast<uint32_t>(2 + Below(7));
  const uint64_t before = 1 + Below(len - 1);
  if (boundary < before) return;
  Place(boundary - before, len);
}

void Generator::PlaceRandom() {
  const uint64_t page = Below(o_.pages);
  const uint32_t len = static_cast<uint32_t>(1 + Below(8));
  const uint64_t span = Chance(500) ? 256 : o_.page_size;
  const uint64_t off = Below(span - len + 1);
  Place(page * o_.page_size + off, len);
}

void Generator::Layout(uint32_t target) {
  for (uint32_t attempt = 0; attempt < 20 * target && placed_.size() < target; ++attempt) {
    const uint64_t mode = Below(100);
    if (mode < 35) {
      PlaceCluster();
    } else if (mode < 55) {
      const uint64_t lines = o_.page_size / 64;
      PlaceAcross(Below(o_.pages) * o_.page_size + 64 * (1 + Below(lines - 1)));
    } else if (mode < 61 && o_.pages >= 2 && page_crossers_ < 3) {
      const size_t before = placed_.size();
      PlaceAcross(o_.page_size * (1 + Below(o_.pages - 1)));
      if (placed_.size() > before) ++page_crossers_;
    } else {
      PlaceRandom();
    }
  }
  // Address order, so the layout does not depend on placement order.
  std::sort(placed_.begin(), placed_.end());
}

void Generator::Classify() {
  const size_t nlocks = 1 + Below(4);
  std::vector<LockId> ids;
  while (ids.size() < nlocks + 1) {
    const LockId id = 0x10000 + 8 * Below(4096);
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  chain_lock_ = ids.back();
  ids.pop_back();
  std::sort(ids.begin(), ids.end());
  locks_ = ids;
  guarded_.assign(locks_.size(), {});

  const bool chain = Chance(650);
  std::vector<size_t> order(placed_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng_);
  std::vector<VarClass> cls(placed_.size(), VarClass::kOwned);
  std::vector<LockId> lock_of(placed_.size(), 0);
  size_t n_counters = 0;
  for (size_t i : order) {
    if (chain && n_counters < 2 && placed_[i].second >= 2) {
      cls[i] = VarClass::kCounter;
      lock_of[i] = chain_lock_;
      ++n_counters;
    } else if (Chance(400)) {
      cls[i] = VarClass::kLocked;
      lock_of[i] = locks_[Below(locks_.size())];
    }
  }
  for (size_t i = 0; i < placed_.size(); ++i) {
    const uint32_t v = b_.AddVar(placed_[i].first, placed_[i].second, cls[i], lock_of[i]);
    switch (cls[i]) {
      case VarClass::kCounter:
        counters_.push_back(v);
        break;
      case VarClass::kLocked: {
        const size_t li = std::find(locks_.begin(), locks_.end(), lock_of[i]) - locks_.begin();
        guarded_[li].push_back(v);
        break;
      }
      case VarClass::kOwned:
        owned_.push_back(v);
        break;
    }
  }
  for (size_t li = 0; li < locks_.size(); ++li) {
    if (!guarded_[li].empty()) locks_with_vars_.push_back(li);
  }
}

// A critical section on one of the phase's active locks (sometimes two,
// nested in ascending id order, so no deadlock).
void Generator::CriticalSection(uint32_t g, const std::vector<size_t>& active) {
  if (active.empty()) return;
  const size_t outer = Pick(active);
  std::vector<size_t> held = {outer};
  if (Chance(200)) {
    std::vector<size_t> inner;
    for (size_t li : active) {
      if (li > outer) inner.push_back(li);
    }
    if (!inner.empty()) held.push_back(Pick(inner));
  }
  for (size_t li : held) b_.Acquire(g, locks_[li]);
  const uint64_t accesses = 1 + Below(3);
  for (uint64_t k = 0; k < accesses; ++k) {
    const uint32_t v = Pick(guarded_[held[Below(held.size())]]);
    const uint64_t how = Below(4);
    if (how < 2) {
      b_.Read(g, v);
      b_.Write(g, v);
    } else if (how == 2) {
      b_.Write(g, v);
    } else {
      b_.Read(g, v);
    }
  }
  for (size_t k = held.size(); k-- > 0;) b_.Release(g, locks_[held[k]]);
}

void Generator::Phase(uint32_t phase) {
  const uint32_t threads = o_.nodes * o_.threads;
  const uint64_t k = Below(100);
  const PhaseKind kind = k < 60   ? PhaseKind::kNormal
                         : k < 80 ? PhaseKind::kBurst
                                  : PhaseKind::kLocky;

  // Owners of this phase; an owned variable without one is read-only.
  std::vector<std::vector<uint32_t>> mine(threads);
  std::vector<uint32_t> read_only;
  for (uint32_t v : owned_) {
    if (kind == PhaseKind::kBurst || Chance(500)) {
      mine[Below(threads)].push_back(v);
    } else {
      read_only.push_back(v);
    }
  }
  // A quiet lock is taken by nobody this phase: what it guards is read-only,
  // and anyone may read it without the lock.
  std::vector<size_t> active;
  for (size_t li : locks_with_vars_) {
    if (Chance(250)) {
      read_only.insert(read_only.end(), guarded_[li].begin(), guarded_[li].end());
    } else {
      active.push_back(li);
    }
  }
  const bool chain = !counters_.empty() && Chance(700);
  const uint32_t budget = o_.ops / 3;  // data ops per phase, all threads
  const uint32_t per_thread = std::max<uint32_t>(2, budget / threads);

  for (uint32_t g = 0; g < threads; ++g) {
    std::vector<std::function<void()>> actions;
    // Owned writes: in a burst every owned variable is written (many write
    // notices at the next barrier); otherwise most of them.
    for (uint32_t v : mine[g]) {
      if (kind != PhaseKind::kBurst && !Chance(700)) continue;
      const bool read_first = Chance(300);
      actions.push_back([this, g, v, read_first] {
        if (read_first) b_.Read(g, v);
        b_.Write(g, v);
      });
    }
    if (chain) {
      actions.push_back([this, g] {
        b_.Acquire(g, chain_lock_);
        for (uint32_t v : counters_) b_.Add(g, v, 1);
        b_.Release(g, chain_lock_);
      });
    }
    const uint32_t cs_per_mille = kind == PhaseKind::kLocky ? 800 : 400;
    for (uint32_t i = 0; i < per_thread; ++i) {
      if (Chance(cs_per_mille)) {
        actions.push_back([this, g, active] { CriticalSection(g, active); });
      } else if (!mine[g].empty() && Chance(400)) {
        const uint32_t v = Pick(mine[g]);
        actions.push_back([this, g, v] { b_.Read(g, v); });
      } else if (!read_only.empty()) {
        const uint32_t v = Pick(read_only);
        actions.push_back([this, g, v] { b_.Read(g, v); });
      }
    }
    // A scan: the read-only variables in address order, so faults come in
    // page order, in steps or strides (page runs, Node::FetchStrided).
    if (read_only.size() >= 3 && Chance(300)) {
      std::vector<uint32_t> scan = read_only;
      std::sort(scan.begin(), scan.end());
      actions.push_back([this, g, scan] {
        for (uint32_t v : scan) b_.Read(g, v);
      });
    }
    std::shuffle(actions.begin(), actions.end(), rng_);
    for (auto& action : actions) action();
  }
  const BarrierId b = barrier_base_ + (alternate_barriers_ ? phase % 2 : 0);
  if (threads >= 3 && phase > 0 && Chance(300)) {
    SubsetBarrier(b, phase);
  } else {
    b_.BarrierAll(b);
  }
}

// The phase ends at b for some threads only; the others wait for a flag one
// of them raises after it, then all meet at another barrier, which orders
// every access of the phase before the next. Under gather (Node::kGather) a
// node must not wait at b for its threads that took part last time and now
// wait for the flag.
void Generator::SubsetBarrier(BarrierId b, uint32_t phase) {
  constexpr BarrierId kAllAgain = 50;  // below barrier_base_
  const uint32_t threads = o_.nodes * o_.threads;
  std::vector<bool> out(threads);
  for (uint32_t g = 0; g < threads; ++g) out[g] = Chance(300);
  out[Below(threads)] = true;    // at least one sits out
  out[Below(threads)] = false;   // and one takes part
  std::vector<uint32_t> local(o_.nodes, 0);
  uint32_t total = 0, raiser = 0;
  for (uint32_t g = threads; g-- > 0;) {
    if (out[g]) continue;
    ++local[g / o_.threads];
    ++total;
    raiser = g;
  }
  const uint64_t flag = 1000 + phase;
  for (uint32_t g = 0; g < threads; ++g) {
    if (!out[g]) b_.BarrierOf(g, b, total, local[g / o_.threads]);
  }
  b_.Signal(raiser, flag);
  for (uint32_t g = 0; g < threads; ++g) {
    if (out[g]) b_.Await(g, flag);
  }
  b_.BarrierAll(kAllAgain);
}

Program Generator::Run() {
  if (o_.ops == 0) o_.ops = DefaultOps(o_.nodes, o_.threads);
  const uint32_t target = std::clamp<uint32_t>(o_.ops / 4, 12, 80);
  Layout(target);
  Classify();
  barrier_base_ = 100 + 2 * Below(50);
  alternate_barriers_ = Chance(500);
  const uint32_t phases = static_cast<uint32_t>(2 + Below(3));
  for (uint32_t p = 0; p < phases; ++p) Phase(p);
  b_.FinalCheck(barrier_base_ + (alternate_barriers_ ? phases % 2 : 0));
  return b_.Take();
}

}  // namespace

Program Generate(const GenOptions& options, uint64_t seed) {
  return Generator(options, seed).Run();
}

}  // namespace svm::sim
