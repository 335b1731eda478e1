#include "pkg/api/requests.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/api/types.h"

namespace berth::api {
namespace {

constexpr int64_t kMi = int64_t{1024} * 1024;
constexpr int64_t kGi = 1024 * kMi;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// A container requesting the given resources; a name of "cpu" or "memory" also marks the
// request as explicitly stated, as decoding does.
Container Make(std::initializer_list<std::pair<const char*, int64_t>> requests,
               bool restartable = false) {
  Container c;
  for (const auto& [name, amount] : requests) {
    c.resources.requests.Set(name, amount);
    if (std::string(name) == "cpu") {
      c.resources.has_cpu_request = true;
    }
    if (std::string(name) == "memory") {
      c.resources.has_memory_request = true;
    }
  }
  c.restartable = restartable;
  return c;
}

Container Sidecar(std::initializer_list<std::pair<const char*, int64_t>> requests) {
  return Make(requests, true);
}

Pod Compute(std::vector<Container> containers, std::vector<Container> init_containers = {}) {
  Pod pod;
  pod.spec.containers = std::move(containers);
  pod.spec.init_containers = std::move(init_containers);
  ComputePodRequests(pod);
  return pod;
}

TEST(PodRequestsTest, SumsContainers) {
  Pod pod = Compute({Make({{"cpu", 100}, {"memory", 100 * kMi}, {"example.com/nic", 1}}),
                     Make({{"cpu", 250}, {"memory", 50 * kMi}, {"example.com/nic", 2}})});
  EXPECT_EQ(pod.requests.milli_cpu, 350);
  EXPECT_EQ(pod.requests.memory, 150 * kMi);
  EXPECT_EQ(pod.requests.Get("example.com/nic"), 3);
  EXPECT_EQ(pod.non_zero_milli_cpu, 350);
  EXPECT_EQ(pod.non_zero_memory, 150 * kMi);
}

TEST(PodRequestsTest, LargerInitContainerWins) {
  Pod pod = Compute({Make({{"cpu", 500}, {"memory", 100 * kMi}})},
                    {Make({{"cpu", 2000}, {"memory", 50 * kMi}, {"nvidia.com/gpu", 1}}),
                     Make({{"cpu", 300}, {"memory", kGi}})});
  EXPECT_EQ(pod.requests.milli_cpu, 2000);
  EXPECT_EQ(pod.requests.memory, kGi);
  EXPECT_EQ(pod.requests.Get("nvidia.com/gpu"), 1);
  EXPECT_EQ(pod.non_zero_milli_cpu, 2000);
  EXPECT_EQ(pod.non_zero_memory, kGi);
}

TEST(PodRequestsTest, SmallerInitContainersDoNotAdd) {
  Pod pod = Compute({Make({{"cpu", 500}}), Make({{"cpu", 500}})}, {Make({{"cpu", 800}})});
  EXPECT_EQ(pod.requests.milli_cpu, 1000);
}

TEST(PodRequestsTest, SidecarBeforeInitContainer) {
  // Sidecar 1 cpu, then init 2 cpu, then the 1 cpu app: the init container runs next to the
  // sidecar (1 + 2 = 3), the app next to the sidecar (1 + 1 = 2), so the pod needs 3.
  Pod pod = Compute({Make({{"cpu", 1000}})}, {Sidecar({{"cpu", 1000}}), Make({{"cpu", 2000}})});
  EXPECT_EQ(pod.requests.milli_cpu, 3000);
}

TEST(PodRequestsTest, SidecarAfterInitContainer) {
  // The init container finishes before the sidecar starts: max(2, 1 + 1) = 2.
  Pod pod = Compute({Make({{"cpu", 1000}})}, {Make({{"cpu", 2000}}), Sidecar({{"cpu", 1000}})});
  EXPECT_EQ(pod.requests.milli_cpu, 2000);
}

TEST(PodRequestsTest, SidecarsAccumulate) {
  // Running total 1 + 1 + 2 = 4; init containers see 1 + 2 + 3 = 6 at their peak.
  Pod pod = Compute(
      {Make({{"cpu", 1000}, {"memory", 64 * kMi}})},
      {Sidecar({{"cpu", 1000}, {"memory", 32 * kMi}}), Make({{"cpu", 500}, {"memory", 512 * kMi}}),
       Sidecar({{"cpu", 2000}, {"memory", 32 * kMi}}), Make({{"cpu", 3000}})});
  EXPECT_EQ(pod.requests.milli_cpu, 6000);
  // Memory: total 64 + 32 + 32 = 128; the first init sees 32 + 512 = 544.
  EXPECT_EQ(pod.requests.memory, 544 * kMi);
}

TEST(PodRequestsTest, OnlySidecars) {
  Pod pod = Compute({}, {Sidecar({{"cpu", 100}}), Sidecar({{"cpu", 200}})});
  EXPECT_EQ(pod.requests.milli_cpu, 300);
  EXPECT_EQ(pod.non_zero_milli_cpu, 300);
  // Neither sidecar states memory, so each counts the default.
  EXPECT_EQ(pod.non_zero_memory, 2 * kDefaultMemoryRequest);
}

TEST(PodRequestsTest, OverheadIsAdded) {
  Pod pod;
  pod.spec.containers = {Make({{"cpu", 250}, {"memory", 256 * kMi}})};
  pod.spec.init_containers = {Make({{"cpu", 1000}})};
  pod.spec.overhead.Set("cpu", 100);
  pod.spec.overhead.Set("memory", 64 * kMi);
  pod.spec.overhead.Set("example.com/sandbox", 1);
  ComputePodRequests(pod);
  EXPECT_EQ(pod.requests.milli_cpu, 1100);
  EXPECT_EQ(pod.requests.memory, 320 * kMi);
  EXPECT_EQ(pod.requests.Get("example.com/sandbox"), 1);
  EXPECT_EQ(pod.non_zero_milli_cpu, 1100);
  EXPECT_EQ(pod.non_zero_memory, 320 * kMi);
}

TEST(PodRequestsTest, PodLevelResourcesOverride) {
  Pod pod;
  pod.spec.containers = {Make({{"cpu", 500}, {"memory", kGi}, {"ephemeral-storage", 10}})};
  ResourceRequirements pod_level;
  pod_level.requests.Set("cpu", 2000);
  pod_level.has_cpu_request = true;
  pod.spec.resources = pod_level;
  pod.spec.overhead.Set("cpu", 100);
  ComputePodRequests(pod);
  EXPECT_EQ(pod.requests.milli_cpu, 2100);
  EXPECT_EQ(pod.requests.memory, kGi);
  EXPECT_EQ(pod.requests.ephemeral_storage, 10);
  EXPECT_EQ(pod.non_zero_milli_cpu, 2100);
  EXPECT_EQ(pod.non_zero_memory, kGi);

  pod.spec.resources->requests.Set("memory", 3 * kGi);
  pod.spec.resources->has_memory_request = true;
  ComputePodRequests(pod);
  EXPECT_EQ(pod.requests.memory, 3 * kGi);
  EXPECT_EQ(pod.non_zero_memory, 3 * kGi);
}

TEST(PodRequestsTest, PodLevelResourcesCoverContainersWithoutRequests) {
  Pod pod;
  pod.spec.containers = {Make({}), Make({})};
  ResourceRequirements pod_level;
  pod_level.requests.Set("cpu", 700);
  pod_level.requests.Set("memory", 300 * kMi);
  pod_level.has_cpu_request = true;
  pod_level.has_memory_request = true;
  pod.spec.resources = pod_level;
  ComputePodRequests(pod);
  EXPECT_EQ(pod.requests.milli_cpu, 700);
  EXPECT_EQ(pod.requests.memory, 300 * kMi);
  EXPECT_EQ(pod.non_zero_milli_cpu, 700);
  EXPECT_EQ(pod.non_zero_memory, 300 * kMi);
}

TEST(PodRequestsTest, NonZeroDefaults) {
  Pod none = Compute({Make({})});
  EXPECT_TRUE(none.requests.IsZero());
  EXPECT_EQ(none.non_zero_milli_cpu, kDefaultMilliCPURequest);
  EXPECT_EQ(none.non_zero_memory, kDefaultMemoryRequest);
  EXPECT_EQ(none.non_zero_milli_cpu, 100);
  EXPECT_EQ(none.non_zero_memory, 200 * kMi);

  // An explicit zero is a request: it stays zero.
  Pod zero = Compute({Make({{"cpu", 0}, {"memory", 0}})});
  EXPECT_EQ(zero.non_zero_milli_cpu, 0);
  EXPECT_EQ(zero.non_zero_memory, 0);

  Pod mixed = Compute({Make({{"cpu", 50}}), Make({}), Make({{"memory", 10 * kMi}})});
  EXPECT_EQ(mixed.requests.milli_cpu, 50);
  EXPECT_EQ(mixed.requests.memory, 10 * kMi);
  EXPECT_EQ(mixed.non_zero_milli_cpu, 50 + 100 + 100);
  EXPECT_EQ(mixed.non_zero_memory, 200 * kMi + 200 * kMi + 10 * kMi);

  // An init container without requests counts the defaults in its turn.
  Pod init = Compute({Make({{"cpu", 50}, {"memory", 10 * kMi}})}, {Make({})});
  EXPECT_EQ(init.requests.milli_cpu, 50);
  EXPECT_EQ(init.non_zero_milli_cpu, 100);
  EXPECT_EQ(init.non_zero_memory, 200 * kMi);

  Pod empty = Compute({});
  EXPECT_EQ(empty.non_zero_milli_cpu, 0);
  EXPECT_EQ(empty.non_zero_memory, 0);
}

TEST(PodRequestsTest, HostPorts) {
  Pod pod;
  Container web = Make({});
  web.ports = {{80, 8080, "TCP", ""}, {443, 0, "TCP", ""}, {53, 53, "UDP", "10.0.0.1"}};
  Container init = Make({});
  init.ports = {{9000, 9000, "TCP", ""}};
  pod.spec.containers = {web, Make({})};
  pod.spec.init_containers = {init};
  ComputePodRequests(pod);
  ASSERT_EQ(pod.host_ports.size(), 3u);
  EXPECT_EQ(pod.host_ports[0].host_port, 8080);
  EXPECT_EQ(pod.host_ports[0].container_port, 80);
  EXPECT_EQ(pod.host_ports[1].host_port, 53);
  EXPECT_EQ(pod.host_ports[1].protocol, "UDP");
  EXPECT_EQ(pod.host_ports[1].host_ip, "10.0.0.1");
  EXPECT_EQ(pod.host_ports[2].host_port, 9000);

  // Recomputing replaces, never appends.
  ComputePodRequests(pod);
  EXPECT_EQ(pod.host_ports.size(), 3u);
}

TEST(PodRequestsTest, FromDecodedPod) {
  Pod pod = DecodePod(nlohmann::json::parse(R"({
    "metadata": {"name": "p", "namespace": "ns"},
    "spec": {
      "initContainers": [
        {"name": "proxy", "restartPolicy": "Always",
         "resources": {"requests": {"cpu": "1", "memory": "64Mi"}}},
        {"name": "migrate", "resources": {"requests": {"cpu": "2", "memory": "128Mi"}},
         "ports": [{"containerPort": 7000, "hostPort": 7000}]}
      ],
      "containers": [
        {"name": "app", "resources": {"requests": {"cpu": "1"}},
         "ports": [{"containerPort": 8080, "hostPort": 80, "protocol": "TCP"},
                   {"containerPort": 9090}]}
      ],
      "overhead": {"cpu": "250m", "memory": "120Mi"}
    }})"));
  ASSERT_EQ(pod.spec.init_containers.size(), 2u);
  EXPECT_TRUE(pod.spec.init_containers[0].restartable);
  EXPECT_FALSE(pod.spec.init_containers[1].restartable);
  EXPECT_EQ(pod.requests.milli_cpu, 3250);
  // Containers 0 + sidecar 64Mi = 64Mi; the init container sees 64 + 128 = 192Mi.
  EXPECT_EQ(pod.requests.memory, (192 + 120) * kMi);
  EXPECT_EQ(pod.non_zero_milli_cpu, 3250);
  // The app states no memory and counts 200Mi: 64 + 200 = 264Mi beats 192Mi.
  EXPECT_EQ(pod.non_zero_memory, (264 + 120) * kMi);
  ASSERT_EQ(pod.host_ports.size(), 2u);
  EXPECT_EQ(pod.host_ports[0].host_port, 80);
  EXPECT_EQ(pod.host_ports[1].host_port, 7000);
  EXPECT_EQ(pod.host_ports[1].protocol, "TCP");
}

TEST(ResourceSumTest, ScalarEntriesComeAndGoWithTheirPods) {
  ResourceList a;
  a.Set("example.com/b", 2);
  a.Set("example.com/a", 1);
  ResourceList b;
  b.Set("example.com/c", kMax);
  b.Set("example.com/a", kMax);
  ResourceSum sum;
  sum.Add(a);
  sum.Add(b);
  std::vector<std::pair<std::string, int64_t>> both = {
      {"example.com/a", kMax}, {"example.com/b", 2}, {"example.com/c", kMax}};
  EXPECT_EQ(sum.clamped().scalar, both);
  sum.Subtract(b);
  EXPECT_EQ(sum.clamped(), a);
  sum.Subtract(a);
  EXPECT_TRUE(sum.IsZero());
  EXPECT_EQ(sum.clamped(), ResourceList{});
}

TEST(ResourceSumTest, SumsBeyondInt64ReadSaturatedAndStayExact) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  ResourceList huge;
  huge.memory = kMax;
  huge.milli_cpu = kMin;
  ResourceSum sum;
  sum.Add(huge);
  sum.Add(huge);
  sum.Add(huge);
  EXPECT_EQ(sum.clamped().memory, kMax);
  EXPECT_EQ(sum.clamped().milli_cpu, kMin);
  sum.Subtract(huge);
  sum.Subtract(huge);
  EXPECT_EQ(sum.clamped().memory, kMax);
  EXPECT_EQ(sum.clamped().milli_cpu, kMin);
  sum.Subtract(huge);
  EXPECT_TRUE(sum.IsZero());
  EXPECT_EQ(ClampToInt64(static_cast<WideInt>(kMax) * 4), kMax);
  EXPECT_EQ(ClampToInt64(-static_cast<WideInt>(kMax) * 4), kMin);
  EXPECT_EQ(ClampToInt64(-5), -5);
}

}  // namespace
}  // namespace berth::api
