package lock

import (
	"errors"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
)

func apiequal(a, b *corev1.Pod) bool { return reflect.DeepEqual(a, b) }

func TestClassifyHolder(t *testing.T) {
	pod := func(uid string, phase corev1.PodPhase, bindPhase string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p0", UID: "u0"}, Status: corev1.PodStatus{Phase: phase}}
		p.UID = k8stypes.UID(uid)
		if bindPhase != "" {
			p.Annotations = map[string]string{BindPhaseAnnotation: bindPhase}
		}
		return p
	}
	withUID := Record{Namespace: "default", Name: "p0", UID: "u0"}
	noUID := Record{Namespace: "default", Name: "p0"}
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p0")
	cases := []struct {
		name string
		pod  *corev1.Pod
		err  error
		rec  Record
		id   Identity
		want Holder
	}{
		{"not found", nil, notFound, withUID, UIDThenName, Holder{State: HolderNotFound}},
		{"other error", nil, errors.New("connection refused"), withUID, UIDThenName, Holder{State: HolderUnknown}},
		{"nil pod", nil, nil, withUID, UIDThenName, Holder{State: HolderNotFound}},
		{"running", pod("u0", corev1.PodRunning, ""), nil, withUID, UIDThenName, Holder{State: HolderExists}},
		{"pending, allocating", pod("u0", corev1.PodPending, BindPhaseAllocating), nil, withUID, UIDThenName, Holder{State: HolderExists, Allocating: true}},
		{"pending, bind succeeded", pod("u0", corev1.PodPending, "success"), nil, withUID, UIDThenName, Holder{State: HolderExists}},
		{"running with a stale allocating annotation", pod("u0", corev1.PodRunning, BindPhaseAllocating), nil, withUID, UIDThenName, Holder{State: HolderExists}},
		{"succeeded", pod("u0", corev1.PodSucceeded, ""), nil, withUID, UIDThenName, Holder{State: HolderTerminal}},
		{"failed", pod("u0", corev1.PodFailed, ""), nil, withUID, UIDThenName, Holder{State: HolderTerminal}},
		{"replaced by a same-name pod (UID identity)", pod("u9", corev1.PodRunning, ""), nil, withUID, UIDThenName, Holder{State: HolderNotFound, Replaced: true}},
		{"replaced, NameOnly", pod("u9", corev1.PodRunning, ""), nil, withUID, NameOnly, Holder{State: HolderExists}},
		{"record without UID", pod("u9", corev1.PodRunning, ""), nil, noUID, UIDThenName, Holder{State: HolderExists}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var before *corev1.Pod
			if tc.pod != nil {
				before = tc.pod.DeepCopy()
			}
			if got := ClassifyHolder(tc.pod, tc.err, tc.rec, tc.id); got != tc.want {
				t.Errorf("ClassifyHolder = %+v, want %+v", got, tc.want)
			}
			if tc.pod != nil && !apiequal(before, tc.pod) {
				t.Error("ClassifyHolder changed the pod")
			}
		})
	}
}
