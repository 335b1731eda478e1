#ifndef BERTH_PKG_PLUGINS_OUTOFPROCESS_ARGS_H_
#define BERTH_PKG_PLUGINS_OUTOFPROCESS_ARGS_H_

// OutOfProcess's pluginConfig args: the endpoints, the extension points each one serves, their
// timeouts, TLS and failure policy. Parsed once, when the profile is built.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace berth::plugins::outofprocess {

// The extension points an endpoint may serve, as the args name them. Reserve brings Unreserve
// with it: an endpoint that was told of a reservation is told when it is undone.
enum class Point : uint8_t { kPreFilter, kFilter, kScore, kReserve, kPermit, kPreBind, kPostBind };
inline constexpr size_t kPoints = 7;
inline constexpr std::array<std::string_view, kPoints> kPointNames = {
    "PreFilter", "Filter", "Score", "Reserve", "Permit", "PreBind", "PostBind"};
inline std::string_view PointName(Point point) { return kPointNames[static_cast<size_t>(point)]; }

inline constexpr std::chrono::milliseconds kDefaultTimeout{5000};
// A call may take at most this long: the scheduling thread waits on PreFilter, Score, Reserve and
// Permit calls.
inline constexpr std::chrono::milliseconds kMaxTimeout{std::chrono::minutes(5)};
inline constexpr std::chrono::milliseconds kDefaultMaxWait{std::chrono::seconds(60)};
// Below the framework's own cap on a Permit wait (framework::kMaxPermitTimeout), so that the
// endpoint's deadline, whose rejection names the endpoint, always comes first.
inline constexpr std::chrono::milliseconds kMaxMaxWait{std::chrono::minutes(14)};
inline constexpr std::chrono::milliseconds kDefaultPollInterval{1000};
inline constexpr std::chrono::milliseconds kMinPollInterval{10};

// TLS toward an https:// endpoint, as kube-scheduler's extender tlsConfig spells it: *Data
// fields are base64 of the PEM text (decoded here), *File fields are read when the plugin is
// built. A field and its file are exclusive.
struct TlsArgs {
  bool insecure = false;
  std::string server_name;
  std::string ca_file;
  std::string ca_pem;
  std::string cert_file;
  std::string cert_pem;
  std::string key_file;
  std::string key_pem;
};

struct PermitArgs {
  // The longest wait an endpoint may ask for; a longer one is cut to it, and a wait without a
  // timeout gets it.
  std::chrono::milliseconds max_wait = kDefaultMaxWait;
  // How often a waiting pod's endpoint is asked for its decision (permit-status).
  std::chrono::milliseconds poll_interval = kDefaultPollInterval;
};

struct EndpointArgs {
  // Unique within the args; names the endpoint in messages, metrics and requests.
  std::string name;
  // http(s)://host[:port][/path]; verb V is POSTed to <url>/V.
  std::string url;
  std::array<bool, kPoints> points{};
  // Per point: `timeout`, or the point's entry of `timeouts`.
  std::array<std::chrono::milliseconds, kPoints> timeouts{};
  PermitArgs permit;
  TlsArgs tls;
  // A failed call (no answer, a timeout, an error status or a malformed answer) is then skipped
  // as if the endpoint had no opinion; a verdict it does give still counts.
  bool ignorable = false;
  // How much this endpoint's scores count against the other endpoints' (1..100).
  int64_t score_weight = 1;

  bool Serves(Point point) const { return points[static_cast<size_t>(point)]; }
  std::chrono::milliseconds TimeoutOf(Point point) const {
    return timeouts[static_cast<size_t>(point)];
  }
};

struct Args {
  std::vector<EndpointArgs> endpoints;
};

// Throws framework::InvalidArgs naming each bad field ("endpoints[0].url: Required value: ...").
Args ParseArgs(const nlohmann::json& args);

}  // namespace berth::plugins::outofprocess

#endif  // BERTH_PKG_PLUGINS_OUTOFPROCESS_ARGS_H_
