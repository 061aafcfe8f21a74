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
type ViewState string

const (
	// ViewAbsent means the pod is not in the view (or only another pod of the
	// same name is).
	ViewAbsent ViewState = "Absent"
	// ViewPresent means the pod is in the view and not terminating.
	ViewPresent ViewState = "Present"
	// ViewTerminating means the pod is in the view with a DeletionTimestamp.
	ViewTerminating ViewState = "Terminating"
)

// String names the state.
func (s ViewState) String() string {
	switch s {
	case "", ViewAbsent:
		return "absent"
	case ViewPresent:
		return "present"
	case ViewTerminating:
		return "terminating"
	}
	return fmt.Sprintf("ViewState(%q)", string(s))
}

// ViewPod is the part of a pod a View keeps.
type ViewPod struct {
	Name        string
	UID         types.UID
	Terminating bool
	// Token is the pod's TokenAnnotation, if any.
	Token string
}

// podKey is a namespace and a name, as the State's name index uses.
type podKey struct {
	namespace, name string
}

// View is the caller's snapshot of pods, indexed by namespace and name, and by
// token for pods that carry one. Build it once per snapshot with NewView and
// share it between the checks of every group (and with the planner). A nil
// *View is an empty view. A View is never modified by the State.
type View struct {
	spaces map[string]*viewSpace
	n      int
}

// viewSpace indexes one namespace: names (and tokens) map to positions in a
// dense slice, so a lookup touches a small map slot and then one entry.
type viewSpace struct {
	byName  map[string]int32
	byToken map[string]int32
	pods    []ViewPod
}

// NewView indexes pods. A pod listed twice under one namespace and name keeps
// its last entry.
func NewView(pods []corev1.Pod) *View {
	v := &View{spaces: map[string]*viewSpace{}}
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
	if v.spaces == nil {
		v.spaces = map[string]*viewSpace{}
	}
	sp, ok := v.spaces[namespace]
	if !ok {
		sp = &viewSpace{byName: map[string]int32{}}
		v.spaces[namespace] = sp
	}
	i, ok := sp.byName[p.Name]
	if ok {
		if old := sp.pods[i].Token; old != "" && sp.byToken[old] == i {
			delete(sp.byToken, old)
		}
		sp.pods[i] = p
	} else {
		i = int32(len(sp.pods))
		sp.pods = append(sp.pods, p)
		sp.byName[p.Name] = i
		v.n++
	}
	if p.Token != "" {
		if sp.byToken == nil {
			sp.byToken = map[string]int32{}
		}
		sp.byToken[p.Token] = i
	}
}

// Len returns how many pods the view holds.
func (v *View) Len() int {
	if v == nil {
		return 0
	}
	return v.n
}

// Lookup returns the pod named name in namespace.
func (v *View) Lookup(namespace, name string) (ViewPod, bool) {
	sp := v.space(namespace)
	if sp == nil {
		return ViewPod{}, false
	}
	i, ok := sp.byName[name]
	if !ok {
		return ViewPod{}, false
	}
	return sp.pods[i], true
}

// space returns namespace's index, or nil.
func (v *View) space(namespace string) *viewSpace {
	if v == nil {
		return nil
	}
	return v.spaces[namespace]
}

// byToken returns the pod carrying token.
func (sp *viewSpace) byTokenPod(token string) (*ViewPod, bool) {
	if sp == nil {
		return nil, false
	}
	i, ok := sp.byToken[token]
	if !ok {
		return nil, false
	}
	return &sp.pods[i], true
}

// state returns what the namespace shows of the pod named name, restricted to
// uid when uid is set.
func (sp *viewSpace) state(name string, uid types.UID) ViewState {
	if sp == nil {
		return ViewAbsent
	}
	i, ok := sp.byName[name]
	if !ok {
		return ViewAbsent
	}
	p := &sp.pods[i]
	switch {
	case uid != "" && p.UID != uid:
		return ViewAbsent
	case p.Terminating:
		return ViewTerminating
	}
	return ViewPresent
}
