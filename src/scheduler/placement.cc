#include "scheduler/placement.h"

#include <algorithm>
#include <map>

namespace eco::scheduler {

using nlohmann::json;

namespace {


class Resolver {
 public:
  Resolver(const std::string& app, const std::set<std::string>& allowed, const ClustersOf& clusters_of)
      : app_(app), allowed_(allowed), clusters_of_(clusters_of) {}

  // Clusters ("provider+name") one term stands for, in name order.
  Result<std::vector<std::string>> Term(const json& t) {
    std::string provider = catalog::StringField(t, "clusterProvider");
    std::string name = catalog::StringField(t, "cluster");
    std::string label = catalog::StringField(t, "clusterLabel");
    if (provider.empty() || (name.empty() == label.empty())) {
      return Invalid("placement intent of app " + app_ +
                     ": each term needs clusterProvider and exactly one of cluster or clusterLabel");
    }
    auto cs = Provider(provider);
    if (!cs.ok()) return cs.status();
    std::vector<std::string> out;
    if (!name.empty()) {
      const std::string key = provider + "+" + name;
      bool known = std::any_of((*cs)->begin(), (*cs)->end(),
                               [&](const catalog::ClusterInfo& c) { return c.name == name; });
      if (!known) {
        return Invalid("placement intent of app " + app_ + " names cluster " + key +
                       ", which is not registered");
      }
      if (!allowed_.count(key)) {
        return Invalid("The specified Logical Cloud doesn't provide the mandatory clusters: "
                       "placement intent of app " + app_ + " names cluster " + key +
                       ", which is not in the logical cloud");
      }
      out.push_back(key);
      return out;
    }
    for (const auto& c : **cs) {
      if (std::find(c.labels.begin(), c.labels.end(), label) == c.labels.end()) continue;
      std::string key = provider + "+" + c.name;
      if (allowed_.count(key)) out.push_back(std::move(key));
    }
    return out;
  }

  void Place(const std::string& key, int group, bool mandatory, const std::string& why) {
    auto it = index_.find(key);
    if (it != index_.end()) {
      auto& existing = placed_[it->second];
      if (mandatory && !existing.mandatory) {
        existing.group = group;
        existing.mandatory = true;
        why_[key] = why;
      }
      return;
    }
    why_[key] = why;
    auto plus = key.find('+');
    index_[key] = placed_.size();
    placed_.push_back({key.substr(0, plus), key.substr(plus + 1), group, mandatory, 0});
  }

  std::map<std::string, std::string> TakeReasons() { return std::move(why_); }

  std::vector<appcontext::ClusterRef> Take() {
    // A cluster of an optional group that is also mandatory elsewhere was
    // promoted in Place; an optional group left empty simply disappears.
    return std::move(placed_);
  }

 private:
  Result<const std::vector<catalog::ClusterInfo>*> Provider(const std::string& p) {
    auto it = cache_.find(p);
    if (it == cache_.end()) {
      auto cs = clusters_of_(p);
      if (!cs.ok()) return cs.status();
      it = cache_.emplace(p, std::move(*cs)).first;
    }
    return &it->second;
  }

  const std::string& app_;
  const std::set<std::string>& allowed_;
  const ClustersOf& clusters_of_;
  std::map<std::string, std::vector<catalog::ClusterInfo>> cache_;
  std::vector<appcontext::ClusterRef> placed_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> why_;
};

// How a plan names the term that placed a cluster.
std::string TermText(const json& t) {
  std::string label = catalog::StringField(t, "clusterLabel");
  if (!label.empty()) return "label " + label;
  return "cluster " + catalog::StringField(t, "clusterProvider") + "+" + catalog::StringField(t, "cluster");
}

}  // namespace

Result<std::vector<appcontext::ClusterRef>> ResolvePlacement(const std::string& app, const json& intent,
                                                             const std::set<std::string>& allowed,
                                                             const ClustersOf& clusters_of,
                                                             std::map<std::string, std::string>* why) {
  if (!intent.is_object()) return Invalid("placement intent of app " + app + " is not an object");
  Resolver r(app, allowed, clusters_of);
  int g = 0;
  if (auto all = intent.find("allOf"); all != intent.end() && all->is_array()) {
    for (const auto& t : *all) {
      if (t.is_object() && t.contains("anyOf")) {
        ++g;
        const json& any = t["anyOf"];
        if (!any.is_array()) return Invalid("placement intent of app " + app + ": anyOf must be a list");
        for (const auto& sub : any) {
          auto keys = r.Term(sub);
          if (!keys.ok()) return keys.status();
          for (const auto& k : *keys) r.Place(k, g, false, "allOf anyOf group " + std::to_string(g) + ": " + TermText(sub));
        }
        continue;
      }
      auto keys = r.Term(t);
      if (!keys.ok()) return keys.status();
      for (const auto& k : *keys) {
        ++g;
        r.Place(k, g, true, "allOf: " + TermText(t));
      }
    }
  }
  if (auto any = intent.find("anyOf"); any != intent.end() && any->is_array() && !any->empty()) {
    ++g;
    for (const auto& t : *any) {
      auto keys = r.Term(t);
      if (!keys.ok()) return keys.status();
      for (const auto& k : *keys) r.Place(k, g, false, "anyOf group " + std::to_string(g) + ": " + TermText(t));
    }
  }
  if (why) *why = r.TakeReasons();
  auto placed = r.Take();
  if (placed.empty()) {
    return Invalid("No Qualified Clusters to deploy App " + app +
                   ": its placement intent matches no cluster of the logical cloud");
  }
  return placed;
}

}  // namespace eco::scheduler
