#include "pkg/plugins/outofprocess/protocol.h"

#include <array>

#include "pkg/api/object_encode.h"
#include "pkg/util/time.h"

namespace berth::plugins::outofprocess {
namespace {

using json = nlohmann::json;

// An endpoint's reason ends up in statuses, events and the pod's condition: a longer one is cut.
constexpr size_t kMaxReasonBytes = 1024;

struct VerbNames {
  std::string_view path;
  std::string_view label;
};
constexpr std::array<VerbNames, kVerbs> kVerbNames = {{
    {"prefilter", "PreFilter"},
    {"filter", "Filter"},
    {"score", "Score"},
    {"reserve", "Reserve"},
    {"unreserve", "Unreserve"},
    {"permit", "Permit"},
    {"permit-status", "PermitStatus"},
    {"prebind", "PreBind"},
    {"postbind", "PostBind"},
}};

// Cuts `text` to kMaxReasonBytes on a UTF-8 boundary (the parser has checked it is UTF-8).
std::string Bounded(std::string text) {
  if (text.size() <= kMaxReasonBytes) return text;
  size_t end = kMaxReasonBytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) end--;
  text.resize(end);
  text += "...";
  return text;
}

// The member `key` of `object` as a string; nullopt when absent or null.
std::optional<std::string> OptionalString(const json& object, std::string_view key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) throw ProtocolError("\"" + std::string(key) + "\" must be a string");
  return it->get<std::string>();
}

const json* OptionalObject(const json& object, std::string_view key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  if (!it->is_object()) throw ProtocolError("\"" + std::string(key) + "\" must be an object");
  return &*it;
}

framework::Code CodeNamed(const std::string& code) {
  if (code == "Success") return framework::Code::kSuccess;
  if (code == "Unschedulable") return framework::Code::kUnschedulable;
  if (code == "UnschedulableAndUnresolvable") {
    return framework::Code::kUnschedulableAndUnresolvable;
  }
  throw ProtocolError(
      "\"code\" must be Success, Unschedulable or UnschedulableAndUnresolvable, "
      "not \"" +
      Bounded(code) + "\"");
}

void AppendRejected(const json* nodes, framework::Code code, std::string_view key,
                    FilterAnswer* out) {
  if (nodes == nullptr) return;
  for (const auto& [node, reason] : nodes->items()) {
    if (!reason.is_string()) {
      throw ProtocolError("\"" + std::string(key) + "\" must map node names to reasons");
    }
    out->rejected.push_back({node, Verdict{code, Bounded(reason.get<std::string>())}});
  }
}

}  // namespace

std::string_view VerbPath(Verb verb) { return kVerbNames[static_cast<size_t>(verb)].path; }
std::string_view VerbLabel(Verb verb) { return kVerbNames[static_cast<size_t>(verb)].label; }

std::string EndpointPod(const api::Pod& pod) {
  std::string text;
  api::AppendPodJson(pod, &text);
  return text;
}

std::string RequestBody(Verb verb, std::string_view endpoint, std::string_view profile,
                        std::string_view pod, std::span<const std::string_view> nodes,
                        std::string_view node, bool dry_run) {
  json body = {{"apiVersion", kApiVersion},
               {"kind", "Request"},
               {"verb", VerbPath(verb)},
               {"endpoint", endpoint},
               {"profile", profile}};
  if (verb == Verb::kPreFilter || verb == Verb::kFilter || verb == Verb::kScore) {
    json names = json::array();
    for (std::string_view name : nodes) names.push_back(name);
    body["nodes"] = std::move(names);
    if (dry_run) body["dryRun"] = true;
  } else {
    body["node"] = node;
  }
  // Replaced, not thrown: names are UTF-8 as the apiserver checked them, but nothing the
  // scheduler sends may fail on its content.
  std::string text = body.dump(-1, ' ', false, json::error_handler_t::replace);
  // The pod, already JSON text, goes in last: re-parsing it into the document would cost more
  // than the rest of the request.
  text.pop_back();
  text.append(",\"pod\":").append(pod).push_back('}');
  return text;
}

json ParseResponse(std::string_view body) {
  json parsed;
  try {
    // nlohmann's parser keeps its own stack rather than recursing; the callback refuses depth
    // before the document is built, so a deep answer costs neither stack nor memory.
    parsed = json::parse(body, [](int depth, json::parse_event_t event, json&) {
      if ((event == json::parse_event_t::object_start ||
           event == json::parse_event_t::array_start) &&
          depth >= kMaxResponseDepth) {
        throw ProtocolError("the answer is nested deeper than " +
                            std::to_string(kMaxResponseDepth) + " levels");
      }
      return true;
    });
  } catch (const json::exception& e) {
    throw ProtocolError(std::string("the answer is not JSON: ") + e.what());
  }
  if (!parsed.is_object()) throw ProtocolError("the answer is not a JSON object");
  if (auto version = OptionalString(parsed, "apiVersion"); version && *version != kApiVersion) {
    throw ProtocolError("the answer's apiVersion \"" + Bounded(*version) + "\" is not " +
                        std::string(kApiVersion));
  }
  if (auto error = OptionalString(parsed, "error"); error && !error->empty()) {
    throw ProtocolError("the endpoint reported an error: " + Bounded(*error));
  }
  return parsed;
}

Verdict DecodeVerdict(const json& response) {
  Verdict out;
  if (auto code = OptionalString(response, "code")) out.code = CodeNamed(*code);
  if (auto reason = OptionalString(response, "reason")) out.reason = Bounded(std::move(*reason));
  return out;
}

PreFilterAnswer DecodePreFilter(const json& response) {
  PreFilterAnswer out;
  out.verdict = DecodeVerdict(response);
  auto it = response.find("nodeNames");
  if (it != response.end() && !it->is_null()) {
    if (!it->is_array()) throw ProtocolError("\"nodeNames\" must be a list of node names");
    std::vector<std::string> names;
    names.reserve(it->size());
    for (const json& name : *it) {
      if (!name.is_string()) throw ProtocolError("\"nodeNames\" must be a list of node names");
      names.push_back(name.get<std::string>());
    }
    out.node_names = std::move(names);
  }
  return out;
}

FilterAnswer DecodeFilter(const json& response) {
  FilterAnswer out;
  AppendRejected(OptionalObject(response, "failedNodes"), framework::Code::kUnschedulable,
                 "failedNodes", &out);
  AppendRejected(OptionalObject(response, "failedAndUnresolvableNodes"),
                 framework::Code::kUnschedulableAndUnresolvable, "failedAndUnresolvableNodes",
                 &out);
  return out;
}

std::vector<std::pair<std::string, int64_t>> DecodeScores(const json& response) {
  std::vector<std::pair<std::string, int64_t>> out;
  const json* scores = OptionalObject(response, "scores");
  if (scores == nullptr) return out;
  out.reserve(scores->size());
  for (const auto& [node, score] : scores->items()) {
    if (!score.is_number_integer()) {
      throw ProtocolError("\"scores\" must map node names to integers");
    }
    // Compared as the parsed type: an unsigned beyond int64 must not wrap into range.
    const bool in_range =
        score.is_number_unsigned()
            ? score.get<uint64_t>() <= static_cast<uint64_t>(framework::kMaxNodeScore)
            : score.get<int64_t>() >= framework::kMinNodeScore &&
                  score.get<int64_t>() <= framework::kMaxNodeScore;
    if (!in_range) {
      throw ProtocolError("the score of node \"" + Bounded(node) + "\" is " + score.dump() +
                          ", not in [0, 100]");
    }
    out.push_back({node, score.get<int64_t>()});
  }
  return out;
}

PermitAnswer DecodePermit(const json& response) {
  PermitAnswer out;
  const std::optional<std::string> decision = OptionalString(response, "decision");
  if (!decision) throw ProtocolError("the answer has no \"decision\"");
  if (*decision == "allow") {
    out.decision = PermitAnswer::Decision::kAllow;
  } else if (*decision == "reject") {
    out.decision = PermitAnswer::Decision::kReject;
  } else if (*decision == "wait") {
    out.decision = PermitAnswer::Decision::kWait;
  } else {
    throw ProtocolError("\"decision\" must be allow, reject or wait, not \"" + Bounded(*decision) +
                        "\"");
  }
  if (auto reason = OptionalString(response, "reason")) out.reason = Bounded(std::move(*reason));
  if (auto timeout = OptionalString(response, "timeout")) {
    const auto parsed = util::ParseGoDuration(*timeout);
    if (!parsed || parsed->count() <= 0) {
      throw ProtocolError("\"timeout\" must be a positive duration such as \"30s\", not \"" +
                          Bounded(*timeout) + "\"");
    }
    out.timeout = std::chrono::ceil<std::chrono::milliseconds>(*parsed);
  }
  return out;
}

}  // namespace berth::plugins::outofprocess
