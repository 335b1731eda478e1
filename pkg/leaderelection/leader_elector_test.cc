#include "pkg/leaderelection/leader_elector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test/testing/fault_injecting_lease_client.h"

namespace berth::leaderelection {
namespace {

using testing::FaultInjectingLeaseClient;

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kLease[] = "berth-test";
constexpr char kDescription[] = "kube-system/berth-test";

// Short enough for unit tests; the renew deadline and expiry are driven by FakeClock where a
// test asserts on them, so only the polling cadence is real time.
LeaderElectionConfig TestConfig(const std::string& identity) {
  LeaderElectionConfig config;
  config.lease_namespace = "kube-system";
  config.lease_name = kLease;
  config.identity = identity;
  config.lease_duration = 600ms;
  config.renew_deadline = 400ms;
  config.retry_period = 20ms;
  config.health_grace = 100ms;
  return config;
}

// Generous: these bound how long a broken implementation makes the test wait, not performance.
bool Eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout = 10s) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (condition()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return condition();
}

// `condition` held at every sample over `period`.
bool Consistently(const std::function<bool()>& condition, std::chrono::milliseconds period) {
  const auto until = std::chrono::steady_clock::now() + period;
  while (std::chrono::steady_clock::now() < until) {
    if (!condition()) return false;
    std::this_thread::sleep_for(5ms);
  }
  return condition();
}

// Waits until the server answered `n` more GETs: the candidate has seen the current record.
void AwaitGets(const FaultInjectingLeaseClient& server, int n) {
  const int64_t target = server.Requests("get") + n;
  ASSERT_TRUE(Eventually([&] { return server.Requests("get") >= target; }));
}

// What the callbacks saw.
struct Observed {
  std::atomic<int> started{0};
  std::atomic<int> stopped{0};
  std::mutex mu;
  std::vector<std::string> leaders;

  LeaderCallbacks Callbacks() {
    LeaderCallbacks callbacks;
    callbacks.on_started_leading = [this] { started++; };
    callbacks.on_stopped_leading = [this] { stopped++; };
    callbacks.on_new_leader = [this](const std::string& leader) {
      std::lock_guard lock(mu);
      leaders.push_back(leader);
    };
    return callbacks;
  }
  std::vector<std::string> Leaders() {
    std::lock_guard lock(mu);
    return leaders;
  }
};

// A spec another client wrote; its timestamps are long past by any wall clock.
nlohmann::json OtherHolderSpec(const std::string& holder, int64_t seconds, int64_t transitions,
                               const std::string& renew_time = "2000-01-01T00:00:00.000000Z") {
  return {{"holderIdentity", holder},
          {"leaseDurationSeconds", seconds},
          {"acquireTime", "2000-01-01T00:00:00.000000Z"},
          {"renewTime", renew_time},
          {"leaseTransitions", transitions}};
}

nlohmann::json Spec(const FaultInjectingLeaseClient& server) {
  const auto lease = server.Lease(kLease);
  return lease ? (*lease)["spec"] : nlohmann::json();
}

bool IsMicroTime(const nlohmann::json& value) {
  static const std::regex kMicroTime(
      R"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z)");
  return value.is_string() && std::regex_match(value.get<std::string>(), kMicroTime);
}

// Every log line, as "level: message", while in scope.
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<Sink>()), previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>("capture", sink_);
    logger->set_level(spdlog::level::info);
    spdlog::set_default_logger(logger);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // Lines that contain `text`.
  int Count(const std::string& text) const {
    int n = 0;
    for (const auto& line : sink_->Lines()) n += line.find(text) != std::string::npos ? 1 : 0;
    return n;
  }
  std::string All() const {
    std::string all;
    for (const auto& line : sink_->Lines()) all += line + "\n";
    return all;
  }

 private:
  class Sink : public spdlog::sinks::base_sink<std::mutex> {
   public:
    std::vector<std::string> Lines() {
      std::lock_guard lock(mutex_);
      return lines_;
    }

   protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
      lines_.push_back(std::string(spdlog::level::to_string_view(msg.level).data()) + ": " +
                       std::string(msg.payload.data(), msg.payload.size()));
    }
    void flush_() override {}

   private:
    std::vector<std::string> lines_;
  };

  std::shared_ptr<Sink> sink_;
  std::shared_ptr<spdlog::logger> previous_;
};

// --- configuration ---------------------------------------------------------------------------

std::string ValidationMessage(const std::function<void(LeaderElectionConfig&)>& mutate) {
  LeaderElectionConfig config = TestConfig("a");
  mutate(config);
  try {
    ValidateConfig(config);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(ValidateConfigTest, AcceptsUpstreamDefaults) {
  LeaderElectionConfig config;
  config.lease_namespace = "kube-system";
  config.lease_name = "berth-scheduler";
  config.identity = DefaultIdentity();
  EXPECT_NO_THROW(ValidateConfig(config));
  EXPECT_EQ(ValidationMessage([](auto&) {}), "(accepted)");
}

TEST(ValidateConfigTest, NamesTheOffendingField) {
  EXPECT_EQ(ValidationMessage([](auto& c) {
              c.lease_duration = 10s;
              c.renew_deadline = 10s;
            }),
            "leaderElection.leaseDuration (10s) must be greater than "
            "leaderElection.renewDeadline (10s)");
  EXPECT_EQ(ValidationMessage([](auto& c) {
              c.lease_duration = 15s;
              c.renew_deadline = 2400ms;
              c.retry_period = 2s;
            }),
            "leaderElection.renewDeadline (2400ms) must be greater than "
            "leaderElection.retryPeriod (2s) * 1.2");
  EXPECT_EQ(ValidationMessage([](auto& c) {
              c.lease_duration = 15s;
              c.renew_deadline = 2401ms;
              c.retry_period = 2s;
            }),
            "(accepted)");
  EXPECT_THAT(ValidationMessage([](auto& c) { c.lease_duration = -1s; }),
              HasSubstr("leaderElection.leaseDuration must be greater than zero"));
  EXPECT_THAT(ValidationMessage([](auto& c) { c.renew_deadline = 0ms; }),
              HasSubstr("leaderElection.renewDeadline must be greater than zero"));
  EXPECT_THAT(ValidationMessage([](auto& c) { c.retry_period = 0ms; }),
              HasSubstr("leaderElection.retryPeriod must be greater than zero"));
  EXPECT_THAT(ValidationMessage([](auto& c) { c.lease_name.clear(); }),
              HasSubstr("leaderElection.resourceName"));
  EXPECT_THAT(ValidationMessage([](auto& c) { c.lease_namespace.clear(); }),
              HasSubstr("leaderElection.resourceNamespace"));
  EXPECT_THAT(ValidationMessage([](auto& c) { c.identity.clear(); }), HasSubstr("identity"));
  EXPECT_THAT(ValidationMessage([](auto& c) { c.health_grace = -1ms; }), HasSubstr("health grace"));
}

TEST(LeaderElectorTest, ConstructorRejectsAnInvalidConfigOrNoClient) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  LeaderElectionConfig config = TestConfig("a");
  config.renew_deadline = config.lease_duration;
  EXPECT_THROW({ LeaderElector elector(server, config, {}); }, std::invalid_argument);
  EXPECT_THROW({ LeaderElector elector(nullptr, TestConfig("a"), {}); }, std::invalid_argument);
}

TEST(DefaultIdentityTest, IsHostnameUnderscoreUuidV4) {
  std::array<char, 256> host{};
  ASSERT_EQ(gethostname(host.data(), host.size() - 1), 0);
  const std::string identity = DefaultIdentity();
  const std::string prefix = std::string(host.data()) + "_";
  ASSERT_EQ(identity.rfind(prefix, 0), 0u) << identity;
  EXPECT_TRUE(std::regex_match(
      identity.substr(prefix.size()),
      std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")))
      << identity;
  EXPECT_NE(DefaultIdentity(), identity);
}

// --- acquiring -------------------------------------------------------------------------------

TEST(LeaderElectorTest, CreatesTheLeaseWhenAbsentAndLeads) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  Observed observed;
  LeaderElector elector(server, TestConfig("a"), observed.Callbacks());
  EXPECT_FALSE(elector.IsLeader());
  EXPECT_FALSE(elector.Healthy());
  EXPECT_EQ(elector.Identity(), "a");

  elector.Run();
  elector.Run();  // Only the first call starts anything.
  ASSERT_TRUE(Eventually([&] { return observed.started == 1; }));
  EXPECT_TRUE(elector.IsLeader());
  EXPECT_EQ(elector.Leader(), "a");
  EXPECT_TRUE(elector.Healthy());
  EXPECT_THAT(observed.Leaders(), ElementsAre("a"));
  EXPECT_EQ(server->Posts(), 1);

  const auto lease = *server->Lease(kLease);
  EXPECT_EQ(lease["apiVersion"], "coordination.k8s.io/v1");
  EXPECT_EQ(lease["kind"], "Lease");
  EXPECT_EQ(lease["metadata"]["name"], kLease);
  EXPECT_EQ(lease["metadata"]["namespace"], "kube-system");
  const auto& spec = lease["spec"];
  EXPECT_EQ(spec["holderIdentity"], "a");
  EXPECT_EQ(spec["leaseDurationSeconds"], 1);  // 600ms, rounded up: the apiserver rejects 0.
  EXPECT_EQ(spec["leaseTransitions"], 0);
  EXPECT_TRUE(IsMicroTime(spec["acquireTime"])) << spec;
  EXPECT_TRUE(IsMicroTime(spec["renewTime"])) << spec;
  EXPECT_EQ(observed.stopped, 0);
}

TEST(LeaderElectorTest, RenewsWithTheResourceVersionItReadKeepingAcquireTimeAndTransitions) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  Observed observed;
  LeaderElector elector(server, TestConfig("a"), observed.Callbacks());
  elector.Run();
  ASSERT_TRUE(Eventually([&] { return elector.IsLeader(); }));
  const auto first = Spec(*server);
  ASSERT_TRUE(Eventually([&] { return server->WrittenSpecs().size() >= 3; }));

  const auto renewed = Spec(*server);
  EXPECT_EQ(renewed["holderIdentity"], "a");
  EXPECT_EQ(renewed["acquireTime"], first["acquireTime"]);
  EXPECT_NE(renewed["renewTime"], first["renewTime"]);
  EXPECT_EQ(renewed["leaseTransitions"], 0);
  EXPECT_EQ(server->PutsWithoutResourceVersion(), 0);
  EXPECT_EQ(server->Posts(), 1);
  EXPECT_TRUE(elector.IsLeader());
  EXPECT_TRUE(Eventually([&] { return observed.started == 1; }));
  EXPECT_EQ(observed.stopped, 0);
}

TEST(LeaderElectorTest, AHeldLeaseIsTakenOnlyAfterLeaseDurationSinceItWasSeenToChange) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  // renewTime is decades old by the wall clock: only the local observation time may count.
  server->WriteSpec(kLease, OtherHolderSpec("other", 15, 3));
  auto clock = std::make_shared<util::FakeClock>();
  Observed observed;
  LeaderElector elector(server, TestConfig("a"), observed.Callbacks(), clock);
  elector.Run();
  AwaitGets(*server, 5);
  EXPECT_FALSE(elector.IsLeader());
  EXPECT_EQ(elector.Leader(), "other");
  EXPECT_TRUE(elector.Healthy());
  EXPECT_THAT(observed.Leaders(), ElementsAre("other"));

  clock->Step(14s);
  AwaitGets(*server, 5);
  EXPECT_FALSE(elector.IsLeader());
  EXPECT_EQ(server->Requests("update"), 0);

  clock->Step(1s);
  ASSERT_TRUE(Eventually([&] { return elector.IsLeader(); }));
  const auto spec = Spec(*server);
  EXPECT_EQ(spec["holderIdentity"], "a");
  EXPECT_EQ(spec["leaseTransitions"], 4);
  EXPECT_NE(spec["acquireTime"], "2000-01-01T00:00:00.000000Z");
  EXPECT_EQ(spec["leaseDurationSeconds"], 1);
  EXPECT_TRUE(Eventually([&] { return observed.started == 1; }));
  EXPECT_TRUE(Eventually([&] { return observed.Leaders().size() == 2; }));
  EXPECT_THAT(observed.Leaders(), ElementsAre("other", "a"));
}

TEST(LeaderElectorTest, RenewalsByTheHolderPostponeTheTakeover) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  server->WriteSpec(kLease, OtherHolderSpec("other", 15, 0));
  auto clock = std::make_shared<util::FakeClock>();
  Observed observed;
  LeaderElector elector(server, TestConfig("a"), observed.Callbacks(), clock);
  elector.Run();
  AwaitGets(*server, 3);

  clock->Step(10s);
  server->WriteSpec(kLease, OtherHolderSpec("other", 15, 0, "2000-01-01T00:00:10.000000Z"));
  AwaitGets(*server, 3);
  clock->Step(10s);  // 20s since the first observation, 10s since the renewal.
  AwaitGets(*server, 5);
  EXPECT_FALSE(elector.IsLeader());

  clock->Step(5s);
  ASSERT_TRUE(Eventually([&] { return elector.IsLeader(); }));
  EXPECT_EQ(Spec(*server)["leaseTransitions"], 1);
}

TEST(LeaderElectorTest, AReleasedLeaseIsTakenAtOnce) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  server->WriteSpec(kLease, OtherHolderSpec("", 1, 7));
  auto clock = std::make_shared<util::FakeClock>();  // Never moves: expiry cannot be the reason.
  Observed observed;
  LeaderElector elector(server, TestConfig("a"), observed.Callbacks(), clock);
  elector.Run();
  ASSERT_TRUE(Eventually([&] { return elector.IsLeader(); }));
  EXPECT_EQ(Spec(*server)["holderIdentity"], "a");
  EXPECT_EQ(Spec(*server)["leaseTransitions"], 8);
  EXPECT_EQ(server->Posts(), 0);
}

TEST(LeaderElectorTest, ALeaseWithAnEmptySpecIsTaken) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  server->WriteSpec(kLease, nlohmann::json::object());
  auto clock = std::make_shared<util::FakeClock>();
  Observed observed;
  LeaderElector elector(server, TestConfig("a"), observed.Callbacks(), clock);
  elector.Run();
  ASSERT_TRUE(Eventually([&] { return elector.IsLeader(); }));
  EXPECT_EQ(Spec(*server)["leaseTransitions"], 1);
}

TEST(LeaderElectorTest, ConcurrentCandidatesElectExactlyOne) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  std::array<Observed, 3> observed;
  std::vector<std::unique_ptr<LeaderElector>> electors;
  for (size_t i = 0; i < observed.size(); i++) {
    electors.push_back(std::make_unique<LeaderElector>(
        server, TestConfig("candidate-" + std::to_string(i)), observed[i].Callbacks()));
  }
  for (auto& elector : electors) elector->Run();
  auto leaders = [&] {
    int n = 0;
    for (auto& elector : electors) n += elector->IsLeader() ? 1 : 0;
    return n;
  };
  ASSERT_TRUE(Eventually([&] { return leaders() == 1; }));
  EXPECT_TRUE(Consistently([&] { return leaders() == 1; }, 300ms));

  const std::string winner = Spec(*server)["holderIdentity"];
  int started = 0;
  for (size_t i = 0; i < electors.size(); i++) {
    EXPECT_EQ(electors[i]->IsLeader(), electors[i]->Identity() == winner);
    EXPECT_EQ(electors[i]->Leader(), winner);
    started += observed[i].started;
  }
  EXPECT_EQ(started, 1);
  EXPECT_EQ(server->Posts(), 1);
  EXPECT_EQ(Spec(*server)["leaseTransitions"], 0);
}

TEST(LeaderElectorTest, ConflictingWritesAreReadAgainAndTheLeaseKept) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  Observed observed;
  LeaderElector elector(server, TestConfig("a"), observed.Callbacks());
  elector.Run();
  ASSERT_TRUE(Eventually([&] { return elector.IsLeader(); }));
  const int64_t gets = server->Requests("get");
  const size_t writes = server->WrittenSpecs().size();

  server->InjectConflicts(3);
  ASSERT_TRUE(Eventually([&] { return server->WrittenSpecs().size() >= writes + 3; }));
  EXPECT_GT(server->Requests("get"), gets);  // The fallback re-read the lease.
  EXPECT_TRUE(elector.IsLeader());
  EXPECT_EQ(Spec(*server)["holderIdentity"], "a");
  EXPECT_EQ(Spec(*server)["leaseTransitions"], 0);
  EXPECT_TRUE(Eventually([&] { return observed.started == 1; }));
  EXPECT_EQ(observed.stopped, 0);
}

// --- losing ----------------------------------------------------------------------------------

TEST(LeaderElectorTest, AnotherHolderInTheLeaseEndsLeadershipAtOnce) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  auto clock = std::make_shared<util::FakeClock>();  // Never moves: no deadline can pass.
  Observed observed;
  LeaderElector elector(server, TestConfig("a"), observed.Callbacks(), clock);
  elector.Run();
  ASSERT_TRUE(Eventually([&] { return elector.IsLeader(); }));

  server->WriteSpec(kLease, OtherHolderSpec("usurper", 15, 1));
  ASSERT_TRUE(Eventually([&] { return observed.stopped == 1; }));
  EXPECT_FALSE(elector.IsLeader());
  EXPECT_EQ(elector.Leader(), "usurper");
  EXPECT_EQ(Spec(*server)["holderIdentity"], "usurper");
  EXPECT_THAT(observed.Leaders(), ElementsAre("a", "usurper"));
}

TEST(LeaderElectorTest, AnUnreachableApiserverEndsLeadershipAtTheRenewDeadline) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  auto clock = std::make_shared<util::FakeClock>();
  Observed observed;
  LogCapture log;
  LeaderElector elector(server, TestConfig("a"), observed.Callbacks(), clock);
  elector.Run();
  ASSERT_TRUE(Eventually([&] { return elector.IsLeader(); }));

  server->SetUnreachable(true);
  const int64_t failed = server->FailedRequests();
  ASSERT_TRUE(Eventually([&] { return server->FailedRequests() >= failed + 5; }));
  EXPECT_TRUE(elector.IsLeader());  // Still within the renew deadline: keeps retrying.
  EXPECT_EQ(observed.stopped, 0);

  clock->Step(400ms);
  ASSERT_TRUE(Eventually([&] { return observed.stopped == 1; }));
  EXPECT_FALSE(elector.IsLeader());
  EXPECT_FALSE(elector.Healthy());
  EXPECT_GE(log.Count(std::string("failed to renew lease ") + kDescription + ": "), 1) << log.All();
  EXPECT_EQ(log.Count("leader election lost"), 1) << log.All();

  // One term per elector: it does not campaign again once the apiserver is back.
  server->SetUnreachable(false);
  const int64_t gets = server->Requests("get");
  const int64_t updates = server->Requests("update");
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(server->Requests("get"), gets);
  EXPECT_EQ(server->Requests("update"), updates);
  EXPECT_TRUE(Eventually([&] { return observed.started == 1; }));
  EXPECT_EQ(observed.stopped, 1);
}

TEST(LeaderElectorTest, AnUnreachableApiserverEndsLeadershipWithinTheRenewDeadline) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  Observed observed;
  const LeaderElectionConfig config = TestConfig("a");
  LeaderElector elector(server, config, observed.Callbacks());  // The real clock.
  elector.Run();
  ASSERT_TRUE(Eventually([&] { return elector.IsLeader(); }));

  const auto cut = std::chrono::steady_clock::now();
  server->SetUnreachable(true);
  ASSERT_TRUE(Eventually([&] { return observed.stopped == 1; }));
  const auto took = std::chrono::steady_clock::now() - cut;
  EXPECT_FALSE(elector.IsLeader());
  // It kept retrying until the deadline rather than giving up at the first failure; the upper
  // bound is only Eventually's patience.
  EXPECT_GE(took, config.renew_deadline - config.retry_period);
}

TEST(LeaderElectorTest, AHungApiserverEndsLeadershipAtTheRenewDeadline) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  auto clock = std::make_shared<util::FakeClock>();
  Observed observed;
  LeaderElector elector(server, TestConfig("a"), observed.Callbacks(), clock);
  elector.Run();
  ASSERT_TRUE(Eventually([&] { return elector.IsLeader(); }));

  server->SetHanging(true);
  ASSERT_TRUE(Eventually([&] { return server->HangingRequests() == 1; }));
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(elector.IsLeader());
  EXPECT_EQ(observed.stopped, 0);

  clock->Step(400ms);
  ASSERT_TRUE(Eventually([&] { return observed.stopped == 1; }));
  EXPECT_FALSE(elector.IsLeader());
  EXPECT_EQ(server->HangingRequests(), 1);  // Given up on, not answered.
  server->SetHanging(false);
}

// --- releasing and stopping ------------------------------------------------------------------

TEST(LeaderElectorTest, ReleaseWritesAnEmptyHolderAndAStandbyTakesOverAtOnce) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  Observed leader_observed, standby_observed;
  LeaderElector leader(server, TestConfig("a"), leader_observed.Callbacks());
  leader.Run();
  ASSERT_TRUE(Eventually([&] { return leader.IsLeader(); }));
  // The standby's clock never moves, so a's lease never expires for it.
  LeaderElector standby(server, TestConfig("b"), standby_observed.Callbacks(),
                        std::make_shared<util::FakeClock>());
  standby.Run();
  AwaitGets(*server, 3);
  ASSERT_EQ(standby.Leader(), "a");
  ASSERT_FALSE(standby.IsLeader());

  leader.Release();
  EXPECT_FALSE(leader.IsLeader());
  EXPECT_FALSE(leader.Healthy());
  EXPECT_EQ(leader_observed.stopped, 1);
  auto released = [&] {
    std::vector<nlohmann::json> out;
    for (const auto& spec : server->WrittenSpecs()) {
      if (spec["holderIdentity"] == "") out.push_back(spec);
    }
    return out;
  };
  ASSERT_EQ(released().size(), 1u);
  EXPECT_EQ(released()[0]["leaseDurationSeconds"], 1);
  EXPECT_EQ(released()[0]["leaseTransitions"], 0);
  EXPECT_TRUE(IsMicroTime(released()[0]["renewTime"]));

  ASSERT_TRUE(Eventually([&] { return standby.IsLeader(); }));
  EXPECT_EQ(Spec(*server)["holderIdentity"], "b");
  EXPECT_EQ(Spec(*server)["leaseTransitions"], 1);
  EXPECT_THAT(standby_observed.Leaders(), ElementsAre("a", "b"));

  leader.Release();  // Idempotent.
  EXPECT_EQ(leader_observed.stopped, 1);
  EXPECT_EQ(released().size(), 1u);
  EXPECT_TRUE(standby.IsLeader());
}

TEST(LeaderElectorTest, ReleaseWithoutLeadershipWritesNothing) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  server->WriteSpec(kLease, OtherHolderSpec("other", 15, 0));
  Observed observed;
  LeaderElector elector(server, TestConfig("a"), observed.Callbacks());
  elector.Run();
  AwaitGets(*server, 2);
  elector.Release();
  EXPECT_EQ(server->Requests("update"), 0);
  EXPECT_EQ(Spec(*server)["holderIdentity"], "other");
  EXPECT_EQ(observed.started, 0);
  EXPECT_EQ(observed.stopped, 0);
  EXPECT_FALSE(elector.Healthy());
  elector.Release();
  elector.Run();  // Released for good.
  EXPECT_EQ(server->Requests("update"), 0);
}

TEST(LeaderElectorTest, ReleaseFromTheStartedCallbackDoesNotDeadlock) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  Observed observed;
  LeaderCallbacks callbacks = observed.Callbacks();
  LeaderElector* self = nullptr;
  callbacks.on_started_leading = [&] {
    observed.started++;
    self->Release();
  };
  LeaderElector elector(server, TestConfig("a"), callbacks);
  self = &elector;
  elector.Run();
  ASSERT_TRUE(Eventually([&] { return observed.stopped == 1; }));
  EXPECT_EQ(Spec(*server)["holderIdentity"], "");
  EXPECT_FALSE(elector.IsLeader());
  elector.Release();
}

TEST(LeaderElectorTest, ReleaseAndStopDoNotWaitForAHungRequestWhileCampaigning) {
  for (const bool release : {true, false}) {
    SCOPED_TRACE(release ? "Release" : "Stop");
    auto server = std::make_shared<FaultInjectingLeaseClient>();
    server->SetHanging(true);
    auto clock = std::make_shared<util::FakeClock>();  // Never moves: no request deadline passes.
    Observed observed;
    LeaderElector elector(server, TestConfig("a"), observed.Callbacks(), clock);
    elector.Run();
    ASSERT_TRUE(Eventually([&] { return server->HangingRequests() == 1; }));
    auto ended = std::async(std::launch::async, [&] {
      if (release) {
        elector.Release();
      } else {
        elector.Stop();
      }
    });
    EXPECT_EQ(ended.wait_for(10s), std::future_status::ready);
    server->SetHanging(false);
    ended.wait();
    EXPECT_FALSE(elector.IsLeader());
    EXPECT_EQ(observed.started, 0);
    EXPECT_EQ(observed.stopped, 0);
  }
}

TEST(LeaderElectorTest, ReleaseWaitsForTheLeadersRequestThenReleases) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  auto clock = std::make_shared<util::FakeClock>();
  Observed observed;
  LeaderElector elector(server, TestConfig("a"), observed.Callbacks(), clock);
  elector.Run();
  ASSERT_TRUE(Eventually([&] { return elector.IsLeader(); }));
  server->SetHanging(true);
  ASSERT_TRUE(Eventually([&] { return server->HangingRequests() == 1; }));
  auto released = std::async(std::launch::async, [&] { elector.Release(); });
  EXPECT_EQ(released.wait_for(100ms), std::future_status::timeout);
  server->SetHanging(false);  // The renew lands; only then the release is written.
  ASSERT_EQ(released.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(Spec(*server)["holderIdentity"], "");
  EXPECT_EQ(observed.stopped, 1);
}

TEST(LeaderElectorTest, StopEndsWithoutReleasingOrCallingBack) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  Observed observed;
  LeaderElector elector(server, TestConfig("a"), observed.Callbacks());
  elector.Run();
  ASSERT_TRUE(Eventually([&] { return elector.IsLeader(); }));

  elector.Stop();
  EXPECT_FALSE(elector.IsLeader());
  EXPECT_FALSE(elector.Healthy());
  EXPECT_EQ(observed.stopped, 0);
  EXPECT_EQ(Spec(*server)["holderIdentity"], "a");
  const size_t writes = server->WrittenSpecs().size();
  elector.Run();  // Stopped for good.
  elector.Stop();
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(server->WrittenSpecs().size(), writes);
}

TEST(LeaderElectorTest, DestructionStopsTheElectorWithoutReleasing) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  Observed observed;
  {
    LeaderElector elector(server, TestConfig("a"), observed.Callbacks());
    elector.Run();
    ASSERT_TRUE(Eventually([&] { return elector.IsLeader(); }));
  }
  const size_t writes = server->WrittenSpecs().size();
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(server->WrittenSpecs().size(), writes);
  EXPECT_EQ(Spec(*server)["holderIdentity"], "a");
  EXPECT_EQ(observed.stopped, 0);
}

// --- health, callbacks and logs --------------------------------------------------------------

TEST(LeaderElectorTest, AStandbyIsHealthyWhileItCanReadTheLease) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  server->WriteSpec(kLease, OtherHolderSpec("other", 15, 0));
  auto clock = std::make_shared<util::FakeClock>();
  Observed observed;
  LeaderElector elector(server, TestConfig("a"), observed.Callbacks(), clock);
  EXPECT_FALSE(elector.Healthy());
  elector.Run();
  ASSERT_TRUE(Eventually([&] { return elector.Healthy(); }));

  server->SetUnreachable(true);
  const int64_t failed = server->FailedRequests();
  ASSERT_TRUE(Eventually([&] { return server->FailedRequests() >= failed + 2; }));
  EXPECT_TRUE(elector.Healthy());  // Its last read is younger than the lease duration.
  clock->Step(601ms);
  EXPECT_FALSE(elector.Healthy());

  server->SetUnreachable(false);
  EXPECT_TRUE(Eventually([&] { return elector.Healthy(); }));
  EXPECT_FALSE(elector.IsLeader());
}

TEST(LeaderElectorTest, ALeaderThatStopsRenewingBecomesUnhealthyAfterLeaseDurationAndGrace) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  auto clock = std::make_shared<util::FakeClock>();
  std::mutex mu;
  std::condition_variable cv;
  bool proceed = false;
  LeaderCallbacks callbacks;
  callbacks.on_started_leading = [&] {  // Stuck, as a deadlocked process would be.
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return proceed; });
  };
  LeaderElector elector(server, TestConfig("a"), callbacks, clock);
  elector.Run();
  ASSERT_TRUE(Eventually([&] { return elector.IsLeader(); }));
  EXPECT_TRUE(elector.Healthy());

  clock->Step(700ms);  // lease_duration + health_grace since the last renew.
  EXPECT_TRUE(elector.Healthy());
  clock->Step(1ms);
  EXPECT_FALSE(elector.Healthy());
  EXPECT_TRUE(elector.IsLeader());

  {
    std::lock_guard lock(mu);
    proceed = true;
  }
  cv.notify_all();
  EXPECT_TRUE(Eventually([&] { return elector.Healthy(); }));
  EXPECT_TRUE(elector.IsLeader());
}

TEST(LeaderElectorTest, OnNewLeaderReportsEachChangeOfHolder) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  server->WriteSpec(kLease, OtherHolderSpec("x", 15, 0));
  auto clock = std::make_shared<util::FakeClock>();
  Observed observed;
  LeaderElector elector(server, TestConfig("a"), observed.Callbacks(), clock);
  elector.Run();
  ASSERT_TRUE(Eventually([&] { return observed.Leaders().size() == 1; }));
  server->WriteSpec(kLease, OtherHolderSpec("y", 1, 1));
  ASSERT_TRUE(Eventually([&] { return observed.Leaders().size() == 2; }));
  AwaitGets(*server, 3);
  clock->Step(1s);
  ASSERT_TRUE(Eventually([&] { return elector.IsLeader(); }));
  EXPECT_THAT(observed.Leaders(), ElementsAre("x", "y", "a"));
}

TEST(LeaderElectorTest, LogsTheElectionMilestones) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  LogCapture log;
  Observed observed;
  LeaderElector elector(server, TestConfig("a"), observed.Callbacks());
  elector.Run();
  ASSERT_TRUE(Eventually([&] { return observed.started == 1; }));
  elector.Release();
  EXPECT_EQ(log.Count(std::string("info: attempting to acquire leader lease ") + kDescription), 1)
      << log.All();
  EXPECT_EQ(log.Count(std::string("info: successfully acquired lease ") + kDescription), 1)
      << log.All();
  EXPECT_EQ(log.Count("info: new leader elected: a"), 1) << log.All();
  EXPECT_EQ(log.Count(std::string("info: released lease ") + kDescription), 1) << log.All();
}

TEST(LeaderElectorTest, ForbiddenIsLoggedOnceNamingVerbAndResource) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  server->SetForbidden(true);
  LogCapture log;
  Observed observed;
  LeaderElector elector(server, TestConfig("a"), observed.Callbacks());
  elector.Run();
  AwaitGets(*server, 5);
  const std::string expected =
      "forbidden: cannot get resource \"leases\" in API group \"coordination.k8s.io\" in "
      "namespace \"kube-system\"";
  EXPECT_EQ(log.Count("warning: failed to acquire lease kube-system/berth-test: " + expected), 1)
      << log.All();
  EXPECT_FALSE(elector.IsLeader());
  EXPECT_FALSE(elector.Healthy());
}

TEST(LeaderElectorTest, AMissingNamespaceIsLoggedClearly) {
  auto server = std::make_shared<FaultInjectingLeaseClient>();
  server->SetNamespaceMissing(true);
  LogCapture log;
  Observed observed;
  LeaderElector elector(server, TestConfig("a"), observed.Callbacks());
  elector.Run();
  ASSERT_TRUE(Eventually([&] { return server->Requests("create") >= 3; }));
  EXPECT_EQ(log.Count("cannot create lease kube-system/berth-test: namespace \"kube-system\" "
                      "not found"),
            1)
      << log.All();
  EXPECT_FALSE(elector.IsLeader());
  EXPECT_FALSE(elector.Healthy());
}

}  // namespace
}  // namespace berth::leaderelection
