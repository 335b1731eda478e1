#include "pkg/api/list_parser.h"

#include <gtest/gtest.h>

#include <vector>

#include "pkg/api/errors.h"

namespace berth::api {
namespace {

using json = nlohmann::json;

TEST(ParseList, StreamsItemsAndReadsListMetadata) {
  json list = {
      {"kind", "PodList"},
      {"metadata", {{"resourceVersion", "42"}, {"continue", "tok"}, {"remainingItemCount", 3}}},
      {"items",
       {{{"metadata", {{"name", "a"}}}, {"spec", {{"priority", 5}}}},
        {{"metadata", {{"name", "b"}}}}}}};
  std::vector<json> items;
  ListMeta meta = ParseList(list.dump(), [&](json& item) { items.push_back(std::move(item)); });
  EXPECT_EQ(meta.resource_version, "42");
  EXPECT_EQ(meta.continue_token, "tok");
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0], (json{{"metadata", {{"name", "a"}}}, {"spec", {{"priority", 5}}}}));
  EXPECT_EQ(items[1]["metadata"]["name"], "b");
}

TEST(ParseList, DropsWhatSchedulingNeverReadsAndKeepsEverythingElse) {
  json container = {{"name", "c"},
                    {"image", "img"},
                    {"env", {{{"name", "X"}, {"value", "1"}}}},
                    {"readinessProbe", {{"httpGet", {{"port", 80}}}}},
                    {"volumeMounts", {{{"name", "v"}, {"mountPath", "/v"}}}},
                    {"command", {"sh"}},
                    {"resources", {{"requests", {{"cpu", "1"}}}}},
                    {"ports", {{{"containerPort", 80}, {"hostPort", 8080}}}}};
  json pod = {
      {"metadata",
       {{"name", "p"},
        {"managedFields", {{{"manager", "kubectl"}, {"fieldsV1", {{"f:spec", json::object()}}}}}},
        // Label and annotation keys that look like skipped fields are data, and are kept.
        {"labels", {{"env", "prod"}, {"managedFields", "x"}}},
        {"annotations",
         {{"kubectl.kubernetes.io/last-applied-configuration", "{\"huge\":1}"}, {"keep", "me"}}}}},
      {"spec",
       {{"containers", {container}},
        {"initContainers", {container}},
        {"nodeSelector", {{"command", "yes"}}},
        {"ephemeralContainers", {{{"name", "debug"}}}}}},
      {"status",
       {{"phase", "Running"},
        {"conditions", {{{"type", "PodScheduled"}, {"status", "True"}}}},
        {"containerStatuses", {{{"name", "c"}, {"ready", true}}}}}}};
  json list = {{"metadata", {{"resourceVersion", "1"}}}, {"items", {pod}}};
  json got;
  ParseList(list.dump(), [&](json& item) { got = std::move(item); });

  EXPECT_FALSE(got["metadata"].contains("managedFields"));
  EXPECT_EQ(got["metadata"]["labels"], (json{{"env", "prod"}, {"managedFields", "x"}}));
  EXPECT_EQ(got["metadata"]["annotations"], (json{{"keep", "me"}}));
  for (const char* list_name : {"containers", "initContainers"}) {
    const json& c = got["spec"][list_name][0];
    EXPECT_EQ(c, (json{{"name", "c"},
                       {"image", "img"},
                       {"resources", {{"requests", {{"cpu", "1"}}}}},
                       {"ports", {{{"containerPort", 80}, {"hostPort", 8080}}}}}))
        << list_name;
  }
  EXPECT_EQ(got["spec"]["nodeSelector"], (json{{"command", "yes"}}));
  EXPECT_FALSE(got["spec"].contains("ephemeralContainers"));
  EXPECT_FALSE(got["status"].contains("containerStatuses"));
  EXPECT_EQ(got["status"]["phase"], "Running");
  EXPECT_EQ(got["status"]["conditions"][0]["type"], "PodScheduled");
}

TEST(ParseList, MalformedJsonIsADecodeError) {
  EXPECT_THROW(ParseList(R"({"items": [{"metadata": )", [](json&) {}), DecodeError);
  EXPECT_THROW(ParseList("not json", [](json&) {}), DecodeError);
}

TEST(ParseList, ItemsThatAreNotObjectsAreDroppedWithTheirContents) {
  std::vector<json> items;
  ParseList(R"({"items": [[{"a": [1]}], 3, {"metadata": {"name": "kept"}}]})",
            [&](json& item) { items.push_back(std::move(item)); });
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0]["metadata"]["name"], "kept");
}

TEST(ParseWatchEvent, ReadsTypeAndObjectInEitherOrder) {
  ParsedWatchEvent event = ParseWatchEvent(
      R"({"object": {"metadata": {"name": "n", "managedFields": []}}, "type": "ADDED"})");
  EXPECT_EQ(event.type, "ADDED");
  ASSERT_TRUE(event.has_object);
  EXPECT_EQ(event.object, (json{{"metadata", {{"name", "n"}}}}));

  event = ParseWatchEvent(R"({"type": "DELETED", "object": {"spec": {"unschedulable": true}}})");
  EXPECT_EQ(event.type, "DELETED");
  EXPECT_EQ(event.object["spec"]["unschedulable"], true);
}

TEST(ParseWatchEvent, NonObjectOrMissingPartsAreReportedNotGuessed) {
  ParsedWatchEvent event = ParseWatchEvent(R"({"type": "ADDED", "object": [{"a": {"b": 1}}]})");
  EXPECT_EQ(event.type, "ADDED");
  EXPECT_FALSE(event.has_object);
  event = ParseWatchEvent(R"({"type": 3, "object": {}})");
  EXPECT_TRUE(event.type.empty());
  EXPECT_TRUE(event.has_object);
  // A "type" inside the object is the object's, not the event's.
  event = ParseWatchEvent(R"({"object": {"type": "ADDED"}})");
  EXPECT_TRUE(event.type.empty());
  EXPECT_THROW(ParseWatchEvent(R"({"type": "ADDED", "object": {)"), DecodeError);
}

}  // namespace
}  // namespace berth::api
