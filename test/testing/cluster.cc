#include "test/testing/cluster.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

namespace berth::testing {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace

std::string RepoRoot() {
  if (auto root = Env("BERTH_REPO_ROOT"); !root.empty()) return root;
  // Tests run with the repository root as working directory (see berth_test in CMakeLists.txt);
  // walk up in case a binary is started by hand from elsewhere in the tree.
  auto dir = std::filesystem::current_path();
  for (auto d = dir; !d.empty(); d = d.parent_path()) {
    if (std::filesystem::exists(d / "deploy" / "local-cluster.sh")) return d.string();
    if (d == d.root_path()) break;
  }
  return dir.string();
}

std::string ClusterDir() {
  if (auto dir = Env("BERTH_CLUSTER_DIR"); !dir.empty()) return dir;
  return RepoRoot() + "/_output/cluster";
}

client::Config AdminConfig() { return VariantConfig(""); }

client::Config VariantConfig(const std::string& variant) {
  std::string path = ClusterDir() + "/kubeconfig" + (variant.empty() ? "" : "-" + variant);
  if (!std::filesystem::exists(path)) {
    throw std::runtime_error("local control plane not found (" + path +
                             " is missing): run `make cluster-up` first");
  }
  client::Config config = client::LoadKubeconfig(path);
  // Tests create objects in bursts; the limiter is exercised by its own unit tests.
  config.qps = 0;
  return config;
}

std::shared_ptr<client::Client> AdminClient() { return client::NewClient(AdminConfig()); }

void RunClusterScript(const std::string& args) {
  std::string command = RepoRoot() + "/deploy/local-cluster.sh " + args + " >/dev/null";
  int rc = std::system(command.c_str());
  if (rc != 0)
    throw std::runtime_error("`" + command + "` failed with status " + std::to_string(rc));
}

std::string UniqueSuffix() {
  static std::atomic<int> counter{0};
  static const std::string process = [] {
    std::mt19937 rng{std::random_device{}()};
    const char* alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
    std::string s;
    for (int i = 0; i < 5; i++) s += alphabet[rng() % 36];
    return s;
  }();
  return process + "-" + std::to_string(counter++);
}

TestNamespace::TestNamespace(std::shared_ptr<client::Client> client, const std::string& prefix)
    : client_(std::move(client)), name_(prefix + "-" + UniqueSuffix()) {
  client_->Post("/api/v1/namespaces",
                {{"apiVersion", "v1"},
                 {"kind", "Namespace"},
                 {"metadata", {{"name", name_}, {"labels", {{"berth-test", "true"}}}}}});
}

TestNamespace::~TestNamespace() {
  try {
    // The namespace controller deletes the namespace's content and then the namespace. The pods go
    // first, at once: no kubelet runs here to confirm a bound pod's graceful deletion, so one with
    // a grace period would stay Terminating and keep the namespace with it.
    client_->Delete("/api/v1/namespaces/" + name_ + "/pods?gracePeriodSeconds=0");
    client_->Delete("/api/v1/namespaces/" + name_);
  } catch (const std::exception&) {
    // Best effort: a failed cleanup must not mask the test's own result.
  }
}

nlohmann::json PodManifest(const std::string& ns, const std::string& name,
                           const std::string& scheduler_name, const std::string& cpu,
                           const std::string& memory) {
  nlohmann::json container = {{"name", "app"}, {"image", "pause"}};
  nlohmann::json requests = nlohmann::json::object();
  if (!cpu.empty()) requests["cpu"] = cpu;
  if (!memory.empty()) requests["memory"] = memory;
  container["resources"] = {{"requests", requests}};
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"labels", {{"app", "berth-test"}}}}},
          {"spec",
           {{"schedulerName", scheduler_name},
            {"terminationGracePeriodSeconds", 0},
            {"containers", nlohmann::json::array({container})}}}};
}

nlohmann::json NodeManifest(const std::string& name, const std::string& cpu,
                            const std::string& memory, int max_pods) {
  nlohmann::json resources = {{"cpu", cpu},
                              {"memory", memory},
                              {"pods", std::to_string(max_pods)},
                              {"ephemeral-storage", "100Gi"}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name},
            {"labels",
             {{"kubernetes.io/hostname", name},
              {"kubernetes.io/os", "linux"},
              {"berth-test", "true"}}}}},
          {"spec", nlohmann::json::object()},
          {"status",
           {{"capacity", resources},
            {"allocatable", resources},
            {"conditions", nlohmann::json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

void CreateMany(client::Client& client, const std::string& path, int count,
                const std::function<nlohmann::json(int)>& object, int parallelism) {
  std::atomic<int> next{0};
  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(parallelism));
  std::exception_ptr failure;
  std::mutex failure_mu;
  for (int w = 0; w < parallelism; w++) {
    workers.emplace_back([&] {
      for (int i = next++; i < count; i = next++) {
        try {
          client.Post(path, object(i));
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

TestNodes::TestNodes(std::shared_ptr<client::Client> client)
    : client_(std::move(client)), id_("it-" + UniqueSuffix()) {}

TestNodes::~TestNodes() {
  for (const auto& name : names_) {
    try {
      client_->Delete("/api/v1/nodes/" + name);
    } catch (const std::exception&) {
      // Best effort: a node left behind holds no pods of later tests (they select by label).
    }
  }
}

std::string TestNodes::Add(const std::string& suffix, const std::string& cpu,
                           const std::string& memory,
                           const std::function<void(nlohmann::json&)>& customize) {
  std::string name = id_ + "-" + suffix;
  auto node = NodeManifest(name, cpu, memory);
  node["metadata"]["labels"]["berth-it"] = id_;
  if (customize) customize(node);
  client_->Post("/api/v1/nodes", node);
  names_.push_back(name);
  return name;
}

namespace {
constexpr const char* kRbacPath = "/apis/rbac.authorization.k8s.io/v1/";
}  // namespace

ClusterRoleGrant::ClusterRoleGrant(std::shared_ptr<client::Client> client, std::string name,
                                   nlohmann::json rules, const nlohmann::json& subject)
    : client_(std::move(client)), name_(std::move(name)), rules_(std::move(rules)) {
  client_->Post(std::string(kRbacPath) + "clusterroles", Role());
  client_->Post(
      std::string(kRbacPath) + "clusterrolebindings",
      {{"apiVersion", "rbac.authorization.k8s.io/v1"},
       {"kind", "ClusterRoleBinding"},
       {"metadata", {{"name", name_}}},
       {"roleRef",
        {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", name_}}},
       {"subjects", nlohmann::json::array({subject})}});
}

ClusterRoleGrant::~ClusterRoleGrant() {
  for (const char* kind : {"clusterrolebindings/", "clusterroles/"}) {
    try {
      client_->Delete(kRbacPath + std::string(kind) + name_);
    } catch (const std::exception&) {
      // Best effort; the unique name keeps a leftover from affecting other runs' assertions.
    }
  }
}

void ClusterRoleGrant::SetRules(nlohmann::json rules) {
  rules_ = std::move(rules);
  const std::string path = std::string(kRbacPath) + "clusterroles/" + name_;
  auto role = Role();
  role["metadata"]["resourceVersion"] = client_->Get(path)["metadata"]["resourceVersion"];
  client_->Put(path, role);
}

nlohmann::json ClusterRoleGrant::Role() const {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "ClusterRole"},
          {"metadata", {{"name", name_}}},
          {"rules", rules_}};
}

namespace {
constexpr const char* kPriorityClassesPath = "/apis/scheduling.k8s.io/v1/priorityclasses";
}  // namespace

PriorityClasses::PriorityClasses(std::shared_ptr<client::Client> client)
    : client_(std::move(client)), suffix_(UniqueSuffix()) {}

PriorityClasses::~PriorityClasses() {
  for (const auto& name : names_) {
    try {
      client_->Delete(std::string(kPriorityClassesPath) + "/" + name);
    } catch (const std::exception&) {
      // Best effort; the unique name keeps a leftover out of other runs' way.
    }
  }
}

std::string PriorityClasses::Add(const std::string& name, int value, bool never_preempts) {
  std::string full = name + "-" + suffix_;
  nlohmann::json object = {{"apiVersion", "scheduling.k8s.io/v1"},
                           {"kind", "PriorityClass"},
                           {"metadata", {{"name", full}}},
                           {"value", value}};
  if (never_preempts) object["preemptionPolicy"] = "Never";
  client_->Post(kPriorityClassesPath, object);
  names_.push_back(full);
  // The apiserver's Priority admission reads classes from its own informer, so a pod created
  // right after its class can be refused. A dry-run pod passes admission once the class is seen.
  const nlohmann::json probe = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "priority-class-probe"}}},
      {"spec",
       {{"priorityClassName", full}, {"containers", {{{"name", "c"}, {"image", "pause"}}}}}}};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (true) {
    try {
      client_->Post("/api/v1/namespaces/default/pods?dryRun=All", probe);
      return full;
    } catch (const client::ApiError& e) {
      if (e.http_status() != 403 || std::chrono::steady_clock::now() > deadline) throw;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

ServiceAccountToken::ServiceAccountToken(std::shared_ptr<client::Client> admin, std::string ns,
                                         std::string name)
    : admin_(std::move(admin)), ns_(std::move(ns)), name_(std::move(name)) {
  const std::string path = "/api/v1/namespaces/" + ns_ + "/serviceaccounts";
  admin_->Post(path,
               {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", name_}}}});
  auto request =
      admin_->Post(path + "/" + name_ + "/token", {{"apiVersion", "authentication.k8s.io/v1"},
                                                   {"kind", "TokenRequest"},
                                                   {"spec", {{"expirationSeconds", 3600}}}});
  token_ = request["status"]["token"].get<std::string>();
}

ServiceAccountToken::~ServiceAccountToken() {
  try {
    admin_->Delete("/api/v1/namespaces/" + ns_ + "/serviceaccounts/" + name_);
  } catch (const std::exception&) {
    // Best effort: the unique name keeps a leftover from meaning anything to another run.
  }
}

nlohmann::json ServiceAccountToken::Subject() const {
  return {{"kind", "ServiceAccount"}, {"name", name_}, {"namespace", ns_}};
}

std::string ServiceAccountToken::UserName() const {
  return "system:serviceaccount:" + ns_ + ":" + name_;
}

bool WaitUntilAllowed(client::Client& admin, const std::string& user, const std::string& verb,
                      const std::string& path, bool allowed) {
  const nlohmann::json review = {
      {"apiVersion", "authorization.k8s.io/v1"},
      {"kind", "SubjectAccessReview"},
      {"spec", {{"user", user}, {"nonResourceAttributes", {{"path", path}, {"verb", verb}}}}}};
  return Eventually(
      [&] {
        auto answer = admin.Post("/apis/authorization.k8s.io/v1/subjectaccessreviews", review);
        return answer["status"].value("allowed", false) == allowed;
      },
      std::chrono::seconds(10));
}

}  // namespace berth::testing
