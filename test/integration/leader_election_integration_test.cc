// Leader election against the real local control plane (deploy/local-cluster.sh): Leases in
// kube-system written by competing electors, each with a client of its own as separate
// processes would have, and read back with the admin client.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "pkg/client/client.h"
#include "pkg/leaderelection/leader_elector.h"
#include "test/testing/cluster.h"

namespace berth::leaderelection {
namespace {

using namespace std::chrono_literals;
using testing::AdminClient;
using testing::Eventually;
using ::testing::HasSubstr;

constexpr char kNamespace[] = "kube-system";

// Short timings so a takeover after expiry is observable within a test; still the ratios of the
// defaults (lease > renew > 1.2 * retry).
LeaderElectionConfig ConfigFor(const std::string& lease, const std::string& identity) {
  LeaderElectionConfig config;
  config.lease_namespace = kNamespace;
  config.lease_name = lease;
  config.identity = identity;
  config.lease_duration = 3s;
  config.renew_deadline = 2s;
  config.retry_period = 500ms;
  return config;
}

// A client of its own per candidate, with a per-request timeout within the renew deadline.
std::shared_ptr<client::Client> CandidateClient(
    const client::Config& base = testing::AdminConfig()) {
  client::Config config = base;
  config.timeout = 2s;
  return client::NewClient(config);
}

// `condition` held at every sample (every 50 ms) over `period`.
bool Consistently(const std::function<bool()>& condition, std::chrono::milliseconds period) {
  const auto until = std::chrono::steady_clock::now() + period;
  while (std::chrono::steady_clock::now() < until) {
    if (!condition()) return false;
    std::this_thread::sleep_for(50ms);
  }
  return condition();
}

// A lease name unique to the test, deleted afterwards.
class TestLease {
 public:
  explicit TestLease(const std::string& prefix)
      : admin_(AdminClient()), name_("berth-le-" + prefix + "-" + testing::UniqueSuffix()) {}
  ~TestLease() {
    try {
      admin_->Delete(client::LeasesResource().Path(kNamespace, name_));
    } catch (const std::exception&) {  // Never created, or already gone.
    }
  }
  TestLease(const TestLease&) = delete;
  TestLease& operator=(const TestLease&) = delete;

  const std::string& name() const { return name_; }
  nlohmann::json Spec() const {
    return admin_->Get(client::LeasesResource().Path(kNamespace, name_))["spec"];
  }

 private:
  std::shared_ptr<client::Client> admin_;
  std::string name_;
};

// One elector and what its callbacks saw.
class Candidate {
 public:
  Candidate(const TestLease& lease, const std::string& identity,
            std::shared_ptr<client::Client> client = CandidateClient()) {
    LeaderCallbacks callbacks;
    callbacks.on_started_leading = [this] { started++; };
    callbacks.on_stopped_leading = [this] { stopped++; };
    elector = std::make_unique<LeaderElector>(std::move(client), ConfigFor(lease.name(), identity),
                                              callbacks);
  }

  std::atomic<int> started{0};
  std::atomic<int> stopped{0};
  std::unique_ptr<LeaderElector> elector;
};

bool IsMicroTime(const nlohmann::json& value) {
  static const std::regex kMicroTime(
      R"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z)");
  return value.is_string() && std::regex_match(value.get<std::string>(), kMicroTime);
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

TEST(LeaderElectionIntegrationTest, ExactlyOneOfTwoCandidatesLeadsAndTheLeaseNamesIt) {
  TestLease lease("one");
  Candidate a(lease, "candidate-a-" + testing::UniqueSuffix());
  Candidate b(lease, "candidate-b-" + testing::UniqueSuffix());
  a.elector->Run();
  b.elector->Run();
  auto leaders = [&] { return (a.elector->IsLeader() ? 1 : 0) + (b.elector->IsLeader() ? 1 : 0); };
  ASSERT_TRUE(Eventually([&] { return leaders() == 1; }, 15s));
  Candidate& leader = a.elector->IsLeader() ? a : b;
  Candidate& standby = a.elector->IsLeader() ? b : a;
  EXPECT_TRUE(Consistently([&] { return leader.elector->IsLeader() && leaders() == 1; }, 2s));

  const auto spec = lease.Spec();
  EXPECT_EQ(spec["holderIdentity"], leader.elector->Identity());
  EXPECT_EQ(spec["leaseDurationSeconds"], 3);
  EXPECT_EQ(spec["leaseTransitions"], 0);
  EXPECT_TRUE(IsMicroTime(spec["acquireTime"])) << spec;
  EXPECT_TRUE(IsMicroTime(spec["renewTime"])) << spec;
  EXPECT_TRUE(Eventually([&] { return lease.Spec()["renewTime"] != spec["renewTime"]; }, 5s));
  EXPECT_EQ(lease.Spec()["acquireTime"], spec["acquireTime"]);

  EXPECT_EQ(standby.elector->Leader(), leader.elector->Identity());
  EXPECT_EQ(leader.started, 1);
  EXPECT_EQ(standby.started, 0);
  EXPECT_TRUE(leader.elector->Healthy());
  EXPECT_TRUE(standby.elector->Healthy());
}

TEST(LeaderElectionIntegrationTest, ReleaseHandsTheLeaseOverWithinARetryPeriod) {
  TestLease lease("release");
  Candidate a(lease, "candidate-a-" + testing::UniqueSuffix());
  Candidate b(lease, "candidate-b-" + testing::UniqueSuffix());
  a.elector->Run();
  ASSERT_TRUE(Eventually([&] { return a.elector->IsLeader(); }, 15s));
  b.elector->Run();
  ASSERT_TRUE(Eventually([&] { return b.elector->Leader() == a.elector->Identity(); }, 15s));

  a.elector->Release();
  const auto released = std::chrono::steady_clock::now();
  EXPECT_FALSE(a.elector->IsLeader());
  EXPECT_EQ(a.stopped, 1);
  const auto spec = lease.Spec();
  if (spec["holderIdentity"] == "") {
    EXPECT_EQ(spec["leaseDurationSeconds"], 1);
  } else {  // b was quicker than this read.
    EXPECT_EQ(spec["holderIdentity"], b.elector->Identity());
  }

  // b's next attempt (at most retry_period * (1 + JitterFactor) away) takes the free lease; an
  // expiry-based takeover could not happen before lease_duration - retry_period.
  ASSERT_TRUE(Eventually([&] { return b.elector->IsLeader(); }, 2200ms))
      << "b still not leading " << Seconds(std::chrono::steady_clock::now() - released)
      << "s after the release";
  const auto taken = lease.Spec();
  EXPECT_EQ(taken["holderIdentity"], b.elector->Identity());
  EXPECT_EQ(taken["leaseTransitions"], 1);
  EXPECT_EQ(taken["leaseDurationSeconds"], 3);
  EXPECT_TRUE(Eventually([&] { return b.started == 1; }, 5s));
}

TEST(LeaderElectionIntegrationTest, WithoutReleaseTheStandbyWaitsOutTheLeaseDuration) {
  TestLease lease("stop");
  Candidate a(lease, "candidate-a-" + testing::UniqueSuffix());
  Candidate b(lease, "candidate-b-" + testing::UniqueSuffix());
  a.elector->Run();
  ASSERT_TRUE(Eventually([&] { return a.elector->IsLeader(); }, 15s));
  b.elector->Run();
  ASSERT_TRUE(Eventually([&] { return b.elector->Leader() == a.elector->Identity(); }, 15s));

  a.elector->Stop();  // As a crash looks to b: no release, the lease just stops moving.
  const auto stopped = std::chrono::steady_clock::now();
  EXPECT_EQ(lease.Spec()["holderIdentity"], a.elector->Identity());
  EXPECT_EQ(a.stopped, 0);

  // a renewed at most one retry period (plus a request) before it stopped, and b counts the
  // lease duration from when it saw that renewal: no takeover for about 2.5s.
  EXPECT_TRUE(Consistently([&] { return !b.elector->IsLeader(); }, 2s));
  ASSERT_TRUE(Eventually([&] { return b.elector->IsLeader(); }, 15s));
  const double took = Seconds(std::chrono::steady_clock::now() - stopped);
  EXPECT_GE(took, 2.0);
  const auto spec = lease.Spec();
  EXPECT_EQ(spec["holderIdentity"], b.elector->Identity());
  EXPECT_EQ(spec["leaseTransitions"], 1);
  EXPECT_TRUE(Eventually([&] { return b.started == 1; }, 5s));
}

TEST(LeaderElectionIntegrationTest, TransitionsCountEveryChangeOfHolder) {
  TestLease lease("transitions");
  Candidate a(lease, "candidate-a-" + testing::UniqueSuffix());
  a.elector->Run();
  ASSERT_TRUE(Eventually([&] { return a.elector->IsLeader(); }, 15s));
  EXPECT_EQ(lease.Spec()["leaseTransitions"], 0);

  Candidate b(lease, "candidate-b-" + testing::UniqueSuffix());
  b.elector->Run();
  a.elector->Release();
  ASSERT_TRUE(Eventually([&] { return b.elector->IsLeader(); }, 15s));
  EXPECT_EQ(lease.Spec()["leaseTransitions"], 1);

  Candidate c(lease, "candidate-c-" + testing::UniqueSuffix());
  c.elector->Run();
  b.elector->Release();
  ASSERT_TRUE(Eventually([&] { return c.elector->IsLeader(); }, 15s));
  const auto spec = lease.Spec();
  EXPECT_EQ(spec["holderIdentity"], c.elector->Identity());
  EXPECT_EQ(spec["leaseTransitions"], 2);
}

// Every log line while in scope.
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<Sink>()), previous_(spdlog::default_logger()) {
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink_));
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  std::string All() const { return sink_->All(); }

 private:
  class Sink : public spdlog::sinks::base_sink<std::mutex> {
   public:
    std::string All() {
      std::lock_guard lock(mutex_);
      return all_;
    }

   protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
      all_.append(msg.payload.data(), msg.payload.size());
      all_ += "\n";
    }
    void flush_() override {}

   private:
    std::string all_;
  };

  std::shared_ptr<Sink> sink_;
  std::shared_ptr<spdlog::logger> previous_;
};

TEST(LeaderElectionIntegrationTest, ACandidateWithoutRbacNeverLeadsAndSaysWhy) {
  TestLease lease("noperms");
  LogCapture log;
  Candidate a(lease, "candidate-a-" + testing::UniqueSuffix(),
              CandidateClient(testing::VariantConfig("noperms")));
  a.elector->Run();
  ASSERT_TRUE(Eventually([&] { return log.All().find("forbidden") != std::string::npos; }, 15s));
  EXPECT_THAT(log.All(), HasSubstr("failed to acquire lease kube-system/" + lease.name() +
                                   ": forbidden: cannot get resource \"leases\" in API group "
                                   "\"coordination.k8s.io\" in namespace \"kube-system\""));
  EXPECT_FALSE(a.elector->IsLeader());
  EXPECT_FALSE(a.elector->Healthy());
  try {
    lease.Spec();
    ADD_FAILURE() << "a forbidden candidate created the lease";
  } catch (const client::ApiError& e) {
    EXPECT_EQ(e.reason(), client::ErrorReason::kNotFound);
  }
}

TEST(LeaderElectionIntegrationTest, AMissingNamespaceIsNamedInTheLog) {
  LogCapture log;
  const std::string ns = "berth-missing-" + testing::UniqueSuffix();
  LeaderElectionConfig config = ConfigFor("berth-le-missing", "candidate-a");
  config.lease_namespace = ns;
  LeaderElector elector(CandidateClient(), config, {});
  elector.Run();
  ASSERT_TRUE(Eventually([&] { return log.All().find("not found") != std::string::npos; }, 15s));
  EXPECT_THAT(log.All(), HasSubstr("cannot create lease " + ns + "/berth-le-missing: namespace \"" +
                                   ns + "\" not found"));
  EXPECT_FALSE(elector.IsLeader());
  EXPECT_FALSE(elector.Healthy());
}

}  // namespace
}  // namespace berth::leaderelection
