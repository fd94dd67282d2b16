#include "ecoctl/status.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <vector>

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
      const std::string conn = cl.value("connectivity", "");
      // A cluster retried by any app is shown as such.
      if (row.connectivity.empty() || conn != "Available") row.connectivity = conn;
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

const char* kGreen = "\033[32m";
const char* kYellow = "\033[33m";
const char* kRed = "\033[31m";
const char* kReset = "\033[0m";

std::string Pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
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

  size_t w_cluster = std::string("CLUSTER").size(), w_conn = std::string("CONNECTIVITY").size();
  for (const auto& [name, row] : rows) {
    w_cluster = std::max(w_cluster, name.size());
    w_conn = std::max(w_conn, row.connectivity.size());
  }
  std::vector<size_t> w_app;
  for (const auto& a : apps) w_app.push_back(std::max<size_t>(a.size(), 5));

  std::string header = Pad("CLUSTER", w_cluster) + "  " + Pad("CONNECTIVITY", w_conn);
  for (size_t i = 0; i < apps.size(); ++i) header += "  " + Pad(apps[i], w_app[i]);
  while (!header.empty() && header.back() == ' ') header.pop_back();
  out << "\n" << header << "\n";
  for (const auto& [name, row] : rows) {
    const bool available = row.connectivity == "Available";
    std::string line = Pad(name, w_cluster) + "  ";
    line += colour && !available ? std::string(kRed) + Pad(row.connectivity, w_conn) + kReset
                                 : Pad(row.connectivity, w_conn);
    for (size_t i = 0; i < apps.size(); ++i) {
      auto it = row.apps.find(apps[i]);
      std::string text = it == row.apps.end()
                             ? "-"
                             : std::to_string(it->second.ready) + "/" + std::to_string(it->second.total);
      std::string cell = Pad(text, w_app[i]);
      if (colour && it != row.apps.end()) {
        const Cell& c = it->second;
        const char* col = c.ready == c.total && available ? kGreen : (c.missing > 0 || !available) ? kRed : kYellow;
        cell = std::string(col) + cell + kReset;
      }
      line += "  " + cell;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
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
