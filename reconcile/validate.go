package reconcile

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxNumOfHosts bounds numOfHosts: a multi-host replica group is planned as
// one unit of that many pods, so an absurd value must not reach the planner.
const MaxNumOfHosts = 10000

// checkStructure rejects input from which no valid pod can be built. Decide
// calls it; everything it accepts, Decide plans without panicking.
func checkStructure(c *Cluster) error {
	if c.Name == "" {
		return fmt.Errorf("%w: Cluster.Name is empty", ErrInvalidCluster)
	}
	if errs := validation.IsValidLabelValue(c.Name); len(errs) > 0 {
		return fmt.Errorf("%w: Cluster.Name %q is not a valid label value: %s", ErrInvalidCluster, c.Name, strings.Join(errs, "; "))
	}
	if c.Namespace == "" {
		return fmt.Errorf("%w: Cluster.Namespace is empty", ErrInvalidCluster)
	}
	if errs := validation.IsDNS1123Label(c.Namespace); len(errs) > 0 {
		return fmt.Errorf("%w: Cluster.Namespace %q: %s", ErrInvalidCluster, c.Namespace, strings.Join(errs, "; "))
	}
	if len(c.Spec.HeadGroup.Template.Spec.Containers) == 0 {
		return fmt.Errorf("%w: Spec.HeadGroup.Template.Spec.Containers is empty (the Ray container must be first)", ErrInvalidCluster)
	}
	if err := checkGeneratedName("Cluster.Name", c.Name, podNamePrefix(c.Name, "head", true)); err != nil {
		return err
	}
	seen := make(map[string]int, len(c.Spec.WorkerGroups))
	for i := range c.Spec.WorkerGroups {
		g := &c.Spec.WorkerGroups[i]
		if err := checkGroup(g, i, c.Name, seen); err != nil {
			return err
		}
	}
	return nil
}

// groupField names worker group i in error messages.
func groupField(i int) string { return "Spec.WorkerGroups[" + strconv.Itoa(i) + "]" }

// checkGroup is checkStructure for worker group i. Decide calls it on every
// pass, so the group's field name is built only for an error.
func checkGroup(g *WorkerGroup, i int, cluster string, seen map[string]int) error {
	if g.GroupName == "" {
		return fmt.Errorf("%w: %s.GroupName is empty", ErrInvalidCluster, groupField(i))
	}
	if errs := validation.IsValidLabelValue(g.GroupName); len(errs) > 0 {
		return fmt.Errorf("%w: %s.GroupName %q is not a valid label value: %s", ErrInvalidCluster, groupField(i), g.GroupName, strings.Join(errs, "; "))
	}
	if j, dup := seen[g.GroupName]; dup {
		return fmt.Errorf("%w: %s.GroupName %q duplicates %s", ErrInvalidCluster, groupField(i), g.GroupName, groupField(j))
	}
	seen[g.GroupName] = i
	if len(g.Template.Spec.Containers) == 0 {
		return fmt.Errorf("%w: %s.Template.Spec.Containers is empty (group %q; the Ray container must be first)", ErrInvalidCluster, groupField(i), g.GroupName)
	}
	if prefix := podNamePrefix(cluster+"-"+g.GroupName, NodeTypeWorker, true); !validGeneratedName(prefix) {
		return checkGeneratedName(groupField(i)+".GroupName", g.GroupName, prefix)
	}
	if g.NumOfHosts > MaxNumOfHosts {
		return fmt.Errorf("%w: %s.NumOfHosts = %d exceeds %d (group %q): a replica group is created as one unit", ErrInvalidCluster, groupField(i), g.NumOfHosts, MaxNumOfHosts, g.GroupName)
	}
	if g.NumOfHosts > 1 {
		// The replica name <group>-<5 chars> is a label value (≤ 63 chars).
		if errs := validation.IsValidLabelValue(g.GroupName + "-bbbbb"); len(errs) > 0 {
			return fmt.Errorf("%w: %s.GroupName %q cannot produce a replica name label: %s", ErrInvalidCluster, groupField(i), g.GroupName, strings.Join(errs, "; "))
		}
	}
	// Sorted, so that of several bad labels the same one is always reported.
	for _, k := range sortedKeys(g.Labels) {
		if err := checkLabel(groupField(i)+".Labels", k, g.Labels[k]); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidCluster, err)
		}
	}
	return nil
}

// validGeneratedName reports whether prefix plus a 5-character suffix is a
// valid pod name.
func validGeneratedName(prefix string) bool {
	return len(validation.IsDNS1123Subdomain(prefix+"bbbbb")) == 0
}

// checkGeneratedName checks that prefix plus a 5-character suffix is a valid
// pod name.
func checkGeneratedName(field, value, prefix string) error {
	if errs := validation.IsDNS1123Subdomain(prefix + "bbbbb"); len(errs) > 0 {
		return fmt.Errorf("%w: %s %q gives pod names like %q that are invalid: %s", ErrInvalidCluster, field, value, prefix+"bbbbb", strings.Join(errs, "; "))
	}
	return nil
}

func checkLabel(field, k, v string) error {
	if errs := validation.IsQualifiedName(k); len(errs) > 0 {
		return fmt.Errorf("%s key %q: %s", field, k, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
		return fmt.Errorf("%s[%q] value %q: %s", field, k, v, strings.Join(errs, "; "))
	}
	return nil
}

// Validate applies the rules KubeRay's validation enforces before pods are
// reconciled (§0), on top of the structural checks Decide itself makes.
// Decide does not call it: it plans even for specs that fail it (for example
// min > max, where min wins), exactly as KubeRay's pod logic would.
func (c Cluster) Validate() error {
	if err := checkStructure(&c); err != nil {
		return err
	}
	autoscaling := c.Spec.EnableInTreeAutoscaling != nil && *c.Spec.EnableInTreeAutoscaling
	for i := range c.Spec.WorkerGroups {
		g := &c.Spec.WorkerGroups[i]
		field := fmt.Sprintf("Spec.WorkerGroups[%d]", i)
		if g.Replicas != nil && *g.Replicas < 0 {
			return fmt.Errorf("%w: %s.Replicas = %d is negative (group %q)", ErrInvalidSpec, field, *g.Replicas, g.GroupName)
		}
		if !autoscaling && (g.MinReplicas == nil || g.MaxReplicas == nil) {
			return fmt.Errorf("%w: %s.MinReplicas and MaxReplicas are required when autoscaling is off (group %q)", ErrInvalidSpec, field, g.GroupName)
		}
		if g.MinReplicas != nil && *g.MinReplicas < 0 {
			return fmt.Errorf("%w: %s.MinReplicas = %d is negative (group %q)", ErrInvalidSpec, field, *g.MinReplicas, g.GroupName)
		}
		if g.MaxReplicas != nil && *g.MaxReplicas < 0 {
			return fmt.Errorf("%w: %s.MaxReplicas = %d is negative (group %q)", ErrInvalidSpec, field, *g.MaxReplicas, g.GroupName)
		}
		if g.MinReplicas != nil && g.MaxReplicas != nil && *g.MinReplicas > *g.MaxReplicas {
			return fmt.Errorf("%w: %s.MinReplicas = %d is greater than MaxReplicas = %d (group %q)", ErrInvalidSpec, field, *g.MinReplicas, *g.MaxReplicas, g.GroupName)
		}
		if g.NumOfHosts < 1 {
			return fmt.Errorf("%w: %s.NumOfHosts = %d is below 1 (group %q)", ErrInvalidSpec, field, g.NumOfHosts, g.GroupName)
		}
		if g.Suspend != nil && *g.Suspend && autoscaling {
			return fmt.Errorf("%w: %s.Suspend is true but in-tree autoscaling is on (group %q)", ErrInvalidSpec, field, g.GroupName)
		}
	}
	if us := c.Spec.UpgradeStrategy; us != nil && us.Type != nil {
		switch *us.Type {
		case UpgradeRecreate, UpgradeNone:
		default:
			return fmt.Errorf("%w: Spec.UpgradeStrategy.Type %q is not %q or %q", ErrInvalidSpec, *us.Type, UpgradeRecreate, UpgradeNone)
		}
	}
	return nil
}
