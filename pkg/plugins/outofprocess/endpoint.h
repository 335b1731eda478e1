#ifndef BERTH_PKG_PLUGINS_OUTOFPROCESS_ENDPOINT_H_
#define BERTH_PKG_PLUGINS_OUTOFPROCESS_ENDPOINT_H_

// One configured endpoint: its Webhooks (one per distinct timeout among the points it serves,
// each with its own connection pool), its metrics, and the one way a call is made and judged.
// Thread-safe: calls run from the scheduling thread, binding threads and the Permit poller at
// once.

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "pkg/client/webhook.h"
#include "pkg/plugins/outofprocess/args.h"
#include "pkg/plugins/outofprocess/protocol.h"

namespace prometheus {
class Counter;
class Histogram;
class Registry;
}  // namespace prometheus

namespace berth::plugins::outofprocess {

// Why a call failed, as the berth_outofprocess_request_errors_total result label says it.
enum class Failure : uint8_t { kTimeout, kUnreachable, kHttpStatus, kMalformed };
inline constexpr size_t kFailures = 4;
std::string_view FailureName(Failure failure);

// The point whose settings (timeout) a verb uses.
Point PointOf(Verb verb);

class Endpoint {
 public:
  // The outcome of one call: the parsed answer, or why there is none.
  struct Reply {
    std::optional<nlohmann::json> answer;
    Failure failure = Failure::kUnreachable;
    // Names the endpoint, the verb and the URL.
    std::string error;
    bool ok() const { return answer.has_value(); }
  };

  // A call started and not yet waited on.
  class Pending {
   public:
    // Blocks until the answer or the timeout; records the call's metrics.
    Reply Wait();

   private:
    friend class Endpoint;
    Pending(const Endpoint* endpoint, Verb verb) : endpoint_(endpoint), verb_(verb) {}
    const Endpoint* endpoint_;
    Verb verb_;
    std::chrono::steady_clock::time_point start_;
    std::optional<client::Webhook::Call> call_;
    // Set when the call could not even start.
    std::string start_error_;
  };

  // Throws std::invalid_argument naming the endpoint for unreadable TLS files or a URL or TLS
  // material the client refuses. `registry` may be null (no metrics).
  Endpoint(const EndpointArgs& args, const std::string& profile, prometheus::Registry* registry);
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  const EndpointArgs& args() const { return args_; }
  const std::string& name() const { return args_.name; }
  bool Serves(Point point) const { return args_.Serves(point); }

  // Starts POST <url>/<verb> with `body`; never throws (a call that cannot start fails at Wait).
  Pending Start(Verb verb, std::string body) const;

 private:
  struct VerbMetrics {
    prometheus::Histogram* success = nullptr;
    prometheus::Histogram* error = nullptr;
    std::array<prometheus::Counter*, kFailures> failures{};
  };

  void Observe(Verb verb, double seconds, const std::optional<Failure>& failure) const;

  const EndpointArgs args_;
  std::map<std::chrono::milliseconds, std::unique_ptr<client::Webhook>> webhooks_;
  // Per point: the Webhook with its timeout; null for points not served.
  std::array<const client::Webhook*, kPoints> by_point_{};
  std::array<VerbMetrics, kVerbs> metrics_{};
};

// "out-of-process endpoint \"<name>\"": how every message starts that is about an endpoint.
std::string Named(const Endpoint& endpoint);

}  // namespace berth::plugins::outofprocess

#endif  // BERTH_PKG_PLUGINS_OUTOFPROCESS_ENDPOINT_H_
