// Test support: N nodes of one backend in this process, each with one
// registered region (id kRegion) of `bytes` zeroed, 8-byte aligned bytes in
// a memory file (the shm backend maps its peers' regions from their files).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "nic_ext/fake/fake_transport.h"
#include "nic_ext/shm/shm_transport.h"
#ifdef SVM_HAVE_OFI
#include "nic_ext/ofi/ofi_transport.h"
#endif
#include "nic_ext/tcp/tcp_transport.h"
#include "nic_ext/transport.h"
#include "util/shared_memory.h"

namespace svm::nic::testing {

// kOfiTcp, kOfiShm: the ofi backend over libfabric's tcp;ofi_rxm and shm
// providers (built when libfabric is found; OfiSkipReason says when not).
// kTcpSealed: tcp with every connection sealed (TcpOptions::seal).
enum class Backend { kFake, kTcp, kShm, kOfiTcp, kOfiShm, kTcpSealed };
inline const char* ToString(Backend b) {
  switch (b) {
    case Backend::kFake: return "fake";
    case Backend::kTcp: return "tcp";
    case Backend::kTcpSealed: return "tcp_sealed";
    case Backend::kShm: return "shm";
    case Backend::kOfiTcp: return "ofi_tcp";
    case Backend::kOfiShm: return "ofi_shm";
  }
  return "?";
}
inline bool IsOfi(Backend b) { return b == Backend::kOfiTcp || b == Backend::kOfiShm; }
inline const char* OfiProvider(Backend b) { return b == Backend::kOfiShm ? "shm" : "tcp;ofi_rxm"; }

// Empty if backend b can run here; else why not (a skip reason).
inline std::string OfiSkipReason(Backend b) {
  if (!IsOfi(b)) return "";
#ifdef SVM_HAVE_OFI
  Status s = ProbeOfi(OfiProvider(b));
  return s.ok() ? "" : s.ToString();
#else
  return "libfabric was not found at build time: the ofi backend is not built";
#endif
}

inline constexpr RegionId kRegion = 3;
inline constexpr auto kTimeout = std::chrono::seconds(30);  // generous: 2 loaded cores

// The job key of test clusters (any nonzero key does).
inline JobKey TestKey(uint8_t salt = 0) {
  JobKey k;
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<uint8_t>(0x5a ^ (i * 7) ^ salt);
  return k;
}

struct Cluster {
  Cluster(Backend backend, uint32_t n, size_t bytes = 1 << 16, TcpOptions tmpl = {}) {
    files.resize(n);
    for (auto& f : files) {
      Status s = SharedMemory::Create("nic-test", bytes, &f);
      EXPECT_TRUE(s.ok()) << s.ToString();
      mem.emplace_back(static_cast<uint64_t*>(f.data()), bytes / 8);
    }
    if (backend == Backend::kFake) {
      auto fabric = MakeFakeFabric(n);
      for (NodeId i = 0; i < n; ++i) nics.push_back(MakeFakeNic(fabric, i));
    } else if (backend == Backend::kShm) {
      for (NodeId i = 0; i < n; ++i) {
        ShmOptions o;
        o.key = tmpl.key == JobKey{} ? TestKey() : tmpl.key;
        o.self = i;
        o.num_nodes = n;
        o.epoch = tmpl.epoch;
        std::unique_ptr<ShmNic> t;
        Status s = ShmNic::Create(o, &t);
        EXPECT_TRUE(s.ok()) << s.ToString();
        addresses.push_back(t->listen_address());
        nics.push_back(std::move(t));
      }
    } else if (IsOfi(backend)) {
#ifdef SVM_HAVE_OFI
      for (NodeId i = 0; i < n; ++i) {
        OfiOptions o;
        o.self = i;
        o.num_nodes = n;
        o.provider = OfiProvider(backend);
        o.source = "127.0.0.1";
        std::unique_ptr<OfiNic> t;
        Status s = OfiNic::Create(o, &t);
        EXPECT_TRUE(s.ok()) << s.ToString();
        if (!s.ok()) return;
        addresses.push_back(t->listen_address());
        nics.push_back(std::move(t));
      }
#endif
    } else {
      for (NodeId i = 0; i < n; ++i) {
        TcpOptions o = tmpl;
        if (o.key == JobKey{}) o.key = TestKey();
        if (backend == Backend::kTcpSealed) o.seal = true;
        o.self = i;
        o.num_nodes = n;
        o.listen = "127.0.0.1:0";
        std::unique_ptr<TcpNic> t;
        Status s = TcpNic::Create(o, &t);
        EXPECT_TRUE(s.ok()) << s.ToString();
        addresses.push_back(t->listen_address());
        nics.push_back(std::move(t));
      }
    }
    for (NodeId i = 0; i < n; ++i) {
      Status s = nics[i]->RegisterRegion({kRegion, mem[i].data(), bytes, files[i].fd(), 0});
      EXPECT_TRUE(s.ok()) << s.ToString();
    }
    std::vector<std::thread> threads;
    std::vector<Status> st(n);
    for (NodeId i = 0; i < n; ++i) {
      threads.emplace_back([&, i] { st[i] = nics[i]->Connect(addresses_or_empty(n)); });
    }
    for (auto& t : threads) t.join();
    for (NodeId i = 0; i < n; ++i) EXPECT_TRUE(st[i].ok()) << i << ": " << st[i].ToString();
  }

  std::vector<std::string> addresses_or_empty(uint32_t n) const {
    return addresses.empty() ? std::vector<std::string>(n) : addresses;
  }

  // Every Nic stops before any is destroyed: ofi over shm reaches a peer in
  // this process through the peer's own mapping, gone once it is destroyed.
  ~Cluster() {
    for (auto& nic : nics) nic->Shutdown();
  }
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  uint8_t* bytes(NodeId i) { return reinterpret_cast<uint8_t*>(mem[i].data()); }
  Nic& operator[](NodeId i) { return *nics[i]; }

  std::vector<SharedMemory> files;
  std::vector<std::span<uint64_t>> mem;  // each node's region, as words
  std::vector<std::string> addresses;
  std::vector<std::unique_ptr<Nic>> nics;
};

// The next completion, or a failed test after kTimeout.
inline Completion WaitOne(CompletionQueue& cq) {
  Completion c;
  size_t n = cq.Wait({&c, 1}, kTimeout);
  EXPECT_EQ(n, 1u) << "no completion within the timeout";
  return c;
}

inline Message WaitMessage(Nic& nic) {
  Message m;
  size_t n = nic.recv_queue().Wait({&m, 1}, kTimeout);
  EXPECT_EQ(n, 1u) << "no message within the timeout";
  return m;
}

// Posts one WR and returns its completion.
inline Completion PostWait(Nic& nic, CompletionQueue& cq, const WorkRequest& wr) {
  Status s = nic.Post(&cq, {&wr, 1});
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!s.ok()) return {};
  return WaitOne(cq);
}

}  // namespace svm::nic::testing
