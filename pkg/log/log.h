#ifndef BERTH_PKG_LOG_LOG_H_
#define BERTH_PKG_LOG_LOG_H_

// Logging on top of spdlog with klog's verbosity model and structured key/value fields.
//
// Levels: V(0) is lifecycle (spdlog info), V(2) is one line per scheduling decision (debug), V(4)
// is per-plugin / per-request detail (trace). Fields travel inside the spdlog payload, separated
// by control characters, and the formatter installed by Setup() renders them as `key=value`
// (text) or as JSON members (json). Plain spdlog calls keep working and simply carry no fields.
//
// Fields may hold anything a client sent (a request path, say), so nothing in a message, key or
// value can add a field, end a line or break the JSON:
//   - Inside the payload, Encode() writes each byte 0x1c, 0x1e and 0x1f of the message, a key or
//     a value as 0x1c followed by that byte + 0x40 ('\\', '^', '_'), so the separators (0x1e
//     before a key, 0x1f between key and value) only ever come from Encode itself. Only records
//     logged through this header are split into fields; a plain spdlog payload is all message.
//   - Text: a key or value is written bare when it is non-empty and holds no space, '"', '=',
//     control character (below 0x20, or 0x7f) or byte that is not UTF-8; otherwise as a JSON
//     string literal ("a\u001eb"), so a bare word and a quoted one never read alike. The message
//     keeps its bytes but for control characters, written as JSON escapes: one record, one line.
//   - JSON: every string is a JSON string literal, control characters escaped.
//   - In both, bytes that are not UTF-8 become U+FFFD, as Go's encoding/json writes them.
//
// Never pass a token, key or certificate as a field or in a message.

#include <spdlog/spdlog.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>

namespace berth::log {

enum class Format { kText, kJson };

// Installs the process-wide logger on `sink`, stderr when null. Thread-safe to log from any
// thread afterwards.
void Setup(Format format, int verbosity, spdlog::sink_ptr sink = nullptr);

// Whether V(level) messages are emitted (spdlog::should_log on the mapped level).
bool V(int level);

struct Field {
  std::string_view key;
  std::string_view value;
};

// `msg` followed by encoded fields; the formatter decodes them. Exposed for tests.
std::string Encode(std::string_view msg, std::initializer_list<Field> fields);

// Renders one record as Setup's formatter would (`ts` is RFC 3339 in UTC): `payload` as Encode
// made it when `structured`, else a plain spdlog message. Exposed for tests.
std::string Render(Format format, std::string_view ts, spdlog::level::level_enum level,
                   std::string_view payload, bool structured = true);

void Info(std::string_view msg, std::initializer_list<Field> fields = {});
void Warn(std::string_view msg, std::initializer_list<Field> fields = {});
void Error(std::string_view msg, std::initializer_list<Field> fields = {});
// At klog verbosity `v` (0..10).
void Verbose(int v, std::string_view msg, std::initializer_list<Field> fields = {});

}  // namespace berth::log

#endif  // BERTH_PKG_LOG_LOG_H_
