// The fabricdiag.v1.Ingest gRPC service: one bidirectional stream per agent.
//
// Served from the server's completion queues (cq_service.h): each stream is
// a small state machine on one queue's thread that reads AgentMessages one
// at a time, hands each to an IngestSession (which holds every protocol rule
// and knows nothing of gRPC) and writes back what the session answers. Acks
// are coalesced: at most one write is outstanding per stream (gRPC requires
// it), and while one is in flight newer acks replace the pending one, so a
// busy stream gets one Ack per write round trip, always with the highest
// seq.
// A Reject is written with the stream's final status (INVALID_ARGUMENT), so a
// hostile stream ends on its own without touching the others. A Handoff
// (IngestPlacement) is written the same way, with UNAVAILABLE.
//
// Who may speak for a node (IngestAuth): with `token` set, a stream must
// carry `authorization: Bearer <token>` (the agent's --ingest_token_file),
// or it ends at once with UNAUTHENTICATED; with `match_certificate` (mutual
// TLS), the Hello's node must be the client certificate's CN or one of its
// DNS subject alternative names. Without either, any client that reaches
// the port can report as any node (the collector says so at start).
//
//   SeriesStore store(SeriesStore::Options{}, clock);
//   IngestCounters counters;
//   IngestService ingest(&store, &counters);
//   ASSIGN_OR_RETURN(auto server, CollectorServer::Start(opts, {&ingest}));
//
// Thread-safe; `store` and `counters` must outlive the service and every
// stream (shut the server down first).
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>
#include <utility>

#include "collector/declared/node_facts_memory.h"
#include "collector/ingest/cq_service.h"
#include "collector/ingest/ingest_placement.h"
#include "collector/ingest/ingest_session.h"
#include "collector/ingest/node_facts_intake.h"
#include "collector/store/series_store.h"
#include "proto/ingest.grpc.pb.h"

namespace fabricdiag::collector {

struct IngestAuth {
  std::string token;  // empty: no token needed
  bool match_certificate = false;
};

class IngestService final : public v1::Ingest::AsyncService, public CqService {
 public:
  // `placement` decides which agents this collector takes (in a cluster,
  // cluster/leader_handoff.h); `facts` is where the inventories' node facts
  // go. Both must outlive the service.
  IngestService(SeriesStore* store, IngestCounters* counters, IngestAuth auth,
                IngestPlacement& placement, NodeFactsIntake facts)
      : store_(store),
        counters_(counters),
        auth_(std::move(auth)),
        placement_(placement),
        facts_(facts) {}
  // One collector that takes every agent (KeepEveryAgent) and keeps the
  // node facts to itself, with no switch declared, as tests and simulations
  // that run one collector want.
  IngestService(SeriesStore* store, IngestCounters* counters,
                IngestAuth auth = {})
      : IngestService(store, counters, std::move(auth), keep_every_agent_,
                      {own_facts_, no_switches_}) {}

  void Serve(grpc::ServerCompletionQueue* cq, CqGate* gate) override;

 private:
  SeriesStore* const store_;
  IngestCounters* const counters_;
  const IngestAuth auth_;
  KeepEveryAgent keep_every_agent_;
  MemoryNodeFacts own_facts_;
  NoDeclaredSwitches no_switches_;
  IngestPlacement& placement_;
  NodeFactsIntake facts_;
};

}  // namespace fabricdiag::collector
