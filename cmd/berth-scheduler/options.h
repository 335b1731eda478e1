#ifndef BERTH_CMD_BERTH_SCHEDULER_OPTIONS_H_
#define BERTH_CMD_BERTH_SCHEDULER_OPTIONS_H_

// berth-scheduler's command-line flags. Every malformed flag exits non-zero with a message that
// names it, before anything else happens.

#include <cstdio>
#include <string>
#include <vector>

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
  // The secure port: HTTPS, requests authenticated with TokenReview and authorized with
  // SubjectAccessReview. 0: off.
  int secure_port = 10259;
  std::string bind_address = "0.0.0.0";  // An IPv4 address.
  // Both or neither; neither: a self-signed pair generated at start, kept in memory.
  std::string tls_cert_file;
  std::string tls_private_key_file;
  std::vector<std::string> authorization_always_allow_paths = {"/healthz", "/readyz", "/livez"};
  // The insecure port: plain HTTP, no authentication, no authorization. 0 (the default): off.
  int port = 0;
  std::string address = "127.0.0.1";  // An IPv4 address.
  // How long SIGTERM waits for in-flight binding cycles before giving up on them.
  int shutdown_grace_seconds = 10;
};

void Usage(std::FILE* out);

// Prints "berth-scheduler: <message>" to stderr and exits 1.
[[noreturn]] void Fail(const std::string& message);

// Exits (0 for --help, 1 for a bad flag) rather than returning on anything but a valid command
// line.
Flags ParseFlags(int argc, char** argv);

// "ip:port".
std::string HostPort(const std::string& ip, int port);

}  // namespace berth::cmd

#endif  // BERTH_CMD_BERTH_SCHEDULER_OPTIONS_H_
