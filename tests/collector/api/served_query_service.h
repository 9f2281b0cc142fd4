// A test fixture: a QueryService over the collector's stores
// (tests/collector/stores_fixture.h), served by a CollectorServer on 127.0.0.1
// (an ephemeral port), for the tests that call the collector's gRPC API as a
// client does.
//
//   class MyTest : public ServedQueryServiceTest {};
//   TEST_F(MyTest, ...) {
//     QueryService::Options options;
//     options.access = ...;
//     std::shared_ptr<grpc::Channel> channel = Serve(std::move(options));
//     auto stub = v1::Collector::NewStub(channel);
//   }
#pragma once

#include <chrono>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "collector/api/query_service.h"
#include "collector/ingest/server.h"
#include "collector/store/series_store.h"
#include "grpcpp/create_channel.h"
#include "tests/collector/stores_fixture.h"
#include "tests/testing/fixed_topology.h"

namespace fabricdiag::collector {

class ServedQueryServiceTest : public CollectorStoresTest {
 protected:
  void TearDown() override {
    if (query_ != nullptr) query_->Shutdown();
    if (server_ != nullptr) {
      server_->Shutdown(absl::ZeroDuration());
      server_->Wait();
    }
  }

  // Starts the service with `options` (the fixture's marks unless set) and
  // returns a channel to it; a failure to listen fails the test.
  std::shared_ptr<grpc::Channel> Serve(QueryService::Options options) {
    if (options.marks == nullptr) options.marks = marks_.get();
    query_ = std::make_unique<QueryService>(registry_.get(), &topology_,
                                            findings_.get(), &series_,
                                            std::move(options), clock_);
    CollectorServer::Options o;
    o.listen = "127.0.0.1:0";
    auto server = CollectorServer::Start(o, {query_.get()});
    EXPECT_TRUE(server.ok()) << server.status();
    if (!server.ok()) return nullptr;
    server_ = *std::move(server);
    return grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->port()),
                               grpc::InsecureChannelCredentials());
  }

  // A client context that gives up after 10 s.
  static std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() +
                          std::chrono::seconds(10));
    return context;
  }

  SeriesStore series_{SeriesStore::Options{}, clock_};
  testing::FixedTopology topology_;
  std::unique_ptr<QueryService> query_;
  std::unique_ptr<CollectorServer> server_;
};

}  // namespace fabricdiag::collector
