#include "pkg/log/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "pkg/api/utf8.h"
#include "pkg/util/time.h"

namespace berth::log {
namespace {

// Separators inside the payload: kFieldSep before each key, kValueSep between key and value.
// kEscape introduces an escaped byte (log.h), so neither separator is ever data.
constexpr char kFieldSep = '\x1e';
constexpr char kValueSep = '\x1f';
constexpr char kEscape = '\x1c';
constexpr char kEscapeOffset = 0x40;

// The source filename Emit gives its records: how the formatter tells a payload Encode made from
// a plain spdlog message, which may hold the separators' bytes as data. Compared by address.
constexpr char kStructured[] = "<berth::log structured>";

void AppendEscaped(std::string& out, std::string_view s) {
  for (char c : s) {
    if (c == kEscape || c == kFieldSep || c == kValueSep) {
      out += kEscape;
      out += static_cast<char>(c + kEscapeOffset);
    } else {
      out += c;
    }
  }
}

// Encode's escaping undone; a kEscape ending the text (no Encode output does) is dropped.
std::string Unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] != kEscape) {
      out += s[i];
    } else if (i + 1 < s.size()) {
      out += static_cast<char>(s[++i] - kEscapeOffset);
    }
  }
  return out;
}

bool IsControl(unsigned char c) { return c < 0x20 || c == 0x7f; }

// `s` with bytes that are not UTF-8 replaced by U+FFFD; every other byte as is.
std::string ValidUtf8(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return api::ValidUtf8(s);
  }
  return std::string(s);
}

spdlog::level::level_enum LevelFor(int v) {
  if (v >= 4) return spdlog::level::trace;
  if (v >= 2) return spdlog::level::debug;
  return spdlog::level::info;
}

// A JSON string literal; `s` is valid UTF-8.
void AppendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

// logfmt quoting: bare when unambiguous (log.h), else a JSON string. `s` is valid UTF-8, so a
// byte that was not became U+FFFD and now asks for quotes.
void AppendTextWord(std::string& out, std::string_view s, bool replaced) {
  bool bare = !s.empty() && !replaced;
  for (char c : s) {
    if (c == ' ' || c == '"' || c == '=' || IsControl(static_cast<unsigned char>(c))) {
      bare = false;
      break;
    }
  }
  if (bare) {
    out += s;
  } else {
    AppendJsonString(out, s);
  }
}

// The text format's message: its own bytes, control characters as JSON escapes.
void AppendTextMessage(std::string& out, std::string_view s) {
  for (char c : s) {
    if (IsControl(static_cast<unsigned char>(c))) {
      std::string escaped;
      AppendJsonString(escaped, std::string_view(&c, 1));
      out.append(escaped, 1, escaped.size() - 2);
    } else {
      out += c;
    }
  }
}

const char* LevelName(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
      return "trace";
    case spdlog::level::debug:
      return "debug";
    case spdlog::level::info:
      return "info";
    case spdlog::level::warn:
      return "warning";
    case spdlog::level::err:
      return "error";
    case spdlog::level::critical:
      return "critical";
    default:
      return "info";
  }
}

char LevelLetter(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
      return 'T';
    case spdlog::level::debug:
      return 'D';
    case spdlog::level::warn:
      return 'W';
    case spdlog::level::err:
      return 'E';
    case spdlog::level::critical:
      return 'C';
    default:
      return 'I';
  }
}

// klog's verbosity for a record: what an operator filters on in JSON.
int VerbosityOf(spdlog::level::level_enum level) {
  if (level == spdlog::level::trace) return 4;
  if (level == spdlog::level::debug) return 2;
  return 0;
}

class Formatter : public spdlog::formatter {
 public:
  explicit Formatter(Format format) : format_(format) {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    std::string line = Render(format_, util::FormatRfc3339Micro(msg.time), msg.level,
                              std::string_view(msg.payload.data(), msg.payload.size()),
                              msg.source.filename == kStructured);
    line += '\n';
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<Formatter>(format_);
  }

 private:
  Format format_;
};

void Emit(spdlog::level::level_enum level, std::string_view msg,
          std::initializer_list<Field> fields) {
  if (!spdlog::should_log(level)) return;
  const std::string payload = Encode(msg, fields);
  spdlog::default_logger_raw()->log(spdlog::source_loc{kStructured, 0, ""}, level,
                                    spdlog::string_view_t(payload.data(), payload.size()));
}

}  // namespace

std::string Encode(std::string_view msg, std::initializer_list<Field> fields) {
  std::string out;
  out.reserve(msg.size() + 32 * fields.size());
  AppendEscaped(out, msg);
  for (const auto& f : fields) {
    out += kFieldSep;
    AppendEscaped(out, f.key);
    out += kValueSep;
    AppendEscaped(out, f.value);
  }
  return out;
}

std::string Render(Format format, std::string_view ts, spdlog::level::level_enum level,
                   std::string_view payload, bool structured) {
  size_t end = structured ? payload.find(kFieldSep) : std::string_view::npos;
  const std::string msg =
      ValidUtf8(structured ? Unescape(payload.substr(0, end)) : std::string(payload));
  std::string out;
  out.reserve(payload.size() + 64);
  if (format == Format::kJson) {
    out += "{\"ts\":";
    AppendJsonString(out, ts);
    out += ",\"level\":\"";
    out += LevelName(level);
    out += "\",\"v\":";
    out += std::to_string(VerbosityOf(level));
    out += ",\"msg\":";
    AppendJsonString(out, msg);
  } else {
    out += ts;
    out += ' ';
    out += LevelLetter(level);
    out += ' ';
    AppendTextMessage(out, msg);
  }
  while (end != std::string_view::npos) {
    size_t next = payload.find(kFieldSep, end + 1);
    std::string_view field = payload.substr(
        end + 1, next == std::string_view::npos ? std::string_view::npos : next - end - 1);
    size_t sep = field.find(kValueSep);
    const std::string raw_key = Unescape(field.substr(0, sep));
    const std::string raw_value =
        sep == std::string_view::npos ? std::string() : Unescape(field.substr(sep + 1));
    const std::string key = ValidUtf8(raw_key);
    const std::string value = ValidUtf8(raw_value);
    if (format == Format::kJson) {
      out += ',';
      AppendJsonString(out, key);
      out += ':';
      AppendJsonString(out, value);
    } else {
      out += ' ';
      AppendTextWord(out, key, key != raw_key);
      out += '=';
      AppendTextWord(out, value, value != raw_value);
    }
    end = next;
  }
  if (format == Format::kJson) out += '}';
  return out;
}

void Setup(Format format, int verbosity, spdlog::sink_ptr sink) {
  if (!sink) sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("berth", sink);
  logger->set_formatter(std::make_unique<Formatter>(format));
  logger->set_level(LevelFor(verbosity));
  // Errors reach the terminal (or the container runtime) at once, not when the buffer fills.
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

bool V(int level) { return spdlog::should_log(LevelFor(level)); }

void Info(std::string_view msg, std::initializer_list<Field> fields) {
  Emit(spdlog::level::info, msg, fields);
}
void Warn(std::string_view msg, std::initializer_list<Field> fields) {
  Emit(spdlog::level::warn, msg, fields);
}
void Error(std::string_view msg, std::initializer_list<Field> fields) {
  Emit(spdlog::level::err, msg, fields);
}
void Verbose(int v, std::string_view msg, std::initializer_list<Field> fields) {
  Emit(LevelFor(v), msg, fields);
}

}  // namespace berth::log
