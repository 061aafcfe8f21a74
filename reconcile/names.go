package reconcile

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// name sets the pod's GenerateName, or a derived Name in NameModeDerived: the
// prefix plus five characters from (Seed, cluster UID, group, replica, host,
// attempt), the attempt growing until the name collides with no pod.
func (d *decider) name(pod *corev1.Pod, prefix, group string, replica, host int) {
	if !d.o.derivedNames() {
		pod.GenerateName = prefix
		return
	}
	if d.taken == nil {
		d.taken = make(map[string]bool)
		for i := range d.s.Pods {
			if d.s.Pods[i].Namespace == d.s.Cluster.Namespace {
				d.taken[d.s.Pods[i].Name] = true
			}
		}
	}
	for attempt := 0; ; attempt++ {
		n := prefix + suffix5(d.s.Seed, string(d.s.Cluster.UID), group, strconv.Itoa(replica), strconv.Itoa(host), strconv.Itoa(attempt))
		if !d.taken[n] {
			d.taken[n] = true
			pod.Name = n
			return
		}
	}
}

// replicaName derives <group>-<5 chars> for a new replica group, unique among
// the replica names of the group's pods (terminating ones included).
func (d *decider) replicaName(gi int, index int) string {
	g := d.s.Cluster.Spec.WorkerGroups[gi].GroupName
	if d.replicas == nil {
		d.replicas = map[string]bool{}
	}
	for _, i := range d.groupPods(gi) {
		if r := d.pod(i).Labels[LabelReplicaName]; r != "" {
			d.replicas[r] = true
		}
	}
	for attempt := 0; ; attempt++ {
		n := g + "-" + suffix5(d.s.Seed, string(d.s.Cluster.UID), g, "replica", strconv.Itoa(index), strconv.Itoa(attempt))
		if !d.replicas[n] {
			d.replicas[n] = true
			return n
		}
	}
}
