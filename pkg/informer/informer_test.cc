// Unit tests of the store and of the informer's list/watch bookkeeping, driven by a scripted
// in-memory FakeClient (the integration tests run the same code against a real apiserver; this
// fake exists to produce exact sequences such as a 410 ERROR event or a malformed object on
// demand).

#include "pkg/informer/informer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

#include "pkg/api/codec.h"
#include "pkg/api/list_parser.h"
#include "pkg/api/protobuf.h"
#include "pkg/api/resources_codec.h"
#include "pkg/informer/store.h"
#include "test/testing/proto_writer.h"
#include "test/testing/unused_client.h"

namespace berth::informer {
namespace {

using namespace std::chrono_literals;

struct Item {
  std::string name;
  int value;
  struct Meta {
    std::string key;
    std::string resource_version;
    std::string Key() const { return key; }
  } meta;
};

TEST(Store, UpsertAndRemove) {
  Store<Item> store;
  EXPECT_EQ(store.Upsert("a", std::make_shared<Item>(Item{"a", 1, {"a", "1"}})), nullptr);
  store.Upsert("b", std::make_shared<Item>(Item{"b", 2, {"b", "1"}}));
  auto old = store.Upsert("a", std::make_shared<Item>(Item{"a", 4, {"a", "2"}}));
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(old->value, 1);
  EXPECT_EQ(store.Remove("b")->value, 2);
  EXPECT_EQ(store.Remove("b"), nullptr);
  EXPECT_EQ(store.Size(), 1u);
  EXPECT_EQ(store.Get("a")->value, 4);
}

TEST(Store, UpsertIfChangedKeepsTheStoredObjectOfTheSameVersion) {
  Store<Item> store;
  auto first = store.UpsertIfChanged("a", std::make_shared<Item>(Item{"a", 1, {"a", "7"}}));
  EXPECT_TRUE(first.stored);
  EXPECT_EQ(first.old, nullptr);

  auto same = store.UpsertIfChanged("a", std::make_shared<Item>(Item{"a", 2, {"a", "7"}}));
  EXPECT_FALSE(same.stored);
  ASSERT_NE(same.old, nullptr);
  EXPECT_EQ(store.Get("a")->value, 1) << "same resourceVersion: the stored object stays";

  auto newer = store.UpsertIfChanged("a", std::make_shared<Item>(Item{"a", 3, {"a", "8"}}));
  EXPECT_TRUE(newer.stored);
  ASSERT_NE(newer.old, nullptr);
  EXPECT_EQ(newer.old->value, 1);
  EXPECT_EQ(store.Get("a")->value, 3);
}

nlohmann::json PodJson(const std::string& name, const std::string& rv,
                       const std::string& cpu = "100m") {
  return {
      {"metadata", {{"name", name}, {"namespace", "ns"}, {"resourceVersion", rv}}},
      {"spec",
       {{"containers", nlohmann::json::array(
                           {{{"name", "c"}, {"resources", {{"requests", {{"cpu", cpu}}}}}}})}}}};
}

nlohmann::json ListBody(const std::vector<nlohmann::json>& items, const std::string& rv) {
  return {{"kind", "PodList"}, {"metadata", {{"resourceVersion", rv}}}, {"items", items}};
}

// Serves scripted LIST bodies in order and scripted watch streams in order. A watch with nothing
// scripted blocks until Stop().
class FakeClient : public testing::UnusedClient {
 public:
  struct ScriptedWatch {
    std::vector<client::WatchEvent> events;
    // Thrown by Next() once the events are served, as a broken connection does.
    std::optional<client::ApiError> then = std::nullopt;
  };

  void AddList(const nlohmann::json& body) { AddRawList(body.dump()); }
  // A body that need not be valid JSON, or need not be JSON at all.
  void AddRawList(std::string body, std::string content_type = "application/json") {
    std::lock_guard lock(mu_);
    lists_.push_back({std::move(body), std::move(content_type)});
  }
  void AddWatch(ScriptedWatch watch) {
    std::lock_guard lock(mu_);
    watches_.push_back(std::move(watch));
    cv_.notify_all();
  }
  std::vector<std::string> watch_versions() {
    std::lock_guard lock(mu_);
    return watch_versions_;
  }
  // Whether each watch asked for pods left undecoded.
  std::vector<bool> watch_undecoded() {
    std::lock_guard lock(mu_);
    return watch_undecoded_;
  }
  // Whether each watch asked for the requests' connection (client::WatchOptions::busy).
  std::vector<bool> watch_busy() {
    std::lock_guard lock(mu_);
    return watch_busy_;
  }
  int list_calls() {
    std::lock_guard lock(mu_);
    return list_calls_;
  }
  std::vector<std::string> list_versions() {
    std::lock_guard lock(mu_);
    return list_versions_;
  }

  client::ListPage ListPageRaw(const std::string&, const client::ListOptions& options,
                               const std::string&) override {
    std::lock_guard lock(mu_);
    list_calls_++;
    list_versions_.push_back(options.resource_version);
    if (lists_.empty()) throw client::ApiError(client::ErrorReason::kInternalError, 500, "no list");
    client::ListPage page = lists_.front();
    if (lists_.size() > 1) lists_.pop_front();
    return page;
  }
  std::unique_ptr<client::WatchStream> Watch(const std::string&,
                                             const client::WatchOptions& options) override {
    std::lock_guard lock(mu_);
    watch_versions_.push_back(options.resource_version);
    watch_undecoded_.push_back(options.undecoded_protobuf_pods);
    watch_busy_.push_back(options.busy);
    ScriptedWatch script;
    if (!watches_.empty()) {
      script = std::move(watches_.front());
      watches_.pop_front();
    } else {
      return std::make_unique<Stream>(this, std::vector<client::WatchEvent>{}, true);
    }
    return std::make_unique<Stream>(this, std::move(script.events), false, std::move(script.then));
  }

 private:
  class Stream : public client::WatchStream {
   public:
    Stream(FakeClient* owner, std::vector<client::WatchEvent> events, bool block,
           std::optional<client::ApiError> then = std::nullopt)
        : owner_(owner), events_(std::move(events)), block_(block), then_(std::move(then)) {}
    bool Next(client::WatchEvent* event) override {
      if (next_ < events_.size()) {
        *event = events_[next_++];
        return true;
      }
      if (then_) throw *then_;
      if (!block_) return false;
      std::unique_lock lock(owner_->mu_);
      owner_->cv_.wait(lock, [this] { return stopped_; });
      return false;
    }
    void Stop() override {
      std::lock_guard lock(owner_->mu_);
      stopped_ = true;
      owner_->cv_.notify_all();
    }

   private:
    FakeClient* owner_;
    std::vector<client::WatchEvent> events_;
    size_t next_ = 0;
    bool block_;
    std::optional<client::ApiError> then_;
    bool stopped_ = false;
  };

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<client::ListPage> lists_;
  std::deque<ScriptedWatch> watches_;
  std::vector<std::string> list_versions_;
  std::vector<std::string> watch_versions_;
  std::vector<bool> watch_undecoded_;
  std::vector<bool> watch_busy_;
  int list_calls_ = 0;
};

client::WatchEvent Event(client::WatchEventType type, nlohmann::json object) {
  client::WatchEvent event;
  event.type = type;
  event.object = std::move(object);
  return event;
}

ReflectorOptions Options() {
  ReflectorOptions options;
  options.resource = client::PodsResource();
  options.initial_backoff = 1ms;
  options.max_backoff = 5ms;
  return options;
}

struct Log {
  std::mutex mu;
  std::vector<std::string> events;
  EventHandler<api::Pod> Handler() {
    EventHandler<api::Pod> h;
    h.on_add = [this](const api::PodPtr& p) { Add("add " + p->meta.name); };
    h.on_update = [this](const api::PodPtr&, const api::PodPtr& p) {
      Add("update " + p->meta.name);
    };
    h.on_delete = [this](const api::PodPtr& p) { Add("delete " + p->meta.name); };
    return h;
  }
  void Add(std::string e) {
    std::lock_guard lock(mu);
    events.push_back(std::move(e));
  }
  std::vector<std::string> Get() {
    std::lock_guard lock(mu);
    return events;
  }
};

bool WaitFor(const std::function<bool()>& condition) {
  for (int i = 0; i < 500; i++) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

TEST(Informer, BookmarksAdvanceResourceVersionAndClosedWatchResumesFromIt) {
  auto fake = std::make_shared<FakeClient>();
  fake->AddList(ListBody({PodJson("a", "10")}, "10"));
  fake->AddWatch(
      {{Event(client::WatchEventType::kAdded, PodJson("b", "11")),
        Event(client::WatchEventType::kBookmark, {{"metadata", {{"resourceVersion", "15"}}}})}});
  Informer<api::Pod> informer(fake, Options(), api::DecodePod);
  Log log;
  informer.AddEventHandler(log.Handler());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(5s));
  ASSERT_TRUE(WaitFor([&] { return fake->watch_versions().size() >= 2; }));
  EXPECT_EQ(fake->watch_versions()[0], "10");
  EXPECT_EQ(fake->watch_versions()[1], "15") << "re-watch must resume from the bookmark";
  EXPECT_EQ(fake->list_calls(), 1) << "a closed stream is re-watched, not relisted";
  EXPECT_EQ(log.Get(), (std::vector<std::string>{"add a", "add b"}));
}

// A connection cut mid-watch: the stream had served, so it is watched again at once from where
// it got to. A backoff (an hour here) would grow with every cut and leave the informer blind.
TEST(Informer, AWatchThatBrokeAfterServingIsWatchedAgainAtOnce) {
  auto fake = std::make_shared<FakeClient>();
  fake->AddList(ListBody({PodJson("a", "10")}, "10"));
  const client::ApiError reset(client::ErrorReason::kTransport, 0,
                               "watch stream: request failed: Connection reset by peer");
  fake->AddWatch({{Event(client::WatchEventType::kAdded, PodJson("b", "11"))}, reset});
  fake->AddWatch({{Event(client::WatchEventType::kAdded, PodJson("c", "12"))}, reset});
  ReflectorOptions options = Options();
  options.initial_backoff = 1h;
  options.max_backoff = 1h;
  Informer<api::Pod> informer(fake, options, api::DecodePod);
  Log log;
  informer.AddEventHandler(log.Handler());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(5s));
  ASSERT_TRUE(WaitFor([&] { return fake->watch_versions().size() >= 3; }))
      << "the informer backed off after a watch that had served";
  const auto versions = fake->watch_versions();
  EXPECT_EQ(std::vector<std::string>(versions.begin(), versions.begin() + 3),
            (std::vector<std::string>{"10", "11", "12"}));
  EXPECT_EQ(fake->list_calls(), 1);
  EXPECT_EQ(log.Get(), (std::vector<std::string>{"add a", "add b", "add c"}));
}

// A started informer on a gate the test holds, as for another informer still listing; `fake`
// serves its list (one pod, resourceVersion 10).
struct HeldGate {
  explicit HeldGate(std::chrono::milliseconds max_wait)
      : gate(std::make_shared<FirstWatchGate>(max_wait)) {
    gate->Join();
    fake->AddList(ListBody({PodJson("a", "10")}, "10"));
    ReflectorOptions options = Options();
    options.first_watch_gate = gate;
    informer = std::make_unique<Informer<api::Pod>>(fake, options, api::DecodePod);
    informer->Start();
  }
  ~HeldGate() { informer->Stop(); }

  std::shared_ptr<FakeClient> fake = std::make_shared<FakeClient>();
  std::shared_ptr<FirstWatchGate> gate;
  std::unique_ptr<Informer<api::Pod>> informer;
};

// The gate of a factory: an informer that has listed opens its watch only once every other
// informer on the gate has listed too.
TEST(Informer, TheFirstWatchWaitsUntilEveryInformerOnTheGateHasListed) {
  HeldGate held(std::chrono::hours(1));
  ASSERT_TRUE(held.informer->WaitForSync(5s));
  // Without the gate the watch follows the list within a millisecond; give it a fifth of a second.
  for (int i = 0; i < 20; i++) {
    ASSERT_TRUE(held.fake->watch_versions().empty()) << "watched while another was listing";
    std::this_thread::sleep_for(10ms);
  }
  held.gate->Leave();
  ASSERT_TRUE(WaitFor([&] { return held.fake->watch_versions().size() == 1; }));
  EXPECT_EQ(held.fake->watch_versions()[0], "10");
}

// Stop does not wait out the gate (an hour here).
TEST(Informer, StopEndsTheWaitAtTheGate) {
  HeldGate held(std::chrono::hours(1));
  ASSERT_TRUE(held.informer->WaitForSync(5s));
  held.informer->Stop();
  EXPECT_TRUE(held.fake->watch_versions().empty());
}

// An informer whose list never succeeds (the test's hold, never released) holds the others'
// watches only for the gate's bound.
TEST(Informer, TheGateOpensAfterItsBoundWhenAListNeverSucceeds) {
  HeldGate held(1ms);
  ASSERT_TRUE(WaitFor([&] { return held.fake->watch_versions().size() == 1; }));
}

TEST(Informer, GoneErrorEventRelistsAndDiffsAgainstStore) {
  auto fake = std::make_shared<FakeClient>();
  fake->AddList(ListBody({PodJson("a", "10"), PodJson("b", "10"), PodJson("c", "10")}, "10"));
  fake->AddWatch(
      {{Event(client::WatchEventType::kError, {{"kind", "Status"},
                                               {"code", 410},
                                               {"reason", "Expired"},
                                               {"message", "too old resource version"}})}});
  // After the relist: a deleted, b changed, c unchanged, d new.
  fake->AddList(
      ListBody({PodJson("b", "20", "200m"), PodJson("c", "10"), PodJson("d", "21")}, "21"));
  Informer<api::Pod> informer(fake, Options(), api::DecodePod);
  Log log;
  informer.AddEventHandler(log.Handler());
  informer.Start();
  ASSERT_TRUE(WaitFor([&] { return informer.reflector().lists() >= 2; }));
  ASSERT_TRUE(WaitFor([&] { return fake->watch_versions().size() >= 2; }));
  EXPECT_EQ(fake->watch_versions()[1], "21");
  // The first list may be served from the apiserver's watch cache; after 410 only a consistent
  // read is safe.
  EXPECT_EQ(fake->list_versions().at(0), "0");
  EXPECT_EQ(fake->list_versions().at(1), "");
  auto events = log.Get();
  std::vector<std::string> after_relist(events.begin() + 3, events.end());
  std::sort(after_relist.begin(), after_relist.end());
  EXPECT_EQ(after_relist, (std::vector<std::string>{"add d", "delete a", "update b"}));
  EXPECT_EQ(informer.store().Get("ns/b")->requests.milli_cpu, 200);
  EXPECT_EQ(informer.store().Size(), 3u);
}

// Collects what an informer's decode error handler reports, as "name: error".
class DecodeErrors {
 public:
  DecodeErrorHandler Handler() {
    return [this](const nlohmann::json& object, const std::string& error) {
      std::lock_guard lock(mu_);
      reported_.push_back(object["metadata"]["name"].get<std::string>() + ": " + error);
    };
  }
  std::vector<std::string> Get() {
    std::lock_guard lock(mu_);
    return reported_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> reported_;
};

TEST(Informer, MalformedObjectsAreReportedAndSkippedNotFatal) {
  auto fake = std::make_shared<FakeClient>();
  fake->AddList(ListBody({PodJson("good", "10"), PodJson("bad", "10", "12x")}, "10"));
  fake->AddWatch({{Event(client::WatchEventType::kAdded, PodJson("bad2", "11", "-")),
                   Event(client::WatchEventType::kAdded, PodJson("good2", "12"))}});
  Informer<api::Pod> informer(fake, Options(), api::DecodePod);
  DecodeErrors errors;
  informer.SetDecodeErrorHandler(errors.Handler());
  informer.Start();
  ASSERT_TRUE(WaitFor([&] { return informer.store().Size() == 2; }));
  EXPECT_NE(informer.store().Get("ns/good"), nullptr);
  EXPECT_NE(informer.store().Get("ns/good2"), nullptr);
  const std::vector<std::string> reported = errors.Get();
  ASSERT_EQ(reported.size(), 2u);
  EXPECT_NE(reported[0].find("bad: spec.containers[0].resources.requests.cpu"), std::string::npos)
      << reported[0];
  EXPECT_EQ(informer.decode_errors(), 2u);
}

// A pod as the apiserver sends it in protobuf, requesting `cpu`.
std::string PodProto(const std::string& name, const std::string& cpu,
                     const std::string& rv = "10") {
  using testing::Proto;
  return Proto()
      .Message(1, Proto().Bytes(1, name).Bytes(3, "ns").Bytes(6, rv))
      .Message(2, Proto().Message(
                      2, Proto().Bytes(1, "c").Message(8, Proto().QuantityEntry(2, "cpu", cpu))))
      .str();
}

// The pod informer's protobuf decoder, counting the pods it decoded.
Informer<api::Pod>::ProtobufDecoder CountingDecoder(std::atomic<int>* decoded) {
  return [decoded](std::string_view message) {
    std::optional<api::Pod> pod = api::TryDecodeProtobufPod(message);
    if (pod) (*decoded)++;
    return pod;
  };
}

TEST(Informer, ProtobufListItemsAreDecodedDirectlyAndTheRestThroughJson) {
  auto fake = std::make_shared<FakeClient>();
  using testing::Proto;
  Proto list;
  list.Message(1, Proto().Bytes(2, "10"))
      .Bytes(2, PodProto("direct", "250m"))
      // Sent twice, so merged: left to the JSON path, which decodes it.
      .Bytes(2, Proto().Raw(PodProto("merged", "1")).Message(1, Proto().Bytes(5, "uid-m")).str())
      .Bytes(2, PodProto("bad", "12x"));
  fake->AddRawList(list.Envelope("PodList"), "application/vnd.kubernetes.protobuf");
  std::atomic<int> direct{0};
  Informer<api::Pod> informer(fake, Options(), api::DecodePod, CountingDecoder(&direct));
  DecodeErrors errors;
  informer.SetDecodeErrorHandler(errors.Handler());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(5s));
  EXPECT_EQ(informer.store().Size(), 2u);
  EXPECT_EQ(informer.store().Get("ns/direct")->requests.milli_cpu, 250);
  EXPECT_EQ(informer.store().Get("ns/merged")->meta.uid, "uid-m");
  EXPECT_EQ(informer.store().Get("ns/merged")->requests.milli_cpu, 1000);
  EXPECT_EQ(direct.load(), 1);
  const std::vector<std::string> reported = errors.Get();
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_NE(reported[0].find("bad: spec.containers[0].resources.requests.cpu"), std::string::npos)
      << reported[0];
}

client::WatchEvent ProtobufPodEvent(client::WatchEventType type, std::string message) {
  client::WatchEvent event;
  event.type = type;
  event.protobuf_pod = std::move(message);
  return event;
}

TEST(Informer, WatchedProtobufPodsAreDecodedDirectlyAndTheRestThroughJson) {
  auto fake = std::make_shared<FakeClient>();
  fake->AddList(ListBody({PodJson("gone", "10")}, "10"));
  fake->AddWatch(
      {{ProtobufPodEvent(client::WatchEventType::kAdded, PodProto("direct", "250m", "11")),
        ProtobufPodEvent(client::WatchEventType::kModified, PodProto("bad", "12x", "12")),
        ProtobufPodEvent(client::WatchEventType::kDeleted, PodProto("gone", "1", "13"))}});
  std::atomic<int> direct{0};
  ReflectorOptions options = Options();
  options.prefer_protobuf = true;
  options.busy_watch = true;
  Informer<api::Pod> informer(fake, options, api::DecodePod, CountingDecoder(&direct));
  Log log;
  informer.AddEventHandler(log.Handler());
  DecodeErrors errors;
  informer.SetDecodeErrorHandler(errors.Handler());
  informer.Start();
  ASSERT_TRUE(WaitFor([&] { return fake->watch_versions().size() >= 2; }));
  EXPECT_EQ(fake->watch_versions()[1], "13") << "re-watch resumes from the last pod's version";
  EXPECT_EQ(fake->watch_undecoded()[0], true);
  EXPECT_EQ(fake->watch_busy()[0], true) << "the watch is asked onto the requests' connection";
  EXPECT_EQ(log.Get(), (std::vector<std::string>{"add gone", "add direct", "delete gone"}));
  EXPECT_EQ(informer.store().Size(), 1u);
  EXPECT_EQ(informer.store().Get("ns/direct")->requests.milli_cpu, 250);
  EXPECT_EQ(direct.load(), 2);
  const std::vector<std::string> reported = errors.Get();
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_NE(reported[0].find("bad: spec.containers[0].resources.requests.cpu"), std::string::npos)
      << reported[0];
}

TEST(Informer, FirstListIsAppliedAsDecodedAndOneFailingMidwayIsReplacedByTheNext) {
  auto fake = std::make_shared<FakeClient>();
  // Enough items that the list decoder hands over a batch before the body ends, then a body cut
  // short: the informer has applied the first batch when the list fails.
  constexpr int kItems = 5000;
  std::vector<nlohmann::json> many;
  many.reserve(kItems);
  for (int i = 0; i < kItems; i++) many.push_back(PodJson("p-" + std::to_string(i), "10"));
  const std::string whole = ListBody(many, "10").dump();
  ASSERT_GT(whole.size(), 2 * api::ListStreamParser::kBatchBytes);
  fake->AddRawList(whole.substr(0, whole.size() * 2 / 3));
  fake->AddList(ListBody({PodJson("p-0", "10"), PodJson("new", "11")}, "11"));
  Informer<api::Pod> informer(fake, Options(), api::DecodePod);
  Log log;
  informer.AddEventHandler(log.Handler());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(5s));
  EXPECT_EQ(fake->list_calls(), 2);
  EXPECT_EQ(informer.store().Size(), 2u);
  EXPECT_NE(informer.store().Get("ns/new"), nullptr);
  const auto events = log.Get();
  const auto count = [&](const std::string& prefix) {
    return std::count_if(events.begin(), events.end(),
                         [&](const std::string& e) { return e.rfind(prefix, 0) == 0; });
  };
  // What the failed list applied, p-0 included, arrived as adds; the next list deleted all of it
  // but p-0, which it still holds at the same version (no event).
  const auto applied = count("add p-");
  EXPECT_GE(applied, 1000);
  EXPECT_LT(applied, kItems);
  EXPECT_EQ(count("delete p-"), applied - 1);
  EXPECT_EQ(count("add new"), 1);
  EXPECT_EQ(count("update "), 0);
}

TEST(Informer, LateHandlerGetsExistingObjectsReplayedAsAdds) {
  auto fake = std::make_shared<FakeClient>();
  fake->AddList(ListBody({PodJson("a", "10"), PodJson("b", "10")}, "10"));
  Informer<api::Pod> informer(fake, Options(), api::DecodePod);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(5s));
  Log log;
  informer.AddEventHandler(log.Handler());
  auto events = log.Get();
  std::sort(events.begin(), events.end());
  EXPECT_EQ(events, (std::vector<std::string>{"add a", "add b"}));
}

TEST(Informer, DeleteEventRemovesAndReportsFinalState) {
  auto fake = std::make_shared<FakeClient>();
  fake->AddList(ListBody({PodJson("a", "10")}, "10"));
  fake->AddWatch({{Event(client::WatchEventType::kDeleted, PodJson("a", "11", "300m"))}});
  Informer<api::Pod> informer(fake, Options(), api::DecodePod);
  api::PodPtr deleted;
  std::mutex mu;
  EventHandler<api::Pod> h;
  h.on_delete = [&](const api::PodPtr& p) {
    std::lock_guard lock(mu);
    deleted = p;
  };
  informer.AddEventHandler(h);
  informer.Start();
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard lock(mu);
    return deleted != nullptr;
  }));
  EXPECT_EQ(informer.store().Size(), 0u);
  std::lock_guard lock(mu);
  EXPECT_EQ(deleted->requests.milli_cpu, 300);
}

TEST(Informer, ListFailuresBackOffAndRetryUntilSynced) {
  auto fake = std::make_shared<FakeClient>();
  Informer<api::Pod> informer(fake, Options(), api::DecodePod);
  informer.Start();
  ASSERT_TRUE(WaitFor([&] { return fake->list_calls() >= 3; }));
  EXPECT_FALSE(informer.HasSynced());
  EXPECT_NE(informer.reflector().last_error().find("no list"), std::string::npos);
  fake->AddList(ListBody({PodJson("a", "10")}, "10"));
  EXPECT_TRUE(informer.WaitForSync(5s));
  EXPECT_EQ(informer.reflector().last_error(), "");
}

// Answers API discovery GETs from a script (a body, or an error to throw) and records their
// paths; lists and watches as FakeClient.
class DiscoveryClient : public FakeClient {
 public:
  void AddDiscovery(nlohmann::json body) {
    std::lock_guard lock(mu_);
    answers_.push_back({std::move(body), std::nullopt});
  }
  void AddDiscoveryError(client::ErrorReason reason, int status) {
    std::lock_guard lock(mu_);
    answers_.push_back({nullptr, client::ApiError(reason, status, "scripted")});
  }
  std::vector<std::string> paths() {
    std::lock_guard lock(mu_);
    return paths_;
  }
  nlohmann::json Get(const std::string& path) override {
    std::lock_guard lock(mu_);
    paths_.push_back(path);
    if (answers_.empty()) throw std::logic_error("no discovery answer scripted");
    Answer answer = answers_.front();
    answers_.pop_front();
    if (answer.error) throw *answer.error;
    return answer.body;
  }

 private:
  struct Answer {
    nlohmann::json body;
    std::optional<client::ApiError> error;
  };
  std::mutex mu_;
  std::deque<Answer> answers_;
  std::vector<std::string> paths_;
};

nlohmann::json DiscoveryBody(const std::vector<std::string>& names) {
  nlohmann::json resources = nlohmann::json::array();
  for (const auto& name : names) resources.push_back({{"name", name}, {"namespaced", true}});
  return {{"kind", "APIResourceList"},
          {"groupVersion", "scheduling.x-k8s.io/v1alpha1"},
          {"resources", resources}};
}

ReflectorOptions DiscoveredOptions() {
  ReflectorOptions options = Options();
  options.resource = client::PodGroupsResource();
  options.discover = true;
  return options;
}

// Runs the informer until it has synced and returns what OnServed reported meanwhile.
std::vector<bool> RunUntilSynced(Informer<api::Unstructured>& informer) {
  std::vector<bool> served;
  informer.OnServed([&](bool s) { served.push_back(s); });
  informer.Start();
  EXPECT_TRUE(informer.WaitForSync(5s));
  informer.Stop();
  return served;
}

TEST(InformerDiscovery, AnUnservedGroupVersionLeavesTheInformerSyncedEmptyAndNeverListed) {
  auto client = std::make_shared<DiscoveryClient>();
  client->AddDiscoveryError(client::ErrorReason::kNotFound, 404);
  Informer<api::Unstructured> informer(client, DiscoveredOptions(), &api::DecodeUnstructured);
  std::vector<bool> served = RunUntilSynced(informer);
  EXPECT_EQ(served, std::vector<bool>{false});
  EXPECT_EQ(client->paths(), std::vector<std::string>{"/apis/scheduling.x-k8s.io/v1alpha1"});
  EXPECT_EQ(client->list_calls(), 0);
  EXPECT_EQ(informer.store().Size(), 0u);
  // A handler registered late hears the answer at once.
  informer.OnServed([&](bool s) { served.push_back(s); });
  EXPECT_EQ(served, (std::vector<bool>{false, false}));
}

TEST(InformerDiscovery, AGroupVersionWithoutTheResourceIsUnserved) {
  auto client = std::make_shared<DiscoveryClient>();
  client->AddDiscovery(DiscoveryBody({"podgroupsets", "podgroups/status"}));
  Informer<api::Unstructured> informer(client, DiscoveredOptions(), &api::DecodeUnstructured);
  EXPECT_EQ(RunUntilSynced(informer), std::vector<bool>{false});
  EXPECT_EQ(client->list_calls(), 0);
}

TEST(InformerDiscovery, AServedResourceIsListedOnceDiscoveryAnswersAfterFailures) {
  auto client = std::make_shared<DiscoveryClient>();
  client->AddDiscoveryError(client::ErrorReason::kServiceUnavailable, 503);
  client->AddDiscovery({{"unexpected", "shape"}});
  client->AddDiscovery(DiscoveryBody({"podgroups", "podgroups/status"}));
  nlohmann::json group = {
      {"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
      {"kind", "PodGroup"},
      {"metadata", {{"name", "g"}, {"namespace", "ns"}, {"resourceVersion", "3"}}}};
  client->AddList(ListBody({group}, "3"));
  Informer<api::Unstructured> informer(client, DiscoveredOptions(), &api::DecodeUnstructured);
  EXPECT_EQ(RunUntilSynced(informer), std::vector<bool>{true});
  EXPECT_EQ(client->paths().size(), 3u);
  EXPECT_EQ(client->list_calls(), 1);
  EXPECT_NE(informer.store().Get("ns/g"), nullptr);
}

TEST(InformerDiscovery, ResourcesListedWithoutDiscoveryCountAsServed) {
  auto client = std::make_shared<FakeClient>();
  Informer<api::Pod> informer(client, Options(), &api::DecodePod);
  std::optional<bool> served;
  informer.OnServed([&](bool s) { served = s; });
  EXPECT_EQ(served, true);
}

}  // namespace
}  // namespace berth::informer
