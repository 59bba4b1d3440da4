// Status: named constructors, codes and the printed form.
#include "util/status.h"

#include <gtest/gtest.h>

namespace svm {
namespace {

TEST(StatusTest, OkIsTheDefault) {
  EXPECT_TRUE(Status().ok());
  EXPECT_TRUE(Status::Ok().ok());
  EXPECT_EQ(Status().code(), Status::Code::kOk);
  EXPECT_EQ(Status().ToString(), "ok");
  EXPECT_TRUE(Status().message().empty());
}

TEST(StatusTest, NamedConstructorsCarryCodeAndMessage) {
  const struct {
    Status s;
    Status::Code code;
    const char* printed;
  } cases[] = {
      {Status::Malformed("short header"), Status::Code::kMalformed, "malformed: short header"},
      {Status::InvalidArgument("nodes 0"), Status::Code::kInvalidArgument,
       "invalid argument: nodes 0"},
      {Status::Unsupported("verbs"), Status::Code::kUnsupported, "unsupported: verbs"},
      {Status::OutOfRange("page 9"), Status::Code::kOutOfRange, "out of range: page 9"},
  };
  for (const auto& c : cases) {
    EXPECT_FALSE(c.s.ok());
    EXPECT_EQ(c.s.code(), c.code);
    EXPECT_EQ(c.s.ToString(), c.printed);
  }
  EXPECT_EQ(Status::Malformed("x").message(), "x");
}

TEST(StatusTest, CopiesKeepTheError) {
  const Status a = Status::OutOfRange("page 9");
  Status b = a;
  EXPECT_EQ(b.code(), a.code());
  EXPECT_EQ(b.message(), a.message());
  b = Status::Ok();
  EXPECT_TRUE(b.ok());
  EXPECT_FALSE(a.ok());
}

TEST(StatusTest, UnknownCodeStillPrints) {
  EXPECT_STREQ(ToString(static_cast<Status::Code>(200)), "unknown");
}

}  // namespace
}  // namespace svm
