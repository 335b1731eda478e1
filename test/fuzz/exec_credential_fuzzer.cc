// What a kubeconfig exec credential plugin prints (pkg/client's ParseExecCredential), for either
// API version, and the RFC 3339 timestamps in it. The first byte picks the version the kubeconfig
// names (bit 0: v1beta1); the rest is the plugin's standard output. A decoded credential carries
// a token or a whole certificate/key pair; anything else is rejected with std::runtime_error.

#include <chrono>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "pkg/client/exec_plugin.h"
#include "pkg/util/time.h"
#include "test/fuzz/fuzz.h"

namespace berth::fuzz {

void FuzzOneInput(std::string_view input) {
  if (input.empty()) return;
  const std::string version = (input.front() & 1) != 0 ? "client.authentication.k8s.io/v1beta1"
                                                       : "client.authentication.k8s.io/v1";
  const std::string_view output = input.substr(1);
  try {
    const client::internal::ExecCredential credential =
        client::internal::ParseExecCredential(output, version);
    Require(!credential.token.empty() || !credential.cert_pem.empty(),
            "a credential carries a token or a certificate");
    Require(credential.cert_pem.empty() == credential.key_pem.empty(),
            "a certificate comes with its key");
  } catch (const std::runtime_error&) {
  }
  // The same bytes as a timestamp: parsing never throws, and accepts only a full date and time.
  const std::optional<std::chrono::system_clock::time_point> time = util::ParseRfc3339(output);
  if (time) {
    Require(output.size() >= 20, "an RFC 3339 timestamp has at least 20 bytes", output);
  }
}

}  // namespace berth::fuzz
