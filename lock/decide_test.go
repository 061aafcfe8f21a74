package lock

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	n1  = NodeKey("n1")
	p1  = Requester{Namespace: "default", Name: "p1", UID: "u1"}
	at  = func(hms string) time.Time { t, _ := time.Parse(time.RFC3339, "2026-06-14T"+hms+"Z"); return t }
	rec = func(hms, ns, name, uid string, epoch uint64) Record {
		return Record{Time: at(hms), Namespace: ns, Name: name, UID: uid, Epoch: epoch}
	}
)

// decide is PlanAcquire with the arguments spelled out, as the tables read.
func decide(obs Observation, req Requester, now time.Time, o Options, h Holder) (Plan, error) {
	return PlanAcquire(AcquireInput{Observation: obs, Requester: req, Now: now, Holder: h}, o)
}

// wantPlan is a table's expected plan, with the retry as an instant: at turns
// it into the Plan PlanAcquire returns at now.
type wantPlan struct {
	Kind         Kind
	Reason       ReasonCode
	Key          Key
	Record       Record
	Precondition Precondition
	RetryAt      time.Time
	TTL          time.Duration
}

func (w wantPlan) at(now time.Time) Plan {
	p := Plan{Kind: w.Kind, Reason: reason(w.Reason), Key: w.Key, Record: w.Record, Precondition: w.Precondition, TTL: w.TTL}
	if !w.RetryAt.IsZero() {
		p.RequeueAfter = w.RetryAt.Sub(now)
	}
	return p
}

func held(raw string) Observation {
	return Observation{Key: n1, Present: true, Raw: raw, Version: "200", EpochHigh: 6}
}

func TestDecide(t *testing.T) {
	exists := Holder{State: HolderExists}
	allocating := Holder{State: HolderExists, Allocating: true}
	steal := func(k Kind, r ReasonCode, raw string, now string, epoch uint64) wantPlan {
		return wantPlan{Kind: k, Reason: r, Key: n1, TTL: DefaultTTL, Record: rec(now, "default", "p1", "u1", epoch),
			Precondition: Precondition{Present: true, Raw: raw, Version: "200"}}
	}
	refuse := func(k Kind, r ReasonCode, observed Record, retryAt time.Time) wantPlan {
		return wantPlan{Kind: k, Reason: r, Key: n1, TTL: DefaultTTL, Record: observed, RetryAt: retryAt}
	}
	const p0 = "2026-06-14T09:55:00Z,default,p0"
	p0rec := rec("09:55:00", "default", "p0", "", 0)
	cases := []struct {
		name   string
		obs    Observation
		req    Requester
		now    time.Time
		opts   Options
		holder Holder
		want   wantPlan
	}{
		{
			name: "absent: acquire at EpochHigh+1, absent at the observed version",
			obs:  Observation{Key: n1, Version: "100", EpochHigh: 6},
			now:  at("10:00:00").Add(900 * time.Millisecond),
			want: wantPlan{Kind: Acquire, Reason: ReasonUnlocked, Key: n1, TTL: DefaultTTL, Record: rec("10:00:00", "default", "p1", "u1", 7), Precondition: Precondition{Version: "100"}},
		},
		{
			name: "age == TTL is not expired: HAMi's strict >",
			obs:  held(p0), now: at("10:00:00"), holder: exists,
			want: refuse(Refuse, ReasonHeldByOther, p0rec, at("10:00:00").Add(1)),
		},
		{
			name: "age == TTL + 1ns is expired",
			obs:  held(p0), now: at("10:00:00").Add(1), holder: exists,
			want: wantPlan{Kind: StealExpired, Reason: ReasonExpired, Key: n1, TTL: DefaultTTL, Record: rec("10:00:00", "default", "p1", "u1", 7), Precondition: Precondition{Present: true, Raw: p0, Version: "200"}},
		},
		{
			name: "expired one second later: one CAS on the observed value",
			obs:  held(p0), now: at("10:00:01"), holder: exists,
			want: steal(StealExpired, ReasonExpired, p0, "10:00:01", 7),
		},
		{
			name: "held, holder not checked: refuse as unknown rather than guess",
			obs:  held(p0), now: at("09:59:00"),
			want: refuse(Refuse, ReasonHolderUnknown, p0rec, time.Time{}),
		},
		{
			name: "held, holder lookup failed: unknown, not contention",
			obs:  held(p0), now: at("09:59:00"), holder: Holder{State: HolderUnknown},
			want: refuse(Refuse, ReasonHolderUnknown, p0rec, time.Time{}),
		},
		{
			name: "held, holder gone: steal dangling",
			obs:  held(p0), now: at("09:59:00"), holder: Holder{State: HolderNotFound},
			want: steal(StealDangling, ReasonHolderGone, p0, "09:59:00", 7),
		},
		{
			name: "held, holder replaced by a same-name pod: steal dangling (UID identity)",
			obs:  held(p0), now: at("09:59:00"), holder: Holder{State: HolderNotFound, Replaced: true},
			want: steal(StealDangling, ReasonHolderReplaced, p0, "09:59:00", 7),
		},
		{
			name: "held, holder terminal: steal dangling, unlike HAMi #1368",
			obs:  held(p0), now: at("09:59:00"), holder: Holder{State: HolderTerminal},
			want: steal(StealDangling, ReasonHolderTerminal, p0, "09:59:00", 7),
		},
		{
			name: "held, holder terminal, compat: held until TTL as in HAMi #1368",
			obs:  held(p0), now: at("09:59:00"), holder: Holder{State: HolderTerminal}, opts: Options{TerminalHolderAlive: true},
			want: refuse(Refuse, ReasonHeldByOther, p0rec, at("10:00:00").Add(1)),
		},
		{
			name: "same pod: re-entrant, nothing written, timestamp not refreshed (#2255, #2570)",
			obs:  held("2026-06-14T09:58:00Z,default,p1"), now: at("09:59:00"),
			want: wantPlan{Kind: AlreadyHeld, Reason: ReasonSameOwner, Key: n1, TTL: DefaultTTL, Record: rec("09:58:00", "default", "p1", "", 0)},
		},
		{
			name: "same pod, own lock expired: re-stamped with a new epoch",
			obs:  held("2026-06-14T09:50:00Z,default,p1"), now: at("09:56:00"),
			want: steal(StealExpired, ReasonExpired, "2026-06-14T09:50:00Z,default,p1", "09:56:00", 7),
		},
		{
			name: "legacy value: unnamed owner, only expiry frees it",
			obs:  held("2026-06-14T09:58:00Z"), now: at("09:59:00"),
			want: refuse(Refuse, ReasonHeldByOther, rec("09:58:00", "", "", "", 0), at("10:03:00").Add(1)),
		},
		{
			name: "legacy value expired",
			obs:  held("2026-06-14T09:58:00Z"), now: at("10:03:01"),
			want: steal(StealExpired, ReasonExpired, "2026-06-14T09:58:00Z", "10:03:01", 7),
		},
		{
			name: "T,, : unnamed owner, no holder lookup",
			obs:  held("2026-06-14T09:58:00Z,,"), now: at("09:59:00"),
			want: refuse(Refuse, ReasonHeldByOther, rec("09:58:00", "", "", "", 0), at("10:03:00").Add(1)),
		},
		{
			name: "malformed, first seen now: invalid until seen for TTL (HAMi blocks forever)",
			obs:  held("lock"), now: at("10:00:00"),
			want: refuse(Invalid, ReasonMalformed, Record{}, at("10:05:00").Add(1)),
		},
		{
			name: "malformed, seen exactly TTL: still invalid",
			obs:  func() Observation { o := held("lock"); o.FirstObservedAt = at("09:55:00"); return o }(), now: at("10:00:00"),
			want: refuse(Invalid, ReasonMalformed, Record{}, at("10:00:00").Add(1)),
		},
		{
			name: "malformed, seen for longer than TTL: steal",
			obs:  func() Observation { o := held("lock"); o.FirstObservedAt = at("09:55:00"); return o }(), now: at("10:00:01"),
			want: steal(StealExpired, ReasonMalformed, "lock", "10:00:01", 7),
		},
		{
			name: "malformed, compat: blocked forever as in HAMi",
			obs:  func() Observation { o := held("lock"); o.FirstObservedAt = at("01:00:00"); return o }(), now: at("10:00:00"), opts: Options{Malformed: BlockForever},
			want: refuse(Invalid, ReasonMalformed, Record{}, time.Time{}),
		},
		{
			name: "4 parts: malformed since HAMi v2.8 (#1560)",
			obs:  held("2026-06-14T09:58:00Z,default,p1,x"), now: at("10:00:00"),
			want: refuse(Invalid, ReasonMalformed, Record{}, at("10:05:00").Add(1)),
		},
		{
			name: "bad timestamp in 3 parts: invalid, owner still reported",
			obs:  held("soon,default,p0"), now: at("10:00:00"),
			want: refuse(Invalid, ReasonMalformed, Record{Namespace: "default", Name: "p0"}, at("10:05:00").Add(1)),
		},
		{
			name: "timestamp more than TTL in the future: malformed on the writer clock",
			obs:  held("2026-06-14T10:05:01Z,default,p0"), now: at("10:00:00"), holder: exists,
			// At 10:00:01 the timestamp is no longer more than TTL ahead.
			want: refuse(Invalid, ReasonFutureTimestamp, rec("10:05:01", "default", "p0", "", 0), at("10:00:01")),
		},
		{
			name: "timestamp exactly TTL in the future: merely held",
			obs:  held("2026-06-14T10:05:00Z,default,p0"), now: at("10:00:00"), holder: exists,
			want: refuse(Refuse, ReasonHeldByOther, rec("10:05:00", "default", "p0", "", 0), at("10:10:00").Add(1)),
		},
		{
			name: "far future timestamp, compat: merely held, as in HAMi",
			obs:  held("2027-01-01T00:00:00Z,default,p0"), now: at("10:00:00"), holder: exists, opts: Options{Malformed: BlockForever},
			want: refuse(Refuse, ReasonHeldByOther, Record{Time: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), Namespace: "default", Name: "p0"}, time.Date(2027, 1, 1, 0, 5, 0, 1, time.UTC)),
		},
		{
			name: "expired, holder allocating: protected up to 3×TTL, unlike HAMi #3096",
			obs:  held(p0), now: at("10:00:01"), holder: allocating,
			want: refuse(Refuse, ReasonHolderAllocating, p0rec, at("10:10:00").Add(1)),
		},
		{
			name: "expired, holder allocating, age == ceiling: still protected",
			obs:  held(p0), now: at("10:10:00"), holder: allocating,
			want: refuse(Refuse, ReasonHolderAllocating, p0rec, at("10:10:00").Add(1)),
		},
		{
			name: "expired, holder allocating, past the ceiling: steal",
			obs:  held(p0), now: at("10:10:01"), holder: allocating,
			want: steal(StealExpired, ReasonExpired, p0, "10:10:01", 7),
		},
		{
			name: "expired, holder allocating, compat: stolen as in HAMi #3096",
			obs:  held(p0), now: at("10:00:01"), holder: allocating, opts: Options{StealFromAllocatingHolder: true},
			want: steal(StealExpired, ReasonExpired, p0, "10:00:01", 7),
		},
		{
			name: "expired, holder allocating, ceiling never",
			obs:  held(p0), now: at("23:00:00"), holder: allocating, opts: Options{AllocatingCeiling: AllocatingCeilingNever},
			want: refuse(Refuse, ReasonHolderAllocating, p0rec, time.Time{}),
		},
		{
			name: "expired, holder unknown while protection applies: refuse as unknown",
			obs:  held(p0), now: at("10:00:01"), holder: Holder{State: HolderUnknown},
			want: refuse(Refuse, ReasonHolderUnknown, p0rec, time.Time{}),
		},
		{
			name: "extended record, same name, other UID: not the owner (HAMi #2570)",
			obs:  held("2026-06-14T09:58:00Z,default,p1,u0,6"), now: at("09:59:00"), holder: Holder{State: HolderNotFound, Replaced: true},
			want: steal(StealDangling, ReasonHolderReplaced, "2026-06-14T09:58:00Z,default,p1,u0,6", "09:59:00", 7),
		},
		{
			name: "extended record, same name, other UID, compat NameOnly: re-entrant",
			obs:  held("2026-06-14T09:58:00Z,default,p1,u0,6"), now: at("09:59:00"), opts: Options{Identity: NameOnly},
			want: wantPlan{Kind: AlreadyHeld, Reason: ReasonSameOwner, Key: n1, TTL: DefaultTTL, Record: rec("09:58:00", "default", "p1", "u0", 6)},
		},
		{
			name: "extended record with an epoch above EpochHigh: next grant above both",
			obs:  held("2026-06-14T09:58:00Z,default,p0,u0,41"), now: at("09:59:00"), holder: Holder{State: HolderNotFound},
			want: steal(StealDangling, ReasonHolderGone, "2026-06-14T09:58:00Z,default,p0,u0,41", "09:59:00", 42),
		},
		{
			name: "HAMi value with a matching sidecar: UID and epoch from the sidecar",
			obs: func() Observation {
				o := held("2026-06-14T09:58:00Z,default,p1")
				o.Sidecar = "2026-06-14T09:58:00Z,default,p1,u0,9"
				return o
			}(), now: at("09:59:00"), holder: exists,
			want: refuse(Refuse, ReasonHeldByOther, rec("09:58:00", "default", "p1", "u0", 9), at("10:03:00").Add(1)),
		},
		{
			name: "HAMi value replaced by a HAMi steal: stale sidecar gives no UID, but its epoch still counts",
			obs: func() Observation {
				o := held("2026-06-14T09:58:30Z,default,p1")
				o.Sidecar = "2026-06-14T09:58:00Z,default,p1,u0,9"
				return o
			}(), now: at("09:59:00"),
			want: wantPlan{Kind: AlreadyHeld, Reason: ReasonSameOwner, Key: n1, TTL: DefaultTTL, Record: rec("09:58:30", "default", "p1", "", 0)},
		},
		{
			name: "observation clock: an old writer timestamp is not expired until seen for TTL",
			obs: func() Observation {
				o := held("2026-06-14T01:00:00Z,default,p0")
				o.FirstObservedAt = at("09:56:00")
				return o
			}(), now: at("10:00:00"), holder: exists, opts: Options{ExpiryClock: ObservationClock},
			want: refuse(Refuse, ReasonHeldByOther, rec("01:00:00", "default", "p0", "", 0), at("10:01:00").Add(1)),
		},
		{
			name: "observation clock: seen for longer than TTL",
			obs: func() Observation {
				o := held("2026-06-14T01:00:00Z,default,p0")
				o.FirstObservedAt = at("09:55:00")
				return o
			}(), now: at("10:00:01"), holder: exists, opts: Options{ExpiryClock: ObservationClock},
			want: steal(StealExpired, ReasonExpired, "2026-06-14T01:00:00Z,default,p0", "10:00:01", 7),
		},
		{
			name: "observation clock: a far-future writer timestamp is no problem",
			obs:  held("2030-01-01T00:00:00Z,default,p0"), now: at("10:00:00"), holder: exists, opts: Options{ExpiryClock: ObservationClock},
			want: refuse(Refuse, ReasonHeldByOther, Record{Time: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), Namespace: "default", Name: "p0"}, at("10:05:00").Add(1)),
		},
		{
			name: "custom TTL (Cambricon's 2 minutes)",
			obs:  held("2026-06-14T09:58:00Z"), now: at("10:00:01"), opts: Options{TTL: CambriconTTL},
			want: func() wantPlan {
				d := steal(StealExpired, ReasonExpired, "2026-06-14T09:58:00Z", "10:00:01", 7)
				d.TTL = CambriconTTL
				return d
			}(),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			if req == (Requester{}) {
				req = p1
			}
			got, err := decide(tc.obs, req, tc.now, tc.opts, tc.holder)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want.at(tc.now), got); diff != "" {
				t.Errorf("PlanAcquire (-want +got):\n%s", diff)
			}
			// NeedsHolder says exactly when an unchecked holder is refused as
			// unknown.
			need, err := NeedsHolder(AcquireInput{Observation: tc.obs, Requester: req, Now: tc.now}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			unchecked, _ := decide(tc.obs, req, tc.now, tc.opts, Holder{})
			if refused := unchecked.Kind == Refuse && unchecked.Reason.Code == ReasonHolderUnknown; need != refused {
				t.Errorf("NeedsHolder = %v, but PlanAcquire without a holder gives %v", need, unchecked)
			}
		})
	}
}

func TestPlanErr(t *testing.T) {
	const p0 = "2026-06-14T09:55:00Z,default,p0"
	d, _ := decide(held(p0), p1, at("10:00:00"), Options{}, Holder{State: HolderExists})
	err := d.Err()
	if !errors.Is(err, ErrContention) || err.Error() != "node n1 has been locked within 5m0s: node lock contention" {
		t.Errorf("contention error = %q, want HAMi's message wrapping ErrContention", err)
	}
	d, _ = decide(held(p0), p1, at("09:56:30"), Options{TTL: 2 * time.Minute}, Holder{State: HolderExists})
	if got := d.Err().Error(); got != "node n1 has been locked within 2m0s: node lock contention" {
		t.Errorf("error = %q", got)
	}
	d, _ = decide(held(p0), p1, at("10:00:01"), Options{}, Holder{State: HolderExists, Allocating: true})
	if err := d.Err(); !errors.Is(err, ErrContention) || !strings.Contains(err.Error(), "still allocating") {
		t.Errorf("allocating error = %v", err)
	}
	d, _ = decide(held(p0), p1, at("09:59:00"), Options{}, Holder{State: HolderUnknown})
	if err := d.Err(); !errors.Is(err, ErrHolderUnknown) || errors.Is(err, ErrContention) {
		t.Errorf("unknown holder error = %v: must not be contention", err)
	}
	d, _ = decide(held("lock"), p1, at("10:00:00"), Options{}, Holder{})
	if err := d.Err(); !errors.Is(err, ErrInvalid) {
		t.Errorf("invalid error = %v", err)
	}
	d, _ = decide(Observation{Key: n1}, p1, at("10:00:00"), Options{}, Holder{})
	if err := d.Err(); err != nil {
		t.Errorf("acquire error = %v", err)
	}
}

func TestPlanRelease(t *testing.T) {
	const abc123 = "2026-06-14T10:00:00Z,team-a,abc-123"
	teamA := Requester{Namespace: "team-a", Name: "abc"}
	release := func(r ReasonCode, raw string) Plan {
		return Plan{Kind: Release, Reason: reason(r), Key: n1, Precondition: Precondition{Present: true, Raw: raw, Version: "200"}}
	}
	noop := func(r ReasonCode) Plan { return Plan{Kind: NoOp, Reason: reason(r), Key: n1} }
	cases := []struct {
		name string
		obs  Observation
		req  Requester
		opts Options
		want Plan
	}{
		{"absent", Observation{Key: n1, Version: "5"}, teamA, Options{}, noop(ReasonNotLocked)},
		{"owner suffix needs the leading comma (#1433)", held(abc123), teamA, Options{}, noop(ReasonNotOwner)},
		{"owner", held("2026-06-14T10:00:00Z,team-a,abc"), teamA, Options{}, release(ReasonOwner, "2026-06-14T10:00:00Z,team-a,abc")},
		{"other namespace", held("2026-06-14T10:00:00Z,team-b,abc"), teamA, Options{}, noop(ReasonNotOwner)},
		{"namespace that ends like the requester's: the leading comma matters", held("2026-06-14T10:00:00Z,my-team-a,abc"), teamA, Options{}, noop(ReasonNotOwner)},
		{"bad timestamp, namespace that ends like the requester's", held("later,my-team-a,abc"), teamA, Options{}, noop(ReasonNotOwner)},
		{"bad timestamp, owner suffix still applies", held("later,team-a,abc"), teamA, Options{}, release(ReasonOwner, "later,team-a,abc")},
		{"4 parts ending in the owner: HAMi's suffix rule", held("x,y,team-a,abc"), teamA, Options{}, release(ReasonOwner, "x,y,team-a,abc")},
		{"unnamed T,,", held("2026-06-14T10:00:00Z,,"), teamA, Options{}, noop(ReasonNotOwner)},
		{"legacy: not releasable by just anyone, unlike HAMi #2054", held("2026-06-14T10:00:00Z"), teamA, Options{}, noop(ReasonNotOwner)},
		{"legacy, compat: anyone (#2054)", held("2026-06-14T10:00:00Z"), teamA, Options{LegacyReleasableByAnyone: true}, release(ReasonLegacyReleasable, "2026-06-14T10:00:00Z")},
		{"malformed without comma", held("lock"), teamA, Options{}, noop(ReasonNotOwner)},
		{"malformed without comma, compat", held("lock"), teamA, Options{LegacyReleasableByAnyone: true}, release(ReasonLegacyReleasable, "lock")},
		{"extended, same UID", held("2026-06-14T10:00:00Z,default,p1,u1,3"), p1, Options{}, release(ReasonOwner, "2026-06-14T10:00:00Z,default,p1,u1,3")},
		{"extended, other UID", held("2026-06-14T10:00:00Z,default,p1,u0,3"), p1, Options{}, noop(ReasonNotOwner)},
		{"extended, other UID, NameOnly", held("2026-06-14T10:00:00Z,default,p1,u0,3"), p1, Options{Identity: NameOnly}, release(ReasonOwner, "2026-06-14T10:00:00Z,default,p1,u0,3")},
		{"extended, requester without UID", held("2026-06-14T10:00:00Z,default,p1,u0,3"), Requester{Namespace: "default", Name: "p1"}, Options{}, release(ReasonOwner, "2026-06-14T10:00:00Z,default,p1,u0,3")},
		{"extended, other name", held("2026-06-14T10:00:00Z,default,p2,u1,3"), p1, Options{}, noop(ReasonNotOwner)},
		{"HAMi value with a matching sidecar of another UID", func() Observation {
			o := held("2026-06-14T10:00:00Z,default,p1")
			o.Sidecar = "2026-06-14T10:00:00Z,default,p1,u0,3"
			return o
		}(), p1, Options{}, noop(ReasonNotOwner)},
		{"HAMi value with a stale sidecar: suffix rule", func() Observation {
			o := held("2026-06-14T10:00:09Z,default,p1")
			o.Sidecar = "2026-06-14T10:00:00Z,default,p1,u0,3"
			return o
		}(), p1, Options{}, release(ReasonOwner, "2026-06-14T10:00:09Z,default,p1")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PlanRelease(ReleaseInput{Observation: tc.obs, Requester: tc.req}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PlanRelease (-want +got):\n%s", diff)
			}
		})
	}
}

func TestForceRelease(t *testing.T) {
	force := func(obs Observation) (Plan, error) {
		return PlanRelease(ReleaseInput{Observation: obs, Force: true}, Options{})
	}
	got, err := force(held("lock"))
	want := Plan{Kind: Release, Reason: reason(ReasonForced), Key: n1, Precondition: Precondition{Present: true, Raw: "lock", Version: "200"}}
	if err != nil || got != want {
		t.Errorf("ForceRelease = %v, %v", got, err)
	}
	if got, _ := force(Observation{Key: n1}); got.Kind != NoOp {
		t.Errorf("ForceRelease of an absent key = %v", got)
	}
	if _, err := force(Observation{}); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("ForceRelease without a key: %v", err)
	}
}

func TestResolveTTL(t *testing.T) {
	cases := []struct {
		name    string
		flag    time.Duration
		flagSet bool
		env     string
		want    time.Duration
		wantErr string
	}{
		{"nothing set", 5 * time.Minute, false, "", DefaultTTL, ""},
		{"env set, flag at its default: env wins (#2790)", 5 * time.Minute, false, "10m", 10 * time.Minute, ""},
		{"flag set explicitly wins over env", 3 * time.Minute, true, "10m", 3 * time.Minute, ""},
		{"invalid env is an error, not a log line", 5 * time.Minute, false, "notaduration", 0, `HAMI_NODELOCK_EXPIRE is not a Go duration`},
		{"non-positive env", 0, false, "0s", 0, "must be positive"},
		{"non-positive flag", -time.Second, true, "", 0, "--node-lock-timeout must be positive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveTTL(tc.flag, tc.flagSet, tc.env)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want ErrInvalidOptions containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ResolveTTL = %v, %v, want %v", got, err, tc.want)
			}
		})
	}
}

// A re-read after a conflict (FirstRead set): releases that no owner check
// protects remove only the value first read; an owner's release is not
// affected (HAMi #2197).
func TestPlanReleaseAfterConflict(t *testing.T) {
	const legacyOld, legacyNew = "2026-06-14T10:00:00Z", "2026-06-14T10:00:05Z"
	hamiP1 := "2026-06-14T10:00:07Z,default,p1"
	ptr := func(s string) *string { return &s }
	release := func(r ReasonCode, raw string) Plan {
		return Plan{Kind: Release, Reason: reason(r), Key: n1, Precondition: Precondition{Present: true, Raw: raw, Version: "200"}}
	}
	noop := func(r ReasonCode) Plan { return Plan{Kind: NoOp, Reason: reason(r), Key: n1} }
	cases := []struct {
		name string
		in   ReleaseInput
		opts Options
		want Plan
	}{
		{"legacy, first attempt", ReleaseInput{Observation: held(legacyOld), Requester: p1}, HAMi(), release(ReasonLegacyReleasable, legacyOld)},
		{"legacy, re-read the same value", ReleaseInput{Observation: held(legacyOld), Requester: p1, FirstRead: ptr(legacyOld)}, HAMi(), release(ReasonLegacyReleasable, legacyOld)},
		{"legacy, another writer's new value", ReleaseInput{Observation: held(legacyNew), Requester: p1, FirstRead: ptr(legacyOld)}, HAMi(), noop(ReasonChangedSinceFirstRead)},
		{"legacy after the owner's value: not the owner's any more", ReleaseInput{Observation: held(legacyNew), Requester: p1, FirstRead: ptr(hamiP1)}, HAMi(), noop(ReasonChangedSinceFirstRead)},
		{"owner re-stamped its lock: still released", ReleaseInput{Observation: held(hamiP1), Requester: p1, FirstRead: ptr("2026-06-14T10:00:01Z,default,p1")}, HAMi(), release(ReasonOwner, hamiP1)},
		{"someone else's value after a conflict", ReleaseInput{Observation: held("2026-06-14T10:00:07Z,default,p2"), Requester: p1, FirstRead: ptr(hamiP1)}, HAMi(), noop(ReasonNotOwner)},
		{"forced, re-read the same value", ReleaseInput{Observation: held(legacyOld), Force: true, FirstRead: ptr(legacyOld)}, Options{}, release(ReasonForced, legacyOld)},
		{"forced, a newer value", ReleaseInput{Observation: held(legacyNew), Force: true, FirstRead: ptr(legacyOld)}, Options{}, noop(ReasonChangedSinceFirstRead)},
		{"forced, gone after the conflict", ReleaseInput{Observation: Observation{Key: n1, Version: "201"}, Force: true, FirstRead: ptr(legacyOld)}, Options{}, noop(ReasonNotLocked)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PlanRelease(tc.in, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PlanRelease (-want +got):\n%s", diff)
			}
		})
	}
}
