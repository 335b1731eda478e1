#ifndef BERTH_PKG_EVENTS_RECORDER_H_
#define BERTH_PKG_EVENTS_RECORDER_H_

#include <memory>
#include <string>

#include "pkg/client/client.h"
#include "pkg/framework/interface.h"
#include "pkg/util/task_queue.h"

namespace berth::events {

// Upstream caps an event's note at 1 KiB.
inline constexpr size_t kMaxNoteLength = 1024;

// Records events.k8s.io/v1 Events about pods, POSTed from a background thread so callers never
// wait on the apiserver. Thread-safe. When the backlog is full new events are dropped (and
// counted): scheduling outcomes are also visible in the pod's condition and in metrics.
class ApiEventRecorder : public framework::EventRecorder {
 public:
  ApiEventRecorder(std::shared_ptr<client::Client> client, std::string reporting_controller,
                   std::string reporting_instance);
  ~ApiEventRecorder() override;

  void Eventf(const api::Pod& regarding, const std::string& type, const std::string& reason,
              const std::string& action, const std::string& note) override;

  // Waits until every recorded event was sent (or failed).
  void Flush();
  uint64_t dropped() const { return dropped_.load(); }
  uint64_t failed() const { return failed_.load(); }

 private:
  std::shared_ptr<client::Client> client_;
  const std::string controller_;
  const std::string instance_;
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> failed_{0};
  util::TaskQueue sender_;
};

// "berth-scheduler-<hostname>".
std::string DefaultReportingInstance();

// RFC 3339 with microseconds in UTC, as metav1.MicroTime serializes.
std::string MicroTimeNow();
// RFC 3339 with seconds in UTC, as metav1.Time serializes.
std::string TimeNow();

}  // namespace berth::events

#endif  // BERTH_PKG_EVENTS_RECORDER_H_
