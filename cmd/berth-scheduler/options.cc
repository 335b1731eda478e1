#include "cmd/berth-scheduler/options.h"

#include <arpa/inet.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "pkg/server/server.h"
#include "pkg/util/time.h"

namespace berth::cmd {

void Usage(std::FILE* out) {
  std::fprintf(
      out,
      "usage: berth-scheduler [flags]\n"
      "  --config FILE             KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1,"
      " YAML or JSON)\n"
      "  --kubeconfig FILE         kubeconfig; default: clientConnection.kubeconfig, then "
      "in-cluster, $KUBECONFIG, ~/.kube/config\n"
      "secure serving (/metrics /configz need a client certificate or bearer token whose user a\n"
      "SubjectAccessReview allows; /healthz /livez /readyz are open to all by default):\n"
      "  --secure-port N           HTTPS port (default 10259; 0 turns it off)\n"
      "  --bind-address IP         address of the secure port (default 0.0.0.0)\n"
      "  --tls-cert-file FILE      serve this certificate chain (PEM)...\n"
      "  --tls-private-key-file F  ...and this key (PEM); default: a self-signed pair made at "
      "start, kept in memory\n"
      "  --authorization-always-allow-paths P,...  served without authentication (default\n"
      "                            /healthz,/readyz,/livez; a trailing * matches a prefix)\n"
      "  --client-ca-file FILE     CA certificates (PEM); a client certificate they sign\n"
      "                            authenticates as its CN, groups its O values (read again\n"
      "                            for every connection)\n"
      "  --authentication-kubeconfig FILE  kubeconfig for the TokenReviews (needs create on\n"
      "                            tokenreviews); default: the scheduler's own connection\n"
      "  --authorization-kubeconfig FILE   kubeconfig for the SubjectAccessReviews (needs create\n"
      "                            on subjectaccessreviews); default: the scheduler's own "
      "connection\n"
      "  --authentication-token-webhook-cache-ttl D         how long a token's review is\n"
      "                            remembered (default 10s; 0 turns the cache off)\n"
      "  --authorization-webhook-cache-authorized-ttl D     ...an allowed request's review\n"
      "                            (default 10s; 0: off)\n"
      "  --authorization-webhook-cache-unauthorized-ttl D   ...a denied request's review\n"
      "                            (default 10s; 0: off); D is a Go duration: 10s, 1m30s, 500ms\n"
      "insecure serving (INSECURE: plain HTTP, no authentication or authorization):\n"
      "  --port N                  HTTP port for every endpoint (default 0: off)\n"
      "  --address IP              address of the insecure port (default 127.0.0.1)\n"
      "  --leader-elect BOOL       overrides leaderElection.leaderElect (default true)\n"
      "  -v, --v N                 log verbosity: 0 lifecycle, 2 every scheduling decision, "
      "4 per-plugin detail\n"
      "  --logging-format F        text (default) or json\n"
      "  --shutdown-grace-seconds N  on SIGTERM, wait up to N s for in-flight bindings "
      "(default 10)\n"
      "  --enable-debug-endpoints BOOL  serve /debug/pods (explain) and /debug/simulate\n"
      "                            (default true); they reveal pod and node names to whoever\n"
      "                            may get /debug/* on the secure port, and to anyone on --port\n"
      "  --version                 print the version and exit\n"
      "commands (berth-scheduler COMMAND --help):\n"
      "  explain NAMESPACE/NAME    why a pod is Pending and what would make it fit\n"
      "  simulate -f POD.yaml      a dry run of a pod, on the live scheduler or offline\n");
}

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "berth-scheduler: %s\n", message.c_str());
  std::fflush(nullptr);
  // Not exit(): start-up may have a thread still loading the secure port's TLS, and exit() would
  // tear down OpenSSL and the statics under it. Nothing else needs running before exiting 1.
  std::_Exit(1);
}

namespace {

bool ParseBool(const std::string& flag, const std::string& value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  Fail("flag " + flag + ": expected true or false, got \"" + value + "\"");
}

int ParseInt(const std::string& flag, const std::string& value, int min, int max) {
  char* end = nullptr;
  long n = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || n < min || n > max) {
    Fail("flag " + flag + ": expected an integer " + std::to_string(min) + ".." +
         std::to_string(max) + ", got \"" + value + "\"");
  }
  return static_cast<int>(n);
}

// An IPv4 or IPv6 address, as text.
std::string ParseIp(const std::string& flag, const std::string& value, const std::string& hint) {
  in6_addr buffer{};
  if (inet_pton(AF_INET6, value.c_str(), &buffer) != 1 &&
      inet_pton(AF_INET, value.c_str(), &buffer) != 1) {
    Fail("flag " + flag + ": expected an IP address, got \"" + value + "\"" + hint);
  }
  return value;
}

// Go's time.Duration flag syntax, as kube-scheduler's pflag reads it.
std::chrono::nanoseconds ParseDuration(const std::string& flag, const std::string& value) {
  const std::optional<std::chrono::nanoseconds> duration = util::ParseGoDuration(value);
  if (!duration) {
    Fail("flag " + flag + ": expected a duration such as 10s, 1m30s, 500ms or 0, got \"" + value +
         "\"");
  }
  return *duration;
}

std::vector<std::string> SplitComma(const std::string& value) {
  std::vector<std::string> out;
  if (value.empty()) return out;
  size_t start = 0;
  while (true) {
    const size_t comma = value.find(',', start);
    out.push_back(value.substr(start, comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

}  // namespace

std::string HostPort(const std::string& ip, int port) {
  const bool v6 = ip.find(':') != std::string::npos;
  return (v6 ? "[" + ip + "]" : ip) + ":" + std::to_string(port);
}

client::Config DelegatedConfig(const std::string& flag, const std::string& path,
                               const client::Config& fallback) {
  if (path.empty()) return fallback;
  try {
    return client::LoadKubeconfig(path);
  } catch (const std::exception& e) {
    Fail("flag " + flag + ": " + e.what());
  }
}

bool ArgReader::Next() {
  if (next_ >= argc_) return false;
  arg_ = argv_[next_++];
  value_.clear();
  has_value_ = false;
  if (auto eq = arg_.find('='); arg_.rfind("--", 0) == 0 && eq != std::string::npos) {
    value_ = arg_.substr(eq + 1);
    arg_.resize(eq);
    has_value_ = true;
  }
  return true;
}

std::string ArgReader::Value() {
  if (has_value_) return value_;
  if (next_ >= argc_) throw UsageError("flag " + arg_ + " needs a value");
  return argv_[next_++];
}

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  ArgReader args(argc, argv, 1);
  while (args.Next()) {
    const std::string& arg = args.arg();
    const bool has_value = args.has_value();
    const std::string& value = args.inline_value();
    auto take = [&args]() -> std::string {
      try {
        return args.Value();
      } catch (const UsageError& e) {
        Fail(e.what());
      }
    };
    if (arg == "--config") {
      flags.config = take();
    } else if (arg == "--kubeconfig") {
      flags.kubeconfig = take();
    } else if (arg == "-v" || arg == "--v") {
      flags.verbosity = ParseInt(arg, take(), 0, 10);
    } else if (arg == "--logging-format") {
      flags.logging_format = take();
      if (flags.logging_format != "text" && flags.logging_format != "json") {
        Fail("flag --logging-format: expected text or json, got \"" + flags.logging_format + "\"");
      }
    } else if (arg == "--leader-elect") {
      flags.leader_elect_set = true;
      flags.leader_elect = has_value ? ParseBool(arg, value) : true;
    } else if (arg == "--secure-port") {
      flags.secure_port = ParseInt(arg, take(), 0, 65535);
    } else if (arg == "--bind-address") {
      // The flag once took host:port for a plain-HTTP listener; say where that went.
      flags.bind_address = ParseIp(arg, take(),
                                   " (the secure port is --secure-port; plain HTTP, if you must, "
                                   "is --port with --address)");
    } else if (arg == "--port") {
      flags.port = ParseInt(arg, take(), 0, 65535);
    } else if (arg == "--address") {
      flags.address = ParseIp(arg, take(), "");
    } else if (arg == "--authorization-always-allow-paths") {
      flags.authorization_always_allow_paths = SplitComma(take());
    } else if (arg == "--authentication-kubeconfig") {
      flags.authentication_kubeconfig = take();
    } else if (arg == "--authorization-kubeconfig") {
      flags.authorization_kubeconfig = take();
    } else if (arg == "--authentication-token-webhook-cache-ttl") {
      flags.authentication_token_webhook_cache_ttl = ParseDuration(arg, take());
    } else if (arg == "--authorization-webhook-cache-authorized-ttl") {
      flags.authorization_webhook_cache_authorized_ttl = ParseDuration(arg, take());
    } else if (arg == "--authorization-webhook-cache-unauthorized-ttl") {
      flags.authorization_webhook_cache_unauthorized_ttl = ParseDuration(arg, take());
    } else if (arg == "--client-ca-file") {
      flags.client_ca_file = take();
      try {
        server::CheckClientCaFile(flags.client_ca_file);
      } catch (const server::ServerError& e) {
        Fail(std::string("flag ") + e.what());
      }
    } else if (arg == "--tls-cert-file") {
      flags.tls_cert_file = take();
    } else if (arg == "--tls-private-key-file") {
      flags.tls_private_key_file = take();
    } else if (arg == "--shutdown-grace-seconds") {
      flags.shutdown_grace_seconds = ParseInt(arg, take(), 0, 3600);
    } else if (arg == "--enable-debug-endpoints") {
      flags.enable_debug_endpoints = has_value ? ParseBool(arg, value) : true;
    } else if (arg == "--version") {
      flags.version = true;
    } else if (arg == "-h" || arg == "--help") {
      Usage(stdout);
      std::exit(0);
    } else {
      Usage(stderr);
      Fail("unknown flag " + arg);
    }
  }
  return flags;
}

}  // namespace berth::cmd
