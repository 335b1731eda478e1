#ifndef BERTH_TEST_TESTING_HTTP_CALL_H_
#define BERTH_TEST_TESTING_HTTP_CALL_H_

// One HTTP(S) request from a test to a server under test (the secure port, kube-scheduler's,
// berth-scheduler's in the e2e suite), over libcurl like every request Berth itself makes. A
// test's client, so it keeps no connection and retries nothing.

#include <chrono>
#include <memory>
#include <string>

namespace berth::testing {

struct HttpCallOptions {
  std::string method = "GET";  // Any; "HEAD" reads no body.
  std::string body;            // Sent (with content_type) when not empty, and always for POST.
  std::string content_type;
  std::string token;  // Sent as "Authorization: Bearer"; empty: none.
  // The CA an https server is verified with: a file name, or PEM text when it starts with "-----";
  // empty: the system's roots.
  std::string ca;
  bool insecure = false;  // Verify neither the server's certificate nor its name.
  // The client certificate presented, as PEM files; empty: none.
  std::string cert_file;
  std::string key_file;
  std::chrono::milliseconds timeout = std::chrono::seconds(30);  // The whole exchange.
};

struct HttpResult {
  int status = 0;
  std::string body;
};

// Throws std::runtime_error, with libcurl's reason, when no complete response arrives: no
// connection, a failed TLS handshake or verification, a timeout.
HttpResult HttpCall(const std::string& url, const HttpCallOptions& options = {});

// Asks one https URL (a /readyz) over and over on one kept connection, trusting any certificate.
// A new TLS handshake on every ask costs the probed process a handshake each time; while a binder
// starts, that CPU would be charged to its start-up (2 cores, probed every few milliseconds).
class ReadinessProbe {
 public:
  explicit ReadinessProbe(std::string url);
  ~ReadinessProbe();
  ReadinessProbe(const ReadinessProbe&) = delete;
  ReadinessProbe& operator=(const ReadinessProbe&) = delete;

  // The response's status; 0 when there is none (nothing listening yet, a timeout).
  int Status();

 private:
  struct Handle;
  std::string url_;
  std::unique_ptr<Handle> handle_;
};

// `value` with everything but RFC 3986 unreserved characters percent-encoded, for a query value.
std::string PercentEncode(const std::string& value);

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_HTTP_CALL_H_
