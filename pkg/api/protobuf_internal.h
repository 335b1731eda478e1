#ifndef BERTH_PKG_API_PROTOBUF_INTERNAL_H_
#define BERTH_PKG_API_PROTOBUF_INTERNAL_H_

// Internal to pkg/api: what the schema-driven protobuf decoder (protobuf.cc) shares with the
// direct Pod and Node decoders (protobuf_direct.cc), so both accept and reject exactly the same
// bytes. Every function throws DecodeError naming `path` on malformed input.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "pkg/api/field_path.h"

namespace berth::api {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

struct FieldHeader {
  uint32_t number = 0;
  uint32_t wire = 0;
  uint64_t length = 0;  // Of a length-delimited value.
};

struct FieldValue {
  uint64_t number = 0;     // A varint.
  std::string_view bytes;  // A length-delimited or fixed-width value.
};

// Reads a varint at bytes[*pos]; false when `bytes` ends first.
bool TryReadVarint(std::string_view bytes, size_t* pos, uint64_t* out, const FieldPath& path);

// Reads a field's tag and, for a length-delimited field, its length; false when `bytes` ends
// first.
bool TryReadHeader(std::string_view bytes, size_t* pos, FieldHeader* header, const FieldPath& path);

// Reads the value of a field whose header was just read; false when `bytes` ends first.
bool TryReadValue(std::string_view bytes, size_t* pos, const FieldHeader& header, FieldValue* value,
                  const FieldPath& path);

// Reads one whole field of a complete message.
void ReadField(std::string_view bytes, size_t* pos, FieldHeader* header, FieldValue* value,
               const FieldPath& path);

void ExpectWire(const FieldHeader& header, uint32_t want, const FieldPath& path);

std::string Utf8String(std::string_view bytes, const FieldPath& path);

// The fields of one complete message, in wire order; malformed framing and a value of the wrong
// wire type throw DecodeError naming `path`, which must outlive this object.
class MessageFields {
 public:
  MessageFields(std::string_view message, const FieldPath& path) : message_(message), path_(path) {}

  // Reads the next field; false at the end of the message.
  bool Next() {
    if (pos_ >= message_.size()) return false;
    ReadField(message_, &pos_, &header_, &value_, path_);
    return true;
  }
  uint32_t number() const { return header_.number; }
  const FieldHeader& header() const { return header_; }
  const FieldValue& value() const { return value_; }

  std::string_view Bytes() const {
    ExpectWire(header_, kLengthDelimited, path_);
    return value_.bytes;
  }
  std::string String() const { return Utf8String(Bytes(), path_); }
  uint64_t Varint() const {
    ExpectWire(header_, kVarint, path_);
    return value_.number;
  }
  bool Bool() const { return Varint() != 0; }
  // As Go decodes an int32: the low 32 bits of the varint.
  int32_t Int32() const { return static_cast<int32_t>(static_cast<uint32_t>(Varint())); }
  int64_t Int64() const { return static_cast<int64_t>(Varint()); }

 private:
  std::string_view message_;
  const FieldPath& path_;
  size_t pos_ = 0;
  FieldHeader header_;
  FieldValue value_;
};

// A metav1.Time message (seconds = 1, nanos = 2) in its JSON form: RFC 3339 in UTC with second
// precision. std::nullopt for an empty message, the zero time, which JSON writes as null.
std::optional<std::string> TimeText(std::string_view message, const FieldPath& path);

// A map entry message (key = 1, value = 2) as its key and value. With `quantity_value`, the value
// is a resource.Quantity message and its string form (field 1) is returned.
std::pair<std::string, std::string> ReadMapEntry(std::string_view message, bool quantity_value,
                                                 const FieldPath& path);

// From protobuf.cc's schemas: the JSON the schema-driven decoder makes of a v1.Affinity and of a
// v1.TopologySpreadConstraint message.
nlohmann::json ProtobufAffinityToJson(std::string_view message, const FieldPath& path);
nlohmann::json ProtobufSpreadConstraintToJson(std::string_view message, const FieldPath& path);

// The JSON name of v1.VolumeSource's field `number` ("emptyDir"); empty for a number its schema
// does not list.
std::string_view VolumeSourceName(uint32_t number);

}  // namespace berth::api

#endif  // BERTH_PKG_API_PROTOBUF_INTERNAL_H_
