#include <optional>
#include <string>
#include <utility>

#include "pkg/api/protobuf_internal.h"
#include "pkg/api/utf8.h"
#include "pkg/util/time.h"

namespace berth::api {
namespace {

std::string_view WireTypeName(uint32_t wire) {
  switch (wire) {
    case kVarint:
      return "varint";
    case kFixed64:
      return "fixed64";
    case kLengthDelimited:
      return "length-delimited";
    default:
      return "fixed32";
  }
}

// Go's time.Unix(seconds, 0).UTC().Format(time.RFC3339), which is metav1.Time's JSON form. RFC
// 3339 has four-digit years; Go's JSON encoding of a Time fails outside them as well.
std::string FormatTime(int64_t seconds, const FieldPath& path) {
  std::optional<std::string> text = util::FormatUnixSecondsRfc3339(seconds);
  if (!text) FailAt(path, "time out of the RFC 3339 range");
  return *std::move(text);
}

}  // namespace

bool TryReadVarint(std::string_view bytes, size_t* pos, uint64_t* out, const FieldPath& path) {
  uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= bytes.size()) return false;
    const auto byte = static_cast<unsigned char>(bytes[(*pos)++]);
    value |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) {
      *out = value;
      return true;
    }
  }
  FailAt(path, "malformed protobuf: varint longer than 10 bytes");
}

bool TryReadHeader(std::string_view bytes, size_t* pos, FieldHeader* header,
                   const FieldPath& path) {
  uint64_t tag = 0;
  if (!TryReadVarint(bytes, pos, &tag, path)) return false;
  header->number = static_cast<uint32_t>(tag >> 3);
  header->wire = static_cast<uint32_t>(tag & 7);
  if (header->number == 0 || (tag >> 3) > 0x1FFFFFFF) {
    FailAt(path, "malformed protobuf: invalid field number " + std::to_string(tag >> 3));
  }
  if (header->wire == kLengthDelimited) return TryReadVarint(bytes, pos, &header->length, path);
  if (header->wire != kVarint && header->wire != kFixed64 && header->wire != kFixed32) {
    FailAt(path, "malformed protobuf: unsupported wire type " + std::to_string(header->wire) +
                     " for field " + std::to_string(header->number));
  }
  return true;
}

bool TryReadValue(std::string_view bytes, size_t* pos, const FieldHeader& header, FieldValue* value,
                  const FieldPath& path) {
  size_t width = 0;
  switch (header.wire) {
    case kVarint:
      return TryReadVarint(bytes, pos, &value->number, path);
    case kFixed64:
      width = 8;
      break;
    case kFixed32:
      width = 4;
      break;
    default:
      if (header.length > bytes.size()) return false;
      width = static_cast<size_t>(header.length);
      break;
  }
  if (bytes.size() - *pos < width) return false;
  value->bytes = bytes.substr(*pos, width);
  *pos += width;
  return true;
}

void ReadField(std::string_view bytes, size_t* pos, FieldHeader* header, FieldValue* value,
               const FieldPath& path) {
  if (!TryReadHeader(bytes, pos, header, path) || !TryReadValue(bytes, pos, *header, value, path)) {
    FailAt(path, "malformed protobuf: message ends inside a field");
  }
}

void ExpectWire(const FieldHeader& header, uint32_t want, const FieldPath& path) {
  if (header.wire != want) {
    FailAt(path, "malformed protobuf: " + std::string(WireTypeName(header.wire)) +
                     " value, expected " + std::string(WireTypeName(want)));
  }
}

std::string Utf8String(std::string_view bytes, const FieldPath& path) {
  if (!IsValidUtf8(bytes)) FailAt(path, "invalid UTF-8 in a string");
  return std::string(bytes);
}

std::optional<std::string> TimeText(std::string_view message, const FieldPath& path) {
  if (message.empty()) return std::nullopt;
  int64_t seconds = 0;
  MessageFields fields(message, path);
  while (fields.Next()) {
    if (fields.number() == 1) seconds = fields.Int64();
  }
  return FormatTime(seconds, path);
}

std::pair<std::string, std::string> ReadMapEntry(std::string_view message, bool quantity_value,
                                                 const FieldPath& path) {
  std::pair<std::string, std::string> entry;
  MessageFields fields(message, path);
  while (fields.Next()) {
    if (fields.number() == 1) {
      entry.first = fields.String();
    } else if (fields.number() == 2 && !quantity_value) {
      entry.second = fields.String();
    } else if (fields.number() == 2) {
      MessageFields quantity(fields.Bytes(), path);
      while (quantity.Next()) {
        if (quantity.number() == 1) entry.second = quantity.String();
      }
    }
  }
  return entry;
}

}  // namespace berth::api
