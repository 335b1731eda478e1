#include "pkg/extender/wire.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "pkg/extender/go_json.h"
#include "test/testing/objects.h"

namespace berth::extender::wire {
namespace {

using json = nlohmann::json;
using testing::NodeBuilder;
using testing::PodBuilder;

TEST(WireTest, FilterArgsCarryGoFieldNamesAndNullForTheUnusedForm) {
  const api::PodPtr pod = PodBuilder("p").Container("100m", "").Build();
  const auto a = NodeBuilder("a").Capacity("4", "8Gi").Info();
  const auto b = NodeBuilder("b").Capacity("4", "8Gi").Info();
  const std::vector<const framework::NodeInfo*> nodes = {a.get(), b.get()};

  const json names = json::parse(ExtenderArgs(*pod, nodes, /*node_cache_capable=*/true));
  EXPECT_EQ(names["Pod"]["metadata"]["name"], "p");
  EXPECT_EQ(names["Pod"]["spec"]["containers"][0]["resources"]["requests"]["cpu"], "100m");
  EXPECT_TRUE(names["Nodes"].is_null());
  EXPECT_EQ(names["NodeNames"], json::array({"a", "b"}));

  const json objects = json::parse(ExtenderArgs(*pod, nodes, /*node_cache_capable=*/false));
  EXPECT_TRUE(objects["NodeNames"].is_null());
  ASSERT_EQ(objects["Nodes"]["items"].size(), 2u);
  EXPECT_EQ(objects["Nodes"]["items"][1]["metadata"]["name"], "b");
  EXPECT_EQ(objects["Nodes"]["items"][1]["status"]["allocatable"]["cpu"], "4");
}

TEST(WireTest, NodeNamesAreJsonStringsWhateverTheyHold) {
  const api::PodPtr pod = PodBuilder("p").Build();
  const auto odd = NodeBuilder("a\"b\\c\n\x01\xff").Info();
  const std::vector<const framework::NodeInfo*> nodes = {odd.get()};
  const json names = json::parse(ExtenderArgs(*pod, nodes, /*node_cache_capable=*/true));
  // Bytes that are not UTF-8 go as U+FFFD, as Go's encoding/json sends them.
  EXPECT_EQ(names["NodeNames"], json::array({"a\"b\\c\n\x01\xEF\xBF\xBD"}));
}

TEST(WireTest, PreemptionArgsAreWholePodsOrUids) {
  const api::PodPtr pod = PodBuilder("preemptor").Build();
  std::map<std::string, framework::ExtenderVictims> victims;
  victims["n1"].pods = {PodBuilder("v1").Uid("u1").Info(), PodBuilder("v2").Uid("u2").Info()};
  victims["n1"].num_pdb_violations = 1;

  const json meta = json::parse(PreemptionArgs(*pod, victims, true));
  EXPECT_TRUE(meta["NodeNameToVictims"].is_null());
  EXPECT_EQ(meta["NodeNameToMetaVictims"]["n1"],
            json({{"Pods", {{{"UID", "u1"}}, {{"UID", "u2"}}}}, {"NumPDBViolations", 1}}));

  const json whole = json::parse(PreemptionArgs(*pod, victims, false));
  EXPECT_TRUE(whole["NodeNameToMetaVictims"].is_null());
  EXPECT_EQ(whole["NodeNameToVictims"]["n1"]["Pods"][1]["metadata"]["uid"], "u2");
  EXPECT_EQ(whole["NodeNameToVictims"]["n1"]["NumPDBViolations"], 1);
}

TEST(WireTest, BindingArgs) {
  EXPECT_EQ(json::parse(BindingArgs(*PodBuilder("p", "ns").Uid("u").Build(), "n")),
            json({{"PodName", "p"}, {"PodNamespace", "ns"}, {"PodUID", "u"}, {"Node", "n"}}));
}

TEST(WireTest, FilterResultsInEitherFormAndCase) {
  FilterResult r = DecodeFilterResult(
      R"({"nodenames":["a"],"failedNodes":{"b":"no gpu"},
          "failedAndUnresolvableNodes":{"c":"never"},"error":""})");
  EXPECT_EQ(r.node_names, std::vector<std::string>{"a"});
  EXPECT_FALSE(r.nodes.has_value());
  EXPECT_EQ(r.failed_nodes.at("b"), "no gpu");
  EXPECT_EQ(r.failed_and_unresolvable_nodes.at("c"), "never");

  r = DecodeFilterResult(
      R"({"Nodes":{"metadata":{},"items":[{"metadata":{"name":"x","labels":{"a":"b"}},
          "status":{"allocatable":{"cpu":"4"}}},null]},"NodeNames":null})");
  EXPECT_FALSE(r.node_names.has_value());
  EXPECT_EQ(r.nodes, (std::vector<std::string>{"x", ""}));

  r = DecodeFilterResult("null");
  EXPECT_FALSE(r.node_names.has_value());
  EXPECT_FALSE(r.nodes.has_value());
  EXPECT_EQ(DecodeFilterResult(R"({"Error":"extender is sad"})").error, "extender is sad");

  EXPECT_THROW(DecodeFilterResult(R"({"NodeNames":"a"})"), ResponseError);
  EXPECT_THROW(DecodeFilterResult(R"({"NodeNames":[1]})"), ResponseError);
  EXPECT_THROW(DecodeFilterResult(R"({"FailedNodes":{"a":1}})"), ResponseError);
  EXPECT_THROW(DecodeFilterResult(R"([])"), ResponseError);
  EXPECT_THROW(DecodeFilterResult(R"({"Nodes":{"items":{}}})"), ResponseError);
}

TEST(WireTest, HostPriorityList) {
  const auto scores = DecodeHostPriorityList(R"([{"host":"a","score":7},{"Host":"b","Score":0},
                                                 {"HOST":"a","score":-3}])");
  ASSERT_EQ(scores.size(), 3u);
  EXPECT_EQ(scores[0].host, "a");
  EXPECT_EQ(scores[0].score, 7);
  EXPECT_EQ(scores[2].score, -3);
  EXPECT_TRUE(DecodeHostPriorityList("null").empty());
  EXPECT_THROW(DecodeHostPriorityList(R"([{"host":"a","score":"7"}])"), ResponseError);
  EXPECT_THROW(DecodeHostPriorityList(R"([{"host":"a","score":7.5}])"), ResponseError);
  EXPECT_THROW(DecodeHostPriorityList(R"([{"host":"a","score":1e2}])"), ResponseError);
  EXPECT_THROW(DecodeHostPriorityList(R"({"host":"a"})"), ResponseError);
}

// The HostPriorityList as DecodePruned and the typed reads give it, which the direct decoder
// must equal: the same scores, or an error where this errs.
std::vector<framework::ExtenderScore> ReferenceHostPriorityList(std::string_view body) {
  static const Shape kValue = Shape::Value();
  static const Shape kHost = Shape::Struct({{"host", &kValue}, {"score", &kValue}});
  static const Shape kList = Shape::Array(&kHost);
  const json value = DecodePruned(body, kList);
  std::vector<framework::ExtenderScore> out;
  if (value.is_null()) return out;
  ExpectType(value, json::value_t::array, "", "v1.HostPriorityList");
  for (const json& item : value) {
    framework::ExtenderScore& score = out.emplace_back();
    if (item.is_null()) continue;
    ExpectType(item, json::value_t::object, "v1.HostPriorityList", "v1.HostPriority");
    if (auto it = item.find("host"); it != item.end()) score.host = ReadString(*it, "H");
    if (auto it = item.find("score"); it != item.end()) score.score = ReadInt64(*it, "S");
  }
  return out;
}

TEST(WireTest, TheDirectHostPriorityDecoderReadsAsThePrunedTreeDoes) {
  for (const char* body : {
           R"([{"host":"a","score":7},{"Host":"b","Score":0},{"HOST":"a","score":-3}])",
           R"(null)",
           R"([])",
           R"([null,{"host":null,"score":null},{}])",
           R"([{"host":"a","host":"b","score":1,"score":2,"x":{"deep":[[[1]]]}}])",
           R"([{"host":{"a":1},"score":1}])",
           R"([{"score":[1,2]}])",
           R"([["a"]])",
           R"([{"host":"a","score":1.5}])",
           R"([{"score":9223372036854775808}])",
           R"([{"score":-9223372036854775808}])",
           R"({"host":"a"})",
           R"("x")",
           R"(7)",
           R"([{"host":"a"}] trailing)",
           R"([{"host":"a",)",
           R"([1,{"host":"b"}])",
           "[{\"\xC5\xBF"
           "core\":4,\"HO\xE2\x84\xAA\":1}]",
           R"([{"host":"a"},"b",{"host":"c"}])",
       }) {
    std::vector<framework::ExtenderScore> want;
    bool want_error = false;
    try {
      want = ReferenceHostPriorityList(body);
    } catch (const ResponseError&) {
      want_error = true;
    }
    try {
      const std::vector<framework::ExtenderScore> got = DecodeHostPriorityList(body);
      EXPECT_FALSE(want_error) << body;
      ASSERT_EQ(got.size(), want.size()) << body;
      for (size_t i = 0; i < got.size(); i++) {
        EXPECT_EQ(got[i].host, want[i].host) << body;
        EXPECT_EQ(got[i].score, want[i].score) << body;
      }
    } catch (const ResponseError& e) {
      EXPECT_TRUE(want_error) << body << ": " << e.what();
    }
  }
}

TEST(WireTest, PreemptionResultAndBindingResult) {
  const auto r = DecodePreemptionResult(
      R"({"nodeNameToMetaVictims":{"n1":{"pods":[{"uid":"u1"}],"numPDBViolations":2},"n2":null}})");
  ASSERT_EQ(r.size(), 2u);
  ASSERT_TRUE(r.at("n1").has_value());
  EXPECT_EQ(r.at("n1")->pod_uids, std::vector<std::string>{"u1"});
  EXPECT_EQ(r.at("n1")->num_pdb_violations, 2);
  EXPECT_FALSE(r.at("n2").has_value());
  EXPECT_THROW(DecodePreemptionResult(R"({"NodeNameToMetaVictims":{"n":{"Pods":[null]}}})"),
               ResponseError);
  EXPECT_EQ(DecodeBindingResult(R"({"error":"no"})"), "no");
  EXPECT_EQ(DecodeBindingResult(R"({})"), "");
  EXPECT_THROW(DecodeBindingResult(R"({"Error":false})"), ResponseError);
}

}  // namespace
}  // namespace berth::extender::wire
