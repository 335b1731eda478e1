// OutOfProcess in the real berth-scheduler binary against the local control plane, with its
// endpoints served from this test process: a Permit endpoint that holds a gang-like pair until
// both pods arrived and then lets them bind, a PreBind endpoint that prepares a resource before
// the pod gets its node, and for each a timeout that rejects the pod naming the endpoint.

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "test/integration/scheduler_fixture.h"
#include "test/testing/client_test_util.h"

namespace berth {
namespace {

using client::testing::FakeRequest;
using client::testing::FakeServer;
using json = nlohmann::json;
using namespace std::chrono_literals;
using testing::Eventually;

// What the endpoints saw and did. Shared by the server's connection threads and the test.
struct EndpointLog {
  std::mutex mu;
  // pair label -> pods that reached Permit.
  std::map<std::string, std::set<std::string>> arrived;
  // pod -> the node the PreBind request named, and the pod's nodeName on the apiserver when the
  // endpoint was asked.
  std::map<std::string, std::pair<std::string, std::string>> prebind;
  int permit_status_polls = 0;
};

class OutOfProcessIntegration : public testing::SchedulerIntegration {
 protected:
  void SetUp() override {
    SchedulerIntegration::SetUp();
    server_ = std::make_unique<FakeServer>([this](int, FakeRequest& request) { Serve(request); });
  }
  void TearDown() override {
    // The scheduler goes before the endpoints it calls.
    SchedulerIntegration::TearDown();
    {
      std::lock_guard lock(release_mu_);
      released_ = true;
    }
    release_.notify_all();
    server_.reset();
  }

  void StartWithEndpoints() {
    StartScheduler(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "leaderElection:\n  leaderElect: false\n"
        "profiles:\n"
        "- schedulerName: berth-scheduler\n"
        "  plugins:\n"
        "    multiPoint:\n"
        "      enabled:\n"
        "      - name: OutOfProcess\n"
        "  pluginConfig:\n"
        "  - name: OutOfProcess\n"
        "    args:\n"
        "      endpoints:\n"
        "      - name: gang\n"
        "        url: " +
        server_->url() +
        "/gang\n"
        "        extensionPoints: [Permit]\n"
        "        permit: {maxWait: 60s, pollInterval: 100ms}\n"
        "      - name: prep\n"
        "        url: " +
        server_->url() +
        "/prep\n"
        "        extensionPoints: [PreBind]\n"
        "        timeouts: {PreBind: 1s}\n");
  }

  // The endpoints. gang: a pod labelled pair=<p> waits until two pods of <p> reached Permit
  // (pair=lonely asks to wait 2s only); prep: PreBind notes what the apiserver says of the pod,
  // creates ConfigMap prepared-<pod>, and for a pod labelled prep=slow answers only after the
  // scheduler stopped waiting.
  void Serve(FakeRequest& request) {
    const json body = json::parse(request.recorded().body);
    const std::string& path = request.recorded().path;
    const std::string pod = body["pod"]["metadata"]["name"];
    const json labels = body["pod"]["metadata"].value("labels", json::object());
    if (path == "/gang/permit" || path == "/gang/permit-status") {
      const std::string pair = labels.value("pair", "");
      std::lock_guard lock(log_.mu);
      if (path == "/gang/permit") {
        log_.arrived[pair].insert(pod);
      } else {
        log_.permit_status_polls++;
      }
      if (pair.empty() || log_.arrived[pair].size() >= 2) {
        request.Reply(200, R"({"apiVersion": "outofprocess.berth.dev/v1alpha1",
                              "decision": "allow"})");
      } else {
        request.Reply(200, pair == "lonely" ? R"({"decision": "wait", "timeout": "2s"})"
                                            : R"({"decision": "wait"})");
      }
      return;
    }
    if (path == "/prep/prebind") {
      if (labels.value("prep", "") == "slow") {
        std::unique_lock lock(release_mu_);
        release_.wait_for(lock, 5s, [&] { return released_; });
        request.Reply(200, R"({"code": "Success"})");
        return;
      }
      const std::string node_name = NodeOf(pod);
      client_->Post("/api/v1/namespaces/" + ns_->name() + "/configmaps",
                    {{"apiVersion", "v1"},
                     {"kind", "ConfigMap"},
                     {"metadata", {{"name", "prepared-" + pod}}},
                     {"data", {{"node", body["node"]}}}});
      {
        std::lock_guard lock(log_.mu);
        log_.prebind[pod] = {body["node"], node_name};
      }
      request.Reply(200, R"({"code": "Success"})");
      return;
    }
    request.Reply(404, R"({"error": "no such verb"})");
  }

  json PairPod(const std::string& name, const std::string& pair) {
    json pod = Pod(name);
    pod["metadata"]["labels"]["pair"] = pair;
    return pod;
  }

  bool Arrived(const std::string& pair, const std::string& pod) {
    std::lock_guard lock(log_.mu);
    return log_.arrived[pair].count(pod) > 0;
  }

  EndpointLog log_;
  std::mutex release_mu_;
  std::condition_variable release_;
  bool released_ = false;
  std::unique_ptr<FakeServer> server_;
};

TEST_F(OutOfProcessIntegration, APermitEndpointHoldsAPairUntilBothArriveThenBothBind) {
  nodes_->Add("n0", "4", "8Gi");
  StartWithEndpoints();

  client_->Post(PodsPath(), PairPod("first", "p1"));
  ASSERT_TRUE(Eventually([&] { return Arrived("p1", "first"); }, 30s));
  // The first of the pair waits at Permit, polled, while the second does not exist.
  ASSERT_TRUE(Eventually(
      [&] {
        std::lock_guard lock(log_.mu);
        return log_.permit_status_polls >= 3;
      },
      30s));
  EXPECT_EQ(NodeOf("first"), "");

  client_->Post(PodsPath(), PairPod("second", "p1"));
  EXPECT_TRUE(WaitBound("first"));
  EXPECT_TRUE(WaitBound("second"));
  EXPECT_TRUE(Arrived("p1", "second"));

  // The timeout case: a pod whose partner never comes is rejected when its wait runs out, and the
  // message names the endpoint.
  client_->Post(PodsPath(), PairPod("alone", "lonely"));
  const std::string message =
      UnschedulableMessage("alone", "out-of-process endpoint \"gang\" did not allow the pod");
  EXPECT_NE(message.find("out-of-process endpoint \"gang\" did not allow the pod within 2s"),
            std::string::npos)
      << message;
  EXPECT_EQ(NodeOf("alone"), "");
}

TEST_F(OutOfProcessIntegration, APreBindEndpointPreparesBeforeTheBindAndItsTimeoutFailsIt) {
  nodes_->Add("n0", "4", "8Gi");
  StartWithEndpoints();

  json pod = Pod("prepared");
  client_->Post(PodsPath(), pod);
  ASSERT_TRUE(WaitBound("prepared"));
  const std::string node = NodeOf("prepared");
  {
    std::lock_guard lock(log_.mu);
    ASSERT_EQ(log_.prebind.count("prepared"), 1u);
    EXPECT_EQ(log_.prebind["prepared"].first, node);
    // The endpoint was asked before the binding: the pod had no node yet.
    EXPECT_EQ(log_.prebind["prepared"].second, "");
  }
  const json configmap =
      client_->Get("/api/v1/namespaces/" + ns_->name() + "/configmaps/prepared-prepared");
  EXPECT_EQ(configmap["data"]["node"], node);

  // The timeout case: an endpoint slower than its PreBind timeout fails the binding, naming the
  // endpoint, and the pod is not bound.
  json slow = Pod("slow");
  slow["metadata"]["labels"]["prep"] = "slow";
  client_->Post(PodsPath(), slow);
  const std::string message =
      UnschedulableMessage("slow", "out-of-process endpoint \"prep\" (PreBind)");
  EXPECT_NE(message.find("out-of-process endpoint \"prep\" (PreBind)"), std::string::npos)
      << message;
  EXPECT_EQ(NodeOf("slow"), "");
}

}  // namespace
}  // namespace berth
