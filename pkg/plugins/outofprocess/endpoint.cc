#include "pkg/plugins/outofprocess/endpoint.h"

#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "pkg/client/client.h"

namespace berth::plugins::outofprocess {
namespace {

using Clock = std::chrono::steady_clock;

// An answer larger than this is a failure. A filter answer for every node of a 5,000-node cluster
// with a reason each is well under a megabyte.
constexpr size_t kMaxResponseBytes = size_t{16} << 20;
// How much of an error status's body a message quotes.
constexpr size_t kQuotedBodyBytes = 200;

constexpr std::array<std::string_view, kFailures> kFailureNames = {"timeout", "unreachable",
                                                                   "http-status", "malformed"};

std::string ReadPemFile(const std::string& path, const std::string& endpoint,
                        std::string_view field) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::invalid_argument("endpoint \"" + endpoint + "\": tls." + std::string(field) +
                                ": cannot read \"" + path + "\"");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Quote(const std::string& body) {
  std::string text = body.substr(0, kQuotedBodyBytes);
  // A cut in the middle of a UTF-8 sequence is dropped rather than sent on in a message.
  while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0x80) != 0) text.pop_back();
  return text + (body.size() > text.size() ? "..." : "");
}

}  // namespace

std::string_view FailureName(Failure failure) {
  return kFailureNames[static_cast<size_t>(failure)];
}

Point PointOf(Verb verb) {
  switch (verb) {
    case Verb::kPreFilter:
      return Point::kPreFilter;
    case Verb::kFilter:
      return Point::kFilter;
    case Verb::kScore:
      return Point::kScore;
    case Verb::kReserve:
    case Verb::kUnreserve:
      return Point::kReserve;
    case Verb::kPermit:
    case Verb::kPermitStatus:
      return Point::kPermit;
    case Verb::kPreBind:
      return Point::kPreBind;
    case Verb::kPostBind:
      return Point::kPostBind;
  }
  return Point::kPostBind;
}

std::string Named(const Endpoint& endpoint) {
  return "out-of-process endpoint \"" + endpoint.name() + "\"";
}

Endpoint::Endpoint(const EndpointArgs& args, const std::string& profile,
                   prometheus::Registry* registry)
    : args_(args) {
  client::WebhookConfig config;
  config.url_prefix = args_.url;
  config.max_response_bytes = kMaxResponseBytes;
  config.tls.insecure = args_.tls.insecure;
  config.tls.server_name = args_.tls.server_name;
  config.tls.ca_pem = args_.tls.ca_file.empty()
                          ? args_.tls.ca_pem
                          : ReadPemFile(args_.tls.ca_file, args_.name, "caFile");
  config.tls.cert_pem = args_.tls.cert_file.empty()
                            ? args_.tls.cert_pem
                            : ReadPemFile(args_.tls.cert_file, args_.name, "certFile");
  config.tls.key_pem = args_.tls.key_file.empty()
                           ? args_.tls.key_pem
                           : ReadPemFile(args_.tls.key_file, args_.name, "keyFile");
  for (size_t i = 0; i < kPoints; i++) {
    if (!args_.points[i]) continue;
    const std::chrono::milliseconds timeout = args_.timeouts[i];
    auto& webhook = webhooks_[timeout];
    if (!webhook) {
      config.timeout = timeout;
      try {
        webhook = std::make_unique<client::Webhook>(config);
      } catch (const client::ConfigError& e) {
        throw std::invalid_argument("endpoint \"" + args_.name + "\": " + e.what());
      }
    }
    by_point_[i] = webhook.get();
  }

  if (registry == nullptr) return;
  auto& durations =
      prometheus::BuildHistogram()
          .Name("berth_outofprocess_request_duration_seconds")
          .Help(
              "Duration of the calls to out-of-process plugin endpoints, by endpoint, point "
              "(the verb) and result (success or error).")
          .Register(*registry);
  auto& errors = prometheus::BuildCounter()
                     .Name("berth_outofprocess_request_errors_total")
                     .Help(
                         "Calls to out-of-process plugin endpoints that failed, by endpoint, "
                         "point (the verb) and result (timeout, unreachable, http-status or "
                         "malformed).")
                     .Register(*registry);
  const prometheus::Histogram::BucketBoundaries buckets = {
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  for (size_t v = 0; v < kVerbs; v++) {
    const Verb verb = static_cast<Verb>(v);
    if (!args_.Serves(PointOf(verb))) continue;
    const std::string point(VerbLabel(verb));
    VerbMetrics& m = metrics_[v];
    m.success = &durations.Add(
        {{"profile", profile}, {"endpoint", args_.name}, {"point", point}, {"result", "success"}},
        buckets);
    m.error = &durations.Add(
        {{"profile", profile}, {"endpoint", args_.name}, {"point", point}, {"result", "error"}},
        buckets);
    for (size_t f = 0; f < kFailures; f++) {
      m.failures[f] = &errors.Add({{"profile", profile},
                                   {"endpoint", args_.name},
                                   {"point", point},
                                   {"result", std::string(kFailureNames[f])}});
    }
  }
}

Endpoint::~Endpoint() = default;

Endpoint::Pending Endpoint::Start(Verb verb, std::string body) const {
  Pending pending(this, verb);
  pending.start_ = Clock::now();
  const client::Webhook* webhook = by_point_[static_cast<size_t>(PointOf(verb))];
  if (webhook == nullptr) {
    pending.start_error_ = "the endpoint does not serve " + std::string(VerbLabel(verb));
    return pending;
  }
  try {
    pending.call_.emplace(webhook->Start(VerbPath(verb), std::move(body)));
  } catch (const client::WebhookError& e) {
    pending.start_error_ = e.what();
  }
  return pending;
}

Endpoint::Reply Endpoint::Pending::Wait() {
  Reply reply;
  const std::string prefix = Named(*endpoint_) + " (" + std::string(VerbLabel(verb_)) + "): ";
  if (!call_) {
    reply.failure = Failure::kUnreachable;
    reply.error = prefix + start_error_;
  } else {
    try {
      client::WebhookResponse response = call_->Wait();
      if (response.status < 200 || response.status > 299) {
        reply.failure = Failure::kHttpStatus;
        reply.error =
            prefix + "HTTP " + std::to_string(response.status) + ": " + Quote(response.body);
      } else {
        try {
          reply.answer = ParseResponse(response.body);
        } catch (const ProtocolError& e) {
          reply.failure = Failure::kMalformed;
          reply.error = prefix + e.what();
        }
      }
    } catch (const client::WebhookError& e) {
      reply.failure = e.timeout() ? Failure::kTimeout : Failure::kUnreachable;
      reply.error = prefix + e.what();
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  endpoint_->Observe(verb_, seconds,
                     reply.ok() ? std::nullopt : std::optional<Failure>(reply.failure));
  return reply;
}

void Endpoint::Observe(Verb verb, double seconds, const std::optional<Failure>& failure) const {
  const VerbMetrics& m = metrics_[static_cast<size_t>(verb)];
  if (m.success == nullptr) return;
  if (!failure) {
    m.success->Observe(seconds);
    return;
  }
  m.error->Observe(seconds);
  m.failures[static_cast<size_t>(*failure)]->Increment();
}

}  // namespace berth::plugins::outofprocess
