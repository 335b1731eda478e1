#ifndef BERTH_TEST_TESTING_CLUSTER_H_
#define BERTH_TEST_TESTING_CLUSTER_H_

// Helpers for tests that run against the local control plane (deploy/local-cluster.sh), shared
// by test/integration and e2e. They fail loudly when the cluster is not up: an integration test
// never passes by skipping.

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pkg/client/client.h"
#include "test/testing/eventually.h"

namespace berth::testing {

// _output/cluster under the repository root (or $BERTH_CLUSTER_DIR).
std::string ClusterDir();
std::string RepoRoot();

// The admin kubeconfig of the local control plane; fails the test (throws) when missing.
client::Config AdminConfig();
// A kubeconfig variant written by local-cluster.sh: "noperms", "wrong-ca".
client::Config VariantConfig(const std::string& variant);
std::shared_ptr<client::Client> AdminClient();

// Runs deploy/local-cluster.sh with `args`; throws on a non-zero exit.
void RunClusterScript(const std::string& args);

// A namespace with a unique name, deleted (best effort) when the object goes away; the
// controller-manager's namespace controller then removes what is in it, without the test waiting.
class TestNamespace {
 public:
  TestNamespace(std::shared_ptr<client::Client> client, const std::string& prefix);
  ~TestNamespace();
  TestNamespace(const TestNamespace&) = delete;
  TestNamespace& operator=(const TestNamespace&) = delete;
  const std::string& name() const { return name_; }

 private:
  std::shared_ptr<client::Client> client_;
  std::string name_;
};

// Nodes created by one test, all labelled berth-it=<id> so its pods can select exactly them,
// deleted (best effort) when the object goes away.
class TestNodes {
 public:
  explicit TestNodes(std::shared_ptr<client::Client> client);
  ~TestNodes();
  TestNodes(const TestNodes&) = delete;
  TestNodes& operator=(const TestNodes&) = delete;
  const std::string& id() const { return id_; }
  // Creates node "<id>-<suffix>" and returns its name.
  std::string Add(const std::string& suffix, const std::string& cpu, const std::string& memory,
                  const std::function<void(nlohmann::json&)>& customize = nullptr);

 private:
  std::shared_ptr<client::Client> client_;
  std::string id_;
  std::vector<std::string> names_;
};

// A pause pod as a user would write it.
nlohmann::json PodManifest(const std::string& ns, const std::string& name,
                           const std::string& scheduler_name = "berth-scheduler",
                           const std::string& cpu = "100m", const std::string& memory = "64Mi");
// A Node object with capacity/allocatable, the usual labels and Ready condition.
nlohmann::json NodeManifest(const std::string& name, const std::string& cpu,
                            const std::string& memory, int max_pods = 110);

// Creates `count` objects with POSTs from `parallelism` threads; object(i) builds the i-th.
void CreateMany(client::Client& client, const std::string& path, int count,
                const std::function<nlohmann::json(int)>& object, int parallelism = 8);

// A ClusterRole with `rules` and a ClusterRoleBinding of it to `subject` (an RBAC subject object),
// both named `name`; removed (best effort) when the object goes away, so other tests see the
// subject's rights as they were.
class ClusterRoleGrant {
 public:
  ClusterRoleGrant(std::shared_ptr<client::Client> client, std::string name, nlohmann::json rules,
                   const nlohmann::json& subject);
  ~ClusterRoleGrant();
  ClusterRoleGrant(const ClusterRoleGrant&) = delete;
  ClusterRoleGrant& operator=(const ClusterRoleGrant&) = delete;
  // Replaces the role's rules.
  void SetRules(nlohmann::json rules);

 private:
  nlohmann::json Role() const;

  std::shared_ptr<client::Client> client_;
  std::string name_;
  nlohmann::json rules_;
};

// A ServiceAccount and a one-hour token for it (TokenRequest); deleted when the object goes away.
class ServiceAccountToken {
 public:
  ServiceAccountToken(std::shared_ptr<client::Client> admin, std::string ns, std::string name);
  ~ServiceAccountToken();
  ServiceAccountToken(const ServiceAccountToken&) = delete;
  ServiceAccountToken& operator=(const ServiceAccountToken&) = delete;

  const std::string& token() const { return token_; }
  // The RBAC subject naming it, and the user name its token authenticates as.
  nlohmann::json Subject() const;
  std::string UserName() const;

 private:
  std::shared_ptr<client::Client> admin_;
  std::string ns_, name_, token_;
};

// Waits (up to 10 s) until the apiserver's authorizer says `allowed` for `user` doing `verb` on
// the non-resource `path`: RBAC sees a new binding a moment after it is written, and
// berth-scheduler caches a denial for 10 s. False when it never did.
bool WaitUntilAllowed(client::Client& admin, const std::string& user, const std::string& verb,
                      const std::string& path, bool allowed = true);

// PriorityClasses (scheduling.k8s.io/v1) named "<name>-<unique suffix>", deleted (best effort)
// when the object goes away.
class PriorityClasses {
 public:
  explicit PriorityClasses(std::shared_ptr<client::Client> client);
  ~PriorityClasses();
  PriorityClasses(const PriorityClasses&) = delete;
  PriorityClasses& operator=(const PriorityClasses&) = delete;
  // Creates the class and returns its full name. `never_preempts`: preemptionPolicy Never.
  std::string Add(const std::string& name, int value, bool never_preempts = false);

 private:
  std::shared_ptr<client::Client> client_;
  std::string suffix_;
  std::vector<std::string> names_;
};

// A unique suffix for object names in this process.
std::string UniqueSuffix();

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_CLUSTER_H_
