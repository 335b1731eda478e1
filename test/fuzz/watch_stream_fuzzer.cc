// The body of a watch response: JSON event lines, or length-prefixed protobuf frames, arriving in
// whatever pieces the connection delivers (pkg/client's WatchEventDecoder, which the watch stream
// reads through). The first byte chooses the encoding (bit 0: protobuf) and whether pods stay
// undecoded (bit 1); the rest is fed whole and in pieces (fuzz.h's Split), which must give the
// same events and end the same way.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/client/client.h"
#include "pkg/client/http_client.h"
#include "test/fuzz/fuzz.h"

namespace berth::fuzz {
namespace {

struct Outcome {
  std::vector<client::WatchEvent> events;
  std::string error;  // Empty when the stream ended cleanly.
};

bool SameEvent(const client::WatchEvent& a, const client::WatchEvent& b) {
  return a.type == b.type && a.object == b.object && a.protobuf_pod == b.protobuf_pod;
}

Outcome Read(const std::vector<std::string_view>& pieces, bool protobuf, bool undecoded_pods) {
  Outcome outcome;
  client::internal::WatchEventDecoder decoder(protobuf, undecoded_pods);
  client::WatchEvent event;
  try {
    for (const std::string_view piece : pieces) {
      decoder.Append(piece);
      while (decoder.Next(&event)) outcome.events.push_back(event);
    }
    // As the watch stream does once the body has ended.
    while (decoder.Next(&event) || decoder.Finish(&event)) outcome.events.push_back(event);
  } catch (const client::ApiError& e) {
    outcome.error = e.what();
    Require(!outcome.error.empty(), "a watch decoding error says what went wrong");
  }
  return outcome;
}

}  // namespace

void FuzzOneInput(std::string_view input) {
  if (input.empty()) return;
  const bool protobuf = (input[0] & 1) != 0;
  const bool undecoded_pods = (input[0] & 2) != 0;
  input.remove_prefix(1);
  const SplitInput split = Split(input);

  const Outcome whole = Read({split.payload}, protobuf, undecoded_pods);
  const Outcome pieces = Read(split.pieces, protobuf, undecoded_pods);
  Require(whole.error == pieces.error, "a watch body in pieces ends as it does whole");
  Require(whole.events.size() == pieces.events.size(),
          "a watch body in pieces has as many events as whole");
  for (size_t i = 0; i < whole.events.size(); ++i) {
    Require(SameEvent(whole.events[i], pieces.events[i]),
            "a watch body in pieces has the same events as whole");
  }
}

}  // namespace berth::fuzz
