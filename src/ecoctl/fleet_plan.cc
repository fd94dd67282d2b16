#include "ecoctl/fleet_plan.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "ecoctl/ansi.h"

namespace eco::ecoctl {

using nlohmann::json;

namespace {

std::string Str(const json& j, const char* field) {
  auto it = j.find(field);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t Num(const json& j, const char* field) {
  auto it = j.find(field);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

const json& Arr(const json& j, const char* field) {
  static const json empty = json::array();
  auto it = j.find(field);
  return it != j.end() && it->is_array() ? *it : empty;
}

std::string ObjectText(const json& o) {
  std::string s = Str(o, "kind") + " " + Str(o, "name");
  if (!Str(o, "namespace").empty()) s += " -n " + Str(o, "namespace");
  if (!Str(o, "app").empty()) s += "  (app " + Str(o, "app") + ")";
  return s;
}

std::string Value(const json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::string Plural(int64_t n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// At most this many clusters of an app are listed with their reasons.
constexpr size_t kReasonsShown = 20;

}  // namespace

std::vector<std::string> FleetPlanDigs(const std::vector<Document>& docs) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  const std::string marker = "deployment-intent-groups";
  for (const auto& d : docs) {
    std::string anchor = d.anchor.substr(0, d.anchor.find('?'));
    while (!anchor.empty() && anchor.back() == '/') anchor.pop_back();
    std::string path;
    const size_t at = anchor.rfind(marker);
    if (at == std::string::npos) continue;
    const std::string rest = anchor.substr(at + marker.size());
    if (rest.empty() && !d.is_action()) {
      const json& md = d.body.is_object() ? d.body.value("metadata", json::object()) : json::object();
      const std::string name = md.is_object() ? Str(md, "name") : "";
      if (name.empty()) continue;
      path = "/v2/" + anchor + "/" + name;
    } else if (d.is_action() && (d.action == "approve" || d.action == "instantiate" || d.action == "update")) {
      path = "/v2/" + anchor.substr(0, anchor.rfind('/'));
      if (path.rfind(marker) == std::string::npos || path.size() <= path.rfind(marker) + marker.size()) continue;
    } else {
      continue;
    }
    if (seen.insert(path).second) out.push_back(path);
  }
  return out;
}

std::string FormatFleetPlan(const json& plan, const std::string& dig, bool colour) {
  std::ostringstream o;
  auto paint = [&](const char* c, const std::string& s) { return colour ? std::string(c) + s + kReset : s; };
  const std::string op = Str(plan, "operation");
  o << dig << ": " << op;
  if (plan.contains("currentRevision")) o << " from revision " << Num(plan, "currentRevision");
  o << " to revision " << Num(plan, "revision") << "\n";
  o << "plan " << Str(plan, "planId") << "\n";
  for (const auto& n : Arr(plan, "notRun")) o << "not run: " << (n.is_string() ? n.get<std::string>() : n.dump()) << "\n";

  o << "\napps:\n";
  for (const auto& a : Arr(plan, "apps")) {
    const json& cs = Arr(a, "clusters");
    o << "  " << Str(a, "name") << ": " << Plural(static_cast<int64_t>(cs.size()), "cluster");
    if (!Arr(a, "added").empty()) o << ", " << paint(kGreen, "+" + std::to_string(Arr(a, "added").size()) + " added");
    if (!Arr(a, "removed").empty()) o << ", " << paint(kRed, "-" + std::to_string(Arr(a, "removed").size()) + " removed");
    o << "\n";
    if (cs.size() <= kReasonsShown) {
      for (const auto& c : cs) {
        o << "    " << Str(c, "cluster");
        if (!Str(c, "reason").empty()) o << "  " << Str(c, "reason");
        for (const auto& by : Arr(c, "customizedBy")) o << "; customized by " << by.get<std::string>();
        o << "\n";
      }
    }
    for (const auto& r : Arr(a, "removed")) o << "    " << paint(kRed, "- " + r.get<std::string>()) << "  no longer placed\n";
    for (const auto& n : Arr(a, "notPlaced")) o << "    (not placed " << Str(n, "cluster") << ": " << Str(n, "reason") << ")\n";
  }

  // The clusters with something to do, by wave.
  std::map<std::string, const json*> work;
  for (const auto& c : Arr(plan, "clusters")) work[Str(c, "cluster")] = &c;
  for (const auto& w : Arr(plan, "waves")) {
    const json& members = Arr(w, "clusters");
    o << "\nwave " << Str(w, "name") << " (" << Plural(static_cast<int64_t>(members.size()), "cluster") << ")\n";
    int64_t unchanged = 0;
    for (const auto& m : members) {
      auto it = work.find(m.get<std::string>());
      if (it == work.end()) {
        ++unchanged;
        continue;
      }
      const json& c = *it->second;
      o << "  " << Str(c, "cluster") << "\n";
      for (const auto& x : Arr(c, "create")) o << "    " << paint(kGreen, "+ " + ObjectText(x)) << "\n";
      for (const auto& x : Arr(c, "change")) {
        o << "    " << paint(kYellow, "~ " + ObjectText(x)) << "\n";
        for (const auto& d : Arr(x, "diff")) {
          o << "        " << Str(d, "path") << ": " << (d.contains("from") ? Value(d["from"]) : "(none)") << " -> "
            << (d.contains("to") ? Value(d["to"]) : "(removed)") << "\n";
        }
      }
      for (const auto& x : Arr(c, "delete")) o << "    " << paint(kRed, "- " + ObjectText(x)) << "\n";
    }
    if (unchanged > 0) o << "  (" << Plural(unchanged, "cluster") << " unchanged)\n";
  }

  const json& s = plan.value("summary", json::object());
  o << "\nsummary: " << Num(s, "create") << " to create, " << Num(s, "change") << " to change, " << Num(s, "delete")
    << " to delete on " << Num(s, "clustersChanging") << " of " << Plural(Num(s, "clusters"), "cluster") << " ("
    << Num(s, "bytes") << " bytes to send)\n";
  return o.str();
}

}  // namespace eco::ecoctl
