// Messages with bytes flipped at random, for tests that a reader refuses or
// reads damaged input and never crashes on it.
//
//   const int parsed = ForEachCorruptedParse<v1::ShardChunk>(
//       good.SerializeAsString(), 2000, [](const v1::ShardChunk& c) {
//         (void)Decode(c);  // refused or read
//       });
//   EXPECT_GT(parsed, 100);  // the reader saw many
#pragma once

#include <functional>
#include <random>
#include <string>

#include "google/protobuf/stubs/common.h"

namespace fabricdiag::testing {

// `tries` copies of `bytes`, each with 3 bytes set at random (seeded: the
// same every run); those that still parse as a `Message` are given to
// `read`. Returns how many parsed. Protobuf's complaints about broken UTF-8
// are silenced meanwhile.
template <typename Message>
int ForEachCorruptedParse(const std::string& bytes, int tries,
                          const std::function<void(const Message&)>& read) {
  const google::protobuf::LogSilencer quiet;
  std::mt19937 rng(5);
  int parsed = 0;
  for (int i = 0; i < tries && !bytes.empty(); ++i) {
    std::string b = bytes;
    for (int k = 0; k < 3; ++k) b[rng() % b.size()] = static_cast<char>(rng());
    Message m;
    if (!m.ParseFromString(b)) continue;
    ++parsed;
    read(m);
  }
  return parsed;
}

}  // namespace fabricdiag::testing
