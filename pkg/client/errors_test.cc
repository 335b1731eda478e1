#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/client/client.h"
#include "pkg/client/http_client.h"
#include "test/testing/proto_writer.h"

namespace berth::client {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  return nlohmann::json{{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
                        {"message", message}, {"reason", reason},   {"code", code}}
      .dump();
}

TEST(ErrorFromResponseTest, DecodesStatusReasons) {
  struct Case {
    int code;
    const char* reason;
    ErrorReason want;
  };
  const Case cases[] = {
      {404, "NotFound", ErrorReason::kNotFound},
      {409, "AlreadyExists", ErrorReason::kAlreadyExists},
      {409, "Conflict", ErrorReason::kConflict},
      {403, "Forbidden", ErrorReason::kForbidden},
      {401, "Unauthorized", ErrorReason::kUnauthorized},
      {410, "Gone", ErrorReason::kGone},
      {410, "Expired", ErrorReason::kGone},
      {422, "Invalid", ErrorReason::kInvalid},
      {429, "TooManyRequests", ErrorReason::kTooManyRequests},
      {500, "InternalError", ErrorReason::kInternalError},
      {503, "ServiceUnavailable", ErrorReason::kServiceUnavailable},
      {504, "Timeout", ErrorReason::kTimeout},
      {400, "BadRequest", ErrorReason::kBadRequest},
      // The reason wins over the HTTP code.
      {500, "NotFound", ErrorReason::kNotFound},
  };
  for (const Case& c : cases) {
    const ApiError error =
        ErrorFromResponse(c.code, StatusBody(c.code, c.reason, "m"), std::nullopt);
    EXPECT_EQ(error.reason(), c.want) << c.reason;
    EXPECT_EQ(error.http_status(), c.code) << c.reason;
    EXPECT_EQ(error.server_message(), "m") << c.reason;
  }
}

TEST(ErrorFromResponseTest, ForbiddenKeepsServerMessageVerbatim) {
  const std::string message =
      "pods is forbidden: User \"x\" cannot list resource \"pods\" in API group \"\" at the "
      "cluster scope";
  const ApiError error =
      ErrorFromResponse(403, StatusBody(403, "Forbidden", message), std::nullopt);
  EXPECT_EQ(error.reason(), ErrorReason::kForbidden);
  EXPECT_EQ(error.server_message(), message);
  EXPECT_EQ(std::string(error.what()), "Forbidden (403): " + message);
}

TEST(ErrorFromResponseTest, FallsBackOnHttpCode) {
  struct Case {
    int code;
    ErrorReason want;
  };
  const Case cases[] = {
      {400, ErrorReason::kBadRequest},
      {401, ErrorReason::kUnauthorized},
      {403, ErrorReason::kForbidden},
      {404, ErrorReason::kNotFound},
      {409, ErrorReason::kConflict},
      {410, ErrorReason::kGone},
      {422, ErrorReason::kInvalid},
      {429, ErrorReason::kTooManyRequests},
      {500, ErrorReason::kInternalError},
      {502, ErrorReason::kServiceUnavailable},
      {503, ErrorReason::kServiceUnavailable},
      {504, ErrorReason::kTimeout},
      {418, ErrorReason::kUnknown},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ErrorFromResponse(c.code, "", std::nullopt).reason(), c.want) << c.code;
    // A Status with an unrecognised reason also falls back on the code.
    EXPECT_EQ(ErrorFromResponse(c.code, StatusBody(c.code, "Weird", "w"), std::nullopt).reason(),
              c.want)
        << c.code;
  }
}

TEST(ErrorFromResponseTest, NonJsonBodyBecomesTheMessage) {
  const ApiError error = ErrorFromResponse(502, "<html>bad gateway</html>\n", std::nullopt);
  EXPECT_EQ(error.server_message(), "<html>bad gateway</html>");
  EXPECT_EQ(std::string(error.what()), "ServiceUnavailable (502): <html>bad gateway</html>");
  EXPECT_THAT(ErrorFromResponse(404, "", std::nullopt).server_message(), HasSubstr("404"));
}

TEST(ErrorFromResponseTest, RetryAfterFromHeaderOrStatusDetails) {
  EXPECT_EQ(ErrorFromResponse(429, "", seconds(7)).retry_after(), seconds(7));
  nlohmann::json status = nlohmann::json::parse(StatusBody(429, "TooManyRequests", "slow down"));
  status["details"] = {{"retryAfterSeconds", 3}};
  EXPECT_EQ(ErrorFromResponse(429, status.dump(), std::nullopt).retry_after(), seconds(3));
  // The header wins over the body.
  EXPECT_EQ(ErrorFromResponse(429, status.dump(), seconds(1)).retry_after(), seconds(1));
  EXPECT_EQ(ErrorFromResponse(429, "", std::nullopt).retry_after(), std::nullopt);
}

TEST(ApiErrorTest, Transient) {
  EXPECT_TRUE(ApiError(ErrorReason::kTooManyRequests, 429, "").Transient());
  EXPECT_TRUE(ApiError(ErrorReason::kInternalError, 500, "").Transient());
  EXPECT_TRUE(ApiError(ErrorReason::kServiceUnavailable, 503, "").Transient());
  EXPECT_TRUE(ApiError(ErrorReason::kTimeout, 504, "").Transient());
  EXPECT_TRUE(ApiError(ErrorReason::kTimeout, 0, "").Transient());
  EXPECT_TRUE(ApiError(ErrorReason::kTransport, 0, "").Transient());
  EXPECT_TRUE(ApiError(ErrorReason::kUnknown, 502, "").Transient());
  EXPECT_FALSE(ApiError(ErrorReason::kTLS, 0, "").Transient());
  EXPECT_FALSE(ApiError(ErrorReason::kNotFound, 404, "").Transient());
  EXPECT_FALSE(ApiError(ErrorReason::kForbidden, 403, "").Transient());
  EXPECT_FALSE(ApiError(ErrorReason::kConflict, 409, "").Transient());
  EXPECT_FALSE(ApiError(ErrorReason::kGone, 410, "").Transient());
  EXPECT_FALSE(ApiError(ErrorReason::kInvalid, 422, "").Transient());
}

TEST(ApiErrorTest, WhatWithoutHttpStatus) {
  EXPECT_EQ(std::string(ApiError(ErrorReason::kTransport, 0, "refused").what()),
            "Transport: refused");
  EXPECT_STREQ(ErrorReasonName(ErrorReason::kTLS), "TLS");
  EXPECT_STREQ(ErrorReasonName(ErrorReason::kAlreadyExists), "AlreadyExists");
}

TEST(RetryAfterTest, ParsesSecondsAndDates) {
  using internal::ParseRetryAfter;
  // Sun, 06 Nov 1994 08:49:37 GMT.
  const auto now = std::chrono::system_clock::from_time_t(784111777);
  EXPECT_EQ(ParseRetryAfter("1", now), seconds(1));
  EXPECT_EQ(ParseRetryAfter(" 120 ", now), seconds(120));
  EXPECT_EQ(ParseRetryAfter("0", now), seconds(0));
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:49:47 GMT", now), seconds(10));
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:49:00 GMT", now), seconds(0));
  EXPECT_EQ(ParseRetryAfter("", now), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("-1", now), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("soon", now), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("1.5", now), std::nullopt);
  // Found by fuzzing (test/fuzz/corpus/api_error/crash-date-year-997): dates outside the clock's
  // nanosecond range overflowed.
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 0997 08:49:37 GMT", now), seconds(0));
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 9994 08:49:37 GMT", now),
            seconds(int64_t{8000} * 146097 * 86400 / 400));
}

TEST(BackoffTest, ExponentialWithJitterAndCap) {
  using internal::BackoffDelay;
  const ApiError error(ErrorReason::kServiceUnavailable, 503, "");
  EXPECT_EQ(BackoffDelay(1, error, 1.0), milliseconds(100));
  EXPECT_EQ(BackoffDelay(1, error, 0.0), milliseconds(50));
  EXPECT_EQ(BackoffDelay(2, error, 1.0), milliseconds(200));
  EXPECT_EQ(BackoffDelay(3, error, 1.0), milliseconds(400));
  EXPECT_EQ(BackoffDelay(4, error, 0.5), milliseconds(600));
  EXPECT_EQ(BackoffDelay(7, error, 1.0), milliseconds(5000));
  EXPECT_EQ(BackoffDelay(40, error, 1.0), milliseconds(5000));
}

TEST(BackoffTest, HonoursRetryAfterCappedAt30s) {
  using internal::BackoffDelay;
  EXPECT_EQ(BackoffDelay(1, ApiError(ErrorReason::kTooManyRequests, 429, "", seconds(2)), 0.0),
            seconds(2));
  EXPECT_EQ(BackoffDelay(1, ApiError(ErrorReason::kTooManyRequests, 429, "", seconds(600)), 0.0),
            seconds(30));
  // test/fuzz/corpus/api_error/crash-retry-after-seconds-huge: a Status's retryAfterSeconds
  // beyond what milliseconds can count overflowed.
  const ApiError huge = ErrorFromResponse(
      429, R"({"details": {"retryAfterSeconds": 9000000000000000000}})", std::nullopt);
  EXPECT_EQ(BackoffDelay(1, huge, 0.0), seconds(30));
}

TEST(ShouldRetryTest, IdempotentVerbsRetryTransientErrors) {
  using internal::ShouldRetry;
  EXPECT_TRUE(ShouldRetry(ApiError(ErrorReason::kInternalError, 500, ""), true, false));
  EXPECT_TRUE(ShouldRetry(ApiError(ErrorReason::kTimeout, 0, ""), true, false));
  EXPECT_TRUE(ShouldRetry(ApiError(ErrorReason::kTransport, 0, ""), true, false));
  EXPECT_FALSE(ShouldRetry(ApiError(ErrorReason::kNotFound, 404, ""), true, false));
  EXPECT_FALSE(ShouldRetry(ApiError(ErrorReason::kTLS, 0, ""), true, true));
}

TEST(ShouldRetryTest, PostRetriesOnlyWhenTheServerDidNotProcessIt) {
  using internal::ShouldRetry;
  EXPECT_TRUE(ShouldRetry(ApiError(ErrorReason::kTooManyRequests, 429, ""), false, false));
  EXPECT_TRUE(ShouldRetry(ApiError(ErrorReason::kServiceUnavailable, 503, ""), false, false));
  EXPECT_TRUE(ShouldRetry(ApiError(ErrorReason::kTransport, 0, ""), false, true));
  EXPECT_FALSE(ShouldRetry(ApiError(ErrorReason::kTransport, 0, ""), false, false));
  EXPECT_FALSE(ShouldRetry(ApiError(ErrorReason::kInternalError, 500, ""), false, false));
  EXPECT_FALSE(ShouldRetry(ApiError(ErrorReason::kTimeout, 504, ""), false, false));
  EXPECT_FALSE(ShouldRetry(ApiError(ErrorReason::kTimeout, 0, ""), false, false));
}

TEST(LineSplitterTest, ReassemblesLinesSplitAcrossChunks) {
  internal::LineSplitter splitter;
  std::string line;
  splitter.Append("{\"a\":1}\n{\"b\"");
  ASSERT_TRUE(splitter.NextLine(&line));
  EXPECT_EQ(line, "{\"a\":1}");
  EXPECT_FALSE(splitter.NextLine(&line));
  splitter.Append(":2}\r");
  EXPECT_FALSE(splitter.NextLine(&line));
  splitter.Append("\n\n{\"c\"");
  ASSERT_TRUE(splitter.NextLine(&line));
  EXPECT_EQ(line, "{\"b\":2}");
  ASSERT_TRUE(splitter.NextLine(&line));
  EXPECT_EQ(line, "");
  EXPECT_FALSE(splitter.NextLine(&line));
  EXPECT_EQ(splitter.Pending(), "{\"c\"");
  // Byte-at-a-time delivery.
  for (char c : std::string(":3}\n")) splitter.Append(std::string(1, c));
  ASSERT_TRUE(splitter.NextLine(&line));
  EXPECT_EQ(line, "{\"c\":3}");
}

TEST(FrameSplitterTest, ReassemblesLengthPrefixedFramesSplitAnywhere) {
  const std::string stream = testing::Proto().Bytes(1, "first").Frame() +
                             testing::Proto().Frame() +  // An empty frame is a frame.
                             testing::Proto().Bytes(1, std::string(300, 'x')).Frame();
  std::vector<std::string> frames;
  internal::FrameSplitter splitter;
  std::string frame;
  for (char c : stream) {
    splitter.Append(std::string(1, c));
    while (splitter.NextFrame(&frame)) frames.push_back(frame);
  }
  EXPECT_FALSE(splitter.HasPending());
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0], testing::Proto().Bytes(1, "first").str());
  EXPECT_EQ(frames[1], "");
  EXPECT_EQ(frames[2].size(), 303u);

  splitter.Append(stream.substr(0, 5));
  EXPECT_FALSE(splitter.NextFrame(&frame));
  EXPECT_TRUE(splitter.HasPending());

  internal::FrameSplitter corrupt;
  corrupt.Append(std::string("ÿÿÿ", 4));
  EXPECT_THROW(corrupt.NextFrame(&frame), ApiError);
}

// The events of `body` fed `piece` bytes at a time, as the watch stream reads them.
std::vector<WatchEvent> DecodeWatchBody(const std::string& body, size_t piece, bool protobuf) {
  internal::WatchEventDecoder decoder(protobuf, /*undecoded_pods=*/false);
  std::vector<WatchEvent> events;
  WatchEvent event;
  for (size_t at = 0; at < body.size(); at += piece) {
    decoder.Append(std::string_view(body).substr(at, piece));
    while (decoder.Next(&event)) events.push_back(event);
  }
  while (decoder.Next(&event) || decoder.Finish(&event)) events.push_back(event);
  return events;
}

TEST(WatchEventDecoderTest, JsonLinesInAnyPiecesIncludingAnUnterminatedLastOne) {
  const std::string body =
      "{\"type\":\"ADDED\",\"object\":{\"a\":1}}\r\n\n  \n"
      "{\"type\":\"BOOKMARK\",\"object\":{\"b\":2}}\n"
      "{\"type\":\"DELETED\",\"object\":{\"c\":3}}  ";
  for (size_t piece : {size_t{1}, size_t{2}, size_t{5}, body.size()}) {
    const std::vector<WatchEvent> events = DecodeWatchBody(body, piece, false);
    ASSERT_EQ(events.size(), 3u) << "piece " << piece;
    EXPECT_EQ(events[0].type, WatchEventType::kAdded);
    EXPECT_EQ(events[1].type, WatchEventType::kBookmark);
    EXPECT_EQ(events[2].type, WatchEventType::kDeleted);
    EXPECT_EQ(events[2].object, (nlohmann::json{{"c", 3}}));
  }
  EXPECT_THROW(DecodeWatchBody("{\"type\":\"ADDED\",\"object\":{}}\n{\"type\"", 4, false),
               ApiError);
}

TEST(WatchEventDecoderTest, ProtobufFramesInAnyPiecesAndABodyEndingInsideOne) {
  const auto frame = [](std::string_view type, std::string_view name) {
    const testing::Proto pod = testing::Proto().Message(1, testing::Proto().Bytes(1, name));
    return testing::Proto()
        .Bytes(1, type)
        .Message(2, testing::Proto().Bytes(1, pod.Envelope("Pod")))
        .Frame();
  };
  const std::string body = frame("ADDED", "a") + frame("MODIFIED", "b");
  for (size_t piece : {size_t{1}, size_t{3}, body.size()}) {
    const std::vector<WatchEvent> events = DecodeWatchBody(body, piece, true);
    ASSERT_EQ(events.size(), 2u) << "piece " << piece;
    EXPECT_EQ(events[0].object["metadata"]["name"], "a");
    EXPECT_EQ(events[1].type, WatchEventType::kModified);
  }
  EXPECT_THROW(DecodeWatchBody(body.substr(0, body.size() - 1), 7, true), ApiError);
}

TEST(WatchEventTest, DecodesProtobufFramesLikeJsonLines) {
  const auto frame = [](std::string_view type, const testing::Proto& object,
                        std::string_view kind) {
    return testing::Proto()
        .Bytes(1, type)
        .Message(2, testing::Proto().Bytes(1, object.Envelope(kind)))
        .str();
  };
  const testing::Proto pod =
      testing::Proto().Message(1, testing::Proto().Bytes(1, "p").Bytes(6, "3"));
  const WatchEvent added = internal::DecodeProtobufWatchEvent(frame("ADDED", pod, "Pod"));
  EXPECT_EQ(added.type, WatchEventType::kAdded);
  EXPECT_EQ(added.object,
            internal::DecodeWatchEvent(R"({"type":"ADDED","object":{"metadata":{"name":"p",)"
                                       R"("resourceVersion":"3"}}})")
                .object);
  const WatchEvent gone =
      internal::DecodeProtobufWatchEvent(frame("ERROR", testing::Proto().Varint(6, 410), "Status"));
  EXPECT_EQ(gone.type, WatchEventType::kError);
  EXPECT_EQ(gone.object["code"], 410);
  EXPECT_THROW(internal::DecodeProtobufWatchEvent(frame("EXPLODED", pod, "Pod")), ApiError);
  EXPECT_THROW(internal::DecodeProtobufWatchEvent(testing::Proto().Bytes(1, "ADDED").str()),
               ApiError);
  // A type announced as 9 bytes long, of which 3 arrive.
  EXPECT_THROW(internal::DecodeProtobufWatchEvent(std::string("\x0a\x09") + "ADD"), ApiError);
}

TEST(WatchEventTest, DecodesTypesAndRejectsGarbage) {
  using internal::DecodeWatchEvent;
  EXPECT_EQ(DecodeWatchEvent(R"({"type":"ADDED","object":{"a":1}})").type, WatchEventType::kAdded);
  EXPECT_EQ(DecodeWatchEvent(R"({"type":"MODIFIED","object":{}})").type, WatchEventType::kModified);
  EXPECT_EQ(DecodeWatchEvent(R"({"type":"DELETED","object":{}})").type, WatchEventType::kDeleted);
  EXPECT_EQ(DecodeWatchEvent(R"({"type":"BOOKMARK","object":{}})").type, WatchEventType::kBookmark);
  const WatchEvent error =
      DecodeWatchEvent(R"({"type":"ERROR","object":{"kind":"Status","code":410}})");
  EXPECT_EQ(error.type, WatchEventType::kError);
  EXPECT_EQ(error.object["code"], 410);
  EXPECT_THROW(DecodeWatchEvent("{not json"), ApiError);
  EXPECT_THROW(DecodeWatchEvent(R"({"type":"ADDED"})"), ApiError);
  EXPECT_THROW(DecodeWatchEvent(R"({"type":"EXPLODED","object":{}})"), ApiError);
  EXPECT_THROW(DecodeWatchEvent(R"({"type":"ADDED","object":[{"a":1}]})"), ApiError);
  EXPECT_THROW(DecodeWatchEvent(R"({"type":7,"object":{}})"), ApiError);
  EXPECT_THROW(DecodeWatchEvent(R"({"type":"ADDED","object":{"a":)"), ApiError);
}

TEST(WatchEventTest, ObjectLosesWhatSchedulingNeverReadsAsInAList) {
  const WatchEvent event = internal::DecodeWatchEvent(
      R"({"object":{"metadata":{"name":"p","managedFields":[{"manager":"m"}]},)"
      R"("spec":{"containers":[{"name":"c","env":[{"name":"X"}]}]}},"type":"MODIFIED"})");
  EXPECT_EQ(event.type, WatchEventType::kModified);
  EXPECT_EQ(event.object, (nlohmann::json{{"metadata", {{"name", "p"}}},
                                          {"spec", {{"containers", {{{"name", "c"}}}}}}}));
}

TEST(QueryTest, ListAndWatchQueriesAreEncoded) {
  ListOptions list;
  list.label_selector = "app in (a,b)";
  list.field_selector = "spec.nodeName=";
  list.limit = 50;
  list.resource_version = "0";
  EXPECT_EQ(internal::ListQuery(list, ""),
            "limit=50&labelSelector=app%20in%20%28a%2Cb%29&fieldSelector=spec.nodeName%3D&"
            "resourceVersion=0");
  // A continue token pins the snapshot, so resourceVersion is dropped.
  ListOptions continued;
  continued.limit = 0;
  continued.resource_version = "5";
  EXPECT_EQ(internal::ListQuery(continued, "tok+/="), "continue=tok%2B%2F%3D");

  WatchOptions watch;
  watch.resource_version = "123";
  watch.timeout_seconds = 290;
  watch.field_selector = "spec.schedulerName=berth";
  EXPECT_EQ(internal::WatchQuery(watch),
            "watch=1&allowWatchBookmarks=true&timeoutSeconds=290&resourceVersion=123&"
            "fieldSelector=spec.schedulerName%3Dberth");
  EXPECT_EQ(internal::UrlEncode("a-b_c.d~e f/ü"), "a-b_c.d~e%20f%2F%C3%BC");
}

}  // namespace
}  // namespace berth::client
