// TryDecodeProtobufNode against the general path (DecodeNode over DecodeProtobufObject's JSON):
// whenever the direct decoder returns a node, the general path must give an equal one.

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/api/errors.h"
#include "pkg/api/protobuf.h"
#include "pkg/api/types.h"
#include "test/testing/direct_decode.h"
#include "test/testing/proto_pods.h"
#include "test/testing/proto_writer.h"

namespace berth::api {
namespace {

using testing::Proto;
using testing::Time;

// The general path's node, or the DecodeError's message.
struct General {
  std::optional<Node> node;
  std::string error;
};

General DecodeGeneral(const std::string& message) {
  General out;
  try {
    out.node = DecodeNode(DecodeProtobufObject(Proto().Raw(message).Envelope("Node")));
  } catch (const DecodeError& e) {
    out.error = e.what();
  }
  return out;
}

// A node as a kubelet reports it: labels, two taints, capacity and allocatable with an extended
// resource, conditions, images and declared features, plus fields neither path reads.
Proto RichNode() {
  return Proto()
      .Message(1, Proto()
                      .Bytes(1, "worker-7")
                      .Bytes(5, "5f0c")
                      .Bytes(6, "812")
                      .Message(8, Time(1714557600))
                      .Entry(11, "kubernetes.io/hostname", "worker-7")
                      .Entry(11, "topology.kubernetes.io/zone", "zone-a")
                      .Entry(12, "node.alpha.kubernetes.io/ttl", "0"))
      .Message(2,
               Proto()
                   .Bytes(1, "10.0.7.0/24")  // podCIDR: not read.
                   .Varint(4, 1)
                   .Message(5, Proto().Bytes(1, "dedicated").Bytes(2, "gpu").Bytes(3, "NoSchedule"))
                   .Message(5, Proto()
                                   .Bytes(1, "node.kubernetes.io/unreachable")
                                   .Bytes(3, "NoExecute")
                                   .Message(4, Time(1714557700))))  // timeAdded: not read.
      .Message(3, Proto()
                      .QuantityEntry(1, "cpu", "32")
                      .QuantityEntry(1, "memory", "256Gi")
                      .QuantityEntry(1, "pods", "110")
                      .QuantityEntry(1, "example.com/gpu", "8")
                      .QuantityEntry(2, "cpu", "31500m")
                      .QuantityEntry(2, "memory", "250Gi")
                      .QuantityEntry(2, "pods", "110")
                      .QuantityEntry(2, "ephemeral-storage", "100Gi")
                      .Message(4, Proto()
                                      .Bytes(1, "Ready")
                                      .Bytes(2, "True")
                                      .Bytes(5, "KubeletReady")
                                      .Bytes(6, "kubelet is posting ready status"))
                      .Message(8, Proto()
                                      .Bytes(1, "registry.example/app@sha256:ab")
                                      .Bytes(1, "registry.example/app:v2")
                                      .Varint(2, 73400320))
                      .Bytes(14, "RestartAllContainers")
                      .Message(7, Proto().Bytes(1, "5.15")));  // nodeInfo: not read.
}

TEST(TryDecodeProtobufNode, RichNodeIsTheGeneralPathsNode) {
  const std::optional<Node> direct = TryDecodeProtobufNode(RichNode().str());
  ASSERT_TRUE(direct.has_value());
  const General general = DecodeGeneral(RichNode().str());
  ASSERT_TRUE(general.node.has_value()) << general.error;
  EXPECT_EQ(*direct, *general.node);
  // Spot checks that the comparison is over a full node.
  ASSERT_NE(direct->meta.labels.Find("topology.kubernetes.io/zone"), nullptr);
  EXPECT_EQ(*direct->meta.labels.Find("topology.kubernetes.io/zone"), "zone-a");
  EXPECT_TRUE(direct->spec.unschedulable);
  ASSERT_EQ(direct->spec.taints.size(), 2u);
  EXPECT_EQ(direct->spec.taints[1].effect, TaintEffect::kNoExecute);
  EXPECT_EQ(direct->status.allocatable.milli_cpu, 31500);
  EXPECT_EQ(direct->status.capacity.Get("example.com/gpu"), 8);
  EXPECT_EQ(direct->status.images.at(0).names.size(), 2u);
  EXPECT_EQ(direct->status.images.at(0).size_bytes, 73400320);
  EXPECT_EQ(direct->status.conditions.at(0).reason, "KubeletReady");
  EXPECT_EQ(direct->status.declared_features, std::vector<std::string>{"RestartAllContainers"});
}

// Messages the direct decoder leaves to the general path, and what the general path makes of them.
TEST(TryDecodeProtobufNode, LeavesTheUnusualToTheGeneralPath) {
  const Proto meta = Proto().Bytes(1, "n");
  const auto spec = [&](const Proto& s) { return Proto().Message(1, meta).Message(2, s).str(); };
  const auto status = [&](const Proto& s) { return Proto().Message(1, meta).Message(3, s).str(); };
  const std::vector<testing::DeclinedMessage> cases = {
      {"no metadata", Proto().Message(2, Proto().Varint(4, 1)).str(), "metadata.name: required"},
      {"empty name", Proto().Message(1, Proto().Bytes(1, "")).str(), "metadata.name: required"},
      {"spec sent twice is merged",
       Proto().Message(1, meta).Message(2, Proto().Varint(4, 1)).Message(2, Proto()).str(), ""},
      {"status sent twice is merged",
       Proto()
           .Message(1, meta)
           .Message(3, Proto().QuantityEntry(1, "cpu", "4"))
           .Message(3, Proto().QuantityEntry(2, "cpu", "4"))
           .str(),
       ""},
      {"taint without a key", spec(Proto().Message(5, Proto().Bytes(3, "NoSchedule"))),
       "spec.taints[0].key: required"},
      {"taint without an effect", spec(Proto().Message(5, Proto().Bytes(1, "k"))),
       "spec.taints[0].effect: required"},
      {"taint with an empty effect", spec(Proto().Message(5, Proto().Bytes(1, "k").Bytes(3, ""))),
       "spec.taints[0].effect: unknown value \"\""},
      {"unknown taint effect",
       spec(Proto().Message(5, Proto().Bytes(1, "k").Bytes(3, "NoScheduleMaybe"))),
       "spec.taints[0].effect: unknown value \"NoScheduleMaybe\""},
      {"invalid quantity", status(Proto().QuantityEntry(2, "memory", "lots")),
       "status.allocatable.memory: invalid quantity \"lots\": expected a number"},
      {"invalid UTF-8 in an image name", status(Proto().Message(8, Proto().Bytes(1, "\xff"))),
       "status.images[0].names: invalid UTF-8 in a string"},
      {"unschedulable sent as a string", spec(Proto().Bytes(4, "true")),
       "spec.unschedulable: malformed protobuf: length-delimited value, expected varint"},
      {"time out of range",
       Proto().Message(1, Proto().Bytes(1, "n").Message(8, Time(1LL << 40))).str(),
       "metadata.creationTimestamp: time out of the RFC 3339 range"},
      {"truncated", RichNode().str().substr(0, 90), testing::DeclinedMessage::kAnyError},
  };
  testing::ExpectLeftToTheGeneralPath(cases, TryDecodeProtobufNode, [](const std::string& message) {
    General general = DecodeGeneral(message);
    return std::make_pair(std::move(general.node), std::move(general.error));
  });
}

// Random nodes built from pools of valid and invalid values, and random byte damage to them. A
// node built from valid values only must be decoded directly; any node decoded directly must equal
// the general path's.
class RandomNode : public testing::RandomMessage {
 public:
  using RandomMessage::RandomMessage;

  std::string Build() {
    valid_ = true;
    Proto node;
    if (Chance(97)) {
      node.Message(1, Meta());
    } else {
      valid_ = false;
    }
    if (Chance(90)) node.Message(2, Spec());
    if (Chance(5)) node.Message(2, Proto()), valid_ = false;  // Sent twice.
    if (Chance(90)) node.Message(3, Status());
    if (Chance(5)) node.Message(3, Proto()), valid_ = false;  // Sent twice.
    if (Chance(10)) node.Varint(40, 1);                       // Unknown fields are skipped by both.
    return node.str();
  }

 private:
  // A string from a pool; some pool entries make the node invalid.
  std::string Text() {
    static const char* const kTexts[] = {"a", "gpu", "", "zone", "kube-system", "é"};
    if (Chance(2)) {
      valid_ = false;
      return "\xff";
    }
    return kTexts[Pick(0, 5)];
  }
  std::string Key() {
    std::string key = Text();
    if (key.empty()) valid_ = false;  // A taint's key is required.
    return key;
  }
  std::string Enum(std::initializer_list<const char*> known) {
    if (Chance(4)) {
      valid_ = false;
      return Chance(50) ? "" : "Bogus";
    }
    std::vector<const char*> values(known);
    return values[static_cast<size_t>(Pick(0, static_cast<int>(values.size()) - 1))];
  }
  std::string QuantityText() {
    static const char* const kQuantities[] = {"1", "250m", "64Mi", "1e3", "0", "1.5Gi", "110"};
    if (Chance(3)) {
      valid_ = false;
      return Chance(50) ? "" : "lots";
    }
    return kQuantities[Pick(0, 6)];
  }
  std::string ResourceName() {
    static const char* const kNames[] = {
        "cpu", "memory", "pods", "ephemeral-storage", "example.com/gpu", "hugepages-2Mi"};
    return kNames[Pick(0, 5)];
  }

  Proto Meta() {
    Proto m;
    if (Chance(97)) {
      m.Bytes(1, "node-" + std::to_string(Pick(0, 9)));
    } else {
      valid_ = false;
    }
    if (Chance(50)) m.Bytes(5, Text());
    if (Chance(80)) m.Bytes(6, std::to_string(Pick(1, 1000)));
    if (Chance(60)) m.Message(8, Time(Pick(0, 1 << 30)));
    if (Chance(5)) m.Message(9, Time(Pick(0, 1 << 30)));
    for (int i = Pick(0, 4); i > 0; i--) m.Entry(11, Text(), Text());
    for (int i = Pick(0, 2); i > 0; i--) m.Entry(12, Text(), Text());
    return m;
  }

  Proto Spec() {
    Proto s;
    if (Chance(30)) s.Bytes(1, "10.0.0.0/24");
    if (Chance(20)) s.Varint(4, static_cast<uint64_t>(Pick(0, 1)));
    for (int i = Pick(0, 3); i > 0; i--) {
      Proto t;
      if (Chance(95)) {
        t.Bytes(1, Key());
      } else {
        valid_ = false;
      }
      if (Chance(50)) t.Bytes(2, Text());
      if (Chance(95)) {
        t.Bytes(3, Enum({"NoSchedule", "PreferNoSchedule", "NoExecute"}));
      } else {
        valid_ = false;
      }
      if (Chance(20)) t.Message(4, Time(Pick(0, 1 << 30)));
      s.Message(5, t);
    }
    return s;
  }

  Proto Status() {
    Proto s;
    for (int i = Pick(0, 4); i > 0; i--) s.QuantityEntry(1, ResourceName(), QuantityText());
    for (int i = Pick(0, 4); i > 0; i--) s.QuantityEntry(2, ResourceName(), QuantityText());
    for (int i = Pick(0, 3); i > 0; i--) {
      s.Message(4, Proto()
                       .Bytes(1, Chance(50) ? "Ready" : "MemoryPressure")
                       .Bytes(2, Chance(50) ? "True" : "False")
                       .Bytes(5, Text())
                       .Bytes(6, Text()));
    }
    for (int i = Pick(0, 3); i > 0; i--) {
      Proto image;
      for (int j = Pick(0, 2); j > 0; j--) image.Bytes(1, Text());
      if (Chance(80)) image.Varint(2, static_cast<uint64_t>(Pick(0, 1 << 30)));
      s.Message(8, image);
    }
    for (int i = Pick(0, 2); i > 0; i--) s.Bytes(14, Text());
    return s;
  }
};

TEST(TryDecodeProtobufNode, RandomNodesDecodeAsTheGeneralPathDecodesThem) {
  RandomNode random(20261130);
  testing::ExpectDirectDecodingAgrees<Node>(
      "node", random, 4000, TryDecodeProtobufNode, [](const std::string& message) {
        General general = DecodeGeneral(message);
        return std::make_pair(std::move(general.node), std::move(general.error));
      });
}

}  // namespace
}  // namespace berth::api
