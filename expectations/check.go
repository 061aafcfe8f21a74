package expectations

import (
	"slices"
	"time"
)

// Check decides, without changing s, whether owner's group is satisfied at now
// given view: every item of the group is decided from the view (§3.3), with no
// early exit. It is what a pure planner calls on the State held in its snapshot.
// Satisfied returns the same Result and also applies it.
func (s *State) Check(now time.Time, owner Owner, group string, view *View) (Result, error) {
	return s.check(now, owner, group, view, false)
}

// Satisfied decides like Check and applies the verdict: it removes the items
// the result settled (Observed, Expired, lingering items whose pod is gone),
// keeps expired deletes Lingering where the planner counts terminating pods,
// latches Seen on items whose pod the view shows, and resolves creates found by
// their token. Under ByUID identity it also drops the items of an earlier owner
// with the same namespace and name. Calling it again with the same arguments
// gives the same Satisfied, Pending and NextChange, and nothing newly settled.
func (s *State) Satisfied(now time.Time, owner Owner, group string, view *View) (Result, error) {
	return s.check(now, owner, group, view, true)
}

// check walks the group's items in key order. In commit mode it sorts the
// group's order in place if records were added since the last check, updates
// items as it goes and compacts the survivors; otherwise it only reads.
func (s *State) check(now time.Time, owner Owner, groupName string, view *View, commit bool) (Result, error) {
	key, err := s.ownerKey(owner)
	if err != nil {
		return Result{}, err
	}
	if commit {
		s.supersede(owner, key)
	}
	r := Result{Owner: owner, Group: groupName, Satisfied: true}
	rec, ok := s.owners[key]
	if !ok {
		return r, nil
	}
	g, ok := rec.groups[groupName]
	if !ok {
		return r, nil
	}
	order := g.order
	if g.dirty {
		if commit {
			order = s.sortGroup(g)
		} else {
			order = slices.Clone(order)
			sortItems(order)
		}
	}
	ns := owner.Namespace
	keep := order[:0]
	removed := 0
	for _, it := range order {
		if it.dead {
			continue
		}
		d := s.decide(now, ns, it, view)
		if d.settle {
			removed++
			if commit {
				delete(g.byKey, it.key())
				it.dead = true
			}
		} else if commit {
			d.apply(it)
			keep = append(keep, it)
		}
		switch d.list {
		case listPending:
			r.Pending = append(r.Pending, d.entry)
			if d.overdue {
				r.Overdue = append(r.Overdue, d.entry)
			}
			if dl := d.entry.Deadline; !dl.IsZero() && dl.After(now) && (r.NextChange.IsZero() || dl.Before(r.NextChange)) {
				r.NextChange = dl
			}
		case listObserved:
			r.Observed = append(r.Observed, d.entry)
		case listExpired:
			r.Expired = append(r.Expired, d.entry)
			if d.linger {
				r.Lingering = append(r.Lingering, d.entry)
			}
		case listLingering:
			r.Lingering = append(r.Lingering, d.entry)
		}
	}
	r.Satisfied = len(r.Pending) == 0
	if commit {
		rec.len -= removed
		s.len -= removed
		if len(keep) == 0 {
			delete(rec.groups, groupName)
			if len(rec.groups) == 0 {
				s.dropOwner(key)
			}
		} else {
			clear(order[len(keep):])
			g.order = keep
			g.dead = 0
		}
	}
	return r, nil
}

// sortGroup drops dead items from g's order, sorts it and clears dirty.
func (s *State) sortGroup(g *group) []*item {
	live := g.order[:0]
	for _, it := range g.order {
		if !it.dead {
			live = append(live, it)
		}
	}
	clear(g.order[len(live):])
	sortItems(live)
	g.order, g.dead, g.dirty = live, 0, false
	return live
}

func sortItems(items []*item) {
	slices.SortFunc(items, func(a, b *item) int { return a.key().compare(b.key()) })
}

type list uint8

const (
	listPending list = iota
	listObserved
	listExpired
	listLingering
	listNone // a lingering item whose pod is gone: dropped silently
)

// decision is what one check decides for one item.
type decision struct {
	list    list
	settle  bool
	entry   Entry
	seen    bool // latch Seen
	linger  bool // becomes lingering
	overdue bool // first report of a Block expiry
}

func (d decision) apply(it *item) {
	if d.seen {
		it.seen = true
	}
	if d.linger {
		it.lingering = true
	}
	if d.overdue {
		it.overdue = true
	}
}

// decide applies §3.3 to one item.
func (s *State) decide(now time.Time, ns string, it *item, view *View) decision {
	e := Entry{
		Action:     it.action,
		Pod:        it.pod,
		Token:      it.token,
		PodUID:     it.podUID,
		Deadline:   it.deadline(),
		Seen:       it.seen,
		Resolution: it.resolution,
	}
	var vs ViewState
	if it.pod != "" {
		vs = view.state(ns, it.pod, it.podUID)
	}
	if it.lingering {
		if vs == ViewAbsent {
			return decision{list: listNone, settle: true}
		}
		e.View = vs
		return decision{list: listLingering, entry: e}
	}
	switch it.action {
	case Create:
		if it.pod == "" {
			if p, ok := view.byToken(ns, it.token); ok {
				e.Pod, e.PodUID, e.Seen = p.Name, p.UID, true
				return decision{list: listObserved, settle: true, entry: e}
			}
			e.Reason = ReasonUnresolved
		} else if vs != ViewAbsent || it.seen {
			e.Seen = true
			return decision{list: listObserved, settle: true, entry: e}
		} else {
			e.Reason = ReasonUnseen
		}
	case Delete:
		switch {
		case vs == ViewTerminating && s.opts.DeleteSatisfiedBy == SatisfiedByTerminating:
			e.Seen = true
			return decision{list: listObserved, settle: true, entry: e}
		case vs != ViewAbsent:
			e.Reason = ReasonPresent
		case it.seen || s.opts.AbsentWithoutSeen:
			return decision{list: listObserved, settle: true, entry: e}
		default:
			e.Reason = ReasonUnseen
		}
	}
	seen := !it.seen && vs != ViewAbsent
	if seen {
		e.Seen = true
	}
	if !it.expired(now) {
		return decision{list: listPending, entry: e, seen: seen}
	}
	if s.opts.OnExpiry == Block {
		e.Reason = ReasonExpired
		return decision{list: listPending, entry: e, seen: seen, overdue: !it.overdue}
	}
	e.Reason = 0
	e.View = vs
	if it.action == Delete && s.opts.CountsTerminating && vs != ViewAbsent {
		// Reported Expired now, and Lingering on this and every later check
		// until the pod is gone.
		return decision{list: listExpired, entry: e, seen: seen, linger: true}
	}
	return decision{list: listExpired, settle: true, entry: e}
}
