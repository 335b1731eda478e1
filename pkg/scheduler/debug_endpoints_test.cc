#include "pkg/scheduler/debug_endpoints.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "pkg/plugins/registry/registry.h"
#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"

namespace berth::scheduler {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using testing::NodeBuilder;
using testing::PodBuilder;

class DebugEndpointsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config::Configuration cfg = config::DefaultConfiguration();
    SchedulerDeps deps;
    deps.recorder = &recorder_;
    SchedulerOptions options;
    options.seed = 1;
    scheduler_ = std::make_unique<Scheduler>(cfg, plugins::registry::InTree(), deps, options);
    for (const char* n : {"n1", "n2", "n3"}) {
      scheduler_->OnNodeAdd(NodeBuilder(n).Capacity("1", "4Gi").Build());
    }
  }

  // Schedules the pod, which does not fit, and waits for its record (kept from a background
  // worker).
  void Pending(const std::string& name, const std::string& cpu) {
    scheduler_->OnPodAdd(PodBuilder(name).Container(cpu, "64Mi").Build());
    while (scheduler_->queue().PendingPods().active > 0) scheduler_->ScheduleOne();
    for (int i = 0; i < 400 && !scheduler_->attempts().Find("default/" + name); i++) {
      std::this_thread::sleep_for(5ms);
    }
  }

  server::DebugResponse Get(const std::string& path,
                            std::map<std::string, std::string> query = {}) {
    return ServeDebug(*scheduler_, {"GET", path, std::move(query), "", ""});
  }
  server::DebugResponse Post(const std::string& path, const std::string& body,
                             std::map<std::string, std::string> query = {}) {
    return ServeDebug(*scheduler_, {"POST", path, std::move(query), "application/yaml", body});
  }

  testing::FakeRecorder recorder_;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(DebugEndpointsTest, APendingPodsExplanationAsJsonAndAsText) {
  Pending("web", "1300m");
  auto json = Get("/debug/pods/default/web");
  ASSERT_EQ(json.status, 200) << json.body;
  EXPECT_EQ(json.content_type, "application/json");
  auto j = nlohmann::json::parse(json.body);
  EXPECT_EQ(j["attempt"]["pod"], "default/web");
  EXPECT_EQ(j["attempt"]["outcome"], "Unschedulable");
  EXPECT_EQ(j["attempt"]["groups"][0]["nodes"], 3);
  EXPECT_EQ(j["hints"][0]["text"], "reduce cpu request by 300m (fits 3 nodes)");

  auto text = Get("/debug/pods/default/web", {{"format", "text"}});
  ASSERT_EQ(text.status, 200);
  EXPECT_EQ(text.content_type, "text/plain; charset=utf-8");
  EXPECT_THAT(text.body, HasSubstr("Pod default/web (profile berth-scheduler)\n"));
  EXPECT_THAT(text.body, HasSubstr("  - reduce cpu request by 300m (fits 3 nodes)\n"));
}

TEST_F(DebugEndpointsTest, UnknownPodsAndPathsAreNotFound) {
  auto missing = Get("/debug/pods/default/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_THAT(nlohmann::json::parse(missing.body)["error"].get<std::string>(),
              HasSubstr("no attempt of pod default/nope is recorded"));
  EXPECT_EQ(Get("/debug/pods/only-namespace").status, 400);
  EXPECT_EQ(Get("/debug/pods/a/b/c").status, 400);
  EXPECT_EQ(Get("/debug/elsewhere").status, 404);
  EXPECT_EQ(Get("/debug/simulate").status, 405);
  EXPECT_EQ(Post("/debug/pods/default/web", "").status, 405);
}

TEST_F(DebugEndpointsTest, PendingPodsNewestFirstWithTheirReason) {
  Pending("first", "2");
  std::this_thread::sleep_for(5ms);
  Pending("second", "3");
  auto r = Get("/debug/pods", {{"pending", "true"}});
  ASSERT_EQ(r.status, 200);
  auto items = nlohmann::json::parse(r.body)["items"];
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0]["pod"], "default/second");
  EXPECT_EQ(items[1]["pod"], "default/first");
  EXPECT_THAT(items[0]["reason"].get<std::string>(),
              HasSubstr("0/3 nodes are available: 3 Insufficient cpu."));
  auto text = Get("/debug/pods", {{"pending", "true"}, {"format", "text"}});
  EXPECT_THAT(text.body, HasSubstr("  default/second  0/3 nodes are available"));
}

TEST_F(DebugEndpointsTest, SimulateTakesYamlOrJsonAndPlacesNothing) {
  const std::string yaml =
      "apiVersion: v1\n"
      "kind: Pod\n"
      "metadata:\n"
      "  name: what-if\n"
      "spec:\n"
      "  containers:\n"
      "  - name: app\n"
      "    image: pause\n"
      "    resources:\n"
      "      requests:\n"
      "        cpu: 500m\n";
  auto r = Post("/debug/simulate", yaml, {{"format", "text"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_THAT(r.body, HasSubstr("Pod default/what-if (profile berth-scheduler)\n"));
  EXPECT_THAT(r.body, HasSubstr("(nothing assumed, reserved or bound): would bind to n"));
  auto j = Post("/debug/simulate",
                R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"j","namespace":"x"},)"
                R"("spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"2"}}}]}})");
  ASSERT_EQ(j.status, 200) << j.body;
  auto body = nlohmann::json::parse(j.body);
  EXPECT_TRUE(body["dryRun"].get<bool>());
  EXPECT_EQ(body["attempt"]["pod"], "x/j");
  EXPECT_EQ(body["attempt"]["outcome"], "Unschedulable");
  EXPECT_EQ(scheduler_->cache().Size().assumed_pods, 0u);
  EXPECT_TRUE(recorder_.events().empty());
}

TEST_F(DebugEndpointsTest, BadPodBodiesGetAClearBadRequest) {
  auto error = [&](const std::string& body) {
    auto r = Post("/debug/simulate", body);
    EXPECT_EQ(r.status, 400) << body;
    return nlohmann::json::parse(r.body).value("error", "");
  };
  EXPECT_THAT(error("metadata: {name: [unclosed"), HasSubstr("body: line "));
  EXPECT_THAT(error("{\"metadata\": "), HasSubstr("body: invalid JSON"));
  EXPECT_THAT(error("kind: Service\nmetadata: {name: s}\n"),
              HasSubstr("kind: expected \"Pod\", got \"Service\""));
  EXPECT_THAT(error("metadata: {name: p}\nspec:\n  containers:\n  - name: a\n    resources:\n"
                    "      requests: {cpu: lots}\n"),
              HasSubstr("spec.containers[0].resources.requests.cpu"));
  EXPECT_THAT(error("metadata: {name: a}\n---\nmetadata: {name: b}\n"),
              HasSubstr("expected one Pod, got 2"));
  EXPECT_THAT(error(std::string(100, '[') + std::string(100, ']')),
              HasSubstr("nested more than 64 levels deep"));
  EXPECT_THAT(error("metadata: {name: p}\nspec: {schedulerName: someone-else}\n"),
              HasSubstr("\"someone-else\" is not a profile of this scheduler"));
  EXPECT_THAT(error("metadata: {name: p}\nspec: {nodeSelector: {a: 1, a: 2}}\n"),
              HasSubstr("spec.nodeSelector.a: duplicate key"));
  EXPECT_THAT(error(""), HasSubstr("no Pod found"));
}

// An alias in a body makes the parsed pod larger than the body: a 1 MiB body that anchors a long
// string and names it ten thousand times would expand to gigabytes.
TEST_F(DebugEndpointsTest, SimulateRefusesABodyWithAliases) {
  const std::string body =
      "metadata: {name: p, labels: &l {app: web}}\n"
      "spec:\n"
      "  nodeSelector: *l\n";
  auto r = Post("/debug/simulate", body);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(nlohmann::json::parse(r.body).value("error", ""),
            "body: line 3, column 17: YAML aliases (*name) are not accepted here; write the "
            "anchored value out in full");

  std::string bomb = "metadata: {name: p, annotations: {a: &s \"" + std::string(500'000, 'x') +
                     "\"}}\nspec:\n  nodeSelector:\n";
  for (int i = 0; i < 20'000; i++) bomb += "    k" + std::to_string(i) + ": *s\n";
  ASSERT_LT(bomb.size(), server::kMaxDebugBodyBytes);
  r = Post("/debug/simulate", bomb);
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("YAML aliases (*name) are not accepted here"));
}

TEST_F(DebugEndpointsTest, PodsFromTextReadsListsAndDocuments) {
  auto pods = PodsFromText(
      "apiVersion: v1\nkind: List\nitems:\n- metadata: {name: a}\n- metadata: {name: b, "
      "namespace: x}\n---\nmetadata: {name: c}\nspec: {schedulerName: other}\n",
      "pods.yaml", "berth-scheduler");
  ASSERT_EQ(pods.size(), 3u);
  EXPECT_EQ(pods[0].Key(), "default/a");
  EXPECT_EQ(pods[0].spec.scheduler_name, "berth-scheduler");
  EXPECT_EQ(pods[1].Key(), "x/b");
  EXPECT_EQ(pods[2].spec.scheduler_name, "other");
  EXPECT_NE(pods[0].meta.uid, pods[1].meta.uid);
  try {
    PodsFromText("kind: List\nitems:\n- metadata: {name: a}\n- kind: Node\n", "f.yaml", "s");
    FAIL() << "a Node among the items";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("f.yaml: items[1]: kind: expected \"Pod\""));
  }
  // A file a person names on the command line may use aliases.
  pods = PodsFromText("metadata: {name: a, labels: &l {app: web}}\nspec: {nodeSelector: *l}\n",
                      "pod.yaml", "berth-scheduler");
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0].meta.labels, pods[0].spec.node_selector);
}

}  // namespace
}  // namespace berth::scheduler
