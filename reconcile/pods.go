package reconcile

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podNamePrefix is KubeRay's utils.PodName: the prefix cut to its first 50
// bytes, lower-cased, then "-<type>", plus "-" for GenerateName.
func podNamePrefix(prefix, nodeType string, generate bool) string {
	if len(prefix) > 50 {
		prefix = prefix[:50]
	}
	name := strings.ToLower(prefix + "-" + nodeType)
	if generate {
		name += "-"
	}
	return name
}

// identifierLabel is KubeRay's CheckLabel: the last 63 characters, with a
// leading non-alphanumeric character replaced by 'r'.
func identifierLabel(s string) string {
	if len(s) > 63 {
		s = s[len(s)-63:]
	}
	if s != "" && !isAlnum(s[0]) {
		s = "r" + s[1:]
	}
	return s
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// suffix5 derives five characters of nameAlphabet from the seed and parts.
func suffix5(seed uint64, parts ...string) string {
	h := sha256.New()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	for _, p := range parts {
		binary.BigEndian.PutUint64(b[:], uint64(len(p)))
		h.Write(b[:])
		h.Write([]byte(p))
	}
	sum := h.Sum(nil)
	x := binary.BigEndian.Uint64(sum[:8])
	var out [5]byte
	for i := range out {
		out[i] = nameAlphabet[x%uint64(len(nameAlphabet))]
		x /= uint64(len(nameAlphabet))
	}
	return string(out[:])
}

// podSpec describes one pod to build.
type podSpec struct {
	head         bool
	group        *WorkerGroup
	replicaIndex int    // -1: no index label
	replicaName  string // multi-host only
	hostIndex    int    // -1: no host label
}

// buildPod makes the complete pod body for ps: the template deep-copied,
// transformed by the PodBuilder, then given KubeRay's identity.
func (d *decider) buildPod(ps podSpec) (*corev1.Pod, error) {
	c := &d.s.Cluster
	var tmpl *corev1.PodTemplateSpec
	nodeType, group := NodeTypeHead, HeadGroupLabel
	if ps.head {
		tmpl = &c.Spec.HeadGroup.Template
	} else {
		tmpl = &ps.group.Template
		nodeType, group = NodeTypeWorker, ps.group.GroupName
	}
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: *tmpl.ObjectMeta.DeepCopy(),
		Spec:       *tmpl.Spec.DeepCopy(),
	}
	pod.Namespace = c.Namespace
	pod.Name, pod.GenerateName = "", ""
	pod.UID, pod.ResourceVersion = "", ""
	if len(d.o.PodDefaults.Sidecars) > 0 {
		for i := range d.o.PodDefaults.Sidecars {
			pod.Spec.Containers = append(pod.Spec.Containers, *d.o.PodDefaults.Sidecars[i].DeepCopy())
		}
	}
	if len(d.o.PodDefaults.Env) > 0 && len(pod.Spec.Containers) > 0 {
		ray := &pod.Spec.Containers[0]
		for _, e := range d.o.PodDefaults.Env {
			if !hasEnv(ray.Env, e.Name) {
				ray.Env = append(ray.Env, *e.DeepCopy())
			}
		}
	}
	if d.o.PodBuilder != nil {
		info := BuildInfo{Cluster: c, Head: ps.head, Group: group, ReplicaIndex: ps.replicaIndex, HostIndex: ps.hostIndex}
		if err := d.o.PodBuilder(pod, info); err != nil {
			return nil, fmt.Errorf("%w: group %q: %v", ErrPodBuilder, group, err)
		}
	}

	// Labels: defaults, then template labels merged with the group's labels
	// (the group's win) override all but the three fixed keys, then the index
	// labels, then operator defaults where absent.
	labels := map[string]string{
		LabelIsRayNode:  "yes",
		LabelIdentifier: identifierLabel(c.Name + "-" + nodeType),
		LabelAppName:    "kuberay",
		LabelCreatedBy:  "kuberay-operator",
	}
	for k, v := range pod.Labels {
		labels[k] = v
	}
	groupLabels := c.Spec.HeadGroup.Labels
	if !ps.head {
		groupLabels = ps.group.Labels
	}
	for k, v := range groupLabels {
		labels[k] = v
	}
	labels[LabelCluster] = c.Name
	labels[LabelNodeType] = nodeType
	labels[LabelGroup] = group
	if ps.replicaIndex >= 0 {
		labels[LabelReplicaIndex] = strconv.Itoa(ps.replicaIndex)
	}
	if ps.replicaName != "" {
		labels[LabelReplicaName] = ps.replicaName
		labels[LabelHostIndex] = strconv.Itoa(ps.hostIndex)
	}
	for k, v := range d.o.PodDefaults.Labels {
		if _, ok := labels[k]; !ok {
			labels[k] = v
		}
	}
	pod.Labels = labels

	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	if ps.head {
		pod.Annotations[AnnotationRecreateHash] = d.hash
		pod.Annotations[AnnotationKubeRayVersion] = d.o.operatorVersion()
		pod.Annotations[AnnotationFTEnabled] = strconv.FormatBool(ftEnabled(c))
	}
	for k, v := range d.o.PodDefaults.Annotations {
		if _, ok := pod.Annotations[k]; !ok {
			pod.Annotations[k] = v
		}
	}
	t := true
	pod.OwnerReferences = append(pod.OwnerReferences[:0:0], metav1.OwnerReference{
		APIVersion: "ray.io/v1", Kind: "RayCluster", Name: c.Name, UID: c.UID,
		Controller: &t, BlockOwnerDeletion: &t,
	})
	return pod, nil
}

func hasEnv(env []corev1.EnvVar, name string) bool {
	for _, e := range env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// ftEnabled is KubeRay's IsGCSFaultToleranceEnabled.
func ftEnabled(c *Cluster) bool {
	return strings.EqualFold(c.Annotations[AnnotationFTEnabled], "true") || c.Spec.GcsFaultToleranceOptions != nil
}

// deleteVerdict is shouldDeletePod's answer.
type deleteVerdict struct {
	del     bool
	code    ReasonCode
	message string
}

// shouldDeletePod is KubeRay's shouldDeletePod. nodeType is "head" or
// "worker". The message texts that surface as requeue messages are
// byte-exact; the explanations for kept pods are plancore's own.
func shouldDeletePod(p *corev1.Pod, nodeType string) deleteVerdict {
	// The messages are concatenated rather than formatted: this runs for
	// every pod of every group, and Sprintf would box each argument.
	switch p.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
		code := ReasonWorkerTerminalPhase
		if nodeType == NodeTypeHead {
			code = ReasonHeadTerminalPhase
		}
		return deleteVerdict{true, code,
			"The " + nodeType + " Pod " + p.Name + " status is " + string(p.Status.Phase) +
				" which is a terminal state. KubeRay will delete the Pod and create new Pods in the next reconciliation if necessary."}
	case corev1.PodRunning:
		// KubeRay looks up the Ray container's status first; only a pod that
		// cannot restart it is deleted, so the restart policy, one field of
		// the pod, is checked before the container statuses are searched.
		if p.Spec.RestartPolicy != corev1.RestartPolicyNever {
			return deleteVerdict{}
		}
		term := rayContainerTerminated(p)
		if term == nil {
			return deleteVerdict{}
		}
		code := ReasonWorkerContainerExited
		if nodeType == NodeTypeHead {
			code = ReasonHeadContainerExited
		}
		return deleteVerdict{true, code,
			"The Pod status of the " + nodeType + " Pod " + p.Name + " is Running, and the Ray container terminated status is " + term.String() +
				". The container is unable to restart due to its restart policy Never, so KubeRay will delete it."}
	}
	return deleteVerdict{}
}

// mayDelete is the part of shouldDeletePod that reads only the pod's phase
// and restart policy: when it is false, shouldDeletePod keeps the pod.
func mayDelete(p *corev1.Pod) bool {
	switch p.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
		return true
	case corev1.PodRunning:
		return p.Spec.RestartPolicy == corev1.RestartPolicyNever
	}
	return false
}

// rayContainerTerminated finds the status entry named like the first
// container. A pod without containers, or without that entry, counts as not
// terminated (KubeRay would index out of range on the former).
func rayContainerTerminated(p *corev1.Pod) *corev1.ContainerStateTerminated {
	if len(p.Spec.Containers) == 0 {
		return nil
	}
	name := p.Spec.Containers[0].Name
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return p.Status.ContainerStatuses[i].State.Terminated
		}
	}
	return nil
}

func terminating(p *corev1.Pod) bool { return p.DeletionTimestamp != nil }

// replicaIndexOf parses the replica index label; ok is false when it is
// missing or not a non-negative integer (such labels are ignored).
func replicaIndexOf(p *corev1.Pod) (int, bool) {
	v, ok := p.Labels[LabelReplicaIndex]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

func hostIndexOf(p *corev1.Pod) (int, bool) {
	n, err := strconv.Atoi(p.Labels[LabelHostIndex])
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}
