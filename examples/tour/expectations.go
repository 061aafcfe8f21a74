package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/fake"
)

func init() {
	register(1, "expectations", "not creating pods twice when your cache of the cluster lags", runExpectationsChapter)
}

func runExpectationsChapter(w *page) error {
	w.term("reconcile", "informer")
	fmt.Fprintln(w, "A controller wants 3 worker pods. Every 5s it runs a reconcile pass that lists")
	fmt.Fprintln(w, "pods from an informer lagging the API server by up to 20s. One create is refused")
	fmt.Fprintln(w, "by a quota, and one create's response is lost although the pod was made.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Each pass counts the cached pods and creates the missing ones:")
	w.calls(`cached := store.Informer().List("ray", selector)
diff := desired - len(cached)
created, err := store.CreatePod(ctx, pod)`)
	fmt.Fprintln(w, "Trusting the stale cache:")
	ungated, err := scaleUp(w, false)
	if err != nil {
		return err
	}
	fmt.Fprintln(w)
	w.term("expectations")
	fmt.Fprintln(w, "With expectations, each create is recorded before the call and concluded after it;")
	fmt.Fprintln(w, "a pass plans only once the cache shows every recorded create (or it expired). Each")
	fmt.Fprintln(w, "pod carries a token annotation, so a create whose response was lost is recognised:")
	w.calls(`res, err := st.Satisfied(now, owner, "worker", expectations.NewView(cached))
if ref, err = st.Record(now, expectations.Record{Owner: owner, Group: "worker", Action: expectations.Create, Token: token}); err != nil {
res := expectations.Classify(expectations.Create, err, false)
if _, err := st.Conclude(world.Clock.Now(), ref, res, created.Name, created.UID); err != nil {`)
	gated, err := scaleUp(w, true)
	if err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Pods in the API after 30s: %d without expectations, %d with them (desired 3).\n", ungated, gated)
	fmt.Fprintln(w, "The gated controller waited twice: for the create whose response was lost (it")
	fmt.Fprintln(w, "was made; the token annotation on the pod identified it) and for its replacement")
	fmt.Fprintln(w, "of the refused create. The other read its own writes late and made a pod too many.")
	return nil
}

// scaleUp runs a 60 s scale-up to 3 pods and returns how many pods the API holds
// at the end.
func scaleUp(w io.Writer, gated bool) (int, error) {
	const desired = 3
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	world := fake.NewWorld(7, start)
	store := fake.NewPodStore(world, fake.PodStoreOptions{Lag: 20 * time.Second})
	quota := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("exceeded quota: pods"))
	world.Faults.FailNext(fake.KindPodCreate, 1, quota)
	world.Faults.LoseResponseNext(fake.KindPodCreate, 1, apierrors.NewServerTimeout(schema.GroupResource{Resource: "pods"}, "create", 1))

	owner := expectations.Owner{Namespace: "ray", Name: "rc", UID: "rc-uid-1"}
	st, err := expectations.New(expectations.Options{})
	if err != nil {
		return 0, err
	}
	selector := labels.SelectorFromSet(labels.Set{"ray.io/group": "worker"})
	tokens := 0
	for pass := 0; pass <= 6; pass++ {
		now := world.Clock.Now()
		cached := store.Informer().List("ray", selector)
		stamp := fmt.Sprintf("  t+%-4s cache shows %d pod(s)", now.Sub(start), len(cached))
		if gated {
			res, err := st.Satisfied(now, owner, "worker", expectations.NewView(cached))
			if err != nil {
				return 0, err
			}
			for _, e := range res.Observed {
				if e.Resolution == expectations.Ambiguous {
					stamp += fmt.Sprintf("; observed %s (the lost create, found by its token %s)", e.Pod, e.Token)
				} else {
					stamp += fmt.Sprintf("; observed %s", e.Pod)
				}
			}
			if !res.Satisfied {
				fmt.Fprintf(w, "%s; waiting for %s\n", stamp, strings.Join(res.PendingPods(), ", "))
				world.Clock.Advance(5 * time.Second)
				continue
			}
		}
		diff := desired - len(cached)
		if diff <= 0 {
			fmt.Fprintf(w, "%s; nothing to do\n", stamp)
			world.Clock.Advance(5 * time.Second)
			continue
		}
		var made []string
		for range diff {
			tokens++
			token := fmt.Sprintf("tour-%d", tokens)
			ref := expectations.Ref{Owner: owner, Group: "worker", Token: token}
			if gated {
				if ref, err = st.Record(now, expectations.Record{Owner: owner, Group: "worker", Action: expectations.Create, Token: token}); err != nil {
					return 0, err
				}
			}
			pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{
				Namespace: "ray", GenerateName: "rc-worker-",
				Labels:      map[string]string{"ray.io/group": "worker"},
				Annotations: map[string]string{expectations.TokenAnnotation: token},
			}}
			created, err := store.CreatePod(ctx, pod)
			res := expectations.Classify(expectations.Create, err, false)
			switch {
			case err == nil:
				made = append(made, created.Name)
			default:
				made = append(made, fmt.Sprintf("[%s: %s]", res, shortErr(err)))
			}
			if gated {
				if _, err := st.Conclude(world.Clock.Now(), ref, res, created.Name, created.UID); err != nil {
					return 0, err
				}
			}
		}
		fmt.Fprintf(w, "%s; create %d: %s\n", stamp, diff, strings.Join(made, " "))
		world.Clock.Advance(5 * time.Second)
	}
	return len(store.Pods("ray")), nil
}

func shortErr(err error) string {
	switch {
	case apierrors.IsForbidden(err):
		return "quota"
	case apierrors.IsServerTimeout(err):
		return "timeout, pod made"
	}
	return err.Error()
}
