// Conversions between the counter vocabulary (counters/vocabulary.h) and the
// ingest wire enums (proto/ingest.proto). Both share their numbers, which
// wire.cc checks at compile time, so a conversion is a checked cast.
//
//   v1::Meaning m = ToWire(Meaning::kCnpSent);     // MEANING_CNP_SENT
//   Meaning back = FromWire(m);                    // kNone if out of range
//
// Pure; thread-safe.
#pragma once

#include "counters/vocabulary.h"
#include "proto/ingest.pb.h"

namespace fabricdiag::counters {

v1::Subsystem ToWire(Subsystem s);
v1::Kind ToWire(Kind k);
v1::Meaning ToWire(Meaning m);
v1::Direction ToWire(Direction d);

// Values a newer peer may send that this build does not know become
// kNone / kNone / false.
Meaning FromWire(v1::Meaning m);
Direction FromWire(v1::Direction d);
bool FromWire(v1::Subsystem wire, Subsystem* s);

}  // namespace fabricdiag::counters
