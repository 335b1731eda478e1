#include "pkg/events/recorder.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "test/testing/unused_client.h"

namespace berth::events {
namespace {

using namespace std::chrono_literals;

const std::string kCollection = "/apis/events.k8s.io/v1/namespaces/ns/events";

struct Request {
  std::string verb;
  std::string path;
  nlohmann::json body;
  client::PatchType patch_type = client::PatchType::kMerge;
};

// Records every request and answers as an apiserver that accepts everything.
class RecordingEventClient : public testing::UnusedClient {
 public:
  nlohmann::json Post(const std::string& path, const nlohmann::json& body) override {
    Record({"POST", path, body});
    return body;
  }
  nlohmann::json Patch(const std::string& path, const nlohmann::json& body,
                       client::PatchType type) override {
    Record({"PATCH", path, body, type});
    return body;
  }

  std::vector<Request> Requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }
  std::vector<Request> Of(const std::string& verb) const {
    std::vector<Request> out;
    for (auto& r : Requests()) {
      if (r.verb == verb) out.push_back(r);
    }
    return out;
  }
  size_t Count() const {
    std::lock_guard lock(mu_);
    return requests_.size();
  }

 protected:
  void Record(Request request) {
    std::lock_guard lock(mu_);
    requests_.push_back(std::move(request));
  }

 private:
  mutable std::mutex mu_;
  std::vector<Request> requests_;
};

// The Event a series update names is gone (expired or deleted): every PATCH answers 404.
class EventGoneClient : public RecordingEventClient {
 public:
  nlohmann::json Patch(const std::string& path, const nlohmann::json& body,
                       client::PatchType type) override {
    Record({"PATCH", path, body, type});
    throw client::ApiError(client::ErrorReason::kNotFound, 404, "events \"x\" not found");
  }
};

// RBAC forbids creating events: every POST answers 403.
class ForbiddenEventClient : public RecordingEventClient {
 public:
  nlohmann::json Post(const std::string& path, const nlohmann::json& body) override {
    Record({"POST", path, body});
    throw client::ApiError(client::ErrorReason::kForbidden, 403, "events is forbidden");
  }
};

// The first POST finds no apiserver (the connection broke); later ones are accepted.
class UnreachableOnceEventClient : public RecordingEventClient {
 public:
  nlohmann::json Post(const std::string& path, const nlohmann::json& body) override {
    Record({"POST", path, body});
    if (!failed_.exchange(true)) {
      throw client::ApiError(client::ErrorReason::kTransport, 0, "connection reset by peer");
    }
    return body;
  }

 private:
  std::atomic<bool> failed_{false};
};

// An apiserver that does not answer: every POST hangs until Release().
class StalledEventClient : public RecordingEventClient {
 public:
  nlohmann::json Post(const std::string& path, const nlohmann::json& body) override {
    {
      std::unique_lock lock(stall_mu_);
      stall_cv_.wait(lock, [this] { return released_; });
    }
    return RecordingEventClient::Post(path, body);
  }
  void Release() {
    {
      std::lock_guard lock(stall_mu_);
      released_ = true;
    }
    stall_cv_.notify_all();
  }

 private:
  std::mutex stall_mu_;
  std::condition_variable stall_cv_;
  bool released_ = false;
};

// Releases the stalled client before the recorder (declared earlier) joins its sender.
struct ReleaseOnExit {
  StalledEventClient& client;
  ~ReleaseOnExit() { client.Release(); }
};

class FakeClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Monotonic() const override {
    std::lock_guard lock(mu_);
    return mono_;
  }
  std::chrono::system_clock::time_point Wall() const override {
    std::lock_guard lock(mu_);
    return wall_;
  }
  void Step(std::chrono::nanoseconds d) {
    std::lock_guard lock(mu_);
    mono_ += d;
    wall_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
  }

 private:
  mutable std::mutex mu_;
  std::chrono::steady_clock::time_point mono_ =
      std::chrono::steady_clock::time_point{} + std::chrono::hours(24 * 365);
  // 2024-01-01T00:00:00Z.
  std::chrono::system_clock::time_point wall_ =
      std::chrono::system_clock::time_point{} + std::chrono::seconds(1704067200);
};

api::Pod Pod(const std::string& name, const std::string& uid = "") {
  api::Pod pod;
  pod.meta.name = name;
  pod.meta.namespace_ = "ns";
  pod.meta.uid = uid.empty() ? "uid-" + name : uid;
  pod.meta.resource_version = "7";
  return pod;
}

bool WaitFor(const std::function<bool()>& condition) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return condition();
}

class ApiEventRecorderTest : public ::testing::Test {
 protected:
  // Deterministic: a fake clock, no background maintenance, limits only where a test sets them.
  RecorderOptions Options() {
    RecorderOptions options;
    options.clock = clock_;
    options.maintenance_interval = 0ms;
    options.qps = 0;
    options.per_object_burst = 0;
    return options;
  }
  // Options() with a global bucket of one token, refilled once a second.
  RecorderOptions OneTokenPerSecond() {
    RecorderOptions options = Options();
    options.qps = 1;
    options.burst = 1;
    return options;
  }
  std::unique_ptr<ApiEventRecorder> NewRecorder(std::shared_ptr<client::Client> client,
                                                RecorderOptions options) {
    return std::make_unique<ApiEventRecorder>(std::move(client), "berth-scheduler",
                                              "berth-scheduler-host", std::move(options));
  }
  void Failed(ApiEventRecorder& r, const api::Pod& pod, const std::string& note = "0/3 nodes") {
    r.Eventf(pod, "Warning", "FailedScheduling", "Scheduling", note);
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
};

TEST_F(ApiEventRecorderTest, FirstEventIsCreated) {
  auto client = std::make_shared<RecordingEventClient>();
  auto recorder = NewRecorder(client, Options());
  recorder->Eventf(Pod("web-0"), "Warning", "FailedScheduling", "Scheduling",
                   "0/3 nodes are available: 3 Insufficient cpu.");
  recorder->Flush();

  auto requests = client->Requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].verb, "POST");
  EXPECT_EQ(requests[0].path, kCollection);
  const nlohmann::json& e = requests[0].body;
  EXPECT_EQ(e["apiVersion"], "events.k8s.io/v1");
  EXPECT_EQ(e["kind"], "Event");
  const std::string name = e["metadata"]["name"];
  EXPECT_EQ(name.rfind("web-0.", 0), 0u) << name;
  EXPECT_EQ(name.substr(6).find_first_not_of("0123456789abcdef"), std::string::npos) << name;
  EXPECT_EQ(e["metadata"]["namespace"], "ns");
  EXPECT_EQ(e["eventTime"], "2024-01-01T00:00:00.000000Z");
  EXPECT_EQ(e["reportingController"], "berth-scheduler");
  EXPECT_EQ(e["reportingInstance"], "berth-scheduler-host");
  EXPECT_EQ(e["type"], "Warning");
  EXPECT_EQ(e["reason"], "FailedScheduling");
  EXPECT_EQ(e["action"], "Scheduling");
  EXPECT_EQ(e["note"], "0/3 nodes are available: 3 Insufficient cpu.");
  EXPECT_EQ(e["regarding"], (nlohmann::json{{"apiVersion", "v1"},
                                            {"kind", "Pod"},
                                            {"namespace", "ns"},
                                            {"name", "web-0"},
                                            {"uid", "uid-web-0"},
                                            {"resourceVersion", "7"}}));
  EXPECT_FALSE(e.contains("series"));
  EXPECT_EQ(recorder->created(), 1u);
  EXPECT_EQ(recorder->series_patched(), 0u);
  EXPECT_EQ(recorder->dropped(), 0u);
}

TEST_F(ApiEventRecorderTest, EventsAboutOtherObjectsNameThemAndFormTheirOwnSeries) {
  auto client = std::make_shared<RecordingEventClient>();
  auto recorder = NewRecorder(client, Options());
  const api::ObjectReference group{
      "scheduling.x-k8s.io/v1alpha1", "PodGroup", "ns", "train", "uid-train", "12"};
  recorder->Eventf(group, "Warning", "FailedScheduling", "Scheduling", "2 of 4 pods placed");
  recorder->Eventf(group, "Warning", "FailedScheduling", "Scheduling", "2 of 4 pods placed");
  // A pod of the same name is another object: its event is not folded into the group's series.
  recorder->Eventf(Pod("train", "uid-train"), "Warning", "FailedScheduling", "Scheduling",
                   "2 of 4 pods placed");
  recorder->Flush();

  auto posts = client->Of("POST");
  ASSERT_EQ(posts.size(), 2u);
  EXPECT_EQ(posts[0].path, kCollection);
  EXPECT_EQ(posts[0].body["regarding"],
            (nlohmann::json{{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
                            {"kind", "PodGroup"},
                            {"namespace", "ns"},
                            {"name", "train"},
                            {"uid", "uid-train"},
                            {"resourceVersion", "12"}}));
  EXPECT_EQ(std::string(posts[0].body["metadata"]["name"]).rfind("train.", 0), 0u);
  EXPECT_EQ(posts[1].body["regarding"]["kind"], "Pod");
  auto patches = client->Of("PATCH");
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0].body["series"]["count"], 2);
}

TEST_F(ApiEventRecorderTest, IdenticalSecondEventPatchesSeriesCountTwoAtOnce) {
  auto client = std::make_shared<RecordingEventClient>();
  auto recorder = NewRecorder(client, Options());
  Failed(*recorder, Pod("web-0"));
  clock_->Step(1500ms);
  Failed(*recorder, Pod("web-0"));
  // Without Flush and without maintenance: the second occurrence is written on its own.
  ASSERT_TRUE(WaitFor([&] { return client->Count() == 2; }));

  auto requests = client->Requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].verb, "POST");
  EXPECT_EQ(requests[1].verb, "PATCH");
  const std::string name = requests[0].body["metadata"]["name"];
  EXPECT_EQ(requests[1].path, kCollection + "/" + name);
  EXPECT_EQ(requests[1].patch_type, client::PatchType::kMerge);
  EXPECT_EQ(requests[1].body,
            (nlohmann::json{
                {"series", {{"count", 2}, {"lastObservedTime", "2024-01-01T00:00:01.500000Z"}}}}));
  recorder->Flush();
  EXPECT_EQ(client->Count(), 2u);
  EXPECT_EQ(recorder->series_patched(), 1u);
  EXPECT_EQ(recorder->created(), 1u);
}

TEST_F(ApiEventRecorderTest, FiveIdenticalEventsAreOneEventWithCountFiveAfterFlush) {
  auto client = std::make_shared<RecordingEventClient>();
  auto recorder = NewRecorder(client, Options());
  for (int i = 0; i < 5; i++) {
    Failed(*recorder, Pod("web-0"));
    clock_->Step(1s);
  }
  ASSERT_TRUE(WaitFor([&] { return client->Count() == 2; }));
  // Occurrences 3 to 5 stay in memory until a refresh or a flush.
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(client->Count(), 2u);

  recorder->Flush();
  auto posts = client->Of("POST");
  auto patches = client->Of("PATCH");
  ASSERT_EQ(posts.size(), 1u);
  ASSERT_EQ(patches.size(), 2u);
  const std::string path = kCollection + "/" + posts[0].body["metadata"].value("name", "");
  EXPECT_EQ(patches[0].path, path);
  EXPECT_EQ(patches[1].path, path);
  EXPECT_EQ(patches[0].body["series"]["count"], 2);
  EXPECT_EQ(patches[1].body["series"]["count"], 5);
  EXPECT_EQ(patches[1].body["series"]["lastObservedTime"], "2024-01-01T00:00:04.000000Z");
  EXPECT_EQ(recorder->series_patched(), 2u);

  // Nothing new since: a second flush writes nothing.
  recorder->Flush();
  EXPECT_EQ(client->Count(), 3u);
}

TEST_F(ApiEventRecorderTest, EventsDifferingInAnyKeyFieldAreSeparateEvents) {
  auto client = std::make_shared<RecordingEventClient>();
  auto recorder = NewRecorder(client, Options());
  recorder->Eventf(Pod("a"), "Warning", "FailedScheduling", "Scheduling", "note 1");
  recorder->Eventf(Pod("a"), "Warning", "FailedScheduling", "Scheduling", "note 2");
  recorder->Eventf(Pod("a"), "Warning", "FailedBinding", "Scheduling", "note 1");
  recorder->Eventf(Pod("a"), "Normal", "FailedScheduling", "Scheduling", "note 1");
  recorder->Eventf(Pod("a"), "Warning", "FailedScheduling", "Binding", "note 1");
  recorder->Eventf(Pod("b"), "Warning", "FailedScheduling", "Scheduling", "note 1");
  // The same name, but a re-created pod.
  recorder->Eventf(Pod("a", "uid-other"), "Warning", "FailedScheduling", "Scheduling", "note 1");
  recorder->Flush();

  auto posts = client->Of("POST");
  EXPECT_EQ(posts.size(), 7u);
  EXPECT_TRUE(client->Of("PATCH").empty());
  std::set<std::string> names;
  for (const auto& p : posts) names.insert(p.body["metadata"]["name"].get<std::string>());
  EXPECT_EQ(names.size(), 7u);

  // A newer resourceVersion of the same pod continues the series.
  api::Pod newer = Pod("a");
  newer.meta.resource_version = "8";
  recorder->Eventf(newer, "Warning", "FailedScheduling", "Scheduling", "note 1");
  recorder->Flush();
  ASSERT_EQ(client->Of("PATCH").size(), 1u);
  EXPECT_EQ(client->Of("PATCH")[0].body["series"]["count"], 2);
}

TEST_F(ApiEventRecorderTest, SpamFilterDropsAfter25WritesForOnePod) {
  auto client = std::make_shared<RecordingEventClient>();
  RecorderOptions options = Options();
  options.per_object_burst = 25;
  options.per_object_qps = 1.0 / 300;
  auto recorder = NewRecorder(client, options);

  for (int i = 0; i < 30; i++) Failed(*recorder, Pod("noisy"), "note " + std::to_string(i));
  recorder->Flush();
  EXPECT_EQ(client->Of("POST").size(), 25u);
  EXPECT_EQ(recorder->dropped_rate_limited(), 5u);

  // Other pods have buckets of their own.
  Failed(*recorder, Pod("quiet"));
  recorder->Flush();
  EXPECT_EQ(client->Of("POST").size(), 26u);

  // One token back after five minutes, and only one.
  clock_->Step(5min);
  Failed(*recorder, Pod("noisy"), "later 1");
  Failed(*recorder, Pod("noisy"), "later 2");
  recorder->Flush();
  EXPECT_EQ(client->Of("POST").size(), 27u);
  EXPECT_EQ(recorder->dropped_rate_limited(), 6u);
  EXPECT_EQ(client->Of("POST").back().body["note"], "later 1");
}

TEST_F(ApiEventRecorderTest, RepeatsBeyondTheSpamBurstStillCount) {
  auto client = std::make_shared<RecordingEventClient>();
  RecorderOptions options = Options();
  options.per_object_burst = 25;
  auto recorder = NewRecorder(client, options);

  for (int i = 0; i < 100; i++) Failed(*recorder, Pod("stuck"));
  recorder->Flush();
  EXPECT_EQ(recorder->dropped(), 0u);
  ASSERT_EQ(client->Of("POST").size(), 1u);
  ASSERT_FALSE(client->Of("PATCH").empty());
  EXPECT_EQ(client->Of("PATCH").back().body["series"]["count"], 100);
}

// What the global bucket refuses waits, cached, and is written oldest first as tokens come:
// an event dropped here could be the only word on why a pod is Pending.
TEST_F(ApiEventRecorderTest, GlobalLimitDefersNewEventsAcrossPodsUntilTokensCome) {
  auto client = std::make_shared<RecordingEventClient>();
  RecorderOptions options = Options();
  options.qps = 1;
  options.burst = 5;
  auto recorder = NewRecorder(client, options);

  for (int i = 0; i < 10; i++) Failed(*recorder, Pod("p" + std::to_string(i)));
  recorder->Flush();
  EXPECT_EQ(client->Of("POST").size(), 5u);

  // Two tokens: they go to the two oldest waiting events, not to the newer ones.
  clock_->Step(2s);
  for (int i = 10; i < 15; i++) Failed(*recorder, Pod("p" + std::to_string(i)));
  recorder->Flush();
  auto posts = client->Of("POST");
  ASSERT_EQ(posts.size(), 7u);
  EXPECT_EQ(posts[5].body["regarding"]["name"], "p5");
  EXPECT_EQ(posts[6].body["regarding"]["name"], "p6");

  // The bucket holds five tokens at most: five more now, the last three later.
  clock_->Step(10s);
  recorder->Flush();
  EXPECT_EQ(client->Of("POST").size(), 12u);
  clock_->Step(10s);
  recorder->Flush();
  posts = client->Of("POST");
  ASSERT_EQ(posts.size(), 15u);
  EXPECT_EQ(posts.back().body["regarding"]["name"], "p14");
  EXPECT_EQ(recorder->dropped(), 0u);
}

// A burst of bound pods must not keep a Pending pod's FailedScheduling event waiting behind
// their Scheduled events.
TEST_F(ApiEventRecorderTest, WarningsWaitingForATokenGoFirst) {
  auto client = std::make_shared<RecordingEventClient>();
  RecorderOptions options = OneTokenPerSecond();
  auto recorder = NewRecorder(client, options);

  for (int i = 0; i < 4; i++) {
    recorder->Eventf(Pod("bound-" + std::to_string(i)), "Normal", "Scheduled", "Binding",
                     "Successfully assigned");
  }
  Failed(*recorder, Pod("pending"));
  recorder->Flush();
  ASSERT_EQ(client->Of("POST").size(), 1u);

  clock_->Step(1s);
  recorder->Maintain();
  recorder->Flush();
  auto posts = client->Of("POST");
  ASSERT_EQ(posts.size(), 2u);
  EXPECT_EQ(posts[1].body["reason"], "FailedScheduling");
  EXPECT_EQ(posts[1].body["regarding"]["name"], "pending");

  clock_->Step(1s);
  recorder->Flush();
  EXPECT_EQ(client->Of("POST").back().body["regarding"]["name"], "bound-1");
}

TEST_F(ApiEventRecorderTest, EventsWaitingForATokenAreDroppedOnlyWhenEvicted) {
  auto client = std::make_shared<RecordingEventClient>();
  RecorderOptions options = OneTokenPerSecond();
  options.max_cached_events = 3;
  auto recorder = NewRecorder(client, options);

  for (int i = 0; i < 5; i++) Failed(*recorder, Pod("p" + std::to_string(i)));
  recorder->Flush();
  EXPECT_EQ(recorder->cached_events(), 3u);
  EXPECT_EQ(client->Of("POST").size(), 1u);
  // p0 was written and p1 waited; p3 and p4 evicted both.
  EXPECT_EQ(recorder->dropped_rate_limited(), 1u);

  for (const char* next : {"p2", "p3", "p4"}) {
    clock_->Step(1s);
    recorder->Flush();
    EXPECT_EQ(client->Of("POST").back().body["regarding"]["name"], next);
  }
  EXPECT_EQ(client->Of("POST").size(), 4u);
}

// As upstream's queue of maxQueuedEvents: at most max_waiting_events wait for a token, and a
// Warning arriving then takes the place of the oldest waiting Normal event.
TEST_F(ApiEventRecorderTest, AtMostMaxWaitingEventsWaitAndAWarningDisplacesANormalOne) {
  auto client = std::make_shared<RecordingEventClient>();
  RecorderOptions options = OneTokenPerSecond();
  options.max_waiting_events = 2;
  auto recorder = NewRecorder(client, options);

  for (int i = 0; i < 5; i++) {
    recorder->Eventf(Pod("bound-" + std::to_string(i)), "Normal", "Scheduled", "Binding",
                     "Successfully assigned");
  }
  recorder->Flush();
  // bound-0 took the token, bound-1 and bound-2 wait, bound-3 and bound-4 found no room.
  EXPECT_EQ(client->Of("POST").size(), 1u);
  EXPECT_EQ(recorder->cached_events(), 3u);
  EXPECT_EQ(recorder->dropped_backlog(), 2u);

  Failed(*recorder, Pod("pending"));
  recorder->Flush();
  EXPECT_EQ(recorder->cached_events(), 3u);
  EXPECT_EQ(recorder->dropped_backlog(), 3u);
  // A second Warning finds only a Warning and a Normal event waiting: it displaces the Normal.
  Failed(*recorder, Pod("pending-2"));
  EXPECT_EQ(recorder->dropped_backlog(), 4u);
  // A third finds only Warnings: it is the one dropped.
  Failed(*recorder, Pod("pending-3"));
  EXPECT_EQ(recorder->dropped_backlog(), 5u);

  // A Warning the per-pod filter refuses takes no one's place.
  RecorderOptions filtered = OneTokenPerSecond();
  filtered.max_waiting_events = 2;
  filtered.per_object_burst = 1;
  auto second = NewRecorder(std::make_shared<RecordingEventClient>(), filtered);
  second->Eventf(Pod("bound-0"), "Normal", "Scheduled", "Binding", "Successfully assigned");
  second->Eventf(Pod("bound-1"), "Normal", "Scheduled", "Binding", "Successfully assigned");
  Failed(*second, Pod("bound-0"));
  second->Eventf(Pod("bound-2"), "Normal", "Scheduled", "Binding", "Successfully assigned");
  // bound-0's Normal event took its pod's one write and the token; bound-1 and bound-2 wait.
  Failed(*second, Pod("bound-0"), "again");
  EXPECT_EQ(second->dropped_rate_limited(), 2u);
  EXPECT_EQ(second->dropped_backlog(), 0u);
  EXPECT_EQ(second->cached_events(), 3u);

  for (const char* next : {"pending", "pending-2"}) {
    clock_->Step(1s);
    recorder->Flush();
    EXPECT_EQ(client->Of("POST").back().body["regarding"]["name"], next);
  }
  clock_->Step(10s);
  recorder->Flush();
  EXPECT_EQ(client->Of("POST").size(), 3u);
  EXPECT_EQ(recorder->dropped_rate_limited(), 0u);
}

// With the real clock and the sender's own maintenance: deferred events go out as tokens come,
// well before the next regular maintenance pass (an hour away here).
TEST_F(ApiEventRecorderTest, TheSenderWritesDeferredEventsOnItsOwn) {
  auto client = std::make_shared<RecordingEventClient>();
  RecorderOptions options;
  options.qps = 100;
  options.burst = 1;
  options.per_object_burst = 0;
  options.maintenance_interval = 1h;
  auto recorder = NewRecorder(client, options);
  for (int i = 0; i < 5; i++) Failed(*recorder, Pod("p" + std::to_string(i)));
  EXPECT_TRUE(WaitFor([&] { return client->Of("POST").size() == 5; }))
      << client->Of("POST").size() << " of 5 written";
  EXPECT_EQ(recorder->dropped(), 0u);
}

TEST_F(ApiEventRecorderTest, RateLimitedSeriesCountIsWrittenLaterNotLost) {
  auto client = std::make_shared<RecordingEventClient>();
  RecorderOptions options = OneTokenPerSecond();
  auto recorder = NewRecorder(client, options);

  Failed(*recorder, Pod("web-0"));  // Takes the only token.
  Failed(*recorder, Pod("web-0"));  // The immediate series write is refused, not dropped.
  Failed(*recorder, Pod("web-0"));
  recorder->Flush();  // Still no token.
  EXPECT_EQ(client->Count(), 1u);
  EXPECT_EQ(recorder->dropped(), 0u);

  clock_->Step(1s);
  recorder->Flush();
  ASSERT_EQ(client->Of("PATCH").size(), 1u);
  EXPECT_EQ(client->Of("PATCH")[0].body["series"]["count"], 3);
}

TEST_F(ApiEventRecorderTest, SeriesUpdateOfMissingEventCreatesItWithTheSeries) {
  auto client = std::make_shared<EventGoneClient>();
  auto recorder = NewRecorder(client, Options());
  Failed(*recorder, Pod("web-0"));
  Failed(*recorder, Pod("web-0"));
  recorder->Flush();

  auto requests = client->Requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].verb, "POST");
  EXPECT_EQ(requests[1].verb, "PATCH");
  EXPECT_EQ(requests[2].verb, "POST");
  EXPECT_EQ(requests[2].path, kCollection);
  EXPECT_EQ(requests[2].body["metadata"]["name"], requests[0].body["metadata"]["name"]);
  EXPECT_EQ(requests[2].body["series"]["count"], 2);
  EXPECT_EQ(requests[2].body["note"], "0/3 nodes");
  EXPECT_EQ(recorder->created(), 2u);
  EXPECT_EQ(recorder->series_patched(), 0u);
  EXPECT_EQ(recorder->failed(), 0u);
}

TEST_F(ApiEventRecorderTest, RejectedWritesAreCountedAndRetriedAsSeries) {
  auto client = std::make_shared<ForbiddenEventClient>();
  auto recorder = NewRecorder(client, Options());
  Failed(*recorder, Pod("web-0"));
  recorder->Flush();
  EXPECT_EQ(recorder->failed(), 1u);
  EXPECT_EQ(recorder->created(), 0u);

  // The create never landed, so the series update goes straight for the Event.
  Failed(*recorder, Pod("web-0"));
  recorder->Flush();
  auto patches = client->Of("PATCH");
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0].body["series"]["count"], 2);
}

// The apiserver was unreachable when the create was sent (a cut connection, a restart): the
// Event is created at the next maintenance pass, not left missing until the pod fails again.
TEST_F(ApiEventRecorderTest, ACreateThatFoundNoApiserverIsSentAgain) {
  auto client = std::make_shared<UnreachableOnceEventClient>();
  // The resend is due one maintenance interval after the failure. With no interval it would be
  // due at once, and a Flush() that began after the failed send would already resend it.
  RecorderOptions options = Options();
  options.maintenance_interval = std::chrono::hours(1);
  auto recorder = NewRecorder(client, options);
  Failed(*recorder, Pod("web-0"));
  recorder->Flush();
  EXPECT_EQ(recorder->failed(), 1u);
  EXPECT_EQ(recorder->created(), 0u);

  clock_->Step(std::chrono::hours(1));
  recorder->Maintain();
  recorder->Flush();
  EXPECT_EQ(recorder->created(), 1u);
  auto posts = client->Of("POST");
  ASSERT_EQ(posts.size(), 2u);
  EXPECT_EQ(posts[1].body["metadata"]["name"], posts[0].body["metadata"]["name"]);
  EXPECT_FALSE(posts[1].body.contains("series"));
}

// A refusal (RBAC here) is not hammered: the create is tried again after the refresh period.
TEST_F(ApiEventRecorderTest, ARefusedCreateWaitsForTheRefreshPeriod) {
  auto client = std::make_shared<ForbiddenEventClient>();
  auto recorder = NewRecorder(client, Options());
  Failed(*recorder, Pod("web-0"));
  recorder->Flush();
  recorder->Maintain();
  recorder->Flush();
  EXPECT_EQ(client->Of("POST").size(), 1u);

  clock_->Step(RecorderOptions().series_refresh_period);
  recorder->Maintain();
  recorder->Flush();
  EXPECT_EQ(client->Of("POST").size(), 2u);
}

TEST_F(ApiEventRecorderTest, NoteIsCutTo1024Bytes) {
  auto client = std::make_shared<RecordingEventClient>();
  auto recorder = NewRecorder(client, Options());
  const std::string long_note(2000, 'x');
  Failed(*recorder, Pod("a"), long_note);
  // Identical in what is stored, so the same series.
  Failed(*recorder, Pod("a"), std::string(1500, 'x'));
  // A two-byte character straddling the limit is left out whole.
  Failed(*recorder, Pod("b"), std::string(1023, 'a') + "\xc3\xa9" + "tail");
  Failed(*recorder, Pod("c"), std::string(1024, 'z'));
  recorder->Flush();

  auto posts = client->Of("POST");
  ASSERT_EQ(posts.size(), 3u);
  EXPECT_EQ(posts[0].body["note"], std::string(kMaxNoteLength, 'x'));
  EXPECT_EQ(posts[1].body["note"], std::string(1023, 'a'));
  EXPECT_EQ(posts[2].body["note"], std::string(1024, 'z'));
  ASSERT_EQ(client->Of("PATCH").size(), 1u);
  EXPECT_EQ(recorder->failed(), 0u);
}

TEST_F(ApiEventRecorderTest, EventfNeverBlocksWhileTheApiserverStalls) {
  auto client = std::make_shared<StalledEventClient>();
  RecorderOptions options = Options();
  options.backlog = 8;
  auto recorder = NewRecorder(client, options);
  ReleaseOnExit release{*client};

  const int kEvents = 5000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kEvents; i++) Failed(*recorder, Pod("p" + std::to_string(i)));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, 2s);
  // At most one request in flight and `backlog` queued; the rest are dropped and counted.
  EXPECT_GE(recorder->dropped_backlog(), static_cast<uint64_t>(kEvents - 9));
  EXPECT_FALSE(recorder->Flush(50ms));

  client->Release();
  EXPECT_TRUE(recorder->Flush(5s));
  EXPECT_EQ(recorder->created() + recorder->dropped_backlog(), static_cast<uint64_t>(kEvents));
  EXPECT_EQ(client->Of("POST").size(), recorder->created());
}

TEST_F(ApiEventRecorderTest, SeriesIsRefreshedPeriodicallyAndFinishedWhenIdle) {
  auto client = std::make_shared<RecordingEventClient>();
  RecorderOptions options = Options();
  options.series_refresh_period = 5min;
  options.series_finish_after = 6min;
  auto recorder = NewRecorder(client, options);

  Failed(*recorder, Pod("web-0"));
  Failed(*recorder, Pod("web-0"));
  Failed(*recorder, Pod("web-0"));
  ASSERT_TRUE(WaitFor([&] { return client->Count() == 2; }));

  clock_->Step(1min);
  recorder->Maintain();
  Failed(*recorder, Pod("web-0"));  // Count 4, observed at +1 min.
  recorder->Maintain();
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(client->Count(), 2u) << "refreshed before the period";

  clock_->Step(4min);  // +5 min since the count-2 write.
  recorder->Maintain();
  ASSERT_TRUE(WaitFor([&] { return client->Count() == 3; }));
  EXPECT_EQ(client->Of("PATCH").back().body["series"]["count"], 4);
  EXPECT_EQ(recorder->cached_events(), 1u);

  // Idle for series_finish_after: the entry is forgotten and the next occurrence is new.
  clock_->Step(2min);  // +6 min since the last occurrence.
  recorder->Maintain();
  EXPECT_EQ(recorder->cached_events(), 0u);
  Failed(*recorder, Pod("web-0"));
  recorder->Flush();
  auto posts = client->Of("POST");
  ASSERT_EQ(posts.size(), 2u);
  EXPECT_NE(posts[0].body["metadata"]["name"], posts[1].body["metadata"]["name"]);
  EXPECT_FALSE(posts[1].body.contains("series"));
}

TEST_F(ApiEventRecorderTest, FinishingASeriesWritesItsPendingCount) {
  auto client = std::make_shared<RecordingEventClient>();
  auto recorder = NewRecorder(client, Options());
  for (int i = 0; i < 3; i++) Failed(*recorder, Pod("web-0"));
  ASSERT_TRUE(WaitFor([&] { return client->Count() == 2; }));

  clock_->Step(RecorderOptions().series_finish_after);
  recorder->Maintain();
  EXPECT_EQ(recorder->cached_events(), 0u);
  recorder->Flush();
  ASSERT_EQ(client->Of("PATCH").size(), 2u);
  EXPECT_EQ(client->Of("PATCH").back().body["series"]["count"], 3);
}

TEST_F(ApiEventRecorderTest, CacheIsBoundedAndEvictionWritesPendingCounts) {
  auto client = std::make_shared<RecordingEventClient>();
  RecorderOptions options = Options();
  options.max_cached_events = 3;
  auto recorder = NewRecorder(client, options);

  for (int i = 0; i < 3; i++) Failed(*recorder, Pod("p0"));  // A series with count 3 pending.
  for (int i = 1; i < 4; i++) Failed(*recorder, Pod("p" + std::to_string(i)));
  EXPECT_EQ(recorder->cached_events(), 3u);
  recorder->Flush();
  auto patches = client->Of("PATCH");
  ASSERT_EQ(patches.size(), 2u);
  EXPECT_EQ(patches.back().body["series"]["count"], 3);

  // p0 was evicted: its next occurrence is a new Event.
  Failed(*recorder, Pod("p0"));
  recorder->Flush();
  EXPECT_EQ(client->Of("POST").size(), 5u);
}

TEST_F(ApiEventRecorderTest, NamesAreUniqueWhileTheClockStandsStill) {
  auto client = std::make_shared<RecordingEventClient>();
  auto recorder = NewRecorder(client, Options());
  for (int i = 0; i < 50; i++) Failed(*recorder, Pod("web-0"), std::to_string(i));
  recorder->Flush();
  std::set<std::string> names;
  for (const auto& p : client->Of("POST")) {
    names.insert(p.body["metadata"]["name"].get<std::string>());
  }
  EXPECT_EQ(names.size(), 50u);
}

TEST_F(ApiEventRecorderTest, LongPodNamesStillGiveValidEventNames) {
  auto client = std::make_shared<RecordingEventClient>();
  auto recorder = NewRecorder(client, Options());
  Failed(*recorder, Pod(std::string(250, 'a')));
  recorder->Flush();
  ASSERT_EQ(client->Count(), 1u);
  const std::string name = client->Requests()[0].body["metadata"]["name"];
  EXPECT_LE(name.size(), 253u);
  EXPECT_EQ(name.rfind(std::string(200, 'a'), 0), 0u);
}

TEST_F(ApiEventRecorderTest, ConcurrentCallersAreAllCounted) {
  auto client = std::make_shared<RecordingEventClient>();
  auto recorder = NewRecorder(client, Options());
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&] {
      for (int i = 0; i < 250; i++) Failed(*recorder, Pod("web-0"));
    });
  }
  for (auto& t : threads) t.join();
  recorder->Flush();
  EXPECT_EQ(client->Of("POST").size(), 1u);
  EXPECT_EQ(client->Of("PATCH").back().body["series"]["count"], 1000);
}

// Warnings evicted while they waited leave the order of those still waiting as it was: a later
// FailedScheduling still goes before older Scheduled events.
TEST_F(ApiEventRecorderTest, AWarningStillGoesFirstAfterWaitingWarningsWereEvicted) {
  auto client = std::make_shared<RecordingEventClient>();
  RecorderOptions options = OneTokenPerSecond();
  options.max_cached_events = 3;
  auto recorder = NewRecorder(client, options);

  for (const char* name : {"p0", "p1", "p2"}) Failed(*recorder, Pod(name));
  for (int i = 0; i < 3; i++) {
    recorder->Eventf(Pod("bound-" + std::to_string(i)), "Normal", "Scheduled", "Binding",
                     "Successfully assigned");
  }
  Failed(*recorder, Pod("pending"));
  recorder->Flush();
  ASSERT_EQ(client->Of("POST").size(), 1u);

  clock_->Step(1s);
  recorder->Maintain();
  recorder->Flush();
  auto posts = client->Of("POST");
  ASSERT_EQ(posts.size(), 2u);
  EXPECT_EQ(posts[1].body["regarding"]["name"], "pending");

  clock_->Step(1s);
  recorder->Flush();
  EXPECT_EQ(client->Of("POST").back().body["regarding"]["name"], "bound-1");
}

}  // namespace
}  // namespace berth::events
