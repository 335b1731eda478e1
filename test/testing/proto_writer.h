#ifndef BERTH_TEST_TESTING_PROTO_WRITER_H_
#define BERTH_TEST_TESTING_PROTO_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>

namespace berth::testing {

// Writes protobuf wire format, so tests can build the bytes the apiserver would send.
class Proto {
 public:
  Proto& Varint(uint32_t field, uint64_t value) {
    Tag(field, 0);
    PutVarint(value);
    return *this;
  }
  Proto& Bytes(uint32_t field, std::string_view value) {
    Tag(field, 2);
    PutVarint(value.size());
    bytes_.append(value);
    return *this;
  }
  Proto& Message(uint32_t field, const Proto& message) { return Bytes(field, message.str()); }
  Proto& Fixed64(uint32_t field) {
    Tag(field, 1);
    bytes_.append(8, '\x07');
    return *this;
  }
  Proto& Fixed32(uint32_t field) {
    Tag(field, 5);
    bytes_.append(4, '\x07');
    return *this;
  }
  // A map<string, string> entry.
  Proto& Entry(uint32_t field, std::string_view key, std::string_view value) {
    return Message(field, Proto().Bytes(1, key).Bytes(2, value));
  }
  // A map<string, Quantity> entry.
  Proto& QuantityEntry(uint32_t field, std::string_view key, std::string_view quantity) {
    return Message(field, Proto().Bytes(1, key).Message(2, Proto().Bytes(1, quantity)));
  }
  Proto& Raw(std::string_view bytes) {
    bytes_.append(bytes);
    return *this;
  }

  const std::string& str() const { return bytes_; }

  // This message as one frame of a protobuf watch stream: its 4-byte big-endian length first.
  std::string Frame() const {
    std::string frame;
    for (int shift = 24; shift >= 0; shift -= 8) {
      frame.push_back(static_cast<char>((bytes_.size() >> shift) & 0xFF));
    }
    return frame + bytes_;
  }

  // This message as the apiserver envelopes it: "k8s\0" + runtime.Unknown.
  std::string Envelope(std::string_view kind) const {
    return std::string("k8s\0", 4) + Proto()
                                         .Message(1, Proto().Bytes(1, "v1").Bytes(2, kind))
                                         .Bytes(2, bytes_)
                                         .Bytes(3, "")
                                         .Bytes(4, "")
                                         .str();
  }

 private:
  void Tag(uint32_t field, uint32_t wire) { PutVarint((uint64_t{field} << 3) | wire); }
  void PutVarint(uint64_t value) {
    while (value >= 0x80) {
      bytes_.push_back(static_cast<char>((value & 0x7F) | 0x80));
      value >>= 7;
    }
    bytes_.push_back(static_cast<char>(value));
  }
  std::string bytes_;
};

// One to three random edits of `message`: a bit flipped, a byte dropped or a byte doubled. What
// a decoder fuzzed with well-formed messages meets next.
inline std::string DamageBytes(std::mt19937_64& rng, std::string message) {
  const auto pick = [&rng](int low, int high) {
    return std::uniform_int_distribution<int>(low, high)(rng);
  };
  for (int edits = pick(1, 3); edits > 0 && !message.empty(); edits--) {
    const auto at = static_cast<size_t>(pick(0, static_cast<int>(message.size()) - 1));
    switch (pick(0, 2)) {
      case 0:
        message[at] = static_cast<char>(message[at] ^ (1 << pick(0, 7)));
        break;
      case 1:
        message.erase(at, 1);
        break;
      default:
        message.insert(at, 1, message[at]);
        break;
    }
  }
  return message;
}

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_PROTO_WRITER_H_
