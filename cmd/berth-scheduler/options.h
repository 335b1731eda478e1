#ifndef BERTH_CMD_BERTH_SCHEDULER_OPTIONS_H_
#define BERTH_CMD_BERTH_SCHEDULER_OPTIONS_H_

// berth-scheduler's command-line flags. Every malformed flag exits non-zero with a message that
// names it, before anything else happens.

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "pkg/client/client.h"

namespace berth::cmd {

// A command line that cannot be used; the message names the flag.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Walks argv[first..argc), one argument at a time, reading "--flag=value" and "--flag value".
class ArgReader {
 public:
  ArgReader(int argc, char** argv, int first) : argc_(argc), argv_(argv), next_(first) {}
  // Moves to the next argument; false past the last.
  bool Next();
  // The argument, without a "=value" of its own.
  const std::string& arg() const { return arg_; }
  // Whether it was written "--flag=value".
  bool has_value() const { return has_value_; }
  // The value after "=" (empty without one).
  const std::string& inline_value() const { return value_; }
  // The flag's value: after "=", else the next argument. Throws UsageError when there is none.
  std::string Value();

 private:
  int argc_;
  char** argv_;
  int next_;
  std::string arg_;
  std::string value_;
  bool has_value_ = false;
};

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
  std::string bind_address = "0.0.0.0";  // An IPv4 or IPv6 address.
  // Both or neither; neither: a self-signed pair generated at start, kept in memory.
  std::string tls_cert_file;
  std::string tls_private_key_file;
  // A client certificate these CAs (PEM) sign authenticates its request; empty: none is asked for.
  std::string client_ca_file;
  std::vector<std::string> authorization_always_allow_paths = {"/healthz", "/readyz", "/livez"};
  // The secure port's TokenReviews and SubjectAccessReviews go through these kubeconfigs; empty:
  // through the scheduler's own connection.
  std::string authentication_kubeconfig;
  std::string authorization_kubeconfig;
  // How long a token's review, an allowed and a denied SubjectAccessReview are remembered, as
  // kube-scheduler's flags of the same names (kube-apiserver's defaults). Zero or less: not at all.
  std::chrono::nanoseconds authentication_token_webhook_cache_ttl = std::chrono::seconds(10);
  std::chrono::nanoseconds authorization_webhook_cache_authorized_ttl = std::chrono::seconds(10);
  std::chrono::nanoseconds authorization_webhook_cache_unauthorized_ttl = std::chrono::seconds(10);
  // The insecure port: plain HTTP, no authentication, no authorization. 0 (the default): off.
  int port = 0;
  std::string address = "127.0.0.1";  // An IPv4 or IPv6 address.
  // How long SIGTERM waits for in-flight binding cycles before giving up on them.
  int shutdown_grace_seconds = 10;
  // Serve /debug/pods and /debug/simulate. They reveal pod and node names: on the secure port
  // only to callers the apiserver authorizes for the path, on the insecure port to anyone.
  bool enable_debug_endpoints = true;
};

void Usage(std::FILE* out);

// Prints "berth-scheduler: <message>" to stderr and exits 1.
[[noreturn]] void Fail(const std::string& message);

// Exits (0 for --help, 1 for a bad flag) rather than returning on anything but a valid command
// line.
Flags ParseFlags(int argc, char** argv);

// "ip:port", "[ip]:port" for IPv6.
std::string HostPort(const std::string& ip, int port);

// The connection one delegated review goes through: the kubeconfig `path` that `flag` gave, or
// `fallback` when it gave none. Exits, naming the flag and the file, when the file cannot be used.
client::Config DelegatedConfig(const std::string& flag, const std::string& path,
                               const client::Config& fallback);

}  // namespace berth::cmd

#endif  // BERTH_CMD_BERTH_SCHEDULER_OPTIONS_H_
