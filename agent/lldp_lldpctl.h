// The seam between the agent and lldpd's control socket (liblldpctl).
//
// LldpctlApi is the one call the agent makes of lldpd: the neighbors of
// every local interface. The real implementation talks to the socket with
// liblldpctl; tests inject a fake.
//
//   std::unique_ptr<LldpctlApi> api = NewLldpctlApi("/run/lldpd.socket");
//   absl::StatusOr<std::vector<LldpNeighbor>> n = api->Neighbors();
//   // UnavailableError: no lldpd behind the socket.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/lldp_neighbor.h"

namespace fabricdiag::agent {

class LldpctlApi {
 public:
  virtual ~LldpctlApi() = default;
  // The neighbors lldpd knows, as lldpd reports them (unchecked: the caller
  // sanitizes them). UnavailableError when no lldpd listens on the socket
  // (absent, connection refused); another error when lldpd answered
  // something unusable.
  virtual absl::StatusOr<std::vector<LldpNeighbor>> Neighbors() = 0;
};

// liblldpctl on the control socket at `socket_path`. Each call opens a
// connection and closes it: lldpd may restart in between.
std::unique_ptr<LldpctlApi> NewLldpctlApi(std::string socket_path);

}  // namespace fabricdiag::agent
