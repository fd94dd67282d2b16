// Errors are values in eco: every fallible call across a component boundary
// returns a Status or a Result<T>; exceptions never cross that boundary.
#pragma once

#include <cassert>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace eco {

// A handful of codes a caller can act on; the detail goes in the message.
enum class Code {
  kOk = 0,
  kNotFound,       // the thing (or its parent) does not exist
  kAlreadyExists,  // create of something that exists
  kConflict,       // compare-and-swap lost, still referenced, wrong state
  kInvalid,        // malformed or semantically invalid input
  kTooLarge,       // input over a configured limit
  kUnavailable,    // transient: retry may succeed (network, store down)
  kPermissionDenied,  // not authenticated or not authorised: fix credentials, do not retry
  kInternal,       // a bug or an unexpected failure
  // Transient, but the peer answered: it is in a state that passes (a
  // namespace being deleted, a kind not served yet). Wait and try again;
  // not an outage.
  kWaiting,
};

std::string_view CodeName(Code c);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // Retryable vs permanent is decided here and nowhere else. kWaiting is
  // neither: the caller waits (bounded) without treating it as an outage.
  bool retryable() const { return code_ == Code::kUnavailable; }
  bool waiting() const { return code_ == Code::kWaiting; }
  std::string ToString() const;

  // Adds context in front of the message, keeping the code.
  Status Annotate(std::string_view context) const;

  // A server's hint (HTTP Retry-After) for when a retryable error may clear.
  std::chrono::milliseconds retry_after() const { return retry_after_; }
  Status& set_retry_after(std::chrono::milliseconds d) {
    retry_after_ = d;
    return *this;
  }

 private:
  Code code_ = Code::kOk;
  std::string message_;
  std::chrono::milliseconds retry_after_{0};
};

inline Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
inline Status AlreadyExists(std::string m) { return {Code::kAlreadyExists, std::move(m)}; }
inline Status Conflict(std::string m) { return {Code::kConflict, std::move(m)}; }
inline Status Invalid(std::string m) { return {Code::kInvalid, std::move(m)}; }
inline Status TooLarge(std::string m) { return {Code::kTooLarge, std::move(m)}; }
inline Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
inline Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }
inline Status PermissionDenied(std::string m) { return {Code::kPermissionDenied, std::move(m)}; }
inline Status Waiting(std::string m) { return {Code::kWaiting, std::move(m)}; }

// Either a value or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace eco

// Returns early from the enclosing function when `expr` yields a non-ok Status.
#define ECO_RETURN_IF_ERROR(expr)          \
  do {                                     \
    ::eco::Status eco_status_ = (expr);    \
    if (!eco_status_.ok()) return eco_status_; \
  } while (0)

// `ECO_ASSIGN_OR_RETURN(auto x, F());` declares x from F()'s value, or
// returns F()'s error from the enclosing function (which may return Status
// or any Result<U>).
#define ECO_ASSIGN_OR_RETURN(lhs, expr) ECO_ASSIGN_OR_RETURN_(ECO_STATUS_CAT(eco_result_, __LINE__), lhs, expr)
#define ECO_ASSIGN_OR_RETURN_(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()
#define ECO_STATUS_CAT(a, b) ECO_STATUS_CAT_(a, b)
#define ECO_STATUS_CAT_(a, b) a##b
