// Differential test of the default profile's scores against kube-scheduler: pools of two nodes
// whose pods (bound before either scheduler runs) leave them used unevenly, and one pod per pool
// that selects the pool, placed first by kube-scheduler (the pinned release) in one namespace,
// then, once those pods are gone, by berth-scheduler in another. Each pool is built so that the
// two nodes' scores differ by several points (NodeResourcesFit's LeastAllocated plus
// NodeResourcesBalancedAllocation; every other plugin scores them alike), so the pod's node is
// decided, not a tie: both schedulers must choose the same node in every pool.
//
// Most pools are ones where BalancedAllocation's v1.37 score (the change in balance the pod
// brings) and the older one (the balance with the pod alone) choose different nodes; the model
// below computes v1.37's choice, and kube-scheduler's choices are checked against it first.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "e2e/diff.h"
#include "e2e/harness.h"
#include "pkg/client/client.h"
#include "test/testing/cluster.h"
#include "test/testing/kube_scheduler.h"

namespace berth::e2e {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kPoolLabel = "berth-diff-pool";
constexpr int64_t kNodeMilliCpu = 4000;
constexpr int64_t kNodeMemoryMi = 8192;
constexpr int64_t kPodMilliCpu = 500;
constexpr int64_t kPodMemoryMi = 1024;

// What the pods already bound to a node request.
struct Use {
  int64_t milli_cpu;
  int64_t memory_mi;
};

struct Pool {
  std::string name;
  Use a, b;
};

// The pools: the first five are cases where the two formulas disagree, the last one where they
// agree.
const std::vector<Pool> kPools = {
    {"p0", {2500, 5120}, {3000, 512}},  {"p1", {250, 6144}, {2250, 4608}},
    {"p2", {2000, 4096}, {2750, 512}},  {"p3", {1750, 3584}, {2500, 512}},
    {"p4", {2500, 4608}, {3000, 1024}}, {"p5", {250, 512}, {250, 2560}},
};

// kube-scheduler v1.37's NodeResourcesFit (LeastAllocated, cpu and memory of weight 1) plus
// NodeResourcesBalancedAllocation for the pod on a node used `use`, in its integer arithmetic.
int64_t ModelScore(const Use& use) {
  const int64_t cpu = use.milli_cpu + kPodMilliCpu;
  const int64_t memory = use.memory_mi + kPodMemoryMi;
  const int64_t least = ((kNodeMilliCpu - cpu) * 100 / kNodeMilliCpu +
                         (kNodeMemoryMi - memory) * 100 / kNodeMemoryMi) /
                        2;
  auto balance = [](int64_t c, int64_t m) {
    const double fc = std::min(1.0, static_cast<double>(c) / kNodeMilliCpu);
    const double fm = std::min(1.0, static_cast<double>(m) / kNodeMemoryMi);
    return static_cast<int64_t>((1 - std::abs(fc - fm) / 2) * 100);
  };
  const int64_t with = balance(cpu, memory);
  const int64_t without = balance(use.milli_cpu, use.memory_mi);
  return least + 50 + (50 + with - without) / 2;
}

// The node ("a" or "b") v1.37 puts the pool's pod on.
std::string ModelChoice(const Pool& pool) {
  return ModelScore(pool.a) > ModelScore(pool.b) ? "a" : "b";
}

// Each pool's pod, created one at a time and settled before the next: pool -> node ("a", "b", or
// "" when not bound).
std::map<std::string, std::string> Place(client::Client& client, const std::string& ns,
                                         const std::string& scheduler, const std::string& id,
                                         const std::function<std::string()>& log) {
  const std::string path = client::PodsResource().Path(ns);
  std::map<std::string, std::string> out;
  for (const Pool& pool : kPools) {
    json pod =
        testing::PodManifest(ns, "pod-" + pool.name, scheduler, std::to_string(kPodMilliCpu) + "m",
                             std::to_string(kPodMemoryMi) + "Mi");
    pod["spec"]["nodeSelector"] = {{"berth-it", id}, {kPoolLabel, pool.name}};
    client.Post(path, pod);
    json got;
    if (!testing::Eventually(
            [&] {
              got = client.Get(path + "/pod-" + pool.name);
              return Settled(got);
            },
            60s)) {
      ADD_FAILURE() << scheduler << " did not settle pod-" << pool.name << "; its log:\n" << log();
      break;
    }
    const std::string node = got["spec"].value("nodeName", "");
    out[pool.name] = node.empty() ? "" : node.substr(node.size() - 1);
  }
  return out;
}

TEST(ScoringDiffE2E, UnevenlyUsedNodesGetThePodKubeSchedulerChooses) {
  const std::string binary = testing::KubeSchedulerBinary();
  auto admin = testing::AdminClient();
  testing::TestNodes nodes(admin);
  for (const Pool& pool : kPools) {
    for (const char* side : {"a", "b"}) {
      nodes.Add(pool.name + "-" + side, std::to_string(kNodeMilliCpu) + "m",
                std::to_string(kNodeMemoryMi) + "Mi",
                [&](json& node) { node["metadata"]["labels"][kPoolLabel] = pool.name; });
    }
  }
  // The pods that use the nodes, bound by name: neither scheduler places them.
  testing::TestNamespace used_ns(admin, "e2e-score-used");
  std::vector<json> used;
  for (const Pool& pool : kPools) {
    for (const auto& [side, use] : {std::pair{"a", pool.a}, std::pair{"b", pool.b}}) {
      json pod = testing::PodManifest(used_ns.name(), "use-" + pool.name + "-" + side, "nobody",
                                      std::to_string(use.milli_cpu) + "m",
                                      std::to_string(use.memory_mi) + "Mi");
      pod["spec"]["nodeName"] = nodes.id() + "-" + pool.name + "-" + side;
      used.push_back(pod);
    }
  }
  testing::CreateMany(*admin, client::PodsResource().Path(used_ns.name()),
                      static_cast<int>(used.size()),
                      [&](int i) { return used[static_cast<size_t>(i)]; });
  const fs::path dir = fs::temp_directory_path() / ("berth-scoring-diff-" + nodes.id());
  fs::create_directories(dir);

  testing::TestNamespace kube_ns(admin, "e2e-score-kube");
  std::map<std::string, std::string> kube;
  {
    const std::string scheduler = "diff-kube-scheduler-" + nodes.id();
    testing::KubeSchedulerProcess ks(KubeSchedulerDiffConfig(scheduler), dir / "kube-scheduler");
    ASSERT_TRUE(ks.WaitReady(60s)) << "kube-scheduler (" << binary << ") did not become ready:\n"
                                   << ks.process().Log();
    kube = Place(*admin, kube_ns.name(), scheduler, nodes.id(), [&] { return ks.process().Log(); });
  }
  DeletePods(*admin, kube_ns.name());

  testing::TestNamespace berth_ns(admin, "e2e-score-berth");
  std::map<std::string, std::string> berth;
  {
    const std::string scheduler = "diff-berth-" + nodes.id();
    BerthProcess b(scheduler, SchedulerConfig(scheduler, false));
    ASSERT_TRUE(
        testing::Eventually([&] { return HttpGet(b.url() + "/readyz").status == 200; }, 60s))
        << b.Log();
    berth = Place(*admin, berth_ns.name(), scheduler, nodes.id(), [&] { return b.Log(); });
  }
  DeletePods(*admin, berth_ns.name());

  for (const Pool& pool : kPools) {
    EXPECT_EQ(kube[pool.name], ModelChoice(pool))
        << "kube-scheduler's choice in pool " << pool.name << " is not the model's";
    EXPECT_EQ(berth[pool.name], kube[pool.name])
        << "pool " << pool.name << ": berth-scheduler chose node " << berth[pool.name]
        << ", kube-scheduler node " << kube[pool.name];
  }
  std::printf("scoring diff: %zu pools, kube-scheduler and berth-scheduler agree on %d\n",
              kPools.size(), [&] {
                int same = 0;
                for (const Pool& pool : kPools) same += berth[pool.name] == kube[pool.name];
                return same;
              }());
  KeepLogsIfFailed(dir, HasFailure(), "scoring diff");
}

}  // namespace
}  // namespace berth::e2e
