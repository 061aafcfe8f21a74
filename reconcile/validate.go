package reconcile

import (
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/internal/strtab"
)

// MaxNumOfHosts bounds numOfHosts: a multi-host replica group is planned as
// one unit of that many pods, so an absurd value must not reach the planner.
const MaxNumOfHosts = 10000

// Validate reports every problem of s at once, each with its field path and
// value, in a *plancore.InvalidError wrapping ErrInvalidInput: the cluster's
// problems (Cluster.Validate, paths such as spec.workerGroupSpecs[1].replicas),
// a zero now, formation records without a name or with a negative index or
// attempt count, and pods listed twice (by namespace and name, or by UID).
// Decide runs exactly this validation.
func (s Snapshot) Validate() error {
	return plancore.Invalid(ErrInvalidInput, s.validate())
}

func (s *Snapshot) validate() field.ErrorList {
	errs := validateCluster(&s.Cluster)
	if s.Now.IsZero() {
		errs = append(errs, field.Required(field.NewPath("now"), "the caller's clock reading for this pass"))
	}
	errs = append(errs, validateForming(s.Forming)...)
	return append(errs, validatePods(s.Pods)...)
}

// validateForming checks the formation records the caller hands back: each
// names a replica group by name and a non-negative index, with a count of
// attempts that cannot be negative.
func validateForming(forming []FormingGroup) field.ErrorList {
	var errs field.ErrorList
	for i := range forming {
		f := &forming[i]
		// The record's path is built only for a problem.
		path := func() *field.Path { return field.NewPath("forming").Index(i) }
		if f.Group == "" {
			errs = append(errs, field.Required(path().Child("group"), ""))
		}
		if f.ReplicaName == "" {
			errs = append(errs, field.Required(path().Child("replicaName"), ""))
		}
		if f.ReplicaIndex < 0 {
			errs = append(errs, field.Invalid(path().Child("replicaIndex"), f.ReplicaIndex, "must not be negative"))
		}
		if f.Attempts < 0 {
			errs = append(errs, field.Invalid(path().Child("attempts"), f.Attempts, "must not be negative"))
		}
	}
	return errs
}

// validatePods rejects a snapshot that lists one pod twice: a cache never does,
// and planning on it would count (and delete) the same pod several times. It
// runs on every Decide, so it finds repeats in one strtab.Table (one
// allocation) rather than maps of strings: see BenchmarkDecideSteady10k.
// Pod i's name is entry i of the table and its UID entry len(pods)+i.
//
// The table keeps 32 bits of each entry's hash, so a probe that meets another
// pod compares strings only when those bits match too. Comparing on every
// collision read the other pod's name, at a random place in memory: on the
// pods of an informer cache, whose strings are scattered over the heap, that
// cost more than the rest of the check (BenchmarkSteadyPass10k).
func validatePods(pods []corev1.Pod) field.ErrorList {
	if len(pods) < 2 {
		return nil
	}
	n := len(pods)
	tab := strtab.New(2 * n)
	// Pods of one snapshot nearly all share a namespace: its hash is taken
	// again only when the namespace changes from one pod to the next.
	ns, nsHash := "", tab.Hash("")
	var errs field.ErrorList
	for i := range pods {
		p := &pods[i]
		if p.Namespace != ns {
			ns, nsHash = p.Namespace, tab.Hash(p.Namespace)
		}
		if j := tab.Insert(nsHash^tab.Hash(p.Name), i, func(j int) bool {
			return j < n && pods[j].Name == p.Name && pods[j].Namespace == p.Namespace
		}); j >= 0 {
			errs = append(errs, field.Duplicate(field.NewPath("pods").Index(i).Child("metadata", "name"), p.Namespace+"/"+p.Name))
		}
		if p.UID == "" {
			continue
		}
		if j := tab.Insert(tab.Hash(string(p.UID)), n+i, func(j int) bool { return j >= n && pods[j-n].UID == p.UID }); j >= 0 {
			errs = append(errs, field.Duplicate(field.NewPath("pods").Index(i).Child("metadata", "uid"), p.UID))
		}
	}
	return errs
}

// Validate reports every problem of c at once, in a *plancore.InvalidError
// wrapping ErrInvalidInput: fields from which no valid pod can be built
// (names, containers, template and group labels, numOfHosts negative or
// above MaxNumOfHosts), replica counts that are negative or whose product with
// numOfHosts passes MaxInt32, an unknown upgrade strategy, and every rule
// KubeRay v1.7's controller checks before it reconciles pods: a name of at
// most MaxClusterNameLength characters that is a DNS-1035 label;
// minReplicas and maxReplicas both set without autoscaling, and min ≤ max;
// no suspended worker group with autoscaling; Ray resources and labels given
// once; the GCS fault tolerance and autoscaler v2 settings consistent; no
// upgrade strategy on a cluster a RayJob or RayService created; and not both
// RayClusterSuspending and RayClusterSuspended. KubeRay stops at the first and
// creates nothing; Validate names them all. numOfHosts 0 means 1. Decide
// refuses exactly what Validate refuses.
func (c Cluster) Validate() error {
	return plancore.Invalid(ErrInvalidInput, validateCluster(&c))
}

func validateCluster(c *Cluster) field.ErrorList {
	var errs field.ErrorList
	// Paths are built only for a problem: Decide validates on every pass.
	meta := func() *field.Path { return field.NewPath("metadata") }
	nameErrs := len(errs)
	switch {
	case c.Name == "":
		errs = append(errs, field.Required(meta().Child("name"), ""))
	default:
		if nameErrs, bad := validateClusterName(c.Name); bad {
			errs = append(errs, nameErrs...)
		} else if !validGeneratedName(podNamePrefix(c.Name, NodeTypeHead, true)) {
			errs = append(errs, generatedNameError(meta().Child("name"), c.Name, podNamePrefix(c.Name, NodeTypeHead, true)))
		}
	}
	// A bad cluster name is reported once, not again in every group's pod
	// names: the groups' names are then checked on their own.
	cluster := c.Name
	if len(errs) > nameErrs {
		cluster = ""
	}
	if c.Namespace == "" {
		errs = append(errs, field.Required(meta().Child("namespace"), ""))
	} else if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
		errs = append(errs, field.Invalid(meta().Child("namespace"), c.Namespace, strings.Join(msgs, "; ")))
	}
	head := func() *field.Path { return field.NewPath("spec", "headGroupSpec", "template") }
	if len(c.Spec.HeadGroup.Template.Spec.Containers) == 0 {
		errs = append(errs, field.Required(head().Child("spec", "containers"), "the Ray container must be first"))
	}
	errs = append(errs, validateLabels(func() *field.Path { return head().Child("metadata", "labels") }, c.Spec.HeadGroup.Template.Labels)...)
	seen := groupNames{groups: c.Spec.WorkerGroups}
	for i := range c.Spec.WorkerGroups {
		errs = append(errs, validateGroup(&c.Spec.WorkerGroups[i], i, cluster, &seen)...)
	}
	if us := c.Spec.UpgradeStrategy; us != nil && us.Type != nil {
		switch *us.Type {
		case UpgradeRecreate, UpgradeNone:
		default:
			errs = append(errs, field.NotSupported(field.NewPath("spec", "upgradeStrategy", "type"), *us.Type, []string{UpgradeRecreate, UpgradeNone}))
		}
	}
	return append(errs, validateControllerRules(c)...)
}

// groupPath is the path of worker group i, built only for an error: Decide
// validates on every pass.
func groupPath(i int) *field.Path {
	return field.NewPath("spec", "workerGroupSpecs").Index(i)
}

// validateGroup checks worker group i: its name, containers, labels, hosts,
// replica bounds and the pod count they give.
func validateGroup(g *WorkerGroup, i int, cluster string, seen *groupNames) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateGroupName(g, i, cluster, seen)...)
	if len(g.Template.Spec.Containers) == 0 {
		errs = append(errs, field.Required(groupPath(i).Child("template", "spec", "containers"), "the Ray container must be first"))
	}
	errs = append(errs, validateLabels(func() *field.Path { return groupPath(i).Child("labels") }, g.Labels)...)
	errs = append(errs, validateLabels(func() *field.Path { return groupPath(i).Child("template", "metadata", "labels") }, g.Template.Labels)...)
	switch {
	case g.NumOfHosts < 0:
		errs = append(errs, field.Invalid(groupPath(i).Child("numOfHosts"), g.NumOfHosts, "must not be negative (0 means 1)"))
	case g.NumOfHosts > MaxNumOfHosts:
		errs = append(errs, field.Invalid(groupPath(i).Child("numOfHosts"), g.NumOfHosts, "exceeds 10000: a replica group is created as one unit"))
	}
	errs = append(errs, validateReplicas(g, i)...)
	return errs
}

func validateGroupName(g *WorkerGroup, i int, cluster string, seen *groupNames) field.ErrorList {
	name := func() *field.Path { return groupPath(i).Child("groupName") }
	if g.GroupName == "" {
		return field.ErrorList{field.Required(name(), "")}
	}
	if msgs := validation.IsValidLabelValue(g.GroupName); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(name(), g.GroupName, "not a valid label value: "+strings.Join(msgs, "; "))}
	}
	if seen.repeated(i) {
		return field.ErrorList{field.Duplicate(name(), g.GroupName)}
	}
	if cluster != "" {
		if prefix := podNamePrefix(cluster+"-"+g.GroupName, NodeTypeWorker, true); !validGeneratedName(prefix) {
			return field.ErrorList{generatedNameError(name(), g.GroupName, prefix)}
		}
	}
	// The replica name <group>-<5 chars> is a label value (≤ 63 chars).
	if g.NumOfHosts > 1 && len(g.GroupName)+len("-bbbbb") > validation.LabelValueMaxLength {
		msgs := validation.IsValidLabelValue(g.GroupName + "-bbbbb")
		return field.ErrorList{field.Invalid(name(), g.GroupName, "cannot produce a replica name label: "+strings.Join(msgs, "; "))}
	}
	return nil
}

// linearGroups is the number of worker groups up to which a repeated group
// name is found by comparing with every earlier group: at most 2,016
// comparisons, and no map built on every Decide (a cluster has a handful of
// groups).
const linearGroups = 64

// groupNames finds repeated worker group names.
type groupNames struct {
	groups []WorkerGroup
	set    map[string]struct{} // the names seen, past linearGroups only
}

// repeated reports whether group i's name was given to an earlier group.
// validateGroupName asks it only for a name that is a valid label value, in
// group order, so an earlier group with that name was asked too.
func (n *groupNames) repeated(i int) bool {
	name := n.groups[i].GroupName
	if len(n.groups) <= linearGroups {
		for j := range i {
			if n.groups[j].GroupName == name {
				return true
			}
		}
		return false
	}
	if n.set == nil {
		n.set = make(map[string]struct{}, len(n.groups))
	}
	if _, dup := n.set[name]; dup {
		return true
	}
	n.set[name] = struct{}{}
	return false
}

// validateReplicas checks the replica bounds and that replicas × numOfHosts,
// the pods the group asks for, fits in an int32 (KubeRay multiplies in int32
// and wraps).
func validateReplicas(g *WorkerGroup, i int) field.ErrorList {
	var errs field.ErrorList
	neg := func(name string, v *int32) {
		if v != nil && *v < 0 {
			errs = append(errs, field.Invalid(groupPath(i).Child(name), *v, "must not be negative"))
		}
	}
	neg("replicas", g.Replicas)
	neg("minReplicas", g.MinReplicas)
	neg("maxReplicas", g.MaxReplicas)
	if len(errs) > 0 {
		return errs
	}
	hosts := int64(max(1, g.NumOfHosts))
	if r := int64(clampReplicas(g)); r*hosts > math.MaxInt32 {
		name, v := "replicas", g.Replicas
		switch {
		case g.Replicas == nil || (g.MinReplicas != nil && *g.Replicas < *g.MinReplicas):
			name, v = "minReplicas", g.MinReplicas
		case g.MaxReplicas != nil && *g.Replicas > *g.MaxReplicas:
			name, v = "maxReplicas", g.MaxReplicas
		}
		errs = append(errs, field.Invalid(groupPath(i).Child(name), *v,
			"times numOfHosts "+strconv.Itoa(int(hosts))+" exceeds 2147483647 pods"))
	}
	return errs
}

// validateLabels checks each key and value of a label map, reporting in key
// order so the same problems come in the same order. Valid maps, the usual
// case on every Decide, cost no allocation.
func validateLabels(pathOf func() *field.Path, labels map[string]string) field.ErrorList {
	bad := false
	for k, v := range labels {
		if len(validation.IsQualifiedName(k)) > 0 || len(validation.IsValidLabelValue(v)) > 0 {
			bad = true
			break
		}
	}
	if !bad {
		return nil
	}
	var errs field.ErrorList
	path := pathOf()
	for _, k := range sortedKeys(labels) {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, field.Invalid(path, k, "key: "+strings.Join(msgs, "; ")))
		}
		if msgs := validation.IsValidLabelValue(labels[k]); len(msgs) > 0 {
			errs = append(errs, field.Invalid(path.Key(k), labels[k], strings.Join(msgs, "; ")))
		}
	}
	return errs
}

// validGeneratedName reports whether prefix plus a 5-character suffix is a
// valid pod name.
func validGeneratedName(prefix string) bool {
	return len(validation.IsDNS1123Subdomain(prefix+"bbbbb")) == 0
}

func generatedNameError(path *field.Path, value, prefix string) *field.Error {
	return field.Invalid(path, value, "gives pod names like "+prefix+"bbbbb that are invalid: "+
		strings.Join(validation.IsDNS1123Subdomain(prefix+"bbbbb"), "; "))
}
