#include "pkg/leaderelection/leader_elector.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <random>
#include <stdexcept>
#include <utility>

#include "pkg/util/time.h"

namespace berth::leaderelection {
namespace {

using std::chrono::milliseconds;

// How often a wait for an in-flight request re-checks its deadline and Stop.
constexpr milliseconds kCallPoll{20};

std::string FormatDuration(milliseconds d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + "s";
  return std::to_string(d.count()) + "ms";
}

// spec.leaseDurationSeconds is whole seconds and the apiserver rejects 0, so a sub-second (test)
// duration is written as 1s; client-go truncates instead.
int64_t LeaseSeconds(milliseconds d) {
  return std::max<int64_t>(1, std::chrono::ceil<std::chrono::seconds>(d).count());
}

// wait.Jitter: period plus up to kJitterFactor * period.
milliseconds Jittered(milliseconds period) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> extra(0.0, kJitterFactor);
  return period + milliseconds(std::llround(static_cast<double>(period.count()) * extra(rng)));
}

std::string DescribeFailure(const char* verb, const LeaseLock& lock, const std::exception_ptr& e) {
  const std::string lease = "lease " + lock.Describe();
  try {
    std::rethrow_exception(e);
  } catch (const client::ApiError& error) {
    switch (error.reason()) {
      case client::ErrorReason::kForbidden:
        return std::string("forbidden: cannot ") + verb +
               " resource \"leases\" in API group \"coordination.k8s.io\" in namespace \"" +
               lock.lease_namespace() + "\" (" + lease +
               "); leader election needs get, create and update on leases: " +
               error.server_message();
      case client::ErrorReason::kNotFound:
        if (std::string(verb) == "create") {
          return "cannot create " + lease + ": namespace \"" + lock.lease_namespace() +
                 "\" not found (" + error.server_message() + ")";
        }
        break;
      default:
        break;
    }
    return std::string(verb) + " " + lease + ": " + error.what();
  } catch (const std::exception& error) {
    return std::string(verb) + " " + lease + ": " + error.what();
  } catch (...) {
    return std::string(verb) + " " + lease + ": unknown error";
  }
}

}  // namespace

void ValidateConfig(const LeaderElectionConfig& config) {
  auto fail = [](const std::string& message) { throw std::invalid_argument(message); };
  if (config.lease_namespace.empty()) fail("leaderElection.resourceNamespace must not be empty");
  if (config.lease_name.empty()) fail("leaderElection.resourceName must not be empty");
  if (config.identity.empty()) fail("leader election identity must not be empty");
  auto positive = [&](const char* field, milliseconds d) {
    if (d.count() <= 0) {
      fail(std::string("leaderElection.") + field + " must be greater than zero (got " +
           FormatDuration(d) + ")");
    }
  };
  positive("leaseDuration", config.lease_duration);
  positive("renewDeadline", config.renew_deadline);
  positive("retryPeriod", config.retry_period);
  if (config.lease_duration <= config.renew_deadline) {
    fail("leaderElection.leaseDuration (" + FormatDuration(config.lease_duration) +
         ") must be greater than leaderElection.renewDeadline (" +
         FormatDuration(config.renew_deadline) + ")");
  }
  // renew_deadline > 1.2 * retry_period, in exact integer arithmetic.
  if (config.renew_deadline.count() * 5 <= config.retry_period.count() * 6) {
    fail("leaderElection.renewDeadline (" + FormatDuration(config.renew_deadline) +
         ") must be greater than leaderElection.retryPeriod (" +
         FormatDuration(config.retry_period) + ") * 1.2");
  }
  if (config.health_grace.count() < 0) {
    fail("leader election health grace must not be negative (got " +
         FormatDuration(config.health_grace) + ")");
  }
}

std::string DefaultIdentity() {
  std::array<char, 256> host{};
  std::string hostname = "unknown";
  if (gethostname(host.data(), host.size() - 1) == 0 && host[0] != '\0') hostname = host.data();

  std::random_device random;
  std::array<uint8_t, 16> bytes{};
  for (size_t i = 0; i < bytes.size(); i += 4) {
    const uint32_t word = random();
    for (size_t j = 0; j < 4; j++) bytes[i + j] = static_cast<uint8_t>(word >> (8 * j));
  }
  bytes[6] = static_cast<uint8_t>((bytes[6] & 0x0f) | 0x40);  // Version 4.
  bytes[8] = static_cast<uint8_t>((bytes[8] & 0x3f) | 0x80);  // RFC 4122 variant.
  std::string uuid;
  for (size_t i = 0; i < bytes.size(); i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) uuid += '-';
    std::array<char, 3> hex{};
    std::snprintf(hex.data(), hex.size(), "%02x", bytes[i]);
    uuid += hex.data();
  }
  return hostname + "_" + uuid;
}

LeaderElector::LeaderElector(std::shared_ptr<client::Client> client, LeaderElectionConfig config,
                             LeaderCallbacks callbacks, std::shared_ptr<util::Clock> clock)
    : config_((ValidateConfig(config), std::move(config))),
      callbacks_(std::move(callbacks)),
      clock_(clock ? std::move(clock) : std::make_shared<util::RealClock>()),
      description_(config_.lease_namespace + "/" + config_.lease_name),
      client_(client ? std::move(client)
                     : throw std::invalid_argument("leader election needs an apiserver client")),
      lock_(client_, config_.lease_namespace, config_.lease_name) {}

LeaderElector::~LeaderElector() { Stop(); }

void LeaderElector::Run() {
  auto startable = [this] {
    return phase_ == Phase::kIdle && !stop_requested_ && !release_requested_;
  };
  {
    std::lock_guard lock(mu_);
    if (!startable()) return;
  }
  std::lock_guard thread_lock(thread_mu_);
  std::lock_guard lock(mu_);
  if (!startable()) return;
  phase_ = Phase::kCampaigning;
  thread_ = std::thread([this] { Loop(); });
  loop_thread_id_ = thread_.get_id();
}

void LeaderElector::Release() {
  {
    std::lock_guard lock(mu_);
    release_requested_ = true;
  }
  cv_.notify_all();
  caller_.Wake();
  JoinThread();
}

void LeaderElector::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_requested_ = true;
  }
  cv_.notify_all();
  caller_.Wake();
  JoinThread();
}

void LeaderElector::JoinThread() {
  {
    std::lock_guard lock(mu_);
    if (loop_thread_id_ == std::this_thread::get_id()) return;
  }
  std::lock_guard thread_lock(thread_mu_);
  if (thread_.joinable()) thread_.join();
}

bool LeaderElector::IsLeader() const {
  std::lock_guard lock(mu_);
  return phase_ == Phase::kLeading;
}

std::string LeaderElector::Leader() const {
  std::lock_guard lock(mu_);
  return observed_record_.holder_identity;
}

bool LeaderElector::Healthy() const {
  std::lock_guard lock(mu_);
  const auto now = clock_->Now();
  switch (phase_) {
    case Phase::kLeading:
      return now - last_renew_time_ <= config_.lease_duration + config_.health_grace;
    case Phase::kCampaigning:
      return last_read_time_ && now - *last_read_time_ <= config_.lease_duration;
    default:
      return false;
  }
}

std::optional<LeaderElector::Ending> LeaderElector::Requested() const {
  std::lock_guard lock(mu_);
  if (release_requested_) return Ending::kReleased;
  if (stop_requested_) return Ending::kStopped;
  return std::nullopt;
}

std::optional<LeaderElector::Ending> LeaderElector::WaitInterruptible(std::chrono::nanoseconds d) {
  {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, d, [this] { return stop_requested_ || release_requested_; });
  }
  return Requested();
}

std::optional<LeaderElector::Ending> LeaderElector::WaitForRetry(std::chrono::nanoseconds d) {
  {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, d,
                 [this] { return stop_requested_ || release_requested_ || released_seen_; });
    released_seen_ = false;
  }
  return Requested();
}

void LeaderElector::StartReleaseWatch() {
  {
    std::lock_guard lock(mu_);
    release_watch_stop_ = false;
    released_seen_ = false;
  }
  release_watch_thread_ = std::thread([this] { ReleaseWatchLoop(); });
}

void LeaderElector::StopReleaseWatch() {
  {
    std::lock_guard lock(mu_);
    release_watch_stop_ = true;
  }
  cv_.notify_all();
  {
    std::lock_guard lock(watch_mu_);
    if (release_watch_) release_watch_->Stop();
  }
  if (release_watch_thread_.joinable()) release_watch_thread_.join();
}

void LeaderElector::ReleaseWatchLoop() {
  bool logged = false;
  auto stopping = [this] {
    std::lock_guard lock(mu_);
    return release_watch_stop_ || stop_requested_ || release_requested_;
  };
  while (!stopping()) {
    try {
      client::WatchOptions options;
      options.field_selector = "metadata.name=" + config_.lease_name;
      options.allow_bookmarks = false;
      auto stream = client_->Watch(client::LeasesResource().Path(config_.lease_namespace), options);
      {
        std::lock_guard lock(watch_mu_);
        release_watch_ = std::move(stream);
      }
      if (stopping()) break;
      client::WatchEvent event;
      while (release_watch_->Next(&event)) {
        const bool gone = event.type == client::WatchEventType::kDeleted;
        std::string holder;
        if (auto spec = event.object.find("spec");
            spec != event.object.end() && spec->is_object()) {
          holder = spec->value("holderIdentity", std::string());
        }
        if (event.type != client::WatchEventType::kBookmark && (gone || holder.empty())) {
          {
            std::lock_guard lock(mu_);
            released_seen_ = true;
          }
          cv_.notify_all();
        }
      }
    } catch (const std::exception& e) {
      if (!logged) {
        spdlog::debug("lease {}: cannot watch it ({}); polling every retryPeriod instead",
                      description_, e.what());
        logged = true;
      }
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, config_.lease_duration,
                   [this] { return release_watch_stop_ || stop_requested_ || release_requested_; });
    }
    std::lock_guard lock(watch_mu_);
    release_watch_.reset();
  }
}

void LeaderElector::Loop() {
  spdlog::info("attempting to acquire leader lease {}", description_);
  StartReleaseWatch();
  const bool acquired = Acquire();
  StopReleaseWatch();
  if (!acquired) {
    std::lock_guard lock(mu_);
    phase_ = Phase::kFinished;
    return;
  }
  spdlog::info("successfully acquired lease {}", description_);

  // A Stop or Release that arrived during the winning attempt: this elector never led as far as
  // its user is concerned, but a Release still hands the lease back.
  std::optional<Ending> ending = Requested();
  const bool led = !ending;
  if (led) {
    if (callbacks_.on_started_leading) callbacks_.on_started_leading();
    ending = Renew();
  }
  {
    std::lock_guard lock(mu_);
    phase_ = Phase::kFinished;
  }
  if (ending == Ending::kReleased) ReleaseLease();
  if (led && ending != Ending::kStopped && callbacks_.on_stopped_leading) {
    callbacks_.on_stopped_leading();
  }
}

bool LeaderElector::Acquire() {
  while (true) {
    if (Requested()) return false;
    const Attempt attempt = TryAcquireOrRenew(clock_->Now() + config_.renew_deadline);
    ReportLeader();
    if (attempt.ok) {
      last_logged_error_.clear();
      std::lock_guard lock(mu_);
      phase_ = Phase::kLeading;
      return true;
    }
    if (Requested()) return false;
    if (attempt.held_by_other) {
      spdlog::debug("lease {}: {}", description_, attempt.error);
    } else {
      LogAcquireFailure(attempt.error);
    }
    if (WaitForRetry(Jittered(config_.retry_period))) return false;
  }
}

LeaderElector::Ending LeaderElector::Renew() {
  while (true) {
    const auto deadline = clock_->Now() + config_.renew_deadline;
    while (true) {
      if (auto requested = Requested()) return *requested;
      const Attempt attempt = TryAcquireOrRenew(deadline);
      ReportLeader();
      if (attempt.ok) break;
      if (auto requested = Requested()) return *requested;
      spdlog::warn("failed to renew lease {}: {}", description_, attempt.error);
      if (attempt.held_by_other) {
        spdlog::error("leader election lost: lease {} has another holder", description_);
        return Ending::kLost;
      }
      auto now = clock_->Now();
      if (now < deadline) {
        const auto pause = std::min<std::chrono::nanoseconds>(config_.retry_period, deadline - now);
        if (auto requested = WaitInterruptible(pause)) return *requested;
        now = clock_->Now();
      }
      if (now >= deadline) {
        spdlog::error("leader election lost: failed to renew lease {} within renewDeadline {}: {}",
                      description_, FormatDuration(config_.renew_deadline), attempt.error);
        return Ending::kLost;
      }
    }
    spdlog::debug("successfully renewed lease {}", description_);
    if (auto requested = WaitInterruptible(config_.retry_period)) return *requested;
  }
}

LeaderElector::Attempt LeaderElector::TryAcquireOrRenew(util::Clock::TimePoint deadline) {
  const std::string stamp = util::FormatRfc3339Micro(std::chrono::system_clock::now());
  LeaseRecord desired{.holder_identity = config_.identity,
                      .lease_duration_seconds = LeaseSeconds(config_.lease_duration),
                      .acquire_time = stamp,
                      .renew_time = stamp,
                      .lease_transitions = 0};
  LeaseRecord observed;
  util::Clock::TimePoint observed_time;
  {
    std::lock_guard lock(mu_);
    observed = observed_record_;
    observed_time = observed_time_;
  }

  // 1. The leader's fast path: renew the version it wrote last without reading first.
  if (observed.holder_identity == config_.identity &&
      clock_->Now() < observed_time + std::chrono::seconds(observed.lease_duration_seconds)) {
    desired.acquire_time = observed.acquire_time;
    desired.lease_transitions = observed.lease_transitions;
    auto error = Call(
        "update", [desired](LeaseLock& lock) { lock.Update(desired); }, deadline);
    if (!error) {
      Observe(desired);
      return {.ok = true, .held_by_other = false, .error = {}};
    }
    {
      std::lock_guard lock(mu_);
      if (stop_requested_ || clock_->Now() >= deadline) return {.error = *error};
    }
    spdlog::debug("optimistic renew failed, reading the lease again: {}", *error);
  }

  // 2. Read the record; create the lease when there is none.
  auto current = std::make_shared<std::optional<LeaseRecord>>();
  if (auto error = Call(
          "get", [current](LeaseLock& lock) { *current = lock.Get(); }, deadline)) {
    return {.error = *error};
  }
  if (!current->has_value()) {
    if (auto error = Call(
            "create", [desired](LeaseLock& lock) { lock.Create(desired); }, deadline)) {
      return {.error = *error};
    }
    Observe(desired);
    return {.ok = true, .held_by_other = false, .error = {}};
  }

  // 3. Judge the record by when this candidate saw it change, not by its timestamps.
  const LeaseRecord& record = **current;
  {
    std::lock_guard lock(mu_);
    last_read_time_ = clock_->Now();
    if (record != observed_record_) {
      observed_record_ = record;
      observed_time_ = clock_->Now();
    }
    observed_time = observed_time_;
  }
  const bool held_by_us = record.holder_identity == config_.identity;
  if (!record.holder_identity.empty() && !held_by_us &&
      clock_->Now() < observed_time + std::chrono::seconds(record.lease_duration_seconds)) {
    return {.held_by_other = true,
            .error = "lease is held by " + record.holder_identity + " and has not yet expired"};
  }

  // 4. Take the lease over (free or expired) or renew it.
  if (held_by_us) {
    desired.acquire_time = record.acquire_time;
    desired.lease_transitions = record.lease_transitions;
  } else {
    desired.lease_transitions = record.lease_transitions + 1;
  }
  if (auto error = Call(
          "update", [desired](LeaseLock& lock) { lock.Update(desired); }, deadline)) {
    return {.error = *error};
  }
  Observe(desired);
  return {.ok = true, .held_by_other = false, .error = {}};
}

void LeaderElector::ReleaseLease() {
  LeaseRecord released;
  {
    std::lock_guard lock(mu_);
    if (observed_record_.holder_identity != config_.identity) return;
    released.lease_transitions = observed_record_.lease_transitions;
  }
  const std::string stamp = util::FormatRfc3339Micro(std::chrono::system_clock::now());
  released.lease_duration_seconds = 1;
  released.acquire_time = stamp;
  released.renew_time = stamp;
  if (auto error = Call(
          "update", [released](LeaseLock& lock) { lock.Update(released); },
          clock_->Now() + config_.renew_deadline)) {
    spdlog::error("failed to release lease {}: {}", description_, *error);
    return;
  }
  Observe(released);
  spdlog::info("released lease {}", description_);
}

std::optional<std::string> LeaderElector::Call(const char* verb,
                                               std::function<void(LeaseLock&)> call,
                                               util::Clock::TimePoint deadline) {
  auto failure = std::make_shared<std::exception_ptr>();
  const bool started = caller_.Start([this, call = std::move(call), failure] {
    try {
      call(lock_);
    } catch (...) {
      *failure = std::current_exception();
    }
  });
  const std::string what = std::string(verb) + " lease " + description_;
  if (!started) return what + ": an earlier request is still waiting for the apiserver";
  // A leader asked to release waits for its request: the release write must come after it.
  const bool done = caller_.Wait(
      [&] {
        std::lock_guard lock(mu_);
        return stop_requested_ || (release_requested_ && phase_ == Phase::kCampaigning) ||
               clock_->Now() >= deadline;
      },
      kCallPoll);
  if (!done) return what + ": no answer from the apiserver in time";
  if (*failure) return DescribeFailure(verb, lock_, *failure);
  return std::nullopt;
}

void LeaderElector::Observe(const LeaseRecord& record) {
  std::lock_guard lock(mu_);
  observed_record_ = record;
  observed_time_ = clock_->Now();
  last_read_time_ = observed_time_;
  if (record.holder_identity == config_.identity) last_renew_time_ = observed_time_;
}

void LeaderElector::ReportLeader() {
  std::string holder;
  {
    std::lock_guard lock(mu_);
    holder = observed_record_.holder_identity;
  }
  if (holder.empty() || holder == reported_leader_) return;
  reported_leader_ = holder;
  spdlog::info("new leader elected: {}", holder);
  if (callbacks_.on_new_leader) callbacks_.on_new_leader(holder);
}

void LeaderElector::LogAcquireFailure(const std::string& error) {
  // A candidate retries every few seconds for as long as it runs: repeat a failure only at debug.
  if (error == last_logged_error_) {
    spdlog::debug("failed to acquire lease {}: {}", description_, error);
    return;
  }
  last_logged_error_ = error;
  spdlog::warn("failed to acquire lease {}: {}", description_, error);
}

}  // namespace berth::leaderelection
