#include "pkg/api/protobuf.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/api/errors.h"
#include "pkg/api/types.h"
#include "test/testing/proto_pods.h"
#include "test/testing/proto_writer.h"

namespace berth::api {
namespace {

using json = nlohmann::json;
using testing::Proto;
using testing::RichPod;
using testing::Time;

// What the JSON form of RichPod holds of the fields Berth reads, as the protobuf decoder builds it.
const json kRichPodJson = json::parse(R"json({
  "metadata": {
    "name": "web-0", "namespace": "shop", "uid": "uid-1", "resourceVersion": "42",
    "generation": 3, "creationTimestamp": "2024-05-01T10:00:00Z",
    "deletionTimestamp": "2024-05-01T10:01:00Z",
    "labels": {"app": "web", "tier": "front"},
    "annotations": {"note": "kept"},
    "ownerReferences": [{"kind": "StatefulSet", "name": "web", "uid": "uid-0",
                         "apiVersion": "apps/v1", "controller": true}]
  },
  "spec": {
    "volumes": [
      {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0", "readOnly": true}},
      {"name": "tmp", "emptyDir": {}}
    ],
    "containers": [{
      "name": "app", "image": "nginx:1",
      "ports": [{"hostPort": 8080, "containerPort": 80, "protocol": "TCP", "hostIP": "10.0.0.1"}],
      "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "250m", "memory": "64Mi"}}
    }],
    "nodeSelector": {"disk": "ssd"},
    "nodeName": "",
    "hostNetwork": false,
    "affinity": {
      "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
          "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}],
          "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]
        }]},
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "preference": {
          "matchExpressions": [{"key": "disk", "operator": "Gt", "values": ["5"]}]
        }}]
      },
      "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "db"}},
        "namespaces": ["shop"],
        "topologyKey": "kubernetes.io/hostname",
        "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Exists"}]},
        "matchLabelKeys": ["pod-template-hash"],
        "mismatchLabelKeys": ["tenant"]
      }]},
      "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 50,
        "podAffinityTerm": {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}}
      }]}
    },
    "schedulerName": "berth-scheduler",
    "initContainers": [{"name": "proxy", "image": "envoy", "resources": {},
                        "restartPolicy": "Always"}],
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "web",
                     "effect": "NoExecute", "tolerationSeconds": 300}],
    "priorityClassName": "high",
    "priority": -5,
    "preemptionPolicy": "Never",
    "overhead": {"cpu": "10m"},
    "topologySpreadConstraints": [{
      "maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
      "labelSelector": {"matchLabels": {"app": "web"}}, "minDomains": 3,
      "nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor",
      "matchLabelKeys": ["pod-template-hash"]
    }],
    "schedulingGates": [{"name": "wait"}],
    "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "web-gpu"},
                       {"name": "license", "resourceClaimName": "shared-license"}],
    "resources": {"requests": {"memory": "1Gi"}},
    "schedulingGroup": {"podGroupName": "train"}
  },
  "status": {
    "phase": "Pending",
    "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": "0/3 nodes"},
                   {"type": "DisruptionTarget", "status": "True",
                    "reason": "PreemptionByScheduler", "message": "berth-scheduler: preempting"}],
    "startTime": "2024-05-01T10:01:00Z",
    "nominatedNodeName": "node-2",
    "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "web-0-gpu-x7k2p"},
                              {"name": "license"}],
    "extendedResourceClaimStatus": {
      "requestMappings": [{"containerName": "app", "resourceName": "example.com/gpu",
                           "requestName": "container-0-request-0"}],
      "resourceClaimName": "web-0-extended-resources-abcde"
    }
  }
})json");

TEST(ProtobufDecode, PodBecomesTheJsonOfTheFieldsBerthReads) {
  const json decoded = DecodeProtobufObject(RichPod().Envelope("Pod"));
  EXPECT_EQ(decoded, kRichPodJson) << decoded.dump(2);

  const Pod pod = DecodePod(decoded);
  EXPECT_EQ(pod, DecodePod(kRichPodJson));
  EXPECT_EQ(pod.spec.priority, -5);
  EXPECT_EQ(pod.spec.volumes[0].claim_name, "data-web-0");
  EXPECT_EQ(pod.spec.volumes[1].source, "emptyDir");
  EXPECT_TRUE(pod.spec.init_containers[0].restartable);
  ASSERT_EQ(pod.spec.resource_claims.size(), 2u);
  EXPECT_EQ(pod.spec.resource_claims[0],
            (PodResourceClaim{.name = "gpu",
                              .resource_claim_name = std::nullopt,
                              .resource_claim_template_name = "web-gpu"}));
  EXPECT_EQ(pod.spec.resource_claims[1],
            (PodResourceClaim{.name = "license",
                              .resource_claim_name = "shared-license",
                              .resource_claim_template_name = std::nullopt}));
  EXPECT_EQ(pod.status.resource_claim_statuses,
            (std::vector<PodResourceClaimStatus>{
                {.name = "gpu", .resource_claim_name = "web-0-gpu-x7k2p"},
                {.name = "license", .resource_claim_name = std::nullopt}}));
  ASSERT_TRUE(pod.status.extended_resource_claim_status.has_value());
  EXPECT_EQ(pod.status.extended_resource_claim_status->resource_claim_name,
            "web-0-extended-resources-abcde");
  EXPECT_EQ(
      pod.status.extended_resource_claim_status->request_mappings,
      (std::vector<ContainerExtendedResourceRequest>{{.container_name = "app",
                                                      .resource_name = "example.com/gpu",
                                                      .request_name = "container-0-request-0"}}));
  EXPECT_EQ(pod.spec.scheduling_group, "train");
  EXPECT_FALSE(pod.meta.annotations.Contains("kubectl.kubernetes.io/last-applied-configuration"));
  EXPECT_EQ(pod.requests.milli_cpu, 260);  // 250m + 10m overhead.
  EXPECT_EQ(pod.requests.memory, int64_t{1} << 30);
}

TEST(ProtobufDecode, NodeBecomesTheJsonOfTheFieldsBerthReads) {
  Proto node;
  node.Message(1, Proto().Bytes(1, "node-1").Bytes(6, "7").Entry(11, "zone", "a"))
      .Message(2, Proto()
                      .Bytes(1, "10.0.0.0/24")
                      .Varint(4, 1)
                      .Message(5, Proto().Bytes(1, "gpu").Bytes(2, "true").Bytes(3, "NoSchedule")))
      .Message(3, Proto()
                      .QuantityEntry(1, "cpu", "4")
                      .QuantityEntry(2, "cpu", "3800m")
                      .QuantityEntry(2, "pods", "110")
                      .Bytes(3, "Running")
                      .Message(4, Proto().Bytes(1, "Ready").Bytes(2, "True"))
                      .Message(8, Proto().Bytes(1, "nginx:1").Bytes(1, "nginx@sha").Varint(2, 1000))
                      .Bytes(14, "VolumeBindMountOptions")
                      .Bytes(14, "RestartAllContainersOnContainerExits"));
  const json decoded = DecodeProtobufObject(node.Envelope("Node"));
  EXPECT_EQ(decoded, json::parse(R"json({
    "metadata": {"name": "node-1", "resourceVersion": "7", "labels": {"zone": "a"}},
    "spec": {"unschedulable": true,
             "taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]},
    "status": {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "3800m", "pods": "110"},
               "conditions": [{"type": "Ready", "status": "True"}],
               "images": [{"names": ["nginx:1", "nginx@sha"], "sizeBytes": 1000}],
               "declaredFeatures": ["VolumeBindMountOptions",
                                    "RestartAllContainersOnContainerExits"]}
  })json"))
      << decoded.dump(2);
  const Node decoded_node = DecodeNode(decoded);
  EXPECT_EQ(
      decoded_node.status.declared_features,
      (std::vector<std::string>{"VolumeBindMountOptions", "RestartAllContainersOnContainerExits"}));
  EXPECT_EQ(decoded_node.status.allocatable.milli_cpu, 3800);
  EXPECT_TRUE(decoded_node.spec.unschedulable);
}

TEST(ProtobufDecode, SkipsUnknownFieldsOfEveryWireType) {
  Proto meta = Proto().Bytes(1, "p");
  meta.Varint(1000, 5).Fixed64(1001).Fixed32(1002).Bytes(536870911, "far");
  const json decoded = DecodeProtobufObject(Proto().Message(1, meta).Envelope("Pod"));
  EXPECT_EQ(decoded, json::parse(R"({"metadata": {"name": "p"}})"));
}

TEST(ProtobufDecode, TimesAreRfc3339InUtcAndTheZeroTimeIsAbsent) {
  const auto created = [](const Proto& time) {
    const json decoded = DecodeProtobufObject(
        Proto().Message(1, Proto().Bytes(1, "p").Message(8, time)).Envelope("Pod"));
    return decoded["metadata"].value("creationTimestamp", "(absent)");
  };
  EXPECT_EQ(created(Proto()), "(absent)");
  EXPECT_EQ(created(Time(0)), "1970-01-01T00:00:00Z");
  EXPECT_EQ(created(Time(-1)), "1969-12-31T23:59:59Z");
  EXPECT_EQ(created(Time(951782400)), "2000-02-29T00:00:00Z");
  EXPECT_EQ(created(Time(4107542399)), "2100-02-28T23:59:59Z");
  EXPECT_EQ(created(Time(-62135596800)), "0001-01-01T00:00:00Z");
  EXPECT_EQ(created(Time(253402300799)), "9999-12-31T23:59:59Z");
  EXPECT_THROW(created(Time(253402300800)), DecodeError);
}

// The message of the DecodeError `body` raises.
std::string ErrorOf(const std::string& body) {
  try {
    DecodeProtobufObject(body);
  } catch (const DecodeError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ProtobufDecode, MalformedBodiesNameTheFieldAndTheProblem) {
  const Proto containers = Proto()
                               .Message(2, Proto().Bytes(1, "ok"))
                               .Message(2, Proto().Varint(1, 7));  // name as a varint.
  EXPECT_EQ(ErrorOf(Proto().Message(2, containers).Envelope("Pod")),
            "spec.containers[1].name: malformed protobuf: varint value, expected "
            "length-delimited");
  EXPECT_EQ(ErrorOf(Proto().Message(1, Proto().Bytes(1, "\xff")).Envelope("Pod")),
            "metadata.name: invalid UTF-8 in a string");
  EXPECT_EQ(ErrorOf(Proto().Message(1, Proto().Raw("\x0a\x05na")).Envelope("Pod")),
            "metadata: malformed protobuf: message ends inside a field");
  EXPECT_EQ(ErrorOf(Proto().Message(1, Proto().Raw(std::string(11, '\xff'))).Envelope("Pod")),
            "metadata: malformed protobuf: varint longer than 10 bytes");
  EXPECT_EQ(ErrorOf(Proto().Message(1, Proto().Raw("\x0b")).Envelope("Pod")),
            "metadata: malformed protobuf: unsupported wire type 3 for field 1");
  EXPECT_EQ(ErrorOf(Proto().Message(1, Proto().Bytes(1, "p")).str()),
            "(object): not a Kubernetes protobuf object (the \"k8s\\0\" prefix is missing)");
  EXPECT_EQ(ErrorOf(Proto().Envelope("ConfigMap")),
            "(object): no protobuf decoding for kind \"ConfigMap\"");
  const std::string gzip =
      std::string("k8s\0", 4) +
      Proto().Message(1, Proto().Bytes(2, "Pod")).Bytes(2, "").Bytes(3, "gzip").str();
  EXPECT_EQ(ErrorOf(gzip), "(object): unsupported protobuf content encoding \"gzip\"");
}

TEST(ProtobufWatch, EventsCarryTheirTypeAndDecodedObject) {
  const Proto pod = Proto().Message(1, Proto().Bytes(1, "p").Bytes(6, "9"));
  const Proto added = Proto().Bytes(1, "ADDED").Message(2, Proto().Bytes(1, pod.Envelope("Pod")));
  const ParsedWatchEvent event = ParseProtobufWatchEvent(added.str());
  EXPECT_EQ(event.type, "ADDED");
  ASSERT_TRUE(event.has_object);
  EXPECT_EQ(event.object, json::parse(R"({"metadata": {"name": "p", "resourceVersion": "9"}})"));

  const Proto gone = Proto()
                         .Bytes(2, "Failure")
                         .Bytes(3, "too old")
                         .Bytes(4, "Expired")
                         .Message(5, Proto().Varint(5, 2))
                         .Varint(6, 410);
  const ParsedWatchEvent error = ParseProtobufWatchEvent(
      Proto().Bytes(1, "ERROR").Message(2, Proto().Bytes(1, gone.Envelope("Status"))).str());
  EXPECT_EQ(error.type, "ERROR");
  EXPECT_EQ(error.object, json::parse(R"({"status": "Failure", "message": "too old",
      "reason": "Expired", "details": {"retryAfterSeconds": 2}, "code": 410})"));

  const Proto bad = Proto().Message(1, Proto().Varint(1, 1));
  try {
    ParseProtobufWatchEvent(
        Proto().Bytes(1, "ADDED").Message(2, Proto().Bytes(1, bad.Envelope("Pod"))).str());
    FAIL() << "no error";
  } catch (const DecodeError& e) {
    EXPECT_EQ(e.field(), "object.metadata.name");
  }
}

TEST(ProtobufWatch, PodsAreLeftUndecodedWhenAskedFor) {
  const auto event_of = [](std::string_view type, const Proto& object, std::string_view kind) {
    return Proto().Bytes(1, type).Message(2, Proto().Bytes(1, object.Envelope(kind))).str();
  };
  for (const char* type : {"ADDED", "MODIFIED", "DELETED"}) {
    const ParsedWatchEvent event = ParseProtobufWatchEvent(event_of(type, RichPod(), "Pod"), true);
    EXPECT_EQ(event.type, type);
    EXPECT_TRUE(event.has_object);
    EXPECT_TRUE(event.object.is_null());
    EXPECT_EQ(event.protobuf_pod, RichPod().str());
    EXPECT_EQ(ProtobufPodToJson(event.protobuf_pod), kRichPodJson);
  }
  // Bookmarks, errors and other kinds are decoded as always.
  const Proto bookmark = Proto().Message(1, Proto().Bytes(1, "").Bytes(6, "12"));
  const ParsedWatchEvent marked =
      ParseProtobufWatchEvent(event_of("BOOKMARK", bookmark, "Pod"), true);
  EXPECT_TRUE(marked.protobuf_pod.empty());
  EXPECT_EQ(marked.object["metadata"]["resourceVersion"], "12");
  const Proto node = Proto().Message(1, Proto().Bytes(1, "n"));
  const ParsedWatchEvent node_added =
      ParseProtobufWatchEvent(event_of("ADDED", node, "Node"), true);
  EXPECT_TRUE(node_added.protobuf_pod.empty());
  EXPECT_EQ(node_added.object["metadata"]["name"], "n");
  // Not asked for: decoded.
  const ParsedWatchEvent decoded = ParseProtobufWatchEvent(event_of("ADDED", RichPod(), "Pod"));
  EXPECT_TRUE(decoded.protobuf_pod.empty());
  EXPECT_EQ(decoded.object, kRichPodJson);
}

Proto PodList(int items) {
  Proto list;
  list.Message(1, Proto().Bytes(1, "").Bytes(2, "100").Bytes(3, "next-page"));
  for (int i = 0; i < items; ++i) {
    list.Message(2, Proto().Message(1, Proto().Bytes(1, "pod-" + std::to_string(i))));
  }
  return list;
}

std::vector<std::string> NamesFed(const std::string& body, size_t piece, ListMeta* meta) {
  std::vector<std::string> names;
  ProtobufListParser parser(
      [&](json& item) { names.push_back(item["metadata"]["name"].get<std::string>()); });
  for (size_t at = 0; at < body.size(); at += piece) {
    parser.Feed(std::string_view(body).substr(at, piece));
  }
  *meta = parser.Finish();
  return names;
}

TEST(ProtobufList, DeliversEveryItemAndTheMetadataForAnyPieceSize) {
  const std::string body = PodList(5).Envelope("PodList");
  for (size_t piece : {size_t{1}, size_t{2}, size_t{7}, size_t{64}, body.size()}) {
    ListMeta meta;
    EXPECT_EQ(NamesFed(body, piece, &meta),
              (std::vector<std::string>{"pod-0", "pod-1", "pod-2", "pod-3", "pod-4"}))
        << "piece " << piece;
    EXPECT_EQ(meta.resource_version, "100");
    EXPECT_EQ(meta.continue_token, "next-page");
  }
}

TEST(ProtobufList, DecodesItemsBeforeTheBodyEnds) {
  const std::string body = PodList(3).Envelope("PodList");
  std::vector<std::string> names;
  ProtobufListParser parser(
      [&](json& item) { names.push_back(item["metadata"]["name"].get<std::string>()); });
  // Everything but the envelope's two trailing empty strings (4 bytes).
  parser.Feed(std::string_view(body).substr(0, body.size() - 4));
  EXPECT_EQ(names.size(), 3u);
  parser.Feed(std::string_view(body).substr(body.size() - 4));
  EXPECT_EQ(parser.Finish().resource_version, "100");
}

TEST(ProtobufList, RejectsTruncatedAndMisshapenBodies) {
  const auto finish = [](const std::string& body) {
    ProtobufListParser parser([](json&) {});
    parser.Feed(body);
    parser.Finish();
  };
  const std::string body = PodList(2).Envelope("PodList");
  for (size_t cut : {size_t{0}, size_t{3}, size_t{10}, body.size() / 2, body.size() - 5}) {
    EXPECT_THROW(finish(body.substr(0, cut)), DecodeError) << "cut at " << cut;
  }
  EXPECT_NO_THROW(finish(body));
  EXPECT_THROW(finish(PodList(1).Envelope("Pod")), DecodeError);  // Not a list kind.
  const std::string no_kind = std::string("k8s\0", 4) + Proto().Bytes(2, PodList(1).str()).str();
  EXPECT_THROW(finish(no_kind), DecodeError);
  // An item that overruns the list it is in.
  const std::string overrun = std::string("k8s\0", 4) + Proto()
                                                            .Message(1, Proto().Bytes(2, "PodList"))
                                                            .Bytes(2, "\x12\x09\x0a\x01")
                                                            .Bytes(3, "")
                                                            .str();
  EXPECT_THROW(finish(overrun), DecodeError);
  // The object's field as a varint after an empty one, or twice: DecodeProtobufObject rejects
  // both, and so does the list parser (found by fuzzing, corpus protobuf_list/crash-raw-as-varint).
  const std::string header =
      std::string("k8s\0", 4) + Proto().Message(1, Proto().Bytes(2, "PodList")).str();
  const std::string list = PodList(1).str();
  for (const std::string& envelope : {header + Proto().Bytes(2, "").Varint(2, 0).str(),
                                      header + Proto().Bytes(2, list).Bytes(2, list).str()}) {
    EXPECT_THROW(finish(envelope), DecodeError);
    EXPECT_THROW(DecodeProtobufObject(envelope), DecodeError);
  }
}

TEST(ProtobufMediaType, RecognizesTheKubernetesProtobufTypeOnly) {
  EXPECT_TRUE(IsProtobufMediaType("application/vnd.kubernetes.protobuf"));
  EXPECT_TRUE(IsProtobufMediaType("application/vnd.kubernetes.protobuf;stream=watch"));
  EXPECT_TRUE(IsProtobufMediaType("Application/Vnd.Kubernetes.Protobuf ; stream=watch"));
  EXPECT_FALSE(IsProtobufMediaType("application/json"));
  EXPECT_FALSE(IsProtobufMediaType(""));
  EXPECT_FALSE(IsProtobufMediaType("application/vnd.kubernetes.protobuf+json"));
}

TEST(ProtobufList, NewListDecoderFollowsTheContentType) {
  std::vector<std::string> names;
  const auto collect = [&](json& item) {
    names.push_back(item["metadata"]["name"].get<std::string>());
  };
  auto protobuf = NewListDecoder("application/vnd.kubernetes.protobuf", collect);
  protobuf->Feed(PodList(1).Envelope("PodList"));
  EXPECT_EQ(protobuf->Finish().resource_version, "100");
  auto json_decoder = NewListDecoder("application/json", collect);
  json_decoder->Feed(R"({"metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"j"}}]})");
  EXPECT_EQ(json_decoder->Finish().resource_version, "5");
  EXPECT_EQ(names, (std::vector<std::string>{"pod-0", "j"}));
}

}  // namespace
}  // namespace berth::api
