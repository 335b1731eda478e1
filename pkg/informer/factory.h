#ifndef BERTH_PKG_INFORMER_FACTORY_H_
#define BERTH_PKG_INFORMER_FACTORY_H_

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <typeindex>
#include <vector>

#include "pkg/api/types.h"
#include "pkg/client/client.h"
#include "pkg/informer/informer.h"
#include "pkg/informer/lister.h"
#include "pkg/informer/resources.h"

namespace berth::informer {

// Hands out one informer per resource, created on first use, so every consumer of a resource
// shares one list+watch, and a resource nobody asked for is never listed. Thread-safe.
// Start() starts every informer created so far; one created later starts at once.
// With `prefer_protobuf` (kube-scheduler's default too) pods and nodes are listed and watched in
// protobuf when the apiserver offers it. With a null client no informer lists or watches (see
// Informer): benchmarks and offline runs fill them directly.
class SharedInformerFactory {
 public:
  explicit SharedInformerFactory(std::shared_ptr<client::Client> client,
                                 bool prefer_protobuf = true);
  ~SharedInformerFactory();
  SharedInformerFactory(const SharedInformerFactory&) = delete;
  SharedInformerFactory& operator=(const SharedInformerFactory&) = delete;

  // The informer of any type with a ResourceTraits specialization (pkg/informer/resources.h).
  template <typename T>
  Informer<T>& For() {
    using Traits = ResourceTraits<T>;
    return Get<T>(Traits::Resource(), [this] {
      ReflectorOptions options;
      options.resource = Traits::Resource();
      options.first_watch_gate = first_watch_gate_;
      if constexpr (requires { Traits::kProtobuf; }) options.prefer_protobuf = prefer_protobuf_;
      if constexpr (requires { Traits::Configure(options); }) Traits::Configure(options);
      typename Informer<T>::ProtobufDecoder protobuf_decoder;
      if constexpr (requires { Traits::DecodeProtobuf(std::string_view()); }) {
        protobuf_decoder = &Traits::DecodeProtobuf;
      }
      return std::make_unique<Informer<T>>(client_, std::move(options), &Traits::Decode,
                                           std::move(protobuf_decoder));
    });
  }

  // The informer of a custom resource (or any resource without a typed object): objects keep
  // their whole JSON (api::Unstructured). Only the resource's group, version and plural matter.
  Informer<api::Unstructured>& ForCustom(const client::Resource& resource) {
    return Get<api::Unstructured>(resource, [&] {
      ReflectorOptions options;
      options.resource = resource;
      options.first_watch_gate = first_watch_gate_;
      return std::make_unique<Informer<api::Unstructured>>(client_, std::move(options),
                                                           &api::DecodeUnstructured);
    });
  }

  // A lister of T; creates (and, once started, starts) T's informer.
  template <typename T>
  Lister<T> ListerFor() {
    return Lister<T>(&For<T>().store());
  }

  Informer<api::Pod>& Pods() { return For<api::Pod>(); }
  Informer<api::Node>& Nodes() { return For<api::Node>(); }

  void Start();
  void Stop();
  // True when every informer created so far has synced within `timeout`.
  bool WaitForCacheSync(std::chrono::milliseconds timeout);
  bool HasSynced();

  struct InformerState {
    std::string resource;  // InformerBase::ResourceName()
    bool synced = false;
    std::string last_error;  // Of the last failed list or watch; empty after a success.
  };
  // Every informer created so far, sorted by resource.
  std::vector<InformerState> States();
  // Calls fn for every informer created so far (not under the factory's lock).
  void ForEach(const std::function<void(InformerBase&)>& fn);

 private:
  struct Entry {
    std::type_index type;
    std::unique_ptr<InformerBase> informer;
  };

  template <typename T, typename Make>
  Informer<T>& Get(const client::Resource& resource, Make&& make) {
    std::lock_guard lock(mu_);
    const std::string key = resource.Path();
    auto it = informers_.find(key);
    if (it == informers_.end()) {
      it = informers_.emplace(key, Entry{std::type_index(typeid(T)), make()}).first;
      if (started_) it->second.informer->Start();
    } else if (it->second.type != std::type_index(typeid(T))) {
      throw std::logic_error("informer for " + key + " exists with another object type");
    }
    return static_cast<Informer<T>&>(*it->second.informer);
  }

  std::vector<InformerBase*> Snapshot();

  std::shared_ptr<client::Client> client_;
  const bool prefer_protobuf_;
  // Every informer's first watch waits for every informer's first list, at most a second (see
  // FirstWatchGate).
  const std::shared_ptr<FirstWatchGate> first_watch_gate_ =
      std::make_shared<FirstWatchGate>(std::chrono::seconds(1));
  std::mutex mu_;
  bool started_ = false;
  // By the resource's collection path; entries are never removed while the factory lives.
  std::map<std::string, Entry> informers_;
};

}  // namespace berth::informer

#endif  // BERTH_PKG_INFORMER_FACTORY_H_
