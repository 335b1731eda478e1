#include "pkg/plugins/nodedeclaredfeatures/nodedeclaredfeatures.h"

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pkg/api/codec.h"
#include "test/testing/fake_handle.h"

namespace berth::plugins::nodedeclaredfeatures {
namespace {

using framework::Code;
using framework::QueueingHint;
using nlohmann::json;

std::shared_ptr<NodeDeclaredFeatures> NewPlugin() {
  testing::FakeHandle handle;
  auto plugin = std::dynamic_pointer_cast<NodeDeclaredFeatures>(New(nullptr, handle));
  EXPECT_NE(plugin, nullptr);
  return plugin;
}

// A pod as a user writes it, with `spec` merged over one plain container.
api::PodPtr PodWithSpec(const json& spec) {
  json pod = {{"metadata", {{"name", "p"}, {"namespace", "default"}, {"uid", "u1"}}},
              {"spec", {{"containers", json::array({{{"name", "c"}, {"image", "i"}}})}}}};
  pod["spec"].merge_patch(spec);
  return std::make_shared<const api::Pod>(api::DecodePod(pod));
}

framework::NodeInfoPtr NodeDeclaring(const std::vector<std::string>& features) {
  json node = {{"metadata", {{"name", "n"}}}, {"status", {{"declaredFeatures", features}}}};
  return std::make_shared<framework::NodeInfo>(
      std::make_shared<const api::Node>(api::DecodeNode(node)));
}

const json kRestartAll = {
    {"containers",
     json::array({{{"name", "c"},
                   {"image", "i"},
                   {"restartPolicyRules",
                    json::array({{{"action", "RestartAllContainers"},
                                  {"exitCodes", {{"operator", "In"}, {"values", {42}}}}}})}}})}};
const json kRestartContainerOnly = {
    {"containers",
     json::array({{{"name", "c"},
                   {"image", "i"},
                   {"restartPolicyRules",
                    json::array({{{"action", "Restart"},
                                  {"exitCodes", {{"operator", "In"}, {"values", {42}}}}}})}}})}};
const json kUserNamespaceHostNetwork = {{"hostNetwork", true}, {"hostUsers", false}};
const json kBindMountOptions = {
    {"containers",
     json::array({{{"name", "c"},
                   {"image", "i"},
                   {"volumeMounts", json::array({{{"name", "v"},
                                                  {"mountPath", "/v"},
                                                  {"bindMountOptions", {"noexec"}}}})}}})}};
const json kEphemeralBindMountOptions = {
    {"ephemeralContainers",
     json::array({{{"name", "debug"},
                   {"image", "i"},
                   {"volumeMounts", json::array({{{"name", "v"},
                                                  {"mountPath", "/v"},
                                                  {"bindMountOptions", {"nodev"}}}})}}})}};
const json kInitBindMountOptions = {
    {"initContainers",
     json::array({{{"name", "init"},
                   {"image", "i"},
                   {"volumeMounts", json::array({{{"name", "v"},
                                                  {"mountPath", "/v"},
                                                  {"bindMountOptions", {"nosuid"}}}})}}})}};

TEST(NodeDeclaredFeaturesTest, PodsThatNeedNoFeatureSkipTheFilter) {
  const std::vector<json> specs = {
      json::object(),
      kRestartContainerOnly,
      {{"hostNetwork", true}},                         // hostUsers unset: true.
      {{"hostNetwork", true}, {"hostUsers", true}},    // Host user namespace.
      {{"hostNetwork", false}, {"hostUsers", false}},  // Own network namespace.
      {{"containers",
        json::array({{{"name", "c"},  // Mount without options.
                      {"image", "i"},
                      {"volumeMounts", json::array({{{"name", "v"}, {"mountPath", "/v"}}})}}})}},
  };
  for (const json& spec : specs) {
    framework::CycleState state;
    framework::PreFilterResult result;
    EXPECT_TRUE(NewPlugin()->PreFilter(state, *PodWithSpec(spec), {}, &result).IsSkip()) << spec;
  }
}

TEST(NodeDeclaredFeaturesTest, FilterNeedsEveryRequiredFeatureDeclared) {
  struct Case {
    std::string name;
    json spec;
    std::vector<std::string> declared;
    bool want_fit;
  };
  const std::vector<Case> cases = {
      {"restart all, declared", kRestartAll, {"RestartAllContainersOnContainerExits"}, true},
      {"restart all, not declared", kRestartAll, {}, false},
      {"restart all, other feature declared", kRestartAll, {"VolumeBindMountOptions"}, false},
      {"user namespace + host network, declared",
       kUserNamespaceHostNetwork,
       {"UserNamespacesHostNetworkSupport"},
       true},
      {"user namespace + host network, not declared", kUserNamespaceHostNetwork, {}, false},
      {"bind mount options, declared", kBindMountOptions, {"VolumeBindMountOptions"}, true},
      {"bind mount options, unknown features only",
       kBindMountOptions,
       {"SomeFutureFeature", "volumebindmountoptions"},
       false},
      {"init container bind mount options", kInitBindMountOptions, {}, false},
      {"ephemeral container bind mount options", kEphemeralBindMountOptions, {}, false},
      {"ephemeral container bind mount options, declared",
       kEphemeralBindMountOptions,
       {"VolumeBindMountOptions"},
       true},
  };
  auto plugin = NewPlugin();
  for (const Case& c : cases) {
    api::PodPtr pod = PodWithSpec(c.spec);
    framework::NodeInfoPtr node = NodeDeclaring(c.declared);
    framework::CycleState state;
    framework::PreFilterResult result;
    ASSERT_TRUE(plugin->PreFilter(state, *pod, {node}, &result).IsSuccess()) << c.name;
    framework::Status status = plugin->Filter(state, *pod, *node);
    if (c.want_fit) {
      EXPECT_TRUE(status.IsSuccess()) << c.name << ": " << status.Message();
    } else {
      EXPECT_EQ(status.code(), Code::kUnschedulableAndUnresolvable) << c.name;
      EXPECT_EQ(status.Message(), "node(s) didn't match Pod's required features") << c.name;
    }
  }
}

TEST(NodeDeclaredFeaturesTest, TwoRequiredFeaturesNeedBoth) {
  json spec = kRestartAll;
  spec.merge_patch(kUserNamespaceHostNetwork);
  api::PodPtr pod = PodWithSpec(spec);
  auto plugin = NewPlugin();
  framework::CycleState state;
  framework::PreFilterResult result;
  ASSERT_TRUE(plugin->PreFilter(state, *pod, {}, &result).IsSuccess());
  EXPECT_FALSE(plugin->Filter(state, *pod, *NodeDeclaring({"RestartAllContainersOnContainerExits"}))
                   .IsSuccess());
  EXPECT_TRUE(plugin
                  ->Filter(state, *pod,
                           *NodeDeclaring({"UserNamespacesHostNetworkSupport",
                                           "RestartAllContainersOnContainerExits"}))
                  .IsSuccess());
}

TEST(NodeDeclaredFeaturesTest, FilterWithoutPreFilterIsAnError) {
  framework::CycleState state;
  EXPECT_EQ(NewPlugin()->Filter(state, *PodWithSpec(kRestartAll), *NodeDeclaring({})).code(),
            Code::kError);
}

TEST(NodeDeclaredFeaturesTest, NodeHintQueuesOnlyWhenDeclaredFeaturesChange) {
  api::PodPtr pod = PodWithSpec(kRestartAll);
  auto node = [](std::vector<std::string> features) {
    api::Node n;
    n.meta.name = "n";
    n.status.declared_features = std::move(features);
    return std::make_shared<const api::Node>(std::move(n));
  };
  framework::EventObjects added;
  added.new_node = node({});
  EXPECT_EQ(IsSchedulableAfterNodeChange(*pod, added), QueueingHint::kQueue);
  framework::EventObjects same;
  same.old_node = node({"VolumeBindMountOptions"});
  same.new_node = node({"VolumeBindMountOptions"});
  EXPECT_EQ(IsSchedulableAfterNodeChange(*pod, same), QueueingHint::kSkip);
  framework::EventObjects changed;
  changed.old_node = node({});
  changed.new_node = node({"RestartAllContainersOnContainerExits"});
  EXPECT_EQ(IsSchedulableAfterNodeChange(*pod, changed), QueueingHint::kQueue);
}

TEST(NodeDeclaredFeaturesTest, PodHintQueuesOnlyWhenRequirementsChange) {
  api::PodPtr before = PodWithSpec(kRestartAll);
  framework::EventObjects unchanged;
  unchanged.old_pod = before;
  unchanged.new_pod = PodWithSpec(kRestartAll);
  EXPECT_EQ(IsSchedulableAfterPodUpdate(*before, unchanged), QueueingHint::kSkip);
  framework::EventObjects changed;
  changed.old_pod = before;
  changed.new_pod = PodWithSpec(kRestartContainerOnly);
  EXPECT_EQ(IsSchedulableAfterPodUpdate(*before, changed), QueueingHint::kQueue);
}

TEST(NodeDeclaredFeaturesTest, EventsToRegister) {
  auto events = NewPlugin()->EventsToRegister();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].event.resource, framework::EventResource::kNode);
  EXPECT_EQ(events[0].event.actions, framework::kAdd | framework::kUpdateNodeDeclaredFeature);
  EXPECT_EQ(events[1].event.resource, framework::EventResource::kUnscheduledPod);
}

}  // namespace
}  // namespace berth::plugins::nodedeclaredfeatures
