package reconcile

import (
	"encoding/json"
	"time"

	"github.com/plancore/plancore/expectations"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Snapshot is everything one Decide call looks at. It is a plain value: the
// caller lists pods from its informer cache, copies the cluster object and the
// expectations state into it, and reads the clock once.
type Snapshot struct {
	// Cluster is the RayCluster-shaped object being reconciled.
	Cluster Cluster
	// Pods are the observed pods in any order. They may include terminating pods
	// and pods of other clusters or namespaces, which Decide ignores.
	Pods []corev1.Pod
	// Expectations is the caller's expectations state (a copy, for example
	// Tracker.SnapshotOwner(cluster's owner), which copies only what this
	// cluster's checks read, or Tracker.Snapshot()), or nil for none. Decide checks every group of this
	// cluster that holds items against the pods of this snapshot with the pure
	// State.Check, and plans nothing for a group that is not satisfied. Its
	// owner is the cluster (namespace, name, UID); the head group is "".
	Expectations *expectations.State
	// Forming lists the multi-host replica groups whose creation failed part way
	// (KubeRay #4540). Apply reports them; the caller keeps them between passes
	// (UpdateForming computes the next list) and hands them back here.
	Forming []FormingGroup
	// TLS is the caller's view of the mTLS secrets.
	TLS TLS
	// Now is the caller's clock reading for this pass.
	Now time.Time
	// Seed is an opaque value from which every generated name is derived.
	Seed uint64
	// ClusterHash, when set, is used instead of the hash Decide computes:
	// a caller that holds the real RayCluster passes KubeRay's own hash so that
	// the annotations on pods KubeRay created stay valid.
	ClusterHash string
}

// Cluster is the part of a RayCluster that pod reconciliation reads.
type Cluster struct {
	Name      string
	Namespace string
	UID       types.UID
	// Generation is metadata.generation; Status reports it as
	// observedGeneration.
	Generation  int64
	Labels      map[string]string
	Annotations map[string]string
	Spec        ClusterSpec
	// Conditions are the status conditions (RayClusterSuspending,
	// RayClusterSuspended, RayClusterProvisioned, ...).
	Conditions []metav1.Condition
}

// ClusterSpec mirrors the fields of KubeRay's RayClusterSpec that shape pods.
// The JSON tags fix the hash input.
type ClusterSpec struct {
	RayVersion string `json:"rayVersion,omitempty"`
	// EnableInTreeAutoscaling turns the Ray autoscaler on; with it on, only the
	// autoscaler picks scale-down victims unless Options.RandomPodDelete is set.
	EnableInTreeAutoscaling  *bool                     `json:"enableInTreeAutoscaling,omitempty"`
	GcsFaultToleranceOptions *GcsFaultToleranceOptions `json:"gcsFaultToleranceOptions,omitempty"`
	HeadGroup                HeadGroup                 `json:"headGroupSpec"`
	WorkerGroups             []WorkerGroup             `json:"workerGroupSpecs,omitempty"`
	Suspend                  *bool                     `json:"suspend,omitempty"`
	UpgradeStrategy          *UpgradeStrategy          `json:"upgradeStrategy,omitempty"`
	// AutoscalerOptions carries the autoscaler settings KubeRay's controller
	// checks before it reconciles pods (the version, the idle timeout and the
	// autoscaler container's environment).
	AutoscalerOptions *AutoscalerOptions `json:"autoscalerOptions,omitempty"`
	// AuthOptions is the token authentication KubeRay's controller checks
	// against RayVersion.
	AuthOptions *AuthOptions `json:"authOptions,omitempty"`
	// NetworkPolicy, TLSOptions and HistoryServerOptions are kept as
	// written: KubeRay v1.7 refuses each unless its feature gate is on
	// (Options.Gates), and plancore models nothing else of them.
	NetworkPolicy        json.RawMessage `json:"networkPolicy,omitempty"`
	TLSOptions           json.RawMessage `json:"tlsOptions,omitempty"`
	HistoryServerOptions json.RawMessage `json:"historyServerOptions,omitempty"`
}

// AuthOptions is KubeRay's authOptions.
type AuthOptions struct {
	// Mode "token" turns token authentication on (Ray 2.52.0 or later).
	Mode string `json:"mode,omitempty"`
	// EnableK8sTokenAuth uses Kubernetes tokens (token mode, Ray 2.55.0 or
	// later, and no SecretName).
	EnableK8sTokenAuth *bool   `json:"enableK8sTokenAuth,omitempty"`
	SecretName         *string `json:"secretName,omitempty"`
}

// AutoscalerOptions is the part of KubeRay's autoscalerOptions that its
// controller validates.
type AutoscalerOptions struct {
	// Version is "v1" or "v2"; "v2" turns on autoscaler v2 rules (restart
	// policy Never, worker idle timeouts).
	Version            *string         `json:"version,omitempty"`
	IdleTimeoutSeconds *int32          `json:"idleTimeoutSeconds,omitempty"`
	Env                []corev1.EnvVar `json:"env,omitempty"`
}

// GcsFaultToleranceOptions enables GCS fault tolerance when present.
type GcsFaultToleranceOptions struct {
	RedisAddress             string `json:"redisAddress,omitempty"`
	ExternalStorageNamespace string `json:"externalStorageNamespace,omitempty"`
}

// UpgradeStrategy selects what happens to pods when the spec changes.
type UpgradeStrategy struct {
	// Type is "Recreate" or "None".
	Type *string `json:"type,omitempty"`
}

// HeadGroup is the head group spec.
type HeadGroup struct {
	// RayStartParams is hashed; a nil map hashes as {} (the outer loop's
	// defaulting), as in KubeRay.
	RayStartParams map[string]string      `json:"rayStartParams"`
	Template       corev1.PodTemplateSpec `json:"template"`
	// Labels are merged over the template's labels on the head pod (the
	// group's win), as KubeRay v1.7 merges headGroupSpec.labels.
	Labels map[string]string `json:"labels,omitempty"`
	// Resources are Ray resources; KubeRay refuses them beside resource
	// flags in RayStartParams.
	Resources map[string]string `json:"resources,omitempty"`
}

// WorkerGroup is one worker group spec.
type WorkerGroup struct {
	GroupName   string `json:"groupName"`
	Replicas    *int32 `json:"replicas,omitempty"`
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
	// NumOfHosts is the number of pods per replica. KubeRay defaults it to 1;
	// plancore treats 0 as 1 unless Compat.ZeroHostsMeansZeroPods. A negative
	// value, or one above MaxNumOfHosts, is invalid input.
	NumOfHosts     int32                  `json:"numOfHosts,omitempty"`
	Suspend        *bool                  `json:"suspend,omitempty"`
	ScaleStrategy  ScaleStrategy          `json:"scaleStrategy,omitempty"`
	RayStartParams map[string]string      `json:"rayStartParams"`
	Template       corev1.PodTemplateSpec `json:"template"`
	// Labels are merged over the template's labels (the group's win).
	Labels map[string]string `json:"labels,omitempty"`
	// Resources are Ray resources; KubeRay refuses them beside resource
	// flags in RayStartParams.
	Resources map[string]string `json:"resources,omitempty"`
	// IdleTimeoutSeconds and Priority are autoscaler v2 settings; KubeRay
	// refuses them without it (Priority also before Ray 2.56.0).
	IdleTimeoutSeconds *int32 `json:"idleTimeoutSeconds,omitempty"`
	Priority           *int32 `json:"priority,omitempty"`
}

// ScaleStrategy holds the autoscaler's explicit deletions.
type ScaleStrategy struct {
	WorkersToDelete []string `json:"workersToDelete,omitempty"`
}

// TLS is the caller's check of the cluster's mTLS secrets.
type TLS struct {
	Enabled      bool
	SecretsReady bool
	// NotReadyError is the caller's explanation, used in the requeue message.
	NotReadyError string
}

// FormingGroup is a multi-host replica group whose creation failed part way:
// the executor created some members and not others. While the record is live,
// Decide plans only the missing hosts under the same name and index (KubeRay
// #4540).
type FormingGroup struct {
	Group        string
	ReplicaName  string
	ReplicaIndex int
	// Missing are the host indices that were not created.
	Missing []int
	// Attempts counts the failed formation attempts so far (≥ 1).
	Attempts int
	// FirstFailure is when the first attempt failed; GroupFormationTimeout runs
	// from it.
	FirstFailure time.Time
	// LastAttempt is when the last attempt ran; the retry backoff runs from it.
	LastAttempt time.Time
	LastError   string
}
