#include "svmd/agent.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "control/frame.h"

namespace svm::svmd {
namespace {

constexpr int64_t kKeyWaitMs = 30000;
constexpr int64_t kConnectMs = 15000;

// The address svmrun is reachable at, as this host's launcher saw it.
Status SvmrunHost(const AgentArgs& args, std::string* host) {
  if (!args.connect_host.empty()) {
    *host = args.connect_host;
    return Status::Ok();
  }
  if (const char* c = std::getenv("SSH_CONNECTION"); c && *c) {  // "client port server port"
    std::istringstream(c) >> *host;
    if (!host->empty()) return Status::Ok();
  }
  if (const char* ip = std::getenv("SLURM_LAUNCH_NODE_IPADDR"); ip && *ip) {
    *host = ip;
    return Status::Ok();
  }
  return Status::InvalidArgument(
      "svmd --agent: where is svmrun? no --connect, SSH_CONNECTION or SLURM_LAUNCH_NODE_IPADDR");
}

// The name svmrun knows this host by: Slurm's node name, else the host's.
std::string HostName() {
  if (const char* n = std::getenv("SLURMD_NODENAME"); n && *n) return n;
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "?";
  return buf;
}

}  // namespace

Status ConnectAgent(const AgentArgs& args, int key_fd, UniqueFd* conn, Key* session,
                    std::shared_ptr<Seal>* seal) {
  Key key;
  Status s = ReadFull(key_fd, key.data(), key.size(), NowMs() + kKeyWaitMs);
  if (!s.ok()) return Status::InvalidArgument("svmd --agent: no job key on stdin: " + s.message());
  std::string host;
  if (s = SvmrunHost(args, &host); !s.ok()) return s;
  UniqueFd fd;
  const std::string where = JoinHostPort(host, args.connect_port);
  if (s = Connect(host, args.connect_port, NowMs() + kConnectMs, &fd); !s.ok())
    return Status::IoError("svmd --agent on " + HostName() + ": cannot reach svmrun: " + s.message());
  AuthResult auth;
  if (s = Authenticate(fd.get(), key, AuthRole::kClient, NowMs() + kConnectMs, false, &auth); !s.ok())
    return Status::AuthFailed("svmd --agent: svmrun at " + where + ": " + s.message());
  *session = auth.session;
  seal->reset();
  if (auth.sealed) {
    std::unique_ptr<Seal> made;
    if (s = Seal::Make(auth.session, AuthRole::kClient, &made); !s.ok()) return s;
    *seal = std::move(made);
  }
  AgentHelloMsg hello{args.index, HostName()};
  if (s = SendFrame(fd.get(), MsgType::kAgentHello, 0, Encode(hello), *seal ? &(*seal)->out : nullptr); !s.ok())
    return s;
  *conn = std::move(fd);
  return Status::Ok();
}

}  // namespace svm::svmd
