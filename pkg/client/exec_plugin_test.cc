// Exec credential plugins: shell-script plugins in a temporary directory supply the credentials
// a fake server checks; they are cached until they expire and re-run after a 401.

#include "pkg/client/exec_plugin.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "pkg/client/client.h"
#include "pkg/client/http_client.h"
#include "test/testing/client_test_util.h"

namespace berth::client {
namespace {

using ::berth::client::testing::FakeRequest;
using ::berth::client::testing::FakeServer;
using ::berth::client::testing::MakePki;
using ::berth::client::testing::ReadAll;
using ::berth::client::testing::Reply;
using ::berth::client::testing::ServeWith;
using ::berth::client::testing::TempDir;
using ::berth::client::testing::WriteShellScript;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kV1[] = "client.authentication.k8s.io/v1";

std::string Status(int code, const std::string& reason) {
  return nlohmann::json{{"kind", "Status"},
                        {"status", "Failure"},
                        {"reason", reason},
                        {"message", reason},
                        {"code", code}}
      .dump();
}

// A plugin that counts its runs in `runs`, saves its KUBERNETES_EXEC_INFO, its arguments and
// $GREETING, and prints the token "token-<run>" valid for `valid_seconds` (none when negative).
std::string CountingPlugin(const TempDir& dir, int valid_seconds) {
  std::string expiry;
  if (valid_seconds >= 0) {
    expiry = R"(,\"expirationTimestamp\":\"$(date -u -d @$(( $(date +%s) + )" +
             std::to_string(valid_seconds) + R"( )) +%Y-%m-%dT%H:%M:%SZ)\")";
  }
  return WriteShellScript(
      dir, "plugin.sh",
      "set -e\n"
      "n=$(( $(cat " +
          dir.Join("runs") +
          " 2>/dev/null || echo 0) + 1 ))\n"
          "echo $n > " +
          dir.Join("runs") +
          "\n"
          "printf '%s' \"$KUBERNETES_EXEC_INFO\" > " +
          dir.Join("exec-info") +
          "\n"
          "echo \"$* $GREETING\" > " +
          dir.Join("args") +
          "\n"
          "echo 'plugin diagnostics go to stderr' >&2\n"
          "echo \"{\\\"apiVersion\\\":\\\"" +
          std::string(kV1) +
          "\\\",\\\"kind\\\":\\\"ExecCredential\\\",\\\"status\\\":{\\\"token\\\":"
          "\\\"token-$n\\\"" +
          expiry + "}}\"\n");
}

int Runs(const TempDir& dir) {
  const std::string text = ReadAll(dir.Join("runs"));
  return text.empty() ? 0 : std::stoi(text);
}

Config ExecConfigFor(const std::string& server, const std::string& command) {
  Config config;
  config.server = server;
  config.qps = 0;
  config.timeout = std::chrono::seconds(10);
  ExecConfig exec;
  exec.api_version = kV1;
  exec.command = command;
  exec.args = {"--cluster", "test"};
  exec.env = {{"GREETING", "hello"}};
  exec.origin = "kubeconfig /k: users[name=u].user.exec";
  config.exec = exec;
  return config;
}

TEST(ExecPluginFakeServerTest, TokenIsSentAndKeptUntilItExpires) {
  TempDir dir;
  FakeServer server([](int, FakeRequest& request) { Reply(request, 200, "{}"); });
  Config config = ExecConfigFor(server.url(), CountingPlugin(dir, 2));
  config.exec->provide_cluster_info = true;
  config.exec->cluster_config_json = R"({"audience":"berth"})";
  auto client = NewClient(config);

  client->Get("/version");
  client->Get("/version");
  EXPECT_EQ(Runs(dir), 1) << "an unexpired credential was not reused";
  std::this_thread::sleep_for(std::chrono::milliseconds(3100));
  client->Get("/version");
  EXPECT_EQ(Runs(dir), 2) << "an expired credential was not refreshed";

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].Header("Authorization"), "Bearer token-1");
  EXPECT_EQ(requests[1].Header("Authorization"), "Bearer token-1");
  EXPECT_EQ(requests[2].Header("Authorization"), "Bearer token-2");

  EXPECT_EQ(ReadAll(dir.Join("args")), "--cluster test hello\n");
  const nlohmann::json info = nlohmann::json::parse(ReadAll(dir.Join("exec-info")));
  EXPECT_EQ(info["apiVersion"], kV1);
  EXPECT_EQ(info["kind"], "ExecCredential");
  EXPECT_EQ(info["spec"]["interactive"], false);
  EXPECT_EQ(info["spec"]["cluster"]["server"], server.url());
  EXPECT_EQ(info["spec"]["cluster"]["config"]["audience"], "berth");
}

TEST(ExecPluginFakeServerTest, UnauthorizedRunsThePluginAgainAndRepeatsTheRequestOnce) {
  TempDir dir;
  // The first token was revoked early: the server rejects it though it has not expired.
  FakeServer server([](int, FakeRequest& request) {
    if (request.Header("Authorization") == "Bearer token-1") {
      Reply(request, 401, Status(401, "Unauthorized"));
    } else {
      Reply(request, 201, R"({"kind":"Binding"})");
    }
  });
  auto client = NewClient(ExecConfigFor(server.url(), CountingPlugin(dir, 3600)));
  std::vector<int> statuses;
  client->SetRequestObserver([&](const std::string&, int status, std::chrono::nanoseconds) {
    statuses.push_back(status);
  });
  EXPECT_EQ(client->Post("/api/v1/namespaces/d/pods/p/binding", {{"kind", "Binding"}})["kind"],
            "Binding");
  EXPECT_EQ(Runs(dir), 2);
  EXPECT_EQ(statuses, (std::vector<int>{401, 201}));
  // The new token is kept for what follows.
  client->Post("/api/v1/namespaces/d/pods/q/binding", {{"kind", "Binding"}});
  EXPECT_EQ(Runs(dir), 2);
}

TEST(ExecPluginFakeServerTest, PersistentUnauthorizedIsReturnedAfterOneRerun) {
  TempDir dir;
  FakeServer server(
      [](int, FakeRequest& request) { Reply(request, 401, Status(401, "Unauthorized")); });
  auto client = NewClient(ExecConfigFor(server.url(), CountingPlugin(dir, -1)));
  try {
    client->Get("/api/v1/nodes");
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.reason(), ErrorReason::kUnauthorized);
    EXPECT_EQ(e.http_status(), 401);
  }
  EXPECT_EQ(Runs(dir), 2);
  EXPECT_EQ(server.request_count(), 2);
}

TEST(ExecPluginFakeServerTest, MissingCommandNamesTheFieldAndTheInstallHint) {
  FakeServer server([](int, FakeRequest& request) { Reply(request, 200, "{}"); });
  Config config = ExecConfigFor(server.url(), "berth-test-no-such-credential-plugin");
  config.exec->install_hint = "Install it with: make credential-plugin";
  auto client = NewClient(config);
  try {
    client->Get("/version");
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.reason(), ErrorReason::kUnauthorized);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("kubeconfig /k: users[name=u].user.exec"),
                                HasSubstr("berth-test-no-such-credential-plugin not found"),
                                HasSubstr("Install it with: make credential-plugin")));
  }
  EXPECT_EQ(server.request_count(), 0);
}

TEST(ExecPluginFakeServerTest, FailingPluginIsReportedWithItsExitCode) {
  TempDir dir;
  FakeServer server([](int, FakeRequest& request) { Reply(request, 200, "{}"); });
  auto client =
      NewClient(ExecConfigFor(server.url(), WriteShellScript(dir, "fail.sh", "exit 3\n")));
  try {
    client->Get("/version");
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.reason(), ErrorReason::kUnauthorized);
    EXPECT_THAT(e.what(), HasSubstr("failed with exit code 3"));
  }
  EXPECT_EQ(server.request_count(), 0);
}

TEST(ExecPluginFakeServerTest, ClientCertificateFromThePluginIsPresented) {
  const auto pki = MakePki();
  if (pki == nullptr) GTEST_SKIP() << "the openssl CLI could not generate certificates";
  TempDir dir;
  const std::string credential = nlohmann::json{
      {"apiVersion", kV1},
      {"kind", "ExecCredential"},
      {"status",
       {{"clientCertificateData", pki->client_cert},
        {"clientKeyData",
         pki->client_key}}}}.dump();
  dir.Write("credential.json", credential);
  const std::string plugin =
      WriteShellScript(dir, "cert.sh", "cat " + dir.Join("credential.json") + "\n");
  FakeServer server([](int, FakeRequest& request) { Reply(request, 200, "{}"); },
                    ServeWith(pki->server_cert, pki->server_key, pki->ca));
  Config config = ExecConfigFor(server.url(), plugin);
  config.ca_pem = pki->ca;
  EXPECT_NO_THROW(NewClient(config)->Get("/version"));
  EXPECT_EQ(server.requests().at(0).headers.count("Authorization"), 0u);
}

// The credential plugin.sh prints: a token for API version v1.
std::string TokenCredential(const std::string& token) {
  return nlohmann::json{
      {"apiVersion", kV1}, {"kind", "ExecCredential"}, {"status", {{"token", token}}}}
      .dump();
}

// Whether process `pid` has ended: gone, or a zombie nobody reaped yet.
bool Ended(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  // "pid (comm) state ...": comm may hold spaces and parentheses, the state follows the last ')'.
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

// Waits for the kernel to finish off a process sent SIGKILL; a bound only against a test that
// would otherwise hang, not a measure of speed.
bool EventuallyEnded(pid_t pid) {
  for (int i = 0; i < 6000; ++i) {
    if (Ended(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return Ended(pid);
}

TEST(ExecPluginRunTest, PluginThatClosesItsOutputAndHangsIsKilledAtTheDeadline) {
  TempDir dir;
  // It prints a valid credential and closes its standard output, then waits for a child that
  // sleeps; neither ends on its own.
  const std::string plugin = WriteShellScript(dir, "hang.sh",
                                              "echo $$ > " + dir.Join("pid") + "\n" + "echo '" +
                                                  TokenCredential("t") + "'\n" +
                                                  "exec >&-\n"
                                                  "sleep 1000 &\n"
                                                  "echo $! > " +
                                                  dir.Join("sleeper") +
                                                  "\n"
                                                  "wait\n");
  const Config config = ExecConfigFor("https://127.0.0.1:1", plugin);
  try {
    internal::RunExecPlugin(config, std::chrono::seconds(1));
    ADD_FAILURE() << "a plugin that never exited was taken as having succeeded";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.reason(), ErrorReason::kUnauthorized);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("kubeconfig /k: users[name=u].user.exec"),
                                HasSubstr(plugin), HasSubstr("did not finish within 1s")));
  }
  // The plugin and what it started were killed, not left behind.
  const pid_t shell = std::stoi(ReadAll(dir.Join("pid")));
  const pid_t sleeper = std::stoi(ReadAll(dir.Join("sleeper")));
  EXPECT_TRUE(Ended(shell)) << "the plugin was not reaped";
  EXPECT_TRUE(EventuallyEnded(sleeper)) << "the plugin's child " << sleeper << " was left running";
  if (!Ended(sleeper)) kill(sleeper, SIGKILL);
}

// The bits of a /proc/<pid>/status mask line ("SigBlk:\t0000000000004002"); 0 when absent.
uint64_t MaskOf(const std::string& status, const std::string& field) {
  std::istringstream lines(status);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(field + ":", 0) == 0)
      return std::stoull(line.substr(field.size() + 1), nullptr, 16);
  }
  return 0;
}

bool Has(uint64_t mask, int signal) { return (mask >> (signal - 1)) & 1; }

TEST(ExecPluginRunTest, PluginStartsWithNoBlockedSignalsAndDefaultDispositions) {
  TempDir dir;
  // The scheduler blocks SIGTERM and SIGINT in its threads (a signal thread takes them), and the
  // client ignores SIGPIPE; none of that is the plugin's business. The script reads its own
  // status with builtins: a shell may reset the mask of the commands it starts.
  const std::string plugin =
      WriteShellScript(dir, "signals.sh",
                       "while IFS= read -r line; do\n"
                       "  case \"$line\" in SigBlk:*|SigIgn:*) echo \"$line\" ;; esac\n"
                       "done < /proc/$$/status > " +
                           dir.Join("status") + "\necho '" + TokenCredential("t") + "'\n");
  sigset_t blocked;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGTERM);
  sigaddset(&blocked, SIGINT);
  sigset_t old_mask;
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &blocked, &old_mask), 0);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction old_pipe {};
  ASSERT_EQ(sigaction(SIGPIPE, &ignore, &old_pipe), 0);

  std::string error;
  try {
    internal::RunExecPlugin(ExecConfigFor("https://127.0.0.1:1", plugin), std::chrono::seconds(30));
  } catch (const ApiError& e) {
    error = e.what();
  }
  sigaction(SIGPIPE, &old_pipe, nullptr);
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  ASSERT_EQ(error, "");

  const std::string status = ReadAll(dir.Join("status"));
  ASSERT_THAT(status, HasSubstr("SigBlk:"));
  const uint64_t plugin_blocked = MaskOf(status, "SigBlk");
  EXPECT_FALSE(Has(plugin_blocked, SIGTERM)) << status;
  EXPECT_FALSE(Has(plugin_blocked, SIGINT)) << status;
  EXPECT_FALSE(Has(MaskOf(status, "SigIgn"), SIGPIPE)) << status;
}

TEST(ExecCredentialTest, DecodesAndRejectsLikeClientGo) {
  using internal::ParseExecCredential;
  const internal::ExecCredential token = ParseExecCredential(
      R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)"
      R"("status":{"token":"t","expirationTimestamp":"2030-01-02T03:04:05Z"}})",
      kV1);
  EXPECT_EQ(token.token, "t");
  ASSERT_TRUE(token.expiry.has_value());
  EXPECT_EQ(std::chrono::system_clock::to_time_t(*token.expiry), 1893553445);

  const auto error_of = [](const std::string& output) -> std::string {
    try {
      internal::ParseExecCredential(output, kV1);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_THAT(error_of("not json"), HasSubstr("not a JSON ExecCredential"));
  EXPECT_THAT(error_of(R"({"apiVersion":"client.authentication.k8s.io/v1beta1",)"
                       R"("kind":"ExecCredential","status":{"token":"t"}})"),
              HasSubstr("configured to use API version client.authentication.k8s.io/v1"));
  EXPECT_THAT(
      error_of(R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"})"),
      HasSubstr("no status"));
  EXPECT_THAT(error_of(R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)"
                       R"("status":{}})"),
              HasSubstr("neither a token nor a certificate"));
  EXPECT_THAT(error_of(R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)"
                       R"("status":{"clientCertificateData":"x"}})"),
              HasSubstr("only a certificate or a key"));
  EXPECT_THAT(error_of(R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)"
                       R"("status":{"token":"t","expirationTimestamp":"tomorrow"}})"),
              HasSubstr("not RFC 3339"));
}

// The expiry is read as Go reads RFC 3339 (util::ParseRfc3339 has the full table): an offset is
// honoured, and a day its month lacks, a leap second or a lower-case 't' is refused where the
// plugin's own copy (timegm) normalized them into another time.
TEST(ExecCredentialTest, ExpiryIsReadAsGoReadsRfc3339) {
  const auto expiry = [](const std::string& stamp) -> std::optional<int64_t> {
    try {
      const internal::ExecCredential credential = internal::ParseExecCredential(
          R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)"
          R"("status":{"token":"t","expirationTimestamp":")" +
              stamp + R"("}})",
          kV1);
      return std::chrono::duration_cast<std::chrono::milliseconds>(
                 credential.expiry.value().time_since_epoch())
          .count();
    } catch (const std::runtime_error& e) {
      EXPECT_THAT(e.what(), HasSubstr("not RFC 3339"));
      return std::nullopt;
    }
  };
  EXPECT_EQ(expiry("1970-01-01T00:00:10.25Z"), 10250);
  EXPECT_EQ(expiry("1970-01-01T02:00:10+02:00"), 10000);
  EXPECT_EQ(expiry("2023-02-29T00:00:00Z"), std::nullopt);
  EXPECT_EQ(expiry("2024-05-01T12:00:60Z"), std::nullopt);
  EXPECT_EQ(expiry("2024-05-01t12:00:00Z"), std::nullopt);
}

TEST(ExecCredentialTest, ClusterInfoOnlyWhenAskedFor) {
  Config config = ExecConfigFor("https://api.example:6443", "p");
  config.ca_pem = "PEM";
  config.tls_server_name = "kubernetes";
  const nlohmann::json plain = nlohmann::json::parse(internal::ExecInfo(config));
  EXPECT_EQ(plain, nlohmann::json({{"apiVersion", kV1},
                                   {"kind", "ExecCredential"},
                                   {"spec", {{"interactive", false}}}}));
  config.exec->provide_cluster_info = true;
  const nlohmann::json with_cluster = nlohmann::json::parse(internal::ExecInfo(config));
  EXPECT_EQ(with_cluster["spec"]["cluster"],
            nlohmann::json({{"server", "https://api.example:6443"},
                            {"tls-server-name", "kubernetes"},
                            {"certificate-authority-data", "UEVN"}}));
}

}  // namespace
}  // namespace berth::client
