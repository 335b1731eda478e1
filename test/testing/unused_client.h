#ifndef BERTH_TEST_TESTING_UNUSED_CLIENT_H_
#define BERTH_TEST_TESTING_UNUSED_CLIENT_H_

#include <stdexcept>
#include <string>

#include "pkg/client/client.h"

namespace berth::testing {

// Base for test doubles of client::Client: every verb fails the test loudly unless the double
// overrides it, so a test states exactly which calls it expects.
class UnusedClient : public client::Client {
 public:
  nlohmann::json Get(const std::string& path) override { return Unexpected("GET", path); }
  client::ListPage ListPageRaw(const std::string& path, const client::ListOptions&,
                               const std::string&) override {
    Unexpected("LIST", path);
    return {};
  }
  nlohmann::json Post(const std::string& path, const nlohmann::json&) override {
    return Unexpected("POST", path);
  }
  std::string PostRaw(const std::string& path, const std::string&) override {
    Unexpected("POST", path);
    return {};
  }
  nlohmann::json Patch(const std::string& path, const nlohmann::json&, client::PatchType) override {
    return Unexpected("PATCH", path);
  }
  nlohmann::json Put(const std::string& path, const nlohmann::json&) override {
    return Unexpected("PUT", path);
  }
  void Delete(const std::string& path, const client::DeleteOptions&) override {
    Unexpected("DELETE", path);
  }
  std::unique_ptr<client::WatchStream> Watch(const std::string& path,
                                             const client::WatchOptions&) override {
    Unexpected("WATCH", path);
    return nullptr;
  }
  const client::Config& config() const override { return config_; }
  void SetRequestObserver(client::RequestObserver) override {}

 protected:
  client::Config config_;

 private:
  static nlohmann::json Unexpected(const std::string& verb, const std::string& path) {
    throw std::logic_error("unexpected " + verb + " " + path + " in this test");
  }
};

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_UNUSED_CLIENT_H_
