#include "ecoctl/status.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "ecoctl/ansi.h"

namespace eco::ecoctl {

using nlohmann::json;

namespace {

struct Cell {
  int total = 0;
  int ready = 0;
  int missing = 0;  // NotPresent
};

struct Row {
  std::string connectivity;
  std::string last_seen;  // RFC 3339, "" when no contact is recorded
  std::map<std::string, Cell> apps;
};

// cluster ("provider+cluster") → row, and the apps in the answer's order.
std::map<std::string, Row> Rows(const json& status, std::vector<std::string>* apps) {
  std::map<std::string, Row> rows;
  for (const auto& app : status.value("apps", json::array())) {
    const std::string name = app.value("name", "");
    apps->push_back(name);
    for (const auto& cl : app.value("clusters", json::array())) {
      Row& row = rows[cl.value("clusterProvider", "") + "+" + cl.value("cluster", "")];
      // eco's marks win: a cluster whose report is older than the grace
      // (Stale: none of it counts Ready), or that the ready monitor or the
      // agent server has not heard from (its counts are what it last reported).
      const std::string conn = cl.value("stale", false)     ? "Stale"
                               : cl.contains("unreachable") ? "Unreachable"
                                                            : cl.value("connectivity", "");
      // A cluster retried by any app is shown as such; Stale is not undone.
      if (row.connectivity.empty() || (conn != "Available" && row.connectivity != "Stale"))
        row.connectivity = conn;
      if (cl.contains("lastSeen") && cl["lastSeen"].is_string()) row.last_seen = cl["lastSeen"];
      Cell& cell = row.apps[name];
      for (const auto& r : cl.value("resources", json::array())) {
        ++cell.total;
        const std::string st = r.value("readyStatus", "");
        if (st == "Ready") ++cell.ready;
        if (st == "NotPresent") ++cell.missing;
      }
    }
  }
  return rows;
}

// The summary of rows already read from `status`.
ReadySummary SummaryOf(const json& status, const std::map<std::string, Row>& rows) {
  ReadySummary s;
  s.deployed = status.value("deployedStatus", "");
  s.ready = status.value("readyStatus", "");
  for (const auto& [name, row] : rows) {
    ++s.clusters;
    bool all = row.connectivity == "Available";
    for (const auto& [app, cell] : row.apps) {
      s.resources += cell.total;
      s.ready_resources += cell.ready;
      all = all && cell.ready == cell.total;
    }
    if (all) ++s.ready_clusters;
  }
  return s;
}

}  // namespace

ReadySummary Summarize(const json& status) {
  std::vector<std::string> apps;
  return SummaryOf(status, Rows(status, &apps));
}

std::string FormatProgress(const ReadySummary& s) {
  std::ostringstream out;
  out << (s.deployed.empty() ? "not instantiated" : s.deployed) << ", " << s.ready_resources << " of "
      << s.resources << " resources ready on " << s.ready_clusters << " of " << s.clusters << " clusters";
  return out.str();
}

std::string FormatStatusTable(const json& status, bool colour) {
  std::vector<std::string> apps;
  const auto rows = Rows(status, &apps);
  const ReadySummary sum = SummaryOf(status, rows);
  std::ostringstream out;
  out << status.value("project", "") << "/" << status.value("compositeApp", "") << "/"
      << status.value("compositeAppVersion", "") << "/" << status.value("name", "") << ": "
      << FormatProgress(sum) << "\n";
  if (rows.empty()) return out.str();

  // The grid as text and colour: a row per cluster, a column per app.
  struct Text {
    std::string s;
    const char* colour = nullptr;
  };
  std::vector<std::vector<Text>> grid;
  // When each cluster was last heard from, once eco records it for some.
  const bool seen = std::any_of(rows.begin(), rows.end(),
                                [](const auto& r) { return !r.second.last_seen.empty(); });
  grid.push_back({{"CLUSTER"}, {"CONNECTIVITY"}});
  if (seen) grid[0].push_back({"LAST SEEN"});
  for (const auto& a : apps) grid[0].push_back({a});
  for (const auto& [name, row] : rows) {
    const bool available = row.connectivity == "Available";
    std::vector<Text> line = {{name}, {row.connectivity, available ? nullptr : kRed}};
    if (seen) line.push_back({row.last_seen.empty() ? "-" : row.last_seen});
    for (const auto& a : apps) {
      auto it = row.apps.find(a);
      if (it == row.apps.end()) {
        line.push_back({"-"});
        continue;
      }
      const Cell& c = it->second;
      const char* col = c.ready == c.total && available ? kGreen : (c.missing > 0 || !available) ? kRed : kYellow;
      line.push_back({std::to_string(c.ready) + "/" + std::to_string(c.total), col});
    }
    grid.push_back(std::move(line));
  }
  // More apps than clusters (a dozen charts on one cluster): a row per app
  // reads better than a table wider than the terminal.
  if (apps.size() > rows.size()) {
    std::vector<std::vector<Text>> t(grid[0].size(), std::vector<Text>(grid.size()));
    for (size_t r = 0; r < grid.size(); ++r) {
      for (size_t c = 0; c < grid[r].size(); ++c) t[c][r] = grid[r][c];
    }
    grid = std::move(t);
  }
  std::vector<size_t> width(grid[0].size(), 5);
  for (const auto& line : grid) {
    for (size_t c = 0; c < line.size(); ++c) width[c] = std::max(width[c], line[c].s.size());
  }
  out << "\n";
  for (const auto& line : grid) {
    std::string text;
    for (size_t c = 0; c < line.size(); ++c) {
      if (c > 0) text += "  ";
      std::string cell = Pad(line[c].s, width[c]);
      text += colour && line[c].colour ? std::string(line[c].colour) + cell + kReset : cell;
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << "\n";
  }
  // What applies left out (DIG spec.fieldValidation Warn): a chart's field
  // the cluster does not declare, often a typo, must not pass unseen.
  std::vector<std::string> warnings;
  for (const auto& app : status.value("apps", json::array())) {
    for (const auto& cl : app.value("clusters", json::array())) {
      for (const auto& r : cl.value("resources", json::array())) {
        for (const auto& w : r.value("warnings", json::array())) {
          if (!w.is_string()) continue;
          warnings.push_back(cl.value("clusterProvider", "") + "+" + cl.value("cluster", "") + "  " +
                             app.value("name", "") + "  " + r.value("GVK", json::object()).value("Kind", "") + " " +
                             r.value("name", "") + ": " + w.get<std::string>());
        }
      }
    }
  }
  if (!warnings.empty()) {
    out << "\n" << (colour ? std::string(kYellow) + "WARNINGS" + kReset : std::string("WARNINGS")) << "\n";
    for (const auto& w : warnings) out << w << "\n";
  }
  out << FormatRollout(status, colour);
  return out.str();
}

std::string FormatDrift(const json& status, bool colour) {
  std::vector<std::string> lines;
  for (const auto& app : status.value("apps", json::array())) {
    for (const auto& cl : app.value("clusters", json::array())) {
      for (const auto& r : cl.value("resources", json::array())) {
        if (r.value("deployedStatus", "") != "Drifted" || !r.contains("drift")) continue;
        const json& d = r["drift"];
        std::string what;
        if (d.value("deleted", false)) {
          what = "deleted";
        } else {
          for (const auto& f : d.value("fields", json::array())) {
            what += (what.empty() ? "" : "; ") + f.value("path", "") + " " + f.value("desired", json()).dump() +
                    " -> " + f.value("live", json()).dump();
            if (!f.value("manager", "").empty()) what += " (" + f.value("manager", "") + ")";
          }
        }
        lines.push_back(cl.value("clusterProvider", "") + "+" + cl.value("cluster", "") + "  " +
                        app.value("name", "") + "  " + r.value("GVK", json::object()).value("Kind", "") + " " +
                        r.value("name", "") + ": " + what);
      }
    }
  }
  if (lines.empty()) return "";
  std::string out = "\n" + (colour ? std::string(kRed) + "DRIFTED" + kReset : std::string("DRIFTED")) + "\n";
  for (const auto& l : lines) out += l + "\n";
  return out;
}

std::string FormatRollout(const json& status, bool colour) {
  auto it = status.find("rollout");
  if (it == status.end() || !it->is_object()) return "";
  const json& r = *it;
  const std::string state = r.value("state", "");
  const char* col = state == "Complete" || state == "RolledBack" ? kGreen
                    : state == "Progressing"                     ? nullptr
                    : state == "Failed"                          ? kRed
                                                                 : kYellow;
  std::ostringstream out;
  out << "\nROLLOUT  revision " << r.value("revision", int64_t{0}) << "  "
      << (colour && col ? std::string(col) + state + kReset : state);
  const json waves = r.value("waves", json::array());
  if (auto w = r.find("wave"); w != r.end() && w->is_object() && state != "Complete") {
    out << "  wave " << w->value("name", "") << " (" << w->value("index", 0) + 1 << " of " << waves.size() << ")";
  }
  out << "\n";
  if (!r.value("reason", "").empty()) out << "  " << r.value("reason", "") << "\n";
  auto table = [&out](const json& ws) {
    std::vector<std::vector<std::string>> rows = {
        {"WAVE", "CLUSTERS", "DONE", "FAILED", "PENDING", "SKIPPED", "STARTED", "COMPLETED"}};
    for (const auto& w : ws) {
      auto n = [&w](const char* k) { return std::to_string(w.value(k, int64_t{0})); };
      rows.push_back({w.value("name", ""), n("clusters"), n("done"), n("failed"), n("pending"), n("skipped"),
                      w.value("startedAt", "-"), w.value("completedAt", "-")});
    }
    std::vector<size_t> width(rows[0].size(), 0);
    for (const auto& row : rows) {
      for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
    }
    for (const auto& row : rows) {
      std::string line;
      for (size_t c = 0; c < row.size(); ++c) line += (c > 0 ? "  " : "") + Pad(row[c], width[c]);
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out << line << "\n";
    }
  };
  table(waves);
  if (auto rb = r.find("rollback"); rb != r.end() && rb->is_object()) {
    out << "\nROLLBACK to revision " << rb->value("revision", int64_t{0});
    if (!rb->value("state", "").empty()) out << "  " << rb->value("state", "");
    out << "\n";
    if (rb->contains("waves")) table((*rb)["waves"]);
  }
  return out.str();
}

Result<std::string> DigStatusPath(const std::string& spec) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : spec) {
    if (c == '/') {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  if (parts.size() != 4 || std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); })) {
    return Invalid("status wants PROJECT/COMPOSITEAPP/VERSION/DIG, got \"" + spec + "\"");
  }
  return "/v2/projects/" + parts[0] + "/composite-apps/" + parts[1] + "/" + parts[2] +
         "/deployment-intent-groups/" + parts[3] + "/status";
}

}  // namespace eco::ecoctl
