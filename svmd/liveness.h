// Liveness of a job's processes (issue 18): svmrun pings every node and
// svmd of the job (PING/PONG on their control connections, control/frame.h)
// every kPingDivisor-th of the liveness timeout; whoever hears nothing from
// the other side for the whole timeout ends the job: svmrun names the
// silent node or host and why (Describe), a node or svmd leaves when svmrun
// falls silent. A stopped process answers nothing, a cut link carries
// nothing, and TCP keepalives would not tell a stopped process from a live
// one (the kernel answers them), hence pings from user space.
//
// Thread-safety: no shared state.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace svm::svmd {

inline constexpr int64_t kPingDivisor = 4;

// The liveness timeout as svmrun's flag and SVM_LIVENESS_TIMEOUT give it
// (seconds), in milliseconds; 0 = off.
int64_t LivenessMs(double seconds);
// "SVM_LIVENESS_TIMEOUT=<seconds>" for the nodes' and svmd's environment.
std::string LivenessEnv(double seconds);

// The state letter of a local process (/proc/PID/stat: R, S, D, T, t, Z...),
// or 0 if it is gone.
char ProcessState(pid_t pid);
// Whether that state means it cannot answer: stopped, traced or stuck in the
// kernel (uninterruptible sleep).
inline bool Unresponsive(char state) { return state == 'T' || state == 't' || state == 'D'; }

// The flags field of a /proc/.../stat line (the kernel's PF_* of the task),
// or 0 if the line does not parse.
unsigned long StatFlags(std::string_view stat);

// Whether a local process is writing a core dump: one of its tasks has
// PF_DUMPCORE. It crashed, stops answering while the core is written (a
// node's core holds its shared regions: seconds for a GiB), and killing it
// then would cut the core short; its death is reported when it ends.
bool DumpingCore(pid_t pid);

// Whether a local process cannot answer now (Unresponsive) and should be
// given up on once that lasts: not while it writes its core.
bool CannotAnswer(pid_t pid);

// Why a local process may be silent, from /proc: "crashed and is writing a
// core dump", "stopped (SIGSTOP, or a debugger)", "stuck in the kernel
// (state D)", or "not answering (cut off, or starved of CPU)".
std::string DescribeSilence(pid_t pid);

}  // namespace svm::svmd
