// Helm's default API versions: every group/version of the client-go scheme
// it is built with (Kubernetes 1.3x), each also with its kinds, plus the
// apiextensions.k8s.io versions Helm adds.
#include <string_view>
#include <utility>

#include "helm/render.h"

namespace eco::helm {
namespace {

struct GroupVersion {
  std::string_view gv;
  std::string_view kinds;  // space-separated
};

constexpr GroupVersion kScheme[] = {
    {"v1",
     "Binding ComponentStatus ComponentStatusList ConfigMap ConfigMapList Endpoints EndpointsList Event EventList "
     "LimitRange LimitRangeList Namespace NamespaceList Node NodeList PersistentVolume PersistentVolumeClaim "
     "PersistentVolumeClaimList PersistentVolumeList Pod PodList PodTemplate PodTemplateList ReplicationController "
     "ReplicationControllerList ResourceQuota ResourceQuotaList Secret SecretList Service ServiceAccount "
     "ServiceAccountList ServiceList"},
    {"admissionregistration.k8s.io/v1",
     "MutatingWebhookConfiguration MutatingWebhookConfigurationList ValidatingAdmissionPolicy "
     "ValidatingAdmissionPolicyBinding ValidatingAdmissionPolicyBindingList ValidatingAdmissionPolicyList "
     "ValidatingWebhookConfiguration ValidatingWebhookConfigurationList"},
    {"admissionregistration.k8s.io/v1alpha1",
     "MutatingAdmissionPolicy MutatingAdmissionPolicyBinding MutatingAdmissionPolicyBindingList "
     "MutatingAdmissionPolicyList ValidatingAdmissionPolicy ValidatingAdmissionPolicyBinding "
     "ValidatingAdmissionPolicyBindingList ValidatingAdmissionPolicyList"},
    {"admissionregistration.k8s.io/v1beta1",
     "MutatingAdmissionPolicy MutatingAdmissionPolicyBinding MutatingAdmissionPolicyBindingList "
     "MutatingAdmissionPolicyList MutatingWebhookConfiguration MutatingWebhookConfigurationList "
     "ValidatingAdmissionPolicy ValidatingAdmissionPolicyBinding ValidatingAdmissionPolicyBindingList "
     "ValidatingAdmissionPolicyList ValidatingWebhookConfiguration ValidatingWebhookConfigurationList"},
    {"internal.apiserver.k8s.io/v1alpha1", "StorageVersion StorageVersionList"},
    {"apps/v1",
     "ControllerRevision ControllerRevisionList DaemonSet DaemonSetList Deployment DeploymentList ReplicaSet "
     "ReplicaSetList StatefulSet StatefulSetList"},
    {"apps/v1beta1",
     "ControllerRevision ControllerRevisionList Deployment DeploymentList DeploymentRollback Scale StatefulSet "
     "StatefulSetList"},
    {"apps/v1beta2",
     "ControllerRevision ControllerRevisionList DaemonSet DaemonSetList Deployment DeploymentList ReplicaSet "
     "ReplicaSetList Scale StatefulSet StatefulSetList"},
    {"authentication.k8s.io/v1", "SelfSubjectReview TokenRequest TokenReview"},
    {"authentication.k8s.io/v1alpha1", "SelfSubjectReview"},
    {"authentication.k8s.io/v1beta1", "SelfSubjectReview TokenReview"},
    {"authorization.k8s.io/v1",
     "LocalSubjectAccessReview SelfSubjectAccessReview SelfSubjectRulesReview SubjectAccessReview"},
    {"authorization.k8s.io/v1beta1",
     "LocalSubjectAccessReview SelfSubjectAccessReview SelfSubjectRulesReview SubjectAccessReview"},
    {"autoscaling/v1", "HorizontalPodAutoscaler HorizontalPodAutoscalerList Scale"},
    {"autoscaling/v2", "HorizontalPodAutoscaler HorizontalPodAutoscalerList"},
    {"autoscaling/v2beta1", "HorizontalPodAutoscaler HorizontalPodAutoscalerList"},
    {"autoscaling/v2beta2", "HorizontalPodAutoscaler HorizontalPodAutoscalerList"},
    {"batch/v1", "CronJob CronJobList Job JobList"},
    {"batch/v1beta1", "CronJob CronJobList"},
    {"certificates.k8s.io/v1", "CertificateSigningRequest CertificateSigningRequestList"},
    {"certificates.k8s.io/v1alpha1",
     "ClusterTrustBundle ClusterTrustBundleList PodCertificateRequest PodCertificateRequestList"},
    {"certificates.k8s.io/v1beta1",
     "CertificateSigningRequest CertificateSigningRequestList ClusterTrustBundle ClusterTrustBundleList"},
    {"coordination.k8s.io/v1", "Lease LeaseList"},
    {"coordination.k8s.io/v1alpha2", "LeaseCandidate LeaseCandidateList"},
    {"coordination.k8s.io/v1beta1", "Lease LeaseCandidate LeaseCandidateList LeaseList"},
    {"discovery.k8s.io/v1", "EndpointSlice EndpointSliceList"},
    {"discovery.k8s.io/v1beta1", "EndpointSlice EndpointSliceList"},
    {"events.k8s.io/v1", "Event EventList"},
    {"events.k8s.io/v1beta1", "Event EventList"},
    {"extensions/v1beta1",
     "DaemonSet DaemonSetList Deployment DeploymentList DeploymentRollback Ingress IngressList NetworkPolicy "
     "NetworkPolicyList ReplicaSet ReplicaSetList Scale"},
    {"flowcontrol.apiserver.k8s.io/v1",
     "FlowSchema FlowSchemaList PriorityLevelConfiguration PriorityLevelConfigurationList"},
    {"flowcontrol.apiserver.k8s.io/v1beta1",
     "FlowSchema FlowSchemaList PriorityLevelConfiguration PriorityLevelConfigurationList"},
    {"flowcontrol.apiserver.k8s.io/v1beta2",
     "FlowSchema FlowSchemaList PriorityLevelConfiguration PriorityLevelConfigurationList"},
    {"flowcontrol.apiserver.k8s.io/v1beta3",
     "FlowSchema FlowSchemaList PriorityLevelConfiguration PriorityLevelConfigurationList"},
    {"networking.k8s.io/v1",
     "IPAddress IPAddressList Ingress IngressClass IngressClassList IngressList NetworkPolicy NetworkPolicyList "
     "ServiceCIDR ServiceCIDRList"},
    {"networking.k8s.io/v1alpha1", "IPAddress IPAddressList ServiceCIDR ServiceCIDRList"},
    {"networking.k8s.io/v1beta1",
     "IPAddress IPAddressList Ingress IngressClass IngressClassList IngressList ServiceCIDR ServiceCIDRList"},
    {"node.k8s.io/v1", "RuntimeClass RuntimeClassList"},
    {"node.k8s.io/v1alpha1", "RuntimeClass RuntimeClassList"},
    {"node.k8s.io/v1beta1", "RuntimeClass RuntimeClassList"},
    {"policy/v1", "Eviction PodDisruptionBudget PodDisruptionBudgetList"},
    {"policy/v1beta1", "Eviction PodDisruptionBudget PodDisruptionBudgetList"},
    {"rbac.authorization.k8s.io/v1",
     "ClusterRole ClusterRoleBinding ClusterRoleBindingList ClusterRoleList Role RoleBinding RoleBindingList RoleList"},
    {"rbac.authorization.k8s.io/v1alpha1",
     "ClusterRole ClusterRoleBinding ClusterRoleBindingList ClusterRoleList Role RoleBinding RoleBindingList RoleList"},
    {"rbac.authorization.k8s.io/v1beta1",
     "ClusterRole ClusterRoleBinding ClusterRoleBindingList ClusterRoleList Role RoleBinding RoleBindingList RoleList"},
    {"resource.k8s.io/v1",
     "DeviceClass DeviceClassList ResourceClaim ResourceClaimList ResourceClaimTemplate ResourceClaimTemplateList "
     "ResourceSlice ResourceSliceList"},
    {"resource.k8s.io/v1alpha3", "DeviceTaintRule DeviceTaintRuleList"},
    {"resource.k8s.io/v1beta1",
     "DeviceClass DeviceClassList ResourceClaim ResourceClaimList ResourceClaimTemplate ResourceClaimTemplateList "
     "ResourceSlice ResourceSliceList"},
    {"resource.k8s.io/v1beta2",
     "DeviceClass DeviceClassList ResourceClaim ResourceClaimList ResourceClaimTemplate ResourceClaimTemplateList "
     "ResourceSlice ResourceSliceList"},
    {"scheduling.k8s.io/v1", "PriorityClass PriorityClassList"},
    {"scheduling.k8s.io/v1alpha1", "PriorityClass PriorityClassList"},
    {"scheduling.k8s.io/v1beta1", "PriorityClass PriorityClassList"},
    {"storage.k8s.io/v1",
     "CSIDriver CSIDriverList CSINode CSINodeList CSIStorageCapacity CSIStorageCapacityList StorageClass "
     "StorageClassList VolumeAttachment VolumeAttachmentList VolumeAttributesClass VolumeAttributesClassList"},
    {"storage.k8s.io/v1alpha1",
     "CSIStorageCapacity CSIStorageCapacityList VolumeAttachment VolumeAttachmentList VolumeAttributesClass "
     "VolumeAttributesClassList"},
    {"storage.k8s.io/v1beta1",
     "CSIDriver CSIDriverList CSINode CSINodeList CSIStorageCapacity CSIStorageCapacityList StorageClass "
     "StorageClassList VolumeAttachment VolumeAttachmentList VolumeAttributesClass VolumeAttributesClassList"},
    {"storagemigration.k8s.io/v1alpha1", "StorageVersionMigration StorageVersionMigrationList"},
    {"apiextensions.k8s.io/v1", ""},
    {"apiextensions.k8s.io/v1beta1", ""},
};

}  // namespace

const std::vector<std::string>& DefaultApiVersions() {
  static const std::vector<std::string> kVersions = [] {
    std::vector<std::string> out;
    for (const GroupVersion& g : kScheme) {
      out.emplace_back(g.gv);
      std::string_view kinds = g.kinds;
      while (!kinds.empty()) {
        size_t sp = kinds.find(' ');
        out.push_back(std::string(g.gv) + "/" + std::string(kinds.substr(0, sp)));
        if (sp == std::string_view::npos) break;
        kinds.remove_prefix(sp + 1);
      }
    }
    return out;
  }();
  return kVersions;
}

}  // namespace eco::helm
