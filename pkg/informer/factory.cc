#include "pkg/informer/factory.h"

#include <algorithm>

namespace berth::informer {

SharedInformerFactory::SharedInformerFactory(std::shared_ptr<client::Client> client,
                                             bool prefer_protobuf)
    : client_(std::move(client)), prefer_protobuf_(prefer_protobuf) {}

SharedInformerFactory::~SharedInformerFactory() { Stop(); }

std::vector<InformerBase*> SharedInformerFactory::Snapshot() {
  std::lock_guard lock(mu_);
  std::vector<InformerBase*> out;
  out.reserve(informers_.size());
  for (auto& [key, entry] : informers_) out.push_back(entry.informer.get());
  return out;
}

void SharedInformerFactory::Start() {
  std::lock_guard lock(mu_);
  started_ = true;
  // Held while they start, so that an informer that lists before the next one has started does
  // not find the gate open.
  first_watch_gate_->Join();
  for (auto& [key, entry] : informers_) entry.informer->Start();
  first_watch_gate_->Leave();
}

void SharedInformerFactory::Stop() {
  std::lock_guard lock(mu_);
  for (auto& [key, entry] : informers_) entry.informer->Stop();
  started_ = false;
}

bool SharedInformerFactory::WaitForCacheSync(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (InformerBase* informer : Snapshot()) {
    const auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(std::max(
        deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration{}));
    if (!informer->WaitForSync(remaining)) return false;
  }
  return true;
}

bool SharedInformerFactory::HasSynced() {
  const auto informers = Snapshot();
  return std::all_of(informers.begin(), informers.end(),
                     [](const InformerBase* informer) { return informer->HasSynced(); });
}

std::vector<SharedInformerFactory::InformerState> SharedInformerFactory::States() {
  std::vector<InformerState> out;
  for (InformerBase* informer : Snapshot()) {
    out.push_back(
        {informer->ResourceName(), informer->HasSynced(), informer->reflector().last_error()});
  }
  std::sort(out.begin(), out.end(),
            [](const InformerState& a, const InformerState& b) { return a.resource < b.resource; });
  return out;
}

void SharedInformerFactory::ForEach(const std::function<void(InformerBase&)>& fn) {
  for (InformerBase* informer : Snapshot()) fn(*informer);
}

}  // namespace berth::informer
