package expectations

import (
	"slices"
	"time"
)

// Check decides, without changing s, whether owner's group is satisfied at now
// given view: every item of the group is decided from the view, with no
// early exit. It is what a pure planner calls on the State held in its snapshot;
// a nil State holds nothing, so every group is satisfied.
// Satisfied returns the same Verdict and also applies it.
func (s *State) Check(now time.Time, owner Owner, group string, view *View) (Verdict, error) {
	var r Verdict
	err := s.check(&r, now, owner, group, view, false)
	return r, err
}

// CheckInto is Check writing into *r, reusing the capacity of r's lists, so a
// controller that checks many large groups allocates nothing in steady state.
// The previous contents of r, including its lists, are overwritten.
func (s *State) CheckInto(r *Verdict, now time.Time, owner Owner, group string, view *View) error {
	return s.check(r, now, owner, group, view, false)
}

// Satisfied decides like Check and applies the verdict: it removes the items
// the result settled (Observed, Expired, lingering items whose pod is gone),
// keeps expired deletes Lingering where the planner counts terminating pods,
// latches Seen on items whose pod the view shows, and resolves creates found by
// their token. Under ByUID identity it also drops the items of an earlier owner
// with the same namespace and name. Calling it again with the same arguments
// gives the same Satisfied, Pending and RequeueAfter, and nothing newly settled.
func (s *State) Satisfied(now time.Time, owner Owner, group string, view *View) (Verdict, error) {
	var r Verdict
	err := s.check(&r, now, owner, group, view, true)
	return r, err
}

// SatisfiedInto is Satisfied writing into *r, reusing the capacity of r's
// lists (see CheckInto).
func (s *State) SatisfiedInto(r *Verdict, now time.Time, owner Owner, group string, view *View) error {
	return s.check(r, now, owner, group, view, true)
}

// reset empties r for a new check, keeping its lists' capacity.
func (r *Verdict) reset(owner Owner, group string) {
	*r = Verdict{
		Owner: owner, Group: group, Satisfied: true,
		Pending: r.Pending[:0], Observed: r.Observed[:0], Expired: r.Expired[:0],
		Overdue: r.Overdue[:0], Lingering: r.Lingering[:0],
	}
}

// trim turns the lists a check left empty back into nil, so a Verdict compares
// and prints the same whether or not its lists were reused.
func (r *Verdict) trim() {
	for _, l := range []*[]Entry{&r.Pending, &r.Observed, &r.Expired, &r.Overdue, &r.Lingering} {
		if len(*l) == 0 {
			*l = nil
		}
	}
}

// check walks the group's items in key order. In commit mode it sorts the
// group's order in place if records were added since the last check, updates
// items as it goes and compacts the survivors; otherwise it only reads.
func (s *State) check(r *Verdict, now time.Time, owner Owner, groupName string, view *View, commit bool) error {
	r.reset(owner, groupName)
	defer r.trim()
	if err := checkNow(now); err != nil {
		*r = Verdict{}
		return err
	}
	key, rec, g, err := s.findGroup(owner, groupName, commit)
	if err != nil {
		*r = Verdict{}
		return err
	}
	if g == nil {
		return nil
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
	live := len(g.byKey)
	settled := s.walk(r, now, view.space(owner.Namespace), order, live, commit)
	r.Satisfied = len(r.Pending) == 0
	if commit {
		s.compact(key, rec, groupName, g, order, settled, live)
	}
	return nil
}

// findGroup validates owner and returns its key, record and group, or a nil
// group when nothing is recorded for it. A nil State holds nothing.
func (s *State) findGroup(owner Owner, groupName string, commit bool) (string, *ownerRec, *group, error) {
	if s == nil {
		_, err := (&State{}).ownerKey(owner)
		return "", nil, nil, err
	}
	key, err := s.ownerKey(owner)
	if err != nil {
		return "", nil, nil, err
	}
	if commit {
		s.supersede(owner, key, false)
	}
	rec, ok := s.owners[key]
	if !ok {
		return key, nil, nil, nil
	}
	return key, rec, rec.groups[groupName], nil
}

// walk decides every live item of order into r and returns how many it
// settled; in commit mode it marks them dead and applies the other verdicts.
func (s *State) walk(r *Verdict, now time.Time, sp *viewSpace, order []*item, live int, commit bool) int {
	settled, seen := 0, 0
	var d decision
	for _, it := range order {
		if it.dead {
			continue
		}
		seen++
		deadline := it.deadline()
		s.decide(now, sp, it, deadline, &d)
		if d.settle {
			settled++
			if commit {
				it.dead = true
			}
		} else if commit {
			d.apply(it)
		}
		if d.list != listNone {
			// Each list is sized on first use for every item still to come, so
			// a check allocates once per list rather than growing it.
			r.add(&d, d.entry(it, deadline), deadline, now, live-seen+1)
		}
	}
	return settled
}

// add files e in the list d chose, sizing a new list for rest entries.
func (r *Verdict) add(d *decision, e Entry, deadline, now time.Time, rest int) {
	switch d.list {
	case listPending:
		r.Pending = appendSized(r.Pending, e, rest)
		if d.overdue {
			r.Overdue = appendSized(r.Overdue, e, rest)
		}
		if !deadline.IsZero() && deadline.After(now) {
			if wait := deadline.Sub(now); r.RequeueAfter == 0 || wait < r.RequeueAfter {
				r.RequeueAfter = wait
			}
		}
	case listObserved:
		r.Observed = appendSized(r.Observed, e, rest)
	case listExpired:
		r.Expired = appendSized(r.Expired, e, rest)
		if d.linger {
			r.Lingering = appendSized(r.Lingering, e, rest)
		}
	case listLingering:
		r.Lingering = appendSized(r.Lingering, e, rest)
	}
}

// compact removes the items a committed check settled from the group (or the
// whole group, or owner, when nothing is left).
func (s *State) compact(key string, rec *ownerRec, groupName string, g *group, order []*item, settled, live int) {
	rec.len -= settled
	s.len -= settled
	switch {
	case settled == live:
		// Everything settled: drop the group's map whole (Go maps never
		// shrink, and deleting 10,000 keys one by one costs more).
		delete(rec.groups, groupName)
		if len(rec.groups) == 0 {
			s.dropOwner(key)
		}
	case settled > 0 || g.dead > 0:
		keep := order[:0]
		for _, it := range order {
			if !it.dead {
				keep = append(keep, it)
				continue
			}
			// Items replaced earlier are dead but no longer own their key;
			// only this check's settled items still do.
			if k := it.key(); g.byKey[k] == it {
				delete(g.byKey, k)
			}
		}
		clear(order[len(keep):])
		g.order = keep
		g.dead = 0
	}
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

// appendSized appends e to list, first giving list room for n entries.
func appendSized(list []Entry, e Entry, n int) []Entry {
	if cap(list) == 0 {
		list = make([]Entry, 0, n)
	}
	return append(list, e)
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

// decision is what one check decides for one item. It is small on purpose:
// the Entry is built once, straight into its result list.
type decision struct {
	list       list
	settle     bool
	seen       bool // latch Seen
	linger     bool // becomes lingering
	overdue    bool // first report of a Block expiry
	entrySeen  bool // the entry reports Seen
	reason     ReasonCode
	view       ViewState
	tokenMatch *ViewPod // the pod carrying an unresolved create's token
}

func (d *decision) apply(it *item) {
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

// entry renders it as the decision reports it.
func (d *decision) entry(it *item, deadline time.Time) Entry {
	e := Entry{
		Pod:        it.pod,
		Token:      it.token,
		PodUID:     it.podUID,
		Deadline:   deadline,
		Action:     it.action,
		Seen:       d.entrySeen,
		Resolution: it.resolution,
		Reason:     reasons[d.reason],
		View:       d.view,
	}
	if d.tokenMatch != nil {
		e.Pod, e.PodUID = d.tokenMatch.Name, d.tokenMatch.UID
	}
	return e
}

// decide applies the package rules to one item whose deadline (zero: never) is given.
func (s *State) decide(now time.Time, sp *viewSpace, it *item, deadline time.Time, d *decision) {
	*d = decision{entrySeen: it.seen, view: ViewAbsent}
	vs := ViewAbsent
	if it.pod != "" {
		vs = sp.state(it.pod, it.podUID)
	}
	if it.lingering {
		if vs == ViewAbsent {
			d.list, d.settle = listNone, true
			return
		}
		d.list, d.view = listLingering, vs
		return
	}
	switch it.action {
	case Create:
		if it.pod == "" {
			if p, ok := sp.byTokenPod(it.token); ok {
				d.list, d.settle, d.entrySeen, d.tokenMatch = listObserved, true, true, p
				return
			}
			d.reason = ReasonUnresolved
		} else if vs != ViewAbsent || it.seen {
			d.list, d.settle, d.entrySeen = listObserved, true, true
			return
		} else {
			d.reason = ReasonUnseen
		}
	case Delete:
		switch {
		case vs == ViewTerminating && s.opts.DeleteSatisfiedBy == SatisfiedByTerminating:
			d.list, d.settle, d.entrySeen = listObserved, true, true
			return
		case vs != ViewAbsent:
			d.reason = ReasonPresent
		case it.seen || s.opts.AbsentWithoutSeen:
			d.list, d.settle = listObserved, true
			return
		default:
			d.reason = ReasonUnseen
		}
	}
	if !it.seen && vs != ViewAbsent {
		d.seen, d.entrySeen = true, true
	}
	if deadline.IsZero() || now.Before(deadline) {
		d.list = listPending
		return
	}
	if s.opts.OnExpiry == Block {
		d.list, d.reason, d.overdue = listPending, ReasonExpired, !it.overdue
		return
	}
	d.list, d.reason, d.view = listExpired, "", vs
	if it.action == Delete && s.opts.CountsTerminating && vs != ViewAbsent {
		// Reported Expired now, and Lingering on this and every later check
		// until the pod is gone.
		d.linger = true
		return
	}
	d.settle = true
}
