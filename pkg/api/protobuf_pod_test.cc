// TryDecodeProtobufPod against the general path (DecodePod over DecodeProtobufObject's JSON):
// whenever the direct decoder returns a pod, the general path must give an equal one.

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
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
using testing::Requirement;
using testing::RichPod;
using testing::Time;

// The general path's pod, or the DecodeError's message.
struct General {
  std::optional<Pod> pod;
  std::string error;
};

General DecodeGeneral(const std::string& message) {
  General out;
  try {
    out.pod = DecodePod(DecodeProtobufObject(Proto().Raw(message).Envelope("Pod")));
  } catch (const DecodeError& e) {
    out.error = e.what();
  }
  return out;
}

TEST(TryDecodeProtobufPod, RichPodIsTheGeneralPathsPod) {
  const std::optional<Pod> direct = TryDecodeProtobufPod(RichPod().str());
  ASSERT_TRUE(direct.has_value());
  const General general = DecodeGeneral(RichPod().str());
  ASSERT_TRUE(general.pod.has_value()) << general.error;
  EXPECT_EQ(*direct, *general.pod);
  // Spot checks that the comparison is over a full pod.
  EXPECT_EQ(direct->meta.creation_timestamp, "2024-05-01T10:00:00Z");
  EXPECT_TRUE(direct->spec.affinity->node_affinity->required.has_value());
  EXPECT_EQ(direct->spec.topology_spread_constraints.at(0).min_domains, 3);
  EXPECT_EQ(direct->spec.volumes.at(0).claim_name, "data-web-0");
  EXPECT_TRUE(direct->spec.init_containers.at(0).restartable);
  EXPECT_EQ(direct->spec.priority, -5);
  ASSERT_EQ(direct->spec.resource_claims.size(), 2u);
  EXPECT_EQ(direct->spec.resource_claims[0].resource_claim_template_name, "web-gpu");
  EXPECT_EQ(direct->spec.resource_claims[1].resource_claim_name, "shared-license");
  ASSERT_EQ(direct->status.resource_claim_statuses.size(), 2u);
  EXPECT_EQ(direct->status.resource_claim_statuses[0].resource_claim_name, "web-0-gpu-x7k2p");
  EXPECT_FALSE(direct->status.resource_claim_statuses[1].resource_claim_name.has_value());
  ASSERT_TRUE(direct->status.extended_resource_claim_status.has_value());
  EXPECT_EQ(direct->status.extended_resource_claim_status->request_mappings.at(0).request_name,
            "container-0-request-0");
  EXPECT_EQ(direct->requests.milli_cpu, 260);
  EXPECT_EQ(direct->status.conditions.size(), 2u);
  EXPECT_EQ(direct->status.start_time, "2024-05-01T10:01:00Z");
  EXPECT_FALSE(direct->meta.annotations.Contains(kLastAppliedAnnotation));
}

TEST(TryDecodeProtobufPod, BarePodGetsTheSameDefaults) {
  const std::string message =
      Proto()
          .Message(1, Proto().Bytes(1, "bare"))
          .Message(2, Proto().Bytes(19, "").Message(
                          2, Proto().Bytes(1, "c").Message(6, Proto().Varint(3, 80).Bytes(4, ""))))
          .str();
  const std::optional<Pod> direct = TryDecodeProtobufPod(message);
  ASSERT_TRUE(direct.has_value());
  EXPECT_EQ(direct->spec.scheduler_name, "default-scheduler");
  EXPECT_EQ(direct->spec.containers.at(0).ports.at(0).protocol, "TCP");
  EXPECT_EQ(direct->non_zero_milli_cpu, kDefaultMilliCPURequest);
  EXPECT_EQ(*direct, *DecodeGeneral(message).pod);
}

// The fields NodeDeclaredFeatures reads: restart rules, bind mount options (also in init and
// ephemeral containers) and hostUsers, read by both paths alike.
TEST(TryDecodeProtobufPod, NodeFeatureFieldsAreTheGeneralPaths) {
  const Proto bind_mount = Proto().Bytes(1, "v").Bytes(3, "/v").Bytes(8, "noexec");
  const std::string message =
      Proto()
          .Message(1, Proto().Bytes(1, "features"))
          .Message(2, Proto()
                          .Message(2, Proto().Bytes(1, "c").Message(
                                          25, Proto().Bytes(1, "RestartAllContainers")))
                          .Message(20, Proto().Bytes(1, "init").Message(9, bind_mount))
                          .Message(34, Proto().Message(
                                           1, Proto().Bytes(1, "debug").Message(9, bind_mount)))
                          .Varint(11, 1)
                          .Varint(37, 0))
          .str();
  const std::optional<Pod> direct = TryDecodeProtobufPod(message);
  ASSERT_TRUE(direct.has_value());
  EXPECT_TRUE(direct->spec.containers.at(0).restarts_all_containers);
  EXPECT_FALSE(direct->spec.containers.at(0).bind_mount_options);
  EXPECT_TRUE(direct->spec.init_containers.at(0).bind_mount_options);
  EXPECT_TRUE(direct->spec.ephemeral_bind_mount_options);
  EXPECT_EQ(direct->spec.host_users, std::optional<bool>(false));
  const General general = DecodeGeneral(message);
  ASSERT_TRUE(general.pod.has_value()) << general.error;
  EXPECT_EQ(*direct, *general.pod);
}

// The last of two actions in one restart rule is the rule's action on both paths.
TEST(TryDecodeProtobufPod, RestartRuleKeepsItsLastAction) {
  const std::string message =
      Proto()
          .Message(1, Proto().Bytes(1, "twice"))
          .Message(2, Proto().Message(
                          2, Proto().Bytes(1, "c").Message(
                                 25, Proto().Bytes(1, "RestartAllContainers").Bytes(1, "Restart"))))
          .str();
  const std::optional<Pod> direct = TryDecodeProtobufPod(message);
  ASSERT_TRUE(direct.has_value());
  EXPECT_FALSE(direct->spec.containers.at(0).restarts_all_containers);
  EXPECT_EQ(*direct, *DecodeGeneral(message).pod);
}

// The disk sources' members, read by both paths alike.
TEST(TryDecodeProtobufPod, VolumeSourcesThePluginsRead) {
  const auto volume = [](std::string_view name, uint32_t source, const Proto& members) {
    return Proto().Bytes(1, name).Message(2, Proto().Message(source, members));
  };
  Proto spec;
  spec.Message(1, volume("gce", 3, Proto().Bytes(1, "pd-1").Bytes(2, "ext4").Varint(4, 1)))
      .Message(1, volume("ebs", 4, Proto().Bytes(1, "vol-1").Varint(3, 2)))
      .Message(1, volume("iscsi", 8, Proto().Bytes(1, "portal").Bytes(2, "iqn.x").Varint(6, 1)))
      .Message(1, volume("rbd", 11,
                         Proto().Bytes(1, "m1").Bytes(1, "m2").Bytes(2, "img").Bytes(4, "kube")))
      .Message(1, volume("cinder", 13, Proto().Bytes(1, "c-1")))
      .Message(1, volume("azure", 22, Proto().Bytes(1, "d").Bytes(2, "uri")))
      .Message(1, volume("px", 24, Proto().Bytes(1, "px-1").Varint(3, 1)))
      .Message(1, volume("inline", 28, Proto().Bytes(1, "drv").Varint(2, 1)))
      .Message(1, volume("scratch", 29, Proto().Message(1, Proto())));
  const std::string message = Proto().Message(1, Proto().Bytes(1, "p")).Message(2, spec).str();
  const std::optional<Pod> direct = TryDecodeProtobufPod(message);
  ASSERT_TRUE(direct.has_value());
  const General general = DecodeGeneral(message);
  ASSERT_TRUE(general.pod.has_value()) << general.error;
  EXPECT_EQ(*direct, *general.pod);
  const std::vector<Volume>& v = direct->spec.volumes;
  ASSERT_EQ(v.size(), 9u);
  EXPECT_EQ(v[0].disk, "pd-1");
  EXPECT_TRUE(v[0].read_only);
  EXPECT_EQ(v[1].disk, "vol-1");
  EXPECT_EQ(v[2].disk, "iqn.x");
  EXPECT_TRUE(v[2].read_only);
  EXPECT_EQ(v[3].rbd_monitors, (std::vector<std::string>{"m1", "m2"}));
  EXPECT_EQ(v[3].disk, "img");
  EXPECT_EQ(v[3].rbd_pool, "kube");
  EXPECT_EQ(v[4].disk, "c-1");
  EXPECT_EQ(v[5].disk, "uri");
  EXPECT_EQ(v[6].disk, "px-1");
  EXPECT_FALSE(v[6].read_only);
  EXPECT_EQ(v[7].csi_driver, "drv");
  EXPECT_FALSE(v[7].read_only);
  EXPECT_EQ(v[8].source, "ephemeral");
}

// Messages the direct decoder leaves to the general path, and what the general path makes of them.
TEST(TryDecodeProtobufPod, LeavesTheUnusualToTheGeneralPath) {
  const Proto meta = Proto().Bytes(1, "p");
  const auto spec = [&](const Proto& s) { return Proto().Message(1, meta).Message(2, s).str(); };
  const auto container = [](const Proto& c) { return Proto().Message(2, c); };
  const std::vector<testing::DeclinedMessage> cases = {
      {"no metadata", Proto().Message(2, Proto().Bytes(10, "n")).str(), "metadata.name: required"},
      {"empty name", Proto().Message(1, Proto().Bytes(1, "")).str(), "metadata.name: required"},
      {"metadata sent twice is merged",
       Proto().Message(1, meta).Message(1, Proto().Bytes(3, "ns")).str(), ""},
      {"container resources sent twice are merged",
       spec(container(Proto()
                          .Message(8, Proto().QuantityEntry(2, "cpu", "1"))
                          .Message(8, Proto().QuantityEntry(2, "memory", "1Gi")))),
       ""},
      {"a volume with two sources",
       spec(Proto().Message(
           1, Proto().Bytes(1, "v").Message(2, Proto().Message(2, Proto()).Message(6, Proto())))),
       ""},
      {"invalid quantity",
       spec(container(Proto().Message(8, Proto().QuantityEntry(2, "cpu", "lots")))),
       "spec.containers[0].resources.requests.cpu: invalid quantity \"lots\": expected a number"},
      {"unknown preemption policy", spec(Proto().Bytes(31, "Sometimes")),
       "spec.preemptionPolicy: unknown value \"Sometimes\""},
      {"unknown toleration effect", spec(Proto().Message(22, Proto().Bytes(4, "Maybe"))),
       "spec.tolerations[0].effect: unknown value \"Maybe\""},
      {"invalid UTF-8 in a field only checked", spec(container(Proto().Bytes(24, "\xff"))),
       "spec.containers[0].restartPolicy: invalid UTF-8 in a string"},
      {"string field sent as a varint", spec(Proto().Varint(19, 1)),
       "spec.schedulerName: malformed protobuf: varint value, expected length-delimited"},
      {"bad selector operator in affinity",
       spec(Proto().Message(
           18,
           Proto().Message(
               1, Proto().Message(
                      1, Proto().Message(1, Proto().Message(1, Requirement("a", "Near", {}))))))),
       "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
       "nodeSelectorTerms[0].matchExpressions[0].operator: unknown value \"Near\""},
      {"time out of range",
       Proto().Message(1, Proto().Bytes(1, "p").Message(8, Time(1LL << 40))).str(),
       "metadata.creationTimestamp: time out of the RFC 3339 range"},
      {"extended resource claim status sent twice is merged",
       Proto()
           .Message(1, meta)
           .Message(3,
                    Proto()
                        .Message(18, Proto().Bytes(2, "claim-a"))
                        .Message(18, Proto().Message(1, Proto().Bytes(1, "app"))))
           .str(),
       ""},
      {"truncated", RichPod().str().substr(0, 100), testing::DeclinedMessage::kAnyError},
  };
  testing::ExpectLeftToTheGeneralPath(cases, TryDecodeProtobufPod, [](const std::string& message) {
    General general = DecodeGeneral(message);
    return std::make_pair(std::move(general.pod), std::move(general.error));
  });
}

// Random pods built from pools of valid and invalid values, and random byte damage to them. A pod
// built from valid values only must be decoded directly; any pod decoded directly must equal the
// general path's.
class RandomPod : public testing::RandomMessage {
 public:
  using RandomMessage::RandomMessage;

  std::string Build() {
    valid_ = true;
    Proto pod;
    if (Chance(97)) {
      pod.Message(1, Meta());
    } else {
      valid_ = false;
    }
    if (Chance(5)) pod.Message(1, Proto().Bytes(3, "again")), valid_ = false;
    if (Chance(90)) pod.Message(2, Spec());
    if (Chance(70)) pod.Message(3, Status());
    if (Chance(10)) pod.Varint(40, 1);  // Unknown fields are skipped by both.
    return pod.str();
  }

 private:
  // A string from a pool; some pool entries make the pod invalid.
  std::string Text() {
    static const char* const kTexts[] = {"a", "web", "", "zone", "kube-system", "é"};
    if (Chance(2)) {
      valid_ = false;
      return "\xff";
    }
    return kTexts[Pick(0, 5)];
  }
  std::string Enum(std::initializer_list<const char*> known) {
    if (Chance(4)) {
      valid_ = false;
      return "Bogus";
    }
    std::vector<const char*> values(known);
    return values[static_cast<size_t>(Pick(0, static_cast<int>(values.size()) - 1))];
  }
  std::string QuantityText() {
    static const char* const kQuantities[] = {"1", "250m", "64Mi", "1e3", "0", "1.5Gi", "2k"};
    if (Chance(4)) {
      valid_ = false;
      return Chance(50) ? "" : "lots";
    }
    return kQuantities[Pick(0, 6)];
  }
  std::string ResourceName() {
    static const char* const kNames[] = {"cpu", "memory", "pods", "ephemeral-storage",
                                         "example.com/gpu"};
    return kNames[Pick(0, 4)];
  }
  Proto Quantities(uint32_t field) {
    Proto p;
    for (int i = Pick(0, 3); i > 0; i--) p.QuantityEntry(field, ResourceName(), QuantityText());
    return p;
  }

  Proto Meta() {
    Proto m;
    if (Chance(97)) {
      m.Bytes(1, "pod-" + std::to_string(Pick(0, 9)));
    } else {
      valid_ = false;
    }
    if (Chance(80)) m.Bytes(3, Text());
    if (Chance(50)) m.Bytes(5, Text());
    if (Chance(80)) m.Bytes(6, std::to_string(Pick(1, 1000)));
    if (Chance(30)) m.Varint(7, static_cast<uint64_t>(Pick(0, 5)));
    if (Chance(60)) m.Message(8, Time(Pick(0, 1 << 30)));
    if (Chance(10)) m.Message(9, Chance(80) ? Time(Pick(0, 1 << 30)) : Proto());
    for (int i = Pick(0, 3); i > 0; i--) m.Entry(11, Text(), Text());
    for (int i = Pick(0, 2); i > 0; i--) {
      m.Entry(12, Chance(30) ? std::string(kLastAppliedAnnotation) : Text(), Text());
    }
    if (Chance(30)) {
      m.Message(13, Proto().Bytes(1, "ReplicaSet").Bytes(3, Text()).Bytes(4, Text()).Varint(6, 1));
    }
    return m;
  }

  Proto Container() {
    Proto c;
    c.Bytes(1, Text());
    if (Chance(70)) c.Bytes(2, Text());
    if (Chance(30)) {
      c.Message(6, Proto()
                       .Varint(2, static_cast<uint64_t>(Pick(0, 2)) * 8080)
                       .Varint(3, 80)
                       .Bytes(4, Chance(50) ? "TCP" : ""));
    }
    if (Chance(80)) c.Message(8, Quantities(1).Raw(Quantities(2).str()));
    if (Chance(5)) c.Message(8, Quantities(2)), valid_ = false;  // Sent twice.
    if (Chance(30)) c.Bytes(24, Chance(50) ? "Always" : Text());
    return c;
  }

  Proto Spec() {
    Proto s;
    for (int i = Pick(0, 2); i > 0; i--) {
      Proto volume;
      volume.Bytes(1, Text());
      Proto source;
      const int sources = Chance(10) ? 2 : 1;
      if (sources > 1) valid_ = false;
      for (int j = 0; j < sources; j++) {
        if (Chance(50)) {
          source.Message(10, Proto().Bytes(1, Text()).Varint(2, static_cast<uint64_t>(Pick(0, 1))));
        } else {
          source.Message(static_cast<uint32_t>(Pick(1, 30)), Proto().Bytes(1, "opaque"));
        }
      }
      s.Message(1, volume.Message(2, source));
    }
    for (int i = Pick(0, 3); i > 0; i--) s.Message(2, Container());
    for (int i = Pick(0, 2); i > 0; i--) s.Entry(7, Text(), Text());
    if (Chance(30)) s.Bytes(10, Text());
    if (Chance(20)) s.Varint(11, static_cast<uint64_t>(Pick(0, 1)));
    if (Chance(15)) {
      const bool bad = Chance(20);
      if (bad) valid_ = false;
      s.Message(18, Proto().Message(
                        1, Proto().Message(
                               1, Proto().Message(
                                      1, Proto().Message(1, Requirement("zone", bad ? "Near" : "In",
                                                                        {"a"}))))));
    }
    if (Chance(70)) s.Bytes(19, Chance(70) ? "berth-scheduler" : Text());
    for (int i = Pick(0, 2); i > 0; i--) s.Message(20, Container());
    for (int i = Pick(0, 3); i > 0; i--) {
      Proto t;
      if (Chance(70)) t.Bytes(1, Text());
      if (Chance(70)) t.Bytes(2, Enum({"", "Equal", "Exists"}));
      if (Chance(50)) t.Bytes(3, Text());
      if (Chance(70)) t.Bytes(4, Enum({"", "NoSchedule", "PreferNoSchedule", "NoExecute"}));
      if (Chance(40)) t.Varint(5, Chance(50) ? 300 : uint64_t{1} << 40);
      s.Message(22, t);
    }
    if (Chance(20)) s.Bytes(24, Text());
    if (Chance(40)) s.Varint(25, static_cast<uint64_t>(static_cast<int64_t>(Pick(-10, 1000))));
    if (Chance(20)) s.Bytes(31, Enum({"PreemptLowerPriority", "Never"}));
    if (Chance(10)) s.Raw(Quantities(32).str());
    if (Chance(15)) {
      s.Message(33, Proto()
                        .Varint(1, static_cast<uint64_t>(Pick(1, 3)))
                        .Bytes(2, "zone")
                        .Bytes(3, Enum({"DoNotSchedule", "ScheduleAnyway"}))
                        .Message(4, Proto().Entry(1, "app", Text())));
    }
    if (Chance(10)) s.Message(38, Proto().Bytes(1, Text()));
    for (int i = Chance(10) ? Pick(1, 2) : 0; i > 0; i--) {
      s.Message(39, Proto().Bytes(1, Text()).Bytes(Chance(50) ? 3 : 4, "claim"));
    }
    if (Chance(10)) s.Message(40, Quantities(2));
    if (Chance(10)) s.Message(43, Chance(80) ? Proto().Bytes(1, Text()) : Proto());
    if (Chance(3)) s.Message(43, Proto().Bytes(1, Text())), valid_ = false;  // Sent twice.
    return s;
  }

  Proto Status() {
    Proto s;
    if (Chance(80)) s.Bytes(1, Chance(50) ? "Pending" : "Running");
    for (int i = Pick(0, 3); i > 0; i--) {
      s.Message(2, Proto()
                       .Bytes(1, Chance(40)   ? "PodScheduled"
                                 : Chance(50) ? "DisruptionTarget"
                                              : "Ready")
                       .Bytes(2, Chance(50) ? "True" : "False")
                       .Bytes(5, Text())
                       .Bytes(6, Text()));
    }
    if (Chance(30)) s.Message(7, Time(Pick(0, 1 << 30)));
    if (Chance(10)) s.Bytes(11, Text());
    for (int i = Chance(15) ? Pick(1, 2) : 0; i > 0; i--) {
      Proto claim;
      claim.Bytes(1, Text());
      if (Chance(70)) claim.Bytes(2, Text());
      s.Message(15, claim);
    }
    if (Chance(15)) {
      Proto extended;
      for (int i = Pick(0, 2); i > 0; i--) {
        extended.Message(1, Proto().Bytes(1, Text()).Bytes(2, Text()).Bytes(3, Text()));
      }
      if (Chance(80)) extended.Bytes(2, Text());
      s.Message(18, extended);
    }
    if (Chance(3)) s.Message(18, Proto().Bytes(2, Text())), valid_ = false;  // Sent twice.
    return s;
  }
};

TEST(TryDecodeProtobufPod, RandomPodsDecodeAsTheGeneralPathDecodesThem) {
  RandomPod random(20261124);
  testing::ExpectDirectDecodingAgrees<Pod>(
      "pod", random, 4000, TryDecodeProtobufPod, [](const std::string& message) {
        General general = DecodeGeneral(message);
        return std::make_pair(std::move(general.pod), std::move(general.error));
      });
}

}  // namespace
}  // namespace berth::api
