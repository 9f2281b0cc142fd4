// Every RPC of the ops API has a scope (collector/api/rpc_scopes.h), and
// a real QueryService on loopback enforces exactly it: each method of the
// service's descriptor is called by name with no token, a wrong one, a
// token with every scope but the one it needs, and one with it.
#include "collector/api/rpc_scopes.h"

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collector/access/access_control.h"
#include "collector/api/query_service.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "proto/collector.grpc.pb.h"
#include "tests/collector/api/served_query_service.h"

namespace fabricdiag::collector {
namespace {

using ::testing::HasSubstr;

const google::protobuf::ServiceDescriptor& CollectorService() {
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          v1::Collector::service_full_name());
  EXPECT_NE(service, nullptr);
  return *service;
}

TEST(RpcScopesTest, EveryRpcOfTheServiceHasAScope) {
  const google::protobuf::ServiceDescriptor& service = CollectorService();
  ASSERT_GT(service.method_count(), 10);
  for (int i = 0; i < service.method_count(); ++i) {
    EXPECT_TRUE(RpcScope(service.method(i)->name()).has_value())
        << service.method(i)->name()
        << " has no row in collector/api/rpc_scopes.cc";
  }
  EXPECT_FALSE(RpcScope("NoSuchRpc").has_value());
}

TEST(RpcScopesTest, WritesNeedMoreThanRead) {
  EXPECT_EQ(RpcScope("ListFindings"), Scope::kRead);
  EXPECT_EQ(RpcScope("WatchFindings"), Scope::kRead);
  EXPECT_EQ(RpcScope("ApplyLayout"), Scope::kDeclare);
  EXPECT_EQ(RpcScope("DeleteLayout"), Scope::kDeclare);
  for (const char* admin : {"ApplyTopology", "AdoptTopology", "AckFinding",
                            "CreateSilence", "ExpireSilence", "ForgetNode"}) {
    EXPECT_EQ(RpcScope(admin), Scope::kAdmin) << admin;
  }
}

constexpr char kRead[] = "read-0123456789abcdef";
constexpr char kDeclare[] = "declare-0123456789abcdef";
constexpr char kReadDeclare[] = "readdeclare-0123456789abcdef";
constexpr char kAdmin[] = "admin-0123456789abcdef";

class RpcAccessTest : public ServedQueryServiceTest {
 protected:
  void SetUp() override {
    ServedQueryServiceTest::SetUp();
    if (HasFatalFailure()) return;
    QueryService::Options options;
    options.access = std::make_shared<AccessControl>(std::vector<AccessToken>{
        {"reader", static_cast<uint8_t>(Scope::kRead), kRead},
        {"prolog", static_cast<uint8_t>(Scope::kDeclare), kDeclare},
        {"both",
         static_cast<uint8_t>(static_cast<uint8_t>(Scope::kRead) |
                              static_cast<uint8_t>(Scope::kDeclare)),
         kReadDeclare},
        {"oncall", static_cast<uint8_t>(Scope::kAdmin), kAdmin}});
    channel_ = Serve(std::move(options));
    ASSERT_NE(channel_, nullptr);
  }

  // `method` of the service called with an empty request (every field at
  // its default), with `token` unless it is empty.
  grpc::Status Call(const std::string& method, const std::string& token) {
    grpc::GenericStub stub(channel_);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
    grpc::Slice empty{std::string()};
    grpc::ByteBuffer request(&empty, 1);
    grpc::ByteBuffer response;
    std::promise<grpc::Status> done;
    stub.UnaryCall(
        &context,
        absl::StrCat("/", v1::Collector::service_full_name(), "/", method),
        grpc::StubOptions(), &request, &response,
        [&done](grpc::Status s) { done.set_value(std::move(s)); });
    return done.get_future().get();
  }

  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(RpcAccessTest, EveryRpcNeedsATokenWithItsScope) {
  const google::protobuf::ServiceDescriptor& service = CollectorService();
  for (int i = 0; i < service.method_count(); ++i) {
    const google::protobuf::MethodDescriptor& m = *service.method(i);
    const std::optional<Scope> scope = RpcScope(m.name());
    ASSERT_TRUE(scope.has_value()) << m.name();
    SCOPED_TRACE(absl::StrCat(m.name(), " needs ", ScopeName(*scope)));

    grpc::Status none = Call(m.name(), "");
    EXPECT_EQ(none.error_code(), grpc::StatusCode::UNAUTHENTICATED)
        << none.error_message();
    EXPECT_THAT(none.error_message(),
                HasSubstr(absl::StrCat("needs a token with the ",
                                       ScopeName(*scope), " scope")));
    EXPECT_EQ(Call(m.name(), "wrong-0123456789abcdef").error_code(),
              grpc::StatusCode::UNAUTHENTICATED);

    // Every scope but the one it needs (and admin).
    const char* lacking = *scope == Scope::kRead      ? kDeclare
                          : *scope == Scope::kDeclare ? kRead
                                                      : kReadDeclare;
    grpc::Status denied = Call(m.name(), lacking);
    EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED)
        << denied.error_message();
    EXPECT_THAT(denied.error_message(),
                HasSubstr(absl::StrCat("needs the ", ScopeName(*scope))));

    // With it, the call gets past the check (it may still fail on its
    // empty request). A watch would stream until its deadline.
    if (m.server_streaming()) continue;
    const char* having = *scope == Scope::kRead      ? kRead
                         : *scope == Scope::kDeclare ? kDeclare
                                                     : kAdmin;
    for (const char* token : {having, kAdmin}) {
      grpc::Status allowed = Call(m.name(), token);
      EXPECT_NE(allowed.error_code(), grpc::StatusCode::UNAUTHENTICATED)
          << token << ": " << allowed.error_message();
      EXPECT_NE(allowed.error_code(), grpc::StatusCode::PERMISSION_DENIED)
          << token << ": " << allowed.error_message();
    }
  }
}

// Previewing an adoption changes nothing: a read.
TEST_F(RpcAccessTest, AdoptTopologyDryRunIsARead) {
  auto stub = v1::Collector::NewStub(channel_);
  v1::AdoptTopologyRequest request;
  request.set_dry_run(true);
  request.set_snapshot(true);
  v1::AdoptTopologyResponse response;
  grpc::ClientContext read;
  read.AddMetadata("authorization", absl::StrCat("Bearer ", kRead));
  grpc::Status s = stub->AdoptTopology(&read, request, &response);
  EXPECT_NE(s.error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << s.error_message();
  EXPECT_NE(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext declare;
  declare.AddMetadata("authorization", absl::StrCat("Bearer ", kDeclare));
  EXPECT_EQ(stub->AdoptTopology(&declare, request, &response).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
}

// The token's name is who made a mark, whatever the client says it is.
TEST_F(RpcAccessTest, AMarkIsMadeAsItsTokensName) {
  auto stub = v1::Collector::NewStub(channel_);
  v1::CreateSilenceRequest request;
  v1::SilenceMatcher* m = request.add_matchers();
  m->set_key("node");
  m->set_value("leaf-3");
  request.set_duration_seconds(3600);
  request.set_comment("RMA");
  request.set_who("mallory");
  grpc::ClientContext context;
  context.AddMetadata("authorization", absl::StrCat("Bearer ", kAdmin));
  v1::Silence silence;
  grpc::Status s = stub->CreateSilence(&context, request, &silence);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(silence.who(), "oncall");
}

}  // namespace
}  // namespace fabricdiag::collector
