#include "pkg/scheduler/debug_endpoints.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/api/errors.h"
#include "pkg/config/load.h"
#include "pkg/explain/record.h"
#include "pkg/util/time.h"

namespace berth::scheduler {
namespace {

// Deeper brackets than any pod needs; parsers recurse on them.
constexpr int kMaxNesting = 64;

// The deepest nesting of brackets and braces outside double-quoted strings.
int MaxNesting(const std::string& text) {
  int depth = 0;
  int max = 0;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); i++) {
    const char c = text[i];
    if (quoted) {
      if (c == '\\') {
        i++;
      } else if (c == '"') {
        quoted = false;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
    } else if (c == '{' || c == '[') {
      max = std::max(max, ++depth);
    } else if ((c == '}' || c == ']') && depth > 0) {
      depth--;
    }
  }
  return max;
}

bool WantsText(const server::DebugRequest& request) {
  auto it = request.query.find("format");
  return it != request.query.end() && it->second == "text";
}

server::DebugResponse Error(const server::DebugRequest& request, int status,
                            const std::string& message) {
  if (WantsText(request)) return {status, message + "\n", "text/plain; charset=utf-8"};
  return {status, nlohmann::json{{"error", message}}.dump() + "\n", "application/json"};
}

server::DebugResponse Reply(const server::DebugRequest& request, const nlohmann::json& json,
                            const std::string& text) {
  if (WantsText(request)) return {200, text, "text/plain; charset=utf-8"};
  return {200, json.dump(2) + "\n", "application/json"};
}

api::Pod DecodeUserPod(nlohmann::json object, const std::string& where,
                       const std::string& default_profile, size_t index) {
  if (!object.is_object()) throw std::invalid_argument(where + ": expected a Pod object");
  if (auto kind = object.find("kind"); kind != object.end() && *kind != "Pod") {
    throw std::invalid_argument(where + ": kind: expected \"Pod\", got " + kind->dump());
  }
  if (auto version = object.find("apiVersion"); version != object.end() && *version != "v1") {
    throw std::invalid_argument(where + ": apiVersion: expected \"v1\", got " + version->dump());
  }
  auto& meta = object["metadata"];
  if (meta.is_null()) meta = nlohmann::json::object();
  if (meta.is_object()) {
    if (!meta.contains("namespace")) meta["namespace"] = "default";
    if (!meta.contains("uid")) meta["uid"] = "dry-run-" + std::to_string(index);
  }
  auto& spec = object["spec"];
  if (spec.is_null()) spec = nlohmann::json::object();
  if (spec.is_object() && !spec.contains("schedulerName")) spec["schedulerName"] = default_profile;
  try {
    return api::DecodePod(object);
  } catch (const std::exception& e) {
    throw std::invalid_argument(where + ": " + e.what());
  }
}

}  // namespace

std::vector<api::Pod> PodsFromText(const std::string& text, const std::string& source,
                                   const std::string& default_profile, config::Aliases aliases) {
  if (MaxNesting(text) > kMaxNesting) {
    throw std::invalid_argument(source + ": nested more than " + std::to_string(kMaxNesting) +
                                " levels deep");
  }
  std::vector<nlohmann::json> documents;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    try {
      documents.push_back(nlohmann::json::parse(text));
    } catch (const nlohmann::json::exception& e) {
      throw std::invalid_argument(source + ": invalid JSON: " + e.what());
    }
  } else {
    try {
      documents = config::YamlDocumentsToJson(text, source, config::kMaxDocumentValues, aliases);
    } catch (const std::exception& e) {
      throw std::invalid_argument(e.what());
    }
  }
  std::vector<api::Pod> pods;
  for (size_t d = 0; d < documents.size(); d++) {
    nlohmann::json& doc = documents[d];
    const std::string where =
        documents.size() > 1 ? source + ": document " + std::to_string(d + 1) : source;
    if (doc.is_object() && doc.value("kind", "") == "List") {
      auto items = doc.find("items");
      if (items == doc.end() || !items->is_array()) {
        throw std::invalid_argument(where + ": items: expected a list of Pods");
      }
      for (size_t i = 0; i < items->size(); i++) {
        pods.push_back(DecodeUserPod(std::move((*items)[i]),
                                     where + ": items[" + std::to_string(i) + "]", default_profile,
                                     pods.size()));
      }
      continue;
    }
    pods.push_back(DecodeUserPod(std::move(doc), where, default_profile, pods.size()));
  }
  if (pods.empty()) throw std::invalid_argument(source + ": no Pod found");
  return pods;
}

server::DebugResponse ServeDebug(Scheduler& scheduler, const server::DebugRequest& request) {
  const std::string& path = request.path;
  const std::string pods_prefix = "/debug/pods";
  if (path == pods_prefix || path == pods_prefix + "/") {
    if (request.method != "GET") return Error(request, 405, "GET " + pods_prefix + " only");
    auto pending = request.query.find("pending");
    const bool pending_only = pending != request.query.end() && pending->second == "true";
    std::vector<explain::AttemptPtr> attempts = scheduler.dry_runs().PendingAttempts();
    const size_t num_pending = attempts.size();
    if (!pending_only) {
      for (auto& a : scheduler.attempts().Recent()) attempts.push_back(std::move(a));
    }
    nlohmann::json items = nlohmann::json::array();
    std::string text;
    for (size_t i = 0; i < attempts.size(); i++) {
      const explain::Attempt& a = *attempts[i];
      items.push_back({{"pod", a.pod},
                       {"time", util::FormatRfc3339Milli(a.time)},
                       {"attempt", a.attempt},
                       {"pending", i < num_pending},
                       {"outcome", std::string(explain::OutcomeName(a.outcome))},
                       {"node", a.node},
                       {"reason", a.message}});
      text += explain::SummaryLine(a) + "\n";
    }
    if (attempts.empty()) text = pending_only ? "no pending pods\n" : "no attempts recorded\n";
    return Reply(request, {{"items", items}}, text);
  }
  if (path.rfind(pods_prefix + "/", 0) == 0) {
    if (request.method != "GET") return Error(request, 405, "GET only");
    const std::string key = path.substr(pods_prefix.size() + 1);
    const size_t slash = key.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == key.size() ||
        key.find('/', slash + 1) != std::string::npos) {
      return Error(request, 400, "expected /debug/pods/{namespace}/{name}, got " + path);
    }
    std::optional<explain::Explanation> e = scheduler.dry_runs().Explain(key);
    if (!e) {
      return Error(request, 404,
                   "no attempt of pod " + key +
                       " is recorded: it does not exist, is not this scheduler's, has not been "
                       "tried yet, or was bound longer ago than the last " +
                       std::to_string(scheduler.attempts().options().recent_bound) + " decisions");
    }
    return Reply(request, explain::ToJson(*e), explain::ToText(*e));
  }
  if (path == "/debug/simulate") {
    if (request.method != "POST") {
      return Error(request, 405, "POST a Pod (YAML or JSON) to /debug/simulate");
    }
    std::vector<api::Pod> pods;
    try {
      // A network client's body: no aliases, so what is parsed is no larger than what was sent.
      pods = PodsFromText(request.body, "body", scheduler.FirstProfile(), config::Aliases::kRefuse);
    } catch (const std::exception& e) {
      return Error(request, 400, e.what());
    }
    if (pods.size() != 1) {
      return Error(request, 400,
                   "body: expected one Pod, got " + std::to_string(pods.size()) +
                       " (berth-scheduler simulate --cluster runs several offline)");
    }
    try {
      explain::Explanation e = scheduler.dry_runs().Simulate(pods.front());
      return Reply(request, explain::ToJson(e), explain::ToText(e));
    } catch (const std::invalid_argument& e) {
      return Error(request, 400, std::string("body: ") + e.what());
    }
  }
  return Error(request, 404, "no such debug endpoint: " + path);
}

}  // namespace berth::scheduler
