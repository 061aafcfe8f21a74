package fake

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// NewPodClient builds a fresh PodClient for one conformance check and names
// the (empty) namespace the check may use.
type NewPodClient func(ctx context.Context) (client PodClient, namespace string, err error)

// CheckPodClient runs the PodClient contract against clients built by
// newClient, in the style of testing/fstest.TestFS, and returns every
// violation it finds (nil when the implementation conforms). Each check gets
// a fresh client and namespace. The pods it creates are minimal but valid
// (one container), so a real API server accepts them; it tolerates a deleted
// pod that stays terminating, as a pod bound to a node does.
func CheckPodClient(ctx context.Context, newClient NewPodClient) []Violation {
	return runChecks(ctx, podChecks, func(ctx context.Context) (podHarness, error) {
		c, ns, err := newClient(ctx)
		return podHarness{c: c, ns: ns}, err
	})
}

// podHarness is one check's client and the namespace it works in.
type podHarness struct {
	c  PodClient
	ns string
}

// podCheck adapts a check over a client and its namespace to the one table
// form every suite uses.
func podCheck(name string, run func(ctx context.Context, c PodClient, ns string) []string) check[podHarness] {
	return check[podHarness]{name: name, run: func(ctx context.Context, h podHarness) []string { return run(ctx, h.c, h.ns) }}
}

// conformancePod is a minimal valid pod.
func conformancePod(ns, name, generateName string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    ns,
			Name:         name,
			GenerateName: generateName,
			Labels:       map[string]string{"plancore.io/conformance": "yes"},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.9"}}},
	}
}

// goneOrTerminating reports whether the pod is absent or terminating, or why
// the answer could not be had.
func goneOrTerminating(ctx context.Context, c PodClient, ns, name string) (bool, string) {
	p, err := c.GetPod(ctx, ns, name)
	switch {
	case apierrors.IsNotFound(err):
		return true, ""
	case err != nil:
		return false, fmt.Sprintf("get %s after delete: %v", name, err)
	}
	return p.DeletionTimestamp != nil, ""
}

var podChecks = []check[podHarness]{
	podCheck("create with a fixed name stores the pod", func(ctx context.Context, c PodClient, ns string) []string {
		got, err := c.CreatePod(ctx, conformancePod(ns, "fixed", ""))
		if err != nil {
			return []string{fmt.Sprintf("create: %v", err)}
		}
		var out []string
		if got.Name != "fixed" || got.Namespace != ns || got.UID == "" || got.ResourceVersion == "" {
			out = append(out, fmt.Sprintf("create returned name %q namespace %q uid %q resourceVersion %q; want the name, the namespace, a UID and a resourceVersion", got.Name, got.Namespace, got.UID, got.ResourceVersion))
		}
		read, err := c.GetPod(ctx, ns, "fixed")
		if err != nil {
			return append(out, fmt.Sprintf("get after create: %v", err))
		}
		if read.UID != got.UID {
			out = append(out, fmt.Sprintf("get returned uid %q, create returned %q", read.UID, got.UID))
		}
		return out
	}),
	podCheck("create of an existing name reports AlreadyExists and changes nothing", func(ctx context.Context, c PodClient, ns string) []string {
		first, err := c.CreatePod(ctx, conformancePod(ns, "dup", ""))
		if err != nil {
			return []string{fmt.Sprintf("first create: %v", err)}
		}
		second := conformancePod(ns, "dup", "")
		second.Labels["changed"] = "yes"
		_, err = c.CreatePod(ctx, second)
		var out []string
		if !apierrors.IsAlreadyExists(err) {
			out = append(out, fmt.Sprintf("second create returned %v, want an AlreadyExists error", err))
		}
		read, err := c.GetPod(ctx, ns, "dup")
		if err != nil {
			return append(out, fmt.Sprintf("get: %v", err))
		}
		if read.UID != first.UID || read.Labels["changed"] != "" {
			out = append(out, "the second create replaced or changed the first pod")
		}
		return out
	}),
	podCheck("create with GenerateName gets a fresh name with the prefix", func(ctx context.Context, c PodClient, ns string) []string {
		a, errA := c.CreatePod(ctx, conformancePod(ns, "", "gen-"))
		b, errB := c.CreatePod(ctx, conformancePod(ns, "", "gen-"))
		if errA != nil || errB != nil {
			return []string{fmt.Sprintf("creates: %v, %v", errA, errB)}
		}
		var out []string
		for _, p := range []corev1.Pod{a, b} {
			if !strings.HasPrefix(p.Name, "gen-") || len(p.Name) <= len("gen-") {
				out = append(out, fmt.Sprintf("generated name %q lacks the prefix or a suffix", p.Name))
			}
		}
		if a.Name == b.Name || a.UID == b.UID {
			out = append(out, fmt.Sprintf("two creates got the same name %q or uid %q", a.Name, a.UID))
		}
		return out
	}),
	podCheck("get of a missing pod reports NotFound", func(ctx context.Context, c PodClient, ns string) []string {
		if _, err := c.GetPod(ctx, ns, "missing"); !apierrors.IsNotFound(err) {
			return []string{fmt.Sprintf("get returned %v, want a NotFound error", err)}
		}
		return nil
	}),
	podCheck("delete of a missing pod reports NotFound", func(ctx context.Context, c PodClient, ns string) []string {
		if err := c.DeletePod(ctx, ns, "missing", DeleteOptions{}); !apierrors.IsNotFound(err) {
			return []string{fmt.Sprintf("delete returned %v, want a NotFound error", err)}
		}
		return nil
	}),
	podCheck("delete twice removes the pod once", func(ctx context.Context, c PodClient, ns string) []string {
		p, err := c.CreatePod(ctx, conformancePod(ns, "twice", ""))
		if err != nil {
			return []string{fmt.Sprintf("create: %v", err)}
		}
		var out []string
		if err := c.DeletePod(ctx, ns, "twice", DeleteOptions{UID: p.UID}); err != nil {
			out = append(out, fmt.Sprintf("first delete: %v", err))
		}
		if ok, why := goneOrTerminating(ctx, c, ns, "twice"); why != "" {
			out = append(out, why)
		} else if !ok {
			out = append(out, "after delete the pod is neither gone nor terminating")
		}
		// The second delete finds the pod gone (NotFound) or terminating (success).
		if err := c.DeletePod(ctx, ns, "twice", DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			out = append(out, fmt.Sprintf("second delete returned %v, want success or a NotFound error", err))
		}
		if ok, why := goneOrTerminating(ctx, c, ns, "twice"); why != "" {
			out = append(out, why)
		} else if !ok {
			out = append(out, "after the second delete the pod is neither gone nor terminating")
		}
		return out
	}),
	podCheck("delete with another pod's UID reports Conflict and keeps the pod", func(ctx context.Context, c PodClient, ns string) []string {
		p, err := c.CreatePod(ctx, conformancePod(ns, "guarded", ""))
		if err != nil {
			return []string{fmt.Sprintf("create: %v", err)}
		}
		var out []string
		if err := c.DeletePod(ctx, ns, "guarded", DeleteOptions{UID: "not-" + p.UID}); !apierrors.IsConflict(err) {
			out = append(out, fmt.Sprintf("delete returned %v, want a Conflict error", err))
		}
		read, err := c.GetPod(ctx, ns, "guarded")
		if err != nil {
			return append(out, fmt.Sprintf("get: %v", err))
		}
		if read.DeletionTimestamp != nil {
			out = append(out, "the pod is terminating after a delete whose precondition failed")
		}
		return out
	}),
	podCheck("list returns the namespace's matching pods sorted by name", func(ctx context.Context, c PodClient, ns string) []string {
		for _, n := range []string{"b", "a"} {
			if _, err := c.CreatePod(ctx, conformancePod(ns, n, "")); err != nil {
				return []string{fmt.Sprintf("create %s: %v", n, err)}
			}
		}
		other := conformancePod(ns, "c", "")
		other.Labels = map[string]string{"plancore.io/conformance": "no"}
		if _, err := c.CreatePod(ctx, other); err != nil {
			return []string{fmt.Sprintf("create c: %v", err)}
		}
		sel := labels.SelectorFromSet(labels.Set{"plancore.io/conformance": "yes"})
		got, err := c.ListPods(ctx, ns, sel)
		if err != nil {
			return []string{fmt.Sprintf("list: %v", err)}
		}
		var names []string
		for _, p := range got {
			names = append(names, p.Name)
		}
		if strings.Join(names, ",") != "a,b" {
			return []string{fmt.Sprintf("list returned %v, want [a b]", names)}
		}
		return nil
	}),
}
