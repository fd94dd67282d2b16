#include "controllers/hpa/intents.h"

#include <algorithm>
#include <vector>

#include "catalog/catalog.h"
#include "common/json_fields.h"
#include "controllers/hpa/amount.h"

namespace eco::hpa {

using nlohmann::json;

namespace {

int64_t Int(const json& obj, const char* key, int64_t def) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return def;
  if (it->is_number_integer()) return it->get<int64_t>();
  return static_cast<int64_t>(it->get<double>());
}

const json& Spec(const json& obj) {
  static const json kEmpty = json::object();
  auto it = obj.find("spec");
  return it != obj.end() && it->is_object() ? *it : kEmpty;
}

Result<Requirement> ToRequirement(const catalog::Item& item) {
  Requirement r;
  r.name = item.keys.back();
  const json& s = Spec(item.object);
  r.allocatable =
      s.contains("allocatable") && s["allocatable"].is_boolean() && s["allocatable"].get<bool>();
  static const json kEmpty = json::object();
  const json& res = s.contains("resource") && s["resource"].is_object() ? s["resource"] : kEmpty;
  if (!r.allocatable) {
    r.key = StringField(res, "key");
    r.value = StringField(res, "value");
    return r;
  }
  r.resource = StringField(res, "name");
  std::string units = StringField(res, "units");
  int64_t requests = Int(res, "requests", 0);
  int64_t limits = Int(res, "limits", 0);
  if (requests <= 0) requests = limits;  // as EMCO: no request means the limit
  auto req = RequirementAmount(r.resource, requests, units);
  if (!req.ok()) return req.status().Annotate("requirement " + r.name);
  r.requests = *req;
  if (limits > 0) {
    auto lim = RequirementAmount(r.resource, limits, units);
    if (!lim.ok()) return lim.status().Annotate("requirement " + r.name);
    r.limits = *lim;
  }
  return r;
}

bool HasReplicas(const std::string& kind) { return kind != "DaemonSet"; }

std::string KindOf(const Consumer& c) { return c.kind.empty() ? "Deployment" : c.kind; }

}  // namespace

Result<AppConsumers> LoadConsumers(store::Store& st, const std::string& project,
                                   const std::string& composite_app, const std::string& version,
                                   const std::string& dig) {
  AppConsumers out;
  auto intents = catalog::List(st, "hpaIntent", {project, composite_app, version, dig});
  if (!intents.ok()) return intents.status();
  for (const auto& in : *intents) {
    std::string app = StringField(Spec(in.object), "app");
    if (app.empty()) continue;
    auto consumers = catalog::List(st, "hpaConsumer", in.keys);
    if (!consumers.ok()) return consumers.status();
    auto& list = out[app];  // an intent without consumers still marks the app
    for (const auto& ci : *consumers) {
      const json& s = Spec(ci.object);
      Consumer c;
      c.intent = in.keys.back();
      c.name = ci.keys.back();
      c.workload = StringField(s, "name");
      c.kind = StringField(s, "kind");
      c.container = StringField(s, "container");
      c.replicas = Int(s, "replicas", 1);
      auto reqs = catalog::List(st, "hpaResource", ci.keys);
      if (!reqs.ok()) return reqs.status();
      for (const auto& ri : *reqs) {
        auto r = ToRequirement(ri);
        if (!r.ok()) return r.status().Annotate("HPA intent " + c.intent + " consumer " + c.name);
        c.requirements.push_back(std::move(*r));
      }
      list.push_back(std::move(c));
    }
  }
  return out;
}

void AttachTolerations(std::vector<Consumer>& consumers, const appcontext::ResourceSet& rs) {
  for (Consumer& c : consumers) {
    const appcontext::Resource* res = rs.Find(c.workload + "+" + KindOf(c));
    c.tolerations = res == nullptr ? std::vector<Toleration>{} : PodTolerations(res->object);
  }
}

namespace {

// A node that would have qualified for a consumer but does not count.
struct Excluded {
  size_t node;
  std::string why;
};

// " (not counted: n2 cordoned, n3 not Ready)", at most five named; "" for none.
std::string NotCounted(const ClusterState& st, const std::vector<Excluded>& excluded) {
  constexpr size_t kMaxNamed = 5;
  if (excluded.empty()) return "";
  std::string out = " (not counted: ";
  for (size_t i = 0; i < excluded.size() && i < kMaxNamed; ++i) {
    out += (i == 0 ? "" : ", ") + st.nodes[excluded[i].node].name + " " + excluded[i].why;
  }
  if (excluded.size() > kMaxNamed) {
    out += ", and " + std::to_string(excluded.size() - kMaxNamed) + " more";
  }
  return out + ")";
}

}  // namespace

std::string FitConsumers(ClusterState& state, const std::vector<Consumer>& consumers) {
  ClusterState work = state;  // committed only when everything fits
  const size_t n_nodes = work.nodes.size();
  for (const Consumer& c : consumers) {
    // Exclusion depends on the consumer's tolerations, so it is decided per
    // consumer; excluded nodes go through the label filter too, so that a
    // message names only those that would otherwise have qualified.
    std::vector<size_t> cand;
    std::vector<Excluded> excluded;
    for (size_t i = 0; i < n_nodes; ++i) {
      std::string why = NodeExclusion(work.nodes[i], c.tolerations);
      if (why.empty()) {
        cand.push_back(i);
      } else {
        excluded.push_back({i, std::move(why)});
      }
    }
    std::string matched;  // label terms so far, for messages

    for (const Requirement& r : c.requirements) {
      if (r.allocatable) continue;
      auto has_label = [&](size_t i) {
        auto l = work.nodes[i].labels.find(r.key);
        return l != work.nodes[i].labels.end() && l->second == r.value;
      };
      std::erase_if(excluded, [&](const Excluded& e) { return !has_label(e.node); });
      std::vector<size_t> keep;
      for (size_t i : cand) {
        if (has_label(i)) keep.push_back(i);
      }
      const std::string term = r.key + "=" + r.value;
      if (keep.empty()) {
        return "no node with " + (matched.empty() ? term : matched + " and " + term) +
               NotCounted(work, excluded);
      }
      matched += matched.empty() ? term : " and " + term;
      cand = std::move(keep);
    }

    std::vector<const Requirement*> alloc;
    for (const Requirement& r : c.requirements) {
      if (r.allocatable) alloc.push_back(&r);
    }
    if (alloc.empty()) continue;
    if (cand.empty() && !excluded.empty()) {
      return "consumer " + c.name + " has no node to run on" + NotCounted(work, excluded);
    }

    // One pod per replica: all its requests on one node, the node with the
    // most free cpu first (as the Kubernetes scheduler spreads), then by name.
    for (int64_t rep = 0; rep < c.replicas; ++rep) {
      long best = -1;
      for (size_t i : cand) {
        bool fits = true;
        for (const Requirement* r : alloc)
          fits = fits && work.nodes[i].Free(r->resource) >= r->requests;
        if (!fits) continue;
        if (best < 0 ||
            work.nodes[i].Free("cpu") > work.nodes[static_cast<size_t>(best)].Free("cpu")) {
          best = static_cast<long>(i);
        }
      }
      if (best < 0) {
        std::string where = matched.empty() ? "" : " among nodes with " + matched;
        std::string which = c.replicas > 1 ? " (replica " + std::to_string(rep + 1) + " of " +
                                                 std::to_string(c.replicas) + ")"
                                           : "";
        for (const Requirement* r : alloc) {
          int64_t most = 0;
          for (size_t i : cand) most = std::max(most, work.nodes[i].Free(r->resource));
          if (most < r->requests) {
            return "consumer " + c.name + " needs " + DescribeAmount(r->resource, r->requests) +
                   " free on one node" + which + ", the most any node has" + where + " is " +
                   DescribeAmount(r->resource, std::max<int64_t>(most, 0)) +
                   NotCounted(work, excluded);
          }
        }
        std::string all;
        for (const Requirement* r : alloc) {
          all += (all.empty() ? "" : " and ") + DescribeAmount(r->resource, r->requests);
        }
        return "consumer " + c.name + " needs " + all + " free on one node" + which + ", no node" +
               where + " has all of them" + NotCounted(work, excluded);
      }
      for (const Requirement* r : alloc) {
        work.nodes[static_cast<size_t>(best)].requested[r->resource] += r->requests;
      }
    }
  }
  state = std::move(work);
  return "";
}

Status EditResources(appcontext::ResourceSet& rs, const std::vector<Consumer>& consumers) {
  for (const Consumer& c : consumers) {
    const std::string kind = KindOf(c);
    const std::string rname = c.workload + "+" + kind;
    const std::string who = "HPA intent " + c.intent + " consumer " + c.name;
    appcontext::Resource* res = rs.Find(rname);
    if (res == nullptr) return Invalid(who + ": the app has no " + rname);
    json& obj = res->object;
    try {
      if (!obj.is_object() || !obj.contains("spec") || !obj["spec"].is_object()) {
        return Invalid(who + ": " + rname + " has no spec");
      }
      json& spec = obj["spec"];
      if (HasReplicas(kind) && c.replicas > 0) spec["replicas"] = c.replicas;
      if (!spec.contains("template") || !spec["template"].is_object()) {
        return Invalid(who + ": " + rname + " has no pod template");
      }
      json& tmpl = spec["template"];
      if (!tmpl.contains("spec") || !tmpl["spec"].is_object()) tmpl["spec"] = json::object();
      json& pod = tmpl["spec"];
      for (const Requirement& r : c.requirements) {
        if (r.allocatable) continue;
        if (!pod.contains("nodeSelector") || !pod["nodeSelector"].is_object()) {
          pod["nodeSelector"] = json::object();
        }
        pod["nodeSelector"][r.key] = r.value;
      }
      for (const Requirement& r : c.requirements) {
        if (!r.allocatable) continue;
        json* container = nullptr;
        if (pod.contains("containers") && pod["containers"].is_array()) {
          for (auto& ct : pod["containers"]) {
            if (ct.is_object() && ct.value("name", "") == c.container) container = &ct;
          }
        }
        if (container == nullptr || c.container.empty()) {
          return Invalid(who + ": container '" + c.container + "' not found in " + rname);
        }
        json& resources = (*container)["resources"];
        if (!resources.is_object()) resources = json::object();
        json& requests = resources["requests"];
        if (!requests.is_object()) requests = json::object();
        requests[r.resource] = AmountQuantity(r.resource, r.requests);
        if (r.limits > 0) {
          json& limits = resources["limits"];
          if (!limits.is_object()) limits = json::object();
          limits[r.resource] = AmountQuantity(r.resource, r.limits);
        }
      }
    } catch (const json::exception& e) {
      return Invalid(who + ": cannot edit " + rname + ": " + e.what());
    }
  }
  return Status::Ok();
}

}  // namespace eco::hpa
