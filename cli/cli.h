// The `fabricdiag` command line: words -> command, global flags -> collector
// client. main.cc only parses flags and installs signal handling.
//
//   CliOptions options;               // from flags
//   int status = RunCli({"layout", "list"}, options,
//                       [](const ClientConfig& c) {
//                         return std::make_shared<GrpcCollectorClient>(c);
//                       },
//                       env);
//
// Usage errors (no command, an unknown one, a wrong number of arguments) and
// unreadable credential files exit kExitInvalid before any RPC.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "client/client_config.h"
#include "client/collector_api.h"

namespace fabricdiag::cli {

using ::fabricdiag::client::ClientConfig;
using ::fabricdiag::client::ClientFlags;

struct CliOptions {
  ClientFlags client;
  CommandOptions command;
};

// Makes the client for commands that talk to the collector, after the
// configuration is loaded and checked: once for the command's client (every
// address of the list), and for `report` in a cluster once per other
// collector it reads rates from (a configuration of that address alone).
using ClientFactory =
    std::function<std::shared_ptr<CollectorClient>(const ClientConfig&)>;

// `args` are the words after the program name, flags removed.
int RunCli(const std::vector<std::string>& args, const CliOptions& options,
           const ClientFactory& make_client, const CommandEnv& env);

// The usage text (commands and flags).
std::string Usage();

}  // namespace fabricdiag::cli
