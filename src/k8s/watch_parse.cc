// Watch events from the wire: ParseWatchLine, LineSplitter and
// ResourceVersionTracker (watch.h), apart from the hub that uses them.
#include <string>

#include "k8s/errors.h"
#include "k8s/paths.h"
#include "k8s/watch.h"

namespace eco::k8s {

using nlohmann::json;

std::string_view WatchEventTypeName(WatchEventType t) {
  switch (t) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
    case WatchEventType::kResync:
      return "RESYNC";
    case WatchEventType::kError:
      return "ERROR";
    case WatchEventType::kConnected:
      return "CONNECTED";
  }
  return "UNKNOWN";
}

Result<WatchEvent> ParseWatchLine(std::string_view line, bool slim) {
  json doc = slim ? ParseSlim(line, 2)
                  : json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return Invalid("watch stream: a line is not a JSON object");
  auto type_it = doc.find("type");
  auto obj_it = doc.find("object");
  if (type_it == doc.end() || !type_it->is_string() || obj_it == doc.end() ||
      !obj_it->is_object()) {
    return Invalid("watch stream: an event needs a type and an object");
  }
  const std::string& type = type_it->get_ref<const std::string&>();
  WatchEvent e;
  if (type == "ERROR") {
    e.type = WatchEventType::kError;
    long code = obj_it->value("code", 500L);
    e.error = StatusFromHttp(code, obj_it->dump(), "").Annotate("watch");
    e.expired = code == 410;
    return e;
  }
  if (type == "ADDED") {
    e.type = WatchEventType::kAdded;
  } else if (type == "MODIFIED") {
    e.type = WatchEventType::kModified;
  } else if (type == "DELETED") {
    e.type = WatchEventType::kDeleted;
  } else if (type == "BOOKMARK") {
    e.type = WatchEventType::kBookmark;
  } else {
    return Invalid("watch stream: unknown event type \"" + type + "\"");
  }
  e.object = std::move(*obj_it);
  if (auto m = e.object.find("metadata"); m != e.object.end() && m->is_object()) {
    e.resource_version = m->value("resourceVersion", "");
  }
  return e;
}

void LineSplitter::Feed(std::string_view bytes,
                        const std::function<void(std::string_view)>& on_line) {
  auto emit = [&on_line](std::string_view l) {
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (!l.empty()) on_line(l);
  };
  size_t start = 0;
  if (!partial_.empty()) {
    size_t nl = bytes.find('\n');
    if (nl == std::string_view::npos) {
      partial_.append(bytes);
      return;
    }
    partial_.append(bytes.substr(0, nl));
    std::string line = std::move(partial_);
    partial_.clear();
    emit(line);
    start = nl + 1;
  }
  while (start < bytes.size()) {
    size_t nl = bytes.find('\n', start);
    if (nl == std::string_view::npos) {
      partial_.assign(bytes.substr(start));
      return;
    }
    emit(bytes.substr(start, nl - start));
    start = nl + 1;
  }
}

void ResourceVersionTracker::Observe(const WatchEvent& e) {
  if (e.type == WatchEventType::kError || e.resource_version.empty()) return;
  rv_ = e.resource_version;
}

}  // namespace eco::k8s
