#ifndef BERTH_PKG_PLUGINS_OUTOFPROCESS_PROTOCOL_H_
#define BERTH_PKG_PLUGINS_OUTOFPROCESS_PROTOCOL_H_

// The JSON an out-of-process endpoint receives and answers, version outofprocess.berth.dev/v1alpha1
// (docs/extending.md, "Out-of-process plugins", is the reference). Every request is a POST of
// one object to <url>/<verb> carrying apiVersion, kind "Request", the verb, the endpoint's name,
// the profile and the pod; every answer is one object. Answers are decoded strictly and with a
// bounded depth: anything else than the documented shape is a ProtocolError naming what is
// wrong, never a crash. Pure functions, thread-safe.

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/api/types.h"
#include "pkg/framework/interface.h"

namespace berth::plugins::outofprocess {

inline constexpr std::string_view kApiVersion = "outofprocess.berth.dev/v1alpha1";

// The verbs, each POSTed to <url>/<verb>.
enum class Verb : uint8_t {
  kPreFilter,
  kFilter,
  kScore,
  kReserve,
  kUnreserve,
  kPermit,
  kPermitStatus,
  kPreBind,
  kPostBind,
};
inline constexpr size_t kVerbs = 9;
// The path segment: "prefilter", "permit-status", ...
std::string_view VerbPath(Verb verb);
// As metrics label it: "PreFilter", "PermitStatus", ...
std::string_view VerbLabel(Verb verb);

// An answer that is not what the protocol says (not JSON, too deep, a field of the wrong type, an
// unknown verdict) or that reports an error of the endpoint's own ("error": "...").
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Answers nested deeper than this are refused: the documented shapes need four levels.
inline constexpr int kMaxResponseDepth = 16;

// The pod as an endpoint receives it: the apiserver's v1 Pod JSON of what Berth holds of it
// (api::AppendPodJson; pkg/api/object_encode.h lists what is left out), as JSON text. Made once
// per call site and spliced into each endpoint's request.
std::string EndpointPod(const api::Pod& pod);

// The body of a request, `pod` being EndpointPod's text. `nodes` for prefilter, filter and score
// (else empty); `node` for the verbs about one placement (else empty); `dry_run` when explain or
// simulate asks, so that the endpoint knows the question changes nothing.
std::string RequestBody(Verb verb, std::string_view endpoint, std::string_view profile,
                        std::string_view pod, std::span<const std::string_view> nodes,
                        std::string_view node, bool dry_run);

// Parses an answer: one JSON object, no deeper than kMaxResponseDepth, whose apiVersion (when
// given) is kApiVersion and which carries no "error". Throws ProtocolError.
nlohmann::json ParseResponse(std::string_view body);

// A verdict on the pod (prefilter, reserve, prebind) or on one node (filter):
// {"code": "Success" | "Unschedulable" | "UnschedulableAndUnresolvable", "reason": "..."}; a
// missing code is Success.
struct Verdict {
  framework::Code code = framework::Code::kSuccess;
  std::string reason;
};
Verdict DecodeVerdict(const nlohmann::json& response);

struct PreFilterAnswer {
  Verdict verdict;
  // "nodeNames": when given, only these nodes may be considered.
  std::optional<std::vector<std::string>> node_names;
};
PreFilterAnswer DecodePreFilter(const nlohmann::json& response);

// "failedNodes" and "failedAndUnresolvableNodes": node name -> reason. Nodes not named pass.
struct FilterAnswer {
  std::vector<std::pair<std::string, Verdict>> rejected;
};
FilterAnswer DecodeFilter(const nlohmann::json& response);

// "scores": node name -> integer in [0, 100]; nodes not named score 0.
std::vector<std::pair<std::string, int64_t>> DecodeScores(const nlohmann::json& response);

// permit and permit-status: {"decision": "allow" | "reject" | "wait", "reason": "...",
// "timeout": "<Go duration>"}. permit-status's "wait" means not decided yet; its timeout is
// ignored.
struct PermitAnswer {
  enum class Decision { kAllow, kReject, kWait };
  Decision decision = Decision::kAllow;
  std::string reason;
  std::optional<std::chrono::milliseconds> timeout;
};
PermitAnswer DecodePermit(const nlohmann::json& response);

}  // namespace berth::plugins::outofprocess

#endif  // BERTH_PKG_PLUGINS_OUTOFPROCESS_PROTOCOL_H_
