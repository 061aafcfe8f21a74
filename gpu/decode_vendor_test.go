package gpu_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore/gpu"
)

// drsCapacity is an Enflame DRS capacity annotation as its plugin writes
// it: two devices of 6 slices, three profiles.
const drsCapacity = `{"devices":[{"index":"0","minor":"0","capacity":6},{"index":"1","minor":"5","capacity":"6"}],` +
	`"profiles":{"1g.6gb":"0","3g.20gb":"1","6g.40gb":"2"}}`

func drsNode(annos map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "e", Annotations: annos}}
}

// TestDecodeEnflameDRS restates HAMi's Enflame GetNodeDevices scenarios
// (pkg/device/enflame/device_test.go, TestGetNodeDevices_DRSAnnotation and
// its siblings) and the edge cases of its parsing.
func TestDecodeEnflameDRS(t *testing.T) {
	const key = "enflame.com/gcu-drs-capacity"
	profiles := []gpu.SliceProfile{{Name: "1g.6gb", ID: "0"}, {Name: "3g.20gb", ID: "1"}, {Name: "6g.40gb", ID: "2"}}
	dev := func(idx int, id, minor string, slices, mem int32) gpu.Device {
		return gpu.Device{ID: id, Index: idx, Vendor: "Enflame", Model: "Enflame", Count: slices, MemoryMiB: mem, Cores: 100, Healthy: true, Minor: minor}
	}
	cases := []struct {
		name         string
		value        string
		want         []gpu.Device
		wantProfiles []gpu.SliceProfile
		badFields    []string
	}{
		{name: "two devices, memory of the largest profile", value: drsCapacity,
			want:         []gpu.Device{dev(0, "e-enflame-drs-0", "0", 6, 40960), dev(1, "e-enflame-drs-1", "5", 6, 40960)},
			wantProfiles: profiles},
		{name: "an index that is not a number is the position; an empty minor is the index",
			value: `{"devices":[{"index":"x","capacity":4},{"index":" 7","capacity":4.9}],"profiles":{"2G.10GB":"a"}}`,
			// HAMi's Atoi refuses " 7" too, so it is the position; 4.9 is truncated.
			want:         []gpu.Device{dev(0, "e-enflame-drs-0", "0", 4, 10240), dev(1, "e-enflame-drs-1", "1", 4, 10240)},
			wantProfiles: []gpu.SliceProfile{{Name: "2G.10GB", ID: "a"}}},
		{name: "profiles without memory give as many GiB as the largest slices",
			value:        `{"devices":[{"index":"3","capacity":"8"}],"profiles":{"8g.x":"p"}}`,
			want:         []gpu.Device{dev(3, "e-enflame-drs-3", "3", 8, 8192)},
			wantProfiles: []gpu.SliceProfile{{Name: "8g.x", ID: "p"}}},
		{name: "no profile with slices", value: `{"devices":[{"index":"0","capacity":6}],"profiles":{"big":"0"}}`,
			badFields: []string{"metadata.annotations[" + key + "].profiles"}},
		{name: "no devices", value: `{"devices":[],"profiles":{"1g.6gb":"0"}}`, badFields: []string{"metadata.annotations[" + key + "].devices"}},
		{name: "zero, text and boolean capacities are each named",
			value: `{"devices":[{"index":"0","capacity":0},{"index":"1","capacity":"six"},{"index":"2","capacity":true}],"profiles":{"1g.6gb":"0"}}`,
			badFields: []string{"metadata.annotations[" + key + "].devices[0].capacity", "metadata.annotations[" + key + "].devices[1].capacity",
				"metadata.annotations[" + key + "].devices[2].capacity"}},
		{name: "a negative index", value: `{"devices":[{"index":"-1","capacity":1}],"profiles":{"1g.6gb":"0"}}`,
			badFields: []string{"metadata.annotations[" + key + "].devices[0].index"}},
		{name: "two devices of one index", value: `{"devices":[{"index":"1","capacity":1},{"index":"1","capacity":1}],"profiles":{"1g.6gb":"0"}}`,
			badFields: []string{"node.devices[1].id"}},
		{name: "not JSON", value: `devices`, badFields: []string{"metadata.annotations[" + key + "]"}},
		{name: "unknown keys are ignored, as HAMi's encoding/json does", value: `{"devices":[{"index":"0","capacity":1,"uuid":"u"}],"profiles":{"1g.6gb":"0"},"version":2}`,
			want: []gpu.Device{dev(0, "e-enflame-drs-0", "0", 1, 6144)}, wantProfiles: []gpu.SliceProfile{{Name: "1g.6gb", ID: "0"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := gpu.DecodeNode(drsNode(map[string]string{key: tc.value}), gpu.DefaultRegistry())
			if err != nil {
				t.Fatal(err)
			}
			if tc.badFields != nil {
				if len(got.Devices) != 0 || len(got.Unreadable) != 1 || got.Unreadable[0].Type != "Enflame" || !cmp.Equal(unreadableFields(got), tc.badFields) {
					t.Fatalf("devices %v, unreadable %+v, want none and Enflame unreadable naming %v", got.Devices, got.Unreadable, tc.badFields)
				}
				return
			}
			if diff := cmp.Diff(tc.want, got.Devices); diff != "" {
				t.Fatalf("devices (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantProfiles, got.SliceProfiles); diff != "" {
				t.Fatalf("profiles (-want +got):\n%s", diff)
			}
			// EncodeNode writes the annotation back: it decodes to the same node.
			annos, err := gpu.EncodeNode(got, gpu.DefaultRegistry())
			if err != nil {
				t.Fatal(err)
			}
			again, err := gpu.DecodeNode(drsNode(annos), gpu.DefaultRegistry())
			if err != nil {
				t.Fatalf("%v\n%v", err, annos)
			}
			if diff := cmp.Diff(got, again); diff != "" {
				t.Fatalf("round trip (-first +second):\n%s", diff)
			}
		})
	}
}

// TestDecodeAWSNeuron restates HAMi's AWS Neuron GetNodeDevices: one device
// per aws.amazon.com/neuron, each with the node's neuroncore capacity
// divided evenly.
func TestDecodeAWSNeuron(t *testing.T) {
	node := func(kv ...string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "trn", Labels: map[string]string{"node.kubernetes.io/instance-type": "trn1.32xlarge"}},
			Status: corev1.NodeStatus{Capacity: corev1.ResourceList{}}}
		for i := 0; i < len(kv); i += 2 {
			n.Status.Capacity[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return n
	}
	dev := func(i int, cores int32) gpu.Device {
		return gpu.Device{ID: "trn-AWSNeuron-" + string(rune('0'+i)), Index: i, Vendor: "AWSNeuron", Model: "AWSNeuron", Count: cores, Cores: cores, Healthy: true}
	}
	cases := []struct {
		name string
		node *corev1.Node
		want []gpu.Device
	}{
		{name: "two cores a device", node: node("aws.amazon.com/neuron", "3", "aws.amazon.com/neuroncore", "6"), want: []gpu.Device{dev(0, 2), dev(1, 2), dev(2, 2)}},
		{name: "uneven cores round down", node: node("aws.amazon.com/neuron", "2", "aws.amazon.com/neuroncore", "5"), want: []gpu.Device{dev(0, 2), dev(1, 2)}},
		{name: "no core capacity: devices without cores", node: node("aws.amazon.com/neuron", "1"), want: []gpu.Device{dev(0, 0)}},
		{name: "no device capacity: none", node: node("aws.amazon.com/neuroncore", "4")},
		{name: "zero devices: none", node: node("aws.amazon.com/neuron", "0", "aws.amazon.com/neuroncore", "4")},
		{name: "a fractional device count: none", node: node("aws.amazon.com/neuron", "1500m", "aws.amazon.com/neuroncore", "4")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := gpu.DecodeNode(tc.node, gpu.DefaultRegistry())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Devices); diff != "" {
				t.Fatalf("devices (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzDecodeEnflameDRS(f *testing.F) {
	f.Add(drsCapacity)
	f.Add(`{"devices":[{"index":"x","capacity":4.9}],"profiles":{"2G.10GB":"a"}}`)
	f.Add(`{"devices":[{"index":"-1","capacity":"1e9"}],"profiles":{"99999999g.99999999gb":"0"}}`)
	f.Add(`{"devices":[{"index":"0","capacity":1e300}],"profiles":{"1g.":""}}`)
	f.Add(`{"devices":null,"profiles":null}`)
	reg := gpu.DefaultRegistry()
	f.Fuzz(func(t *testing.T, v string) {
		got, err := gpu.DecodeNode(drsNode(map[string]string{"enflame.com/gcu-drs-capacity": v}), reg)
		if err != nil {
			t.Fatalf("DecodeNode refused a node: %v", err)
		}
		if len(got.Unreadable) > 0 {
			if len(got.Devices) != 0 || len(got.Unreadable[0].Problems) == 0 {
				t.Fatalf("unreadable DRS capacity offers %v, names %v", got.Devices, got.Unreadable)
			}
			return
		}
		// A decoded node is valid fit input, fits a one-slice request or says
		// why, and re-encodes to the same node.
		req, err := gpu.FitRequestFromPod(podWith(nil, []corev1.Container{ctr("c", rl("enflame.com/drs-gcu", "1"))}), reg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fitOne(got, req); err != nil {
			t.Fatalf("decoded node refused by the fit: %v", err)
		}
		annos, err := gpu.EncodeNode(got, reg)
		if err != nil {
			t.Fatal(err)
		}
		again, err := gpu.DecodeNode(drsNode(annos), reg)
		if err != nil {
			t.Fatalf("re-decode: %v\n%v", err, annos)
		}
		if diff := cmp.Diff(got, again); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}
