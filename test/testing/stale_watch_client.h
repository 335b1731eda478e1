#ifndef BERTH_TEST_TESTING_STALE_WATCH_CLIENT_H_
#define BERTH_TEST_TESTING_STALE_WATCH_CLIENT_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "pkg/client/client.h"

namespace berth::testing {

// Wraps the real client and, when armed, opens the next watch from resourceVersion "1": the real
// apiserver then answers 410 Expired, exactly as it does for a client that fell too far behind,
// provided its watch cache started after revision 1 (see StartWatchCacheAtCurrentRevision).
class StaleWatchClient : public client::Client {
 public:
  explicit StaleWatchClient(std::shared_ptr<client::Client> real) : real_(std::move(real)) {}
  void ArmAndBreakWatch() {
    std::lock_guard lock(mu_);
    armed_ = true;
    if (current_) current_->Stop();
  }
  int gone_watches() const { return gone_watches_.load(); }
  bool watching() {
    std::lock_guard lock(mu_);
    return current_ != nullptr;
  }

  nlohmann::json Get(const std::string& path) override { return real_->Get(path); }
  client::ListPage ListPageRaw(const std::string& path, const client::ListOptions& options,
                               const std::string& token) override {
    return real_->ListPageRaw(path, options, token);
  }
  nlohmann::json Post(const std::string& path, const nlohmann::json& body) override {
    return real_->Post(path, body);
  }
  std::string PostRaw(const std::string& path, const std::string& body) override {
    return real_->PostRaw(path, body);
  }
  nlohmann::json Patch(const std::string& path, const nlohmann::json& body,
                       client::PatchType type) override {
    return real_->Patch(path, body, type);
  }
  nlohmann::json Put(const std::string& path, const nlohmann::json& body) override {
    return real_->Put(path, body);
  }
  void Delete(const std::string& path, const client::DeleteOptions& options) override {
    real_->Delete(path, options);
  }
  std::unique_ptr<client::WatchStream> Watch(const std::string& path,
                                             const client::WatchOptions& options) override {
    client::WatchOptions effective = options;
    {
      std::lock_guard lock(mu_);
      if (armed_) {
        armed_ = false;
        effective.resource_version = "1";
        gone_watches_++;
      }
    }
    auto stream = real_->Watch(path, effective);
    std::lock_guard lock(mu_);
    current_ = stream.get();
    return std::make_unique<Forget>(std::move(stream), this);
  }
  const client::Config& config() const override { return real_->config(); }
  void SetRequestObserver(client::RequestObserver observer) override {
    real_->SetRequestObserver(std::move(observer));
  }

 private:
  class Forget : public client::WatchStream {
   public:
    Forget(std::unique_ptr<client::WatchStream> inner, StaleWatchClient* owner)
        : inner_(std::move(inner)), owner_(owner) {}
    ~Forget() override {
      std::lock_guard lock(owner_->mu_);
      if (owner_->current_ == inner_.get()) owner_->current_ = nullptr;
    }
    bool Next(client::WatchEvent* event) override { return inner_->Next(event); }
    void Stop() override { inner_->Stop(); }

   private:
    std::unique_ptr<client::WatchStream> inner_;
    StaleWatchClient* owner_;
  };

  std::shared_ptr<client::Client> real_;
  std::mutex mu_;
  bool armed_ = false;
  client::WatchStream* current_ = nullptr;
  std::atomic<int> gone_watches_{0};
};

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_STALE_WATCH_CLIENT_H_
