package expectations

// CloneOwner returns a deep copy of the part of s that checking owner reads
// or changes: owner's items and, when the last owner recorded under owner's
// namespace and name is another one (an owner recreated under a new UID),
// that owner's items too, since checking owner drops them. Checks of owner
// on the copy decide exactly as on [State.Clone]; other owners are absent.
// A controller that plans one owner per pass snapshots this: Clone copies
// every owner's items on every pass, which grows with the number of owners.
func (s *State) CloneOwner(owner Owner) (*State, error) {
	key, err := s.ownerKey(owner)
	if err != nil {
		return nil, err
	}
	c := &State{opts: s.opts}
	c.copyOwner(s, key)
	if s.opts.OwnerIdentity != ByName && owner.Name != "" {
		nk := podKey{owner.Namespace, owner.Name}
		if k, ok := s.names[nk]; ok {
			c.names = map[podKey]string{nk: k}
			if k != key {
				c.copyOwner(s, k)
			}
		}
	}
	return c, nil
}

// copyOwner copies the owner under key from src into s.
func (s *State) copyOwner(src *State, key string) {
	rec, ok := src.owners[key]
	if !ok {
		return
	}
	if s.owners == nil {
		s.owners = map[string]*ownerRec{}
	}
	s.owners[key] = rec.clone()
	s.len += rec.len
}

// SnapshotOwner returns State.CloneOwner under the lock: the snapshot a
// planner of one owner needs, at a cost that does not grow with the other
// owners' items.
func (t *Tracker) SnapshotOwner(owner Owner) (*State, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state().CloneOwner(owner)
}
