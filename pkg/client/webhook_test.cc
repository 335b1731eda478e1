#include "pkg/client/webhook.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "pkg/client/client.h"
#include "test/testing/client_test_util.h"

namespace berth::client {
namespace {

using testing::FakeRequest;
using testing::FakeServer;

WebhookConfig At(const std::string& url) {
  WebhookConfig config;
  config.url_prefix = url;
  return config;
}

TEST(WebhookTest, PostsJsonToThePrefixPathAndVerb) {
  FakeServer server([](int, FakeRequest& request) { request.Reply(200, "{\"ok\":true}"); });
  WebhookConfig config;
  config.url_prefix = server.url() + "/scheduler/";
  Webhook webhook(config);
  EXPECT_EQ(webhook.UrlFor("filter"), server.url() + "/scheduler/filter");
  const WebhookResponse response = webhook.Post("filter", "{\"Pod\":{}}");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "{\"ok\":true}");
  ASSERT_EQ(server.request_count(), 1);
  const auto recorded = server.requests()[0];
  EXPECT_EQ(recorded.method, "POST");
  EXPECT_EQ(recorded.path, "/scheduler/filter");
  EXPECT_EQ(recorded.Header("Content-Type"), "application/json");
  EXPECT_EQ(recorded.body, "{\"Pod\":{}}");
}

TEST(WebhookTest, CallsRunAtOnceAndAnyStatusIsAResponse) {
  FakeServer server([](int, FakeRequest& request) {
    request.Reply(request.recorded().path == "/a" ? 500 : 200, request.recorded().path);
  });
  Webhook webhook(At(server.url()));
  Webhook::Call a = webhook.Start("a", "{}");
  Webhook::Call b = webhook.Start("b", "{}");
  const WebhookResponse rb = b.Wait();
  const WebhookResponse ra = a.Wait();
  EXPECT_EQ(ra.status, 500);
  EXPECT_EQ(ra.body, "/a");
  EXPECT_EQ(rb.status, 200);
  EXPECT_EQ(rb.body, "/b");
}

TEST(WebhookTest, ASlowServiceTimesOut) {
  FakeServer server([](int, FakeRequest& request) {
    request.StartStream(200);
    request.WaitForClose();
  });
  WebhookConfig config = At(server.url());
  config.timeout = std::chrono::milliseconds(200);
  Webhook webhook(config);
  try {
    webhook.Post("filter", "{}");
    FAIL() << "no timeout";
  } catch (const WebhookError& e) {
    EXPECT_TRUE(e.timeout()) << e.what();
    EXPECT_NE(std::string(e.what()).find(server.url() + "/filter"), std::string::npos) << e.what();
  }
}

TEST(WebhookTest, AnOversizedResponseIsAnErrorNotMemory) {
  FakeServer server(
      [](int, FakeRequest& request) { request.Reply(200, std::string(4096, ' ') + "{}"); });
  WebhookConfig config = At(server.url());
  config.max_response_bytes = 1024;
  Webhook webhook(config);
  try {
    webhook.Post("filter", "{}");
    FAIL() << "the response was taken";
  } catch (const WebhookError& e) {
    EXPECT_FALSE(e.timeout());
    EXPECT_NE(std::string(e.what()).find("longer than 1024 bytes"), std::string::npos) << e.what();
  }
}

TEST(WebhookTest, ARefusedConnectionIsAnError) {
  std::string url;
  {
    FakeServer gone([](int, FakeRequest& request) { request.Reply(200, "{}"); });
    url = gone.url();
  }
  Webhook webhook(At(url));
  try {
    webhook.Post("filter", "{}");
    FAIL() << "no error";
  } catch (const WebhookError& e) {
    // Go's words, as kube-scheduler reports a refused extender.
    const std::string authority = url.substr(std::string("http://").size());
    EXPECT_EQ(std::string(e.what()), "Post \"" + url + "/filter\": dial tcp " + authority +
                                         ": connect: connection refused");
  }
}

TEST(WebhookTest, AConnectionClosedWithoutAResponseIsEofAsInGo) {
  FakeServer server([](int, FakeRequest&) {});  // Closes without answering.
  try {
    Webhook(At(server.url())).Post("filter", "{}");
    FAIL() << "no error";
  } catch (const WebhookError& e) {
    EXPECT_EQ(std::string(e.what()), "Post \"" + server.url() + "/filter\": EOF");
  }
}

TEST(WebhookTest, ATimeoutBeforeTheHeadersIsSaidAsGoSaysIt) {
  FakeServer server([](int, FakeRequest& request) { request.WaitForClose(); });
  WebhookConfig config = At(server.url());
  config.timeout = std::chrono::milliseconds(150);
  try {
    Webhook(config).Post("filter", "{}");
    FAIL() << "no error";
  } catch (const WebhookError& e) {
    EXPECT_TRUE(e.timeout());
    EXPECT_EQ(std::string(e.what()), "Post \"" + server.url() +
                                         "/filter\": context deadline exceeded (Client.Timeout "
                                         "exceeded while awaiting headers)");
  }
}

TEST(WebhookTest, BadUrlsAreRefusedAtConstruction) {
  for (const char* url : {"ftp://127.0.0.1:1", "http://user@127.0.0.1:1", "http://h:1/?q=1",
                          "not a url", "http://h:1/#f"}) {
    EXPECT_THROW(Webhook(At(url)), ConfigError) << url;
  }
  WebhookConfig half = At("https://127.0.0.1:1");
  half.tls.cert_pem = "x";
  EXPECT_THROW(Webhook{half}, ConfigError);
}

TEST(WebhookTest, TlsIsVerifiedAndPresentsTheClientCertificate) {
  auto pki = testing::MakePki();
  if (!pki) GTEST_SKIP() << "openssl cannot mint certificates here";
  FakeServer server([](int, FakeRequest& request) { request.Reply(200, "{}"); },
                    testing::ServeWith(pki->server_cert, pki->server_key, pki->ca));
  ASSERT_EQ(server.url().rfind("https://", 0), 0u);
  WebhookConfig config = At(server.url());
  config.tls.ca_pem = pki->ca;
  config.tls.cert_pem = pki->client_cert;
  config.tls.key_pem = pki->client_key;
  EXPECT_EQ(Webhook(config).Post("bind", "{}").status, 200);

  // Without the client certificate the server refuses the handshake.
  WebhookConfig anonymous = At(server.url());
  anonymous.tls.ca_pem = pki->ca;
  EXPECT_THROW(Webhook(anonymous).Post("bind", "{}"), WebhookError);

  // A server certificate from another CA is refused unless verification is off.
  WebhookConfig other = config;
  other.tls.ca_pem = pki->other_ca;
  EXPECT_THROW(Webhook(other).Post("bind", "{}"), WebhookError);
  other.tls.insecure = true;
  EXPECT_EQ(Webhook(other).Post("bind", "{}").status, 200);
}

}  // namespace
}  // namespace berth::client
