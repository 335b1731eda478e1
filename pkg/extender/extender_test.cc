#include "pkg/extender/extender.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <nlohmann/json.hpp>
#include <string>

#include "test/testing/client_test_util.h"
#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"

namespace berth::extender {
namespace {

using client::testing::FakeRequest;
using client::testing::FakeServer;
using json = nlohmann::json;
using testing::NodeBuilder;
using testing::PodBuilder;

config::Extender Config(const std::string& url) {
  config::Extender c;
  c.url_prefix = url;
  c.filter_verb = "filter";
  c.prioritize_verb = "prioritize";
  c.preempt_verb = "preempt";
  c.bind_verb = "bind";
  c.weight = 2;
  return c;
}

std::shared_ptr<framework::Extender> One(const config::Extender& c,
                                         prometheus::Registry* registry = nullptr) {
  auto built = Build({c}, "cfg.yaml", registry);
  EXPECT_EQ(built.size(), 1u);
  return built.front();
}

struct Nodes {
  std::vector<framework::NodeInfoPtr> infos;
  std::vector<const framework::NodeInfo*> ptrs;
  explicit Nodes(std::initializer_list<const char*> names) {
    for (const char* n : names) infos.push_back(NodeBuilder(n).Capacity("4", "8Gi").Info());
    for (const auto& i : infos) ptrs.push_back(i.get());
  }
};

TEST(HttpExtenderTest, FilterSendsNodeNamesAndKeepsWhatTheExtenderKeeps) {
  FakeServer server([](int, FakeRequest& request) {
    const json args = json::parse(request.recorded().body);
    EXPECT_EQ(args["NodeNames"], json::array({"a", "b", "c"}));
    EXPECT_EQ(args["Pod"]["metadata"]["name"], "p");
    request.Reply(200, R"({"nodenames":["c","a"],"failedNodes":{"b":"no room on b"},
                           "FailedAndUnresolvableNodes":{"z":"never"}})");
  });
  config::Extender c = Config(server.url() + "/sched");
  c.node_cache_capable = true;
  const auto extender = One(c);
  const Nodes nodes{"a", "b", "c"};
  framework::Extender::FilterResult result;
  ASSERT_TRUE(extender->Filter(*PodBuilder("p").Build(), nodes.ptrs, &result).IsSuccess());
  EXPECT_EQ(server.requests().at(0).path, "/sched/filter");
  ASSERT_EQ(result.feasible.size(), 2u);
  EXPECT_EQ(result.feasible[0]->name(), "c");
  EXPECT_EQ(result.feasible[1]->name(), "a");
  EXPECT_EQ(result.failed,
            (std::vector<std::pair<std::string, std::string>>{{"b", "no room on b"}}));
  EXPECT_EQ(result.failed_and_unresolvable,
            (std::vector<std::pair<std::string, std::string>>{{"z", "never"}}));
}

TEST(HttpExtenderTest, FilterWithNodeObjectsMatchesThemByNameAndRefusesStrangers) {
  int call = 0;
  FakeServer server([&](int, FakeRequest& request) {
    const json args = json::parse(request.recorded().body);
    EXPECT_EQ(args["Nodes"]["items"].size(), 2u);
    EXPECT_TRUE(args["NodeNames"].is_null());
    request.Reply(200, call++ == 0 ? R"({"Nodes":{"items":[{"metadata":{"name":"b"}}]}})"
                                   : R"({"Nodes":{"items":[{"metadata":{"name":"q"}}]}})");
  });
  const auto extender = One(Config(server.url()));
  const Nodes nodes{"a", "b"};
  framework::Extender::FilterResult result;
  ASSERT_TRUE(extender->Filter(*PodBuilder("p").Build(), nodes.ptrs, &result).IsSuccess());
  ASSERT_EQ(result.feasible.size(), 1u);
  EXPECT_EQ(result.feasible[0], nodes.ptrs[1]);
  const framework::Status s = extender->Filter(*PodBuilder("p").Build(), nodes.ptrs, &result);
  EXPECT_EQ(s.code(), framework::Code::kError);
  EXPECT_EQ(s.Message(), "extender \"" + server.url() +
                             "\" claims a filtered node \"q\" which is not found in the input "
                             "node list");
  EXPECT_TRUE(result.feasible.empty());
}

TEST(HttpExtenderTest, FailuresAreErrorsInUpstreamsWordsOrNamingTheExtender) {
  std::string reply;
  int status = 200;
  FakeServer server([&](int, FakeRequest& request) { request.Reply(status, reply); });
  const auto extender = One(Config(server.url()));
  const Nodes nodes{"a"};
  const api::PodPtr pod = PodBuilder("p").Build();
  framework::Extender::FilterResult result;

  status = 500;
  framework::Status s = extender->Filter(*pod, nodes.ptrs, &result);
  EXPECT_EQ(s.Message(),
            "failed filter with extender at URL " + server.url() + "/filter, code 500");

  status = 200;
  reply = R"({"Error":"the GPU inventory is stale"})";
  EXPECT_EQ(extender->Filter(*pod, nodes.ptrs, &result).Message(), "the GPU inventory is stale");

  reply = R"({"NodeNames": )";
  s = extender->Filter(*pod, nodes.ptrs, &result);
  EXPECT_EQ(s.code(), framework::Code::kError);
  EXPECT_EQ(s.Message().rfind("extender " + server.url() + ": malformed filter response: ", 0), 0u)
      << s.Message();

  reply = std::string(70 << 20, ' ');
  s = extender->Filter(*pod, nodes.ptrs, &result);
  EXPECT_NE(s.Message().find("longer than"), std::string::npos) << s.Message();
}

TEST(HttpExtenderTest, ASlowExtenderFailsAtItsHttpTimeout) {
  FakeServer server([](int, FakeRequest& request) {
    request.StartStream(200);
    request.WaitForClose();
  });
  config::Extender c = Config(server.url());
  c.http_timeout = std::chrono::milliseconds(100);
  const auto extender = One(c);
  const Nodes nodes{"a"};
  framework::Extender::FilterResult result;
  const framework::Status s = extender->Filter(*PodBuilder("p").Build(), nodes.ptrs, &result);
  EXPECT_EQ(s.code(), framework::Code::kError);
  EXPECT_NE(s.Message().find(server.url() + "/filter"), std::string::npos) << s.Message();
}

TEST(HttpExtenderTest, PrioritizeRunsWhileTheCallerDoesOtherWork) {
  FakeServer server([](int, FakeRequest& request) {
    request.Reply(200, R"([{"Host":"a","Score":3},{"host":"b","score":10}])");
  });
  prometheus::Registry registry;
  const auto extender = One(Config(server.url()), &registry);
  const Nodes nodes{"a", "b"};
  auto pending = extender->StartPrioritize(*PodBuilder("p").Build(), nodes.ptrs);
  std::vector<framework::ExtenderScore> scores;
  ASSERT_TRUE(pending->Wait(&scores).IsSuccess());
  ASSERT_EQ(scores.size(), 2u);
  EXPECT_EQ(scores[1].host, "b");
  EXPECT_EQ(scores[1].score, 10);
  EXPECT_EQ(extender->Weight(), 2);
  bool counted = false;
  for (const auto& family : registry.Collect()) {
    if (family.name != "berth_extender_request_duration_seconds") continue;
    for (const auto& metric : family.metric) {
      for (const auto& label : metric.label) {
        if (label.name == "verb" && label.value == "prioritize") {
          counted = metric.histogram.sample_count == 1;
        }
      }
    }
  }
  EXPECT_TRUE(counted);
}

TEST(HttpExtenderTest, PreemptionVictimsAreFoundAmongTheNodesPods) {
  std::string reply;
  FakeServer server([&](int, FakeRequest& request) {
    const json args = json::parse(request.recorded().body);
    EXPECT_EQ(args["NodeNameToMetaVictims"]["n1"]["Pods"][0]["UID"], "u1");
    request.Reply(200, reply);
  });
  config::Extender c = Config(server.url());
  c.node_cache_capable = true;
  const auto extender = One(c);
  const auto v1 = PodBuilder("v1").Uid("u1").Info();
  const auto v2 = PodBuilder("v2").Uid("u2").Info();
  testing::FakeLister lister({NodeBuilder("n1").Info({v1, v2})});
  std::map<std::string, framework::ExtenderVictims> in, out;
  in["n1"].pods = {v1};
  const api::PodPtr pod = PodBuilder("p").Build();

  reply = R"({"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"u2"}],"NumPDBViolations":1}}})";
  ASSERT_TRUE(extender->ProcessPreemption(*pod, in, lister, &out).IsSuccess());
  ASSERT_EQ(out.at("n1").pods.size(), 1u);
  EXPECT_EQ(out.at("n1").pods[0], v2);
  EXPECT_EQ(out.at("n1").num_pdb_violations, 1);

  reply = R"({"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"u9"}]}}})";
  EXPECT_EQ(extender->ProcessPreemption(*pod, in, lister, &out).Message(),
            "extender: " + server.url() +
                " claims to preempt pod (UID: &{u9}) on node: n1, but the pod is not found on "
                "that node");
  reply = R"({"NodeNameToMetaVictims":{"n7":{"Pods":[]}}})";
  EXPECT_EQ(extender->ProcessPreemption(*pod, in, lister, &out).code(), framework::Code::kError);
}

TEST(HttpExtenderTest, BindSendsTheBindingArgs) {
  FakeServer server([](int, FakeRequest& request) {
    EXPECT_EQ(json::parse(request.recorded().body),
              json({{"PodName", "p"}, {"PodNamespace", "ns"}, {"PodUID", "u"}, {"Node", "n"}}));
    request.Reply(200, request.recorded().path == "/bind" ? "{}" : R"({"Error":"taken"})");
  });
  const auto extender = One(Config(server.url()));
  const api::PodPtr pod = PodBuilder("p", "ns").Uid("u").Build();
  EXPECT_TRUE(extender->Bind(*pod, "n").IsSuccess());
  config::Extender other = Config(server.url());
  other.bind_verb = "bind-elsewhere";
  EXPECT_EQ(One(other)->Bind(*pod, "n").Message(), "taken");
}

TEST(HttpExtenderTest, ManagedResourcesDecideWhichPodsTheExtenderSees) {
  config::Extender c = Config("http://127.0.0.1:1");
  c.managed_resources = {{"example.com/gpu", false}};
  const auto extender = One(c);
  EXPECT_FALSE(extender->IsInterested(*PodBuilder("cpu").Container("1", "1Gi").Build()));
  EXPECT_TRUE(extender->IsInterested(
      *PodBuilder("gpu").Container("1", "", {{"example.com/gpu", "1"}}).Build()));
  PodBuilder limits("limits");
  limits.Container("1", "");
  limits.InitContainer("", "");
  limits.pod().spec.init_containers[0].resources.limits.Set("example.com/gpu", 1);
  EXPECT_TRUE(extender->IsInterested(*limits.Build()));
  EXPECT_TRUE(One(Config("http://127.0.0.1:1"))->IsInterested(*PodBuilder("any").Build()));
}

TEST(HttpExtenderTest, BuildPutsIgnorableExtendersLastAndChecksResourceNames) {
  config::Extender a = Config("http://127.0.0.1:1/a");
  a.ignorable = true;
  a.bind_verb.clear();
  config::Extender b = Config("http://127.0.0.1:1/b");
  const auto built = Build({a, b}, "cfg.yaml", nullptr);
  ASSERT_EQ(built.size(), 2u);
  EXPECT_EQ(built[0]->Name().str(), "http://127.0.0.1:1/b");
  EXPECT_TRUE(built[1]->IsIgnorable());

  b.managed_resources = {{"cpu", false}};
  try {
    Build({b}, "cfg.yaml", nullptr);
    FAIL();
  } catch (const config::ConfigError& e) {
    EXPECT_EQ(e.issues().at(0).field, "extenders[0].managedResources[0].name");
    EXPECT_EQ(e.issues().at(0).problem, "\"cpu\" is an invalid extended resource name");
  }
  b.managed_resources.clear();
  b.tls_config.emplace().ca_file = "/nonexistent/ca.crt";
  EXPECT_THROW(Build({b}, "cfg.yaml", nullptr), config::ConfigError);
}

}  // namespace
}  // namespace berth::extender
