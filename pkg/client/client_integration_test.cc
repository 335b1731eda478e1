// The client against the local control plane's kube-apiserver: HTTP/2 negotiated through ALPN,
// requests and busy watches multiplexed over one connection and the other watches over a second,
// flow control per stream, and exec plugins whose credentials the apiserver checks.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "pkg/client/client.h"
#include "pkg/client/curl_transport.h"
#include "pkg/client/http_client.h"
#include "test/testing/client_test_util.h"
#include "test/testing/cluster.h"

namespace berth::client {
namespace {

using ::berth::client::testing::ReadAll;
using ::berth::client::testing::TempDir;
using ::berth::client::testing::WriteShellScript;
using ::berth::testing::AdminConfig;
using ::berth::testing::TestNamespace;
using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

nlohmann::json ConfigMap(const std::string& ns, const std::string& name, size_t bytes = 10) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"data", {{"payload", std::string(bytes, 'x')}}}};
}

std::string ConfigMaps(const std::string& ns) { return "/api/v1/namespaces/" + ns + "/configmaps"; }

TEST(ClientHttp2Integration, RequestsAndBusyWatchesShareOneConnectionQuietWatchesAnother) {
  auto client = NewClient(AdminConfig());
  TestNamespace ns(client, "h2-share");
  std::vector<std::unique_ptr<WatchStream>> watches;
  watches.reserve(8);
  for (int i = 0; i < 8; ++i) {
    WatchOptions options;
    options.timeout_seconds = 60;
    options.busy = i % 2 == 0;
    watches.push_back(client->Watch(ConfigMaps(ns.name()), options));
  }
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < 10; ++i) client->Get("/api/v1/namespaces/" + ns.name());
    });
  }
  for (std::thread& t : callers) t.join();

  // Each watch hands over the event as it happens.
  client->Post(ConfigMaps(ns.name()), ConfigMap(ns.name(), "seen"));
  for (auto& watch : watches) {
    std::promise<WatchEvent> next;
    auto event = next.get_future();
    std::thread reader([&] {
      WatchEvent e;
      while (watch->Next(&e)) {
        if (e.type == WatchEventType::kBookmark) continue;  // The initial-events-end bookmark.
        next.set_value(std::move(e));
        return;
      }
    });
    ASSERT_EQ(event.wait_for(seconds(10)), std::future_status::ready);
    EXPECT_EQ(event.get().object["metadata"]["name"], "seen");
    reader.join();
  }

  const internal::TransportStats stats = internal::StatsOf(*client);
  EXPECT_EQ(stats.connections, 2u)
      << "4 busy watches and 40 requests should share one connection, 4 quiet watches another";
  EXPECT_GE(stats.http2_responses, 41u);
  EXPECT_EQ(stats.http1_responses, 0u) << "kube-apiserver's ALPN offers h2";
}

TEST(ClientHttp2Integration, StoppedWatchEndsAtOnceAndTheConnectionCarriesOn) {
  auto client = NewClient(AdminConfig());
  TestNamespace ns(client, "h2-stop");
  WatchOptions options;
  options.timeout_seconds = 300;
  options.allow_bookmarks = false;
  options.busy = true;  // On the connection the GET below takes.
  auto watch = client->Watch(ConfigMaps(ns.name()), options);
  std::promise<bool> result;
  auto done = result.get_future();
  std::thread reader([&] {
    WatchEvent event;
    result.set_value(watch->Next(&event));
  });
  ASSERT_EQ(done.wait_for(milliseconds(500)), std::future_status::timeout);
  const auto stop_at = steady_clock::now();
  watch->Stop();
  ASSERT_EQ(done.wait_for(seconds(2)), std::future_status::ready);
  EXPECT_FALSE(done.get());
  EXPECT_LT(steady_clock::now() - stop_at, seconds(1));
  reader.join();
  watch.reset();
  // The stream was reset, not the connection.
  EXPECT_EQ(client->Get("/version").value("major", ""), "1");
  EXPECT_EQ(internal::StatsOf(*client).connections, 1u);
}

TEST(ClientHttp2Integration, SlowReaderOfALargeListDoesNotHoldUpTheConnection) {
  auto client = NewClient(AdminConfig());
  TestNamespace ns(client, "h2-flow");
  // Twice the stream buffer, so the list's stream is paused while its reader dawdles.
  constexpr size_t kBytes = 800 << 10;
  const int count = static_cast<int>(2 * internal::kStreamBufferBytes / kBytes) + 1;
  for (int i = 0; i < count; ++i) {
    client->Post(ConfigMaps(ns.name()), ConfigMap(ns.name(), "big-" + std::to_string(i), kBytes));
  }
  ListOptions options;
  options.limit = 0;
  std::string body;
  std::atomic<bool> reader_paused{false};
  std::atomic<int64_t> version_ms{-1};
  std::thread other([&] {
    while (!reader_paused.load()) std::this_thread::sleep_for(milliseconds(10));
    const auto start = steady_clock::now();
    client->Get("/version");
    version_ms = std::chrono::duration_cast<milliseconds>(steady_clock::now() - start).count();
  });
  int calls = 0;
  client->ListPageStream(ConfigMaps(ns.name()), options, "", [&](std::string_view bytes) {
    if (++calls == 2) {
      reader_paused = true;
      std::this_thread::sleep_for(milliseconds(1500));
    }
    body.append(bytes);
  });
  other.join();
  EXPECT_GE(version_ms.load(), 0);
  EXPECT_LT(version_ms.load(), 1000) << "a paused stream held up another on the connection";
  const nlohmann::json list = nlohmann::json::parse(body);
  ASSERT_EQ(list["items"].size(), static_cast<size_t>(count));
  for (const auto& item : list["items"]) {
    EXPECT_EQ(item["data"]["payload"].get<std::string>().size(), kBytes);
  }
  EXPECT_EQ(internal::StatsOf(*client).connections, 1u);
}

TEST(ClientExecPluginIntegration, ApiserverRejectionRunsThePluginAgain) {
  auto admin = NewClient(AdminConfig());
  TestNamespace ns(admin, "exec");
  admin->Post("/api/v1/namespaces/" + ns.name() + "/serviceaccounts",
              {{"metadata", {{"name", "plugin-user"}}}});
  const nlohmann::json token_request =
      admin->Post("/api/v1/namespaces/" + ns.name() + "/serviceaccounts/plugin-user/token",
                  {{"apiVersion", "authentication.k8s.io/v1"},
                   {"kind", "TokenRequest"},
                   {"spec", {{"expirationSeconds", 600}}}});
  const std::string token = token_request["status"]["token"];

  TempDir dir;
  dir.Write("good", token);
  // The first run hands out a token the apiserver does not know; later runs the real one.
  const std::string plugin = WriteShellScript(
      dir, "plugin.sh",
      "n=$(( $(cat " + dir.Join("runs") + " 2>/dev/null || echo 0) + 1 )); echo $n > " +
          dir.Join("runs") +
          "\n"
          "if [ $n = 1 ]; then t=revoked; else t=$(cat " +
          dir.Join("good") +
          "); fi\n"
          "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
          "\"status\":{\"token\":\"%s\"}}' \"$t\"\n");
  Config config = AdminConfig();
  config.client_cert_pem.clear();
  config.client_key_pem.clear();
  config.client_cert_file.clear();
  config.client_key_file.clear();
  ExecConfig exec;
  exec.api_version = "client.authentication.k8s.io/v1";
  exec.command = plugin;
  exec.origin = "test exec plugin";
  config.exec = exec;
  auto client = NewClient(config);
  const nlohmann::json review =
      client->Post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                   {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "SelfSubjectReview"}});
  EXPECT_EQ(review["status"]["userInfo"]["username"],
            "system:serviceaccount:" + ns.name() + ":plugin-user");
  EXPECT_EQ(ReadAll(dir.Join("runs")), "2\n");
  EXPECT_EQ(internal::StatsOf(*client).http1_responses, 0u);
}

}  // namespace
}  // namespace berth::client
