#include "pkg/events/recorder.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>

namespace berth::events {
namespace {

std::string FormatUtc(bool micros) {
  auto now = std::chrono::system_clock::now();
  std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &utc);
  std::string out = buf;
  if (micros) {
    auto us =
        std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
        1000000;
    std::snprintf(buf, sizeof(buf), ".%06lld", static_cast<long long>(us));
    out += buf;
  }
  return out + "Z";
}

}  // namespace

std::string MicroTimeNow() { return FormatUtc(true); }
std::string TimeNow() { return FormatUtc(false); }

std::string DefaultReportingInstance() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) return "berth-scheduler";
  return std::string("berth-scheduler-") + host;
}

ApiEventRecorder::ApiEventRecorder(std::shared_ptr<client::Client> client,
                                   std::string reporting_controller, std::string reporting_instance)
    : client_(std::move(client)),
      controller_(std::move(reporting_controller)),
      instance_(std::move(reporting_instance)),
      sender_(2, 10000) {}

ApiEventRecorder::~ApiEventRecorder() { sender_.Shutdown(); }

void ApiEventRecorder::Eventf(const api::Pod& regarding, const std::string& type,
                              const std::string& reason, const std::string& action,
                              const std::string& note) {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  char suffix[32];
  std::snprintf(suffix, sizeof(suffix), "%llx",
                static_cast<unsigned long long>(
                    std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()));
  nlohmann::json event = {
      {"apiVersion", "events.k8s.io/v1"},
      {"kind", "Event"},
      {"metadata",
       {{"name", regarding.meta.name + "." + suffix}, {"namespace", regarding.meta.namespace_}}},
      {"eventTime", MicroTimeNow()},
      {"reportingController", controller_},
      {"reportingInstance", instance_},
      {"action", action},
      {"reason", reason},
      {"type", type},
      {"note", note.size() > kMaxNoteLength ? note.substr(0, kMaxNoteLength) : note},
      {"regarding",
       {{"apiVersion", "v1"},
        {"kind", "Pod"},
        {"namespace", regarding.meta.namespace_},
        {"name", regarding.meta.name},
        {"uid", regarding.meta.uid},
        {"resourceVersion", regarding.meta.resource_version}}}};
  const std::string path = client::EventsResource().Path(regarding.meta.namespace_);
  bool queued = sender_.Post([this, path, event = std::move(event)] {
    try {
      client_->Post(path, event);
    } catch (const std::exception& e) {
      failed_++;
      spdlog::debug("event for pod {}/{} not recorded: {}",
                    event["regarding"]["namespace"].get<std::string>(),
                    event["regarding"]["name"].get<std::string>(), e.what());
    }
  });
  if (!queued) dropped_++;
}

void ApiEventRecorder::Flush() { sender_.Drain(); }

}  // namespace berth::events
