package expectations_test

import (
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/internal/golden"
)

// goldenInput is one transcript's input: a State built with the options
// of Profile (default, KubeRay or OpenKruise), then Steps, each run at
// t0 + At (an absent At keeps the previous step's time).
type goldenInput struct {
	// Title is the transcript's first line.
	Title   string `json:"title"`
	Profile string `json:"profile"`
	// CountsTerminating overrides the profile's option of that name.
	CountsTerminating *bool        `json:"countsTerminating"`
	Steps             []goldenStep `json:"steps"`
}

// goldenStep is one call, exactly one of Record, Conclude and Satisfied.
type goldenStep struct {
	At     *golden.Duration     `json:"at"`
	Record *expectations.Record `json:"record"`
	// Conclude concludes the Ref-th record (from 1) with the API's answer:
	// Error (none, quota or timeout) and the created pod's Name and UID.
	Conclude *struct {
		Ref   int    `json:"ref"`
		Error string `json:"error"`
		Name  string `json:"name"`
		UID   string `json:"uid"`
	} `json:"conclude"`
	// Satisfied asks whether Group is satisfied by a view of Pods, each
	// "name", "name~" (terminating), "name@uid" or "name#token".
	Satisfied *struct {
		Group string   `json:"group"`
		Pods  []string `json:"pods"`
	} `json:"satisfied"`
}

// goldenErrors are the API errors a conclude step can name.
var goldenErrors = map[string]error{
	"":        nil,
	"quota":   errQuota,
	"timeout": apierrors.NewServerTimeout(podsGR, "create", 1),
}

func goldenOptions(t *testing.T, in goldenInput) expectations.Options {
	var o expectations.Options
	switch in.Profile {
	case "", "default":
	case "KubeRay":
		o = expectations.KubeRay()
	case "OpenKruise":
		o = expectations.OpenKruise()
	default:
		t.Fatalf("unknown profile %q (default, KubeRay or OpenKruise)", in.Profile)
	}
	if in.CountsTerminating != nil {
		o.CountsTerminating = *in.CountsTerminating
	}
	return o
}

// TestGoldenTranscripts replays testdata/*.txt, writing down every call
// and every answer (go test -run Golden -update rewrites the outputs).
func TestGoldenTranscripts(t *testing.T) {
	golden.Run(t, "testdata", func(t *testing.T, input []byte) string {
		in := golden.Decode[goldenInput](t, input)
		o := goldenOptions(t, in)
		s, err := expectations.New(o)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "# %s\n# options %+v\n", in.Title, o)
		now := t0
		var refs []expectations.Ref
		for i, st := range in.Steps {
			if st.At != nil {
				now = t0.Add(st.At.D())
			}
			switch {
			case st.Record != nil:
				r := *st.Record
				if r.Owner == (expectations.Owner{}) {
					r.Owner = rc
				}
				ref, err := s.Record(now, r)
				fmt.Fprintf(&b, "t+%v record %s group=%q pod=%q token=%q seen=%t err=%v\n", now.Sub(t0), r.Action, r.Group, r.Pod, r.Token, r.Seen, err)
				refs = append(refs, ref)
			case st.Conclude != nil:
				c := st.Conclude
				apiErr, ok := goldenErrors[c.Error]
				if !ok || c.Ref < 1 || c.Ref > len(refs) {
					t.Fatalf("step %d: unknown error %q or no record %d", i, c.Error, c.Ref)
				}
				ref := refs[c.Ref-1]
				a := expectations.Create
				if ref.Pod != "" && ref.Token == "" && c.Name == "" {
					a = expectations.Delete
				}
				res := expectations.Classify(a, apiErr, false)
				found, cerr := s.Conclude(now, ref, res, c.Name, types.UID(c.UID))
				fmt.Fprintf(&b, "t+%v conclude %s%s as %s (api error: %v) name=%q found=%t err=%v\n", now.Sub(t0), ref.Pod, bracket(ref.Token), res, apiErr, c.Name, found, cerr)
			case st.Satisfied != nil:
				r, err := s.Satisfied(now, rc, st.Satisfied.Group, pods(st.Satisfied.Pods...))
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&b, "t+%v satisfied? view: %s  (len %d)\n%s", now.Sub(t0), "["+strings.Join(st.Satisfied.Pods, " ")+"]", s.Len(), r)
			default:
				t.Fatalf("step %d: needs one of record, conclude and satisfied", i)
			}
		}
		return b.String()
	})
}

func bracket(token string) string {
	if token == "" {
		return ""
	}
	return "[" + token + "]"
}
