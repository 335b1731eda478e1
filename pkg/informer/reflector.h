#ifndef BERTH_PKG_INFORMER_REFLECTOR_H_
#define BERTH_PKG_INFORMER_REFLECTOR_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>

#include "pkg/api/list_parser.h"
#include "pkg/api/protobuf.h"
#include "pkg/client/client.h"

namespace berth::informer {

// One LIST page decoded while it arrives, in whichever encoding the server answered with
// (protobuf or JSON, pkg/api/protobuf.h; its Content-Type goes to `content_type` when given):
// each item goes to `on_item`, or, in protobuf, first to `on_message` when given (see
// api::ProtobufListParser). Throws ApiError for the request and DecodeError for a malformed body.
api::ListMeta ListPageItems(client::Client& client, const std::string& path,
                            const client::ListOptions& options, const std::string& continue_token,
                            const std::function<void(nlohmann::json&)>& on_item,
                            std::string* content_type = nullptr,
                            const api::ProtobufItemHandler& on_message = nullptr);

// What a reflector feeds. All calls come from the reflector's one thread, in order.
class ListWatchSink {
 public:
  virtual ~ListWatchSink() = default;
  // A full, consistent list follows: ReplaceItem once per object, then ReplaceEnd.
  virtual void ReplaceBegin() = 0;
  virtual void ReplaceItem(const nlohmann::json& object) = 0;
  // Offered each listed item of a protobuf list first, as its raw message: true when it took the
  // item (as ReplaceItem would have), false to have it decoded to JSON and passed to ReplaceItem.
  virtual bool ReplaceProtobufItem(std::string_view message) = 0;
  virtual void ReplaceEnd() = 0;
  // kAdded, kModified or kDeleted from the watch (bookmarks and errors stay in the reflector).
  virtual void WatchEvent(client::WatchEventType type, const nlohmann::json& object) = 0;
  // Offered a watched pod first, as its raw protobuf message: true when it took the event (as
  // WatchEvent would have) and set `resource_version` to the pod's, false to have the pod decoded
  // to JSON and passed to WatchEvent.
  virtual bool WatchProtobufPod(client::WatchEventType type, std::string_view message,
                                std::string* resource_version) = 0;
  // With ReflectorOptions::discover: whether the apiserver serves the resource, once, before the
  // first list. When it does not, nothing else follows.
  virtual void Discovered(bool served) = 0;
};

// Holds each reflector's first watch until every reflector that joined has made its first list
// (or found its resource not served, or stopped), for at most `max_wait`. Scheduling waits for
// every list anyway, and a watch opened meanwhile takes the apiserver's CPU from the lists it is
// still serving, the node list above all (holding the watches back made starts with 1,000 nodes
// ready 5-8 ms sooner; see docs/performance.md). Thread-safe.
class FirstWatchGate {
 public:
  explicit FirstWatchGate(std::chrono::milliseconds max_wait) : max_wait_(max_wait) {}

  // One more party to wait for; each Join is matched by one Leave.
  void Join();
  void Leave();
  // Returns once nobody has joined without leaving, `max_wait` after the call, or when `stopping`
  // is true (checked again on Wake).
  void Wait(const std::atomic<bool>& stopping);
  void Wake();

 private:
  const std::chrono::milliseconds max_wait_;
  std::mutex mu_;
  std::condition_variable cv_;
  int pending_ = 0;  // Guarded by mu_.
};

struct ReflectorOptions {
  client::Resource resource;
  // Only this namespace when set. Prefer it to a metadata.namespace field selector: the apiserver
  // (v1.34) returns an empty second page when paging a cluster-wide list filtered that way.
  std::string namespace_;
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;
  int watch_timeout_seconds = 300;
  // List and watch in protobuf when the server offers it (client::ListOptions::prefer_protobuf).
  bool prefer_protobuf = false;
  // client::WatchOptions::busy: the watch shares the connection of the client's requests.
  bool busy_watch = false;
  // The resource may not be served (a custom resource whose definition is not installed): API
  // discovery (GET /apis/<group>/<version>) is asked once before the first list, and when the
  // resource is not there the reflector tells the sink and stops instead of failing to list it
  // forever. A definition installed later is seen after a restart, as kube-scheduler sees it.
  bool discover = false;
  std::chrono::milliseconds initial_backoff{800};
  std::chrono::milliseconds max_backoff{30000};
  // Set: joined at Start, left after the first list, and the first watch waits on it. Null: the
  // watch follows the list at once.
  std::shared_ptr<FirstWatchGate> first_watch_gate;
};

// Lists a resource, then watches it from the list's resourceVersion, forever, on its own thread:
// bookmarks advance the resourceVersion; a 410 Gone/Expired (on watch open or as an ERROR event,
// or an expired continue token while paging) relists; a stream the server closed, or one that
// broke (connection cut, apiserver gone) after serving events or for a healthy while, is
// re-watched at once from the last resourceVersion; other failures back off exponentially with
// jitter. Stop() is thread-safe and returns once the thread has ended.
class Reflector {
 public:
  Reflector(std::shared_ptr<client::Client> client, ReflectorOptions options, ListWatchSink* sink);
  ~Reflector();
  Reflector(const Reflector&) = delete;
  Reflector& operator=(const Reflector&) = delete;

  void Start();
  void Stop();

  // Number of completed lists (the first one included) and of watches opened.
  uint64_t lists() const { return lists_.load(); }
  uint64_t watches() const { return watches_.load(); }
  // The error of the last failed list/watch, empty after a success. Thread-safe.
  std::string last_error() const;
  const ReflectorOptions& options() const { return options_; }

 private:
  void Run();
  // Whether the apiserver serves the resource (see ReflectorOptions::discover); transient failures
  // are retried with backoff. False also when stopped first.
  bool Discover();
  // Lists every page at `from_resource_version` ("0": any, "": most recent) and returns the
  // list's resourceVersion. Throws client::ApiError.
  std::string ListAll(const std::string& from_resource_version);
  enum class WatchEnd { kClosed, kGone, kStopped };
  WatchEnd WatchFrom(std::string& resource_version);
  // Sleeps the current backoff (interruptible by Stop) and doubles it.
  void Backoff();
  void SetError(const std::string& error);
  // Leaves options_.first_watch_gate, once, if this reflector joined it.
  void LeaveGate();

  std::shared_ptr<client::Client> client_;
  const ReflectorOptions options_;
  ListWatchSink* const sink_;

  std::atomic<bool> stopping_{false};
  std::thread thread_;
  mutable std::mutex mu_;  // Guards watch_, error_ and the stop condition.
  std::condition_variable stop_cv_;
  std::unique_ptr<client::WatchStream> watch_;
  std::string error_;
  std::chrono::milliseconds backoff_;
  std::atomic<uint64_t> lists_{0};
  std::atomic<uint64_t> watches_{0};
  // Whether this reflector has joined options_.first_watch_gate and not left it yet. Set by Start
  // before the thread starts, cleared by the thread (LeaveGate); Start and Stop join the thread
  // in between, so the two never race.
  bool in_gate_ = false;
};

}  // namespace berth::informer

#endif  // BERTH_PKG_INFORMER_REFLECTOR_H_
