#ifndef BERTH_CMD_BERTH_SCHEDULER_DEBUG_CLIENT_H_
#define BERTH_CMD_BERTH_SCHEDULER_DEBUG_CLIENT_H_

// The HTTP(S) client of the explain and simulate commands: one request to the scheduler's serving
// port over pkg/client's libcurl transport, the same stack as every other outgoing request.

#include <chrono>
#include <cstddef>
#include <string>

namespace berth::cmd {

struct DebugServer {
  // "https://127.0.0.1:10259"; a path in it ("http://127.0.0.1:8001/api/v1/namespaces/kube-system/
  // services/https:berth:10259/proxy", a proxy's) goes in front of every request's path.
  std::string url;
  std::string ca_file;  // Verify an https server with this CA (PEM); empty: the system's.
  bool insecure = false;
  std::string token;  // Sent as "Authorization: Bearer"; empty: none. Never logged.
  // The whole exchange; a dry run per hint over a large cluster takes a while, and the scheduler
  // answers one debug request at a time.
  std::chrono::milliseconds timeout = std::chrono::seconds(120);
};

struct DebugResponse {
  int status = 0;
  std::string body;
};

// Far above what an explanation or a simulation prints (their records are bounded, see
// pkg/explain): a longer body is not the scheduler talking, and not worth the memory.
inline constexpr size_t kMaxDebugResponseBytes = size_t{64} << 20;

// One request to the scheduler's serving port; any status is returned with its body. TLS is
// verified (against `server.ca_file`, else the system's roots) unless `server.insecure`. Throws
// std::runtime_error, naming the server and never the token, when `server.url` is not an
// http(s)://host[:port] URL, the CA file cannot be read, the server cannot be reached or
// verified, the exchange outlasts `server.timeout`, or the body passes kMaxDebugResponseBytes.
DebugResponse DebugCall(const DebugServer& server, const std::string& method,
                        const std::string& path_and_query, const std::string& body = "",
                        const std::string& content_type = "");

// A path segment with everything but RFC 3986 unreserved characters percent-encoded.
std::string EncodePathSegment(const std::string& segment);

}  // namespace berth::cmd

#endif  // BERTH_CMD_BERTH_SCHEDULER_DEBUG_CLIENT_H_
