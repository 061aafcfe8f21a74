package expectations_test

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/plancore/plancore/expectations"
)

// Example is a partial failure: two creates recorded before their calls;
// one succeeds, one is refused by a quota and rolled back, so the group waits
// only for the pod that was made.
func Example() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rc := expectations.Owner{Namespace: "ray", Name: "rc", UID: "3f1c"}
	st, _ := expectations.New(expectations.Options{})

	t1, _ := st.Record(now, expectations.Record{Owner: rc, Group: "gpu", Action: expectations.Create, Token: "t1"})
	t2, _ := st.Record(now, expectations.Record{Owner: rc, Group: "gpu", Action: expectations.Create, Token: "t2"})

	quota := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("exceeded quota"))
	st.Conclude(now, t1, expectations.Classify(expectations.Create, nil, false), "rc-gpu-worker-x7k2p", "uid-1")
	st.Conclude(now, t2, expectations.Classify(expectations.Create, quota, false), "", "")

	// The informer has not caught up yet.
	res, _ := st.Satisfied(now.Add(2*time.Second), rc, "gpu", expectations.NewView(nil))
	fmt.Println(res.Satisfied, res.PendingPods(), res.RequeueAfter)

	// Now it has.
	view := expectations.NewView([]corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "ray", Name: "rc-gpu-worker-x7k2p", UID: "uid-1"}}})
	res, _ = st.Satisfied(now.Add(3*time.Second), rc, "gpu", view)
	fmt.Print(res)
	// Output:
	// false [rc-gpu-worker-x7k2p] 4m58s
	// owner ray/rc(3f1c) group "gpu": satisfied
	//   observed  create rc-gpu-worker-x7k2p [t1] uid=uid-1 deadline=2026-01-01T00:05:00Z seen=true resolved
}

// ExampleState_Satisfied is an ambiguous create: a create whose response was
// lost is found by the token stamped on the pod, instead of being made twice.
func ExampleState_Satisfied() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rc := expectations.Owner{Namespace: "ray", Name: "rc", UID: "3f1c"}
	st, _ := expectations.New(expectations.Options{})
	ref, _ := st.Record(now, expectations.Record{Owner: rc, Group: "gpu", Action: expectations.Create, Token: "t3"})
	timeout := apierrors.NewServerTimeout(schema.GroupResource{Resource: "pods"}, "create", 1)
	st.Conclude(now, ref, expectations.Classify(expectations.Create, timeout, false), "", "")

	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ray", Name: "rc-gpu-worker-q8z2m",
		Annotations: map[string]string{expectations.TokenAnnotation: "t3"}}}
	res, _ := st.Satisfied(now.Add(20*time.Second), rc, "gpu", expectations.NewView([]corev1.Pod{pod}))
	fmt.Print(res)
	// Output:
	// owner ray/rc(3f1c) group "gpu": satisfied
	//   observed  create rc-gpu-worker-q8z2m [t3] deadline=2026-01-01T00:05:00Z seen=true ambiguous
}

// ExampleKubeRay shows the KubeRay profile: a delete waits for NotFound, even
// while the pod is terminating, and never times out (KubeRay #4078), while
// plancore's defaults report it Expired after 5 minutes.
func ExampleKubeRay() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rc := expectations.Owner{Namespace: "ray", Name: "rc", UID: "3f1c"}
	stuck := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ray", Name: "w-3", DeletionTimestamp: &metav1.Time{Time: now}}}
	view := expectations.NewView([]corev1.Pod{stuck})
	for _, o := range []expectations.Options{expectations.KubeRay(), {}} {
		st, _ := expectations.New(o)
		st.Record(now, expectations.Record{Owner: rc, Group: "small", Action: expectations.Delete, Pod: "w-3", Seen: true})
		res, _ := st.Satisfied(now.Add(time.Hour), rc, "small", view)
		fmt.Println(res.Satisfied, len(res.Pending), len(res.Expired))
	}
	// Output:
	// false 1 0
	// true 0 1
}

// ExampleClassify maps API errors to what an executor does with its record.
func ExampleClassify() {
	pods := schema.GroupResource{Resource: "pods"}
	for _, err := range []error{
		nil,
		apierrors.NewAlreadyExists(pods, "rc-head"),
		apierrors.NewForbidden(pods, "", errors.New("exceeded quota")),
		apierrors.NewServerTimeout(pods, "create", 1),
	} {
		fmt.Println(expectations.Classify(expectations.Create, err, true))
	}
	fmt.Println(expectations.Classify(expectations.Delete, apierrors.NewNotFound(pods, "w-1"), false))
	// Output:
	// succeeded
	// already-done
	// failed
	// ambiguous
	// already-done
}

// ExampleTracker wires a Tracker to an informer handler: an event latches
// Seen, so a pod created and deleted between two checks settles at once.
func ExampleTracker() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rc := expectations.Owner{Namespace: "ray", Name: "rc", UID: "3f1c"}
	tr, _ := expectations.NewTracker(expectations.Options{})
	tr.Record(now, expectations.Record{Owner: rc, Group: "cpu", Action: expectations.Create, Pod: "w-1"})

	// The informer's add handler saw w-1; by the next check it is gone again.
	tr.Observe(rc, expectations.ObservedPod{Name: "w-1"})
	res, _ := tr.Satisfied(now.Add(time.Second), rc, "cpu", expectations.NewView(nil))
	fmt.Println(res.Satisfied, len(res.Observed), tr.Len(), tr.Stats())
	// Output:
	// true 1 0 {0 0}
}
