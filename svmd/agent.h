// svmd --agent: the per-job host agent that the ssh and slurm launchers
// start (launch.h). Reads the job key from stdin, connects back to svmrun,
// proves the key and says which host it is; svmd's session then serves
// the job on that connection.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "util/auth.h"
#include "util/seal.h"
#include "util/net.h"
#include "util/status.h"

namespace svm::svmd {

struct AgentArgs {
  std::string connect_host;  // svmrun; empty: SSH_CONNECTION's client, else SLURM_LAUNCH_NODE_IPADDR
  uint16_t connect_port = 0;
  uint32_t index = UINT32_MAX;  // the host's index in svmrun's list; UINT32_MAX: known by name
};

// On success *conn is authenticated with the job key and AGENT_HELLO is
// sent; *session is the connection's session secret (it unwraps JOB's key),
// *seal its sealing when svmrun asked for it (else null). key_fd is read for
// exactly 32 bytes (the key) and never again.
Status ConnectAgent(const AgentArgs& args, int key_fd, UniqueFd* conn, Key* session,
                    std::shared_ptr<Seal>* seal);

}  // namespace svm::svmd
