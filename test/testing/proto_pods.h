#ifndef BERTH_TEST_TESTING_PROTO_PODS_H_
#define BERTH_TEST_TESTING_PROTO_PODS_H_

// Pods in the apiserver's protobuf encoding, shared by the protobuf decoder tests.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "test/testing/proto_writer.h"

namespace berth::testing {

inline Proto Time(int64_t seconds) { return Proto().Varint(1, static_cast<uint64_t>(seconds)); }

inline Proto Requirement(std::string_view key, std::string_view op,
                         const std::vector<std::string>& values) {
  Proto r;
  r.Bytes(1, key).Bytes(2, op);
  for (const std::string& value : values) r.Bytes(3, value);
  return r;
}

// A pod using every field Berth reads, with fields it skips mixed in, as Go would marshal it
// (non-pointer scalars written even when empty).
inline Proto RichPod() {
  Proto meta;
  meta.Bytes(1, "web-0")
      .Bytes(2, "web-")
      .Bytes(3, "shop")
      .Bytes(4, "")
      .Bytes(5, "uid-1")
      .Bytes(6, "42")
      .Varint(7, 3)
      .Message(8, Time(1714557600))
      .Message(9, Time(1714557660))
      .Entry(11, "app", "web")
      .Entry(11, "tier", "front")
      .Entry(12, "note", "kept")
      .Entry(12, "kubectl.kubernetes.io/last-applied-configuration", "{\"huge\":true}")
      .Message(13, Proto()
                       .Bytes(1, "StatefulSet")
                       .Bytes(3, "web")
                       .Bytes(4, "uid-0")
                       .Bytes(5, "apps/v1")
                       .Varint(6, 1)
                       .Varint(7, 1))
      .Message(17, Proto().Bytes(1, "kubectl").Bytes(2, "Apply"));

  Proto main_container;
  main_container.Bytes(1, "app")
      .Bytes(2, "nginx:1")
      .Bytes(3, "/bin/sh")
      .Message(6, Proto().Bytes(1, "http").Varint(2, 8080).Varint(3, 80).Bytes(4, "TCP").Bytes(
                      5, "10.0.0.1"))
      .Message(7, Proto().Bytes(1, "ENV").Bytes(2, "value"))
      .Message(8, Proto()
                      .QuantityEntry(1, "cpu", "1")
                      .QuantityEntry(2, "cpu", "250m")
                      .QuantityEntry(2, "memory", "64Mi"))
      .Message(10, Proto().Varint(2, 5));
  Proto sidecar;
  sidecar.Bytes(1, "proxy").Bytes(2, "envoy").Message(8, Proto()).Bytes(24, "Always");

  Proto affinity;
  affinity
      .Message(
          1,
          Proto()
              .Message(1, Proto().Message(
                              1, Proto()
                                     .Message(1, Requirement("zone", "In", {"a", "b"}))
                                     .Message(2, Requirement("metadata.name", "In", {"node-1"}))))
              .Message(2, Proto().Varint(1, 10).Message(
                              2, Proto().Message(1, Requirement("disk", "Gt", {"5"})))))
      .Message(
          2,
          Proto().Message(1,
                          Proto()
                              .Message(1, Proto().Entry(1, "app", "db"))
                              .Bytes(2, "shop")
                              .Bytes(3, "kubernetes.io/hostname")
                              .Message(4, Proto().Message(2, Requirement("team", "Exists", {})))
                              .Bytes(5, "pod-template-hash")
                              .Bytes(6, "tenant")))
      .Message(3, Proto().Message(
                      2, Proto().Varint(1, 50).Message(2, Proto().Bytes(3, "zone").Message(
                                                              1, Proto().Entry(1, "app", "web")))));

  Proto spec;
  spec.Message(1, Proto().Bytes(1, "data").Message(
                      2, Proto().Message(10, Proto().Bytes(1, "data-web-0").Varint(2, 1))))
      .Message(1, Proto().Bytes(1, "tmp").Message(2, Proto().Message(2, Proto().Bytes(1, "x"))))
      .Message(2, main_container)
      .Bytes(3, "Always")
      .Entry(7, "disk", "ssd")
      .Bytes(10, "")
      .Varint(11, 0)
      .Message(14, Proto().Varint(1, 1000))
      .Message(18, affinity)
      .Bytes(19, "berth-scheduler")
      .Message(20, sidecar)
      .Message(22, Proto()
                       .Bytes(1, "dedicated")
                       .Bytes(2, "Equal")
                       .Bytes(3, "web")
                       .Bytes(4, "NoExecute")
                       .Varint(5, 300))
      .Bytes(24, "high")
      .Varint(25, static_cast<uint64_t>(int64_t{-5}))
      .Bytes(31, "Never")
      .QuantityEntry(32, "cpu", "10m")
      .Message(33, Proto()
                       .Varint(1, 2)
                       .Bytes(2, "zone")
                       .Bytes(3, "ScheduleAnyway")
                       .Message(4, Proto().Entry(1, "app", "web"))
                       .Varint(5, 3)
                       .Bytes(6, "Ignore")
                       .Bytes(7, "Honor")
                       .Bytes(8, "pod-template-hash"))
      .Message(38, Proto().Bytes(1, "wait"))
      .Message(39, Proto().Bytes(1, "gpu").Bytes(4, "web-gpu"))
      .Message(39, Proto().Bytes(1, "license").Bytes(3, "shared-license"))
      .Message(40, Proto().QuantityEntry(2, "memory", "1Gi"))
      .Message(43, Proto().Bytes(1, "train"));

  Proto status;
  status.Bytes(1, "Pending")
      .Message(2, Proto()
                      .Bytes(1, "PodScheduled")
                      .Bytes(2, "False")
                      .Message(4, Time(1714557600))
                      .Bytes(5, "Unschedulable")
                      .Bytes(6, "0/3 nodes"))
      .Message(2, Proto()
                      .Bytes(1, "DisruptionTarget")
                      .Bytes(2, "True")
                      .Bytes(5, "PreemptionByScheduler")
                      .Bytes(6, "berth-scheduler: preempting"))
      .Message(7, Time(1714557660))
      .Message(8, Proto().Bytes(1, "app"))
      .Bytes(11, "node-2")
      .Message(15, Proto().Bytes(1, "gpu").Bytes(2, "web-0-gpu-x7k2p"))
      .Message(15, Proto().Bytes(1, "license"))
      .Message(18, Proto()
                       .Message(1, Proto()
                                       .Bytes(1, "app")
                                       .Bytes(2, "example.com/gpu")
                                       .Bytes(3, "container-0-request-0"))
                       .Bytes(2, "web-0-extended-resources-abcde"));

  return Proto().Message(1, meta).Message(2, spec).Message(3, status);
}

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_PROTO_PODS_H_
