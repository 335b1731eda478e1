#include "pkg/plugins/outofprocess/outofprocess.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "pkg/util/base64.h"
#include "test/testing/client_test_util.h"
#include "test/testing/eventually.h"
#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"

namespace berth::plugins::outofprocess {
namespace {

using client::testing::FakeRequest;
using client::testing::FakeServer;
using framework::Code;
using framework::Status;
using json = nlohmann::json;
using namespace std::chrono_literals;

// A pod parked at Permit, as the framework would hold it: records the plugin's decision.
class RecordingWaitingPod : public framework::WaitingPod {
 public:
  explicit RecordingWaitingPod(api::PodPtr pod) : pod_(std::move(pod)) {}
  api::PodPtr GetPod() const override { return pod_; }
  std::vector<std::string> GetPendingPlugins() const override { return {std::string(kName)}; }
  void Allow(const std::string& plugin) override { Decide(plugin, true, ""); }
  void Reject(const std::string& plugin, const std::string& message) override {
    Decide(plugin, false, message);
  }
  // Waits (bounded) for the decision; false when none came.
  bool AwaitDecision() {
    std::unique_lock lock(mu_);
    return decided_cv_.wait_for(lock, 30s, [&] { return decided_; });
  }
  bool allowed() const {
    std::lock_guard lock(mu_);
    return allowed_;
  }
  std::string message() const {
    std::lock_guard lock(mu_);
    return message_;
  }
  std::string plugin() const {
    std::lock_guard lock(mu_);
    return plugin_;
  }

 private:
  void Decide(const std::string& plugin, bool allowed, const std::string& message) {
    std::lock_guard lock(mu_);
    if (decided_) return;
    decided_ = true;
    allowed_ = allowed;
    message_ = message;
    plugin_ = plugin;
    decided_cv_.notify_all();
  }
  api::PodPtr pod_;
  mutable std::mutex mu_;
  std::condition_variable decided_cv_;
  bool decided_ = false;
  bool allowed_ = false;
  std::string message_;
  std::string plugin_;
};

class Handle : public testing::FakeHandle {
 public:
  std::shared_ptr<framework::WaitingPod> GetWaitingPod(const std::string& uid) override {
    std::lock_guard lock(mu_);
    auto it = waiting_.find(uid);
    return it == waiting_.end() ? nullptr : it->second;
  }
  std::shared_ptr<RecordingWaitingPod> Park(const api::PodPtr& pod) {
    auto waiting = std::make_shared<RecordingWaitingPod>(pod);
    std::lock_guard lock(mu_);
    waiting_[pod->meta.uid] = waiting;
    return waiting;
  }
  prometheus::Registry* MetricsRegistry() const override { return &registry_; }
  prometheus::Registry& registry() { return registry_; }

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<RecordingWaitingPod>> waiting_;
  mutable prometheus::Registry registry_;
};

// One endpoint's args for `server`, serving `points`.
json Endpoint(const std::string& name, const FakeServer& server, const json& points,
              const json& extra = json::object()) {
  json endpoint = {{"name", name}, {"url", server.url() + "/hooks"}, {"extensionPoints", points}};
  endpoint.update(extra);
  return endpoint;
}

// The metric family's value for the series carrying every label in `labels`; -1 when absent.
double MetricValue(prometheus::Registry& registry, const std::string& family,
                   const std::map<std::string, std::string>& labels) {
  for (const auto& f : registry.Collect()) {
    if (f.name != family) continue;
    for (const auto& m : f.metric) {
      size_t matched = 0;
      for (const auto& label : m.label) {
        auto it = labels.find(label.name);
        if (it != labels.end() && it->second == label.value) matched++;
      }
      if (matched != labels.size()) continue;
      if (f.type == prometheus::MetricType::Histogram) {
        return static_cast<double>(m.histogram.sample_count);
      }
      return m.counter.value;
    }
  }
  return -1;
}

// Whether `condition` became true within a bound generous enough for any machine.
class OutOfProcessTest : public ::testing::Test {
 protected:
  OutOfProcessTest() {
    for (const char* name : {"n1", "n2", "n3"}) {
      nodes_.push_back(testing::NodeBuilder(name).Capacity("4", "8Gi", 110).Info());
    }
  }

  std::shared_ptr<OutOfProcess> Make(const json& endpoints) {
    return std::dynamic_pointer_cast<OutOfProcess>(New({{"endpoints", endpoints}}, handle_));
  }

  // PreFilter, then Filter on every node.
  std::vector<Status> FilterAll(OutOfProcess& plugin, framework::CycleState& state,
                                Status* pre_filter) {
    framework::PreFilterResult result;
    *pre_filter = plugin.PreFilter(state, *pod_, nodes_, &result);
    std::vector<Status> out;
    for (const auto& node : nodes_) out.push_back(plugin.Filter(state, *pod_, *node));
    return out;
  }

  Handle handle_;
  std::vector<framework::NodeInfoPtr> nodes_;
  api::PodPtr pod_ = testing::PodBuilder("web", "shop").Label("app", "web").Build();
};

TEST_F(OutOfProcessTest, APointNoEndpointServesCostsNothing) {
  FakeServer server([](int, FakeRequest& request) { request.Reply(200, "{}"); });
  auto plugin = Make(json::array({Endpoint("post", server, {"PostBind"})}));
  framework::CycleState state;
  framework::PreFilterResult result;
  EXPECT_TRUE(plugin->PreFilter(state, *pod_, nodes_, &result).IsSkip());
  const std::vector<const framework::NodeInfo*> feasible = {nodes_[0].get()};
  EXPECT_TRUE(plugin->PreScore(state, *pod_, feasible).IsSkip());
  EXPECT_TRUE(plugin->Reserve(state, *pod_, "n1").IsSuccess());
  std::chrono::milliseconds timeout{0};
  EXPECT_TRUE(plugin->Permit(state, *pod_, "n1", &timeout).IsSuccess());
  EXPECT_TRUE(plugin->PreBindPreFlight(state, *pod_, "n1").IsSkip());
  plugin->Unreserve(state, *pod_, "n1");
  EXPECT_EQ(server.request_count(), 0);

  // With no endpoints at all, every point is idle too.
  auto idle = Make(json::array());
  EXPECT_TRUE(idle->PreFilter(state, *pod_, nodes_, &result).IsSkip());
  EXPECT_TRUE(idle->PreBindPreFlight(state, *pod_, "n1").IsSkip());
}

TEST_F(OutOfProcessTest, FilterAsksOncePerCycleAndNamesTheEndpointPerNode) {
  FakeServer server([](int, FakeRequest& request) {
    request.Reply(200, R"({"apiVersion": "outofprocess.berth.dev/v1alpha1",
        "failedNodes": {"n1": "no GPU left"},
        "failedAndUnresolvableNodes": {"n3": "wrong GPU model"}})");
  });
  auto plugin = Make(json::array({Endpoint("gpu", server, {"Filter"})}));
  framework::CycleState state;
  Status pre_filter;
  const std::vector<Status> statuses = FilterAll(*plugin, state, &pre_filter);
  ASSERT_TRUE(pre_filter.IsSuccess()) << pre_filter.Message();
  EXPECT_EQ(statuses[0].code(), Code::kUnschedulable);
  EXPECT_EQ(statuses[0].Message(), "out-of-process endpoint \"gpu\": no GPU left");
  EXPECT_TRUE(statuses[1].IsSuccess());
  EXPECT_EQ(statuses[2].code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(statuses[2].Message(), "out-of-process endpoint \"gpu\": wrong GPU model");

  ASSERT_EQ(server.request_count(), 1);
  const client::testing::RecordedRequest request = server.requests()[0];
  EXPECT_EQ(request.method, "POST");
  EXPECT_EQ(request.path, "/hooks/filter");
  const json body = json::parse(request.body);
  EXPECT_EQ(body["verb"], "filter");
  EXPECT_EQ(body["nodes"], json({"n1", "n2", "n3"}));
  EXPECT_EQ(body["pod"]["metadata"]["name"], "web");
  EXPECT_EQ(body["pod"]["metadata"]["labels"]["app"], "web");
}

TEST_F(OutOfProcessTest, PreFilterCanRejectThePodOrNarrowTheNodes) {
  FakeServer narrow(
      [](int, FakeRequest& request) { request.Reply(200, R"({"nodeNames": ["n2", "n3"]})"); });
  FakeServer narrower(
      [](int, FakeRequest& request) { request.Reply(200, R"({"nodeNames": ["n3", "n1"]})"); });
  auto plugin = Make(
      json::array({Endpoint("a", narrow, {"PreFilter"}), Endpoint("b", narrower, {"PreFilter"})}));
  framework::CycleState state;
  framework::PreFilterResult result;
  ASSERT_TRUE(plugin->PreFilter(state, *pod_, nodes_, &result).IsSuccess());
  ASSERT_FALSE(result.AllNodes());
  EXPECT_EQ(*result.node_names, std::set<std::string>({"n3"}));

  FakeServer reject([](int, FakeRequest& request) {
    request.Reply(200, R"({"code": "Unschedulable", "reason": "quota exhausted"})");
  });
  auto rejecting = Make(json::array({Endpoint("quota", reject, {"PreFilter"})}));
  framework::CycleState state2;
  const Status status = rejecting->PreFilter(state2, *pod_, nodes_, &result);
  EXPECT_EQ(status.code(), Code::kUnschedulable);
  EXPECT_EQ(status.Message(), "out-of-process endpoint \"quota\": quota exhausted");
}

TEST_F(OutOfProcessTest, AFailingEndpointFailsTheCycleNamingItUnlessItIsIgnorable) {
  FakeServer broken([](int, FakeRequest& request) { request.Reply(500, "database down"); });
  auto plugin = Make(json::array({Endpoint("gpu", broken, {"Filter"})}));
  framework::CycleState state;
  Status pre_filter;
  FilterAll(*plugin, state, &pre_filter);
  EXPECT_EQ(pre_filter.code(), Code::kError);
  EXPECT_NE(pre_filter.Message().find("out-of-process endpoint \"gpu\" (Filter): HTTP 500: "
                                      "database down"),
            std::string::npos)
      << pre_filter.Message();

  auto ignorable = Make(json::array({Endpoint("gpu", broken, {"Filter"}, {{"ignorable", true}})}));
  framework::CycleState state2;
  const std::vector<Status> statuses = FilterAll(*ignorable, state2, &pre_filter);
  EXPECT_TRUE(pre_filter.IsSuccess()) << pre_filter.Message();
  for (const Status& s : statuses) EXPECT_TRUE(s.IsSuccess());
}

TEST_F(OutOfProcessTest, MalformedOrDeepAnswersAreErrorsNamingTheEndpoint) {
  const std::string deep = "{\"failedNodes\":" + std::string(100000, '[') + "}";
  for (const std::string& answer :
       {std::string("{\"failedNodes\": [\"n1\"]}"), std::string("not json"), deep}) {
    FakeServer server([&](int, FakeRequest& request) { request.Reply(200, answer); });
    auto plugin = Make(json::array({Endpoint("gpu", server, {"Filter"})}));
    framework::CycleState state;
    Status pre_filter;
    FilterAll(*plugin, state, &pre_filter);
    EXPECT_EQ(pre_filter.code(), Code::kError);
    EXPECT_NE(pre_filter.Message().find("out-of-process endpoint \"gpu\" (Filter): "),
              std::string::npos)
        << pre_filter.Message();
  }
}

TEST_F(OutOfProcessTest, ATimeoutFailsTheCycleNamingTheEndpointAndIsCounted) {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  FakeServer slow([&](int, FakeRequest& request) {
    std::unique_lock lock(mu);
    cv.wait_for(lock, 30s, [&] { return release; });
    request.Reply(200, "{}");
  });
  auto plugin =
      Make(json::array({Endpoint("slow", slow, {"Filter", "PreBind"}, {{"timeout", "200ms"}})}));
  framework::CycleState state;
  Status pre_filter;
  FilterAll(*plugin, state, &pre_filter);
  const Status prebind = plugin->PreBind(state, *pod_, "n1");
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  for (const Status& status : {pre_filter, prebind}) {
    EXPECT_EQ(status.code(), Code::kError);
    EXPECT_NE(status.Message().find("out-of-process endpoint \"slow\""), std::string::npos)
        << status.Message();
  }
  EXPECT_NE(prebind.Message().find("(PreBind)"), std::string::npos) << prebind.Message();
  EXPECT_EQ(MetricValue(handle_.registry(), "berth_outofprocess_request_errors_total",
                        {{"endpoint", "slow"}, {"point", "Filter"}, {"result", "timeout"}}),
            1);
  EXPECT_EQ(MetricValue(handle_.registry(), "berth_outofprocess_request_errors_total",
                        {{"endpoint", "slow"}, {"point", "PreBind"}, {"result", "timeout"}}),
            1);
  EXPECT_EQ(MetricValue(handle_.registry(), "berth_outofprocess_request_duration_seconds",
                        {{"endpoint", "slow"}, {"point", "Filter"}, {"result", "error"}}),
            1);
}

TEST_F(OutOfProcessTest, ScoreIsOneCallWithTheFeasibleNodesAndAWeightedMean) {
  FakeServer a([](int, FakeRequest& request) {
    request.Reply(200, R"({"scores": {"n1": 100, "n2": 40}})");
  });
  FakeServer b([](int, FakeRequest& request) {
    request.Reply(200, R"({"scores": {"n1": 10, "n2": 100}})");
  });
  auto plugin = Make(json::array(
      {Endpoint("a", a, {"Score"}, {{"scoreWeight", 3}}), Endpoint("b", b, {"Score"})}));
  framework::CycleState state;
  const std::vector<const framework::NodeInfo*> feasible = {nodes_[0].get(), nodes_[1].get()};
  ASSERT_TRUE(plugin->PreScore(state, *pod_, feasible).IsSuccess());
  int64_t score = -1;
  ASSERT_TRUE(plugin->Score(state, *pod_, *nodes_[0], &score).IsSuccess());
  EXPECT_EQ(score, (100 * 3 + 10) / 4);
  ASSERT_TRUE(plugin->Score(state, *pod_, *nodes_[1], &score).IsSuccess());
  EXPECT_EQ(score, (40 * 3 + 100) / 4);
  ASSERT_TRUE(plugin->Score(state, *pod_, *nodes_[2], &score).IsSuccess());
  EXPECT_EQ(score, 0);
  ASSERT_EQ(a.request_count(), 1);
  EXPECT_EQ(json::parse(a.requests()[0].body)["nodes"], json({"n1", "n2"}));

  FakeServer wild(
      [](int, FakeRequest& request) { request.Reply(200, R"({"scores": {"n1": 250}})"); });
  auto bad = Make(json::array({Endpoint("wild", wild, {"Score"})}));
  framework::CycleState state2;
  const Status status = bad->PreScore(state2, *pod_, feasible);
  EXPECT_EQ(status.code(), Code::kError);
  EXPECT_NE(status.Message().find("out-of-process endpoint \"wild\" (Score): the score of node "
                                  "\"n1\" is 250, not in [0, 100]"),
            std::string::npos)
      << status.Message();
}

TEST_F(OutOfProcessTest, ReserveAndPreBindVerdictsAndUnreserveOnlyLogs) {
  FakeServer server([](int, FakeRequest& request) {
    const std::string& path = request.recorded().path;
    if (path.ends_with("/prebind")) {
      request.Reply(200, R"({"code": "Unschedulable", "reason": "volume not ready"})");
    } else if (path.ends_with("/unreserve")) {
      request.Reply(503, "later");
    } else {
      request.Reply(200, R"({"code": "Success"})");
    }
  });
  auto plugin = Make(json::array({Endpoint("vol", server, {"Reserve", "PreBind", "PostBind"})}));
  framework::CycleState state;
  EXPECT_TRUE(plugin->Reserve(state, *pod_, "n2").IsSuccess());
  EXPECT_FALSE(plugin->PreBindPreFlight(state, *pod_, "n2").IsSkip());
  const Status prebind = plugin->PreBind(state, *pod_, "n2");
  EXPECT_EQ(prebind.code(), Code::kUnschedulable);
  EXPECT_EQ(prebind.Message(), "out-of-process endpoint \"vol\": volume not ready");
  plugin->Unreserve(state, *pod_, "n2");
  plugin->PostBind(state, *pod_, "n2");
  std::vector<std::string> paths;
  for (const auto& request : server.requests()) {
    paths.push_back(request.path);
    EXPECT_EQ(json::parse(request.body)["node"], "n2");
  }
  EXPECT_EQ(paths, std::vector<std::string>({"/hooks/reserve", "/hooks/prebind", "/hooks/unreserve",
                                             "/hooks/postbind"}));
  EXPECT_EQ(MetricValue(handle_.registry(), "berth_outofprocess_request_errors_total",
                        {{"endpoint", "vol"}, {"point", "Unreserve"}, {"result", "http-status"}}),
            1);
}

TEST_F(OutOfProcessTest, PermitAllowsRejectsOrWaitsAndThePollerAllowsLater) {
  std::atomic<int> polls{0};
  FakeServer server([&](int, FakeRequest& request) {
    if (request.recorded().path.ends_with("/permit")) {
      request.Reply(200, R"({"decision": "wait", "timeout": "10m"})");
      return;
    }
    // permit-status: still waiting twice, then allowed.
    request.Reply(200, ++polls < 3 ? R"({"decision": "wait"})" : R"({"decision": "allow"})");
  });
  auto plugin = Make(json::array({Endpoint(
      "gang", server, {"Permit"}, {{"permit", {{"maxWait", "1m"}, {"pollInterval", "10ms"}}}})}));
  framework::CycleState state;
  std::chrono::milliseconds timeout{0};
  const Status status = plugin->Permit(state, *pod_, "n1", &timeout);
  ASSERT_TRUE(status.IsWait()) << status.Message();
  // The endpoint's 10m is cut to maxWait; the framework's own deadline comes after it.
  EXPECT_GT(timeout, 1min);
  EXPECT_LE(timeout, 1min + 5s);
  auto waiting = handle_.Park(pod_);
  ASSERT_TRUE(waiting->AwaitDecision());
  EXPECT_TRUE(waiting->allowed());
  EXPECT_EQ(waiting->plugin(), "OutOfProcess");
  EXPECT_EQ(polls.load(), 3);
  const json status_request = json::parse(server.requests().back().body);
  EXPECT_EQ(status_request["verb"], "permit-status");
  EXPECT_EQ(status_request["node"], "n1");
  EXPECT_EQ(status_request["pod"]["metadata"]["uid"], pod_->meta.uid);
}

TEST_F(OutOfProcessTest, PermitRejectionsAndTimeoutsNameTheEndpoint) {
  FakeServer reject([](int, FakeRequest& request) {
    request.Reply(200, R"({"decision": "reject", "reason": "gang incomplete"})");
  });
  auto rejecting = Make(json::array({Endpoint("gang", reject, {"Permit"})}));
  framework::CycleState state;
  std::chrono::milliseconds timeout{0};
  const Status rejected = rejecting->Permit(state, *pod_, "n1", &timeout);
  EXPECT_EQ(rejected.code(), Code::kUnschedulable);
  EXPECT_EQ(rejected.Message(),
            "out-of-process endpoint \"gang\" rejected the pod: gang incomplete");

  FakeServer forever(
      [](int, FakeRequest& request) { request.Reply(200, R"({"decision": "wait"})"); });
  auto waiting_forever =
      Make(json::array({Endpoint("gang", forever, {"Permit"},
                                 {{"permit", {{"maxWait", "100ms"}, {"pollInterval", "20ms"}}}})}));
  ASSERT_TRUE(waiting_forever->Permit(state, *pod_, "n1", &timeout).IsWait());
  auto waiting = handle_.Park(pod_);
  ASSERT_TRUE(waiting->AwaitDecision());
  EXPECT_FALSE(waiting->allowed());
  EXPECT_EQ(waiting->message(),
            "out-of-process endpoint \"gang\" did not allow the pod within 100ms");
  // The poller lets go of the pod once the decision is delivered (just after it).
  EXPECT_TRUE(berth::testing::Eventually([&] { return waiting_forever->PollingFor() == 0; }, 30s));
}

TEST_F(OutOfProcessTest, AFailingPermitStatusRejectsThePodNamingTheEndpoint) {
  FakeServer server([](int, FakeRequest& request) {
    if (request.recorded().path.ends_with("/permit")) {
      request.Reply(200, R"({"decision": "wait"})");
    } else {
      request.Reply(200, R"({"decision": "perhaps"})");
    }
  });
  auto plugin = Make(json::array(
      {Endpoint("gang", server, {"Permit"}, {{"permit", {{"pollInterval", "10ms"}}}})}));
  framework::CycleState state;
  std::chrono::milliseconds timeout{0};
  ASSERT_TRUE(plugin->Permit(state, *pod_, "n1", &timeout).IsWait());
  auto waiting = handle_.Park(pod_);
  ASSERT_TRUE(waiting->AwaitDecision());
  EXPECT_FALSE(waiting->allowed());
  EXPECT_NE(waiting->message().find("out-of-process endpoint \"gang\" (PermitStatus): \"decision\" "
                                    "must be allow, reject or wait"),
            std::string::npos)
      << waiting->message();
}

TEST_F(OutOfProcessTest, UnreserveStopsPollingForThePod) {
  FakeServer server(
      [](int, FakeRequest& request) { request.Reply(200, R"({"decision": "wait"})"); });
  auto plugin = Make(json::array({Endpoint("gang", server, {"Permit"})}));
  framework::CycleState state;
  std::chrono::milliseconds timeout{0};
  ASSERT_TRUE(plugin->Permit(state, *pod_, "n1", &timeout).IsWait());
  EXPECT_EQ(plugin->PollingFor(), 1u);
  plugin->Unreserve(state, *pod_, "n1");
  EXPECT_EQ(plugin->PollingFor(), 0u);
}

TEST_F(OutOfProcessTest, HttpsWithAClientCertificate) {
  auto pki = client::testing::MakePki();
  ASSERT_NE(pki, nullptr);
  FakeServer server(
      [](int, FakeRequest& request) {
        request.Reply(200, R"({"failedNodes": {"n2": "not this one"}})");
      },
      client::testing::ServeWith(pki->server_cert, pki->server_key, pki->ca));
  json endpoint = Endpoint("secure", server, {"Filter"});
  endpoint["tls"] = {{"caData", util::Base64Encode(pki->ca)},
                     {"certData", util::Base64Encode(pki->client_cert)},
                     {"keyData", util::Base64Encode(pki->client_key)}};
  auto plugin = Make(json::array({endpoint}));
  framework::CycleState state;
  Status pre_filter;
  const std::vector<Status> statuses = FilterAll(*plugin, state, &pre_filter);
  ASSERT_TRUE(pre_filter.IsSuccess()) << pre_filter.Message();
  EXPECT_EQ(statuses[1].Message(), "out-of-process endpoint \"secure\": not this one");

  // Without the client certificate the server refuses the handshake: an error naming the endpoint.
  endpoint["tls"].erase("certData");
  endpoint["tls"].erase("keyData");
  auto anonymous = Make(json::array({endpoint}));
  framework::CycleState state2;
  FilterAll(*anonymous, state2, &pre_filter);
  EXPECT_EQ(pre_filter.code(), Code::kError);
  EXPECT_NE(pre_filter.Message().find("out-of-process endpoint \"secure\" (Filter)"),
            std::string::npos)
      << pre_filter.Message();
}

TEST_F(OutOfProcessTest, UnreadableTlsFilesFailTheProfileNamingTheEndpoint) {
  try {
    New({{"endpoints",
          {{{"name", "secure"},
            {"url", "https://127.0.0.1:1"},
            {"extensionPoints", {"Filter"}},
            {"tls", {{"caFile", "/nonexistent/ca.pem"}}}}}}},
        handle_);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("endpoint \"secure\": tls.caFile: cannot read"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace berth::plugins::outofprocess
