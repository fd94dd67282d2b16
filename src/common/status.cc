#include "common/status.h"

namespace eco {

std::string_view CodeName(Code c) {
  switch (c) {
    case Code::kOk: return "OK";
    case Code::kNotFound: return "NotFound";
    case Code::kAlreadyExists: return "AlreadyExists";
    case Code::kConflict: return "Conflict";
    case Code::kInvalid: return "Invalid";
    case Code::kTooLarge: return "TooLarge";
    case Code::kUnavailable: return "Unavailable";
    case Code::kInternal: return "Internal";
    case Code::kPermissionDenied: return "PermissionDenied";
    case Code::kWaiting: return "Waiting";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(CodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

Status Status::Annotate(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  Status out(code_, std::move(m));
  out.retry_after_ = retry_after_;
  return out;
}

}  // namespace eco
