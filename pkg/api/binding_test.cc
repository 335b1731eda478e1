#include "pkg/api/binding.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace berth::api {
namespace {

using json = nlohmann::json;

TEST(EncodeBindingTest, Body) {
  Pod pod;
  pod.meta.name = "web-0";
  pod.meta.namespace_ = "prod";
  pod.meta.uid = "1234-abcd";
  EXPECT_EQ(EncodeBinding(pod, "node-7"),
            R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":"web-0","namespace":"prod",)"
            R"("uid":"1234-abcd"},"target":{"apiVersion":"v1","kind":"Node","name":"node-7"}})");
  pod.meta.uid.clear();
  json body = json::parse(EncodeBinding(pod, "node-7"));
  EXPECT_FALSE(body["metadata"].contains("uid"));
  EXPECT_EQ(body["metadata"]["name"], "web-0");
  EXPECT_EQ(body["target"]["name"], "node-7");
  EXPECT_EQ(body["kind"], "Binding");
}

TEST(EncodeBindingTest, EscapesNames) {
  Pod pod;
  pod.meta.name = "we\"ird";
  pod.meta.namespace_ = "ns";
  pod.meta.uid = std::string("u\n\x01\x1f") + "\xc3\xa9";
  json body = json::parse(EncodeBinding(pod, "n\\1"));
  EXPECT_EQ(body["metadata"]["name"], "we\"ird");
  EXPECT_EQ(body["metadata"]["uid"], pod.meta.uid);
  EXPECT_EQ(body["target"]["name"], "n\\1");
  EXPECT_EQ(EncodeBinding(pod, "n").find('\n'), std::string::npos);
}

}  // namespace
}  // namespace berth::api
