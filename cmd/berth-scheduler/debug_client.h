#ifndef BERTH_CMD_BERTH_SCHEDULER_DEBUG_CLIENT_H_
#define BERTH_CMD_BERTH_SCHEDULER_DEBUG_CLIENT_H_

// The HTTP(S) client of the explain and simulate commands. Kept apart from the rest of the
// commands: cpprestsdk's headers define macros that break fmt's.

#include <string>

namespace berth::cmd {

struct DebugServer {
  std::string url;      // "https://127.0.0.1:10259"
  std::string ca_file;  // Verify an https server with this CA; empty: the system's.
  bool insecure = false;
  std::string token;  // Sent as "Authorization: Bearer"; empty: none. Never logged.
};

struct DebugResponse {
  int status = 0;
  std::string body;
};

// One request to the scheduler's serving port. Throws std::runtime_error when `server.url` is
// not a URL or the server cannot be reached, naming it.
DebugResponse DebugCall(const DebugServer& server, const std::string& method,
                        const std::string& path_and_query, const std::string& body = "",
                        const std::string& content_type = "");

// A path segment with everything but unreserved characters percent-encoded.
std::string EncodePathSegment(const std::string& segment);

}  // namespace berth::cmd

#endif  // BERTH_CMD_BERTH_SCHEDULER_DEBUG_CLIENT_H_
