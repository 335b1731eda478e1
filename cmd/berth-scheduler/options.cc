#include "cmd/berth-scheduler/options.h"

#include <cstdlib>
#include <string>

namespace berth::cmd {

void Usage(std::FILE* out) {
  std::fprintf(
      out,
      "usage: berth-scheduler [flags]\n"
      "  --config FILE             KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1,"
      " YAML or JSON)\n"
      "  --kubeconfig FILE         kubeconfig; default: clientConnection.kubeconfig, then "
      "in-cluster, $KUBECONFIG, ~/.kube/config\n"
      "  --bind-address HOST:PORT  serves /metrics /healthz /livez /readyz /configz "
      "(default 0.0.0.0:10251)\n"
      "  --tls-cert-file FILE      serve HTTPS with this certificate chain (PEM)...\n"
      "  --tls-private-key-file F  ...and this key (PEM)\n"
      "  --leader-elect BOOL       overrides leaderElection.leaderElect (default true)\n"
      "  -v, --v N                 log verbosity: 0 lifecycle, 2 every scheduling decision, "
      "4 per-plugin detail\n"
      "  --logging-format F        text (default) or json\n"
      "  --shutdown-grace-seconds N  on SIGTERM, wait up to N s for in-flight bindings "
      "(default 10)\n"
      "  --enable-debug-endpoints  serve /debug/pods (explain) and /debug/simulate; they\n"
      "                            reveal pod and node names to anyone who reaches the port\n"
      "  --version                 print the version and exit\n"
      "commands (berth-scheduler COMMAND --help):\n"
      "  explain NAMESPACE/NAME    why a pod is Pending and what would make it fit\n"
      "  simulate -f POD.yaml      a dry run of a pod, on the live scheduler or offline\n");
}

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "berth-scheduler: %s\n", message.c_str());
  std::exit(1);
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

}  // namespace

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    std::string value;
    bool has_value = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    auto take = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= argc) Fail("flag " + arg + " needs a value");
      return argv[++i];
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
    } else if (arg == "--bind-address") {
      flags.bind_address = take();
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
