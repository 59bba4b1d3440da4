// nic_verbs_selftest: two verbs nodes in this process exercise every work
// request kind once. With no RDMA device it says so and exits 77 (the ctest
// skip code). Address: $SVM_VERBS_ADDR (an IP of an RDMA-capable interface,
// default 127.0.0.1). Prints one line per case and a summary.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "nic_ext/verbs/verbs_transport.h"

namespace {

using namespace svm::nic;

int failures = 0;

void Check(bool ok, const char* what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) ++failures;
}

Completion Run(Nic& nic, CompletionQueue& cq, const WorkRequest& wr) {
  Completion c;
  c.status = WcStatus::kFlushed;
  if (!nic.Post(&cq, {&wr, 1}).ok()) return c;
  if (cq.Wait({&c, 1}, std::chrono::seconds(10)) != 1) c.status = WcStatus::kFlushed;
  return c;
}

}  // namespace

int main() {
  if (svm::Status s = ProbeRdmaDevice(); !s.ok()) {
    std::printf("nic_verbs_selftest: skipped: no RDMA device (%s)\n", s.message().c_str());
    return 77;
  }
  const char* env = std::getenv("SVM_VERBS_ADDR");
  const std::string host = env != nullptr ? env : "127.0.0.1";
  std::vector<std::vector<uint64_t>> mem(2, std::vector<uint64_t>(1024, 0));
  std::vector<std::unique_ptr<VerbsNic>> nics(2);
  std::vector<std::string> addrs;
  for (svm::NodeId i = 0; i < 2; ++i) {
    VerbsOptions o;
    o.self = i;
    o.num_nodes = 2;
    o.listen = host + ":0";
    if (svm::Status s = VerbsNic::Create(o, &nics[i]); !s.ok()) {
      std::printf("nic_verbs_selftest: setup failed: %s\n", s.ToString().c_str());
      return 1;
    }
    nics[i]->RegisterRegion({0, mem[i].data(), mem[i].size() * 8});
    addrs.push_back(nics[i]->listen_address());
  }
  svm::Status st1;
  std::thread t([&] { st1 = nics[1]->Connect(addrs); });
  svm::Status st0 = nics[0]->Connect(addrs);
  t.join();
  if (!st0.ok() || !st1.ok()) {
    std::printf("nic_verbs_selftest: connect failed: %s / %s\n", st0.ToString().c_str(), st1.ToString().c_str());
    return 1;
  }
  Nic& a = *nics[0];
  CompletionQueue cq;
  mem[0][0] = 0x1234;
  Sge src{&mem[0][0], 8}, dst{&mem[0][1], 8};
  Check(Run(a, cq, WorkRequest::Write(1, 0, 64, {&src, 1})).status == WcStatus::kSuccess && mem[1][8] == 0x1234, "WRITE");
  Check(Run(a, cq, WorkRequest::Read(1, 0, 64, {&dst, 1})).status == WcStatus::kSuccess && mem[0][1] == 0x1234, "READ");
  Check(Run(a, cq, WorkRequest::Read(1, 0, 8192, {&dst, 1})).status == WcStatus::kRemoteAccessError, "READ out of bounds");
  Completion cas = Run(a, cq, WorkRequest::Cas(1, 0, 16, 0, 9));
  Check(cas.status == WcStatus::kSuccess && cas.value == 0 && mem[1][2] == 9, "CAS");
  Completion faa = Run(a, cq, WorkRequest::Faa(1, 0, 16, 1));
  Check(faa.status == WcStatus::kSuccess && faa.value == 9 && mem[1][2] == 10, "FAA");
  Check(Run(a, cq, WorkRequest::Lock(1, 3)).status == WcStatus::kSuccess, "LOCK");
  Check(Run(a, cq, WorkRequest::Unlock(1, 3)).status == WcStatus::kSuccess, "UNLOCK");
  Check(Run(a, cq, WorkRequest::Send(1, {&src, 1})).status == WcStatus::kSuccess, "SEND");
  Message m;
  Check(nics[1]->recv_queue().Wait({&m, 1}, std::chrono::seconds(10)) == 1 && m.bytes.size() == 8, "SEND delivered");
  nics.clear();
  std::printf("nic_verbs_selftest: %d failed\n", failures);
  return failures == 0 ? 0 : 1;
}
