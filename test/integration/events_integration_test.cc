// The event recorder against the real local control plane (deploy/local-cluster.sh): what the
// apiserver validates and stores for series, long notes and Events that disappear mid-series.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/client/client.h"
#include "pkg/events/recorder.h"
#include "test/testing/cluster.h"

namespace berth::events {
namespace {

using testing::AdminClient;
using testing::PodManifest;
using testing::TestNamespace;

class EventsIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = AdminClient();
    ns_ = std::make_unique<TestNamespace>(client_, "events");
    pod_ = api::DecodePod(client_->Post(client::PodsResource().Path(ns_->name()),
                                        PodManifest(ns_->name(), "pending")));
  }

  std::unique_ptr<ApiEventRecorder> NewRecorder() {
    return std::make_unique<ApiEventRecorder>(client_, "berth-scheduler",
                                              DefaultReportingInstance());
  }

  // The stored events.k8s.io/v1 Events about the test pod with this reason.
  std::vector<nlohmann::json> StoredEvents(const std::string& reason) {
    std::vector<nlohmann::json> out;
    auto list = client_->Get(client::EventsResource().Path(ns_->name()));
    for (const auto& e : list["items"]) {
      if (e["regarding"].value("name", "") == pod_.meta.name && e.value("reason", "") == reason) {
        out.push_back(e);
      }
    }
    return out;
  }

  std::shared_ptr<client::Client> client_;
  std::unique_ptr<TestNamespace> ns_;
  api::Pod pod_;
};

TEST_F(EventsIntegrationTest, RepeatedFailedSchedulingIsOneEventWithSeriesCountThree) {
  auto recorder = NewRecorder();
  const std::string note = "0/3 nodes are available: 3 Insufficient cpu.";
  for (int i = 0; i < 3; i++)
    recorder->Eventf(pod_, "Warning", "FailedScheduling", "Scheduling", note);
  recorder->Flush();
  EXPECT_EQ(recorder->failed(), 0u);
  EXPECT_EQ(recorder->dropped(), 0u);

  auto events = StoredEvents("FailedScheduling");
  ASSERT_EQ(events.size(), 1u) << nlohmann::json(events).dump(2);
  const nlohmann::json& e = events[0];
  ASSERT_TRUE(e.contains("series")) << e.dump(2);
  EXPECT_EQ(e["series"]["count"], 3) << e.dump(2);
  EXPECT_TRUE(e["series"].contains("lastObservedTime")) << e.dump(2);
  EXPECT_EQ(e["reportingController"], "berth-scheduler");
  EXPECT_EQ(e["reportingInstance"], DefaultReportingInstance());
  EXPECT_EQ(e["type"], "Warning");
  EXPECT_EQ(e["action"], "Scheduling");
  EXPECT_EQ(e["note"], note);
  EXPECT_EQ(e["regarding"]["kind"], "Pod");
  EXPECT_EQ(e["regarding"]["uid"], pod_.meta.uid);
  EXPECT_EQ(e["metadata"]["name"].get<std::string>().rfind(pod_.meta.name + ".", 0), 0u);
}

TEST_F(EventsIntegrationTest, LongNoteIsStoredCutTo1024Characters) {
  auto recorder = NewRecorder();
  std::string note;
  while (note.size() < 2000) note += "node-" + std::to_string(note.size()) + " is full; ";
  note.resize(2000);
  recorder->Eventf(pod_, "Warning", "FailedScheduling", "Scheduling", note);
  recorder->Flush();
  EXPECT_EQ(recorder->failed(), 0u);

  auto events = StoredEvents("FailedScheduling");
  ASSERT_EQ(events.size(), 1u);
  const std::string stored = events[0]["note"];
  EXPECT_EQ(stored.size(), kMaxNoteLength);
  EXPECT_EQ(stored, note.substr(0, kMaxNoteLength));
}

TEST_F(EventsIntegrationTest, SeriesOfADeletedEventCreatesItAgain) {
  auto recorder = NewRecorder();
  recorder->Eventf(pod_, "Warning", "FailedScheduling", "Scheduling", "no nodes");
  recorder->Eventf(pod_, "Warning", "FailedScheduling", "Scheduling", "no nodes");
  recorder->Flush();
  auto events = StoredEvents("FailedScheduling");
  ASSERT_EQ(events.size(), 1u);
  ASSERT_EQ(events[0]["series"]["count"], 2);
  const std::string name = events[0]["metadata"]["name"];

  // As if its TTL had expired.
  client_->Delete(client::EventsResource().Path(ns_->name(), name));
  recorder->Eventf(pod_, "Warning", "FailedScheduling", "Scheduling", "no nodes");
  recorder->Flush();

  events = StoredEvents("FailedScheduling");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["metadata"]["name"], name);
  EXPECT_EQ(events[0]["series"]["count"], 3);
  EXPECT_EQ(recorder->created(), 2u);
  EXPECT_EQ(recorder->failed(), 0u);
}

TEST_F(EventsIntegrationTest, ScheduledAndFailedSchedulingAreSeparateEvents) {
  auto recorder = NewRecorder();
  recorder->Eventf(pod_, "Warning", "FailedScheduling", "Scheduling", "no nodes");
  recorder->Eventf(pod_, "Normal", "Scheduled", "Binding", "Successfully assigned");
  recorder->Flush();
  EXPECT_EQ(recorder->failed(), 0u);
  ASSERT_EQ(StoredEvents("FailedScheduling").size(), 1u);
  auto scheduled = StoredEvents("Scheduled");
  ASSERT_EQ(scheduled.size(), 1u);
  EXPECT_FALSE(scheduled[0].contains("series"));
  EXPECT_EQ(scheduled[0]["type"], "Normal");
}

}  // namespace
}  // namespace berth::events
