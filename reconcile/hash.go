package reconcile

import (
	"crypto/sha1"
	"encoding/base32"
	"encoding/json"
	"fmt"
)

// SpecHash computes the hash KubeRay stores in the head's
// ray.io/upgrade-strategy-recreate-hash annotation, over plancore's spec
// type: a defaulted copy (nil rayStartParams become {}), with replicas, min,
// max, workersToDelete, template tolerations and scheduling gates and the
// whole upgrade strategy cleared, marshalled with encoding/json, SHA-1, then
// base32 hex. The input is never written (KubeRay wrote defaults into it).
func SpecHash(spec ClusterSpec) (string, error) {
	// c and its groups are shallow copies: the cleared fields are set on the
	// copies only, and json.Marshal reads what they share with spec.
	c := spec
	c.UpgradeStrategy = nil
	c.HeadGroup.Template.Spec.Tolerations = nil
	c.HeadGroup.Template.Spec.SchedulingGates = nil
	if c.HeadGroup.RayStartParams == nil {
		c.HeadGroup.RayStartParams = map[string]string{}
	}
	c.WorkerGroups = make([]WorkerGroup, len(spec.WorkerGroups))
	for i := range spec.WorkerGroups {
		g := spec.WorkerGroups[i]
		g.Replicas, g.MinReplicas, g.MaxReplicas = nil, nil, nil
		g.ScaleStrategy.WorkersToDelete = nil
		g.Template.Spec.Tolerations = nil
		g.Template.Spec.SchedulingGates = nil
		if g.RayStartParams == nil {
			g.RayStartParams = map[string]string{}
		}
		c.WorkerGroups[i] = g
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrHash, err)
	}
	sum := sha1.Sum(b)
	return base32.HexEncoding.EncodeToString(sum[:]), nil
}
