#include "pkg/plugins/defaultbinder/defaultbinder.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <stdexcept>
#include <thread>

#include "pkg/api/binding.h"
#include "pkg/client/client.h"
#include "pkg/framework/args.h"
#include "pkg/log/log.h"

namespace berth::plugins::defaultbinder {
namespace {

using Clock = std::chrono::steady_clock;

// Failures after which the binding may or may not have been applied, or that a later try may
// get past: the request may have reached the apiserver before the connection broke or the
// timeout struck, and a 5xx may come from a write that was committed anyway.
bool OutcomeUnknown(const client::ApiError& e) {
  switch (e.reason()) {
    case client::ErrorReason::kTransport:
    case client::ErrorReason::kTimeout:
    case client::ErrorReason::kInternalError:
    case client::ErrorReason::kServiceUnavailable:
    case client::ErrorReason::kTooManyRequests:
      return true;
    default:
      return false;
  }
}

// Whether the pod (this very object, not one recreated under its name) is bound to `node`.
// Unknown (the GET failed) counts as no.
bool BoundTo(client::Client& client, const api::Pod& pod, const std::string& node) {
  try {
    const nlohmann::json current =
        client.Get(client::PodsResource().Path(pod.meta.namespace_, pod.meta.name));
    const auto& meta = current.at("metadata");
    const auto& spec = current.at("spec");
    return (pod.meta.uid.empty() || meta.value("uid", "") == pod.meta.uid) &&
           spec.value("nodeName", "") == node;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

framework::Status DefaultBinder::Bind(framework::CycleState&, const api::Pod& pod,
                                      const std::string& node) {
  client::Client* client = handle_.ClientSet();
  if (client == nullptr) return framework::Status::Error(std::string(kErrNoClient));
  const std::string path =
      client::PodsResource().Path(pod.meta.namespace_, pod.meta.name, "binding");
  const std::string body = api::EncodeBinding(pod, node);
  const auto deadline = Clock::now() + retry_.budget;
  auto backoff = retry_.initial_backoff;
  for (int attempt = 1;; attempt++) {
    try {
      client->PostRaw(path, body);
      if (attempt > 1) {
        log::Info("binding applied after its outcome was unknown",
                  {{"pod", pod.Key()}, {"node", node}, {"attempts", std::to_string(attempt)}});
      }
      return framework::Status::Success();
    } catch (const client::ApiError& e) {
      // Already bound: by an earlier try whose answer was lost (then to this node), or by
      // someone else.
      if (e.reason() == client::ErrorReason::kConflict && BoundTo(*client, pod, node)) {
        if (attempt > 1) {
          log::Info("binding confirmed after its outcome was unknown",
                    {{"pod", pod.Key()}, {"node", node}, {"attempts", std::to_string(attempt)}});
        }
        return framework::Status::Success();
      }
      if (!OutcomeUnknown(e)) return framework::Status::Error(e.what());
      if (Clock::now() + backoff >= deadline || handle_.Stopping()) {
        log::Warn("giving up on a binding whose outcome is unknown",
                  {{"pod", pod.Key()},
                   {"node", node},
                   {"attempts", std::to_string(attempt)},
                   {"err", e.what()}});
        return framework::Status::Error(e.what());
      }
      log::Verbose(2, "binding outcome unknown; sending it again",
                   {{"pod", pod.Key()}, {"node", node}, {"err", e.what()}});
    } catch (const std::exception& e) {
      // Bind runs on a binding thread that must report, not propagate, a failure.
      return framework::Status::Error(std::string("binding pod: ") + e.what());
    }
    // Sleeps in short steps so that shutdown is not held for a whole backoff.
    const auto wake = Clock::now() + backoff;
    while (Clock::now() < wake && !handle_.Stopping()) {
      std::this_thread::sleep_for(
          std::min<Clock::duration>(wake - Clock::now(), std::chrono::milliseconds(50)));
    }
    backoff = std::min(backoff * 2, retry_.max_backoff);
  }
}

bool DefaultBinder::BindAsync(const api::Pod& pod, const std::string& node, BindDone done) {
  client::Client* client = handle_.ClientSet();
  if (client == nullptr) return false;
  return client->PostRawAsync(
      client::PodsResource().Path(pod.meta.namespace_, pod.meta.name, "binding"),
      api::EncodeBinding(pod, node), [done = std::move(done)](client::AsyncReply reply) {
        if (!reply.error) return done(framework::Status::Success());
        const client::ApiError& e = *reply.error;
        // Bind's first try would go on (or check the pod) here; on an I/O thread, that waits.
        if (reply.retry_may_help || OutcomeUnknown(e) ||
            e.reason() == client::ErrorReason::kConflict) {
          return done(std::nullopt);
        }
        done(framework::Status::Error(e.what()));
      });
}

framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle) {
  framework::ExpectNoArgs(args);
  return std::make_shared<DefaultBinder>(handle);
}

}  // namespace berth::plugins::defaultbinder
