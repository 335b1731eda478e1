#include "cmd/berth-scheduler/options.h"

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace berth::cmd {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

// ParseFlags on "berth-scheduler <args...>".
Flags Parse(std::initializer_list<std::string> args) {
  std::vector<std::string> storage = {"berth-scheduler"};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(storage.size());
  for (std::string& arg : storage) argv.push_back(arg.data());
  return ParseFlags(static_cast<int>(argv.size()), argv.data());
}

std::string UsageText() {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(std::tmpfile(), &std::fclose);
  Usage(out.get());
  std::rewind(out.get());
  std::string text;
  std::array<char, 4096> chunk{};
  while (const size_t n = std::fread(chunk.data(), 1, chunk.size(), out.get())) {
    text.append(chunk.data(), n);
  }
  return text;
}

TEST(OptionsTest, DelegatedAuthDefaultsAreKubeSchedulers) {
  const Flags flags = Parse({});
  EXPECT_EQ(flags.authentication_token_webhook_cache_ttl, seconds(10));
  EXPECT_EQ(flags.authorization_webhook_cache_authorized_ttl, seconds(10));
  EXPECT_EQ(flags.authorization_webhook_cache_unauthorized_ttl, seconds(10));
  EXPECT_EQ(flags.authentication_kubeconfig, "");
  EXPECT_EQ(flags.authorization_kubeconfig, "");
}

TEST(OptionsTest, CacheTtlsAreGoDurations) {
  const Flags flags = Parse({"--authentication-token-webhook-cache-ttl=1m30s",
                             "--authorization-webhook-cache-authorized-ttl", "0",
                             "--authorization-webhook-cache-unauthorized-ttl=500ms"});
  EXPECT_EQ(flags.authentication_token_webhook_cache_ttl, seconds(90));
  EXPECT_EQ(flags.authorization_webhook_cache_authorized_ttl, nanoseconds(0));
  EXPECT_EQ(flags.authorization_webhook_cache_unauthorized_ttl, milliseconds(500));
  // Negative is a duration too, and, as upstream, caches nothing.
  EXPECT_EQ(Parse({"--authorization-webhook-cache-authorized-ttl=-1s"})
                .authorization_webhook_cache_authorized_ttl,
            -seconds(1));
}

TEST(OptionsTest, AMalformedCacheTtlExitsNamingTheFlagAndTheForm) {
  for (const std::string flag :
       {"--authentication-token-webhook-cache-ttl", "--authorization-webhook-cache-authorized-ttl",
        "--authorization-webhook-cache-unauthorized-ttl"}) {
    for (const std::string value : {"10", "ten", "", "1x", "10 s", "9999999999h"}) {
      std::string arg = flag;
      arg += "=";
      arg += value;
      std::string message = "berth-scheduler: flag " + flag;
      message += ": expected a duration such as 10s, 1m30s, 500ms or 0, got \"";
      message += value;
      message += "\"";
      EXPECT_EXIT(Parse({arg}), ::testing::ExitedWithCode(1), message) << arg;
    }
    EXPECT_EXIT(Parse({flag}), ::testing::ExitedWithCode(1), "flag " + flag + " needs a value");
  }
}

TEST(OptionsTest, DelegatedKubeconfigsAreTakenAsGiven) {
  const Flags flags = Parse({"--authentication-kubeconfig", "/etc/berth/authn.kubeconfig",
                             "--authorization-kubeconfig=/etc/berth/authz.kubeconfig"});
  EXPECT_EQ(flags.authentication_kubeconfig, "/etc/berth/authn.kubeconfig");
  EXPECT_EQ(flags.authorization_kubeconfig, "/etc/berth/authz.kubeconfig");
}

TEST(OptionsTest, HelpListsTheDelegatedAuthFlags) {
  const std::string usage = UsageText();
  for (const char* flag : {"--authentication-kubeconfig FILE", "--authorization-kubeconfig FILE",
                           "--authentication-token-webhook-cache-ttl D",
                           "--authorization-webhook-cache-authorized-ttl D",
                           "--authorization-webhook-cache-unauthorized-ttl D"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag << "\n" << usage;
  }
}

class DelegatedConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("berth-options-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& content) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << content;
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(DelegatedConfigTest, UnsetIsTheSchedulersOwnConnection) {
  client::Config own;
  own.server = "https://own:6443";
  own.bearer_token = "own-token";
  const client::Config config = DelegatedConfig("--authorization-kubeconfig", "", own);
  EXPECT_EQ(config.server, "https://own:6443");
  EXPECT_EQ(config.bearer_token, "own-token");
}

TEST_F(DelegatedConfigTest, SetIsThatKubeconfig) {
  client::Config own;
  own.server = "https://own:6443";
  const std::string path = Write("reviewer.kubeconfig", R"(apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://reviews:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: reviewer-token}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
)");
  const client::Config config = DelegatedConfig("--authentication-kubeconfig", path, own);
  EXPECT_EQ(config.server, "https://reviews:6443");
  EXPECT_EQ(config.bearer_token, "reviewer-token");
}

TEST_F(DelegatedConfigTest, AKubeconfigThatDoesNotLoadExitsNamingTheFlagAndTheFile) {
  const std::string missing = (dir_ / "missing.kubeconfig").string();
  EXPECT_EXIT(DelegatedConfig("--authentication-kubeconfig", missing, {}),
              ::testing::ExitedWithCode(1),
              "berth-scheduler: flag --authentication-kubeconfig: kubeconfig " + missing);
  const std::string broken = Write("broken.kubeconfig", "clusters: [unterminated\n");
  EXPECT_EXIT(DelegatedConfig("--authorization-kubeconfig", broken, {}),
              ::testing::ExitedWithCode(1),
              "berth-scheduler: flag --authorization-kubeconfig: kubeconfig " + broken);
}

TEST_F(DelegatedConfigTest, AClientCaFileIsTakenWhenItHoldsPemCertificates) {
  const std::string ca = (dir_ / "ca.crt").string();
  const std::string command =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
      "-nodes -days 1 -subj /CN=ca -keyout " +
      (dir_ / "ca.key").string() + " -out " + ca + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0);
  EXPECT_EQ(Parse({"--client-ca-file", ca}).client_ca_file, ca);
  EXPECT_EQ(Parse({}).client_ca_file, "");
}

TEST_F(DelegatedConfigTest, AClientCaFileThatCannotBeUsedExitsNamingTheFlagAndTheFile) {
  const std::string missing = (dir_ / "missing.crt").string();
  EXPECT_EXIT(Parse({"--client-ca-file", missing}), ::testing::ExitedWithCode(1),
              "berth-scheduler: flag --client-ca-file: cannot read \"" + missing + "\"");
  const std::string key_only = Write("key.pem", "-----BEGIN PRIVATE KEY-----\nAAAA\n");
  EXPECT_EXIT(
      Parse({"--client-ca-file=" + key_only}), ::testing::ExitedWithCode(1),
      "berth-scheduler: flag --client-ca-file: \"" + key_only + "\" holds no PEM certificate");
}

TEST(OptionsTest, BindAddressesMayBeIpv6) {
  EXPECT_EQ(Parse({"--bind-address", "::"}).bind_address, "::");
  EXPECT_EQ(HostPort("::", 10259), "[::]:10259");
  EXPECT_EQ(HostPort("0.0.0.0", 10259), "0.0.0.0:10259");
  EXPECT_EXIT(Parse({"--bind-address", "0.0.0.0:10251"}), ::testing::ExitedWithCode(1),
              "flag --bind-address: expected an IP address, got \"0.0.0.0:10251\"");
}

}  // namespace
}  // namespace berth::cmd
