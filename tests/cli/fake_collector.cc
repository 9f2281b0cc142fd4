#include "tests/cli/fake_collector.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "analysis/layout_model.h"
#include "analysis/layout_parse.h"
#include "common/grpc_status.h"

namespace fabricdiag::cli::testing {

class FakeCollector::Service final : public v1::Collector::Service {
 public:
  explicit Service(std::string token) : token_(std::move(token)) {}

  grpc::Status ApplyLayout(grpc::ServerContext* context,
                           const v1::ApplyLayoutRequest* request,
                           v1::ApplyLayoutResponse* response) override {
    if (grpc::Status s = CheckToken(context); !s.ok()) return s;
    absl::StatusOr<analysis::LayoutModel> model =
        analysis::LayoutModel::Build(request->layout());
    if (!model.ok()) return ToGrpcStatus(model.status());
    absl::MutexLock lock(&mu_);
    response->set_replaced(layouts_.count(request->layout().job()) > 0);
    layouts_[request->layout().job()] = request->layout();
    for (uint32_t g : model->TpGroupsCrossingNvlink()) {
      v1::Finding* f = response->add_findings();
      f->set_id(absl::StrCat("f-", ++next_id_));
      f->set_kind("tp_cross_node");
      f->set_severity(v1::SEVERITY_WARNING);
      f->set_state(v1::FINDING_STATE_ACTIVE);
      f->set_job(model->job());
      f->set_group(analysis::GroupName({analysis::Dim::kTp, g}));
      f->set_summary("tp group leaves its NVLink domain");
    }
    return grpc::Status::OK;
  }

  grpc::Status GetLayout(grpc::ServerContext*,
                         const v1::GetLayoutRequest* request,
                         v1::Layout* response) override {
    absl::MutexLock lock(&mu_);
    auto it = layouts_.find(request->job());
    if (it == layouts_.end()) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("no layout for job ", request->job()));
    }
    *response = it->second;
    return grpc::Status::OK;
  }

  grpc::Status ListLayouts(grpc::ServerContext*, const v1::ListLayoutsRequest*,
                           v1::ListLayoutsResponse* response) override {
    absl::MutexLock lock(&mu_);
    for (const auto& [job, layout] : layouts_) {
      v1::LayoutSummary* s = response->add_layouts();
      s->set_job(job);
      s->set_hosts(static_cast<uint32_t>(layout.hosts_size()));
      s->set_ranks(s->hosts() * layout.gpus_per_node());
      s->set_parallelism(absl::StrCat("tp=", layout.parallelism().tp(),
                                      " pp=", layout.parallelism().pp(),
                                      " dp=", layout.parallelism().dp()));
      s->set_applied_unix_nanos(1795316400LL * 1000000000LL);
    }
    return grpc::Status::OK;
  }

  grpc::Status DeleteLayout(grpc::ServerContext* context,
                            const v1::DeleteLayoutRequest* request,
                            v1::DeleteLayoutResponse*) override {
    if (grpc::Status s = CheckToken(context); !s.ok()) return s;
    absl::MutexLock lock(&mu_);
    if (layouts_.erase(request->job()) == 0) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("no layout for job ", request->job()));
    }
    return grpc::Status::OK;
  }

  grpc::Status ApplyTopology(grpc::ServerContext* context,
                             const v1::ApplyTopologyRequest* request,
                             v1::ApplyTopologyResponse*) override {
    if (grpc::Status s = CheckToken(context); !s.ok()) return s;
    absl::MutexLock lock(&mu_);
    topology_ = request->topology();
    return grpc::Status::OK;
  }

  grpc::Status GetTopology(grpc::ServerContext*, const v1::GetTopologyRequest*,
                           v1::Topology* response) override {
    absl::MutexLock lock(&mu_);
    *response = topology_;
    return grpc::Status::OK;
  }

  grpc::Status ListFindings(grpc::ServerContext*,
                            const v1::ListFindingsRequest* request,
                            v1::ListFindingsResponse* response) override {
    absl::MutexLock lock(&mu_);
    for (const v1::Finding& f : findings_) {
      if (!request->job().empty() && f.job() != request->job()) continue;
      if (!request->kind().empty() && f.kind() != request->kind()) continue;
      if (!request->all() && f.state() != v1::FINDING_STATE_ACTIVE) continue;
      *response->add_findings() = f;
    }
    return grpc::Status::OK;
  }

  grpc::Status ListNodes(grpc::ServerContext*, const v1::ListNodesRequest*,
                         v1::ListNodesResponse* response) override {
    absl::MutexLock lock(&mu_);
    for (const v1::NodeStatus& n : nodes_) *response->add_nodes() = n;
    return grpc::Status::OK;
  }

  // Sync API: the handler thread waits for published events and polls for
  // cancellation, which the sync API reports only through IsCancelled().
  grpc::Status WatchFindings(
      grpc::ServerContext* context, const v1::WatchFindingsRequest* request,
      grpc::ServerWriter<v1::FindingEvent>* writer) override {
    writer->SendInitialMetadata();
    size_t next = 0;
    std::vector<v1::FindingEvent> snapshot;
    {
      absl::MutexLock lock(&mu_);
      next = log_.size();
      for (const v1::Finding& f : findings_) {
        if (f.state() != v1::FINDING_STATE_ACTIVE) continue;
        if (!request->job().empty() && f.job() != request->job()) continue;
        v1::FindingEvent e;
        e.set_kind(v1::FindingEvent::SNAPSHOT);
        *e.mutable_finding() = f;
        snapshot.push_back(std::move(e));
      }
    }
    for (const v1::FindingEvent& e : snapshot) {
      if (!writer->Write(e)) return grpc::Status::CANCELLED;
    }
    {
      absl::MutexLock lock(&mu_);
      ++watchers_;
    }
    for (;;) {
      std::vector<v1::FindingEvent> batch;
      {
        absl::MutexLock lock(&mu_);
        auto ready = [this, next]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return log_.size() > next || shutting_down_;
        };
        mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(50));
        if (shutting_down_) {
          --watchers_;
          return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                              "collector shutting down");
        }
        if (context->IsCancelled()) {
          --watchers_;
          ++cancelled_;
          return grpc::Status::CANCELLED;
        }
        for (; next < log_.size(); ++next) {
          if (request->job().empty() ||
              log_[next].finding().job() == request->job()) {
            batch.push_back(log_[next]);
          }
        }
      }
      for (const v1::FindingEvent& e : batch) writer->Write(e);
    }
  }

  grpc::Status GetSeries(grpc::ServerContext*, const v1::GetSeriesRequest*,
                         v1::GetSeriesResponse*) override {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "not in the fake");
  }

  mutable absl::Mutex mu_;
  std::map<std::string, v1::Layout> layouts_ ABSL_GUARDED_BY(mu_);
  v1::Topology topology_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::Finding> findings_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::NodeStatus> nodes_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::FindingEvent> log_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> authorizations_ ABSL_GUARDED_BY(mu_);
  int watchers_ ABSL_GUARDED_BY(mu_) = 0;
  int cancelled_ ABSL_GUARDED_BY(mu_) = 0;
  int next_id_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;

 private:
  grpc::Status CheckToken(grpc::ServerContext* context) {
    std::string value;
    auto it = context->client_metadata().find("authorization");
    if (it != context->client_metadata().end()) {
      value = std::string(it->second.data(), it->second.size());
    }
    {
      absl::MutexLock lock(&mu_);
      authorizations_.push_back(value);
    }
    if (token_.empty() || value == absl::StrCat("Bearer ", token_)) {
      return grpc::Status::OK;
    }
    return grpc::Status(
        grpc::StatusCode::UNAUTHENTICATED,
        value.empty() ? "missing bearer token" : "wrong bearer token");
  }

  const std::string token_;
};

FakeCollector::FakeCollector(std::string token) : token_(std::move(token)) {}

FakeCollector::~FakeCollector() { Shutdown(); }

absl::Status FakeCollector::Start(int port) {
  service_ = std::make_unique<Service>(token_);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat("127.0.0.1:", port),
                           grpc::InsecureServerCredentials(), &port_);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on 127.0.0.1:", port));
  }
  return absl::OkStatus();
}

void FakeCollector::Shutdown() {
  if (server_ == nullptr) return;
  {
    absl::MutexLock lock(&service_->mu_);
    service_->shutting_down_ = true;
  }
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  server_->Wait();
  server_.reset();
}

std::string FakeCollector::address() const {
  return absl::StrCat("127.0.0.1:", port_);
}

void FakeCollector::AddFinding(const v1::Finding& finding) {
  absl::MutexLock lock(&service_->mu_);
  service_->findings_.push_back(finding);
}

void FakeCollector::AddNode(const v1::NodeStatus& node) {
  absl::MutexLock lock(&service_->mu_);
  service_->nodes_.push_back(node);
}

void FakeCollector::Publish(const v1::FindingEvent& event) {
  absl::MutexLock lock(&service_->mu_);
  service_->log_.push_back(event);
}

bool FakeCollector::WaitForWatchers(int n, absl::Duration timeout) {
  absl::MutexLock lock(&service_->mu_);
  auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(service_->mu_) {
    return service_->watchers_ >= n;
  };
  return service_->mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
}

int FakeCollector::cancelled_watches() const {
  absl::MutexLock lock(&service_->mu_);
  return service_->cancelled_;
}

std::vector<std::string> FakeCollector::write_authorizations() const {
  absl::MutexLock lock(&service_->mu_);
  return service_->authorizations_;
}

bool FakeCollector::HasLayout(const std::string& job) const {
  absl::MutexLock lock(&service_->mu_);
  return service_->layouts_.count(job) > 0;
}

}  // namespace fabricdiag::cli::testing
