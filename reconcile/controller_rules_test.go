package reconcile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore/reconcile"
)

// TestKubeRayControllerRules: every rule KubeRay v1.7's RayCluster controller
// runs before it reconciles pods, each row naming the KubeRay function that
// holds it. KubeRay stops at the first failure and creates nothing; Decide
// refuses the snapshot with every field at once. Rows without fields are
// specs KubeRay reconciles.
func TestKubeRayControllerRules(t *testing.T) {
	g0 := "spec.workerGroupSpecs[0]"
	headEnv := "spec.headGroupSpec.template.spec.containers[0].env"
	setHeadEnv := func(s *reconcile.Snapshot, name, value string) {
		c := &s.Cluster.Spec.HeadGroup.Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
	}
	autoscale := func(s *reconcile.Snapshot) { s.Cluster.Spec.EnableInTreeAutoscaling = bptr(true) }
	v2 := func(s *reconcile.Snapshot) {
		autoscale(s)
		s.Cluster.Spec.AutoscalerOptions = &reconcile.AutoscalerOptions{Version: sptr("v2")}
	}
	ft := func(s *reconcile.Snapshot) {
		s.Cluster.Spec.GcsFaultToleranceOptions = &reconcile.GcsFaultToleranceOptions{RedisAddress: "redis:6379"}
	}
	rows := []struct {
		kuberay string // the KubeRay v1.7 function whose rule the row checks
		name    string
		edit    func(*reconcile.Snapshot)
		fields  []string
	}{
		{"ValidateRayClusterMetadata", "name of 54 characters", func(s *reconcile.Snapshot) { s.Cluster.Name = strings.Repeat("a", 54) }, []string{"metadata.name"}},
		{"ValidateRayClusterMetadata", "name of 53 characters", func(s *reconcile.Snapshot) { s.Cluster.Name = strings.Repeat("a", 53) }, nil},
		{"ValidateRayClusterMetadata", "name starting with a digit (not DNS-1035)", func(s *reconcile.Snapshot) { s.Cluster.Name = "1rc" }, []string{"metadata.name"}},
		{"ValidateRayClusterMetadata", "name with a dot (not DNS-1035)", func(s *reconcile.Snapshot) { s.Cluster.Name = "rc.a" }, []string{"metadata.name"}},
		{"ValidateRayClusterSpec", "min and max unset without autoscaling", func(s *reconcile.Snapshot) {
			s.Cluster.Spec.WorkerGroups[0].MinReplicas, s.Cluster.Spec.WorkerGroups[0].MaxReplicas = nil, nil
		}, []string{g0 + ".minReplicas", g0 + ".maxReplicas"}},
		{"ValidateRayClusterSpec", "min and max unset with autoscaling", func(s *reconcile.Snapshot) {
			autoscale(s)
			s.Cluster.Spec.WorkerGroups[0].MinReplicas, s.Cluster.Spec.WorkerGroups[0].MaxReplicas = nil, nil
		}, nil},
		{"ValidateRayClusterSpec", "min above max", func(s *reconcile.Snapshot) {
			s.Cluster.Spec.WorkerGroups[0].MinReplicas, s.Cluster.Spec.WorkerGroups[0].MaxReplicas = i32(3), i32(2)
		}, []string{g0 + ".minReplicas"}},
		{"ValidateRayClusterSpec", "min equal to max", func(s *reconcile.Snapshot) {
			s.Cluster.Spec.WorkerGroups[0].MinReplicas, s.Cluster.Spec.WorkerGroups[0].MaxReplicas = i32(2), i32(2)
		}, nil},
		{"ValidateRayClusterSpec", "suspended group with autoscaling", func(s *reconcile.Snapshot) {
			autoscale(s)
			s.Cluster.Spec.WorkerGroups[0].Suspend = bptr(true)
		}, []string{g0 + ".suspend"}},
		{"ValidateRayClusterSpec", "suspended group without autoscaling", func(s *reconcile.Snapshot) { s.Cluster.Spec.WorkerGroups[0].Suspend = bptr(true) }, nil},
		{"validateRayGroupResources", "head resources beside num-cpus", func(s *reconcile.Snapshot) {
			s.Cluster.Spec.HeadGroup.RayStartParams = map[string]string{"num-cpus": "1"}
			s.Cluster.Spec.HeadGroup.Resources = map[string]string{"CPU": "1"}
		}, []string{"spec.headGroupSpec.resources"}},
		{"validateRayGroupResources", "worker resources beside resources", func(s *reconcile.Snapshot) {
			s.Cluster.Spec.WorkerGroups[0].RayStartParams = map[string]string{"resources": `"{\"TPU\": 4}"`}
			s.Cluster.Spec.WorkerGroups[0].Resources = map[string]string{"TPU": "4"}
		}, []string{g0 + ".resources"}},
		{"validateRayGroupResources", "worker resources alone", func(s *reconcile.Snapshot) {
			s.Cluster.Spec.WorkerGroups[0].Resources = map[string]string{"TPU": "4"}
		}, nil},
		{"validateRayGroupLabels", "labels in rayStartParams", func(s *reconcile.Snapshot) {
			s.Cluster.Spec.HeadGroup.RayStartParams = map[string]string{"labels": "a=b"}
			s.Cluster.Spec.WorkerGroups[0].RayStartParams = map[string]string{"labels": "a=b"}
		}, []string{"spec.headGroupSpec.rayStartParams[labels]", g0 + ".rayStartParams[labels]"}},
		{"validateRayGroupLabels", "bad head group label", func(s *reconcile.Snapshot) {
			s.Cluster.Spec.HeadGroup.Labels = map[string]string{"tier": "not valid"}
		}, []string{"spec.headGroupSpec.labels[tier]"}},
		{"validateWorkerGroupIdleTimeout", "idle timeout without autoscaler v2", func(s *reconcile.Snapshot) {
			autoscale(s)
			s.Cluster.Spec.WorkerGroups[0].IdleTimeoutSeconds = i32(60)
		}, []string{g0 + ".idleTimeoutSeconds"}},
		{"validateWorkerGroupIdleTimeout", "idle timeout with autoscaler v2", func(s *reconcile.Snapshot) {
			v2(s)
			s.Cluster.Spec.WorkerGroups[0].IdleTimeoutSeconds = i32(60)
		}, nil},
		{"validateWorkerGroupIdleTimeout", "idle timeout with the head's v2 variable", func(s *reconcile.Snapshot) {
			autoscale(s)
			setHeadEnv(s, "RAY_enable_autoscaler_v2", "1")
			s.Cluster.Spec.WorkerGroups[0].IdleTimeoutSeconds = i32(60)
		}, nil},
		{"validateWorkerGroupIdleTimeout", "negative idle timeout", func(s *reconcile.Snapshot) {
			v2(s)
			s.Cluster.Spec.WorkerGroups[0].IdleTimeoutSeconds = i32(-1)
		}, []string{g0 + ".idleTimeoutSeconds"}},
		{"validateWorkerGroupPriority", "priority without a Ray version", func(s *reconcile.Snapshot) {
			v2(s)
			s.Cluster.Spec.WorkerGroups[0].Priority = i32(1)
		}, []string{g0 + ".priority"}},
		{"validateWorkerGroupPriority", "priority before Ray 2.56", func(s *reconcile.Snapshot) {
			v2(s)
			s.Cluster.Spec.RayVersion = "2.55.1"
			s.Cluster.Spec.WorkerGroups[0].Priority = i32(1)
		}, []string{g0 + ".priority"}},
		{"validateWorkerGroupPriority", "priority without autoscaler v2", func(s *reconcile.Snapshot) {
			s.Cluster.Spec.RayVersion = "2.56.0"
			s.Cluster.Spec.WorkerGroups[0].Priority = i32(1)
		}, []string{g0 + ".priority"}},
		{"validateWorkerGroupPriority", "priority on Ray 2.56 with v2", func(s *reconcile.Snapshot) {
			v2(s)
			s.Cluster.Spec.RayVersion = "2.56.0"
			s.Cluster.Spec.WorkerGroups[0].Priority = i32(1)
		}, nil},
		{"validateWorkerGroupPriority", "priority 0 is unset", func(s *reconcile.Snapshot) { s.Cluster.Spec.WorkerGroups[0].Priority = i32(0) }, nil},
		{"ValidateRayClusterSpec", "ft-enabled annotation beside the options", func(s *reconcile.Snapshot) {
			ft(s)
			s.Cluster.Annotations = map[string]string{reconcile.AnnotationFTEnabled: "true"}
		}, []string{"metadata.annotations[ray.io/ft-enabled]"}},
		{"ValidateRayClusterSpec", "RAY_REDIS_ADDRESS without fault tolerance", func(s *reconcile.Snapshot) {
			setHeadEnv(s, "RAY_REDIS_ADDRESS", "redis:6379")
		}, []string{headEnv + "[RAY_REDIS_ADDRESS]"}},
		{"ValidateRayClusterSpec", "RAY_REDIS_ADDRESS with the ft-enabled annotation", func(s *reconcile.Snapshot) {
			s.Cluster.Annotations = map[string]string{reconcile.AnnotationFTEnabled: "true"}
			setHeadEnv(s, "RAY_REDIS_ADDRESS", "redis:6379")
		}, nil},
		{"ValidateRayClusterSpec", "Redis settings beside the options", func(s *reconcile.Snapshot) {
			ft(s)
			s.Cluster.Spec.HeadGroup.RayStartParams = map[string]string{"redis-password": "x"}
			setHeadEnv(s, "REDIS_PASSWORD", "x")
			setHeadEnv(s, "RAY_REDIS_ADDRESS", "redis:6379")
			s.Cluster.Annotations = map[string]string{"ray.io/external-storage-namespace": "ns"}
		}, []string{"spec.headGroupSpec.rayStartParams[redis-password]", headEnv + "[REDIS_PASSWORD]", headEnv + "[RAY_REDIS_ADDRESS]",
			"metadata.annotations[ray.io/external-storage-namespace]"}},
		{"ValidateRayClusterSpec", "a Redis username anywhere but the options", func(s *reconcile.Snapshot) {
			s.Cluster.Spec.HeadGroup.RayStartParams = map[string]string{"redis-username": "u"}
			setHeadEnv(s, "REDIS_USERNAME", "u")
		}, []string{"spec.headGroupSpec.rayStartParams[redis-username]", headEnv + "[REDIS_USERNAME]"}},
		{"ValidateRayClusterSpec", "autoscaler v2 variable without autoscaling", func(s *reconcile.Snapshot) {
			setHeadEnv(s, "RAY_enable_autoscaler_v2", "true")
		}, []string{headEnv + "[RAY_enable_autoscaler_v2]"}},
		{"ValidateRayClusterSpec", "autoscaler v2 variable 0 without autoscaling", func(s *reconcile.Snapshot) {
			setHeadEnv(s, "RAY_enable_autoscaler_v2", "0")
		}, nil},
		{"ValidateRayClusterSpec", "autoscaler version beside the v2 variable", func(s *reconcile.Snapshot) {
			v2(s)
			setHeadEnv(s, "RAY_enable_autoscaler_v2", "1")
		}, []string{headEnv + "[RAY_enable_autoscaler_v2]"}},
		{"ValidateRayClusterSpec", "restart policy Always with autoscaler v2", func(s *reconcile.Snapshot) {
			v2(s)
			s.Cluster.Spec.HeadGroup.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
			s.Cluster.Spec.WorkerGroups[1].Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		}, []string{"spec.headGroupSpec.template.spec.restartPolicy", "spec.workerGroupSpecs[1].template.spec.restartPolicy"}},
		{"ValidateRayClusterSpec", "restart policy Always with autoscaler v1", func(s *reconcile.Snapshot) {
			autoscale(s)
			s.Cluster.Spec.HeadGroup.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		}, nil},
		{"ValidateRayClusterSpec", "negative autoscaler idle timeout", func(s *reconcile.Snapshot) {
			s.Cluster.Spec.AutoscalerOptions = &reconcile.AutoscalerOptions{IdleTimeoutSeconds: i32(-5)}
		}, []string{"spec.autoscalerOptions.idleTimeoutSeconds"}},
		{"ValidateRayClusterSpec", "the operator's autoscaler command in the autoscaler env", func(s *reconcile.Snapshot) {
			s.Cluster.Spec.AutoscalerOptions = &reconcile.AutoscalerOptions{Env: []corev1.EnvVar{{Name: "A"}, {Name: "KUBERAY_GEN_AUTOSCALER_START_CMD"}}}
		}, []string{"spec.autoscalerOptions.env[1]"}},
		{"ValidateRayClusterSpec", "token auth before Ray 2.52", func(s *reconcile.Snapshot) {
			s.Cluster.Spec.RayVersion = "2.51.0"
			s.Cluster.Spec.AuthOptions = &reconcile.AuthOptions{Mode: "token"}
		}, []string{"spec.authOptions.mode"}},
		{"ValidateRayClusterSpec", "token auth on Ray 2.52", func(s *reconcile.Snapshot) {
			s.Cluster.Spec.RayVersion = "2.52.0"
			s.Cluster.Spec.AuthOptions = &reconcile.AuthOptions{Mode: "token"}
		}, nil},
		{"ValidateRayClusterSpec", "Kubernetes tokens: before Ray 2.55 and with a secret", func(s *reconcile.Snapshot) {
			s.Cluster.Spec.RayVersion = "2.54.0"
			s.Cluster.Spec.AuthOptions = &reconcile.AuthOptions{Mode: "token", EnableK8sTokenAuth: bptr(true), SecretName: sptr("s")}
		}, []string{"spec.authOptions.enableK8sTokenAuth", "spec.authOptions.secretName"}},
		{"ValidateRayClusterSpec", "Kubernetes tokens without token mode", func(s *reconcile.Snapshot) {
			s.Cluster.Spec.AuthOptions = &reconcile.AuthOptions{EnableK8sTokenAuth: bptr(true)}
		}, []string{"spec.authOptions.enableK8sTokenAuth"}},
		{"ValidateRayClusterSpec", "networkPolicy, tlsOptions, historyServerOptions with their gates off (the default)", func(s *reconcile.Snapshot) {
			s.Cluster.Spec.NetworkPolicy = []byte(`{"mode":"DenyAllIngress"}`)
			s.Cluster.Spec.TLSOptions = []byte(`{"enabled":true}`)
			s.Cluster.Spec.HistoryServerOptions = []byte(`{}`)
		}, []string{"spec.networkPolicy", "spec.tlsOptions", "spec.historyServerOptions"}},
		{"ValidateRayClusterUpgradeOptions", "upgrade strategy on a RayJob's cluster", func(s *reconcile.Snapshot) {
			s.Cluster.Labels = map[string]string{reconcile.LabelOriginatedFromCRD: "RayJob"}
			s.Cluster.Spec.UpgradeStrategy = &reconcile.UpgradeStrategy{Type: sptr(reconcile.UpgradeRecreate)}
		}, []string{"spec.upgradeStrategy.type"}},
		{"ValidateRayClusterUpgradeOptions", "no upgrade strategy on a RayService's cluster", func(s *reconcile.Snapshot) {
			s.Cluster.Labels = map[string]string{reconcile.LabelOriginatedFromCRD: "RayService"}
		}, nil},
		{"ValidateRayClusterStatus", "suspending and suspended both true", func(s *reconcile.Snapshot) {
			s.Cluster.Conditions = []metav1.Condition{cond(reconcile.ConditionSuspending, metav1.ConditionTrue), cond(reconcile.ConditionSuspended, metav1.ConditionTrue)}
		}, []string{"status.conditions"}},
		{"all of them", "every failure at once", func(s *reconcile.Snapshot) {
			s.Cluster.Name = "1rc"
			s.Cluster.Spec.WorkerGroups[0].MinReplicas = nil
			s.Cluster.Spec.WorkerGroups[1].MinReplicas, s.Cluster.Spec.WorkerGroups[1].MaxReplicas = i32(9), i32(1)
			setHeadEnv(s, "REDIS_USERNAME", "u")
		}, []string{"metadata.name", g0 + ".minReplicas", "spec.workerGroupSpecs[1].minReplicas", headEnv + "[REDIS_USERNAME]"}},
	}
	for _, r := range rows {
		t.Run(r.kuberay+"/"+r.name, func(t *testing.T) {
			s := snap(cluster(group("a", 1), group("b", 2)), withHead()...)
			r.edit(&s)
			_, err := reconcile.Decide(s, opts())
			if r.fields == nil {
				if err != nil {
					t.Fatalf("KubeRay reconciles this spec; Decide: %v", err)
				}
				return
			}
			if !errors.Is(err, reconcile.ErrInvalidInput) {
				t.Fatalf("Decide error = %v, want ErrInvalidInput", err)
			}
			if diff := cmp.Diff(r.fields, fieldsOf(t, err)); diff != "" {
				t.Errorf("fields (-want +got):\n%s\n%v", diff, err)
			}
			if verr := s.Cluster.Validate(); r.kuberay != "ValidateRayClusterStatus" && !strings.Contains(r.name, "gates off") && verr == nil {
				t.Errorf("Cluster.Validate accepts what Decide refuses")
			}
		})
	}
}

// TestHeadGroupLabels: headGroupSpec.labels are merged over the head
// template's labels, as KubeRay v1.7's buildHeadPod merges them; the fixed
// keys stay KubeRay's.
func TestHeadGroupLabels(t *testing.T) {
	c := cluster(group("a", 0))
	c.Spec.HeadGroup.Labels = map[string]string{"team": "infra", "tier": "head", reconcile.LabelNodeType: "worker"}
	p := mustDecide(t, snap(c), opts())
	if len(p.Actions) != 1 || p.Actions[0].Create == nil {
		t.Fatalf("actions = %v, want the head's create", p.Actions)
	}
	got := p.Actions[0].Create.Pod.Labels
	// "team" is "ml" in the template: the group's label wins.
	if got["team"] != "infra" || got["tier"] != "head" || got[reconcile.LabelNodeType] != reconcile.NodeTypeHead {
		t.Errorf("head pod labels = %v", got)
	}
}

// TestZeroOptionsAndPresetCompat: Options{} plans with the documented
// defaults (the head carries DefaultOperatorVersion), and the KubeRay preset's
// Compat alone is KubeRay-exact, burst included: every missing pod in one
// pass, where the defaults create DefaultBurstReplicas.
func TestZeroOptionsAndPresetCompat(t *testing.T) {
	p := mustDecide(t, snap(cluster(group("a", 0))), reconcile.Options{})
	if got := p.Actions[0].Create.Pod.Annotations[reconcile.AnnotationKubeRayVersion]; got != reconcile.DefaultOperatorVersion {
		t.Errorf("head's operator version = %q, want %q", got, reconcile.DefaultOperatorVersion)
	}
	big := group("big", 2000)
	big.MaxReplicas = i32(2000)
	s := snap(cluster(big), withHead()...)
	var o reconcile.Options
	if p := mustDecide(t, s, o); p.Groups[0].Place != reconcile.DefaultBurstReplicas {
		t.Errorf("defaults placed %d, want %d", p.Groups[0].Place, reconcile.DefaultBurstReplicas)
	}
	o.Compat = reconcile.KubeRayV170().Compat
	if p := mustDecide(t, s, o); p.Groups[0].Place != 2000 {
		t.Errorf("with KubeRayV170().Compat alone placed %d, want all 2000 as KubeRay", p.Groups[0].Place)
	}
}

// TestGatedSpecParts: with their KubeRay feature gates on, networkPolicy,
// tlsOptions and historyServerOptions are planned (their contents are not
// modelled); off, the default, they are refused as KubeRay refuses them.
func TestGatedSpecParts(t *testing.T) {
	s := snap(cluster(group("a", 1)), withHead()...)
	s.Cluster.Spec.NetworkPolicy = []byte(`{"mode":"DenyAllIngress"}`)
	s.Cluster.Spec.TLSOptions = []byte(`{"enabled":true}`)
	s.Cluster.Spec.HistoryServerOptions = []byte(`{}`)
	o := opts()
	o.Gates.NetworkPolicy, o.Gates.MTLS, o.Gates.HistoryServer = reconcile.GateOn, reconcile.GateOn, reconcile.GateOn
	if _, err := reconcile.Decide(s, o); err != nil {
		t.Fatalf("gates on: %v", err)
	}
}
