#include "kubesim/update_rules.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

namespace eco::kubesim {

namespace {

const Json& At(const Json& o, const char* key) {
  static const Json kNull;
  if (!o.is_object()) return kNull;
  auto it = o.find(key);
  return it == o.end() ? kNull : *it;
}

std::string StringOrEmpty(const Json& v) { return v.is_string() ? v.get<std::string>() : std::string(); }

// What the API server's semantic equality cannot tell apart: a missing
// field, null, "", an empty list and an empty map (Go's zero values, and
// nil slices equal empty ones).
bool Empty(const Json& v) {
  return v.is_null() || (v.is_string() && v.get_ref<const std::string&>().empty()) ||
         ((v.is_object() || v.is_array()) && v.empty());
}

Json Normalized(const Json& v) {
  if (v.is_object()) {
    Json o = Json::object();
    for (const auto& [k, e] : v.items()) {
      Json n = Normalized(e);
      if (!Empty(n)) o[k] = std::move(n);
    }
    return o;
  }
  if (v.is_array()) {
    Json a = Json::array();
    for (const auto& e : v) a.push_back(Normalized(e));
    return a;
  }
  return v;
}

bool SemanticEqual(const Json& a, const Json& b) {
  Json na = Normalized(a), nb = Normalized(b);
  if (Empty(na) && Empty(nb)) return true;
  return na == nb;
}

// ---------------------------------------------------------------------------
// Go's %#v

std::string GoStringSlice(const Json& v) {
  if (!v.is_array()) return "[]string(nil)";
  std::string s = "[]string{";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += GoQuote(v[i].is_string() ? v[i].get<std::string>() : v[i].dump());
  }
  return s + "}";
}

std::string GoStringMap(const Json& v, const std::string& type = "map[string]string") {
  if (!v.is_object()) return type + "(nil)";
  std::string s = type + "{";
  bool first = true;
  for (const auto& [k, e] : v.items()) {  // sorted, as fmt prints maps
    if (!first) s += ", ";
    first = false;
    s += GoQuote(k) + ":" + GoQuote(e.is_string() ? e.get<std::string>() : e.dump());
  }
  return s + "}";
}

// Where nested pointers are printed, Go shows an address; any will do.
struct Printer {
  uint64_t next = 0xc000a10000;
  std::string Pointer(const std::string& type, const Json& v) {
    if (v.is_null()) return "(*" + type + ")(nil)";
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(next));
    next += 0x30;
    return "(*" + type + ")(" + buf + ")";
  }
};

// resource.Quantity as ParseQuantity leaves it (the int64 fast path).
std::string GoQuantity(const Json& v) {
  std::string text = v.is_string() ? v.get<std::string>() : v.dump();
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  std::string num, denom;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) num += text[i++];
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) denom += text[i++];
  }
  std::string suffix = text.substr(i);
  static const std::map<std::string, int> kDecimal = {{"", 0},   {"m", -3}, {"k", 3},  {"M", 6},
                                                      {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18},
                                                      {"n", -9}, {"u", -6}};
  static const std::map<std::string, int> kBinary = {{"Ki", 10}, {"Mi", 20}, {"Gi", 30},
                                                     {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};
  std::string format = "DecimalSI";
  int exponent = 0;
  if (auto d = kDecimal.find(suffix); d != kDecimal.end()) {
    exponent = d->second;
  } else if (auto b = kBinary.find(suffix); b != kBinary.end()) {
    format = "BinarySI";
    exponent = b->second;
  } else if (!suffix.empty() && (suffix[0] == 'e' || suffix[0] == 'E')) {
    format = "DecimalExponent";
    exponent = std::atoi(suffix.c_str() + 1);
  }
  long long value = 0, scale = 0;
  bool canonical = false;
  std::string shifted = num + denom;
  if (format == "BinarySI") {
    value = std::atoll(num.c_str()) << exponent;
    canonical = exponent % 10 == 0 && (std::atoll(num.c_str()) & 0x07) != 0 && denom.empty();
  } else {
    scale = exponent - static_cast<long long>(denom.size());
    value = std::atoll(shifted.c_str());
    canonical = scale % 3 == 0 &&
                !(shifted.size() >= 3 && shifted.compare(shifted.size() - 3, 3, "000") == 0) &&
                !shifted.empty() && shifted[0] != '0';
  }
  if (negative) value = -value;
  return "resource.Quantity{i:resource.int64Amount{value:" + std::to_string(value) +
         ", scale:" + std::to_string(scale) +
         "}, d:resource.infDec{Dec:(*inf.Dec)(nil)}, s:" + GoQuote(canonical ? text : "") +
         ", Format:\"" + format + "\"}";
}

std::string GoResourceList(const Json& v) {
  if (!v.is_object()) return "core.ResourceList(nil)";
  std::string s = "core.ResourceList{";
  bool first = true;
  for (const auto& [k, q] : v.items()) {
    if (!first) s += ", ";
    first = false;
    s += GoQuote(k) + ":" + GoQuantity(q);
  }
  return s + "}";
}

// A struct of the API's internal types, field by field in declaration order.
struct GoStruct;
struct GoField {
  enum Kind {
    kString,
    kInt,
    kBool,
    kPtr,
    kStrings,
    kStrMap,
    kList,
    kStruct,
    kResources,
    kTime,
    kTimePtr,
    kVolumes
  };
  const char* go;
  const char* json;
  Kind kind;
  const char* type = "";          // pointee (kPtr) or element (kList) Go type
  const GoStruct* sub = nullptr;  // kList / kStruct
};
struct GoStruct {
  const char* type;
  std::vector<GoField> fields;
};

std::string Render(Printer& p, const GoStruct& s, const Json& obj);
std::string RenderVolume(Printer& p, const Json& v);

std::string RenderGeneric(const std::string& type, const Json& obj) {
  // A type without a table: its set fields, named as Go would name them.
  std::string s = type + "{";
  bool first = true;
  if (obj.is_object()) {
    for (const auto& [k, v] : obj.items()) {
      if (!first) s += ", ";
      first = false;
      std::string name = k;
      if (!name.empty())
        name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));
      s += name + ":" + (v.is_string() ? GoQuote(v.get<std::string>()) : v.dump());
    }
  }
  return s + "}";
}

std::string RenderField(Printer& p, const GoField& f, const Json& v) {
  switch (f.kind) {
    case GoField::kString:
      return GoQuote(StringOrEmpty(v));
    case GoField::kInt:
      return v.is_number() ? v.dump() : "0";
    case GoField::kBool:
      return v.is_boolean() && v.get<bool>() ? "true" : "false";
    case GoField::kPtr:
      return p.Pointer(f.type, v);
    case GoField::kStrings:
      return GoStringSlice(v);
    case GoField::kStrMap:
      return GoStringMap(v);
    case GoField::kResources:
      return GoResourceList(v);
    case GoField::kTime:
      return "time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC)";
    case GoField::kTimePtr:
      return "<nil>";
    case GoField::kStruct:
      return Render(p, *f.sub, v.is_object() ? v : Json::object());
    case GoField::kVolumes: {
      if (!v.is_array()) return "[]core.Volume(nil)";
      std::string s = "[]core.Volume{";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + RenderVolume(p, v[i]);
      return s + "}";
    }
    case GoField::kList: {
      if (!v.is_array()) return std::string("[]") + f.type + "(nil)";
      std::string s = std::string("[]") + f.type + "{";
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) s += ", ";
        s += f.sub ? Render(p, *f.sub, v[i]) : RenderGeneric(f.type, v[i]);
      }
      return s + "}";
    }
  }
  return "";
}

std::string Render(Printer& p, const GoStruct& s, const Json& obj) {
  std::string out = std::string(s.type) + "{";
  for (size_t i = 0; i < s.fields.size(); ++i) {
    if (i) out += ", ";
    const GoField& f = s.fields[i];
    out += std::string(f.go) + ":" + RenderField(p, f, At(obj, f.json));
  }
  return out + "}";
}

using K = GoField::Kind;

const GoStruct kObjectMeta{
    "v1.ObjectMeta",
    {{"Name", "name", K::kString},
     {"GenerateName", "generateName", K::kString},
     {"Namespace", "namespace", K::kString},
     {"SelfLink", "selfLink", K::kString},
     {"UID", "uid", K::kString},
     {"ResourceVersion", "resourceVersion", K::kString},
     {"Generation", "generation", K::kInt},
     {"CreationTimestamp", "creationTimestamp", K::kTime},
     {"DeletionTimestamp", "deletionTimestamp", K::kTimePtr},
     {"DeletionGracePeriodSeconds", "deletionGracePeriodSeconds", K::kPtr, "int64"},
     {"Labels", "labels", K::kStrMap},
     {"Annotations", "annotations", K::kStrMap},
     {"OwnerReferences", "ownerReferences", K::kList, "v1.OwnerReference"},
     {"Finalizers", "finalizers", K::kStrings},
     {"ManagedFields", "managedFields", K::kList, "v1.ManagedFieldsEntry"}}};

const GoStruct kContainerPort{"core.ContainerPort",
                              {{"Name", "name", K::kString},
                               {"HostPort", "hostPort", K::kInt},
                               {"ContainerPort", "containerPort", K::kInt},
                               {"Protocol", "protocol", K::kString},
                               {"HostIP", "hostIP", K::kString}}};
const GoStruct kEnvFromSource{"core.EnvFromSource",
                              {{"Prefix", "prefix", K::kString},
                               {"ConfigMapRef", "configMapRef", K::kPtr, "core.ConfigMapEnvSource"},
                               {"SecretRef", "secretRef", K::kPtr, "core.SecretEnvSource"}}};
const GoStruct kEnvVar{"core.EnvVar",
                       {{"Name", "name", K::kString},
                        {"Value", "value", K::kString},
                        {"ValueFrom", "valueFrom", K::kPtr, "core.EnvVarSource"}}};
const GoStruct kResourceClaim{"core.ResourceClaim", {{"Name", "name", K::kString}}};
const GoStruct kResourceRequirements{
    "core.ResourceRequirements",
    {{"Limits", "limits", K::kResources},
     {"Requests", "requests", K::kResources},
     {"Claims", "claims", K::kList, "core.ResourceClaim", &kResourceClaim}}};
const GoStruct kVolumeMount{
    "core.VolumeMount",
    {{"Name", "name", K::kString},
     {"ReadOnly", "readOnly", K::kBool},
     {"MountPath", "mountPath", K::kString},
     {"SubPath", "subPath", K::kString},
     {"MountPropagation", "mountPropagation", K::kPtr, "core.MountPropagationMode"},
     {"SubPathExpr", "subPathExpr", K::kString}}};
const GoStruct kVolumeDevice{
    "core.VolumeDevice", {{"Name", "name", K::kString}, {"DevicePath", "devicePath", K::kString}}};
const GoStruct kContainer{
    "core.Container",
    {{"Name", "name", K::kString},
     {"Image", "image", K::kString},
     {"Command", "command", K::kStrings},
     {"Args", "args", K::kStrings},
     {"WorkingDir", "workingDir", K::kString},
     {"Ports", "ports", K::kList, "core.ContainerPort", &kContainerPort},
     {"EnvFrom", "envFrom", K::kList, "core.EnvFromSource", &kEnvFromSource},
     {"Env", "env", K::kList, "core.EnvVar", &kEnvVar},
     {"Resources", "resources", K::kStruct, "", &kResourceRequirements},
     {"VolumeMounts", "volumeMounts", K::kList, "core.VolumeMount", &kVolumeMount},
     {"VolumeDevices", "volumeDevices", K::kList, "core.VolumeDevice", &kVolumeDevice},
     {"LivenessProbe", "livenessProbe", K::kPtr, "core.Probe"},
     {"ReadinessProbe", "readinessProbe", K::kPtr, "core.Probe"},
     {"StartupProbe", "startupProbe", K::kPtr, "core.Probe"},
     {"Lifecycle", "lifecycle", K::kPtr, "core.Lifecycle"},
     {"TerminationMessagePath", "terminationMessagePath", K::kString},
     {"TerminationMessagePolicy", "terminationMessagePolicy", K::kString},
     {"ImagePullPolicy", "imagePullPolicy", K::kString},
     {"SecurityContext", "securityContext", K::kPtr, "core.SecurityContext"},
     {"Stdin", "stdin", K::kBool},
     {"StdinOnce", "stdinOnce", K::kBool},
     {"TTY", "tty", K::kBool}}};
const GoStruct kVolumeSource{
    "core.VolumeSource",
    {{"HostPath", "hostPath", K::kPtr, "core.HostPathVolumeSource"},
     {"EmptyDir", "emptyDir", K::kPtr, "core.EmptyDirVolumeSource"},
     {"GCEPersistentDisk", "gcePersistentDisk", K::kPtr, "core.GCEPersistentDiskVolumeSource"},
     {"AWSElasticBlockStore", "awsElasticBlockStore", K::kPtr,
      "core.AWSElasticBlockStoreVolumeSource"},
     {"GitRepo", "gitRepo", K::kPtr, "core.GitRepoVolumeSource"},
     {"Secret", "secret", K::kPtr, "core.SecretVolumeSource"},
     {"NFS", "nfs", K::kPtr, "core.NFSVolumeSource"},
     {"ISCSI", "iscsi", K::kPtr, "core.ISCSIVolumeSource"},
     {"Glusterfs", "glusterfs", K::kPtr, "core.GlusterfsVolumeSource"},
     {"PersistentVolumeClaim", "persistentVolumeClaim", K::kPtr,
      "core.PersistentVolumeClaimVolumeSource"},
     {"RBD", "rbd", K::kPtr, "core.RBDVolumeSource"},
     {"Quobyte", "quobyte", K::kPtr, "core.QuobyteVolumeSource"},
     {"FlexVolume", "flexVolume", K::kPtr, "core.FlexVolumeSource"},
     {"Cinder", "cinder", K::kPtr, "core.CinderVolumeSource"},
     {"CephFS", "cephfs", K::kPtr, "core.CephFSVolumeSource"},
     {"Flocker", "flocker", K::kPtr, "core.FlockerVolumeSource"},
     {"DownwardAPI", "downwardAPI", K::kPtr, "core.DownwardAPIVolumeSource"},
     {"FC", "fc", K::kPtr, "core.FCVolumeSource"},
     {"AzureFile", "azureFile", K::kPtr, "core.AzureFileVolumeSource"},
     {"ConfigMap", "configMap", K::kPtr, "core.ConfigMapVolumeSource"},
     {"VsphereVolume", "vsphereVolume", K::kPtr, "core.VsphereVirtualDiskVolumeSource"},
     {"AzureDisk", "azureDisk", K::kPtr, "core.AzureDiskVolumeSource"},
     {"PhotonPersistentDisk", "photonPersistentDisk", K::kPtr,
      "core.PhotonPersistentDiskVolumeSource"},
     {"Projected", "projected", K::kPtr, "core.ProjectedVolumeSource"},
     {"PortworxVolume", "portworxVolume", K::kPtr, "core.PortworxVolumeSource"},
     {"ScaleIO", "scaleIO", K::kPtr, "core.ScaleIOVolumeSource"},
     {"StorageOS", "storageos", K::kPtr, "core.StorageOSVolumeSource"},
     {"CSI", "csi", K::kPtr, "core.CSIVolumeSource"},
     {"Ephemeral", "ephemeral", K::kPtr, "core.EphemeralVolumeSource"}}};
const GoStruct kLocalObjectReference{"core.LocalObjectReference", {{"Name", "name", K::kString}}};
const GoStruct kToleration{"core.Toleration",
                           {{"Key", "key", K::kString},
                            {"Operator", "operator", K::kString},
                            {"Value", "value", K::kString},
                            {"Effect", "effect", K::kString},
                            {"TolerationSeconds", "tolerationSeconds", K::kPtr, "int64"}}};
const GoStruct kHostAlias{"core.HostAlias",
                          {{"IP", "ip", K::kString}, {"Hostnames", "hostnames", K::kStrings}}};
const GoStruct kReadinessGate{"core.PodReadinessGate",
                              {{"ConditionType", "conditionType", K::kString}}};
const GoStruct kPodSpec{
    "core.PodSpec",
    {{"Volumes", "volumes", K::kVolumes},
     {"InitContainers", "initContainers", K::kList, "core.Container", &kContainer},
     {"Containers", "containers", K::kList, "core.Container", &kContainer},
     {"EphemeralContainers", "ephemeralContainers", K::kList, "core.EphemeralContainer"},
     {"RestartPolicy", "restartPolicy", K::kString},
     {"TerminationGracePeriodSeconds", "terminationGracePeriodSeconds", K::kPtr, "int64"},
     {"ActiveDeadlineSeconds", "activeDeadlineSeconds", K::kPtr, "int64"},
     {"DNSPolicy", "dnsPolicy", K::kString},
     {"NodeSelector", "nodeSelector", K::kStrMap},
     {"ServiceAccountName", "serviceAccountName", K::kString},
     {"AutomountServiceAccountToken", "automountServiceAccountToken", K::kPtr, "bool"},
     {"NodeName", "nodeName", K::kString},
     {"SecurityContext", "securityContext", K::kPtr, "core.PodSecurityContext"},
     {"ImagePullSecrets", "imagePullSecrets", K::kList, "core.LocalObjectReference",
      &kLocalObjectReference},
     {"Hostname", "hostname", K::kString},
     {"Subdomain", "subdomain", K::kString},
     {"SetHostnameAsFQDN", "setHostnameAsFQDN", K::kPtr, "bool"},
     {"Affinity", "affinity", K::kPtr, "core.Affinity"},
     {"SchedulerName", "schedulerName", K::kString},
     {"Tolerations", "tolerations", K::kList, "core.Toleration", &kToleration},
     {"HostAliases", "hostAliases", K::kList, "core.HostAlias", &kHostAlias},
     {"PriorityClassName", "priorityClassName", K::kString},
     {"Priority", "priority", K::kPtr, "int32"},
     {"PreemptionPolicy", "preemptionPolicy", K::kPtr, "core.PreemptionPolicy"},
     {"DNSConfig", "dnsConfig", K::kPtr, "core.PodDNSConfig"},
     {"ReadinessGates", "readinessGates", K::kList, "core.PodReadinessGate", &kReadinessGate},
     {"RuntimeClassName", "runtimeClassName", K::kPtr, "string"},
     {"Overhead", "overhead", K::kResources},
     {"EnableServiceLinks", "enableServiceLinks", K::kPtr, "bool"},
     {"TopologySpreadConstraints", "topologySpreadConstraints", K::kList,
      "core.TopologySpreadConstraint"},
     {"OS", "os", K::kPtr, "core.PodOS"},
     {"SchedulingGates", "schedulingGates", K::kList, "core.PodSchedulingGate"},
     {"ResourceClaims", "resourceClaims", K::kList, "core.PodResourceClaim"}}};

// Volume embeds VolumeSource: its fields sit next to name in JSON.
std::string RenderVolume(Printer& p, const Json& v) {
  return "core.Volume{Name:" + GoQuote(StringOrEmpty(At(v, "name"))) +
         ", VolumeSource:" + Render(p, kVolumeSource, v) + "}";
}

// The defaults the API server gives a pod template, so that the value
// printed is the one it would print.
Json DefaultedPodTemplate(const Json& tmpl) {
  Json t = tmpl.is_object() ? tmpl : Json::object();
  Json& spec = t["spec"];
  if (!spec.is_object()) spec = Json::object();
  auto dflt = [](Json& o, const char* k, Json v) {
    if (!o.contains(k) || o[k].is_null()) o[k] = std::move(v);
  };
  dflt(spec, "restartPolicy", "Always");
  dflt(spec, "terminationGracePeriodSeconds", 30);
  dflt(spec, "dnsPolicy", "ClusterFirst");
  dflt(spec, "securityContext", Json::object());
  dflt(spec, "schedulerName", "default-scheduler");
  for (const char* list : {"containers", "initContainers"}) {
    if (!spec.contains(list) || !spec[list].is_array()) continue;
    for (Json& c : spec[list]) {
      if (!c.is_object()) continue;
      dflt(c, "terminationMessagePath", "/dev/termination-log");
      dflt(c, "terminationMessagePolicy", "File");
      std::string image = StringOrEmpty(At(c, "image"));
      size_t slash = image.rfind('/');
      std::string last = image.substr(slash == std::string::npos ? 0 : slash + 1);
      size_t colon = last.find(':');
      bool latest = image.find('@') == std::string::npos &&
                    (colon == std::string::npos || last.substr(colon + 1) == "latest");
      dflt(c, "imagePullPolicy", latest ? "Always" : "IfNotPresent");
      if (c.contains("ports") && c["ports"].is_array()) {
        for (Json& port : c["ports"]) {
          if (port.is_object()) dflt(port, "protocol", "TCP");
        }
      }
    }
  }
  return t;
}

// ---------------------------------------------------------------------------
// The rules

FieldError Immutable(const std::string& field, const std::string& value) {
  return FieldError{"FieldValueInvalid", field, "Invalid value: " + value + ": field is immutable"};
}

// A *int32 field as the API server prints it: the number, or "null".
std::string GoIntPointer(const Json& v) { return v.is_number() ? v.dump() : "\"null\""; }

std::string GoSelectorPointer(const Json& v) {
  return v.is_object() ? GoLabelSelector(v) : "\"null\"";
}

std::string ServiceType(const Json& svc) {
  std::string t = StringOrEmpty(At(At(svc, "spec"), "type"));
  return t.empty() ? "ClusterIP" : t;
}

Json ClusterIPs(const Json& svc) {
  const Json& ips = At(At(svc, "spec"), "clusterIPs");
  return ips.is_array() ? ips : Json::array();
}

void ValidateServiceUpdate(const Json& old_obj, const Json& new_obj,
                           std::vector<FieldError>& errs) {
  if (ServiceType(old_obj) == "ExternalName" || ServiceType(new_obj) == "ExternalName") return;
  auto headless = [](const Json& svc) { return StringOrEmpty(At(At(svc, "spec"), "clusterIP")) == "None"; };
  if (headless(old_obj) && headless(new_obj)) return;
  Json old_ips = ClusterIPs(old_obj), new_ips = ClusterIPs(new_obj);
  std::string value = GoStringSlice(At(At(new_obj, "spec"), "clusterIPs"));
  auto invalid = [&](size_t i, const std::string& detail) {
    errs.push_back(FieldError{"FieldValueInvalid", "spec.clusterIPs[" + std::to_string(i) + "]",
                              "Invalid value: " + value + ": " + detail});
  };
  if (old_ips.size() == new_ips.size()) {
    for (size_t i = 0; i < old_ips.size(); ++i) {
      if (old_ips[i] != new_ips[i]) invalid(i, "may not change once set");
    }
  } else if (old_ips.size() > new_ips.size()) {
    if (new_ips.empty()) invalid(0, "primary clusterIP can not be unset");
    if (!new_ips.empty() && new_ips[0] != old_ips[0]) invalid(0, "may not change once set");
    if (new_ips.size() == 1 && StringOrEmpty(At(At(new_obj, "spec"), "ipFamilyPolicy")) != "SingleStack") {
      invalid(
          0,
          "`ipFamilyPolicy` must be set to 'SingleStack' when releasing the secondary clusterIP");
    }
  } else if (!old_ips.empty() && new_ips[0] != old_ips[0]) {
    invalid(0, "may not change once set");
  }
}

// A StatefulSet's spec as compared for forbidden updates: without the
// fields that may change, and with the defaults the API server fills in.
Json StatefulSetFixedSpec(const Json& sts) {
  Json spec = At(sts, "spec");
  if (!spec.is_object()) return Json::object();
  for (const char* k : {"replicas", "template", "updateStrategy", "minReadySeconds", "ordinals",
                        "persistentVolumeClaimRetentionPolicy"}) {
    spec.erase(k);
  }
  if (StringOrEmpty(At(spec, "podManagementPolicy")) == "OrderedReady") spec.erase("podManagementPolicy");
  if (At(spec, "revisionHistoryLimit") == Json(10)) spec.erase("revisionHistoryLimit");
  if (spec.contains("volumeClaimTemplates") && spec["volumeClaimTemplates"].is_array()) {
    for (Json& pvc : spec["volumeClaimTemplates"]) {
      if (!pvc.is_object()) continue;
      pvc.erase("status");
      pvc.erase("apiVersion");
      pvc.erase("kind");
      if (pvc.contains("metadata") && pvc["metadata"].is_object())
        pvc["metadata"].erase("creationTimestamp");
      if (pvc.contains("spec") && pvc["spec"].is_object() &&
          StringOrEmpty(At(pvc["spec"], "volumeMode")) == "Filesystem") {
        pvc["spec"].erase("volumeMode");
      }
    }
  }
  return spec;
}

// A Job's completions after defaulting (both unset: 1).
Json JobCompletions(const Json& job) {
  const Json& spec = At(job, "spec");
  if (At(spec, "completions").is_null() && At(spec, "parallelism").is_null()) return 1;
  return At(spec, "completions");
}

}  // namespace

std::string GoQuote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\v':
        out += "\\v";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string GoLabelSelector(const Json& selector) {
  std::string s = "v1.LabelSelector{MatchLabels:" + GoStringMap(At(selector, "matchLabels")) +
                  ", MatchExpressions:";
  const Json& exprs = At(selector, "matchExpressions");
  if (!exprs.is_array()) return s + "[]v1.LabelSelectorRequirement(nil)}";
  s += "[]v1.LabelSelectorRequirement{";
  for (size_t i = 0; i < exprs.size(); ++i) {
    if (i) s += ", ";
    s += "v1.LabelSelectorRequirement{Key:" + GoQuote(StringOrEmpty(At(exprs[i], "key"))) +
         ", Operator:" + GoQuote(StringOrEmpty(At(exprs[i], "operator"))) +
         ", Values:" + GoStringSlice(At(exprs[i], "values")) + "}";
  }
  return s + "}}";
}

std::string GoPodTemplateSpec(const Json& pod_template) {
  Json t = DefaultedPodTemplate(pod_template);
  Printer p;
  std::string meta = Render(p, kObjectMeta, At(t, "metadata"));
  std::string spec = Render(p, kPodSpec, t["spec"]);
  return "core.PodTemplateSpec{ObjectMeta:" + meta + ", Spec:" + spec + "}";
}

std::string InvalidMessage(const std::string& qualified_kind, const std::string& name,
                           const std::vector<FieldError>& errors) {
  std::string msg = qualified_kind + " " + GoQuote(name) + " is invalid";
  if (errors.empty()) return msg;
  // An aggregate prints each distinct error once; several go in brackets.
  std::vector<std::string> texts;
  std::set<std::string> seen;
  for (const auto& e : errors) {
    std::string text = e.field + ": " + e.body;
    if (seen.insert(text).second) texts.push_back(text);
  }
  msg += ": ";
  if (texts.size() == 1) return msg + texts[0];
  msg += "[";
  for (size_t i = 0; i < texts.size(); ++i) msg += (i ? ", " : "") + texts[i];
  return msg + "]";
}

void PrepareUpdate(const std::string& group, const std::string& kind, const Json& old_obj,
                   Json& new_obj) {
  if (!group.empty() || kind != "Service" || !new_obj.is_object()) return;
  Json& spec = new_obj["spec"];
  if (!spec.is_object()) spec = Json::object();
  if (StringOrEmpty(At(spec, "type")).empty()) spec["type"] = "ClusterIP";
  if (ServiceType(old_obj) == "ExternalName" || ServiceType(new_obj) == "ExternalName") return;
  const Json& old_spec = At(old_obj, "spec");
  // Allocated values the client did not send stay (for idempotence).
  if (StringOrEmpty(At(spec, "clusterIP")).empty() && !StringOrEmpty(At(old_spec, "clusterIP")).empty()) {
    spec["clusterIP"] = old_spec["clusterIP"];
  }
  if (!At(spec, "clusterIPs").is_array() || spec["clusterIPs"].empty()) {
    if (At(old_spec, "clusterIPs").is_array() && !old_spec["clusterIPs"].empty()) {
      spec["clusterIPs"] = old_spec["clusterIPs"];
    }
  }
  // A changed clusterIP with clusterIPs left as they were: the plural follows.
  if (StringOrEmpty(At(spec, "clusterIP")) != StringOrEmpty(At(old_spec, "clusterIP")) &&
      ClusterIPs(new_obj) == ClusterIPs(old_obj)) {
    if (StringOrEmpty(At(spec, "clusterIP")).empty())
      spec.erase("clusterIPs");
    else
      spec["clusterIPs"] = Json::array({spec["clusterIP"]});
  }
}

std::vector<FieldError> ValidateUpdate(const std::string& group, const std::string& kind,
                                       const Json& old_obj, const Json& new_obj) {
  std::vector<FieldError> errs;
  const Json& old_spec = At(old_obj, "spec");
  const Json& new_spec = At(new_obj, "spec");
  if (group == "apps" && (kind == "Deployment" || kind == "ReplicaSet" || kind == "DaemonSet")) {
    if (!SemanticEqual(At(old_spec, "selector"), At(new_spec, "selector"))) {
      errs.push_back(Immutable("spec.selector", GoSelectorPointer(At(new_spec, "selector"))));
    }
  } else if (group == "apps" && kind == "StatefulSet") {
    if (!SemanticEqual(StatefulSetFixedSpec(old_obj), StatefulSetFixedSpec(new_obj))) {
      errs.push_back(FieldError{
          "FieldValueForbidden", "spec",
          "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', "
          "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
          "'minReadySeconds' are forbidden"});
    }
  } else if (group == "batch" && kind == "Job") {
    if (!SemanticEqual(JobCompletions(old_obj), JobCompletions(new_obj))) {
      errs.push_back(Immutable("spec.completions", GoIntPointer(JobCompletions(new_obj))));
    }
    if (!SemanticEqual(At(old_spec, "selector"), At(new_spec, "selector"))) {
      errs.push_back(Immutable("spec.selector", GoSelectorPointer(At(new_spec, "selector"))));
    }
    if (!SemanticEqual(At(old_spec, "template"), At(new_spec, "template"))) {
      errs.push_back(Immutable("spec.template", GoPodTemplateSpec(At(new_spec, "template"))));
    }
    auto mode = [](const Json& spec) {
      std::string m = StringOrEmpty(At(spec, "completionMode"));
      return m.empty() ? std::string("NonIndexed") : m;
    };
    if (mode(old_spec) != mode(new_spec))
      errs.push_back(Immutable("spec.completionMode", GoQuote(mode(new_spec))));
  } else if (group.empty() && kind == "Service") {
    ValidateServiceUpdate(old_obj, new_obj, errs);
  } else if (group.empty() && (kind == "ConfigMap" || kind == "Secret")) {
    if (kind == "Secret") {
      auto type = [](const Json& o) {
        std::string t = StringOrEmpty(At(o, "type"));
        return t.empty() ? std::string("Opaque") : t;
      };
      if (type(old_obj) != type(new_obj)) errs.push_back(Immutable("type", GoQuote(type(new_obj))));
    }
    if (At(old_obj, "immutable") == Json(true)) {
      const std::string locked = "Forbidden: field is immutable when `immutable` is set";
      if (At(new_obj, "immutable") != Json(true))
        errs.push_back(FieldError{"FieldValueForbidden", "immutable", locked});
      std::vector<const char*> fields = {"data"};
      if (kind == "ConfigMap") fields.push_back("binaryData");
      for (const char* f : fields) {
        if (!SemanticEqual(At(old_obj, f), At(new_obj, f)))
          errs.push_back(FieldError{"FieldValueForbidden", f, locked});
      }
    }
  } else if (group == "rbac.authorization.k8s.io" &&
             (kind == "RoleBinding" || kind == "ClusterRoleBinding")) {
    const Json& old_ref = At(old_obj, "roleRef");
    const Json& new_ref = At(new_obj, "roleRef");
    if (!SemanticEqual(old_ref, new_ref)) {
      errs.push_back(FieldError{
          "FieldValueInvalid", "roleRef",
          "Invalid value: rbac.RoleRef{APIGroup:" + GoQuote(StringOrEmpty(At(new_ref, "apiGroup"))) +
              ", Kind:" + GoQuote(StringOrEmpty(At(new_ref, "kind"))) +
              ", Name:" + GoQuote(StringOrEmpty(At(new_ref, "name"))) + "}: cannot change roleRef"});
    }
  }
  return errs;
}

}  // namespace eco::kubesim
