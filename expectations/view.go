package expectations

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TokenAnnotation is the pod annotation that carries a create's token, so a View
// can match a pod to a create whose outcome was ambiguous.
const TokenAnnotation = "expectations.plancore.io/token"

// ViewState is what a View shows of one pod.
type ViewState uint8

const (
	// ViewAbsent means the pod is not in the view (or only another pod of the
	// same name is).
	ViewAbsent ViewState = iota
	// ViewPresent means the pod is in the view and not terminating.
	ViewPresent
	// ViewTerminating means the pod is in the view with a DeletionTimestamp.
	ViewTerminating
)

// String names the state.
func (s ViewState) String() string {
	switch s {
	case ViewAbsent:
		return "absent"
	case ViewPresent:
		return "present"
	case ViewTerminating:
		return "terminating"
	}
	return fmt.Sprintf("ViewState(%d)", uint8(s))
}

// ViewPod is the part of a pod a View keeps.
type ViewPod struct {
	Name        string
	UID         types.UID
	Terminating bool
	// Token is the pod's TokenAnnotation, if any.
	Token string
}

// podKey indexes a view by namespace and name (or namespace and token).
type podKey struct {
	namespace, name string
}

// View is the caller's snapshot of pods, indexed by namespace and name, and by
// token for pods that carry one. Build it once per snapshot with NewView and
// share it between the checks of every group (and with the planner). A nil
// *View is an empty view. A View is never modified by the State.
type View struct {
	pods   map[podKey]ViewPod
	tokens map[podKey]string
}

// NewView indexes pods. A pod listed twice under one namespace and name keeps
// its last entry.
func NewView(pods []corev1.Pod) *View {
	v := &View{pods: make(map[podKey]ViewPod, len(pods))}
	for i := range pods {
		p := &pods[i]
		v.Add(p.Namespace, ViewPod{
			Name:        p.Name,
			UID:         p.UID,
			Terminating: p.DeletionTimestamp != nil,
			Token:       p.Annotations[TokenAnnotation],
		})
	}
	return v
}

// Add puts one pod in the view, replacing any pod of the same namespace and
// name. It is for callers that do not hold corev1.Pod values.
func (v *View) Add(namespace string, p ViewPod) {
	if v.pods == nil {
		v.pods = map[podKey]ViewPod{}
	}
	k := podKey{namespace, p.Name}
	if old, ok := v.pods[k]; ok && old.Token != "" {
		delete(v.tokens, podKey{namespace, old.Token})
	}
	v.pods[k] = p
	if p.Token != "" {
		if v.tokens == nil {
			v.tokens = map[podKey]string{}
		}
		v.tokens[podKey{namespace, p.Token}] = p.Name
	}
}

// Len returns how many pods the view holds.
func (v *View) Len() int {
	if v == nil {
		return 0
	}
	return len(v.pods)
}

// Lookup returns the pod named name in namespace.
func (v *View) Lookup(namespace, name string) (ViewPod, bool) {
	if v == nil {
		return ViewPod{}, false
	}
	p, ok := v.pods[podKey{namespace, name}]
	return p, ok
}

// byToken returns the pod carrying token in namespace.
func (v *View) byToken(namespace, token string) (ViewPod, bool) {
	if v == nil || v.tokens == nil {
		return ViewPod{}, false
	}
	name, ok := v.tokens[podKey{namespace, token}]
	if !ok {
		return ViewPod{}, false
	}
	return v.pods[podKey{namespace, name}], true
}

// state returns what the view shows of the pod named name, restricted to uid
// when uid is set.
func (v *View) state(namespace, name string, uid types.UID) ViewState {
	p, ok := v.Lookup(namespace, name)
	switch {
	case !ok, uid != "" && p.UID != uid:
		return ViewAbsent
	case p.Terminating:
		return ViewTerminating
	}
	return ViewPresent
}
