package expectations

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// State is the pure expectations core: the in-flight creates and deletes of
// every owner, by group and pod. It reads no clock: every method that needs the
// time takes now. It is not safe for concurrent use; live controllers share a
// Tracker, which wraps a State in a mutex. Check never writes, so concurrent
// Checks of one State are safe as long as nothing else runs.
//
// The zero State is ready to use with the default Options.
type State struct {
	opts   Options
	owners map[string]*ownerRec
	// names maps namespace/name to the owner key last used for it, so that an
	// owner recreated under a new UID drops its predecessor's items (KubeRay #4078).
	names map[podKey]string
	len   int
}

type ownerRec struct {
	owner  Owner
	groups map[string]*group
	len    int
}

// group holds one group's items in a map for O(1) lookups and in a slice kept
// sorted by key, so a check walks them in order without sorting each time.
type group struct {
	byKey map[itemKey]*item
	order []*item
	// dirty is set when order may be unsorted (a record was added or re-keyed);
	// the next Satisfied sorts it once.
	dirty bool
	// dead counts removed items still in order.
	dead int
}

// itemKey is the pod name when known, else the token.
type itemKey struct {
	name, token string
}

func (k itemKey) compare(o itemKey) int {
	if c := cmp.Compare(k.name, o.name); c != 0 {
		return c
	}
	return cmp.Compare(k.token, o.token)
}

// item is one expected create or delete. The fields a check reads for every
// item come first, so they share a cache line.
type item struct {
	dead       bool
	lingering  bool
	seen       bool
	overdue    bool
	action     Action
	resolution Resolution
	pod        string
	podUID     types.UID
	recorded   time.Time
	timeout    time.Duration
	token      string
}

func (it *item) key() itemKey {
	if it.pod != "" {
		return itemKey{name: it.pod}
	}
	return itemKey{token: it.token}
}

// deadline is the zero time for an item that never expires.
func (it *item) deadline() time.Time {
	if it.timeout == Never {
		return time.Time{}
	}
	return it.recorded.Add(it.timeout)
}

func (it *item) expired(now time.Time) bool {
	return it.timeout != Never && !now.Before(it.recorded.Add(it.timeout))
}

// New returns an empty State using o, or an error if o is invalid.
func New(o Options) (*State, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &State{opts: o}, nil
}

// Options returns the options the State was built with.
func (s *State) Options() Options {
	return s.opts
}

// ownerKey validates o under the State's identity and returns its key.
func (s *State) ownerKey(o Owner) (string, error) {
	if s.opts.OwnerIdentity == ByName {
		if o.Name == "" {
			return "", plancore.Invalid(ErrInvalidOwner, field.ErrorList{field.Required(field.NewPath("owner", "name"), "owners are keyed by name")})
		}
		return o.Namespace + "/" + o.Name, nil
	}
	if o.UID == "" {
		return "", plancore.Invalid(ErrInvalidOwner, field.ErrorList{field.Required(field.NewPath("owner", "uid"), "owners are keyed by UID; owner "+o.Namespace+"/"+o.Name)})
	}
	return string(o.UID), nil
}

// supersede drops the items of an earlier owner with o's namespace and name but
// another key (an owner deleted and recreated under a new UID), and, if
// register is set, remembers key as the owner of that name. Only owners that
// hold items are registered, so checks of owners without items leave nothing
// behind.
func (s *State) supersede(o Owner, key string, register bool) {
	if s.opts.OwnerIdentity == ByName || o.Name == "" {
		return
	}
	nk := podKey{o.Namespace, o.Name}
	if old, ok := s.names[nk]; ok && old != key {
		s.dropOwner(old)
	}
	if !register {
		return
	}
	if s.names == nil {
		s.names = map[podKey]string{}
	}
	s.names[nk] = key
}

func (s *State) dropOwner(key string) int {
	rec, ok := s.owners[key]
	if !ok {
		return 0
	}
	delete(s.owners, key)
	if rec.owner.Name != "" {
		nk := podKey{rec.owner.Namespace, rec.owner.Name}
		if s.names[nk] == key {
			delete(s.names, nk)
		}
	}
	s.len -= rec.len
	return rec.len
}

// Record adds an item for r, recorded at now, and returns its Ref. Recording a
// key that already has an item replaces it (the latest action wins, as in
// KubeRay); the Seen latch carries over. Record is called BEFORE the API call,
// then Conclude reports the call's outcome.
func (s *State) Record(now time.Time, r Record) (Ref, error) {
	if err := checkNow(now); err != nil {
		return Ref{}, err
	}
	key, err := s.ownerKey(r.Owner)
	if err != nil {
		return Ref{}, err
	}
	if err := r.validate(); err != nil {
		return Ref{}, err
	}
	s.supersede(r.Owner, key, true)
	g := s.groupFor(key, r.Owner, r.Group)
	it := &item{
		resolution: InFlight,
		action:     r.Action,
		pod:        r.Pod,
		token:      r.Token,
		podUID:     r.PodUID,
		recorded:   now,
		timeout:    s.opts.timeout(r.Action, r.Timeout),
		seen:       r.Seen,
	}
	s.put(key, g, it)
	return r.Ref(), nil
}

// put stores it in g under its key, replacing (and inheriting Seen from) any
// item already there.
func (s *State) put(ownerKey string, g *group, it *item) {
	k := it.key()
	if old, ok := g.byKey[k]; ok {
		it.seen = it.seen || old.seen
		old.dead = true
		g.dead++
		s.owners[ownerKey].len--
		s.len--
	}
	g.byKey[k] = it
	if n := len(g.order); n > 0 && !g.dirty && g.order[n-1].key().compare(k) >= 0 {
		g.dirty = true
	}
	g.order = append(g.order, it)
	s.owners[ownerKey].len++
	s.len++
}

func (s *State) groupFor(key string, o Owner, name string) *group {
	if s.owners == nil {
		s.owners = map[string]*ownerRec{}
	}
	rec, ok := s.owners[key]
	if !ok {
		rec = &ownerRec{owner: o, groups: map[string]*group{}}
		s.owners[key] = rec
	} else if o.Name != "" && (rec.owner.Namespace != o.Namespace || rec.owner.Name != o.Name) {
		// The same UID under another name (a caller's mistake, or a rename):
		// the latest name wins, and the old one no longer points here.
		if nk := (podKey{rec.owner.Namespace, rec.owner.Name}); s.names[nk] == key {
			delete(s.names, nk)
		}
		rec.owner = o
	}
	g, ok := rec.groups[name]
	if !ok {
		g = &group{byKey: map[itemKey]*item{}}
		rec.groups[name] = g
	}
	return g
}

// lookup returns the live item ref names, with its owner key and group.
func (s *State) lookup(ref Ref) (string, *group, *item, error) {
	key, err := s.ownerKey(ref.Owner)
	if err != nil {
		return "", nil, nil, err
	}
	if err := ref.validate(); err != nil {
		return "", nil, nil, err
	}
	rec, ok := s.owners[key]
	if !ok {
		return key, nil, nil, nil
	}
	g, ok := rec.groups[ref.Group]
	if !ok {
		return key, nil, nil, nil
	}
	k := itemKey{name: ref.Pod}
	if ref.Pod == "" {
		k = itemKey{token: ref.Token}
	}
	it, ok := g.byKey[k]
	if !ok && ref.Pod != "" && ref.Token != "" {
		// A ref made from a Record with both a name and a token finds the item
		// by name; one made before the name was known finds it by token.
		it, ok = g.byKey[itemKey{token: ref.Token}]
	}
	if !ok {
		return key, g, nil, nil
	}
	return key, g, it, nil
}

// remove drops it from g, and g from its owner once g is empty.
func (s *State) remove(ownerKey, groupName string, g *group, it *item) {
	delete(g.byKey, it.key())
	it.dead = true
	g.dead++
	rec := s.owners[ownerKey]
	rec.len--
	s.len--
	s.compactIfSparse(ownerKey, groupName, g)
}

// compactIfSparse drops an empty group (Go maps never shrink) and rebuilds a
// group's order once most of it is dead, keeping removal O(1) amortised.
func (s *State) compactIfSparse(ownerKey, groupName string, g *group) {
	rec := s.owners[ownerKey]
	if len(g.byKey) == 0 {
		delete(rec.groups, groupName)
		if len(rec.groups) == 0 {
			s.dropOwner(ownerKey)
		}
		return
	}
	if g.dead > len(g.byKey) {
		live := g.order[:0]
		for _, it := range g.order {
			if !it.dead {
				live = append(live, it)
			}
		}
		clear(g.order[len(live):])
		g.order = live
		g.dead = 0
	}
}

// CallResult classifies how an API call behind an item ended.
type CallResult string

const (
	// CallSucceeded means the call did what it asked.
	CallSucceeded CallResult = "Succeeded"
	// CallAlreadyDone means the work was already done: AlreadyExists for a create
	// of a fixed name, NotFound for a delete.
	CallAlreadyDone CallResult = "AlreadyDone"
	// CallFailed means the call definitely had no effect (invalid, forbidden,
	// quota, failed precondition).
	CallFailed CallResult = "Failed"
	// CallAmbiguous means the call may or may not have taken effect (timeout,
	// 5xx, lost connection, cancelled).
	CallAmbiguous CallResult = "Ambiguous"
	// CallNotAttempted means the executor stopped before making the call.
	CallNotAttempted CallResult = "NotAttempted"
)

// String names the result.
func (c CallResult) String() string {
	switch c {
	case CallSucceeded:
		return "succeeded"
	case CallAlreadyDone:
		return "already-done"
	case CallFailed:
		return "failed"
	case CallAmbiguous:
		return "ambiguous"
	case CallNotAttempted:
		return "not-attempted"
	}
	return fmt.Sprintf("CallResult(%q)", string(c))
}

// Conclude applies the outcome of the call behind ref at now:
//
//   - succeeded: a create's token resolves to name (and uid); the deadline
//     restarts, so a slow call does not eat the cache-lag budget;
//   - already done: a create is kept as a create of its name; a delete is kept
//     if its pod was seen (the cache must catch up), else rolled back;
//   - failed or not attempted: the item is rolled back;
//   - ambiguous: the item is kept, marked Ambiguous, and its deadline restarts.
//
// It reports whether an item was found. Concluding an unknown or forgotten item
// does nothing and is not an error.
func (s *State) Conclude(now time.Time, ref Ref, res CallResult, name string, uid types.UID) (bool, error) {
	if err := checkNow(now); err != nil {
		return false, err
	}
	if !slices.Contains([]CallResult{CallSucceeded, CallAlreadyDone, CallFailed, CallAmbiguous, CallNotAttempted}, res) {
		return false, plancore.Invalid(ErrInvalidRecord, field.ErrorList{field.Invalid(field.NewPath("result"), res.String(), "unknown call result")})
	}
	key, g, it, err := s.lookup(ref)
	if err != nil || it == nil {
		return false, err
	}
	switch res {
	case CallFailed, CallNotAttempted:
		s.remove(key, ref.Group, g, it)
		return true, nil
	case CallAlreadyDone:
		if it.action == Delete && !it.seen {
			s.remove(key, ref.Group, g, it)
			return true, nil
		}
		it.resolution = Resolved
	case CallAmbiguous:
		it.resolution = Ambiguous
	case CallSucceeded:
		it.resolution = Resolved
	}
	it.recorded = now
	if uid != "" {
		it.podUID = uid
	}
	if it.action == Create && name != "" && name != it.pod {
		s.rekey(key, g, it, name)
	}
	return true, nil
}

// rekey moves a create from its token (or old name) to name.
func (s *State) rekey(ownerKey string, g *group, it *item, name string) {
	delete(g.byKey, it.key())
	moved := *it
	it.dead = true
	g.dead++
	s.owners[ownerKey].len--
	s.len--
	moved.pod = name
	s.put(ownerKey, g, &moved)
}

// Resolve reports that the call behind ref succeeded and the server named the
// pod name with uid (both may be empty when already known). It is Conclude
// with CallSucceeded.
func (s *State) Resolve(now time.Time, ref Ref, name string, uid types.UID) (bool, error) {
	return s.Conclude(now, ref, CallSucceeded, name, uid)
}

// Rollback removes the item ref names, after its call definitely failed or was
// never made. Rolling back an unknown or forgotten item does nothing.
func (s *State) Rollback(ref Ref) (bool, error) {
	key, g, it, err := s.lookup(ref)
	if err != nil || it == nil {
		return false, err
	}
	s.remove(key, ref.Group, g, it)
	return true, nil
}

// ObservedPod is what an informer event handler passes to Observe.
type ObservedPod struct {
	Name string
	UID  types.UID
	// Token is the pod's TokenAnnotation, if any.
	Token string
}

// Observe latches Seen on the owner's items for pod, as an informer event
// handler may do on any add, update or delete of the pod, so that a pod created
// and deleted between two checks settles without waiting for its timeout. A
// token-only create whose token the pod carries resolves to the pod's name. It
// returns how many items it latched.
func (s *State) Observe(owner Owner, pod ObservedPod) (int, error) {
	key, err := s.ownerKey(owner)
	if err != nil {
		return 0, err
	}
	if pod.Name == "" {
		return 0, plancore.Invalid(ErrInvalidRecord, field.ErrorList{field.Required(field.NewPath("pod", "name"), "an observed pod needs its name")})
	}
	rec, ok := s.owners[key]
	if !ok {
		return 0, nil
	}
	n := 0
	for _, gname := range slices.Sorted(maps.Keys(rec.groups)) {
		g := rec.groups[gname]
		if pod.Token != "" {
			if it, ok := g.byKey[itemKey{token: pod.Token}]; ok && it.action == Create {
				s.rekey(key, g, it, pod.Name)
			}
		}
		if it, ok := g.byKey[itemKey{name: pod.Name}]; ok && (it.podUID == "" || pod.UID == "" || it.podUID == pod.UID) {
			if it.podUID == "" && it.action == Create {
				it.podUID = pod.UID
			}
			if !it.seen {
				it.seen = true
				n++
			}
		}
	}
	return n, nil
}

// Forget removes every item of owner, lingering ones included; with an empty
// UID (or under ByName identity) it removes every owner of that namespace and
// name. Use it when the owner is NotFound and after a wipe that deletes all its
// pods at once. It returns how many items it removed.
func (s *State) Forget(owner Owner) (int, error) {
	if owner.UID == "" && owner.Name == "" {
		return 0, plancore.Invalid(ErrInvalidOwner, field.ErrorList{field.Required(field.NewPath("owner", "uid"), "owner.uid and owner.name are both empty; Forget needs one")})
	}
	if s.opts.OwnerIdentity == ByName {
		if owner.Name == "" {
			return 0, plancore.Invalid(ErrInvalidOwner, field.ErrorList{field.Required(field.NewPath("owner", "name"), "owners are keyed by name")})
		}
		return s.dropOwner(owner.Namespace + "/" + owner.Name), nil
	}
	if owner.UID != "" {
		return s.dropOwner(string(owner.UID)), nil
	}
	// Recording under a new UID drops the old one's items, so at most one
	// owner holds a namespace and name, and the name index finds it in O(1).
	if k, ok := s.names[podKey{owner.Namespace, owner.Name}]; ok {
		return s.dropOwner(k), nil
	}
	return 0, nil
}

// Prune drops the items of every owner not in live, and every item whose
// deadline passed at now without a check settling it (nobody checks its group
// any more), so that nothing leaks even when an owner's deletion was never seen.
// Lingering items stay until a check sees their pod gone, and under Block
// expired items stay until observed or forgotten. It returns how many items it
// dropped and fails only if a live owner is invalid.
func (s *State) Prune(now time.Time, live []Owner) (int, error) {
	if err := checkNow(now); err != nil {
		return 0, err
	}
	keep := make(map[string]bool, len(live))
	for _, o := range live {
		k, err := s.ownerKey(o)
		if err != nil {
			return 0, err
		}
		keep[k] = true
	}
	n := 0
	for _, k := range slices.Sorted(maps.Keys(s.owners)) {
		if !keep[k] {
			n += s.dropOwner(k)
			continue
		}
		rec := s.owners[k]
		for _, gname := range slices.Sorted(maps.Keys(rec.groups)) {
			g := rec.groups[gname]
			for _, it := range g.order {
				if it.dead || it.lingering || s.opts.OnExpiry == Block || !it.expired(now) {
					continue
				}
				delete(g.byKey, it.key())
				it.dead = true
				g.dead++
				rec.len--
				s.len--
				n++
			}
			if _, ok := s.owners[k]; ok {
				s.compactIfSparse(k, gname, g)
			}
		}
	}
	return n, nil
}

// Len returns how many items the State holds, lingering ones included (0 for
// a nil State).
func (s *State) Len() int {
	if s == nil {
		return 0
	}
	return s.len
}

// Count returns how many items owner has, lingering ones included. An invalid
// owner has none.
func (s *State) Count(owner Owner) int {
	if s == nil {
		return 0
	}
	key, err := s.ownerKey(owner)
	if err != nil {
		return 0
	}
	if rec, ok := s.owners[key]; ok {
		return rec.len
	}
	return 0
}

// Groups returns the names of owner's groups that hold items, sorted. Groups
// not listed are satisfied with nothing pending.
func (s *State) Groups(owner Owner) []string {
	if s == nil {
		return nil
	}
	key, err := s.ownerKey(owner)
	if err != nil {
		return nil
	}
	rec, ok := s.owners[key]
	if !ok {
		return nil
	}
	return slices.Sorted(maps.Keys(rec.groups))
}

// Clone returns a deep copy of s.
func (s *State) Clone() *State {
	c := &State{opts: s.opts, len: s.len}
	if s.names != nil {
		c.names = maps.Clone(s.names)
	}
	if s.owners != nil {
		c.owners = make(map[string]*ownerRec, len(s.owners))
	}
	for k, rec := range s.owners {
		c.owners[k] = rec.clone()
	}
	return c
}

// clone is a deep copy of rec without its removed items.
func (rec *ownerRec) clone() *ownerRec {
	crec := &ownerRec{owner: rec.owner, len: rec.len, groups: make(map[string]*group, len(rec.groups))}
	for gname, g := range rec.groups {
		cg := &group{byKey: make(map[itemKey]*item, len(g.byKey)), order: make([]*item, 0, len(g.byKey)), dirty: g.dirty}
		for _, it := range g.order {
			if it.dead {
				continue
			}
			cit := *it
			cg.byKey[cit.key()] = &cit
			cg.order = append(cg.order, &cit)
		}
		crec.groups[gname] = cg
	}
	return crec
}
