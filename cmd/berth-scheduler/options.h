#ifndef BERTH_CMD_BERTH_SCHEDULER_OPTIONS_H_
#define BERTH_CMD_BERTH_SCHEDULER_OPTIONS_H_

// berth-scheduler's command-line flags. Every malformed flag exits non-zero with a message that
// names it, before anything else happens.

#include <cstdio>
#include <string>

namespace berth::cmd {

struct Flags {
  std::string config;
  std::string kubeconfig;
  int verbosity = 0;
  std::string logging_format = "text";
  bool leader_elect_set = false;
  bool leader_elect = false;
  bool version = false;
  int sync_timeout_seconds = 300;
  std::string bind_address = "0.0.0.0:10251";
  std::string tls_cert_file;
  std::string tls_private_key_file;
  // How long SIGTERM waits for in-flight binding cycles before giving up on them.
  int shutdown_grace_seconds = 10;
  // Serve /debug/pods and /debug/simulate, which reveal pod and node names to whoever reaches
  // the serving port.
  bool enable_debug_endpoints = false;
};

void Usage(std::FILE* out);

// Prints "berth-scheduler: <message>" to stderr and exits 1.
[[noreturn]] void Fail(const std::string& message);

// Exits (0 for --help, 1 for a bad flag) rather than returning on anything but a valid command
// line.
Flags ParseFlags(int argc, char** argv);

}  // namespace berth::cmd

#endif  // BERTH_CMD_BERTH_SCHEDULER_OPTIONS_H_
