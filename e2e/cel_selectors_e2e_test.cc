// The DRA device-selector table (test/testdata/cel/selectors.yaml) run through its oracle, the
// pinned kube-scheduler, on the local control plane: pkg/cel's unit test checks Berth against the
// table, this test checks the table against kube-scheduler, so every expectation in it is
// upstream's answer and stays so when either moves.
//
// Each row gets a node of its own, a ResourceSlice on that node holding the row's one device (a
// pool of one slice), a ResourceClaim asking for one device with the row's expression as its
// selector, and a pod using the claim that may only go to that node. A node per row, rather than
// a driver per row on one node, because the device's driver is part of what the expressions read
// (device.driver, and attribute names without a domain belong to the driver): the device must be
// exactly the row's. Then kube-scheduler (DRAListTypeAttributes on, as the table is written for)
// schedules all the pods at once:
//   match: true   the pod is bound and its claim allocated that device;
//   match: false  the pod stays Pending, its PodScheduled message saying no claim could be
//                 allocated;
//   error: <text> the apiserver refuses the claim with a message containing the text (its
//                 validation compiles selectors, so most compile errors never reach a scheduler),
//                 or the pod stays Pending with the text in its PodScheduled message.
// Objects the apiserver's create-time checks refuse but kube-scheduler would still meet (a
// selector over the estimated cost budget, which kube-scheduler evaluates under its runtime cost
// limit; a version attribute that is not semver) are written to etcd directly, as an older
// apiserver would have stored them, so those rows reach kube-scheduler too. The rows that cannot
// run are those of the device with driver "" (no ResourceSlice can name it) whose expression reads
// device.driver; the others of that device run with a stand-in driver they never see. The summary
// line counts each kind, and the test fails on any row kube-scheduler answers otherwise.

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "e2e/diff.h"
#include "pkg/client/client.h"
#include "pkg/util/base64.h"
#include "test/testing/cluster.h"
#include "test/testing/http_call.h"
#include "test/testing/kube_scheduler.h"

namespace berth::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr const char* kResourceApi = "/apis/resource.k8s.io/v1";
// ResourceSlice.spec.driver must be a DNS subdomain; the table's "empty" device has driver "".
// Its rows that never read device.driver run with this driver instead, the others cannot run.
constexpr const char* kEmptyDriverStandIn = "empty.cel.berth.test";
// What kube-scheduler's DynamicResources plugin says when no device satisfies a claim.
constexpr const char* kUnallocatable = "cannot allocate all claims";
// The apiserver's refusal of a selector whose estimated cost exceeds the budget.
constexpr const char* kOverBudget = "too complex, exceeds cost limit";
// The apiserver's refusal of a version attribute that is not semver (the table's "badversion").
constexpr const char* kNotSemver = "must be a string compatible with semver";

enum class Expect { kMatch, kNoMatch, kError };

struct Row {
  int index = 0;
  std::string expression;
  YAML::Node device;
  Expect expect = Expect::kNoMatch;
  std::string error;  // With kError: a text the error contains.
  std::string name;   // "r<index>": the claim, pod, node suffix and pool.

  std::string Describe() const {
    std::string want = expect == Expect::kMatch     ? "match: true"
                       : expect == Expect::kNoMatch ? "match: false"
                                                    : "error: " + error;
    return "row " + std::to_string(index) + " {expression: " + expression + "} (" + want + ")";
  }
};

std::vector<Row> LoadRows() {
  const YAML::Node doc = YAML::LoadFile(testing::RepoRoot() + "/test/testdata/cel/selectors.yaml");
  std::vector<Row> rows;
  for (const auto& r : doc["rows"]) {
    Row row;
    row.index = static_cast<int>(rows.size());
    row.name = "r" + std::to_string(row.index);
    row.expression = r["expression"].as<std::string>();
    row.device = r["device"];
    if (r["error"]) {
      row.expect = Expect::kError;
      row.error = r["error"].as<std::string>();
    } else {
      row.expect = r["match"].as<bool>() ? Expect::kMatch : Expect::kNoMatch;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string DriverOf(const YAML::Node& device) {
  return device["driver"] ? device["driver"].as<std::string>() : "";
}

// A resource.k8s.io/v1 DeviceAttribute from the table's {int: }, {strings: }, ... form.
json Attribute(const YAML::Node& a) {
  if (a["bool"]) return {{"bool", a["bool"].as<bool>()}};
  if (a["int"]) return {{"int", a["int"].as<int64_t>()}};
  if (a["string"]) return {{"string", a["string"].as<std::string>()}};
  if (a["version"]) return {{"version", a["version"].as<std::string>()}};
  if (a["bools"]) return {{"bools", a["bools"].as<std::vector<bool>>()}};
  if (a["ints"]) return {{"ints", a["ints"].as<std::vector<int64_t>>()}};
  if (a["strings"]) return {{"strings", a["strings"].as<std::vector<std::string>>()}};
  return {{"versions", a["versions"].as<std::vector<std::string>>()}};
}

json SliceManifest(const Row& row, const std::string& node, const std::string& run) {
  std::string driver = DriverOf(row.device);
  if (driver.empty()) driver = kEmptyDriverStandIn;
  json device = {{"name", "dev"}};
  if (row.device["allowMultipleAllocations"]) {
    device["allowMultipleAllocations"] = row.device["allowMultipleAllocations"].as<bool>();
  }
  for (const auto& kv : row.device["attributes"]) {
    device["attributes"][kv.first.as<std::string>()] = Attribute(kv.second);
  }
  for (const auto& kv : row.device["capacity"]) {
    device["capacity"][kv.first.as<std::string>()] = {{"value", kv.second.as<std::string>()}};
  }
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", node}, {"labels", {{"berth-it", run}}}}},
          {"spec",
           {{"driver", driver},
            {"nodeName", node},
            {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", {device}}}}};
}

json ClaimManifest(const Row& row, const std::string& device_class) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", {{"name", row.name}}},
          {"spec",
           {{"devices",
             {{"requests",
               {{{"name", "dev"},
                 {"exactly",
                  {{"deviceClassName", device_class},
                   {"allocationMode", "ExactCount"},
                   {"count", 1},
                   {"selectors", {{{"cel", {{"expression", row.expression}}}}}}}}}}}}}}}};
}

json PodFor(const Row& row, const std::string& ns, const std::string& node,
            const std::string& scheduler) {
  json pod = testing::PodManifest(ns, row.name, scheduler, "10m", "16Mi");
  // matchFields on metadata.name: NodeAffinity's PreFilter narrows the cycle to this one node,
  // so the claim is only ever tried against the row's device.
  pod["spec"]["affinity"] = {
      {"nodeAffinity",
       {{"requiredDuringSchedulingIgnoredDuringExecution",
         {{"nodeSelectorTerms",
           {{{"matchFields",
              {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {node}}}}}}}}}}}}};
  pod["spec"]["resourceClaims"] = {{{"name", "dev"}, {"resourceClaimName", row.name}}};
  for (auto& c : pod["spec"]["containers"]) c["resources"]["claims"] = {{{"name", "dev"}}};
  return pod;
}

// Runs fn(0..count-1) on `parallelism` threads; rethrows the first exception once all are done.
void ParallelFor(int count, const std::function<void(int)>& fn, int parallelism = 8) {
  std::atomic<int> next{0};
  std::vector<std::thread> workers;
  std::exception_ptr failure;
  std::mutex failure_mu;
  for (int w = 0; w < parallelism; w++) {
    workers.emplace_back([&] {
      for (int i = next++; i < count; i = next++) {
        try {
          fn(i);
        } catch (...) {
          std::lock_guard lock(failure_mu);
          if (!failure) failure = std::current_exception();
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  if (failure) std::rethrow_exception(failure);
}

// POSTs `object`; the apiserver's refusal message, or "" when it was created.
std::string TryCreate(client::Client& client, const std::string& path, const json& object) {
  try {
    client.Post(path, object);
    return "";
  } catch (const client::ApiError& e) {
    return e.server_message().empty() ? e.what() : e.server_message();
  }
}

// Stores `object` under `key` in etcd, past the apiserver's validation, the way an apiserver with
// other create-time checks would have written it: the apiserver decodes JSON from storage as well
// as protobuf, and its watch cache hands the object to kube-scheduler's informers as if created.
void StoreInEtcd(const std::string& key, json object) {
  const char* etcd = std::getenv("BERTH_ETCD_URL");
  if (etcd == nullptr || *etcd == '\0') {
    throw std::runtime_error("BERTH_ETCD_URL is not set: source _output/cluster/env");
  }
  object["metadata"]["uid"] =
      "cel-oracle-" + testing::UniqueSuffix() + "-" + object["metadata"]["name"].get<std::string>();
  object["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z";
  testing::HttpCallOptions options;
  options.method = "POST";
  options.content_type = "application/json";
  options.body = json{{"key", util::Base64Encode("/registry/" + key)},
                      {"value", util::Base64Encode(object.dump())}}
                     .dump();
  const auto reply = testing::HttpCall(std::string(etcd) + "/v3/kv/put", options);
  if (reply.status != 200) {
    throw std::runtime_error("etcd put " + key + ": HTTP " + std::to_string(reply.status) + " " +
                             reply.body);
  }
}

// What became of one row.
struct Outcome {
  enum Kind { kNotRun, kRefused, kBound, kPending } kind = kNotRun;
  std::string message;  // The refusal, or the PodScheduled message.
  bool stored_in_etcd = false;
  bool allocated_its_device = false;
};

// "" when `outcome` is what `row` expects, else why not.
std::string Disagreement(const Row& row, const Outcome& outcome) {
  const auto contains = [&](const std::string& text) {
    return outcome.message.find(text) != std::string::npos;
  };
  switch (outcome.kind) {
    case Outcome::kNotRun:
      return outcome.message.empty() ? "no pod" : outcome.message;
    case Outcome::kRefused:
      if (row.expect == Expect::kError && contains(row.error)) return "";
      return "the apiserver refused the claim: " + outcome.message;
    case Outcome::kBound:
      if (row.expect != Expect::kMatch) return "kube-scheduler bound the pod (the device matched)";
      if (!outcome.allocated_its_device)
        return "bound, but the claim was not allocated row's device";
      return "";
    case Outcome::kPending:
      if (row.expect == Expect::kMatch) return "kube-scheduler left it Pending: " + outcome.message;
      if (row.expect == Expect::kNoMatch) {
        return contains(kUnallocatable) ? "" : "Pending, but not for no match: " + outcome.message;
      }
      return contains(row.error) ? "" : "Pending with another message: " + outcome.message;
  }
  return "unknown outcome";
}

// Cluster-scoped objects of the run and its claims (with their finalizer, which kube-scheduler adds
// on allocation and only a controller would remove), deleted at the end, best effort.
class Cleanup {
 public:
  Cleanup(std::shared_ptr<client::Client> client, std::string run, std::string ns,
          std::string device_class)
      : client_(std::move(client)),
        run_(std::move(run)),
        ns_(std::move(ns)),
        class_(std::move(device_class)) {}
  ~Cleanup() {
    const std::string selector = "?labelSelector=berth-it%3D" + run_;
    Try([&] { client_->Delete(client::PodsResource().Path(ns_) + "?gracePeriodSeconds=0"); });
    const std::string claims = std::string(kResourceApi) + "/namespaces/" + ns_ + "/resourceclaims";
    Try([&] {
      const json list = client_->Get(claims);
      for (const auto& c : list["items"]) {
        const std::string name = c["metadata"]["name"];
        Try([&] {
          client_->Patch(claims + "/" + name, {{"metadata", {{"finalizers", nullptr}}}},
                         client::PatchType::kMerge);
        });
      }
    });
    // Nothing else deletes them where no controller-manager runs (TestNamespace only deletes the
    // namespace's pods).
    Try([&] { client_->Delete(claims); });
    Try([&] { client_->Delete(std::string(kResourceApi) + "/resourceslices" + selector); });
    Try([&] { client_->Delete(std::string(kResourceApi) + "/deviceclasses/" + class_); });
    Try([&] { client_->Delete("/api/v1/nodes" + selector); });
  }
  Cleanup(const Cleanup&) = delete;
  Cleanup& operator=(const Cleanup&) = delete;

 private:
  static void Try(const std::function<void()>& fn) {
    try {
      fn();
    } catch (const std::exception&) {
      // Best effort: names are unique per run.
    }
  }
  std::shared_ptr<client::Client> client_;
  std::string run_, ns_, class_;
};

TEST(CelSelectorsE2E, EveryRowOfTheSelectorTableIsKubeSchedulersOutcome) {
  const auto started = std::chrono::steady_clock::now();
  const std::string binary = testing::KubeSchedulerBinary();
  const std::vector<Row> rows = LoadRows();
  ASSERT_GE(rows.size(), 150u);
  auto admin = testing::AdminClient();
  const std::string run = "cel-" + testing::UniqueSuffix();
  testing::TestNamespace ns(admin, "e2e-cel");
  const std::string device_class = run;
  Cleanup cleanup(admin, run, ns.name(), device_class);
  admin->Post(std::string(kResourceApi) + "/deviceclasses", {{"apiVersion", "resource.k8s.io/v1"},
                                                             {"kind", "DeviceClass"},
                                                             {"metadata", {{"name", device_class}}},
                                                             {"spec", json::object()}});

  std::vector<Outcome> outcomes(rows.size());
  std::vector<std::string> skipped;
  std::vector<int> runnable;
  for (const auto& row : rows) {
    if (DriverOf(row.device).empty() && row.expression.find("device.driver") != std::string::npos) {
      skipped.push_back(row.Describe());
    } else {
      runnable.push_back(row.index);
    }
  }

  // Claims first: the apiserver's answer decides which rows go on to kube-scheduler.
  const std::string claims =
      std::string(kResourceApi) + "/namespaces/" + ns.name() + "/resourceclaims";
  std::mutex mu;
  std::vector<int> scheduled;
  ParallelFor(static_cast<int>(runnable.size()), [&](int k) {
    const Row& row = rows[static_cast<size_t>(runnable[static_cast<size_t>(k)])];
    Outcome& out = outcomes[static_cast<size_t>(row.index)];
    const json claim = ClaimManifest(row, device_class);
    const std::string refused = TryCreate(*admin, claims, claim);
    if (!refused.empty() && refused.find(kOverBudget) == std::string::npos) {
      out.kind = Outcome::kRefused;
      out.message = refused;
      return;
    }
    if (!refused.empty()) {
      json stored = claim;
      stored["metadata"]["namespace"] = ns.name();
      StoreInEtcd("resourceclaims/" + ns.name() + "/" + row.name, stored);
      out.stored_in_etcd = true;
    }
    std::lock_guard lock(mu);
    scheduled.push_back(row.index);
  });
  std::sort(scheduled.begin(), scheduled.end());

  const auto node_of = [&](const Row& row) { return run + "-" + row.name; };
  ParallelFor(static_cast<int>(scheduled.size()), [&](int k) {
    const Row& row = rows[static_cast<size_t>(scheduled[static_cast<size_t>(k)])];
    json node = testing::NodeManifest(node_of(row), "4", "8Gi");
    node["metadata"]["labels"]["berth-it"] = run;
    admin->Post("/api/v1/nodes", node);
    const json slice = SliceManifest(row, node_of(row), run);
    const std::string refused =
        TryCreate(*admin, std::string(kResourceApi) + "/resourceslices", slice);
    Outcome& out = outcomes[static_cast<size_t>(row.index)];
    if (refused.find(kNotSemver) != std::string::npos) {
      StoreInEtcd("resourceslices/" + node_of(row), slice);
      out.stored_in_etcd = true;
    } else if (!refused.empty()) {
      // Not a refusal kube-scheduler could ever see past: most likely a cluster started before
      // local-cluster.sh turned DRAListTypeAttributes on.
      out.message =
          "the apiserver refused the row's device (restart the cluster if it runs "
          "without DRAListTypeAttributes): " +
          refused;
    }
  });
  std::vector<int> placed;
  for (int index : scheduled) {
    if (outcomes[static_cast<size_t>(index)].message.empty()) placed.push_back(index);
  }

  const std::string scheduler = run + "-kube-scheduler";
  const fs::path dir = fs::temp_directory_path() / ("berth-" + run);
  fs::create_directories(dir);
  const std::string pods = client::PodsResource().Path(ns.name());
  ParallelFor(static_cast<int>(placed.size()), [&](int k) {
    const Row& row = rows[static_cast<size_t>(placed[static_cast<size_t>(k)])];
    admin->Post(pods, PodFor(row, ns.name(), node_of(row), scheduler));
  });
  const auto created = std::chrono::steady_clock::now();

  {
    testing::KubeSchedulerProcess ks(KubeSchedulerDiffConfig(scheduler), dir / "kube-scheduler",
                                     {"--feature-gates=DRAListTypeAttributes=true"});
    ASSERT_TRUE(ks.WaitReady(60s)) << "kube-scheduler (" << binary << ") did not become ready:\n"
                                   << ks.process().Log();
    size_t settled = 0;
    const bool all = testing::Eventually(
        [&] {
          settled = 0;
          const json list = admin->Get(pods);
          for (const auto& p : list["items"]) settled += Settled(p) ? 1 : 0;
          return settled == placed.size();
        },
        120s);
    EXPECT_TRUE(all) << settled << " of " << placed.size()
                     << " pods settled within 120 s; kube-scheduler's log:\n"
                     << ks.process().Log();
  }
  const auto scheduled_at = std::chrono::steady_clock::now();

  std::map<std::string, json> claim_by_name;
  const json claim_list = admin->Get(claims);
  for (const auto& c : claim_list["items"])
    claim_by_name[c["metadata"]["name"].get<std::string>()] = c;
  const json pod_list = admin->Get(pods);
  for (const auto& p : pod_list["items"]) {
    const std::string name = p["metadata"]["name"];
    const Row& row = rows[static_cast<size_t>(std::stoi(name.substr(1)))];
    Outcome& out = outcomes[static_cast<size_t>(row.index)];
    const std::string node = p["spec"].value("nodeName", "");
    if (!node.empty()) {
      out.kind = Outcome::kBound;
      const json& claim = claim_by_name[row.name];
      const json results = claim.contains("status")
                               ? claim["status"]["allocation"]["devices"].value("results", json())
                               : json();
      out.allocated_its_device = node == node_of(row) && results.is_array() &&
                                 results.size() == 1 && results[0].value("pool", "") == node &&
                                 results[0].value("device", "") == "dev";
    } else if (Settled(p)) {
      out.kind = Outcome::kPending;
      out.message = PodScheduledMessage(p);
    } else {
      out.message = "never settled: " + PodScheduledMessage(p);
    }
  }

  int match = 0, no_match = 0, pending_error = 0, refused = 0, via_etcd = 0;
  std::vector<std::string> disagreements;
  for (const auto& row : rows) {
    const bool ran = std::find(runnable.begin(), runnable.end(), row.index) != runnable.end();
    if (!ran) continue;
    const Outcome& out = outcomes[static_cast<size_t>(row.index)];
    via_etcd += out.stored_in_etcd ? 1 : 0;
    const std::string why = Disagreement(row, out);
    if (!why.empty()) {
      disagreements.push_back(row.Describe() + ": " + why);
      continue;
    }
    if (out.kind == Outcome::kRefused) {
      refused++;
    } else if (row.expect == Expect::kMatch) {
      match++;
    } else if (row.expect == Expect::kNoMatch) {
      no_match++;
    } else {
      pending_error++;
    }
  }
  const auto seconds = [](auto from, auto to) {
    return std::chrono::duration<double>(to - from).count();
  };
  std::printf(
      "cel selectors: %zu rows; kube-scheduler agrees with %d (match %d, no match %d, error %d), "
      "the apiserver refused %d claims with the row's error; %d rows reached kube-scheduler "
      "through etcd; %zu not runnable; %zu disagree\n"
      "cel selectors: objects created in %.1f s, scheduled in %.1f s, %.1f s in all\n",
      rows.size(), match + no_match + pending_error, match, no_match, pending_error, refused,
      via_etcd, skipped.size(), disagreements.size(), seconds(started, created),
      seconds(created, scheduled_at), seconds(started, std::chrono::steady_clock::now()));
  for (const auto& s : skipped) {
    std::printf("  not runnable (a ResourceSlice's driver cannot be \"\"): %s\n", s.c_str());
  }
  for (const auto& d : disagreements) ADD_FAILURE() << d;
  KeepLogsIfFailed(dir, HasFailure(), "cel selectors");
}

}  // namespace
}  // namespace berth::e2e
