#include "pkg/informer/reflector.h"

#include <spdlog/spdlog.h>

#include <random>
#include <string_view>

#include "pkg/api/errors.h"
#include "pkg/api/list_parser.h"
#include "pkg/api/protobuf.h"

namespace berth::informer {
namespace {

std::string ResourceVersionOf(const nlohmann::json& object) {
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  auto rv = meta->find("resourceVersion");
  return rv != meta->end() && rv->is_string() ? rv->get<std::string>() : "";
}

// A watched pod's message as the JSON the general path makes of it. Malformed bytes fail the watch
// as they would have when the client decoded the event.
nlohmann::json DecodePod(std::string_view message) {
  try {
    return api::ProtobufPodToJson(message);
  } catch (const api::DecodeError& e) {
    throw client::ApiError(client::ErrorReason::kUnknown, 0, std::string("watch: ") + e.what());
  }
}

// A watch that ends this fast without delivering anything is treated as a failure, so a server
// that keeps closing streams at once is not hammered in a tight loop.
constexpr auto kMinHealthyWatch = std::chrono::seconds(1);

}  // namespace

api::ListMeta ListPageItems(client::Client& client, const std::string& path,
                            const client::ListOptions& options, const std::string& continue_token,
                            const std::function<void(nlohmann::json&)>& on_item,
                            std::string* content_type, const api::ProtobufItemHandler& on_message) {
  // The decoder is chosen once the response's Content-Type is known, which is before its body.
  std::string type;
  std::unique_ptr<api::ListDecoder> decoder;
  const auto decoder_for_body = [&]() -> api::ListDecoder& {
    if (!decoder) decoder = api::NewListDecoder(type, on_item, on_message);
    return *decoder;
  };
  client.ListPageStream(
      path, options, continue_token,
      [&](std::string_view bytes) { decoder_for_body().Feed(bytes); }, &type);
  if (content_type != nullptr) *content_type = type;
  return decoder_for_body().Finish();
}

Reflector::Reflector(std::shared_ptr<client::Client> client, ReflectorOptions options,
                     ListWatchSink* sink)
    : client_(std::move(client)),
      options_(std::move(options)),
      sink_(sink),
      backoff_(options_.initial_backoff) {}

void FirstWatchGate::Join() {
  std::lock_guard lock(mu_);
  pending_++;
}

void FirstWatchGate::Leave() {
  {
    std::lock_guard lock(mu_);
    pending_--;
  }
  cv_.notify_all();
}

void FirstWatchGate::Wait(const std::atomic<bool>& stopping) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, max_wait_, [&] { return pending_ <= 0 || stopping.load(); });
}

void FirstWatchGate::Wake() {
  // Under the lock, so a waiter between its check of `stopping` and its sleep cannot miss it.
  { std::lock_guard lock(mu_); }
  cv_.notify_all();
}

Reflector::~Reflector() { Stop(); }

void Reflector::Start() {
  if (thread_.joinable()) return;
  stopping_ = false;
  if (options_.first_watch_gate) {
    options_.first_watch_gate->Join();
    in_gate_ = true;
  }
  thread_ = std::thread([this] {
    Run();
    LeaveGate();
  });
}

void Reflector::LeaveGate() {
  if (!in_gate_) return;
  in_gate_ = false;
  options_.first_watch_gate->Leave();
}

void Reflector::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (watch_) watch_->Stop();
  }
  stop_cv_.notify_all();
  if (options_.first_watch_gate) options_.first_watch_gate->Wake();
  if (thread_.joinable()) thread_.join();
}

std::string Reflector::last_error() const {
  std::lock_guard lock(mu_);
  return error_;
}

void Reflector::SetError(const std::string& error) {
  std::lock_guard lock(mu_);
  error_ = error;
}

void Reflector::Backoff() {
  thread_local std::mt19937 rng{std::random_device{}()};
  std::uniform_real_distribution<double> jitter(1.0, 1.5);
  auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(backoff_ * jitter(rng));
  backoff_ = std::min(backoff_ * 2, options_.max_backoff);
  std::unique_lock lock(mu_);
  stop_cv_.wait_for(lock, wait, [this] { return stopping_.load(); });
}

std::string Reflector::ListAll(const std::string& from_resource_version) {
  const std::string path = options_.resource.Path(options_.namespace_);
  client::ListOptions list_options;
  list_options.label_selector = options_.label_selector;
  list_options.field_selector = options_.field_selector;
  list_options.limit = options_.page_size;
  list_options.resource_version = from_resource_version;
  list_options.prefer_protobuf = options_.prefer_protobuf;

  sink_->ReplaceBegin();
  std::string continue_token;
  std::string resource_version;
  do {
    // Decoded while it arrives, item by item: a large list neither waits for its last byte nor
    // ever exists as one JSON tree.
    api::ListMeta meta = ListPageItems(
        *client_, path, list_options, continue_token,
        [this](nlohmann::json& item) { sink_->ReplaceItem(item); }, nullptr,
        [this](std::string_view message) { return sink_->ReplaceProtobufItem(message); });
    if (meta.resource_version.empty()) {
      throw std::runtime_error("LIST " + path + ": response has no metadata.resourceVersion");
    }
    resource_version = meta.resource_version;
    continue_token = meta.continue_token;
    if (stopping_) return resource_version;
  } while (!continue_token.empty());
  // Cleared before the sink reports the sync, so nobody sees "synced" beside a stale error.
  SetError("");
  // Counted before the sink hears of it: ReplaceEnd is what marks the informer synced, and a
  // reader woken by that must already see this list counted.
  lists_++;
  sink_->ReplaceEnd();
  return resource_version;
}

Reflector::WatchEnd Reflector::WatchFrom(std::string& resource_version) {
  client::WatchOptions watch_options;
  watch_options.label_selector = options_.label_selector;
  watch_options.field_selector = options_.field_selector;
  watch_options.resource_version = resource_version;
  watch_options.timeout_seconds = options_.watch_timeout_seconds;
  watch_options.prefer_protobuf = options_.prefer_protobuf;
  watch_options.undecoded_protobuf_pods = options_.prefer_protobuf;
  watch_options.busy = options_.busy_watch;

  auto stream = client_->Watch(options_.resource.Path(options_.namespace_), watch_options);
  watches_++;
  client::WatchStream* watch = stream.get();
  {
    std::lock_guard lock(mu_);
    if (stopping_) return WatchEnd::kStopped;
    watch_ = std::move(stream);
  }
  struct Release {
    Reflector* self;
    ~Release() {
      std::lock_guard lock(self->mu_);
      self->watch_.reset();
    }
  } release{this};

  const auto opened = std::chrono::steady_clock::now();
  bool delivered = false;
  client::WatchEvent event;
  try {
    while (watch->Next(&event)) {
      switch (event.type) {
        case client::WatchEventType::kBookmark:
          if (auto rv = ResourceVersionOf(event.object); !rv.empty()) resource_version = rv;
          delivered = true;
          break;
        case client::WatchEventType::kError: {
          int code = event.object.value("code", 0);
          std::string message = event.object.value("message", "");
          if (code == 410) {
            spdlog::info("watch {}: resourceVersion {} expired ({}); relisting",
                         options_.resource.plural, resource_version, message);
            return WatchEnd::kGone;
          }
          throw client::ErrorFromResponse(code, event.object.dump(), std::nullopt);
        }
        default: {
          std::string rv;
          if (event.protobuf_pod.empty() ||
              !sink_->WatchProtobufPod(event.type, event.protobuf_pod, &rv)) {
            if (!event.protobuf_pod.empty()) event.object = DecodePod(event.protobuf_pod);
            sink_->WatchEvent(event.type, event.object);
            rv = ResourceVersionOf(event.object);
          }
          if (!rv.empty()) resource_version = rv;
          delivered = true;
          break;
        }
      }
    }
  } catch (const client::ApiError& e) {
    // A stream that broke after serving (events, or a healthy while) is what a cut connection or
    // an apiserver restart does to every watch: watch again at once from where it got to, as
    // after a stream the server closed. Backing off instead would double the pause with every
    // cut, up to max_backoff, and leave the informer that long blind to changes.
    const bool broke = e.reason() == client::ErrorReason::kTransport ||
                       e.reason() == client::ErrorReason::kTimeout;
    const bool served = delivered || std::chrono::steady_clock::now() - opened >= kMinHealthyWatch;
    if (stopping_ || !broke || !served) throw;
    spdlog::info("watch {}: stream broke ({}); watching again from resourceVersion {}",
                 options_.resource.plural, e.what(), resource_version);
    backoff_ = options_.initial_backoff;
    return WatchEnd::kClosed;
  }
  if (stopping_) return WatchEnd::kStopped;
  if (!delivered && std::chrono::steady_clock::now() - opened < kMinHealthyWatch) {
    throw client::ApiError(client::ErrorReason::kTransport, 0,
                           "watch closed by the server immediately after opening");
  }
  if (delivered) backoff_ = options_.initial_backoff;
  return WatchEnd::kClosed;
}

bool Reflector::Discover() {
  const client::Resource& resource = options_.resource;
  const std::string path = resource.group.empty()
                               ? "/api/" + resource.version
                               : "/apis/" + resource.group + "/" + resource.version;
  while (!stopping_) {
    try {
      bool served = false;
      try {
        const nlohmann::json list = client_->Get(path);
        for (const auto& item : list.at("resources")) {
          if (item.at("name") == resource.plural) served = true;
        }
      } catch (const client::ApiError& e) {
        // The whole group version is absent: no definition of it is installed.
        if (e.reason() != client::ErrorReason::kNotFound) throw;
      }
      SetError("");
      if (!served) {
        spdlog::info("{} is not served by the apiserver ({}): not listing it",
                     resource.plural + "." + resource.group, path);
      }
      sink_->Discovered(served);
      return served;
    } catch (const std::exception& e) {
      if (stopping_) break;
      spdlog::warn("discovery {}: {}; retrying with backoff", path, e.what());
      SetError(std::string("discovery: ") + e.what());
      Backoff();
    }
  }
  return false;
}

void Reflector::Run() {
  if (options_.discover && !Discover()) return;
  backoff_ = options_.initial_backoff;
  std::string resource_version;
  bool need_list = true;
  // As client-go's reflector: the first list accepts any resourceVersion ("0"), which the
  // apiserver serves from its watch cache instead of paging through etcd (much of start-up on a
  // large cluster). A relist continues from the last version seen, except after 410 Gone, when only
  // a consistent read ("") is safe.
  bool last_version_unavailable = false;
  while (!stopping_) {
    try {
      if (need_list) {
        const std::string from = last_version_unavailable   ? ""
                                 : resource_version.empty() ? "0"
                                                            : resource_version;
        resource_version = ListAll(from);
        last_version_unavailable = false;
        if (stopping_) break;
        need_list = false;
        backoff_ = options_.initial_backoff;
        if (in_gate_) {
          LeaveGate();
          options_.first_watch_gate->Wait(stopping_);
          if (stopping_) break;
        }
      }
      switch (WatchFrom(resource_version)) {
        case WatchEnd::kGone:
          need_list = true;
          last_version_unavailable = true;
          break;
        case WatchEnd::kClosed:
        case WatchEnd::kStopped:
          break;
      }
    } catch (const client::ApiError& e) {
      if (stopping_) break;
      if (e.reason() == client::ErrorReason::kGone) {
        spdlog::info("{}: {}; relisting", options_.resource.plural, e.what());
        need_list = true;
        last_version_unavailable = true;
        continue;
      }
      spdlog::warn("{} {}: {}; retrying with backoff", need_list ? "list" : "watch",
                   options_.resource.plural, e.what());
      SetError(e.what());
      Backoff();
    } catch (const std::exception& e) {
      if (stopping_) break;
      // A body that is not the JSON we expect: start over from a fresh list.
      spdlog::warn("{} {}: {}; relisting after backoff", need_list ? "list" : "watch",
                   options_.resource.plural, e.what());
      SetError(e.what());
      need_list = true;
      Backoff();
    }
  }
}

}  // namespace berth::informer
