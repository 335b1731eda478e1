#ifndef BERTH_PKG_INFORMER_FACTORY_H_
#define BERTH_PKG_INFORMER_FACTORY_H_

#include <chrono>
#include <memory>
#include <mutex>

#include "pkg/api/types.h"
#include "pkg/client/client.h"
#include "pkg/informer/informer.h"

namespace berth::informer {

// Pods that are still running or pending: finished pods hold no resources, so like
// kube-scheduler we never list or watch them.
inline constexpr const char* kActivePodsFieldSelector =
    "status.phase!=Succeeded,status.phase!=Failed";

// Hands out one informer per resource, created on first use, so every consumer of pods shares one
// list+watch. Thread-safe. Start() starts every informer created so far (and later ones at once).
// With `prefer_protobuf` (kube-scheduler's default too) pods and nodes are listed and watched in
// protobuf when the apiserver offers it.
class SharedInformerFactory {
 public:
  explicit SharedInformerFactory(std::shared_ptr<client::Client> client,
                                 bool prefer_protobuf = true);
  ~SharedInformerFactory();

  Informer<api::Pod>& Pods();
  Informer<api::Node>& Nodes();

  void Start();
  void Stop();
  // True when every informer created so far has synced within `timeout`.
  bool WaitForCacheSync(std::chrono::milliseconds timeout);
  bool HasSynced();

 private:
  std::shared_ptr<client::Client> client_;
  const bool prefer_protobuf_;
  std::mutex mu_;
  bool started_ = false;
  std::unique_ptr<Informer<api::Pod>> pods_;
  std::unique_ptr<Informer<api::Node>> nodes_;
};

}  // namespace berth::informer

#endif  // BERTH_PKG_INFORMER_FACTORY_H_
