#include "test/testing/http_call.h"

#include <curl/curl.h>

#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <utility>

namespace berth::testing {
namespace {

struct EasyCleanup {
  void operator()(CURL* easy) const { curl_easy_cleanup(easy); }
};
struct SlistFree {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

template <typename T>
void Set(CURL* easy, CURLoption option, T value) {
  if (const CURLcode rc = curl_easy_setopt(easy, option, value); rc != CURLE_OK) {
    throw std::runtime_error(std::string("HttpCall: libcurl rejected an option: ") +
                             curl_easy_strerror(rc));
  }
}

size_t Collect(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

void InitLibcurl() {
  static std::once_flag initialised;
  std::call_once(initialised, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

HttpResult HttpCall(const std::string& url, const HttpCallOptions& options) {
  InitLibcurl();
  const std::unique_ptr<CURL, EasyCleanup> handle(curl_easy_init());
  if (handle == nullptr) throw std::runtime_error("HttpCall: curl_easy_init failed");
  CURL* easy = handle.get();
  HttpResult result;
  char error[CURL_ERROR_SIZE] = {};
  Set(easy, CURLOPT_URL, url.c_str());
  Set(easy, CURLOPT_ERRORBUFFER, error);
  // The path exactly as the test wrote it: tests send dot segments on purpose.
  Set(easy, CURLOPT_PATH_AS_IS, 1L);
  Set(easy, CURLOPT_NOSIGNAL, 1L);
  Set(easy, CURLOPT_PROXY, "");  // Never the environment's proxy: the servers are local.
  Set(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeout.count()));
  Set(easy, CURLOPT_WRITEFUNCTION, &Collect);
  Set(easy, CURLOPT_WRITEDATA, &result.body);
  Set(easy, CURLOPT_SSL_VERIFYPEER, options.insecure ? 0L : 1L);
  Set(easy, CURLOPT_SSL_VERIFYHOST, options.insecure ? 0L : 2L);
  if (options.ca.rfind("-----", 0) == 0) {
    curl_blob ca{const_cast<char*>(options.ca.data()), options.ca.size(), CURL_BLOB_COPY};
    Set(easy, CURLOPT_CAINFO_BLOB, &ca);
    Set(easy, CURLOPT_CAPATH, static_cast<const char*>(nullptr));
  } else if (!options.ca.empty()) {
    Set(easy, CURLOPT_CAINFO, options.ca.c_str());
    Set(easy, CURLOPT_CAPATH, static_cast<const char*>(nullptr));
  }
  if (!options.cert_file.empty()) {
    Set(easy, CURLOPT_SSLCERT, options.cert_file.c_str());
    Set(easy, CURLOPT_SSLKEY, options.key_file.c_str());
  }
  std::unique_ptr<curl_slist, SlistFree> headers;
  const auto add = [&headers](const std::string& line) {
    curl_slist* appended = curl_slist_append(headers.get(), line.c_str());
    if (appended == nullptr) throw std::runtime_error("HttpCall: out of memory");
    static_cast<void>(headers.release());
    headers.reset(appended);
  };
  if (!options.token.empty()) add("Authorization: Bearer " + options.token);
  const bool has_body = !options.body.empty() || options.method == "POST";
  if (has_body) {
    if (!options.content_type.empty()) add("Content-Type: " + options.content_type);
    add("Expect:");  // Send the body at once rather than wait for a "100 Continue".
    Set(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(options.body.size()));
    Set(easy, CURLOPT_COPYPOSTFIELDS, options.body.c_str());
  }
  if (options.method == "HEAD") {
    Set(easy, CURLOPT_NOBODY, 1L);
  } else if (options.method != (has_body ? "POST" : "GET")) {
    Set(easy, CURLOPT_CUSTOMREQUEST, options.method.c_str());
  }
  if (headers != nullptr) Set(easy, CURLOPT_HTTPHEADER, headers.get());
  if (const CURLcode rc = curl_easy_perform(easy); rc != CURLE_OK) {
    throw std::runtime_error(options.method + " " + url + ": " +
                             (error[0] != '\0' ? error : curl_easy_strerror(rc)));
  }
  long status = 0;
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
  result.status = static_cast<int>(status);
  return result;
}

struct ReadinessProbe::Handle {
  std::unique_ptr<CURL, EasyCleanup> easy;
  std::string body;
};

ReadinessProbe::ReadinessProbe(std::string url)
    : url_(std::move(url)), handle_(std::make_unique<Handle>()) {
  InitLibcurl();
  handle_->easy.reset(curl_easy_init());
  if (handle_->easy == nullptr) throw std::runtime_error("ReadinessProbe: curl_easy_init failed");
  CURL* easy = handle_->easy.get();
  Set(easy, CURLOPT_URL, url_.c_str());
  Set(easy, CURLOPT_NOSIGNAL, 1L);
  Set(easy, CURLOPT_PROXY, "");
  Set(easy, CURLOPT_TIMEOUT_MS, 2000L);
  Set(easy, CURLOPT_SSL_VERIFYPEER, 0L);
  Set(easy, CURLOPT_SSL_VERIFYHOST, 0L);
  Set(easy, CURLOPT_WRITEFUNCTION, &Collect);
  Set(easy, CURLOPT_WRITEDATA, &handle_->body);
}

ReadinessProbe::~ReadinessProbe() = default;

int ReadinessProbe::Status() {
  handle_->body.clear();
  CURL* easy = handle_->easy.get();
  if (curl_easy_perform(easy) != CURLE_OK) return 0;
  long status = 0;
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
  return static_cast<int>(status);
}

std::string PercentEncode(const std::string& value) {
  // libcurl ignores the handle (since 7.82).
  const std::unique_ptr<char, decltype(&curl_free)> encoded(
      curl_easy_escape(nullptr, value.data(), static_cast<int>(value.size())), curl_free);
  if (encoded == nullptr) throw std::bad_alloc();
  return encoded.get();
}

}  // namespace berth::testing
