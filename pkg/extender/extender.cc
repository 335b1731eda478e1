#include "pkg/extender/extender.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "pkg/client/client.h"
#include "pkg/client/webhook.h"
#include "pkg/extender/go_json.h"
#include "pkg/extender/wire.h"
#include "pkg/plugins/helper/extended_resources.h"

namespace berth::extender {
namespace {

using Clock = std::chrono::steady_clock;
using framework::Status;

// Why a call failed, for the error counter.
enum class Failure { kTimeout, kTransport, kHttpStatus, kMalformed, kExtenderError };

const char* FailureName(Failure f) {
  switch (f) {
    case Failure::kTimeout:
      return "timeout";
    case Failure::kTransport:
      return "transport";
    case Failure::kHttpStatus:
      return "http_status";
    case Failure::kMalformed:
      return "malformed_response";
    case Failure::kExtenderError:
      return "extender_error";
  }
  return "unknown";
}

// Per-extender call metrics; families shared by every extender of one registry.
class CallMetrics {
 public:
  explicit CallMetrics(prometheus::Registry* registry) {
    if (registry == nullptr) return;
    duration_ = &prometheus::BuildHistogram()
                     .Name("berth_extender_request_duration_seconds")
                     .Help(
                         "Time from sending a request to an extender to its whole response, by "
                         "extender (urlPrefix), verb and result (success or error).")
                     .Register(*registry);
    errors_ = &prometheus::BuildCounter()
                   .Name("berth_extender_request_errors_total")
                   .Help(
                       "Extender calls that failed, by extender, verb and reason (timeout, "
                       "transport, http_status, malformed_response, extender_error).")
                   .Register(*registry);
  }

  void Observe(const std::string& extender, const std::string& verb, double seconds,
               const Failure* failure) const {
    if (duration_ == nullptr) return;
    static const prometheus::Histogram::BucketBoundaries kBuckets = {
        0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10};
    duration_
        ->Add({{"extender", extender}, {"verb", verb}, {"result", failure ? "error" : "success"}},
              kBuckets)
        .Observe(seconds);
    if (failure != nullptr) {
      errors_->Add({{"extender", extender}, {"verb", verb}, {"reason", FailureName(*failure)}})
          .Increment();
    }
  }

 private:
  prometheus::Family<prometheus::Histogram>* duration_ = nullptr;
  prometheus::Family<prometheus::Counter>* errors_ = nullptr;
};

// A failed call; the message is the pod's error.
struct CallFailure {
  Failure reason;
  std::string message;
};

class HttpExtender;

class PendingHttpScores final : public framework::Extender::PendingScores {
 public:
  PendingHttpScores(const HttpExtender* extender, std::optional<client::Webhook::Call> call,
                    Clock::time_point start, std::string start_error)
      : extender_(extender),
        call_(std::move(call)),
        start_(start),
        start_error_(std::move(start_error)) {}
  Status Wait(std::vector<framework::ExtenderScore>* out) override;

 private:
  const HttpExtender* extender_;
  std::optional<client::Webhook::Call> call_;
  Clock::time_point start_;
  std::string start_error_;
};

class HttpExtender final : public framework::Extender {
 public:
  HttpExtender(const config::Extender& config, std::unique_ptr<client::Webhook> webhook,
               std::shared_ptr<const CallMetrics> metrics)
      : name_(config.url_prefix),
        filter_verb_(config.filter_verb),
        prioritize_verb_(config.prioritize_verb),
        preempt_verb_(config.preempt_verb),
        bind_verb_(config.bind_verb),
        weight_(config.weight),
        node_cache_capable_(config.node_cache_capable),
        ignorable_(config.ignorable),
        webhook_(std::move(webhook)),
        metrics_(std::move(metrics)) {
    for (const auto& r : config.managed_resources) managed_.insert(r.name);
  }

  const framework::PluginName& Name() const override { return name_; }
  bool IsFilter() const override { return !filter_verb_.empty(); }
  bool IsPrioritizer() const override { return !prioritize_verb_.empty(); }
  bool IsBinder() const override { return !bind_verb_.empty(); }
  bool SupportsPreemption() const override { return !preempt_verb_.empty(); }
  bool IsIgnorable() const override { return ignorable_; }
  int64_t Weight() const override { return weight_; }

  bool IsInterested(const api::Pod& pod) const override {
    if (managed_.empty()) return true;
    auto names = [&](const api::ResourceList& list) {
      for (const auto& [name, amount] : list.scalar) {
        if (managed_.count(name)) return true;
      }
      return false;
    };
    auto containers = [&](const std::vector<api::Container>& list) {
      for (const api::Container& c : list) {
        if (names(c.resources.requests) || names(c.resources.limits)) return true;
      }
      return false;
    };
    return containers(pod.spec.containers) || containers(pod.spec.init_containers);
  }

  Status Filter(const api::Pod& pod, std::span<const framework::NodeInfo* const> nodes,
                FilterResult* out) const override {
    out->feasible.assign(nodes.begin(), nodes.end());
    out->failed.clear();
    out->failed_and_unresolvable.clear();
    if (filter_verb_.empty()) return {};
    std::string body;
    if (auto failed =
            Send(filter_verb_, wire::ExtenderArgs(pod, nodes, node_cache_capable_), &body)) {
      out->feasible.clear();
      return Status::Error(failed->message);
    }
    wire::FilterResult result;
    try {
      result = wire::DecodeFilterResult(body);
    } catch (const ResponseError& e) {
      out->feasible.clear();
      return Malformed(filter_verb_, e.what());
    }
    out->feasible.clear();
    if (!result.error.empty()) {
      Count(filter_verb_, Failure::kExtenderError);
      return Status::Error(result.error);
    }
    const std::vector<std::string>* names = nullptr;
    if (node_cache_capable_ && result.node_names) {
      names = &*result.node_names;
    } else if (result.nodes) {
      names = &*result.nodes;
    }
    if (names != nullptr) {
      std::unordered_map<std::string_view, const framework::NodeInfo*> given;
      given.reserve(nodes.size());
      for (const framework::NodeInfo* n : nodes) given.emplace(n->name(), n);
      out->feasible.reserve(names->size());
      for (const std::string& name : *names) {
        auto it = given.find(name);
        if (it == given.end()) {
          Count(filter_verb_, Failure::kMalformed);
          return Status::Error("extender \"" + name_.str() + "\" claims a filtered node \"" + name +
                               "\" which is not found in the input node list");
        }
        // A node named twice is kept once.
        if (it->second != nullptr) out->feasible.push_back(it->second);
        it->second = nullptr;
      }
    }
    out->failed.assign(result.failed_nodes.begin(), result.failed_nodes.end());
    out->failed_and_unresolvable.assign(result.failed_and_unresolvable_nodes.begin(),
                                        result.failed_and_unresolvable_nodes.end());
    return {};
  }

  std::unique_ptr<PendingScores> StartPrioritize(
      const api::Pod& pod, std::span<const framework::NodeInfo* const> nodes) const override {
    const auto start = Clock::now();
    try {
      return std::make_unique<PendingHttpScores>(
          this,
          webhook_->Start(prioritize_verb_, wire::ExtenderArgs(pod, nodes, node_cache_capable_)),
          start, "");
    } catch (const client::WebhookError& e) {
      return std::make_unique<PendingHttpScores>(this, std::nullopt, start, e.what());
    }
  }

  // The response of a prioritize call, or why there is none.
  Status FinishPrioritize(std::optional<client::Webhook::Call>& call, Clock::time_point start,
                          const std::string& start_error,
                          std::vector<framework::ExtenderScore>* out) const {
    out->clear();
    std::string body;
    if (auto failed = call ? Receive(prioritize_verb_, *call, start, &body)
                           : Failed(prioritize_verb_, Failure::kTransport, start_error, start)) {
      return Status::Error(failed->message);
    }
    try {
      *out = wire::DecodeHostPriorityList(body);
    } catch (const ResponseError& e) {
      return Malformed(prioritize_verb_, e.what());
    }
    return {};
  }

  Status ProcessPreemption(const api::Pod& pod,
                           const std::map<std::string, framework::ExtenderVictims>& victims,
                           const framework::NodeInfoLister& lister,
                           std::map<std::string, framework::ExtenderVictims>* out) const override {
    out->clear();
    if (preempt_verb_.empty()) {
      return Status::Error("preempt verb is not defined for extender " + name_.str() +
                           " but run into ProcessPreemption");
    }
    std::string body;
    if (auto failed =
            Send(preempt_verb_, wire::PreemptionArgs(pod, victims, node_cache_capable_), &body)) {
      return Status::Error(failed->message);
    }
    std::map<std::string, std::optional<wire::MetaVictims>> result;
    try {
      result = wire::DecodePreemptionResult(body);
    } catch (const ResponseError& e) {
      return Malformed(preempt_verb_, e.what());
    }
    for (const auto& [node_name, meta] : result) {
      framework::NodeInfoPtr node = lister.Get(node_name);
      if (!node || node->node() == nullptr) {
        out->clear();
        return Status::Error("nodeinfo not found for node name \"" + node_name + "\"");
      }
      framework::ExtenderVictims& v = (*out)[node_name];
      if (!meta) continue;
      v.num_pdb_violations = meta->num_pdb_violations;
      for (const std::string& uid : meta->pod_uids) {
        framework::PodInfoPtr found;
        for (const framework::PodInfoPtr& p : node->pods()) {
          if (p->pod->meta.uid == uid) {
            found = p;
            break;
          }
        }
        if (!found) {
          out->clear();
          std::string message = "extender: " + name_.str();
          message += " claims to preempt pod (UID: &{" + uid + "}) on node: ";
          message += node_name;
          message += ", but the pod is not found on that node";
          return Status::Error(std::move(message));
        }
        v.pods.push_back(std::move(found));
      }
    }
    return {};
  }

  Status Bind(const api::Pod& pod, const std::string& node) const override {
    if (bind_verb_.empty()) return Status::Error("unexpected empty bindVerb in extender");
    std::string body;
    if (auto failed = Send(bind_verb_, wire::BindingArgs(pod, node), &body)) {
      return Status::Error(failed->message);
    }
    try {
      if (std::string error = wire::DecodeBindingResult(body); !error.empty()) {
        Count(bind_verb_, Failure::kExtenderError);
        return Status::Error(error);
      }
    } catch (const ResponseError& e) {
      return Malformed(bind_verb_, e.what());
    }
    return {};
  }

 private:
  friend class PendingHttpScores;

  // POSTs `request` to `verb` and waits; the body of a 200 in *body, else the failure (counted).
  std::optional<CallFailure> Send(const std::string& verb, std::string request,
                                  std::string* body) const {
    const auto start = Clock::now();
    try {
      client::Webhook::Call call = webhook_->Start(verb, std::move(request));
      return Receive(verb, call, start, body);
    } catch (const client::WebhookError& e) {
      return Failed(verb, e.timeout() ? Failure::kTimeout : Failure::kTransport, e.what(), start);
    }
  }

  std::optional<CallFailure> Receive(const std::string& verb, client::Webhook::Call& call,
                                     Clock::time_point start, std::string* body) const {
    client::WebhookResponse response;
    try {
      response = call.Wait();
    } catch (const client::WebhookError& e) {
      return Failed(verb, e.timeout() ? Failure::kTimeout : Failure::kTransport, e.what(), start);
    }
    if (response.status != 200) {
      // Upstream's words, so that the pod's event reads as kube-scheduler's.
      return Failed(verb, Failure::kHttpStatus,
                    "failed " + verb + " with extender at URL " + webhook_->UrlFor(verb) +
                        ", code " + std::to_string(response.status),
                    start);
    }
    Observe(verb, start, nullptr);
    *body = std::move(response.body);
    return std::nullopt;
  }

  std::optional<CallFailure> Failed(const std::string& verb, Failure reason, std::string message,
                                    Clock::time_point start) const {
    Observe(verb, start, &reason);
    return CallFailure{reason, std::move(message)};
  }

  // An answer that is not the protocol's: an error naming the extender.
  Status Malformed(const std::string& verb, const std::string& problem) const {
    Count(verb, Failure::kMalformed);
    return Status::Error("extender " + name_.str() + ": malformed " + verb +
                         " response: " + problem);
  }

  void Observe(const std::string& verb, Clock::time_point start, const Failure* failure) const {
    metrics_->Observe(name_.str(), verb,
                      std::chrono::duration<double>(Clock::now() - start).count(), failure);
  }
  // A failure found after the response arrived (its duration was already observed).
  void Count(const std::string& verb, Failure failure) const {
    metrics_->Observe(name_.str(), verb, 0, &failure);
  }

  framework::PluginName name_;
  std::string filter_verb_, prioritize_verb_, preempt_verb_, bind_verb_;
  int64_t weight_;
  bool node_cache_capable_;
  bool ignorable_;
  std::set<std::string, std::less<>> managed_;
  std::unique_ptr<client::Webhook> webhook_;
  std::shared_ptr<const CallMetrics> metrics_;
};

Status PendingHttpScores::Wait(std::vector<framework::ExtenderScore>* out) {
  return extender_->FinishPrioritize(call_, start_, start_error_, out);
}

std::string ReadFile(const std::string& path, const std::string& field, const std::string& source) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (!in || !(text << in.rdbuf())) {
    throw config::ConfigError(source, {{field, "cannot read " + path}});
  }
  return text.str();
}

}  // namespace

std::vector<std::shared_ptr<framework::Extender>> Build(
    const std::vector<config::Extender>& extenders, const std::string& source,
    prometheus::Registry* registry) {
  std::vector<config::ConfigIssue> issues;
  for (size_t i = 0; i < extenders.size(); i++) {
    for (size_t j = 0; j < extenders[i].managed_resources.size(); j++) {
      const std::string& name = extenders[i].managed_resources[j].name;
      if (!plugins::helper::IsExtendedResourceName(name)) {
        issues.push_back({"extenders[" + std::to_string(i) + "].managedResources[" +
                              std::to_string(j) + "].name",
                          "\"" + name + "\" is an invalid extended resource name"});
      }
    }
  }
  if (!issues.empty()) throw config::ConfigError(source, std::move(issues));

  auto metrics = std::make_shared<const CallMetrics>(registry);
  std::vector<std::shared_ptr<framework::Extender>> out, ignorable;
  for (size_t i = 0; i < extenders.size(); i++) {
    const config::Extender& e = extenders[i];
    const std::string path = "extenders[" + std::to_string(i) + "]";
    client::WebhookConfig webhook;
    webhook.url_prefix = e.url_prefix;
    webhook.timeout = e.http_timeout;
    if (e.tls_config) {
      const config::ExtenderTlsConfig& tls = *e.tls_config;
      webhook.tls.insecure = tls.insecure;
      webhook.tls.server_name = tls.server_name;
      // Data wins over a file, as in client-go's TLS configuration.
      webhook.tls.ca_pem = !tls.ca_data.empty() ? tls.ca_data
                           : tls.ca_file.empty()
                               ? ""
                               : ReadFile(tls.ca_file, path + ".tlsConfig.caFile", source);
      webhook.tls.cert_pem = !tls.cert_data.empty() ? tls.cert_data
                             : tls.cert_file.empty()
                                 ? ""
                                 : ReadFile(tls.cert_file, path + ".tlsConfig.certFile", source);
      webhook.tls.key_pem = !tls.key_data.empty() ? tls.key_data
                            : tls.key_file.empty()
                                ? ""
                                : ReadFile(tls.key_file, path + ".tlsConfig.keyFile", source);
    }
    std::unique_ptr<client::Webhook> client;
    try {
      client = std::make_unique<client::Webhook>(webhook);
    } catch (const client::ConfigError& e) {
      throw config::ConfigError(source, {{path, e.what()}});
    }
    auto extender = std::make_shared<HttpExtender>(e, std::move(client), metrics);
    (e.ignorable ? ignorable : out).push_back(std::move(extender));
  }
  for (auto& e : ignorable) out.push_back(std::move(e));
  return out;
}

}  // namespace berth::extender
