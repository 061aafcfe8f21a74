package reconcile

// Label and annotation keys KubeRay puts on pods.
const (
	LabelCluster      = "ray.io/cluster"
	LabelNodeType     = "ray.io/node-type"
	LabelGroup        = "ray.io/group"
	LabelIsRayNode    = "ray.io/is-ray-node"
	LabelIdentifier   = "ray.io/identifier"
	LabelAppName      = "app.kubernetes.io/name"
	LabelCreatedBy    = "app.kubernetes.io/created-by"
	LabelReplicaIndex = "ray.io/worker-group-replica-index"
	LabelReplicaName  = "ray.io/worker-group-replica-name"
	LabelHostIndex    = "ray.io/replica-host-index"

	AnnotationRecreateHash   = "ray.io/upgrade-strategy-recreate-hash"
	AnnotationKubeRayVersion = "ray.io/kuberay-version"
	AnnotationFTEnabled      = "ray.io/ft-enabled"
	// AnnotationDisableProvisionedHeadRestart on the cluster, exactly "true",
	// stops head re-creation once the cluster is provisioned (#4234).
	AnnotationDisableProvisionedHeadRestart = "ray.io/disable-provisioned-head-restart"
	// AnnotationPodDeletionCost is the ReplicaSet deletion-cost annotation used
	// by victim ranking (KubeRay #747).
	AnnotationPodDeletionCost = "controller.kubernetes.io/pod-deletion-cost"

	NodeTypeHead   = "head"
	NodeTypeWorker = "worker"
	// HeadGroupLabel is the ray.io/group value of the head pod.
	HeadGroupLabel = "headgroup"

	// Condition types read from the cluster status.
	ConditionSuspending  = "RayClusterSuspending"
	ConditionSuspended   = "RayClusterSuspended"
	ConditionProvisioned = "RayClusterProvisioned"

	// UpgradeRecreate and UpgradeNone are the valid UpgradeStrategy types.
	UpgradeRecreate = "Recreate"
	UpgradeNone     = "None"

	// HeadGroupKey is the expectations group key of the head, as in KubeRay.
	HeadGroupKey = ""
)

// nameAlphabet is utilrand's alphabet (no vowels, no 0/1/3), used by KubeRay
// for GenerateName suffixes and replica group names.
const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"
