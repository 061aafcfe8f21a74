package gpu_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plancore/plancore/gpu"
	"github.com/plancore/plancore/internal/golden"
)

// bindCase is one bind transcript's input: pod default/p (uid-p) binding
// to node n1 at tBind under Options, against the scripted executor.
type bindCase struct {
	// Pod is the pod the executor reads: one container, main, with these
	// limits, and these labels.
	Pod struct {
		Limits map[string]string `json:"limits"`
		Labels map[string]string `json:"labels"`
	} `json:"pod"`
	Options struct {
		RetryDeadline       golden.Duration `json:"retryDeadline"`
		ExtenderHTTPTimeout golden.Duration `json:"extenderHTTPTimeout"`
		RetryPodGroupOnly   bool            `json:"retryPodGroupOnly"`
	} `json:"options"`
	// Results are the executor's answers to actions, by "<Kind> <Lock>
	// <Reason code>", consumed in order; an action without one succeeds.
	Results map[string][]bindResult `json:"results"`
	// Always answers every call of an action.
	Always map[string]bindResult `json:"always"`
	// WakeAfter cuts a backoff wait short, as a lock release wakes it.
	WakeAfter golden.Duration `json:"wakeAfter"`
	// ErrIs names the error the outcome must wrap (api, timeout,
	// contention or invalidRequest); its text is in the output.
	ErrIs string `json:"errIs"`
}

// bindResult is one scripted answer. Err is api, timeout, contention or
// any other message.
type bindResult struct {
	Err            string `json:"err"`
	Contention     bool   `json:"contention"`
	OutcomeUnknown bool   `json:"outcomeUnknown"`
	// Pod is the pod a read returns: the case's pod with this node name
	// and, when set, this UID.
	Pod *struct {
		NodeName string `json:"nodeName"`
		UID      string `json:"uid"`
	} `json:"pod"`
}

var bindErrors = map[string]error{"api": errAPI, "timeout": errTimeout, "contention": errContention, "invalidRequest": gpu.ErrInvalidRequest}

func (c bindCase) pod() *corev1.Pod {
	limits := corev1.ResourceList{}
	for k, v := range c.Pod.Limits {
		limits[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	p := podWith(nil, []corev1.Container{ctr("main", limits)})
	p.Spec.NodeName = ""
	p.Labels = c.Pod.Labels
	return p
}

func (c bindCase) result(r bindResult) gpu.Result {
	out := gpu.Result{Contention: r.Contention, OutcomeUnknown: r.OutcomeUnknown}
	if r.Err != "" {
		if out.Err = bindErrors[r.Err]; out.Err == nil {
			out.Err = errors.New(r.Err)
		}
	}
	if r.Pod != nil {
		out.Pod = c.pod()
		out.Pod.Spec.NodeName = r.Pod.NodeName
		if r.Pod.UID != "" {
			out.Pod.UID = types.UID(r.Pod.UID)
		}
	}
	return out
}

// TestBindGolden runs the bind state machine on each testdata/bind/*.txt
// against the scripted executor, checks the lock contract on the
// transcript and compares the transcript and outcome (go test -run
// Golden -update rewrites the outputs).
func TestBindGolden(t *testing.T) {
	golden.Run(t, "testdata/bind", func(t *testing.T, input []byte) string {
		c := golden.Decode[bindCase](t, input)
		sc := &scripted{step: time.Millisecond, pod: c.pod(), results: map[string][]gpu.Result{}, always: map[string]gpu.Result{}, wakeAfter: c.WakeAfter.D()}
		for k, rs := range c.Results {
			for _, r := range rs {
				sc.results[k] = append(sc.results[k], c.result(r))
			}
		}
		for k, r := range c.Always {
			sc.always[k] = c.result(r)
		}
		steps, out := drive(t, bindInput(gpu.Options{RetryDeadline: c.Options.RetryDeadline.D(),
			ExtenderHTTPTimeout: c.Options.ExtenderHTTPTimeout.D(), RetryPodGroupOnly: c.Options.RetryPodGroupOnly}), sc)
		if c.ErrIs != "" && !errors.Is(out.Err, bindErrors[c.ErrIs]) {
			t.Errorf("err = %v, want it to wrap %q", out.Err, c.ErrIs)
		}
		if out.Bound != (out.Err == nil) {
			t.Errorf("bound=%v but err=%v", out.Bound, out.Err)
		}
		checkBindContract(t, steps, out)
		return FormatTranscriptWithOutcome(steps, out)
	})
}

// fitCase is the fit transcript's input: Decide on Nodes for each Request.
type fitCase struct {
	Fits []struct {
		Title   string         `json:"title"`
		Nodes   []gpu.Node     `json:"nodes"`
		Request gpu.FitRequest `json:"request"`
	} `json:"fits"`
}

// TestFitGolden renders fits in full, scores and all, against
// testdata/fit/*.txt (-update rewrites the outputs).
func TestFitGolden(t *testing.T) {
	golden.Run(t, "testdata/fit", func(t *testing.T, input []byte) string {
		var sections []string
		for _, f := range golden.Decode[fitCase](t, input).Fits {
			res, err := fit(f.Nodes, f.Request)
			if err != nil {
				t.Fatal(err)
			}
			sections = append(sections, "# "+f.Title+"\n"+res.String())
		}
		return strings.Join(sections, "\n")
	})
}
