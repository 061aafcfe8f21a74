package extender

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/plancore/plancore/gpu"
)

// The paths Handler serves, which kube-scheduler calls as urlPrefix + "/" +
// the verb.
const (
	FilterVerb     = "filter"
	PrioritizeVerb = "prioritize"
	BindVerb       = "bind"
)

// checkKubeScheduler refuses a kube-scheduler extender entry this extender
// cannot serve, naming the setting to change: every problem kube-scheduler
// would only show as failed calls or pods placed without devices.
func checkKubeScheduler(e *configv1.Extender, reg gpu.Registry) field.ErrorList {
	if e == nil {
		return nil
	}
	var errs field.ErrorList
	p := field.NewPath("kubeScheduler")
	for _, v := range []struct{ name, got, want string }{
		{"filterVerb", e.FilterVerb, FilterVerb},
		{"prioritizeVerb", e.PrioritizeVerb, PrioritizeVerb},
		{"bindVerb", e.BindVerb, BindVerb},
	} {
		if v.got != "" && v.got != v.want {
			errs = append(errs, field.NotSupported(p.Child(v.name), v.got, []string{"", v.want}))
		}
	}
	if e.PreemptVerb != "" {
		errs = append(errs, field.Invalid(p.Child("preemptVerb"), e.PreemptVerb,
			"the extender serves no preemption: remove preemptVerb (kube-scheduler's own preemption runs without it)"))
	}
	if e.BindVerb != "" && e.FilterVerb == "" {
		errs = append(errs, field.Required(p.Child("filterVerb"),
			"bindVerb needs filterVerb \"filter\": Bind places the devices Filter chose, and without a Filter it finds none"))
	}
	if e.BindVerb != "" && !e.NodeCacheCapable {
		errs = append(errs, field.Invalid(p.Child("nodeCacheCapable"), false,
			"nodeCacheCapable false sends whole Node objects, which the extender filters as template nodes (as HAMi does for cluster-autoscaler's simulations): it assigns no devices, so Bind would find none; set nodeCacheCapable: true, or remove bindVerb where the caller only simulates"))
	}
	errs = append(errs, checkManaged(p.Child("managedResources"), e.ManagedResources, reg)...)
	return errs
}

// checkManaged refuses managed resources that keep device pods from the
// extender or every node from them: a listed resource of a device type
// whose count resource is not listed (a pod asking only the count never
// reaches the extender, and is placed without devices), and the memory,
// cores or priority resource of a device type registered in annotations
// that kube-scheduler is not told to ignore (no node advertises it, so
// kube-scheduler's own resource fit refuses every node).
func checkManaged(p *field.Path, managed []configv1.ExtenderManagedResource, reg gpu.Registry) field.ErrorList {
	if len(managed) == 0 {
		return nil // kube-scheduler sends the extender every pod
	}
	listed := map[corev1.ResourceName]bool{}
	for _, m := range managed {
		listed[corev1.ResourceName(m.Name)] = true
	}
	var errs field.ErrorList
	for i, m := range managed {
		name := corev1.ResourceName(m.Name)
		for _, t := range reg.Types() {
			if !isResourceOf(t, name) {
				continue
			}
			if !listed[t.Count] {
				errs = append(errs, field.Invalid(p.Index(i).Child("name"), m.Name,
					fmt.Sprintf("%s is managed but %s is not: a pod asking %s alone never reaches the extender; add %s to managedResources", m.Name, t.Count, t.Count, t.Count)))
			}
			if name != t.Count && !m.IgnoredByScheduler && annotationRegistered(t) {
				errs = append(errs, field.Invalid(p.Index(i).Child("ignoredByScheduler"), false,
					fmt.Sprintf("no node advertises %s, so kube-scheduler's resource fit refuses every node for a pod asking it: set ignoredByScheduler: true", m.Name)))
			}
		}
	}
	return errs
}

func isResourceOf(t gpu.DeviceType, name corev1.ResourceName) bool {
	for _, r := range t.Resources() {
		if r == name {
			return true
		}
	}
	return false
}

// annotationRegistered reports whether t's devices are registered in a node
// annotation, so that its device plugin advertises no more than the count.
func annotationRegistered(t gpu.DeviceType) bool {
	switch t.Annotations.RegisterFormat {
	case gpu.RegisterCapacity, gpu.RegisterNeuron, gpu.RegisterNone:
		return false
	}
	return true
}
