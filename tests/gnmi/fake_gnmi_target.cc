#include "tests/gnmi/fake_gnmi_target.h"

#include <chrono>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gnmi/gnmi_path.h"

namespace fabricdiag::gnmi::testing {
namespace {

using Stream = grpc::ServerReaderWriter<::gnmi::SubscribeResponse,
                                        ::gnmi::SubscribeRequest>;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Metadata(const grpc::ServerContext& context, const char* key) {
  auto it = context.client_metadata().find(key);
  if (it == context.client_metadata().end()) return "";
  return std::string(it->second.data(), it->second.size());
}

}  // namespace

class FakeGnmiTarget::Service final : public ::gnmi::gNMI::Service {
 public:
  grpc::Status Subscribe(grpc::ServerContext* context,
                         Stream* stream) override {
    {
      std::lock_guard<std::mutex> lock(mu);
      ++subscribes;
      if (!username.empty() && (Metadata(*context, "username") != username ||
                                Metadata(*context, "password") != password)) {
        ++unauthenticated;
        return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                            "bad username or password");
      }
    }
    ::gnmi::SubscribeRequest request;
    if (!stream->Read(&request) || request.subscribe().subscription().empty()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no subscribe");
    }
    const std::string first =
        PathToString(request.subscribe().subscription(0).path());
    auto entry = std::make_shared<Entry>();
    entry->stream = stream;
    {
      std::lock_guard<std::mutex> lock(mu);
      ++subscribes_by_path[first];
      for (const ::gnmi::Subscription& s : request.subscribe().subscription()) {
        if (refused.count(PathToString(s.path())) != 0) {
          return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                              "path not implemented");
        }
      }
      std::lock_guard<std::mutex> write(entry->mu);
      for (const ::gnmi::SubscribeResponse& r : scripts[first]) {
        stream->Write(r);
      }
      ::gnmi::SubscribeResponse sync;
      sync.set_sync_response(true);
      stream->Write(sync);
      streams.emplace(first, entry);
    }
    cv.notify_all();
    while (stream->Read(&request)) {
    }
    {
      std::lock_guard<std::mutex> write(entry->mu);
      entry->stream = nullptr;
    }
    std::lock_guard<std::mutex> lock(mu);
    for (auto it = streams.begin(); it != streams.end(); ++it) {
      if (it->second == entry) {
        streams.erase(it);
        break;
      }
    }
    return grpc::Status::OK;
  }

  struct Entry {
    std::mutex mu;
    Stream* stream = nullptr;
  };

  std::mutex mu;
  std::condition_variable cv;
  std::string username;
  std::string password;
  std::set<std::string> refused;
  std::map<std::string, std::vector<::gnmi::SubscribeResponse>> scripts;
  std::multimap<std::string, std::shared_ptr<Entry>> streams;
  int subscribes = 0;
  std::map<std::string, int> subscribes_by_path;  // by first path
  int unauthenticated = 0;
};

FakeGnmiTarget::FakeGnmiTarget() : service_(std::make_unique<Service>()) {}

FakeGnmiTarget::~FakeGnmiTarget() { Stop(); }

void FakeGnmiTarget::RequireCredentials(std::string username,
                                        std::string password) {
  std::lock_guard<std::mutex> lock(service_->mu);
  service_->username = std::move(username);
  service_->password = std::move(password);
}

void FakeGnmiTarget::Refuse(std::string path) {
  std::lock_guard<std::mutex> lock(service_->mu);
  service_->refused.insert(std::move(path));
}

void FakeGnmiTarget::Script(std::string path,
                            std::vector<::gnmi::SubscribeResponse> r) {
  std::lock_guard<std::mutex> lock(service_->mu);
  service_->scripts[std::move(path)] = std::move(r);
}

absl::Status FakeGnmiTarget::Start(int port, const Tls* tls) {
  grpc::ServerBuilder builder;
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (tls != nullptr) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back(
        {ReadAll(tls->key_file), ReadAll(tls->cert_file)});
    creds = grpc::SslServerCredentials(ssl);
  } else {
    creds = grpc::InsecureServerCredentials();
  }
  builder.AddListeningPort(absl::StrCat("127.0.0.1:", port), creds, &port_);
  builder.SetMaxSendMessageSize(256 << 20);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", port));
  }
  return absl::OkStatus();
}

void FakeGnmiTarget::Stop() {
  if (server_ == nullptr || stopped_) return;
  stopped_ = true;
  server_->Shutdown(std::chrono::system_clock::now());
  server_->Wait();
}

int FakeGnmiTarget::Push(const std::string& path,
                         const ::gnmi::SubscribeResponse& response) {
  std::vector<std::shared_ptr<Service::Entry>> entries;
  {
    std::lock_guard<std::mutex> lock(service_->mu);
    auto [begin, end] = service_->streams.equal_range(path);
    for (auto it = begin; it != end; ++it) entries.push_back(it->second);
  }
  int n = 0;
  for (const auto& e : entries) {
    std::lock_guard<std::mutex> write(e->mu);
    if (e->stream != nullptr && e->stream->Write(response)) ++n;
  }
  return n;
}

bool FakeGnmiTarget::WaitForStreams(const std::string& path, int n,
                                    absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(service_->mu);
  return service_->cv.wait_for(lock, absl::ToChronoNanoseconds(timeout), [&] {
    return static_cast<int>(service_->streams.count(path)) >= n;
  });
}

std::string FakeGnmiTarget::address() const {
  return absl::StrCat("127.0.0.1:", port_);
}

int FakeGnmiTarget::unauthenticated() const {
  std::lock_guard<std::mutex> lock(service_->mu);
  return service_->unauthenticated;
}

int FakeGnmiTarget::subscribes() const {
  std::lock_guard<std::mutex> lock(service_->mu);
  return service_->subscribes;
}

int FakeGnmiTarget::subscribes(const std::string& path) const {
  std::lock_guard<std::mutex> lock(service_->mu);
  auto it = service_->subscribes_by_path.find(path);
  return it == service_->subscribes_by_path.end() ? 0 : it->second;
}

}  // namespace fabricdiag::gnmi::testing
