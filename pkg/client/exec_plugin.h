#ifndef BERTH_PKG_CLIENT_EXEC_PLUGIN_H_
#define BERTH_PKG_CLIENT_EXEC_PLUGIN_H_

// Kubeconfig exec credential plugins (client.authentication.k8s.io/v1 and v1beta1), run the way
// client-go runs them. Internal to pkg/client and its unit tests.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "pkg/client/client.h"

namespace berth::client::internal {

// A plugin run that has not ended this long after its start, its output closed or not, is killed
// with its process group: requests wait on it, and cloud plugins (aws eks get-token,
// gke-gcloud-auth-plugin, kubelogin) answer within seconds once their own login is cached.
inline constexpr std::chrono::seconds kExecPluginTimeout{60};
// More output than any ExecCredential (a token or a PEM key pair) needs.
inline constexpr size_t kMaxExecOutputBytes = size_t{1} << 20;

// What one run of a plugin supplied. At least a token or a certificate/key pair.
struct ExecCredential {
  std::string token;
  std::string cert_pem;
  std::string key_pem;
  // When to run the plugin again; none: only after a 401.
  std::optional<std::chrono::system_clock::time_point> expiry;
};

// The KUBERNETES_EXEC_INFO value for `config`'s plugin: an ExecCredential of its apiVersion with
// spec.interactive false and, when it asked for it, spec.cluster.
std::string ExecInfo(const Config& config);

// Decodes a plugin's standard output; throws std::runtime_error saying what is wrong.
ExecCredential ParseExecCredential(std::string_view output, const std::string& api_version);

// Runs `config.exec` once, with Berth's environment plus its env and KUBERNETES_EXEC_INFO,
// standard input from /dev/null, standard error passed through, no signal blocked, every signal's
// default action and a process group of its own, and decodes what it prints. Throws
// ApiError(kUnauthorized, 0) naming the kubeconfig field when the command is missing (with its
// installHint), fails, has not exited within `timeout` (it and its process group are then
// killed) or prints no usable ExecCredential.
ExecCredential RunExecPlugin(const Config& config,
                             std::chrono::milliseconds timeout = kExecPluginTimeout);

}  // namespace berth::client::internal

#endif  // BERTH_PKG_CLIENT_EXEC_PLUGIN_H_
