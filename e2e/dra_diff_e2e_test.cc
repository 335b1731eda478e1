// Differential test against kube-scheduler for Dynamic Resource Allocation: 10 nodes whose
// ResourceSlices hold different devices (none on some, a pool reached through a node selector,
// partitionable devices sharing counters, a device with consumable capacity, a tainted device),
// a few DeviceClasses, and 43 pods whose claims come from ResourceClaimTemplates (the
// controller-manager's resourceclaim controller makes them) or are created beforehand: counts,
// allocationMode All, prioritized lists, a matchAttribute constraint, CEL selectors on attributes
// and capacity, admin access, a claim shared by three pods, an extended resource a class serves
// from devices (the scheduler makes that claim), and pods nothing can place.
// kube-scheduler (the pinned release) schedules them in fresh namespaces; then, once its pods and
// claims are gone, berth-scheduler schedules identical pods with identical claims in others. The
// nodes, classes and slices are shared by both runs, so device and pool names are the same.
//
// Pods go in one at a time, each once the one before is bound or reported unschedulable. Every
// pod may only go to the nodes its required node affinity names, and the scenario is built so
// that exactly one of them can take it, or, for the prioritized lists, so that the nodes differ
// in DynamicResources' score (which rewards the earlier subrequest). Every other score is equal
// on all nodes (the same capacity, pods too small to move NodeResourcesFit's integer scores), so
// no placement is left to a scheduler's tie-break and the whole outcome is compared: each pod's
// node or its PodScheduled message, and each claim's allocated devices and the pods it is
// reserved for. Both outcomes are printed side by side; kube-scheduler's is also checked against
// the scenario's design, so that the comparison cannot pass on an outcome where nothing happened.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e/diff.h"
#include "e2e/harness.h"
#include "pkg/client/client.h"
#include "test/testing/cluster.h"
#include "test/testing/kube_scheduler.h"

namespace berth::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr const char* kResourceApi = "/apis/resource.k8s.io/v1";
constexpr const char* kGpuDriver = "gpu.example.com";
constexpr const char* kFpgaDriver = "fpga.example.com";
constexpr const char* kRackLabel = "berth-dra-rack";
constexpr const char* kTaintKey = "gpu.example.com/maintenance";
constexpr const char* kAdminLabel = "resource.kubernetes.io/admin-access";
constexpr int kNodes = 10;

// --- resource.k8s.io/v1 objects -----------------------------------------------------------------

json Selector(const std::string& expression) { return {{"cel", {{"expression", expression}}}}; }

std::string ModelIs(const std::string& model) {
  return "device.attributes['gpu.example.com'].model == '" + model + "'";
}

std::string MemoryAtLeast(const std::string& quantity) {
  return "device.capacity['gpu.example.com'].memory.compareTo(quantity('" + quantity + "')) >= 0";
}

std::string MemoryIs(const std::string& quantity) {
  return "device.capacity['gpu.example.com'].memory.compareTo(quantity('" + quantity + "')) == 0";
}

// An ExactCount request body (count 0: allocationMode All).
json Exactly(const std::string& device_class, int count,
             const std::vector<std::string>& selectors = {}) {
  json r = {{"deviceClassName", device_class}};
  if (count == 0) {
    r["allocationMode"] = "All";
  } else {
    r["allocationMode"] = "ExactCount";
    r["count"] = count;
  }
  for (const auto& s : selectors) r["selectors"].push_back(Selector(s));
  return r;
}

json Request(const std::string& name, const json& exactly) {
  return {{"name", name}, {"exactly", exactly}};
}

// A vector, not a json: nlohmann reads a braced list of one object as that object.
json ClaimSpec(const std::vector<json>& requests, const json& constraints = json::array()) {
  json devices = {{"requests", requests}};
  if (!constraints.empty()) devices["constraints"] = constraints;
  return {{"devices", devices}};
}

json GpuDevice(const std::string& name, const std::string& model, int numa,
               const std::string& memory) {
  return {{"name", name},
          {"attributes", {{"model", {{"string", model}}}, {"numa", {{"int", numa}}}}},
          {"capacity", {{"memory", {{"value", memory}}}}}};
}

json Slice(const std::string& name, const std::string& driver, const std::string& pool,
           int slices_in_pool, const std::string& run) {
  return {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceSlice"},
      {"metadata", {{"name", name}, {"labels", {{"berth-it", run}}}}},
      {"spec",
       {{"driver", driver},
        {"pool", {{"name", pool}, {"generation", 1}, {"resourceSliceCount", slices_in_pool}}}}}};
}

// The cluster-scoped objects of the test (DeviceClasses, ResourceSlices), deleted when it ends.
class ClusterObjects {
 public:
  explicit ClusterObjects(std::shared_ptr<client::Client> client) : client_(std::move(client)) {}
  ~ClusterObjects() {
    for (const auto& path : created_) {
      try {
        client_->Delete(path);
      } catch (const std::exception&) {
        // Best effort: names are unique per run.
      }
    }
  }
  ClusterObjects(const ClusterObjects&) = delete;
  ClusterObjects& operator=(const ClusterObjects&) = delete;

  void Create(const std::string& resource, const json& object) {
    const std::string collection = std::string(kResourceApi) + "/" + resource;
    client_->Post(collection, object);
    created_.push_back(collection + "/" + object["metadata"]["name"].get<std::string>());
  }

  void Class(const std::string& name, const std::string& expression,
             const std::string& extended_resource = "") {
    json spec = {{"selectors", json::array({Selector(expression)})}};
    if (!extended_resource.empty()) spec["extendedResourceName"] = extended_resource;
    Create("deviceclasses", {{"apiVersion", "resource.k8s.io/v1"},
                             {"kind", "DeviceClass"},
                             {"metadata", {{"name", name}}},
                             {"spec", spec}});
  }

 private:
  std::shared_ptr<client::Client> client_;
  std::vector<std::string> created_;
};

// --- the scenario -------------------------------------------------------------------------------

// Names in the scenario are short ("n3", "gpu"); in the cluster they carry the run's id.
struct Names {
  std::string id;
  std::string Node(const std::string& suffix) const { return id + "-" + suffix; }
  std::string Class(const std::string& name) const { return id + "-" + name; }
  // The extended resource the "gpu-er" class serves.
  std::string ExtendedResource() const { return "example.com/" + id + "-gpu"; }
};

// One of a pod's claims: from a template, or a ResourceClaim created beforehand.
struct PodClaim {
  std::string name;           // spec.resourceClaims[].name
  std::string template_name;  // Set: resourceClaimTemplateName.
  std::string claim_name;     // Set: resourceClaimName.
};

PodClaim FromTemplate(const std::string& name) { return {"c", name, ""}; }
PodClaim Claim(const std::string& name) { return {"c", "", name}; }

struct ScenarioPod {
  std::string name;
  bool admin_ns = false;  // In the namespace labelled for admin access.
  // The nodes (suffixes) its required node affinity allows; empty: all of the test's.
  std::vector<std::string> candidates;
  std::vector<PodClaim> claims;
  std::string expect;  // The node kube-scheduler must choose; "" when it must leave it Pending.
  // How many of Names::ExtendedResource() its container requests (served from devices); 0: none.
  int extended = 0;
};

// The pods in creation order. What each expects follows from the devices below and from the
// pods before it (devices stay allocated: no pod ever runs or ends).
std::vector<ScenarioPod> Pods() {
  std::vector<ScenarioPod> pods = {
      {"plain-0", false, {"n0"}, {}, "n0"},
      // One device each, from the plain class: n1 has one, n2 two, n0 none.
      {"single-0", false, {"n0", "n1"}, {FromTemplate("gpu-1")}, "n1"},
      {"single-1", false, {"n0", "n1", "n2"}, {FromTemplate("gpu-1")}, "n2"},
      {"single-2", false, {"n1", "n2"}, {FromTemplate("gpu-1")}, "n2"},
      {"single-none", false, {"n0", "n1", "n2"}, {FromTemplate("gpu-1")}, ""},
      // allocationMode All: n3's three devices; then none is left for a second.
      {"all-0", false, {"n0", "n3"}, {FromTemplate("gpu-all")}, "n3"},
      {"all-1", false, {"n3"}, {FromTemplate("gpu-all")}, ""},
      {"pair-0", false, {"n1", "n2", "n4"}, {FromTemplate("gpu-2")}, "n4"},
      // More devices than any node has.
      {"too-many", false, {}, {FromTemplate("gpu-16")}, ""},
      // The class with a CEL selector on the model attribute; a request selector on capacity.
      {"a100-0", false, {"n2", "n3", "n4"}, {FromTemplate("a100-1")}, "n4"},
      {"mem-0", false, {"n1", "n3", "n4"}, {FromTemplate("mem-40")}, "n4"},
      // matchAttribute on numa: across two requests (the first a100 has no t4 beside it, so the
      // allocator must move on), within one request, and once no numa node has two left.
      {"numa-0", false, {"n4"}, {Claim("numa-mixed")}, "n4"},
      {"numa-1", false, {"n4"}, {Claim("numa-pair")}, "n4"},
      {"numa-2", false, {"n4"}, {Claim("numa-pair-2")}, ""},
      // Partitionable: two halves or the whole of one GPU's 80Gi counter.
      {"part-0", false, {"n0", "n5"}, {FromTemplate("half")}, "n5"},
      {"part-1", false, {"n5"}, {FromTemplate("a100-80")}, ""},
      {"part-2", false, {"n5"}, {FromTemplate("half")}, "n5"},
      // Consumable capacity: 80Gi of one device shared; 25Gi rounds up to the 10Gi step, a
      // request without capacity takes the policy's default 10Gi.
      {"cap-0", false, {"n0", "n6"}, {FromTemplate("cap-30")}, "n6"},
      {"cap-1", false, {"n6"}, {FromTemplate("cap-25")}, "n6"},
      {"cap-2", false, {"n6"}, {FromTemplate("gpu-1")}, "n6"},
      {"cap-3", false, {"n6"}, {FromTemplate("cap-20")}, ""},
      // A NoSchedule device taint: only a request that tolerates it gets the device.
      {"taint-0", false, {"n7"}, {FromTemplate("t4-1")}, ""},
      {"taint-1", false, {"n7"}, {FromTemplate("t4-tolerant")}, "n7"},
      // One claim, three pods: the later two may go anywhere but follow the allocation.
      {"shared-0", false, {"n0", "n7"}, {Claim("shared")}, "n7"},
      {"shared-1", false, {}, {Claim("shared")}, "n7"},
      {"shared-2", false, {}, {Claim("shared")}, "n7"},
      // The pool published through a node selector (rack-b: n8 and n9).
      {"fpga-0", false, {"n0", "n8"}, {FromTemplate("fpga-1")}, "n8"},
      {"fpga-1", false, {"n9"}, {FromTemplate("fpga-2")}, "n9"},
      // Prioritized list: n8 fits the first choice, n9 only the second, so the score decides;
      // then n8 has nothing left; then a shared device takes the second choice.
      {"first-0", false, {"n8", "n9"}, {FromTemplate("first")}, "n8"},
      {"first-1", false, {"n8", "n9"}, {FromTemplate("first")}, "n9"},
      {"first-2", false, {"n5", "n6"}, {FromTemplate("first")}, "n6"},
      // Two claims in one pod.
      {"multi-0", false, {"n9"}, {{"one", "gpu-1", ""}, {"two", "", "multi-two"}}, "n9"},
      // A claim allocated on n9: a pod that may only go to n8 cannot use it.
      {"shared-b-0", false, {"n9"}, {Claim("shared-b")}, "n9"},
      {"shared-b-1", false, {"n8"}, {Claim("shared-b")}, ""},
      {"shared-b-2", false, {"n8", "n9"}, {Claim("shared-b")}, "n9"},
      // allocationMode All wants every matching device of the node, allocated ones too: five of
      // n9's six are taken.
      {"all-2", false, {"n9"}, {FromTemplate("gpu-all")}, ""},
      {"no-class", false, {}, {Claim("no-class")}, ""},
      {"no-match", false, {}, {Claim("no-match")}, ""},
      // Admin access: devices already allocated to others.
      {"admin-0", true, {"n1"}, {Claim("admin-one")}, "n1"},
      {"admin-1", true, {"n3"}, {FromTemplate("admin-all")}, "n3"},
      {"plain-1", false, {"n0"}, {}, "n0"},
      // An extended resource a class serves from devices: no node offers it as allocatable, so
      // the scheduler makes a claim for the pod; n9 has one gpu left, then none.
      {"ext-0", false, {"n9"}, {}, "n9", 1},
      {"ext-1", false, {"n9"}, {}, "", 1},
  };
  return pods;
}

// Nodes n0..n9; rack-b (n8, n9) reaches the fpga pool.
void CreateNodes(testing::TestNodes& nodes) {
  for (int i = 0; i < kNodes; i++) {
    nodes.Add("n" + std::to_string(i), "64", "256Gi", [&](json& node) {
      node["metadata"]["labels"][kRackLabel] = i >= 8 ? "rack-b" : "rack-a";
    });
  }
}

void CreateClassesAndSlices(ClusterObjects& objects, const Names& names) {
  const std::string gpu_driver = std::string("device.driver == '") + kGpuDriver + "'";
  objects.Class(names.Class("gpu"), gpu_driver);
  objects.Class(names.Class("a100"), gpu_driver + " && " + ModelIs("a100"));
  objects.Class(names.Class("fpga"), std::string("device.driver == '") + kFpgaDriver + "'");
  objects.Class(names.Class("gpu-er"), gpu_driver, names.ExtendedResource());

  // Node-local pools, one slice each (the pool and slice are named after the node).
  const auto local = [&](const std::string& suffix, const std::vector<json>& devices) {
    json slice = Slice(names.Node(suffix), kGpuDriver, names.Node(suffix), 1, names.id);
    slice["spec"]["nodeName"] = names.Node(suffix);
    slice["spec"]["devices"] = devices;
    objects.Create("resourceslices", slice);
  };
  local("n1", {GpuDevice("gpu-0", "t4", 0, "16Gi")});
  local("n2", {GpuDevice("gpu-0", "t4", 0, "16Gi"), GpuDevice("gpu-1", "t4", 0, "16Gi")});
  local("n3", {GpuDevice("gpu-0", "t4", 0, "16Gi"), GpuDevice("gpu-1", "t4", 0, "16Gi"),
               GpuDevice("gpu-2", "t4", 1, "16Gi")});
  local("n4", {GpuDevice("gpu-0", "t4", 0, "16Gi"), GpuDevice("gpu-1", "a100", 0, "40Gi"),
               GpuDevice("gpu-2", "a100", 1, "80Gi"), GpuDevice("gpu-3", "a100", 1, "80Gi"),
               GpuDevice("gpu-4", "a100", 2, "80Gi"), GpuDevice("gpu-5", "a100", 2, "40Gi"),
               GpuDevice("gpu-6", "a100", 3, "40Gi"), GpuDevice("gpu-7", "t4", 3, "16Gi")});
  // n5: one GPU as a whole or as two halves, all drawing on one counter set (a pool of two
  // slices: the counters in one, the devices in the other).
  {
    const std::string pool = names.Node("n5");
    json counters = Slice(pool + "-counters", kGpuDriver, pool, 2, names.id);
    counters["spec"]["nodeName"] = pool;
    counters["spec"]["sharedCounters"] = {
        {{"name", "gpu-0-counters"}, {"counters", {{"memory", {{"value", "80Gi"}}}}}}};
    objects.Create("resourceslices", counters);
    const auto consumes = [](json device, const std::string& memory) {
      device["consumesCounters"] = {
          {{"counterSet", "gpu-0-counters"}, {"counters", {{"memory", {{"value", memory}}}}}}};
      return device;
    };
    json devices = Slice(pool, kGpuDriver, pool, 2, names.id);
    devices["spec"]["nodeName"] = pool;
    devices["spec"]["devices"] = {consumes(GpuDevice("gpu-0", "a100", 0, "80Gi"), "80Gi"),
                                  consumes(GpuDevice("gpu-0-half-0", "a100", 0, "40Gi"), "40Gi"),
                                  consumes(GpuDevice("gpu-0-half-1", "a100", 0, "40Gi"), "40Gi")};
    objects.Create("resourceslices", devices);
  }
  // n6: one device many claims share, 80Gi of memory handed out in steps of 10Gi.
  {
    json device = GpuDevice("shared-0", "shared", 0, "80Gi");
    device["allowMultipleAllocations"] = true;
    device["capacity"]["memory"]["requestPolicy"] = {
        {"default", "10Gi"}, {"validRange", {{"min", "10Gi"}, {"step", "10Gi"}}}};
    local("n6", {device});
  }
  // n7: a t4 under maintenance (NoSchedule) and an a100.
  {
    json tainted = GpuDevice("gpu-0", "t4", 0, "16Gi");
    tainted["taints"] = {{{"key", kTaintKey}, {"value", "true"}, {"effect", "NoSchedule"}}};
    local("n7", {tainted, GpuDevice("gpu-1", "a100", 0, "80Gi")});
  }
  local("n8", {GpuDevice("gpu-0", "a100", 0, "80Gi")});
  local("n9", {GpuDevice("gpu-0", "t4", 0, "16Gi"), GpuDevice("gpu-1", "t4", 0, "16Gi"),
               GpuDevice("gpu-2", "t4", 0, "16Gi"), GpuDevice("gpu-3", "t4", 1, "16Gi"),
               GpuDevice("gpu-4", "t4", 1, "16Gi"), GpuDevice("gpu-5", "t4", 1, "16Gi")});
  // Rack b's FPGAs: one pool for the nodes labelled rack-b.
  {
    const std::string pool = names.id + "-rack-b";
    json slice = Slice(pool, kFpgaDriver, pool, 1, names.id);
    slice["spec"]["nodeSelector"] = {
        {"nodeSelectorTerms",
         {{{"matchExpressions",
            {{{"key", kRackLabel}, {"operator", "In"}, {"values", {"rack-b"}}}}}}}}};
    for (int i = 0; i < 3; i++) {
      slice["spec"]["devices"].push_back({{"name", "fpga-" + std::to_string(i)}});
    }
    objects.Create("resourceslices", slice);
  }
}

// The ResourceClaimTemplates and ResourceClaims of one run, in `ns` and `admin_ns`.
void CreateClaims(client::Client& client, const Names& names, const std::string& ns,
                  const std::string& admin_ns) {
  const std::string gpu = names.Class("gpu"), a100 = names.Class("a100");
  const auto one = [](const json& exactly) { return ClaimSpec({Request("g", exactly)}); };
  json tolerant = Exactly(gpu, 1, {ModelIs("t4")});
  tolerant["tolerations"] = {
      {{"key", kTaintKey}, {"operator", "Exists"}, {"effect", "NoSchedule"}}};
  const auto with_capacity = [&](const std::string& memory) {
    json e = Exactly(gpu, 1);
    e["capacity"] = {{"requests", {{"memory", memory}}}};
    return one(e);
  };
  json first = {{"name", "g"},
                {"firstAvailable",
                 {{{"name", "big"}, {"deviceClassName", a100}, {"count", 1}},
                  {{"name", "small"}, {"deviceClassName", gpu}, {"count", 1}}}}};
  json admin_all = Exactly(gpu, 0);
  admin_all["adminAccess"] = true;

  const std::map<std::string, json> templates = {
      {"gpu-1", one(Exactly(gpu, 1))},
      {"gpu-2", one(Exactly(gpu, 2))},
      {"gpu-16", one(Exactly(gpu, 16))},
      {"gpu-all", one(Exactly(gpu, 0))},
      {"a100-1", one(Exactly(a100, 1))},
      {"a100-80", one(Exactly(a100, 1, {MemoryAtLeast("80Gi")}))},
      {"mem-40", one(Exactly(gpu, 1, {MemoryAtLeast("40Gi")}))},
      {"half", one(Exactly(a100, 1, {MemoryIs("40Gi")}))},
      {"cap-30", with_capacity("30Gi")},
      {"cap-25", with_capacity("25Gi")},
      {"cap-20", with_capacity("20Gi")},
      {"t4-1", one(Exactly(gpu, 1, {ModelIs("t4")}))},
      {"t4-tolerant", one(tolerant)},
      {"first", ClaimSpec({first})},
      {"fpga-1", one(Exactly(names.Class("fpga"), 1))},
      {"fpga-2", one(Exactly(names.Class("fpga"), 2))},
  };
  const json numa = {
      {{"requests", json::array()}, {"matchAttribute", std::string(kGpuDriver) + "/numa"}}};
  json numa_mixed = numa;
  numa_mixed[0]["requests"] = {"a", "b"};
  json admin_one = Exactly(gpu, 1);
  admin_one["adminAccess"] = true;
  const std::map<std::string, json> claims = {
      {"numa-mixed", ClaimSpec({Request("a", Exactly(gpu, 1, {ModelIs("a100")})),
                                Request("b", Exactly(gpu, 1, {ModelIs("t4")}))},
                               numa_mixed)},
      {"numa-pair", ClaimSpec({Request("g", Exactly(gpu, 2))}, numa)},
      {"numa-pair-2", ClaimSpec({Request("g", Exactly(gpu, 2))}, numa)},
      {"shared", one(Exactly(a100, 1, {MemoryAtLeast("80Gi")}))},
      {"shared-b", one(Exactly(gpu, 1))},
      {"multi-two", one(Exactly(gpu, 2))},
      {"no-class", one(Exactly(names.Class("no-such-class"), 1))},
      {"no-match", one(Exactly(gpu, 1, {ModelIs("h100")}))},
  };
  const auto path = [](const std::string& n, const std::string& kind) {
    return std::string(kResourceApi) + "/namespaces/" + n + "/" + kind;
  };
  for (const auto& [name, spec] : templates) {
    client.Post(path(ns, "resourceclaimtemplates"), {{"apiVersion", "resource.k8s.io/v1"},
                                                     {"kind", "ResourceClaimTemplate"},
                                                     {"metadata", {{"name", name}}},
                                                     {"spec", {{"spec", spec}}}});
  }
  for (const auto& [name, spec] : claims) {
    client.Post(path(ns, "resourceclaims"), {{"apiVersion", "resource.k8s.io/v1"},
                                             {"kind", "ResourceClaim"},
                                             {"metadata", {{"name", name}}},
                                             {"spec", spec}});
  }
  client.Post(path(admin_ns, "resourceclaimtemplates"), {{"apiVersion", "resource.k8s.io/v1"},
                                                         {"kind", "ResourceClaimTemplate"},
                                                         {"metadata", {{"name", "admin-all"}}},
                                                         {"spec", {{"spec", one(admin_all)}}}});
  client.Post(path(admin_ns, "resourceclaims"), {{"apiVersion", "resource.k8s.io/v1"},
                                                 {"kind", "ResourceClaim"},
                                                 {"metadata", {{"name", "admin-one"}}},
                                                 {"spec", one(admin_one)}});
}

json Manifest(const ScenarioPod& p, const std::string& ns, const std::string& scheduler,
              const Names& names) {
  json pod = testing::PodManifest(ns, p.name, scheduler, "10m", "16Mi");
  pod["spec"]["nodeSelector"] = {{"berth-it", names.id}};
  if (!p.candidates.empty()) {
    std::vector<std::string> nodes;
    for (const auto& c : p.candidates) nodes.push_back(names.Node(c));
    pod["spec"]["affinity"] = {{"nodeAffinity",
                                {{"requiredDuringSchedulingIgnoredDuringExecution",
                                  {{"nodeSelectorTerms",
                                    {{{"matchExpressions",
                                       {{{"key", "kubernetes.io/hostname"},
                                         {"operator", "In"},
                                         {"values", nodes}}}}}}}}}}}};
  }
  for (const auto& c : p.claims) {
    json ref = {{"name", c.name}};
    if (!c.template_name.empty()) {
      ref["resourceClaimTemplateName"] = c.template_name;
    } else {
      ref["resourceClaimName"] = c.claim_name;
    }
    pod["spec"]["resourceClaims"].push_back(ref);
    pod["spec"]["containers"][0]["resources"]["claims"].push_back({{"name", c.name}});
  }
  if (p.extended > 0) {
    json& resources = pod["spec"]["containers"][0]["resources"];
    resources["requests"][names.ExtendedResource()] = std::to_string(p.extended);
    resources["limits"][names.ExtendedResource()] = std::to_string(p.extended);
  }
  return pod;
}

// --- outcomes -----------------------------------------------------------------------------------

// What one scheduler made of the scenario, with the run's id and namespaces taken out of every
// name and message so that the two runs compare.
struct Outcome {
  std::map<std::string, std::string> pod;    // "admin/" for the admin namespace; node or message.
  std::map<std::string, bool> bound;         // Whether pod[...] is a node.
  std::map<std::string, std::string> claim;  // Allocation and reservations, one line.
  std::map<std::string, std::vector<std::string>> results;   // Per claim, each device result.
  std::map<std::string, std::vector<std::string>> reserved;  // Per claim, the pods' names.
};

class Normalizer {
 public:
  Normalizer(const Names& names, std::string ns, std::string admin_ns)
      : id_(names.id + "-"), ns_(std::move(ns)), admin_ns_(std::move(admin_ns)) {}
  std::string operator()(std::string s) const {
    Replace(s, admin_ns_, "<admin-ns>");
    Replace(s, ns_, "<ns>");
    Replace(s, id_, "");
    return s;
  }

 private:
  static void Replace(std::string& s, const std::string& from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
      s.replace(at, from.size(), to);
    }
  }
  std::string id_, ns_, admin_ns_;
};

void ReadNamespace(client::Client& client, const std::string& ns, const std::string& prefix,
                   const Normalizer& normalize, Outcome* out) {
  const json pods = client.Get(client::PodsResource().Path(ns));
  for (const auto& p : pods["items"]) {
    const std::string name = prefix + p["metadata"]["name"].get<std::string>();
    const std::string node = p["spec"].value("nodeName", "");
    out->bound[name] = !node.empty();
    out->pod[name] =
        node.empty() ? "Pending: " + normalize(PodScheduledMessage(p)) : normalize(node);
    // The claim made for its extended resources, and which container request each serves.
    const json status = p.value("status", json::object());
    if (status.contains("extendedResourceClaimStatus")) {
      for (const auto& m :
           status["extendedResourceClaimStatus"].value("requestMappings", json::array())) {
        out->pod[name] += " extended[" + m.value("containerName", "") + " " +
                          normalize(m.value("resourceName", "")) + " " +
                          m.value("requestName", "") + "]";
      }
    }
  }
  const json claims =
      client.Get(std::string(kResourceApi) + "/namespaces/" + ns + "/resourceclaims");
  for (const auto& c : claims["items"]) {
    // A claim made from a template is named after its pod and the pod's name for it; the
    // generated name has a random suffix.
    std::string key = c["metadata"]["name"];
    const json annotations = c["metadata"].value("annotations", json::object());
    const json owners = c["metadata"].value("ownerReferences", json::array());
    for (const auto& owner : owners) {
      if (owner.value("kind", "") == "Pod" &&
          annotations.contains("resource.kubernetes.io/pod-claim-name")) {
        key = owner["name"].get<std::string>() + "/" +
              annotations["resource.kubernetes.io/pod-claim-name"].get<std::string>();
      }
      // The scheduler's claim for a pod's extended resources has a generated name too.
      if (owner.value("kind", "") == "Pod" &&
          annotations.value("resource.kubernetes.io/extended-resource-claim", "") == "true") {
        key = owner["name"].get<std::string>() + "/<extended-resources>";
      }
    }
    key.insert(0, prefix);
    std::vector<std::string> results, reserved;
    const json status = c.value("status", json::object());
    if (status.contains("allocation")) {
      const json allocated = status["allocation"]["devices"].value("results", json::array());
      for (const auto& r : allocated) {
        // shareID is random per allocation; the capacity consumed is what is compared.
        std::string line = r.value("request", "") + " " + r.value("driver", "") + " " +
                           normalize(r.value("pool", "")) + " " + r.value("device", "");
        if (r.value("adminAccess", false)) line += " adminAccess";
        const json consumed = r.value("consumedCapacity", json::object());
        for (const auto& [resource, quantity] : consumed.items()) {
          line += " " + resource + "=" + quantity.get<std::string>();
        }
        if (r.contains("tolerations")) line += " tolerated";
        results.push_back(line);
      }
    }
    const json consumers = status.value("reservedFor", json::array());
    for (const auto& consumer : consumers) {
      reserved.push_back(consumer.value("name", ""));
    }
    std::sort(reserved.begin(), reserved.end());
    std::string line;
    for (const auto& r : results) line += (line.empty() ? "" : ", ") + r;
    if (results.empty()) line = "(not allocated)";
    line += "; reservedFor [";
    for (size_t i = 0; i < reserved.size(); i++) line += (i ? " " : "") + reserved[i];
    line += "]";
    out->claim[key] = line;
    out->results[key] = results;
    out->reserved[key] = reserved;
  }
}

// The outcome as lines, pods in scenario order, then claims by name: what EXPECT_EQ diffs.
std::string Render(const Outcome& o, const std::vector<ScenarioPod>& pods) {
  std::ostringstream out;
  for (const auto& p : pods) {
    const std::string key = (p.admin_ns ? "admin/" : "") + p.name;
    auto it = o.pod.find(key);
    out << "pod " << key << ": " << (it == o.pod.end() ? "(missing)" : it->second) << "\n";
  }
  for (const auto& [key, line] : o.claim) out << "claim " << key << ": " << line << "\n";
  return out.str();
}

// Creates the pods one at a time, each once the one before has settled.
Outcome Schedule(client::Client& client, const std::vector<ScenarioPod>& pods, const Names& names,
                 const std::string& ns, const std::string& admin_ns, const std::string& scheduler,
                 const std::function<std::string()>& log) {
  for (const auto& p : pods) {
    const std::string& in = p.admin_ns ? admin_ns : ns;
    const std::string path = client::PodsResource().Path(in);
    client.Post(path, Manifest(p, in, scheduler, names));
    if (!testing::Eventually([&] { return Settled(client.Get(path + "/" + p.name)); }, 60s)) {
      ADD_FAILURE() << scheduler << " neither bound nor reported " << in << "/" << p.name
                    << " within 60 s; its log:\n"
                    << log();
      break;
    }
  }
  // Pending pods are retried as later pods allocate devices; none can fit by then. Let those
  // retries run before reading.
  std::this_thread::sleep_for(2s);
  Outcome out;
  const Normalizer normalize(names, ns, admin_ns);
  ReadNamespace(client, ns, "", normalize, &out);
  ReadNamespace(client, admin_ns, "admin/", normalize, &out);
  return out;
}

// Deletes the pods and claims of `ns` and waits until the claims are gone, so that their devices
// are free for the next run. The resourceclaim controller lifts a claim's finalizer once no pod
// uses it; a claim still held after that is let go by hand.
void DeletePodsAndClaims(client::Client& client, const std::string& ns) {
  DeletePods(client, ns);
  const std::string claims = std::string(kResourceApi) + "/namespaces/" + ns + "/resourceclaims";
  client.Delete(claims);
  if (testing::Eventually([&] { return client.Get(claims)["items"].empty(); }, 20s)) return;
  for (const auto& c : client.Get(claims)["items"]) {
    try {
      client.Patch(claims + "/" + c["metadata"]["name"].get<std::string>(),
                   {{"metadata", {{"finalizers", nullptr}}}}, client::PatchType::kMerge);
    } catch (const client::ApiError&) {
      // Gone meanwhile.
    }
  }
  ASSERT_TRUE(testing::Eventually([&] { return client.Get(claims)["items"].empty(); }, 30s))
      << "the claims of " << ns << " were not deleted";
}

void LabelForAdminAccess(client::Client& client, const std::string& ns) {
  client.Patch("/api/v1/namespaces/" + ns, {{"metadata", {{"labels", {{kAdminLabel, "true"}}}}}},
               client::PatchType::kMerge);
}

// Both outcomes, one pod or claim a line each, side by side.
void PrintSideBySide(const Outcome& kube, const Outcome& berth,
                     const std::vector<ScenarioPod>& pods) {
  const auto get = [](const std::map<std::string, std::string>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? std::string("(missing)") : it->second;
  };
  std::printf("dra diff: outcome, kube-scheduler | berth-scheduler (* where they differ)\n");
  for (const auto& p : pods) {
    const std::string key = (p.admin_ns ? "admin/" : "") + p.name;
    const std::string k = get(kube.pod, key), b = get(berth.pod, key);
    if (k == b) {
      std::printf("   pod %-18s %s\n", key.c_str(), k.c_str());
    } else {
      std::printf(" * pod %-18s kube:  %s\n   %-22s berth: %s\n", key.c_str(), k.c_str(), "",
                  b.c_str());
    }
  }
  std::set<std::string> keys;
  for (const auto& [key, line] : kube.claim) keys.insert(key);
  for (const auto& [key, line] : berth.claim) keys.insert(key);
  for (const auto& key : keys) {
    const std::string k = get(kube.claim, key), b = get(berth.claim, key);
    if (k == b) {
      std::printf("   claim %-24s %s\n", key.c_str(), k.c_str());
    } else {
      std::printf(" * claim %-24s kube:  %s\n   %-30s berth: %s\n", key.c_str(), k.c_str(), "",
                  b.c_str());
    }
  }
}

TEST(DraDiffE2E, DevicePlacementsAllocationsAndPendingMessagesMatchKubeScheduler) {
  const auto started = std::chrono::steady_clock::now();
  const std::string binary = testing::KubeSchedulerBinary();
  auto admin = testing::AdminClient();
  testing::TestNodes nodes(admin);
  const Names names{nodes.id()};
  CreateNodes(nodes);
  ClusterObjects objects(admin);
  CreateClassesAndSlices(objects, names);
  const std::vector<ScenarioPod> pods = Pods();
  ASSERT_GE(pods.size(), 40u);
  const auto foreign = ForeignNodes(*admin, nodes.id());
  const fs::path dir = fs::temp_directory_path() / ("berth-dra-diff-" + nodes.id());
  fs::create_directories(dir);
  const auto seconds = [](auto from) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count();
  };

  testing::TestNamespace kube_ns(admin, "e2e-dra-kube");
  testing::TestNamespace kube_admin_ns(admin, "e2e-dra-kube-admin");
  LabelForAdminAccess(*admin, kube_admin_ns.name());
  CreateClaims(*admin, names, kube_ns.name(), kube_admin_ns.name());
  Outcome kube;
  {
    const std::string name = "dra-kube-scheduler-" + nodes.id();
    testing::KubeSchedulerProcess ks(KubeSchedulerDiffConfig(name), dir / "kube-scheduler");
    ASSERT_TRUE(ks.WaitReady(60s)) << "kube-scheduler (" << binary << ") did not become ready:\n"
                                   << ks.process().Log();
    const auto start = std::chrono::steady_clock::now();
    kube = Schedule(*admin, pods, names, kube_ns.name(), kube_admin_ns.name(), name,
                    [&] { return ks.process().Log(); });
    std::printf("dra diff: kube-scheduler took %.1f s\n", seconds(start));
  }
  DeletePodsAndClaims(*admin, kube_ns.name());
  DeletePodsAndClaims(*admin, kube_admin_ns.name());

  testing::TestNamespace berth_ns(admin, "e2e-dra-berth");
  testing::TestNamespace berth_admin_ns(admin, "e2e-dra-berth-admin");
  LabelForAdminAccess(*admin, berth_admin_ns.name());
  CreateClaims(*admin, names, berth_ns.name(), berth_admin_ns.name());
  Outcome berth;
  {
    const std::string name = "dra-berth-" + nodes.id();
    BerthProcess b(name, SchedulerConfig(name, false));
    ASSERT_TRUE(
        testing::Eventually([&] { return HttpGet(b.url() + "/readyz").status == 200; }, 60s))
        << b.Log();
    const auto start = std::chrono::steady_clock::now();
    berth = Schedule(*admin, pods, names, berth_ns.name(), berth_admin_ns.name(), name,
                     [&] { return b.Log(); });
    std::printf("dra diff: berth-scheduler took %.1f s\n", seconds(start));
  }
  ASSERT_EQ(ForeignNodes(*admin, nodes.id()), foreign)
      << "nodes other than this test's came or went while it ran; the node counts in the "
         "messages would differ for that alone";

  PrintSideBySide(kube, berth, pods);

  // The scenario's design, seen in the reference: every pod where (or Pending as) it expects.
  for (const auto& p : pods) {
    const std::string key = (p.admin_ns ? "admin/" : "") + p.name;
    ASSERT_TRUE(kube.pod.count(key)) << "kube-scheduler's run has no pod " << key;
    if (p.expect.empty()) {
      EXPECT_FALSE(kube.bound[key]) << "kube-scheduler bound " << key << " to " << kube.pod[key];
    } else {
      // The node, before any note on the claim made for its extended resources.
      EXPECT_EQ(kube.pod[key].substr(0, kube.pod[key].find(' ')), p.expect)
          << "kube-scheduler: " << key;
    }
  }
  // The extended resource was served from a device, through a claim kube-scheduler made.
  EXPECT_EQ(kube.pod["ext-0"], "n9 extended[app example.com/gpu container-0-request-1]");
  EXPECT_EQ(kube.reserved["ext-0/<extended-resources>"], std::vector<std::string>{"ext-0"});
  // A few facts spelled out: the shared claim serves its three pods on one node.
  EXPECT_EQ(kube.reserved["shared"],
            (std::vector<std::string>{"shared-0", "shared-1", "shared-2"}));
  EXPECT_TRUE(kube.pod["shared-0"] == kube.pod["shared-1"] &&
              kube.pod["shared-1"] == kube.pod["shared-2"])
      << kube.pod["shared-0"] << " " << kube.pod["shared-1"] << " " << kube.pod["shared-2"];
  // The prioritized list: the first choice where it fits, the second where only it does.
  const auto request_of = [&](const std::string& claim) {
    const auto& r = kube.results[claim];
    return r.size() == 1 ? r[0].substr(0, r[0].find(' ')) : "(" + std::to_string(r.size()) + ")";
  };
  EXPECT_EQ(request_of("first-0/c"), "g/big");
  EXPECT_EQ(request_of("first-1/c"), "g/small");
  EXPECT_EQ(request_of("first-2/c"), "g/small");
  // Admin access allocates devices others hold.
  EXPECT_EQ(kube.results["admin/admin-one"],
            (std::vector<std::string>{"g gpu.example.com n1 gpu-0 adminAccess"}));
  // A pod turned away for lack of devices says so.
  EXPECT_NE(kube.pod["too-many"].find("cannot allocate all claims"), std::string::npos)
      << kube.pod["too-many"];

  EXPECT_EQ(Render(berth, pods), Render(kube, pods))
      << "the outcome of berth-scheduler (first) and of kube-scheduler (second)";
  std::printf("dra diff: %zu pods; %.1f s in all\n", pods.size(), seconds(started));
  KeepLogsIfFailed(dir, HasFailure(), "dra diff");
}

}  // namespace
}  // namespace berth::e2e
