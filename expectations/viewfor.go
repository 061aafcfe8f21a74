package expectations

import (
	corev1 "k8s.io/api/core/v1"
)

// ViewFor builds the View that the checks of owner's groups need: the pods of
// owner's namespace that one of owner's records could match, by name or by
// token, and every other pod of the same name (a later entry of a name
// replaces an earlier one, as in NewView). Check, CheckInto, Satisfied and
// SatisfiedInto of any of owner's groups return the same results against it as
// against NewView(pods), as long as no record is added in between. A
// controller with 10,000 pods and a few creates or deletes in flight indexes a
// handful of pods instead of all of them.
//
// A nil State, or an owner with nothing in flight, gives an empty view. An
// invalid owner is an error, as for Check.
func (s *State) ViewFor(owner Owner, pods []corev1.Pod) (*View, error) {
	if s == nil {
		_, err := (&State{}).ownerKey(owner)
		return &View{}, err
	}
	key, err := s.ownerKey(owner)
	if err != nil {
		return nil, err
	}
	rec, ok := s.owners[key]
	if !ok || rec.len == 0 {
		return &View{}, nil
	}
	names := map[string]bool{}
	var tokens map[string]bool
	for _, g := range rec.groups {
		for _, it := range g.order {
			if it.dead {
				continue
			}
			if it.pod != "" {
				names[it.pod] = true
			}
			if it.token != "" {
				if tokens == nil {
					tokens = map[string]bool{}
				}
				tokens[it.token] = true
			}
		}
	}
	if len(tokens) > 0 {
		// A pod found by token brings every pod of its name: which of them the
		// view keeps depends on their order, so all of them must be added.
		for i := range pods {
			p := &pods[i]
			if p.Namespace == owner.Namespace && tokens[p.Annotations[TokenAnnotation]] {
				names[p.Name] = true
			}
		}
	}
	v := &View{}
	for i := range pods {
		p := &pods[i]
		if p.Namespace != owner.Namespace || !names[p.Name] {
			continue
		}
		v.Add(p.Namespace, ViewPod{
			Name:        p.Name,
			UID:         p.UID,
			Terminating: p.DeletionTimestamp != nil,
			Token:       p.Annotations[TokenAnnotation],
		})
	}
	return v, nil
}
