#include "pkg/informer/factory.h"

#include "pkg/api/codec.h"
#include "pkg/api/protobuf.h"

namespace berth::informer {

SharedInformerFactory::SharedInformerFactory(std::shared_ptr<client::Client> client,
                                             bool prefer_protobuf)
    : client_(std::move(client)), prefer_protobuf_(prefer_protobuf) {}

SharedInformerFactory::~SharedInformerFactory() { Stop(); }

Informer<api::Pod>& SharedInformerFactory::Pods() {
  std::lock_guard lock(mu_);
  if (!pods_) {
    ReflectorOptions options;
    options.resource = client::PodsResource();
    options.field_selector = kActivePodsFieldSelector;
    options.prefer_protobuf = prefer_protobuf_;
    pods_ = std::make_unique<Informer<api::Pod>>(client_, options, api::DecodePod,
                                                 api::TryDecodeProtobufPod);
    if (started_) pods_->Start();
  }
  return *pods_;
}

Informer<api::Node>& SharedInformerFactory::Nodes() {
  std::lock_guard lock(mu_);
  if (!nodes_) {
    ReflectorOptions options;
    options.resource = client::NodesResource();
    options.prefer_protobuf = prefer_protobuf_;
    nodes_ = std::make_unique<Informer<api::Node>>(client_, options, api::DecodeNode);
    if (started_) nodes_->Start();
  }
  return *nodes_;
}

void SharedInformerFactory::Start() {
  std::lock_guard lock(mu_);
  started_ = true;
  if (pods_) pods_->Start();
  if (nodes_) nodes_->Start();
}

void SharedInformerFactory::Stop() {
  std::lock_guard lock(mu_);
  if (pods_) pods_->Stop();
  if (nodes_) nodes_->Stop();
  started_ = false;
}

bool SharedInformerFactory::WaitForCacheSync(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto remaining = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::max(
        deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration{}));
  };
  Informer<api::Pod>* pods;
  Informer<api::Node>* nodes;
  {
    std::lock_guard lock(mu_);
    pods = pods_.get();
    nodes = nodes_.get();
  }
  if (pods && !pods->WaitForSync(remaining())) return false;
  if (nodes && !nodes->WaitForSync(remaining())) return false;
  return true;
}

bool SharedInformerFactory::HasSynced() {
  std::lock_guard lock(mu_);
  return (!pods_ || pods_->HasSynced()) && (!nodes_ || nodes_->HasSynced());
}

}  // namespace berth::informer
