package dag

import (
	"bytes"
	"encoding/json"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/internal/wire"
)

// JobFlow API identity: the group/version and kind DecodeJobFlow accepts
// and EncodeJobFlow writes.
const (
	JobFlowAPIVersion = "flow.volcano.sh/v1alpha1"
	JobFlowKind       = "JobFlow"
)

// jobFlowObject is a JobFlow object on the wire.
type jobFlowObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              Spec   `json:"spec,omitempty"`
	Status            Status `json:"status,omitempty"`
}

// MaxJobFlowBytes bounds the documents DecodeJobFlow reads, as written and,
// for YAML, as the JSON they expand to once aliases are resolved: the API
// server's 3 MiB request limit, so no object the API server could have
// stored is refused.
const MaxJobFlowBytes = 3 << 20

// MaxJobFlowValues bounds the values (keys, list items, objects and lists)
// of the documents DecodeJobFlow reads, as written and, for YAML, with
// aliases expanded: reading and planning cost up to about 900 bytes a
// value, and a document of tiny values ([a,a,a,...]) fits 1.5 million in
// MaxJobFlowBytes. A JobFlow of 21,000 flows with five targets each (flow
// names f0 to f20999) is 252,000 values, 1.7 MB of YAML, more than the API
// server can store (an object is at most 1.5 MiB of JSON), and it reads
// and plans in 236 MB; flows with realistic names, or with patches, reach
// the storage limit long before the value bound.
const MaxJobFlowValues = 1 << 18

// DecodeJobFlow reads one whole JobFlow object, YAML or JSON, into a
// Workflow: its name, namespace and uid, its spec and its status. It is
// strict where encoding/json is lenient: a field the types do not declare,
// or one spelled in another case, is refused with its path
// (spec.flows[0].dependsOn.target), as are duplicate keys, values of the
// wrong type (spec.flows[1].name: must be a string), unreadable durations
// and timestamps, each by its path, and an apiVersion or kind other than
// JobFlow's (either may be absent). The error is a *plancore.InvalidError
// wrapping ErrInvalidInput listing every problem at once.
//
// Its cost is bounded by the document's size: a document over
// MaxJobFlowBytes or MaxJobFlowValues, or whose YAML aliases expand past
// them (an alias bomb), is refused before it is parsed or expanded, as is a
// second YAML document. At most 1,000 problems are listed, and a last error
// on jobFlow says how many more there are. A flow's patch is kept compact,
// so decoding what EncodeJobFlow wrote gives the same Workflow.
func DecodeJobFlow(data []byte) (Workflow, error) {
	var obj jobFlowObject
	if errs := wire.Decode(data, &obj, wire.Options{MaxBytes: MaxJobFlowBytes, MaxValues: MaxJobFlowValues, Root: "jobFlow",
		APIVersion: JobFlowAPIVersion, Kind: JobFlowKind, IdentityOptional: true,
		Shapes: map[reflect.Type]reflect.Type{
			// Backoff and Probe read their durations as strings ("90s").
			reflect.TypeFor[Backoff](): reflect.TypeFor[backoffWire](),
			reflect.TypeFor[Probe]():   reflect.TypeFor[probeWire](),
		}}); len(errs) > 0 {
		return Workflow{}, plancore.Invalid(ErrInvalidInput, errs)
	}
	compactPatches(obj.Spec.Flows)
	compactPatches(obj.Spec.Finally)
	return Workflow{Name: obj.Name, Namespace: obj.Namespace, UID: obj.UID, Spec: obj.Spec, Status: obj.Status}, nil
}

// EncodeJobFlow writes a Workflow as a JobFlow object in JSON.
func EncodeJobFlow(wf Workflow) ([]byte, error) {
	return json.Marshal(jobFlowObject{
		TypeMeta:   metav1.TypeMeta{APIVersion: JobFlowAPIVersion, Kind: JobFlowKind},
		ObjectMeta: metav1.ObjectMeta{Name: wf.Name, Namespace: wf.Namespace, UID: wf.UID},
		Spec:       wf.Spec,
		Status:     wf.Status,
	})
}

func compactPatches(fs []Flow) {
	for i := range fs {
		if p := fs[i].Patch; len(p) > 0 {
			var b bytes.Buffer
			if json.Compact(&b, p) == nil {
				fs[i].Patch = b.Bytes()
			}
		}
	}
}
