#include "rsync/delivery.h"

namespace eco::rsync {
namespace {

class PushTarget final : public ClusterTarget {
 public:
  explicit PushTarget(std::shared_ptr<k8s::ClusterClient> c) : c_(std::move(c)) {}
  Result<k8s::ResourceInfo> Resolve(const std::string& av, const std::string& kind) override {
    return c_->ResolveKind(av, kind);
  }
  Result<nlohmann::json> Get(const std::string& av, const std::string& kind, const std::string& ns,
                             const std::string& name) override {
    return c_->Get(av, kind, ns, name);
  }
  Result<std::vector<nlohmann::json>> List(const std::string& av, const std::string& kind,
                                           const std::string& ns) override {
    ECO_ASSIGN_OR_RETURN(auto list, c_->List(av, kind, ns, k8s::ListOptions{}));
    return std::move(list.items);
  }
  Result<std::vector<nlohmann::json>> ListMetadata(const std::string& av, const std::string& kind,
                                                   const std::string& ns, size_t limit, bool* truncated) override {
    k8s::ListOptions lo;
    lo.metadata_only = true;
    lo.page_size = static_cast<int64_t>(limit);
    lo.max_pages = 1;
    ECO_ASSIGN_OR_RETURN(auto list, c_->List(av, kind, ns, lo));
    *truncated = list.truncated;
    return std::move(list.items);
  }
  Status Apply(const nlohmann::json& object, const ApplyRequest& req) override {
    k8s::ApplyOptions ao;
    ao.want_object = false;
    ao.serialized = req.serialized;
    ao.resource_version = req.resource_version;
    ao.generation = req.generation;
    if (!req.field_manager.empty()) ao.field_manager = req.field_manager;
    return c_->Apply(object, ao).status();
  }
  Result<k8s::OpenApiDoc> Schemas(const std::string& api_version) override {
    return k8s::FetchOpenApiDoc(*c_, api_version);
  }
  Status Delete(const std::string& av, const std::string& kind, const std::string& ns,
                const std::string& name) override {
    return c_->Delete(av, kind, ns, name, k8s::Propagation::kBackground);
  }

 private:
  std::shared_ptr<k8s::ClusterClient> c_;
};

class Push final : public Delivery {
 public:
  explicit Push(ClientSource clients) : clients_(std::move(clients)) {}
  Result<std::shared_ptr<ClusterTarget>> Target(const appcontext::ClusterRef& c) override {
    ECO_ASSIGN_OR_RETURN(auto client, clients_(c.provider, c.name));
    return std::shared_ptr<ClusterTarget>(std::make_shared<PushTarget>(std::move(client)));
  }

 private:
  ClientSource clients_;
};

}  // namespace

std::unique_ptr<Delivery> PushDelivery(ClientSource clients) { return std::make_unique<Push>(std::move(clients)); }

}  // namespace eco::rsync
