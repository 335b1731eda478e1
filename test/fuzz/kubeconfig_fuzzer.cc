// Kubeconfig files (pkg/client's LoadKubeconfig): YAML naming clusters, users and contexts, and
// the certificate, key and token files they point at. The input is the kubeconfig; the files it
// names are served from memory (a name with "missing" in it does not exist, one with "empty" in
// it is empty, any other holds a PEM certificate and key), so nothing is read from the disk.
// A loaded config must be one the client accepts or rejects with ConfigError, and Describe(),
// which is logged, must not depend on the secrets it holds.

#include <string>
#include <string_view>

#include "pkg/client/client.h"
#include "pkg/client/curl_transport.h"
#include "pkg/client/http_client.h"
#include "pkg/util/url.h"
#include "test/fuzz/fuzz.h"

namespace berth::fuzz {
namespace {

constexpr char kPath[] = "/fuzz/kubeconfig";
constexpr char kPem[] =
    "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";

void CheckLoaded(const client::Config& config) {
  const util::UrlResult server = util::ParseUrl(config.server);
  Require(server && (server.url->scheme == "https" || server.url->scheme == "http"),
          "a kubeconfig's server is an http(s) URL");
  try {
    client::internal::ParseEndpoint(config);
  } catch (const client::ConfigError&) {
  }
  client::Config masked = config;
  for (std::string* secret :
       {&masked.bearer_token, &masked.client_key_pem, &masked.client_cert_pem, &masked.ca_pem}) {
    if (!secret->empty()) *secret = "masked";
  }
  if (masked.exec) {
    for (auto& [name, value] : masked.exec->env) value = "masked";
  }
  Require(masked.Describe() == config.Describe(), "Describe() shows no secret");
}

}  // namespace

void FuzzOneInput(std::string_view input) {
  const std::string text(input);
  const client::internal::FileReader read = [&](const std::string& path, std::string* content,
                                                std::string* reason) {
    if (path == kPath) {
      *content = text;
    } else if (path.find("missing") != std::string::npos) {
      *reason = "No such file or directory";
      return false;
    } else if (path.find("empty") != std::string::npos) {
      content->clear();
    } else {
      *content = kPem;
    }
    return true;
  };
  for (const char* context : {"", "fuzz"}) {
    try {
      CheckLoaded(client::internal::LoadKubeconfigWith(kPath, context, read));
    } catch (const client::ConfigError& e) {
      Require(std::string_view(e.what()).find(kPath) != std::string_view::npos,
              "a kubeconfig error names the file");
    }
  }
}

}  // namespace berth::fuzz
