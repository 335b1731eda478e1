#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pkg/framework/interface.h"

namespace berth::framework {
namespace {

using ::testing::ElementsAre;

const FixedReasons& TwoReasons() {
  static const FixedReasons kReasons(std::vector<std::string>{"first", "second"});
  return kReasons;
}

TEST(StatusTest, FixedReasonsReadAsOwnedOnes) {
  Status fixed = Status::Unschedulable(TwoReasons());
  Status owned(Code::kUnschedulable, std::vector<std::string>{"first", "second"});
  EXPECT_EQ(fixed.code(), Code::kUnschedulable);
  EXPECT_TRUE(fixed.IsRejected());
  EXPECT_EQ(fixed.reasons(), owned.reasons());
  EXPECT_EQ(fixed.Message(), "first, second");
  EXPECT_EQ(fixed.Message(), owned.Message());
}

TEST(StatusTest, CopiesOfAFixedStatusShareItsReasons) {
  Status fixed = Status::Unresolvable(TwoReasons());
  Status copy = fixed;
  Status assigned;
  assigned = copy;
  EXPECT_EQ(&copy.reasons(), &TwoReasons().reasons());
  EXPECT_EQ(&assigned.reasons(), &TwoReasons().reasons());
  EXPECT_EQ(assigned.code(), Code::kUnschedulableAndUnresolvable);
  // The plugin is the copy's own.
  copy.WithPlugin("A");
  EXPECT_EQ(copy.plugin(), "A");
  EXPECT_EQ(fixed.plugin(), "");
}

TEST(StatusTest, ReplacingAFixedStatusWithAnOwnedOneShowsTheNewReasons) {
  Status status = Status::Unschedulable(TwoReasons());
  status = Status::Unschedulable("third");
  EXPECT_THAT(status.reasons(), ElementsAre("third"));
  status = Status();
  EXPECT_TRUE(status.IsSuccess());
  EXPECT_TRUE(status.reasons().empty());
}

}  // namespace
}  // namespace berth::framework
