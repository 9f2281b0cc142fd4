// The cluster's operator marks (cluster/jetstream_silences.h) on a real
// nats-server: a mark made through one collector reaches another, a new
// collector reads every mark, and a value that is not a mark is skipped.
#include "cluster/jetstream_silences.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "collector/findings/silences.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cluster/single_nats_test.h"
#include "tests/testing/eventually.h"

namespace fabricdiag::cluster {
namespace {

v1::OperatorMark Mark(const std::string& finding_id) {
  v1::OperatorMark mark;
  mark.mutable_ack()->set_finding_id(finding_id);
  mark.mutable_ack()->set_who("alice");
  return mark;
}

class JetStreamMarksTest : public SingleNatsServerTest {
 protected:
  std::unique_ptr<JetStreamMarks> Open(NatsConnection* nats) {
    JetStreamMarks::Options options;
    options.replicas = 1;
    options.bucket = TestName();
    absl::StatusOr<std::unique_ptr<JetStreamMarks>> marks =
        JetStreamMarks::Open(nats, options);
    EXPECT_TRUE(marks.ok()) << marks.status();
    return marks.ok() ? *std::move(marks) : nullptr;
  }

  static v1::Finding Storm() {
    v1::Finding f;
    f.set_id("f-000042");
    f.set_kind("pfc_storm");
    f.set_node("leaf-3");
    f.set_state(v1::FINDING_STATE_ACTIVE);
    return f;
  }

  FakeClock clock_;
};

TEST_F(JetStreamMarksTest, AMarkMadeThroughOneCollectorShowsOnAnother) {
  std::unique_ptr<NatsConnection> nats_a = Connect();
  std::unique_ptr<NatsConnection> nats_b = Connect();
  ASSERT_NE(nats_a, nullptr);
  ASSERT_NE(nats_b, nullptr);
  std::unique_ptr<JetStreamMarks> state_a = Open(nats_a.get());
  std::unique_ptr<JetStreamMarks> state_b = Open(nats_b.get());
  ASSERT_NE(state_a, nullptr);
  ASSERT_NE(state_b, nullptr);
  collector::Marks a(state_a.get(), clock_);
  collector::Marks b(state_b.get(), clock_);
  ASSERT_TRUE(a.Load().ok());
  ASSERT_TRUE(b.Load().ok());

  v1::CreateSilenceRequest request;
  v1::SilenceMatcher* m = request.add_matchers();
  m->set_key("node");
  m->set_value("leaf-3.example");  // a "." in the key's node part is fine
  request.set_duration_seconds(3600);
  request.set_comment("RMA");
  absl::StatusOr<v1::Silence> silence = a.CreateSilence(request, "alice");
  ASSERT_TRUE(silence.ok()) << silence.status();
  ASSERT_TRUE(a.Ack(Storm(), "known", "bob").ok());
  ASSERT_TRUE(a.Forget("gpu-1.example", "carol").ok());

  v1::Finding storm = Storm();
  storm.set_node("leaf-3.example");
  EXPECT_TRUE(testing::Eventually(
      [&] {
        return b.Silenced(storm) && b.Acked(Storm()) &&
               b.ForgottenAt("gpu-1.example").has_value();
      },
      absl::Seconds(10), absl::Milliseconds(20)));
  // Expired through b: a sees it ended.
  ASSERT_TRUE(b.ExpireSilence(silence->id(), "dave").ok());
  EXPECT_TRUE(testing::Eventually([&] { return !a.Silenced(storm); },
                                  absl::Seconds(10), absl::Milliseconds(20)));

  // A collector that starts later reads every mark from the bucket.
  std::unique_ptr<NatsConnection> nats_c = Connect();
  std::unique_ptr<JetStreamMarks> state_c = Open(nats_c.get());
  ASSERT_NE(state_c, nullptr);
  collector::Marks c(state_c.get(), clock_);
  ASSERT_TRUE(c.Load().ok());
  ASSERT_EQ(c.ListSilences().size(), 1u);
  EXPECT_TRUE(c.ListSilences()[0].expired());
  EXPECT_EQ(c.ListSilences()[0].expired_by(), "dave");
  EXPECT_TRUE(c.Acked(Storm()));
  EXPECT_EQ(c.ForgottenAt("gpu-1.example"), clock_.Now());
}

TEST_F(JetStreamMarksTest, AValueThatIsNotAMarkOfItsKeyIsSkipped) {
  std::unique_ptr<NatsConnection> nats = Connect();
  ASSERT_NE(nats, nullptr);
  std::unique_ptr<JetStreamMarks> state = Open(nats.get());
  ASSERT_NE(state, nullptr);
  kvStore* kv = nullptr;
  ASSERT_EQ(js_KeyValue(&kv, nats->js(), TestName().c_str()), NATS_OK);
  uint64_t revision = 0;
  ASSERT_EQ(kvStore_PutString(&revision, kv, "silence.s-1", "garbage"),
            NATS_OK);
  // A real ack, under another finding's key.
  const std::string value = Mark("f-000001").SerializeAsString();
  ASSERT_EQ(kvStore_Put(&revision, kv, "ack.f-000002", value.data(),
                        static_cast<int>(value.size())),
            NATS_OK);
  ASSERT_TRUE(state->Put(Mark("f-000003")).ok());
  kvStore_Destroy(kv);
  // The good mark arrives after the two bad ones, which are skipped.
  ASSERT_TRUE(testing::Eventually(
      [&] {
        absl::StatusOr<std::vector<v1::OperatorMark>> all = state->ReadAll();
        return all.ok() && all->size() == 1;
      },
      absl::Seconds(10), absl::Milliseconds(20)));
  absl::StatusOr<std::vector<v1::OperatorMark>> all = state->ReadAll();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ((*all)[0].ack().finding_id(), "f-000003");
}

}  // namespace
}  // namespace fabricdiag::cluster
