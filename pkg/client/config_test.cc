#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "pkg/client/client.h"
#include "pkg/client/http_client.h"
#include "pkg/util/base64.h"
#include "test/testing/client_test_util.h"

namespace berth::client {
namespace {

using ::berth::client::testing::ScopedEnv;
using ::berth::client::testing::TempDir;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kCaPem[] = "-----BEGIN CERTIFICATE-----\nQ0EtY2VydA==\n-----END CERTIFICATE-----\n";
constexpr char kCertPem[] =
    "-----BEGIN CERTIFICATE-----\nY2xpZW50LWNlcnQ=\n-----END CERTIFICATE-----\n";
constexpr char kKeyPem[] =
    "-----BEGIN PRIVATE KEY-----\nY2xpZW50LWtleQ==\n-----END PRIVATE KEY-----\n";

// A kubeconfig with one context "ctx" -> cluster "c" + user "u", the given cluster and user
// bodies (YAML mappings indented by 4 spaces).
std::string Kubeconfig(const std::string& cluster, const std::string& user,
                       const std::string& current_context = "ctx") {
  std::string text = "apiVersion: v1\nkind: Config\n";
  if (!current_context.empty()) text += "current-context: " + current_context + "\n";
  text +=
      "contexts:\n"
      "- name: ctx\n"
      "  context:\n"
      "    cluster: c\n"
      "    user: u\n"
      "clusters:\n"
      "- name: c\n"
      "  cluster:\n" +
      cluster +
      "users:\n"
      "- name: u\n"
      "  user:\n" +
      user;
  return text;
}

constexpr char kServer[] = "    server: https://127.0.0.1:6443\n";

std::string ErrorOf(const std::string& path, const std::string& context = "") {
  try {
    LoadKubeconfig(path, context);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(KubeconfigTest, CertificateAuthorityFileResolvesRelativeToKubeconfigDir) {
  TempDir dir;
  dir.Write("pki/ca.crt", kCaPem);
  const std::string path =
      dir.Write("conf/kubeconfig",
                Kubeconfig(std::string(kServer) + "    certificate-authority: ../pki/ca.crt\n",
                           "    token: abc\n"));
  const Config config = LoadKubeconfig(path);
  EXPECT_EQ(config.server, "https://127.0.0.1:6443");
  EXPECT_EQ(config.ca_pem, kCaPem);
  EXPECT_FALSE(config.insecure_skip_tls_verify);
}

TEST(KubeconfigTest, CertificateAuthorityData) {
  TempDir dir;
  const std::string path =
      dir.Write("kubeconfig", Kubeconfig(std::string(kServer) + "    certificate-authority-data: " +
                                             util::Base64Encode(kCaPem) + "\n",
                                         "    token: abc\n"));
  EXPECT_EQ(LoadKubeconfig(path).ca_pem, kCaPem);
}

TEST(KubeconfigTest, InsecureSkipTlsVerifyAndServerName) {
  TempDir dir;
  const std::string path = dir.Write(
      "kubeconfig", Kubeconfig(std::string(kServer) + "    insecure-skip-tls-verify: true\n"
                                                      "    tls-server-name: kubernetes.default\n",
                               "    token: abc\n"));
  const Config config = LoadKubeconfig(path);
  EXPECT_TRUE(config.insecure_skip_tls_verify);
  EXPECT_EQ(config.tls_server_name, "kubernetes.default");
  EXPECT_TRUE(config.ca_pem.empty());
}

TEST(KubeconfigTest, Token) {
  TempDir dir;
  const std::string path =
      dir.Write("kubeconfig", Kubeconfig(kServer, "    token: s3cr3t-token\n"));
  const Config config = LoadKubeconfig(path);
  EXPECT_EQ(config.bearer_token, "s3cr3t-token");
  EXPECT_TRUE(config.bearer_token_file.empty());
}

TEST(KubeconfigTest, TokenFileRelativePath) {
  TempDir dir;
  dir.Write("tokens/t", "file-token\n");
  const std::string path =
      dir.Write("kubeconfig", Kubeconfig(kServer, "    tokenFile: tokens/t\n"));
  const Config config = LoadKubeconfig(path);
  EXPECT_EQ(config.bearer_token_file, dir.Join("tokens/t"));
}

TEST(KubeconfigTest, UnreadableTokenFileNamesFieldAndPath) {
  TempDir dir;
  const std::string path = dir.Write("kubeconfig", Kubeconfig(kServer, "    tokenFile: nope\n"));
  EXPECT_THAT(ErrorOf(path),
              AllOf(HasSubstr("kubeconfig " + path), HasSubstr("users[name=u].user.tokenFile"),
                    HasSubstr(dir.Join("nope"))));
}

// Found by fuzzing: an exec extension's key that was not UTF-8 threw out of the loader while it
// was written as JSON for the plugin.
TEST(KubeconfigTest, NotUtf8IsAnErrorNamingTheFile) {
  TempDir dir;
  const std::string path =
      dir.Write("kubeconfig", Kubeconfig(kServer, "    token: t\n") +
                                  "extensions:\n- name: x\n  extension:\n    audi\xe9nce: a\n");
  EXPECT_THAT(ErrorOf(path), AllOf(HasSubstr("kubeconfig " + path), HasSubstr("not valid UTF-8")));
}

// client-go decodes the kubeconfig with go-yaml v2's YAML 1.1 rules, so plain scalars such as yes
// and 0x1f reach the exec plugin as a boolean and a number.
TEST(KubeconfigTest, ExecExtensionScalarsResolveAsClientGoResolvesThem) {
  TempDir dir;
  const std::string path =
      dir.Write("kubeconfig",
                Kubeconfig(std::string(kServer) + "    extensions:\n"
                                                  "    - name: client.authentication.k8s.io/exec\n"
                                                  "      extension:\n"
                                                  "        enabled: yes\n"
                                                  "        mask: 0x1f\n"
                                                  "        unset: ~\n"
                                                  "        words: [on, 'on', 1.5]\n",
                           "    exec:\n"
                           "      apiVersion: client.authentication.k8s.io/v1\n"
                           "      command: get-token\n"
                           "      interactiveMode: Never\n"
                           "      provideClusterInfo: true\n"));
  const Config config = LoadKubeconfig(path);
  ASSERT_TRUE(config.exec.has_value());
  EXPECT_EQ(nlohmann::json::parse(config.exec->cluster_config_json),
            nlohmann::json::parse(
                R"({"enabled": true, "mask": 31, "unset": null, "words": [true, "on", 1.5]})"));
}

// The extension is free-form, so its depth is bounded: aliases can make a small file a deep tree.
TEST(KubeconfigTest, ExecExtensionNestedTooDeepIsAnErrorNamingTheField) {
  TempDir dir;
  const std::string nested = std::string(80, '[') + std::string(80, ']');
  const std::string path =
      dir.Write("kubeconfig", Kubeconfig(std::string(kServer) +
                                             "    extensions:\n"
                                             "    - name: client.authentication.k8s.io/exec\n"
                                             "      extension: {deep: " +
                                             nested + "}\n",
                                         "    token: t\n"));
  EXPECT_THAT(ErrorOf(path),
              AllOf(HasSubstr("kubeconfig " + path),
                    HasSubstr("clusters[name=c].cluster.extensions[].extension.deep"),
                    HasSubstr("nested more than 64 levels deep")));
}

TEST(KubeconfigTest, ClientCertificateAndKeyFiles) {
  TempDir dir;
  dir.Write("client.crt", kCertPem);
  dir.Write("client.key", kKeyPem);
  const std::string path = dir.Write(
      "kubeconfig",
      Kubeconfig(kServer, "    client-certificate: client.crt\n    client-key: client.key\n"));
  const Config config = LoadKubeconfig(path);
  EXPECT_EQ(config.client_cert_pem, kCertPem);
  EXPECT_EQ(config.client_key_pem, kKeyPem);
  // Kept so that the client re-reads them once they rotate.
  EXPECT_EQ(config.client_cert_file, dir.Join("client.crt"));
  EXPECT_EQ(config.client_key_file, dir.Join("client.key"));
}

TEST(KubeconfigTest, ClientCertificateAndKeyData) {
  TempDir dir;
  const std::string path = dir.Write(
      "kubeconfig",
      Kubeconfig(kServer, "    client-certificate-data: " + util::Base64Encode(kCertPem) +
                              "\n    client-key-data: " + util::Base64Encode(kKeyPem) + "\n"));
  const Config config = LoadKubeconfig(path);
  EXPECT_EQ(config.client_cert_pem, kCertPem);
  EXPECT_EQ(config.client_key_pem, kKeyPem);
  EXPECT_TRUE(config.client_cert_file.empty());
}

TEST(KubeconfigTest, ClientCertificateWithoutKeyIsAnError) {
  TempDir dir;
  const std::string path = dir.Write(
      "kubeconfig",
      Kubeconfig(kServer, "    client-certificate-data: " + util::Base64Encode(kCertPem) + "\n"));
  EXPECT_THAT(ErrorOf(path), HasSubstr("client-key must be given together"));
}

TEST(KubeconfigTest, ExplicitContextWinsOverCurrentContext) {
  TempDir dir;
  const std::string path = dir.Write("kubeconfig",
                                     "current-context: a\n"
                                     "contexts:\n"
                                     "- name: a\n"
                                     "  context: {cluster: ca, user: ua}\n"
                                     "- name: b\n"
                                     "  context: {cluster: cb, user: ub}\n"
                                     "clusters:\n"
                                     "- name: ca\n"
                                     "  cluster: {server: 'https://a.example:6443'}\n"
                                     "- name: cb\n"
                                     "  cluster: {server: 'https://b.example:6443'}\n"
                                     "users:\n"
                                     "- name: ua\n"
                                     "  user: {token: ta}\n"
                                     "- name: ub\n"
                                     "  user: {token: tb}\n");
  EXPECT_EQ(LoadKubeconfig(path).server, "https://a.example:6443");
  const Config b = LoadKubeconfig(path, "b");
  EXPECT_EQ(b.server, "https://b.example:6443");
  EXPECT_EQ(b.bearer_token, "tb");
  EXPECT_THAT(ErrorOf(path, "c"), HasSubstr("contexts[name=c].context: no such context"));
}

TEST(KubeconfigTest, MissingCurrentContext) {
  TempDir dir;
  const std::string path = dir.Write("kubeconfig", Kubeconfig(kServer, "    token: t\n", ""));
  EXPECT_THAT(ErrorOf(path), AllOf(HasSubstr("kubeconfig " + path), HasSubstr("current-context")));
  // An explicit context still works without current-context.
  EXPECT_EQ(LoadKubeconfig(path, "ctx").bearer_token, "t");
}

TEST(KubeconfigTest, MissingCluster) {
  TempDir dir;
  const std::string path = dir.Write("kubeconfig",
                                     "current-context: ctx\n"
                                     "contexts:\n"
                                     "- name: ctx\n"
                                     "  context: {cluster: nope, user: u}\n"
                                     "clusters: []\n"
                                     "users:\n"
                                     "- name: u\n"
                                     "  user: {token: t}\n");
  EXPECT_THAT(ErrorOf(path), AllOf(HasSubstr("kubeconfig " + path),
                                   HasSubstr("clusters[name=nope]: no such cluster")));
}

TEST(KubeconfigTest, MissingUser) {
  TempDir dir;
  const std::string path = dir.Write("kubeconfig",
                                     "current-context: ctx\n"
                                     "contexts:\n"
                                     "- name: ctx\n"
                                     "  context: {cluster: c, user: ghost}\n"
                                     "clusters:\n"
                                     "- name: c\n"
                                     "  cluster: {server: 'https://x:1'}\n");
  EXPECT_THAT(ErrorOf(path), HasSubstr("users[name=ghost]: no such user"));
}

TEST(KubeconfigTest, MissingServer) {
  TempDir dir;
  const std::string path =
      dir.Write("kubeconfig", Kubeconfig("    insecure-skip-tls-verify: true\n", "    token: t\n"));
  EXPECT_THAT(ErrorOf(path), HasSubstr("clusters[name=c].cluster.server: not set"));
}

TEST(KubeconfigTest, ExecPluginWithEverySetting) {
  TempDir dir;
  const std::string path =
      dir.Write("conf/kubeconfig",
                Kubeconfig(std::string(kServer) + "    extensions:\n"
                                                  "    - name: client.authentication.k8s.io/exec\n"
                                                  "      extension:\n"
                                                  "        audience: berth\n"
                                                  "        retries: 3\n"
                                                  "        quoted: '3'\n",
                           "    exec:\n"
                           "      apiVersion: client.authentication.k8s.io/v1\n"
                           "      command: bin/get-token\n"
                           "      args: [--cluster, prod]\n"
                           "      env:\n"
                           "      - {name: REGION, value: eu-west-1}\n"
                           "      installHint: install get-token\n"
                           "      interactiveMode: IfAvailable\n"
                           "      provideClusterInfo: true\n"));
  const Config config = LoadKubeconfig(path);
  ASSERT_TRUE(config.exec.has_value());
  const ExecConfig& exec = *config.exec;
  EXPECT_EQ(exec.api_version, "client.authentication.k8s.io/v1");
  // A command with a '/' is relative to the kubeconfig's directory, as in client-go.
  EXPECT_EQ(exec.command, dir.Join("conf/bin/get-token"));
  EXPECT_EQ(exec.args, (std::vector<std::string>{"--cluster", "prod"}));
  ASSERT_EQ(exec.env.size(), 1u);
  EXPECT_EQ(exec.env[0], std::make_pair(std::string("REGION"), std::string("eu-west-1")));
  EXPECT_EQ(exec.install_hint, "install get-token");
  EXPECT_TRUE(exec.provide_cluster_info);
  EXPECT_EQ(nlohmann::json::parse(exec.cluster_config_json),
            nlohmann::json({{"audience", "berth"}, {"retries", 3}, {"quoted", "3"}}));
  EXPECT_EQ(exec.origin, "kubeconfig " + path + ": users[name=u].user.exec");
  EXPECT_THAT(config.Describe(), HasSubstr("auth=exec(" + dir.Join("conf/bin/get-token") + ")"));
}

TEST(KubeconfigTest, ExecCommandWithoutASlashIsLeftForPath) {
  TempDir dir;
  const std::string path =
      dir.Write("kubeconfig", Kubeconfig(kServer,
                                         "    exec:\n"
                                         "      apiVersion: client.authentication.k8s.io/v1beta1\n"
                                         "      command: aws\n"));
  const Config config = LoadKubeconfig(path);
  ASSERT_TRUE(config.exec.has_value());
  // v1beta1 needs no interactiveMode (client-go defaults it to IfAvailable).
  EXPECT_EQ(config.exec->command, "aws");
}

TEST(KubeconfigTest, ExecPluginMistakesNameTheField) {
  TempDir dir;
  const auto error_for = [&](const std::string& exec, const std::string& extra_user = "") {
    return ErrorOf(dir.Write("kubeconfig", Kubeconfig(kServer, extra_user + "    exec:\n" + exec)));
  };
  const std::string v1 = "      apiVersion: client.authentication.k8s.io/v1\n";
  EXPECT_THAT(error_for(v1 + "      command: aws\n"),
              HasSubstr("users[name=u].user.exec.interactiveMode: must be set for "
                        "client.authentication.k8s.io/v1"));
  EXPECT_THAT(error_for(v1 + "      command: aws\n      interactiveMode: Always\n"),
              HasSubstr("users[name=u].user.exec.interactiveMode: Always needs a terminal"));
  EXPECT_THAT(error_for(v1 + "      command: aws\n      interactiveMode: Sometimes\n"),
              HasSubstr("\"Sometimes\" is not Never, IfAvailable or Always"));
  EXPECT_THAT(error_for(v1 + "      interactiveMode: Never\n"),
              HasSubstr("users[name=u].user.exec.command: not set"));
  EXPECT_THAT(error_for("      apiVersion: client.authentication.k8s.io/v1alpha1\n"
                        "      command: aws\n"),
              HasSubstr("users[name=u].user.exec.apiVersion: \"client.authentication.k8s.io/"
                        "v1alpha1\" is not supported"));
  EXPECT_THAT(error_for(v1 + "      command: aws\n      interactiveMode: Never\n"
                             "      env:\n      - {value: x}\n"),
              HasSubstr("users[name=u].user.exec.env[].name: not set"));
  EXPECT_THAT(
      error_for(v1 + "      command: aws\n      interactiveMode: Never\n", "    token: t\n"),
      HasSubstr("users[name=u].user.exec: an exec plugin together with a token"));
}

TEST(KubeconfigTest, ProxyUrl) {
  TempDir dir;
  const std::string path = dir.Write(
      "kubeconfig",
      Kubeconfig(std::string(kServer) + "    proxy-url: http://user:secret@proxy.corp:3128\n",
                 "    token: t\n"));
  const Config config = LoadKubeconfig(path);
  EXPECT_EQ(config.proxy_url, "http://user:secret@proxy.corp:3128");
  EXPECT_THAT(config.Describe(),
              AllOf(HasSubstr("proxy=http://proxy.corp:3128"), Not(HasSubstr("secret"))));

  const std::string bad = dir.Write(
      "bad",
      Kubeconfig(std::string(kServer) + "    proxy-url: ftp://proxy.corp\n", "    token: t\n"));
  EXPECT_THAT(ErrorOf(bad), AllOf(HasSubstr("clusters[name=c].cluster.proxy-url"),
                                  HasSubstr("unsupported scheme")));
}

TEST(KubeconfigTest, AuthProviderIsRejected) {
  TempDir dir;
  const std::string path =
      dir.Write("kubeconfig", Kubeconfig(kServer, "    auth-provider:\n      name: gcp\n"));
  EXPECT_THAT(ErrorOf(path),
              AllOf(HasSubstr("kubeconfig " + path), HasSubstr("users[name=u].user.auth-provider"),
                    HasSubstr("not supported")));
}

TEST(KubeconfigTest, BasicAuthIsRejected) {
  TempDir dir;
  const std::string path =
      dir.Write("kubeconfig", Kubeconfig(kServer, "    username: admin\n    password: hunter2\n"));
  const std::string error = ErrorOf(path);
  EXPECT_THAT(error, HasSubstr("users[name=u].user.username"));
  EXPECT_THAT(error, Not(HasSubstr("hunter2")));
}

TEST(KubeconfigTest, BadBase64IsAnError) {
  TempDir dir;
  const std::string path =
      dir.Write("kubeconfig",
                Kubeconfig(std::string(kServer) + "    certificate-authority-data: '!!notbase64'\n",
                           "    token: t\n"));
  EXPECT_THAT(
      ErrorOf(path),
      AllOf(HasSubstr("kubeconfig " + path),
            HasSubstr("clusters[name=c].cluster.certificate-authority-data: invalid base64")));
}

TEST(KubeconfigTest, CaDataThatIsNotPemIsAnError) {
  TempDir dir;
  const std::string path =
      dir.Write("kubeconfig", Kubeconfig(std::string(kServer) + "    certificate-authority-data: " +
                                             util::Base64Encode("hello") + "\n",
                                         "    token: t\n"));
  EXPECT_THAT(ErrorOf(path), HasSubstr("certificate-authority-data: does not contain a PEM"));
}

TEST(KubeconfigTest, UnreadableCaFileNamesFieldAndPath) {
  TempDir dir;
  const std::string path = dir.Write(
      "kubeconfig", Kubeconfig(std::string(kServer) + "    certificate-authority: missing.crt\n",
                               "    token: t\n"));
  EXPECT_THAT(ErrorOf(path), AllOf(HasSubstr("clusters[name=c].cluster.certificate-authority"),
                                   HasSubstr(dir.Join("missing.crt"))));
}

TEST(KubeconfigTest, PlainHttpServerWithCredentialsIsRejected) {
  TempDir dir;
  const std::string path =
      dir.Write("kubeconfig", Kubeconfig("    server: http://127.0.0.1:8080\n", "    token: t\n"));
  EXPECT_THAT(ErrorOf(path),
              AllOf(HasSubstr("clusters[name=c].cluster.server"), HasSubstr("clear text")));
  // The refusal does not show userinfo, a credential itself.
  const std::string with_userinfo = dir.Write(
      "userinfo", Kubeconfig("    server: http://u:secret@127.0.0.1:8080\n", "    token: t\n"));
  EXPECT_THAT(ErrorOf(with_userinfo), AllOf(HasSubstr("clear text"), Not(HasSubstr("secret"))));
}

// The server is read as libcurl (and Go's url.Parse) reads it: the scheme in any case, and a
// server libcurl cannot use is refused when the kubeconfig loads, naming the field.
TEST(KubeconfigTest, ServerIsReadAsAUrl) {
  TempDir dir;
  const std::string upper =
      dir.Write("upper", Kubeconfig("    server: HTTPS://127.0.0.1:6443\n", "    token: t\n"));
  EXPECT_EQ(LoadKubeconfig(upper).server, "HTTPS://127.0.0.1:6443");
  for (const char* server : {"https://[::1", "https://[zzz]:6443", "https://a b:6443"}) {
    const std::string bad = dir.Write(
        "bad", Kubeconfig("    server: '" + std::string(server) + "'\n", "    token: t\n"));
    EXPECT_THAT(ErrorOf(bad), HasSubstr("clusters[name=c].cluster.server")) << server;
  }
}

TEST(KubeconfigTest, UnreadableKubeconfig) {
  TempDir dir;
  EXPECT_THAT(ErrorOf(dir.Join("absent")),
              AllOf(HasSubstr("kubeconfig " + dir.Join("absent")), HasSubstr("cannot read")));
}

TEST(KubeconfigTest, InvalidYaml) {
  TempDir dir;
  const std::string path = dir.Write("kubeconfig", "clusters: [\n");
  EXPECT_THAT(ErrorOf(path), HasSubstr("invalid YAML"));
}

TEST(InClusterConfigTest, Ipv6HostGetsBrackets) {
  TempDir dir;
  dir.Write("token", "sa-token\n");
  dir.Write("ca.crt", kCaPem);
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "fd00::1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  const Config config = InClusterConfig(dir.path());
  EXPECT_EQ(config.server, "https://[fd00::1]:443");
  EXPECT_EQ(config.bearer_token_file, dir.Join("token"));
  EXPECT_TRUE(config.bearer_token.empty());
  EXPECT_EQ(config.ca_pem, kCaPem);
}

TEST(InClusterConfigTest, Ipv4Host) {
  TempDir dir;
  dir.Write("token", "sa-token");
  dir.Write("ca.crt", kCaPem);
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "6443");
  EXPECT_EQ(InClusterConfig(dir.path()).server, "https://10.96.0.1:6443");
}

// KUBERNETES_SERVICE_HOST and _PORT go into the URL through libcurl, which checks them: a value
// that would put a path, userinfo or a bad port into the server URL is refused here, naming them.
TEST(InClusterConfigTest, MalformedHostOrPortIsRefused) {
  TempDir dir;
  dir.Write("token", "sa-token");
  dir.Write("ca.crt", kCaPem);
  for (const auto& [host_value, port_value] :
       std::vector<std::pair<std::string, std::string>>{{"10.0.0.1", "abc"},
                                                        {"10.0.0.1", "99999"},
                                                        {"evil@10.0.0.1", "443"},
                                                        {"10.0.0.1/path", "443"},
                                                        {"fd00::zz", "443"}}) {
    ScopedEnv host("KUBERNETES_SERVICE_HOST", host_value);
    ScopedEnv port("KUBERNETES_SERVICE_PORT", port_value);
    EXPECT_THAT([&] { InClusterConfig(dir.path()); },
                ::testing::ThrowsMessage<ConfigError>(HasSubstr("KUBERNETES_SERVICE_")))
        << host_value << " " << port_value;
  }
}

TEST(InClusterConfigTest, MissingEnvironmentOrFiles) {
  TempDir dir;
  {
    ScopedEnv host("KUBERNETES_SERVICE_HOST", std::nullopt);
    ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
    EXPECT_THROW(InClusterConfig(dir.path()), ConfigError);
  }
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.0.0.1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  try {
    InClusterConfig(dir.path());
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr(dir.Join("token")));
  }
  dir.Write("token", "t");
  try {
    InClusterConfig(dir.path());
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr(dir.Join("ca.crt")));
  }
}

TEST(LoadConfigTest, ExplicitPathThenInClusterThenKubeconfigEnv) {
  TempDir dir;
  const std::string explicit_path =
      dir.Write("explicit", Kubeconfig("    server: https://explicit:1\n", "    token: t\n"));
  const std::string env_path =
      dir.Write("env", Kubeconfig("    server: https://from-env:1\n", "    token: t\n"));
  ScopedEnv kubeconfig("KUBECONFIG", env_path);
  ScopedEnv host("KUBERNETES_SERVICE_HOST", std::nullopt);
  EXPECT_EQ(LoadConfig(explicit_path).server, "https://explicit:1");
  EXPECT_EQ(LoadConfig("").server, "https://from-env:1");

  dir.Write("sa/token", "t");
  dir.Write("sa/ca.crt", kCaPem);
  ScopedEnv in_cluster_host("KUBERNETES_SERVICE_HOST", "10.0.0.1");
  ScopedEnv in_cluster_port("KUBERNETES_SERVICE_PORT", "443");
  // In-cluster wins over $KUBECONFIG; the default service-account dir does not exist here.
  if (std::filesystem::exists("/var/run/secrets/kubernetes.io/serviceaccount/token")) {
    GTEST_SKIP() << "running inside a pod: the default service account directory exists";
  }
  EXPECT_THAT([] { LoadConfig(""); },
              ::testing::ThrowsMessage<ConfigError>(HasSubstr("in-cluster config")));
}

TEST(ConfigDescribeTest, NeverShowsSecrets) {
  Config config;
  config.server = "https://127.0.0.1:6443";
  config.bearer_token = "super-secret-token";
  config.client_key_pem = kKeyPem;
  config.ca_pem = kCaPem;
  const std::string with_token = config.Describe();
  EXPECT_THAT(with_token, AllOf(HasSubstr("server=https://127.0.0.1:6443"), HasSubstr("auth=token"),
                                HasSubstr("ca=custom"), Not(HasSubstr("super-secret-token")),
                                Not(HasSubstr("PRIVATE KEY"))));

  config.client_cert_pem = kCertPem;
  EXPECT_THAT(config.Describe(),
              AllOf(HasSubstr("auth=client-certificate"), Not(HasSubstr("super-secret-token")),
                    Not(HasSubstr("Y2xpZW50LWtleQ"))));

  config.server = "https://admin:pw@10.0.0.1:6443/";
  EXPECT_THAT(config.Describe(),
              AllOf(HasSubstr("server=https://10.0.0.1:6443/"), Not(HasSubstr("pw"))));
}

}  // namespace
}  // namespace berth::client
