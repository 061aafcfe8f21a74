package reconcile

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
)

// MaxClusterNameLength is the longest RayCluster name KubeRay v1.7 reconciles
// (its MaxRayClusterNameLength): longer names would be truncated in the names
// of the objects it derives.
const MaxClusterNameLength = 53

// The environment variables and annotations KubeRay's controller checks
// before it reconciles pods.
const (
	envRedisAddress     = "RAY_REDIS_ADDRESS"
	envRedisPassword    = "REDIS_PASSWORD"
	envRedisUsername    = "REDIS_USERNAME"
	envAutoscalerV2     = "RAY_enable_autoscaler_v2"
	envAutoscalerCmd    = "KUBERAY_GEN_AUTOSCALER_START_CMD"
	annotationStorageNS = "ray.io/external-storage-namespace"
	// LabelOriginatedFromCRD names the kind (RayJob, RayService) that created
	// a RayCluster; such clusters may not set an upgrade strategy.
	LabelOriginatedFromCRD = "ray.io/originated-from-crd"
)

// The rules below are the ones KubeRay v1.7's RayCluster controller runs on
// every reconcile before it reconciles pods (ValidateRayClusterMetadata,
// ValidateRayClusterSpec, ValidateRayClusterUpgradeOptions and
// ValidateRayClusterStatus in its utils/validation.go). KubeRay stops at the
// first and creates nothing; Decide reports them all at once and plans
// nothing. Each check builds its field path only when it fails: Decide runs
// them on every pass.

// validateClusterName is ValidateRayClusterMetadata: at most
// MaxClusterNameLength characters, and a DNS-1035 label. It reports whether
// the name was refused.
func validateClusterName(name string) (field.ErrorList, bool) {
	if len(name) > MaxClusterNameLength {
		return field.ErrorList{field.TooLong(field.NewPath("metadata", "name"), name, MaxClusterNameLength)}, true
	}
	if msgs := validation.IsDNS1035Label(name); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), name, "not a DNS-1035 label: "+strings.Join(msgs, "; "))}, true
	}
	return nil, false
}

// autoscaling is KubeRay's IsAutoscalingEnabled.
func autoscaling(s *ClusterSpec) bool {
	return s.EnableInTreeAutoscaling != nil && *s.EnableInTreeAutoscaling
}

// autoscalerV2 is KubeRay's IsAutoscalingV2Enabled.
func autoscalerV2(s *ClusterSpec) bool {
	a := s.AutoscalerOptions
	return a != nil && a.Version != nil && *a.Version == "v2"
}

// headEnv finds name in the Ray container (the first) of the head template.
func headEnv(s *ClusterSpec, name string) (corev1.EnvVar, bool) {
	cs := s.HeadGroup.Template.Spec.Containers
	if len(cs) == 0 {
		return corev1.EnvVar{}, false
	}
	for _, e := range cs[0].Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

// headEnvTrue reports whether the head sets name to "1" or "true", as
// KubeRay reads RAY_enable_autoscaler_v2.
func headEnvTrue(s *ClusterSpec, name string) bool {
	e, ok := headEnv(s, name)
	return ok && (e.Value == "1" || e.Value == "true")
}

func headEnvPath() *field.Path {
	return field.NewPath("spec", "headGroupSpec", "template", "spec", "containers").Index(0).Child("env")
}

// validateControllerRules runs the spec, upgrade and status rules of
// KubeRay's controller that plancore's Cluster carries the fields for.
func validateControllerRules(c *Cluster) field.ErrorList {
	s := &c.Spec
	head := func() *field.Path { return field.NewPath("spec", "headGroupSpec") }
	errs := validateGroupRayParams(head, s.HeadGroup.RayStartParams, s.HeadGroup.Resources)
	errs = append(errs, validateLabels(func() *field.Path { return head().Child("labels") }, s.HeadGroup.Labels)...)
	for i := range s.WorkerGroups {
		errs = append(errs, validateWorkerRules(s, i)...)
	}
	errs = append(errs, validateFaultTolerance(c)...)
	errs = append(errs, validateAutoscaler(s)...)
	errs = append(errs, validateAuth(s)...)
	if us := s.UpgradeStrategy; us != nil && us.Type != nil {
		if kind := c.Labels[LabelOriginatedFromCRD]; kind == "RayJob" || kind == "RayService" {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "upgradeStrategy", "type"),
				"cannot be set on a RayCluster created by a "+kind))
		}
	}
	if meta.IsStatusConditionTrue(c.Conditions, ConditionSuspending) && meta.IsStatusConditionTrue(c.Conditions, ConditionSuspended) {
		errs = append(errs, field.Invalid(field.NewPath("status", "conditions"), ConditionSuspending+"+"+ConditionSuspended,
			"RayClusterSuspending and RayClusterSuspended cannot both be true"))
	}
	return errs
}

// validateGroupRayParams is KubeRay's validateRayGroupResources and the
// rayStartParams half of validateRayGroupLabels: Ray resources are given
// either as rayStartParams flags or in the group's resources, not both, and
// Ray labels only in the group's labels.
func validateGroupRayParams(group func() *field.Path, params, resources map[string]string) field.ErrorList {
	var errs field.ErrorList
	if len(resources) > 0 && (params["num-cpus"] != "" || params["num-gpus"] != "" || params["memory"] != "" || params["resources"] != "") {
		errs = append(errs, field.Forbidden(group().Child("resources"),
			"must not be set beside num-cpus, num-gpus, memory or resources in rayStartParams; use only one"))
	}
	if _, ok := params["labels"]; ok {
		errs = append(errs, field.Forbidden(group().Child("rayStartParams").Key("labels"), "use the group's labels field"))
	}
	return errs
}

// validateWorkerRules checks worker group i: its Ray parameters, replica
// bounds (both required without autoscaling, min ≤ max), suspension (not
// with autoscaling), and the autoscaler v2 fields idleTimeoutSeconds and
// priority (KubeRay's validateWorkerGroupIdleTimeout and
// validateWorkerGroupPriority).
func validateWorkerRules(s *ClusterSpec, i int) field.ErrorList {
	g := &s.WorkerGroups[i]
	path := func() *field.Path { return groupPath(i) }
	errs := validateGroupRayParams(path, g.RayStartParams, g.Resources)
	if !autoscaling(s) {
		if g.MinReplicas == nil {
			errs = append(errs, field.Required(path().Child("minReplicas"), "minReplicas and maxReplicas are required when enableInTreeAutoscaling is not true"))
		}
		if g.MaxReplicas == nil {
			errs = append(errs, field.Required(path().Child("maxReplicas"), "minReplicas and maxReplicas are required when enableInTreeAutoscaling is not true"))
		}
	}
	if g.MinReplicas != nil && g.MaxReplicas != nil && *g.MinReplicas >= 0 && *g.MinReplicas > *g.MaxReplicas {
		errs = append(errs, field.Invalid(path().Child("minReplicas"), *g.MinReplicas,
			"must not exceed maxReplicas ("+strconv.Itoa(int(*g.MaxReplicas))+")"))
	}
	if autoscaling(s) && g.Suspend != nil && *g.Suspend {
		errs = append(errs, field.Forbidden(path().Child("suspend"), "a worker group cannot be suspended with enableInTreeAutoscaling"))
	}
	v2 := autoscalerV2(s) || headEnvTrue(s, envAutoscalerV2)
	if t := g.IdleTimeoutSeconds; t != nil {
		switch {
		case *t < 0:
			errs = append(errs, field.Invalid(path().Child("idleTimeoutSeconds"), *t, "must not be negative"))
		case !v2:
			errs = append(errs, field.Forbidden(path().Child("idleTimeoutSeconds"), "needs autoscaler v2 (autoscalerOptions.version: v2)"))
		}
	}
	if p := g.Priority; p != nil && *p != 0 {
		if msg := priorityProblem(s.RayVersion, v2); msg != "" {
			errs = append(errs, field.Forbidden(path().Child("priority"), msg))
		}
	}
	return errs
}

// priorityProblem says why a worker group's priority cannot be set, or "".
func priorityProblem(rayVersion string, v2 bool) string {
	if msg := rayVersionBelow(rayVersion, 2, 56); msg != "" {
		return "needs " + msg
	}
	if !v2 {
		return "needs autoscaler v2 (autoscalerOptions.version: v2)"
	}
	return ""
}

// validateFaultTolerance is the GCS fault tolerance part of
// ValidateRayClusterSpec: the ft-enabled annotation and the options are not
// both set; RAY_REDIS_ADDRESS does not turn fault tolerance on by itself;
// with the options, the Redis address, password and storage namespace come
// from them only; and a Redis username never comes from rayStartParams or
// the environment.
func validateFaultTolerance(c *Cluster) field.ErrorList {
	s := &c.Spec
	var errs field.ErrorList
	ann := func(key string) *field.Path { return field.NewPath("metadata", "annotations").Key(key) }
	if c.Annotations[AnnotationFTEnabled] != "" && s.GcsFaultToleranceOptions != nil {
		errs = append(errs, field.Forbidden(ann(AnnotationFTEnabled), "set either this annotation or spec.gcsFaultToleranceOptions, not both"))
	}
	_, redisAddress := headEnv(s, envRedisAddress)
	if !ftEnabled(c) && redisAddress {
		errs = append(errs, field.Forbidden(headEnvPath().Key(envRedisAddress), "turns GCS fault tolerance on only through spec.gcsFaultToleranceOptions"))
	}
	params := s.HeadGroup.RayStartParams
	if s.GcsFaultToleranceOptions != nil {
		if params["redis-password"] != "" {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "headGroupSpec", "rayStartParams").Key("redis-password"), "use gcsFaultToleranceOptions.redisPassword"))
		}
		if _, ok := headEnv(s, envRedisPassword); ok {
			errs = append(errs, field.Forbidden(headEnvPath().Key(envRedisPassword), "use gcsFaultToleranceOptions.redisPassword"))
		}
		if redisAddress {
			errs = append(errs, field.Forbidden(headEnvPath().Key(envRedisAddress), "use gcsFaultToleranceOptions.redisAddress"))
		}
		if c.Annotations[annotationStorageNS] != "" {
			errs = append(errs, field.Forbidden(ann(annotationStorageNS), "use gcsFaultToleranceOptions.externalStorageNamespace"))
		}
	}
	if params["redis-username"] != "" {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "headGroupSpec", "rayStartParams").Key("redis-username"), "use gcsFaultToleranceOptions.redisUsername"))
	}
	if _, ok := headEnv(s, envRedisUsername); ok {
		errs = append(errs, field.Forbidden(headEnvPath().Key(envRedisUsername), "use gcsFaultToleranceOptions.redisUsername"))
	}
	return errs
}

// validateAutoscaler is the autoscaler part of ValidateRayClusterSpec.
func validateAutoscaler(s *ClusterSpec) field.ErrorList {
	var errs field.ErrorList
	if !autoscaling(s) && headEnvTrue(s, envAutoscalerV2) {
		errs = append(errs, field.Forbidden(headEnvPath().Key(envAutoscalerV2), "needs enableInTreeAutoscaling: true"))
	}
	a := s.AutoscalerOptions
	if autoscaling(s) {
		if _, ok := headEnv(s, envAutoscalerV2); ok && a != nil && a.Version != nil {
			errs = append(errs, field.Forbidden(headEnvPath().Key(envAutoscalerV2), "set autoscalerOptions.version only"))
		}
		if autoscalerV2(s) {
			errs = append(errs, validateV2RestartPolicy(func() *field.Path { return field.NewPath("spec", "headGroupSpec") }, s.HeadGroup.Template.Spec.RestartPolicy)...)
			for i := range s.WorkerGroups {
				errs = append(errs, validateV2RestartPolicy(func() *field.Path { return groupPath(i) }, s.WorkerGroups[i].Template.Spec.RestartPolicy)...)
			}
		}
	}
	if a == nil {
		return errs
	}
	if a.IdleTimeoutSeconds != nil && *a.IdleTimeoutSeconds < 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "autoscalerOptions", "idleTimeoutSeconds"), *a.IdleTimeoutSeconds, "must not be negative"))
	}
	for i := range a.Env {
		if a.Env[i].Name == envAutoscalerCmd {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "autoscalerOptions", "env").Index(i), envAutoscalerCmd+" is set by the operator"))
		}
	}
	return errs
}

// validateV2RestartPolicy: autoscaler v2 replaces pods itself, so their
// restart policy is Never or unset.
func validateV2RestartPolicy(group func() *field.Path, policy corev1.RestartPolicy) field.ErrorList {
	if policy == "" || policy == corev1.RestartPolicyNever {
		return nil
	}
	return field.ErrorList{field.NotSupported(group().Child("template", "spec", "restartPolicy"), policy, []string{string(corev1.RestartPolicyNever)})}
}

// validateAuth is the authOptions part of ValidateRayClusterSpec: token
// mode needs Ray 2.52.0 or later; Kubernetes tokens need token mode, Ray
// 2.55.0 or later and no secretName.
func validateAuth(s *ClusterSpec) field.ErrorList {
	a := s.AuthOptions
	if a == nil {
		return nil
	}
	path := func(name string) *field.Path { return field.NewPath("spec", "authOptions", name) }
	k8s := a.EnableK8sTokenAuth != nil && *a.EnableK8sTokenAuth
	if a.Mode != "token" {
		if k8s {
			return field.ErrorList{field.Forbidden(path("enableK8sTokenAuth"), "needs authOptions.mode token")}
		}
		return nil
	}
	var errs field.ErrorList
	if msg := rayVersionBelow(s.RayVersion, 2, 52); msg != "" {
		errs = append(errs, field.Forbidden(path("mode"), "token needs "+msg))
	}
	if k8s {
		if msg := rayVersionBelow(s.RayVersion, 2, 55); msg != "" {
			errs = append(errs, field.Forbidden(path("enableK8sTokenAuth"), "needs "+msg))
		}
		if a.SecretName != nil && *a.SecretName != "" {
			errs = append(errs, field.Forbidden(path("secretName"), "cannot be set with enableK8sTokenAuth"))
		}
	}
	return errs
}

// rayVersionBelow says why rayVersion is not major.minor.0 or later, or "".
func rayVersionBelow(rayVersion string, major, minor uint) string {
	want := strconv.Itoa(int(major)) + "." + strconv.Itoa(int(minor)) + ".0"
	if rayVersion == "" {
		return "spec.rayVersion " + want + " or later"
	}
	v, err := version.ParseGeneric(rayVersion)
	if err != nil {
		return "spec.rayVersion " + want + " or later; " + strconv.Quote(rayVersion) + " is not a version"
	}
	if v.LessThan(version.MajorMinor(major, minor)) {
		return "spec.rayVersion " + want + " or later, not " + rayVersion
	}
	return ""
}

// validateGated refuses the spec parts behind KubeRay feature gates that
// Options.Gates leaves off (their default), as KubeRay's controller does
// with its default gates.
func validateGated(s *ClusterSpec, o Options) field.ErrorList {
	var errs field.ErrorList
	for _, g := range []struct {
		part    []byte
		on      bool
		name    string
		gate    string
		setting string
	}{
		{s.NetworkPolicy, o.Gates.NetworkPolicy.Enabled(false), "networkPolicy", "RayClusterNetworkPolicy", "Gates.NetworkPolicy"},
		{s.TLSOptions, o.Gates.MTLS.Enabled(false), "tlsOptions", "RayClusterMTLS", "Gates.MTLS"},
		{s.HistoryServerOptions, o.Gates.HistoryServer.Enabled(false), "historyServerOptions", "RayClusterHistoryServer", "Gates.HistoryServer"},
	} {
		if len(g.part) > 0 && !g.on {
			errs = append(errs, field.Forbidden(field.NewPath("spec", g.name), "needs KubeRay's "+g.gate+" feature gate (Options."+g.setting+")"))
		}
	}
	return errs
}
