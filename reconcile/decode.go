package reconcile

import (
	"encoding/json"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/internal/wire"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RayClusterAPIVersion and RayClusterKind identify the objects
// DecodeRayCluster accepts.
const (
	RayClusterAPIVersion = "ray.io/v1"
	RayClusterKind       = "RayCluster"
)

// MaxRayClusterBytes bounds the documents DecodeRayCluster reads, as written
// and, for YAML, as the JSON they expand to once aliases are resolved: the
// API server's 3 MiB request limit, well above its 1.5 MiB object limit, so
// no stored object is refused.
const MaxRayClusterBytes = 3 << 20

// MaxRayClusterValues bounds the values (keys, list items, objects and
// lists) of the documents DecodeRayCluster reads, as written and, for YAML,
// with aliases expanded: reading costs about 800 bytes a value, and a
// document of tiny values ([a,a,a,...]) fits 1.5 million in
// MaxRayClusterBytes. No RayCluster the API server can store comes near
// it: a stored object is at most 1.5 MiB of JSON, and realistic ones need
// 7 to 10 bytes of JSON a value (worker groups with full pod templates:
// 10; thousands of groups sharing one small template: 7.4), at most about
// 225,000 values. Even 3 MiB of YAML worker groups with full pod templates
// (720 groups) is 230,000 values, and reading it and planning stay under
// 200 MB.
const MaxRayClusterValues = 1 << 18

// DecodeRayCluster reads one ray.io/v1 RayCluster, as YAML or JSON, into the
// Cluster Decide plans for and the status the object holds (Status's
// StatusInput.Previous). It knows every field of KubeRay v1.7's RayCluster:
// fields plancore does not use (autoscalerOptions, headService, networkPolicy,
// ...) are accepted and dropped, and any other field is refused with its path
// (spec.workerGroupSpecs[0].replicaz), all of them at once, as are a wrong
// apiVersion or kind, duplicate keys, values of the wrong type
// (spec.workerGroupSpecs[1].replicas: must be an integer) and unreadable
// timestamps and quantities, each by its path. The error is a
// *plancore.InvalidError wrapping ErrInvalidInput.
//
// Its cost is bounded by the document's size: a document over
// MaxRayClusterBytes or MaxRayClusterValues, or whose YAML aliases expand
// past them (an alias bomb), is refused before it is parsed or expanded, as
// is a second YAML document. At most 1,000 problems are listed, and a last
// error on rayCluster says how many more there are. The
// result is not checked further: Decide validates the cluster.
func DecodeRayCluster(data []byte) (Cluster, ClusterStatus, error) {
	var w wireRayCluster
	if errs := wire.Decode(data, &w, wire.Options{MaxBytes: MaxRayClusterBytes, MaxValues: MaxRayClusterValues, Root: "rayCluster",
		APIVersion: RayClusterAPIVersion, Kind: RayClusterKind}); len(errs) > 0 {
		return Cluster{}, ClusterStatus{}, plancore.Invalid(ErrInvalidInput, errs)
	}
	return w.cluster(), w.Status.status(), nil
}

// The wire form of KubeRay v1.7's RayCluster. Every field KubeRay defines is
// here so that strict decoding refuses only fields KubeRay does not know;
// the ones plancore does not read are kept as their own types and dropped.
type wireRayCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              wireSpec   `json:"spec,omitempty"`
	Status            wireStatus `json:"status,omitempty"`
}

type wireSpec struct {
	UpgradeStrategy          *UpgradeStrategy   `json:"upgradeStrategy,omitempty"`
	AuthOptions              *wireAuthOptions   `json:"authOptions,omitempty"`
	Suspend                  *bool              `json:"suspend,omitempty"`
	ManagedBy                *string            `json:"managedBy,omitempty"`
	AutoscalerOptions        *wireAutoscaler    `json:"autoscalerOptions,omitempty"`
	HeadServiceAnnotations   map[string]string  `json:"headServiceAnnotations,omitempty"`
	EnableInTreeAutoscaling  *bool              `json:"enableInTreeAutoscaling,omitempty"`
	GcsFaultToleranceOptions *wireGcsFT         `json:"gcsFaultToleranceOptions,omitempty"`
	HistoryServerOptions     *wireHistoryServer `json:"historyServerOptions,omitempty"`
	NetworkPolicy            *wireNetworkPolicy `json:"networkPolicy,omitempty"`
	TLSOptions               *struct {
		Enabled *bool `json:"enabled,omitempty"`
	} `json:"tlsOptions,omitempty"`
	HeadGroupSpec    wireHeadGroup     `json:"headGroupSpec"`
	RayVersion       string            `json:"rayVersion,omitempty"`
	WorkerGroupSpecs []wireWorkerGroup `json:"workerGroupSpecs,omitempty"`
}

type wireAuthOptions struct {
	EnableK8sTokenAuth *bool   `json:"enableK8sTokenAuth,omitempty"`
	SecretName         *string `json:"secretName,omitempty"`
	Mode               string  `json:"mode,omitempty"`
}

type wireAutoscaler struct {
	Resources          *corev1.ResourceRequirements `json:"resources,omitempty"`
	Image              *string                      `json:"image,omitempty"`
	ImagePullPolicy    *corev1.PullPolicy           `json:"imagePullPolicy,omitempty"`
	SecurityContext    *corev1.SecurityContext      `json:"securityContext,omitempty"`
	IdleTimeoutSeconds *int32                       `json:"idleTimeoutSeconds,omitempty"`
	UpscalingMode      *string                      `json:"upscalingMode,omitempty"`
	Version            *string                      `json:"version,omitempty"`
	Env                []corev1.EnvVar              `json:"env,omitempty"`
	EnvFrom            []corev1.EnvFromSource       `json:"envFrom,omitempty"`
	VolumeMounts       []corev1.VolumeMount         `json:"volumeMounts,omitempty"`
	Command            []string                     `json:"command,omitempty"`
	Args               []string                     `json:"args,omitempty"`
}

type wireRedisCredential struct {
	ValueFrom *corev1.EnvVarSource `json:"valueFrom,omitempty"`
	Value     string               `json:"value,omitempty"`
}

type wireGcsFT struct {
	Backend                  string               `json:"backend,omitempty"`
	RedisUsername            *wireRedisCredential `json:"redisUsername,omitempty"`
	RedisPassword            *wireRedisCredential `json:"redisPassword,omitempty"`
	ExternalStorageNamespace string               `json:"externalStorageNamespace,omitempty"`
	RedisAddress             string               `json:"redisAddress,omitempty"`
	Storage                  *struct {
		ClaimName        string                              `json:"claimName,omitempty"`
		Size             *resource.Quantity                  `json:"size,omitempty"`
		StorageClassName *string                             `json:"storageClassName,omitempty"`
		AccessModes      []corev1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`
		SubPath          string                              `json:"subPath,omitempty"`
		DeletionPolicy   *string                             `json:"deletionPolicy,omitempty"`
	} `json:"storage,omitempty"`
}

type wireHistoryServer struct {
	CollectorOptions *struct {
		Image           *string                      `json:"image,omitempty"`
		ImagePullPolicy *corev1.PullPolicy           `json:"imagePullPolicy,omitempty"`
		Resources       *corev1.ResourceRequirements `json:"resources,omitempty"`
		Env             []corev1.EnvVar              `json:"env,omitempty"`
	} `json:"collectorOptions,omitempty"`
}

type wireNetworkPolicyRules struct {
	IngressRules []networkingv1.NetworkPolicyIngressRule `json:"ingressRules,omitempty"`
	EgressRules  []networkingv1.NetworkPolicyEgressRule  `json:"egressRules,omitempty"`
}

type wireNetworkPolicy struct {
	Mode         *string                 `json:"mode,omitempty"`
	Head         *wireNetworkPolicyRules `json:"head,omitempty"`
	Worker       *wireNetworkPolicyRules `json:"worker,omitempty"`
	WorkerGroups []struct {
		GroupName              string `json:"groupName"`
		wireNetworkPolicyRules `json:",inline"`
	} `json:"workerGroups,omitempty"`
}

type wireHeadGroup struct {
	Template       corev1.PodTemplateSpec `json:"template"`
	HeadService    *corev1.Service        `json:"headService,omitempty"`
	EnableIngress  *bool                  `json:"enableIngress,omitempty"`
	IngressOptions *struct {
		Host     *string                   `json:"host,omitempty"`
		Path     *string                   `json:"path,omitempty"`
		PathType *string                   `json:"pathType,omitempty"`
		TLS      []networkingv1.IngressTLS `json:"tls,omitempty"`
	} `json:"ingressOptions,omitempty"`
	Resources      map[string]string  `json:"resources,omitempty"`
	Labels         map[string]string  `json:"labels,omitempty"`
	RayStartParams map[string]string  `json:"rayStartParams"`
	ServiceType    corev1.ServiceType `json:"serviceType,omitempty"`
}

type wireWorkerGroup struct {
	Suspend            *bool                  `json:"suspend,omitempty"`
	GroupName          string                 `json:"groupName"`
	Replicas           *int32                 `json:"replicas,omitempty"`
	MinReplicas        *int32                 `json:"minReplicas"`
	MaxReplicas        *int32                 `json:"maxReplicas"`
	IdleTimeoutSeconds *int32                 `json:"idleTimeoutSeconds,omitempty"`
	Priority           *int32                 `json:"priority,omitempty"`
	Resources          map[string]string      `json:"resources,omitempty"`
	Labels             map[string]string      `json:"labels,omitempty"`
	RayStartParams     map[string]string      `json:"rayStartParams"`
	Template           corev1.PodTemplateSpec `json:"template"`
	ScaleStrategy      ScaleStrategy          `json:"scaleStrategy,omitempty"`
	NumOfHosts         int32                  `json:"numOfHosts,omitempty"`
}

// wireStatus is ClusterStatus plus the fields Status does not compute (they
// come from Services).
type wireStatus struct {
	ClusterStatus
	Endpoints map[string]string `json:"endpoints,omitempty"`
	Head      *struct {
		PodIP       string `json:"podIP,omitempty"`
		ServiceIP   string `json:"serviceIP,omitempty"`
		PodName     string `json:"podName,omitempty"`
		ServiceName string `json:"serviceName,omitempty"`
	} `json:"head,omitempty"`
}

func (w *wireRayCluster) cluster() Cluster {
	c := Cluster{
		Name: w.Name, Namespace: w.Namespace, UID: w.UID, Generation: w.Generation,
		Labels: w.Labels, Annotations: w.Annotations, Conditions: w.Status.Conditions,
		Spec: ClusterSpec{
			RayVersion:              w.Spec.RayVersion,
			EnableInTreeAutoscaling: w.Spec.EnableInTreeAutoscaling,
			HeadGroup:               HeadGroup{RayStartParams: w.Spec.HeadGroupSpec.RayStartParams, Template: w.Spec.HeadGroupSpec.Template, Labels: w.Spec.HeadGroupSpec.Labels, Resources: w.Spec.HeadGroupSpec.Resources},
			Suspend:                 w.Spec.Suspend,
			UpgradeStrategy:         w.Spec.UpgradeStrategy,
		},
	}
	if a := w.Spec.AuthOptions; a != nil {
		c.Spec.AuthOptions = &AuthOptions{Mode: a.Mode, EnableK8sTokenAuth: a.EnableK8sTokenAuth, SecretName: a.SecretName}
	}
	c.Spec.NetworkPolicy = rawOrNil(w.Spec.NetworkPolicy)
	c.Spec.TLSOptions = rawOrNil(w.Spec.TLSOptions)
	c.Spec.HistoryServerOptions = rawOrNil(w.Spec.HistoryServerOptions)
	if a := w.Spec.AutoscalerOptions; a != nil {
		c.Spec.AutoscalerOptions = &AutoscalerOptions{Version: a.Version, IdleTimeoutSeconds: a.IdleTimeoutSeconds, Env: a.Env}
	}
	if ft := w.Spec.GcsFaultToleranceOptions; ft != nil {
		c.Spec.GcsFaultToleranceOptions = &GcsFaultToleranceOptions{RedisAddress: ft.RedisAddress, ExternalStorageNamespace: ft.ExternalStorageNamespace}
	}
	if n := len(w.Spec.WorkerGroupSpecs); n > 0 {
		c.Spec.WorkerGroups = make([]WorkerGroup, 0, n) // groups are large: grow once
	}
	for _, g := range w.Spec.WorkerGroupSpecs {
		c.Spec.WorkerGroups = append(c.Spec.WorkerGroups, WorkerGroup{
			GroupName: g.GroupName, Replicas: g.Replicas, MinReplicas: g.MinReplicas, MaxReplicas: g.MaxReplicas,
			NumOfHosts: g.NumOfHosts, Suspend: g.Suspend, ScaleStrategy: g.ScaleStrategy,
			RayStartParams: g.RayStartParams, Template: g.Template, Labels: g.Labels,
			Resources: g.Resources, IdleTimeoutSeconds: g.IdleTimeoutSeconds, Priority: g.Priority,
		})
	}
	return c
}

func (w *wireStatus) status() ClusterStatus { return w.ClusterStatus }

// rawOrNil is v as compact JSON, or nil for a nil pointer: the spec parts
// plancore keeps only to know they were written.
func rawOrNil[T any](v *T) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
