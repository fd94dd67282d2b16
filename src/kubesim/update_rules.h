// The part of the API server's update validation kube-sim applies: fields
// that may not change once set (a Deployment's selector, a Job's template, a
// Service's clusterIP, most of a StatefulSet's spec, an immutable ConfigMap's
// data, a RoleBinding's roleRef, ...), with the API server's messages.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace eco::kubesim {

using Json = nlohmann::json;

// One entry of an Invalid Status's details.causes.
struct FieldError {
  std::string reason;  // "FieldValueInvalid", "FieldValueForbidden"
  std::string field;   // "spec.selector"
  std::string body;    // "Invalid value: ...: field is immutable"
};

// What the API server fills into an update before validating it: a Service
// keeps the clusterIP(s) the client left out, and clusterIPs follows a
// changed clusterIP. Other kinds: nothing.
void PrepareUpdate(const std::string& group, const std::string& kind, const Json& old_obj,
                   Json& new_obj);

// The errors of updating old_obj to new_obj; empty when the update is allowed.
std::vector<FieldError> ValidateUpdate(const std::string& group, const std::string& kind,
                                       const Json& old_obj, const Json& new_obj);

// The Status message of an Invalid error: `Deployment.apps "web" is invalid: ...`
// (one error as is, several as [a, b]).
std::string InvalidMessage(const std::string& qualified_kind, const std::string& name,
                           const std::vector<FieldError>& errors);

// Go's fmt %#v of a few Kubernetes values, as the API server prints a bad value.
std::string GoQuote(const std::string& s);                // strconv.Quote
std::string GoLabelSelector(const Json& selector);        // v1.LabelSelector{...}
std::string GoPodTemplateSpec(const Json& pod_template);  // core.PodTemplateSpec{...}, defaulted

}  // namespace eco::kubesim
