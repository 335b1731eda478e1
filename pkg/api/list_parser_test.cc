#include "pkg/api/list_parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "pkg/api/errors.h"
#include "test/testing/random_json.h"

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

// What ParseList makes of `body`: the items it delivered and the metadata, or the error.
struct ListOutcome {
  std::vector<json> items;
  ListMeta meta;
  bool failed = false;
};

ListOutcome WholeBody(const std::string& body) {
  ListOutcome out;
  try {
    out.meta = ParseList(body, [&](json& item) { out.items.push_back(std::move(item)); });
  } catch (const DecodeError&) {
    out.failed = true;
  }
  return out;
}

ListOutcome Streamed(const std::string& body, size_t piece, size_t batch_bytes) {
  ListOutcome out;
  try {
    ListStreamParser parser([&](json& item) { out.items.push_back(std::move(item)); }, batch_bytes);
    for (size_t at = 0; at < body.size(); at += piece) parser.Feed(body.substr(at, piece));
    out.meta = parser.Finish();
  } catch (const DecodeError&) {
    out.failed = true;
  }
  return out;
}

TEST(ListStreamParser, DeliversWhatParseListDoesForAnyPieceAndBatchSize) {
  const std::vector<std::string> bodies = {
      json{{"kind", "PodList"},
           {"metadata", {{"resourceVersion", "42"}, {"continue", "tok"}}},
           {"items",
            {{{"metadata", {{"name", "a]\"[,{"}, {"managedFields", {{{"f", "]"}}}}}}},
             {{"metadata", {{"name", "b"}}}, {"spec", {{"items", {1, 2}}}}},
             {{"metadata", {{"name", "c"}}}}}}}
          .dump(),
      // Items before the metadata, whitespace everywhere, items that are not objects.
      std::string(
          R"( { "items" : [ {"metadata":{"name":"x"}} , 3 , [ {"a":1} ] , {"b":"\\"} ] ,)") +
          R"( "metadata" : { "resourceVersion" : "7" } } )",
      R"({"metadata":{"resourceVersion":"1"},"items":[]})",
      R"({"metadata":{"resourceVersion":"1"},"items":[ ]})",
      // An escaped "items" key is not recognized early; the envelope carries the array.
      R"({"metadata":{"resourceVersion":"2"},"it\u0065ms":[{"metadata":{"name":"e"}}]})",
      R"({"items":[{"a":1}],"other":[{"b":2}],"metadata":{"resourceVersion":"3"}})",
  };
  for (const std::string& body : bodies) {
    SCOPED_TRACE(body);
    const ListOutcome expected = WholeBody(body);
    ASSERT_FALSE(expected.failed);
    for (size_t piece : {size_t{1}, size_t{3}, size_t{64}, body.size()}) {
      for (size_t batch : {size_t{1}, size_t{40}, ListStreamParser::kBatchBytes}) {
        SCOPED_TRACE(::testing::Message() << "piece " << piece << " batch " << batch);
        const ListOutcome got = Streamed(body, piece, batch);
        EXPECT_FALSE(got.failed);
        EXPECT_EQ(got.items, expected.items);
        EXPECT_EQ(got.meta.resource_version, expected.meta.resource_version);
        EXPECT_EQ(got.meta.continue_token, expected.meta.continue_token);
      }
    }
  }
}

TEST(ListStreamParser, RejectsWhatParseListRejects) {
  const std::vector<std::string> bodies = {
      R"({"metadata":{"resourceVersion":"1"},"items":[{"a":1},]})",
      R"({"metadata":{"resourceVersion":"1"},"items":[{"a":1},,{"b":2}]})",
      R"({"metadata":{"resourceVersion":"1"},"items":[,{"a":1}]})",
      R"({"metadata":{"resourceVersion":"1"},"items":[{"a":1}{"b":2}]})",
      R"({"metadata":{"resourceVersion":"1"},"items":[{"a":]}]})",
      R"({"metadata":{"resourceVersion":"1"},"items":[{"a":1})",
      R"({"metadata":{"resourceVersion":"1"},"items":[{"a":1}]}})",
      R"({"metadata":{"resourceVersion":"1"},"items":[{"a":"unterminated]})",
      R"({"metadata":{"resourceVersion":"1"},"items":[{"a":1}])",
      // A quote right after a scalar under a skipped key: ParseList once read `7"` as one scalar
      // (found by fuzzing, test/fuzz/corpus/list/crash-skipped-scalar).
      R"({"items":[{"metadata":{"managedFields":7"}}]})",
      R"({"items":[{"metadata":{"managedFields":7[1]}}]})",
      "",
  };
  for (const std::string& body : bodies) {
    SCOPED_TRACE(body);
    ASSERT_TRUE(WholeBody(body).failed);
    for (size_t piece : {size_t{1}, size_t{5}, std::max<size_t>(1, body.size())}) {
      for (size_t batch : {size_t{1}, ListStreamParser::kBatchBytes}) {
        SCOPED_TRACE(::testing::Message() << "piece " << piece << " batch " << batch);
        EXPECT_TRUE(Streamed(body, piece, batch).failed);
      }
    }
  }
}

// A list response with generated items (strings full of brackets, commas, quotes and escapes)
// and its top-level keys in a random order.
std::string RandomListBody(std::mt19937_64& rng) {
  json items = json::array();
  const int count = std::uniform_int_distribution<int>(0, 12)(rng);
  for (int i = 0; i < count; i++) {
    json item = rng() % 4 == 0 ? RandomJsonValue(rng, 1) : json::object();
    if (item.is_object()) {
      item["metadata"] = {{"name", "p" + std::to_string(i)}};
      item["spec"] = RandomJsonValue(rng, 2);
    }
    items.push_back(std::move(item));
  }
  std::vector<std::string> members = {
      R"("metadata":{"resourceVersion":")" + std::to_string(rng() % 1000) + R"("})",
      R"("items":)" + items.dump(), R"("kind":"PodList")",
      R"("extra":)" + RandomJsonValue(rng, 1).dump()};
  std::shuffle(members.begin(), members.end(), rng);
  std::string body = "{";
  for (size_t i = 0; i < members.size(); i++) body += (i ? "," : "") + members[i];
  return body + "}";
}

TEST(ListStreamParser, MatchesParseListOnGeneratedAndDamagedBodies) {
  std::mt19937_64 rng(20261123);
  static const char kDamage[] = {',', '[', ']', '{', '}', '"', '\\', ':', ' ', 'x'};
  for (int round = 0; round < 1500; round++) {
    std::string body = RandomListBody(rng);
    const bool damaged = round % 2 == 1;
    if (damaged && !body.empty()) {
      const size_t at = rng() % body.size();
      switch (rng() % 3) {
        case 0:
          body.erase(at, 1);
          break;
        case 1:
          body.insert(at, 1, kDamage[rng() % sizeof(kDamage)]);
          break;
        default:
          body.resize(at);
          break;
      }
    }
    SCOPED_TRACE(body);
    const ListOutcome expected = WholeBody(body);
    const size_t piece = 1 + rng() % 64;
    const size_t batch = rng() % 2 == 0 ? 1 : 1 + rng() % 512;
    SCOPED_TRACE(::testing::Message() << "piece " << piece << " batch " << batch);
    const ListOutcome got = Streamed(body, piece, batch);
    ASSERT_EQ(got.failed, expected.failed);
    if (expected.failed) continue;
    EXPECT_EQ(got.items, expected.items);
    EXPECT_EQ(got.meta.resource_version, expected.meta.resource_version);
  }
}

TEST(ListStreamParser, DecodesItemsBeforeTheBodyEnds) {
  std::vector<json> items;
  ListStreamParser parser([&](json& item) { items.push_back(std::move(item)); }, 1);
  parser.Feed(R"({"metadata":{"resourceVersion":"9"},"items":[{"metadata":{"name":"a"}},)");
  ASSERT_EQ(items.size(), 1u) << "a complete item is decoded at the next comma";
  EXPECT_EQ(items[0]["metadata"]["name"], "a");
  parser.Feed(R"({"metadata":{"name":"b"}}]})");
  EXPECT_EQ(parser.Finish().resource_version, "9");
  ASSERT_EQ(items.size(), 2u);
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

// Found by fuzzing (test/fuzz/corpus/objects/storageclass.json): an array directly under the
// object, as a StorageClass's allowedTopologies, was left open, so the next key went into it.
TEST(ParseWatchEvent, ArraysDirectlyUnderTheObjectAreClosed) {
  const json object = json::parse(R"({"metadata": {"name": "sc"},
      "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}],
      "provisioner": "csi.example.com", "parameters": {"type": "ssd"}})");
  const ParsedWatchEvent event =
      ParseWatchEvent(R"({"type": "ADDED", "object": )" + object.dump() + "}");
  ASSERT_TRUE(event.has_object);
  EXPECT_EQ(event.object, object);
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
