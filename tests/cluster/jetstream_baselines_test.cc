// The straggler baselines of a cluster against a real nats-server: what one
// analysis leader writes, in chunks, is what the next one reads, and damage
// or a half-done write never passes for baselines.
#include "cluster/jetstream_baselines.h"

#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "analysis/straggler_nic.h"
#include "collector/runner/rate_pass.h"
#include "collector/state/object_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cluster/single_nats_test.h"
#include "tests/testing/stall_proxy.h"

namespace fabricdiag::cluster {
namespace {

using ::testing::HasSubstr;

class JetStreamBaselinesTest : public SingleNatsServerTest {
 protected:
  void SetUp() override {
    writer_nats_ = Connect();
    reader_nats_ = Connect();
    ASSERT_NE(writer_nats_, nullptr);
    ASSERT_NE(reader_nats_, nullptr);
    writer_ = Open(writer_nats_.get());
    reader_ = Open(reader_nats_.get());
    ASSERT_NE(writer_, nullptr);
    ASSERT_NE(reader_, nullptr);
    ASSERT_EQ(js_KeyValue(&kv_, writer_nats_->js(), TestName().c_str()),
              NATS_OK);
  }
  void TearDown() override { kvStore_Destroy(kv_); }

  // Small chunks, so that a few kilobytes take several.
  std::unique_ptr<JetStreamBaselines> Open(NatsConnection* nats,
                                           size_t chunk_bytes = 1000) {
    JetStreamBaselines::Options options;
    options.replicas = 1;
    options.chunk_bytes = chunk_bytes;
    options.bucket = TestName();
    auto opened = JetStreamBaselines::Open(nats, options);
    EXPECT_TRUE(opened.ok()) << opened.status();
    return opened.ok() ? *std::move(opened) : nullptr;
  }

  std::string Value(const std::string& key) {
    kvEntry* entry = nullptr;
    if (kvStore_Get(&entry, kv_, key.c_str()) != NATS_OK) return "";
    std::string value(static_cast<const char*>(kvEntry_Value(entry)),
                      kvEntry_ValueLen(entry));
    kvEntry_Destroy(entry);
    return value;
  }
  void Put(const std::string& key, absl::string_view value) {
    uint64_t revision = 0;
    ASSERT_EQ(kvStore_Put(&revision, kv_, key.c_str(), value.data(),
                          static_cast<int>(value.size())),
              NATS_OK);
  }

  static std::string Payload(size_t size, char seed) {
    std::string out(size, '\0');
    for (size_t i = 0; i < size; ++i) {
      out[i] = static_cast<char>(seed + static_cast<char>(i % 251));
    }
    return out;
  }

  std::unique_ptr<NatsConnection> writer_nats_;
  std::unique_ptr<NatsConnection> reader_nats_;
  std::unique_ptr<JetStreamBaselines> writer_;
  std::unique_ptr<JetStreamBaselines> reader_;
  kvStore* kv_ = nullptr;
  const absl::Time written_ = absl::FromUnixSeconds(1795000000);
};

TEST_F(JetStreamBaselinesTest, NothingWrittenReadsAsNothing) {
  absl::StatusOr<std::optional<collector::ObjectFile>> read = reader_->Read();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_FALSE(read->has_value());
}

TEST_F(JetStreamBaselinesTest, WhatOneCollectorWritesAnotherReads) {
  const std::string first = Payload(2500, 'a');  // 3 chunks with the envelope
  ASSERT_TRUE(writer_->Write(first, written_).ok());
  EXPECT_EQ(writer_->chunks_written(), 3u);
  EXPECT_EQ(Value("manifest"),
            absl::StrCat("fabricdiag-baselines 1 a 3 ", first.size() + 20));
  absl::StatusOr<std::optional<collector::ObjectFile>> read = reader_->Read();
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ((*read)->payload, first);
  EXPECT_EQ((*read)->written, written_);

  // The next write goes to the other slot.
  const std::string second = Payload(900, 'k');
  ASSERT_TRUE(writer_->Write(second, written_ + absl::Minutes(1)).ok());
  EXPECT_EQ(Value("manifest"),
            absl::StrCat("fabricdiag-baselines 1 b 1 ", second.size() + 20));
  read = reader_->Read();
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ((*read)->payload, second);
  EXPECT_EQ((*read)->written, written_ + absl::Minutes(1));
  EXPECT_EQ(writer_->chunks_removed(), 0u);
  // Slot a again, with 2 chunks: the first write's third one is purged.
  const std::string third = Payload(1500, 'z');
  ASSERT_TRUE(writer_->Write(third, written_ + absl::Minutes(2)).ok());
  EXPECT_EQ(Value("manifest"),
            absl::StrCat("fabricdiag-baselines 1 a 2 ", third.size() + 20));
  read = reader_->Read();
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ((*read)->payload, third);
  EXPECT_NE(Value("a.1"), "");
  EXPECT_EQ(Value("a.2"), "") << "a leftover chunk stayed";
  EXPECT_EQ(writer_->chunks_removed(), 1u);
}

// Each job shard's baselines live under keys of their own in the same
// bucket: written by one collector, read by another, apart from the
// unsharded analysis's and from every other shard's.
TEST_F(JetStreamBaselinesTest, EachShardWritesKeysOfItsOwn) {
  std::unique_ptr<collector::BaselinesStore> jobs17 =
      writer_->ForShard("jobs.17");
  const std::string payload = Payload(1500, 's');  // 2 chunks
  ASSERT_TRUE(jobs17->Write(payload, written_).ok());
  EXPECT_EQ(Value("jobs.17.manifest"),
            absl::StrCat("fabricdiag-baselines 1 a 2 ", payload.size() + 20));
  EXPECT_NE(Value("jobs.17.a.1"), "");
  EXPECT_EQ(Value("manifest"), "");
  EXPECT_THAT(jobs17->Describe(), ::testing::HasSubstr("keys jobs.17.*"));

  absl::StatusOr<std::optional<collector::ObjectFile>> read =
      reader_->ForShard("jobs.17")->Read();
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ((*read)->payload, payload);
  read = reader_->ForShard("jobs.1")->Read();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_FALSE(read->has_value());
  read = reader_->Read();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_FALSE(read->has_value());
  // The unsharded store's writes leave the shard's keys alone.
  ASSERT_TRUE(writer_->Write(Payload(100, 'u'), written_).ok());
  read = reader_->ForShard("jobs.17")->Read();
  ASSERT_TRUE(read.ok() && read->has_value()) << read.status();
  EXPECT_EQ((*read)->payload, payload);
}

// A leader that dies between its chunks and the manifest leaves the last
// complete write readable.
TEST_F(JetStreamBaselinesTest, AHalfDoneWriteLeavesTheLastOne) {
  const std::string done = Payload(2500, 'a');
  ASSERT_TRUE(writer_->Write(done, written_).ok());
  Put("b.0", "the first chunk of a write that never finished");
  absl::StatusOr<std::optional<collector::ObjectFile>> read = reader_->Read();
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ((*read)->payload, done);
}

TEST_F(JetStreamBaselinesTest, DamageIsDataLossAndTheNextWriteMendsIt) {
  const std::string payload = Payload(2500, 'a');
  ASSERT_TRUE(writer_->Write(payload, written_).ok());
  const std::string chunk = Value("a.1");
  ASSERT_EQ(chunk.size(), 1000u);

  // A chunk changed (two writers mixing theirs): the checksum.
  std::string flipped = chunk;
  flipped[500] ^= 0x40;
  Put("a.1", flipped);
  absl::StatusOr<std::optional<collector::ObjectFile>> read = reader_->Read();
  EXPECT_TRUE(absl::IsDataLoss(read.status())) << read.status();
  EXPECT_THAT(read.status().message(), HasSubstr("checksum"));

  // A chunk cut short: the sizes.
  Put("a.1", chunk.substr(0, 400));
  read = reader_->Read();
  EXPECT_TRUE(absl::IsDataLoss(read.status())) << read.status();
  EXPECT_THAT(read.status().message(), HasSubstr("do not hold the"));

  // A chunk gone.
  ASSERT_EQ(kvStore_Delete(kv_, "a.1"), NATS_OK);
  read = reader_->Read();
  EXPECT_TRUE(absl::IsDataLoss(read.status())) << read.status();
  EXPECT_THAT(read.status().message(), HasSubstr("chunk a.1 of 3"));

  // A manifest this build does not know, or that names absurd sizes.
  for (const char* manifest :
       {"garbage", "fabricdiag-baselines 2 a 3 2520",
        "fabricdiag-baselines 1 c 3 2520", "fabricdiag-baselines 1 a 0 2520",
        "fabricdiag-baselines 1 a 3 99999999999",
        "fabricdiag-baselines 1 a 9 3", "fabricdiag-baselines 1 a -3 2520"}) {
    Put("manifest", manifest);
    read = reader_->Read();
    EXPECT_TRUE(absl::IsDataLoss(read.status()))
        << manifest << ": " << read.status();
    EXPECT_THAT(read.status().message(), HasSubstr("manifest")) << manifest;
  }

  // The next write does not build on any of it.
  ASSERT_TRUE(writer_->Write(payload, written_).ok());
  read = reader_->Read();
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ((*read)->payload, payload);
}

// Cut off from NATS: an error to retry, not damage (which would make the
// new leader learn afresh for good).
TEST_F(JetStreamBaselinesTest, NoAnswerIsNotDamage) {
  ASSERT_TRUE(writer_->Write(Payload(2500, 'a'), written_).ok());
  reader_nats_->Close();
  absl::StatusOr<std::optional<collector::ObjectFile>> read = reader_->Read();
  EXPECT_FALSE(read.ok());
  EXPECT_FALSE(absl::IsDataLoss(read.status())) << read.status();
  writer_nats_->Close();
  const absl::Status written = writer_->Write(Payload(10, 'b'), written_);
  EXPECT_FALSE(written.ok());
  EXPECT_EQ(writer_->write_errors(), 1u);
}

// A cluster that does not answer: the read gives up at its deadline (the
// new leader's first pass waits for it), and says so rather than damage.
TEST_F(JetStreamBaselinesTest, ASilentClusterEndsTheReadAtItsDeadline) {
  ASSERT_TRUE(writer_->Write(Payload(2500, 'a'), written_).ok());
  absl::StatusOr<std::unique_ptr<testing::StallProxy>> proxy =
      testing::StallProxy::Start(nats_->port(0));
  ASSERT_TRUE(proxy.ok()) << proxy.status();
  NatsConnection::Options options;
  options.urls = {absl::StrCat("nats://127.0.0.1:", (*proxy)->port())};
  options.request_timeout = absl::Milliseconds(300);
  absl::StatusOr<std::unique_ptr<NatsConnection>> nats =
      NatsConnection::Connect(options);
  ASSERT_TRUE(nats.ok()) << nats.status();
  JetStreamBaselines::Options store_options;
  store_options.replicas = 1;
  store_options.bucket = TestName();
  store_options.read_deadline = absl::Seconds(1);
  absl::StatusOr<std::unique_ptr<JetStreamBaselines>> reader =
      JetStreamBaselines::Open(nats->get(), store_options);
  ASSERT_TRUE(reader.ok()) << reader.status();
  // Every lookup of a key (a direct or a stream message get) is held.
  (*proxy)->HoldRepliesFrom(absl::StrCat("GET.KV_", TestName()));
  const absl::Time start = absl::Now();
  absl::StatusOr<std::optional<collector::ObjectFile>> read = (*reader)->Read();
  const absl::Duration took = absl::Now() - start;
  EXPECT_GT((*proxy)->held_bytes(), 0u);
  EXPECT_TRUE(absl::IsUnavailable(read.status())) << read.status();
  EXPECT_GE(took, absl::Seconds(1) - absl::Milliseconds(300));
  EXPECT_LT(took, absl::Seconds(3));
  (*proxy)->Release();
}

// At scale: 200,000 NICs' baselines (about 8.6 MB, over the server's 1 MB
// payload limit) through the default chunks, restored by the next leader
// as the state directory's file would be.
TEST_F(JetStreamBaselinesTest, TwoHundredThousandNicsTravelInChunks) {
  std::unique_ptr<JetStreamBaselines> writer =
      Open(writer_nats_.get(), JetStreamBaselines::Options{}.chunk_bytes);
  std::unique_ptr<JetStreamBaselines> reader =
      Open(reader_nats_.get(), JetStreamBaselines::Options{}.chunk_bytes);
  ASSERT_NE(writer, nullptr);
  ASSERT_NE(reader, nullptr);
  // StragglerBaselines::Serialize's format, built directly: 25,000 hosts
  // of 8 NICs in one job.
  std::string payload;
  auto u32 = [&payload](uint32_t v) {
    for (int i = 0; i < 4; ++i)
      payload.push_back(static_cast<char>(v >> (8 * i)));
  };
  constexpr uint32_t kHosts = 25000;
  constexpr uint32_t kNics = 8;
  u32(1);
  u32(kHosts * kNics);
  for (uint32_t h = 0; h < kHosts; ++h) {
    for (uint32_t n = 0; n < kNics; ++n) {
      const std::string key = absl::StrCat(std::string("moe-job\0", 8), "gpu-",
                                           h, std::string("\0", 1), "mlx5_", n);
      u32(static_cast<uint32_t>(key.size()));
      payload += key;
      const double rate = 1e9 + h;
      uint64_t bits = 0;
      std::memcpy(&bits, &rate, sizeof(bits));
      for (int i = 0; i < 8; ++i) {
        payload.push_back(static_cast<char>(bits >> (8 * i)));
      }
      u32(20);
    }
  }
  ASSERT_GT(payload.size(), 6u << 20);
  ASSERT_TRUE(writer->Write(payload, written_).ok());
  EXPECT_GE(writer->chunks_written(),
            payload.size() / JetStreamBaselines::Options{}.chunk_bytes);

  absl::StatusOr<std::optional<collector::ObjectFile>> read = reader->Read();
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->has_value());
  analysis::StragglerBaselines restored;
  absl::StatusOr<size_t> added = restored.Restore((*read)->payload, nullptr);
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(*added, kHosts * kNics);
  const analysis::StragglerBaselines::Baseline* b =
      restored.Find("moe-job", "gpu-24999", "mlx5_7");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->bytes_per_second, 1e9 + 24999);
  EXPECT_EQ(b->passes, 20);
}

}  // namespace
}  // namespace fabricdiag::cluster
