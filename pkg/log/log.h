#ifndef BERTH_PKG_LOG_LOG_H_
#define BERTH_PKG_LOG_LOG_H_

// Logging on top of spdlog with klog's verbosity model and structured key/value fields.
//
// Levels: V(0) is lifecycle (spdlog info), V(2) is one line per scheduling decision (debug), V(4)
// is per-plugin / per-request detail (trace). Fields travel inside the spdlog payload, separated
// by control characters no Kubernetes name can contain, and the formatter installed by Setup()
// renders them as `key=value` (text) or as JSON members (json). Plain spdlog calls keep working
// and simply carry no fields.
//
// Never pass a token, key or certificate as a field or in a message.

#include <spdlog/spdlog.h>

#include <initializer_list>
#include <string>
#include <string_view>

namespace berth::log {

enum class Format { kText, kJson };

// Installs the process-wide logger on stderr. Thread-safe to log from any thread afterwards.
void Setup(Format format, int verbosity);

// Whether V(level) messages are emitted (spdlog::should_log on the mapped level).
bool V(int level);

struct Field {
  std::string_view key;
  std::string_view value;
};

// `msg` followed by encoded fields; the formatter decodes them. Exposed for tests.
std::string Encode(std::string_view msg, std::initializer_list<Field> fields);

// Renders one record as Setup's formatter would (`ts` is RFC 3339 in UTC). Exposed for tests.
std::string Render(Format format, std::string_view ts, spdlog::level::level_enum level,
                   std::string_view payload);

void Info(std::string_view msg, std::initializer_list<Field> fields = {});
void Warn(std::string_view msg, std::initializer_list<Field> fields = {});
void Error(std::string_view msg, std::initializer_list<Field> fields = {});
// At klog verbosity `v` (0..10).
void Verbose(int v, std::string_view msg, std::initializer_list<Field> fields = {});

}  // namespace berth::log

#endif  // BERTH_PKG_LOG_LOG_H_
