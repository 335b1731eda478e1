#include "test/testing/test_extender.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "test/testing/http_call.h"
#include "test/testing/unused_client.h"

namespace berth::testing {
namespace {

using json = nlohmann::json;

// Nodes by name with their labels, and the bindings posted.
class NodesClient : public UnusedClient {
 public:
  json Get(const std::string& path) override {
    const std::string name = path.substr(path.find_last_of('/') + 1);
    return {{"metadata", {{"name", name}, {"labels", labels.at(name)}}}};
  }
  json Post(const std::string& path, const json& body) override {
    posts.emplace_back(path, body);
    return body;
  }
  std::map<std::string, json> labels;
  std::vector<std::pair<std::string, json>> posts;
};

json Node(const std::string& name, const json& labels) {
  return {{"metadata", {{"name", name}, {"labels", labels}}}};
}

json Pod() { return {{"metadata", {{"name", "p"}, {"namespace", "ns"}, {"uid", "u-p"}}}}; }

HttpResult Post(const TestExtender& extender, const std::string& verb, const json& body) {
  HttpCallOptions options;
  options.method = "POST";
  options.body = body.dump();
  options.content_type = "application/json";
  options.timeout = std::chrono::seconds(2);
  return HttpCall(extender.url() + "/prefix/" + verb, options);
}

class TestExtenderTest : public ::testing::Test {
 protected:
  TestExtenderTest() {
    client_->labels = {
        {"ok", json::object()},
        {"rej", {{kExtenderFilterLabel, "reject"}, {kExtenderPreemptLabel, "reject"}}},
        {"unres", {{kExtenderFilterLabel, "unresolvable"}}},
        {"drop", {{kExtenderFilterLabel, "drop"}}},
        {"err", {{kExtenderBindLabel, "error"}}}};
  }
  std::shared_ptr<NodesClient> client_ = std::make_shared<NodesClient>();
  TestExtender extender_{client_};
};

TEST_F(TestExtenderTest, FilterByNamesAnswersNamesAndReasons) {
  const HttpResult r =
      Post(extender_, "filter",
           {{"Pod", Pod()}, {"Nodes", nullptr}, {"NodeNames", {"ok", "rej", "unres", "drop"}}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json answer = json::parse(r.body);
  EXPECT_EQ(answer["nodenames"], json({"ok"}));
  EXPECT_EQ(answer["failedNodes"], json({{"rej", kExtenderRejectReason}}));
  EXPECT_EQ(answer["FailedAndUnresolvableNodes"], json({{"unres", kExtenderUnresolvableReason}}));
  const auto calls = extender_.Calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].verb, "filter");
  EXPECT_EQ(calls[0].pod, "ns/p");
  EXPECT_EQ(calls[0].nodes, (std::vector<std::string>{"ok", "rej", "unres", "drop"}));
  EXPECT_TRUE(calls[0].names_only);
}

TEST_F(TestExtenderTest, FilterByObjectsAnswersObjectsFromTheirOwnLabels) {
  // Labels come from the objects sent: "x" is unknown to the client.
  const json nodes = {
      {"items", {Node("x", json::object()), Node("y", {{kExtenderFilterLabel, "reject"}})}}};
  const HttpResult r =
      Post(extender_, "filter", {{"Pod", Pod()}, {"Nodes", nodes}, {"NodeNames", nullptr}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json answer = json::parse(r.body);
  ASSERT_EQ(answer["Nodes"]["items"].size(), 1u);
  EXPECT_EQ(answer["Nodes"]["items"][0]["metadata"]["name"], "x");
  EXPECT_FALSE(answer.contains("nodenames"));
  EXPECT_FALSE(extender_.Calls()[0].names_only);
}

TEST_F(TestExtenderTest, PrioritizeScoresTheLabel) {
  client_->labels["seven"] = {{kExtenderScoreLabel, "7"}};
  const HttpResult r =
      Post(extender_, "prioritize", {{"Pod", Pod()}, {"NodeNames", {"seven", "ok"}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body),
            json::parse(R"([{"host":"seven","score":7},{"host":"ok","score":0}])"));
}

TEST_F(TestExtenderTest, PreemptTurnsVictimsIntoUidsAndDropsRejectedNodes) {
  const json victims = {
      {"ok",
       {{"Pods", {{{"metadata", {{"name", "v1"}, {"uid", "u1"}}}}}}, {"NumPDBViolations", 1}}},
      {"rej",
       {{"Pods", {{{"metadata", {{"name", "v2"}, {"uid", "u2"}}}}}}, {"NumPDBViolations", 0}}}};
  const HttpResult r = Post(extender_, "preempt", {{"Pod", Pod()}, {"NodeNameToVictims", victims}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body), json::parse(R"({"nodeNameToMetaVictims":
      {"ok": {"pods": [{"uid": "u1"}], "numPDBViolations": 1}}})"));
  const auto calls = extender_.Calls();
  EXPECT_FALSE(calls[0].names_only);
  EXPECT_EQ(calls[0].nodes, (std::vector<std::string>{"ok", "rej"}));
  EXPECT_EQ(calls[0].victims.at("rej"), std::vector<std::string>{"u2"});

  const json meta = {{"ok", {{"Pods", {{{"UID", "u1"}}}}, {"NumPDBViolations", 0}}}};
  const HttpResult again =
      Post(extender_, "preempt", {{"Pod", Pod()}, {"NodeNameToMetaVictims", meta}});
  EXPECT_EQ(json::parse(again.body)["nodeNameToMetaVictims"]["ok"]["pods"][0]["uid"], "u1");
  EXPECT_TRUE(extender_.Calls()[1].names_only);
}

TEST_F(TestExtenderTest, BindPostsTheBindingUnlessTheNodeRefuses) {
  const json args = {{"PodName", "p"}, {"PodNamespace", "ns"}, {"PodUID", "u-p"}, {"Node", "ok"}};
  HttpResult r = Post(extender_, "bind", args);
  EXPECT_EQ(json::parse(r.body), json::parse(R"({"error": ""})"));
  ASSERT_EQ(client_->posts.size(), 1u);
  EXPECT_EQ(client_->posts[0].first, "/api/v1/namespaces/ns/pods/p/binding");
  EXPECT_EQ(client_->posts[0].second["target"]["name"], "ok");
  EXPECT_EQ(client_->posts[0].second["metadata"]["uid"], "u-p");
  EXPECT_EQ(extender_.binds(), 1);

  json refused = args;
  refused["Node"] = "err";
  r = Post(extender_, "bind", refused);
  EXPECT_EQ(json::parse(r.body)["Error"], kExtenderBindError);
  EXPECT_EQ(client_->posts.size(), 1u);
  EXPECT_EQ(extender_.binds(), 1);
}

TEST_F(TestExtenderTest, FaultsReplaceTheAnswerOfTheirVerb) {
  const json filter = {{"Pod", Pod()}, {"NodeNames", {"ok"}}};
  extender_.SetFault("filter", ExtenderFault::kStatus500);
  EXPECT_EQ(Post(extender_, "filter", filter).status, 500);
  // Another verb answers as usual.
  EXPECT_EQ(Post(extender_, "prioritize", filter).status, 200);

  extender_.SetFault("filter", ExtenderFault::kClose);
  EXPECT_THROW(Post(extender_, "filter", filter), std::runtime_error);
  // Held back far beyond the client's 2 s.
  extender_.SetFault("", ExtenderFault::kSlow, std::chrono::minutes(5));
  extender_.SetFault("filter", ExtenderFault::kNone);
  EXPECT_EQ(Post(extender_, "filter", filter).status, 200);
  EXPECT_THROW(Post(extender_, "prioritize", filter), std::runtime_error);
  // Every request is recorded, answered or not.
  EXPECT_EQ(extender_.Calls().size(), 5u);
}

}  // namespace
}  // namespace berth::testing
