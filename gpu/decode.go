package gpu

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// MIGProfile is one MIG instance shape a MIG-mode NVIDIA device offers, as
// its device plugin registers it (HAMi pkg/device/devices.go, MigProfile):
// the instance's memory and cores and the slice ranges it may start at.
type MIGProfile struct {
	Name       string         `json:"name"`
	MemoryMiB  int32          `json:"memoryMB"`
	Cores      int32          `json:"core"`
	SliceCount uint32         `json:"sliceCount"`
	Placements []MIGPlacement `json:"placements"`
}

// MIGPlacement is a range of memory slices of a MIG-mode device: Size
// slices from Start. A zero Size is no placement.
type MIGPlacement struct {
	Start uint32 `json:"start"`
	Size  uint32 `json:"size"`
}

// overlaps reports whether two placements share a slice.
func (a MIGPlacement) overlaps(b MIGPlacement) bool {
	return a.Start < b.Start+b.Size && b.Start < a.Start+a.Size
}

// PairScore is the link score between two NVIDIA devices of a node (HAMi's
// hami.io/node-nvidia-score), higher for a better link (NVLink).
type PairScore struct {
	From, To string
	Score    int
}

// Handshake is one vendor's scheduler/device-plugin handshake annotation
// (HAMi pkg/device/devices.go, CheckHealth).
type Handshake struct {
	// Type is the registry type.
	Type string
	// Value is the annotation's text.
	Value string
	// Requesting is true when the scheduler asked the plugin to report
	// ("Requesting_<time>") and the plugin has not answered yet.
	Requesting bool
	// Since is the time of the request, read as UTC.
	Since time.Time
	// AllocatableZero is true when the node's allocatable count of the type
	// is zero (or absent).
	AllocatableZero bool
}

// HandshakeTimeout is how long HAMi waits for a device plugin to answer a
// handshake before it drops the vendor's devices from the node.
const HandshakeTimeout = 60 * time.Second

// DropStaleVendors returns n without the devices of every vendor whose
// handshake has been Requesting for HandshakeTimeout or longer at now while
// the node advertises none of the type: HAMi's CheckHealth calls such a
// vendor unhealthy and cleans its devices off the node. HAMi reads the
// handshake time in the scheduler's local zone; plancore reads it as UTC.
func DropStaleVendors(n Node, now time.Time) Node {
	stale := map[string]bool{}
	for _, h := range n.Handshakes {
		if h.Requesting && h.AllocatableZero && !now.Before(h.Since.Add(HandshakeTimeout)) {
			stale[h.Type] = true
		}
	}
	if len(stale) == 0 {
		return n
	}
	out := n
	out.Devices = nil
	for _, d := range n.Devices {
		if !stale[d.Vendor] {
			out.Devices = append(out.Devices, d)
		}
	}
	return out
}

// DecodeNode reads the devices HAMi's device plugins registered on node:
// every registry type's register annotation (HAMi's JSON list, its legacy
// "id,count,mem,cores,type,numa,health[,index,mode]:" list, Metax's own JSON)
// or, for whole-card types without one, the node's capacity; the
// hami.io/device-cordon list; NVIDIA's link scores; and each vendor's
// handshake. Devices come in registry type order, each vendor's in its
// register's order.
//
// Every malformed annotation is named at once: the error is a
// *plancore.InvalidError wrapping ErrInvalidDevice (and so ErrInvalidInput)
// naming metadata.annotations[<key>] (with [i].<field> inside a list) and the
// bad value. It never panics. HAMi skips a vendor whose annotation does not
// decode; plancore refuses the node, since its devices would be unknown.
func DecodeNode(node *corev1.Node, reg Registry) (Node, error) {
	if node == nil {
		return Node{}, plancore.Invalid(ErrInvalidDevice, field.ErrorList{field.Required(field.NewPath("node"), "a node is required")})
	}
	out := Node{Name: node.Name, InstanceType: node.Labels[LabelInstanceType], VNPUCore: node.Annotations[AnnoVNPUCore] == "true"}
	var errs field.ErrorList
	annos := field.NewPath("metadata", "annotations")
	for _, t := range reg.types {
		if v, ok := node.Annotations[t.Annotations.Register]; ok && t.Annotations.RegisterFormat == RegisterEnflameDRS {
			devs, profiles, bad := decodeEnflameDRS(node, t.Type, v, annos.Key(t.Annotations.Register))
			errs = append(errs, bad...)
			out.Devices = append(out.Devices, devs...)
			out.SliceProfiles = append(out.SliceProfiles, profiles...)
		} else {
			devs, bad := decodeRegister(node, t, annos)
			errs = append(errs, bad...)
			out.Devices = append(out.Devices, devs...)
		}
		if h, ok := node.Annotations[t.Annotations.Handshake]; ok && t.Annotations.Handshake != "" {
			hs, bad := decodeHandshake(node, t, h, annos.Key(t.Annotations.Handshake))
			errs = append(errs, bad...)
			out.Handshakes = append(out.Handshakes, hs)
		}
	}
	cordoned := map[string]bool{}
	for _, id := range strings.Split(node.Annotations[AnnoDeviceCordon], ",") {
		if id = strings.TrimSpace(id); id != "" {
			cordoned[id] = true
		}
	}
	for i := range out.Devices {
		t, _ := reg.Lookup(out.Devices[i].Vendor)
		if t.Annotations.Cordon && cordoned[out.Devices[i].ID] {
			out.Devices[i].Cordoned = true
		}
	}
	if v, ok := node.Annotations[AnnoNvidiaPairScore]; ok {
		var bad field.ErrorList
		out.PairScores, bad = decodePairScores(v, annos.Key(AnnoNvidiaPairScore))
		errs = append(errs, bad...)
	}
	errs = append(errs, validateNode(out, field.NewPath("node"))...)
	if err := plancore.Invalid(ErrInvalidDevice, errs); err != nil {
		return Node{}, err
	}
	return out, nil
}

// decodeRegister returns the devices of one type registered on node.
func decodeRegister(node *corev1.Node, t DeviceType, annos *field.Path) ([]Device, field.ErrorList) {
	a := t.Annotations
	switch a.RegisterFormat {
	case RegisterEnflameDRS:
		// Read by DecodeNode with the node's profiles.
		return nil, nil
	case RegisterCapacity:
		return capacityDevices(node, t), nil
	case RegisterNeuron:
		return neuronDevices(node, t), nil
	}
	v, ok := node.Annotations[a.Register]
	if !ok || a.Register == "" {
		return nil, nil
	}
	p := annos.Key(a.Register)
	var devs []Device
	var errs field.ErrorList
	switch a.RegisterFormat {
	case RegisterJSON:
		devs, errs = decodeJSONRegister(v, p)
	case RegisterLegacy:
		devs, errs = decodeLegacyRegister(v, p)
	case RegisterMetaxSGPU:
		devs, errs = decodeMetaxRegister(v, p)
	}
	for i := range devs {
		devs[i].Vendor = t.Type
		if a.RegisterFormat == RegisterMetaxSGPU {
			// HAMi types every Metax sGPU by the vendor
			// (convertMetaxSDeviceToHAMIDevice, the product model kept
			// aside), which decides its device score and the padding of its
			// Filter annotations; so does plancore.
			devs[i].Model = t.Type
		}
		if a.RegisterCores > 0 {
			devs[i].Cores = a.RegisterCores
		}
	}
	return devs, errs
}

// registeredDevice is one device of HAMi's JSON register (DeviceInfo as
// MarshalNodeDevices writes it; the other keys HAMi's DeviceInfo may carry
// are accepted and ignored).
type registeredDevice struct {
	ID           string          `json:"id,omitempty"`
	Index        *int            `json:"index,omitempty"`
	Count        int32           `json:"count,omitempty"`
	Devmem       int32           `json:"devmem,omitempty"`
	Devcore      int32           `json:"devcore,omitempty"`
	Type         string          `json:"type,omitempty"`
	Numa         int             `json:"numa,omitempty"`
	Mode         string          `json:"mode,omitempty"`
	Health       bool            `json:"health,omitempty"`
	MIGProfiles  []MIGProfile    `json:"migProfiles,omitempty"`
	MIGTemplate  json.RawMessage `json:"migtemplate,omitempty"`
	DeviceVendor string          `json:"devicevendor,omitempty"`
	CustomInfo   json.RawMessage `json:"custominfo,omitempty"`
}

// decodeStrict unmarshals s into v, refusing unknown keys and trailing data.
func decodeStrict(s string, v any) error {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

func decodeJSONRegister(s string, p *field.Path) ([]Device, field.ErrorList) {
	var list []registeredDevice
	if err := decodeStrict(s, &list); err != nil {
		return nil, field.ErrorList{field.Invalid(p, s, "want HAMi's JSON device list: "+err.Error())}
	}
	out := make([]Device, len(list))
	for i, r := range list {
		// HAMi omits a zero index (omitempty), so an absent one is 0; equal
		// indices keep their list order.
		idx := 0
		if r.Index != nil {
			idx = *r.Index
		}
		out[i] = Device{ID: r.ID, Index: idx, Model: r.Type, Count: r.Count, MemoryMiB: r.Devmem, Cores: r.Devcore,
			NUMA: r.Numa, Healthy: r.Health, Mode: r.Mode, MIGProfiles: r.MIGProfiles}
	}
	return out, registeredErrors(out, p)
}

// registeredErrors names the impossible values of decoded devices.
func registeredErrors(devs []Device, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, d := range devs {
		if d.Index < 0 {
			errs = append(errs, field.Invalid(p.Index(i).Child("index"), d.Index, "must not be negative"))
		}
		errs = append(errs, validateMIG(d, p.Index(i))...)
	}
	return errs
}

// decodeLegacyRegister parses HAMi's older register list (DecodeNodeDevices):
// "id,count,mem,cores,type,numa,health" or with ",index,mode" added, each
// item ended by ":".
func decodeLegacyRegister(s string, p *field.Path) ([]Device, field.ErrorList) {
	if !strings.Contains(s, ":") {
		return nil, field.ErrorList{field.Invalid(p, s, "want id,count,mem,cores,type,numa,health[,index,mode] items each ended by ':'")}
	}
	var out []Device
	var errs field.ErrorList
	for i, item := range strings.Split(s, ":") {
		if item == "" {
			continue
		}
		ip := p.Index(i)
		f := strings.Split(item, ",")
		if len(f) != 7 && len(f) != 9 {
			errs = append(errs, field.Invalid(ip, item, "want 7 or 9 comma-separated fields"))
			continue
		}
		d := Device{ID: f[0], Model: f[4], Mode: "hami-core", Index: len(out)}
		var bad field.ErrorList
		d.Count = parseInt32(f[1], ip.Child("count"), &bad)
		d.MemoryMiB = parseInt32(f[2], ip.Child("devmem"), &bad)
		d.Cores = parseInt32(f[3], ip.Child("devcore"), &bad)
		d.NUMA = int(parseInt32(f[5], ip.Child("numa"), &bad))
		h, err := strconv.ParseBool(f[6])
		if err != nil {
			bad = append(bad, field.Invalid(ip.Child("health"), f[6], "must be true or false"))
		}
		d.Healthy = h
		if len(f) == 9 {
			d.Index = int(parseInt32(f[7], ip.Child("index"), &bad))
			d.Mode = f[8]
		}
		errs = append(errs, bad...)
		out = append(out, d)
	}
	return out, append(errs, registeredErrors(out, p)...)
}

func parseInt32(s string, p *field.Path, errs *field.ErrorList) int32 {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		*errs = append(*errs, field.Invalid(p, s, "must be an int32"))
	}
	return int32(n)
}

// metaxDevice is one device of Metax's own register (HAMi
// pkg/device/metax/protocol.go, MetaxSDeviceInfo).
type metaxDevice struct {
	UUID              string `json:"uuid"`
	BDF               string `json:"bdf,omitempty"`
	Model             string `json:"model,omitempty"`
	TotalDevCount     int32  `json:"totalDevCount,omitempty"`
	TotalCompute      int32  `json:"totalCompute,omitempty"`
	TotalVRam         int32  `json:"totalVRam,omitempty"`
	AvailableDevCount int32  `json:"availableDevCount,omitempty"`
	AvailableCompute  int32  `json:"availableCompute,omitempty"`
	AvailableVRam     int32  `json:"availableVRam,omitempty"`
	Numa              int32  `json:"numa,omitempty"`
	Healthy           bool   `json:"healthy,omitempty"`
	QosPolicy         string `json:"qosPolicy,omitempty"`
	LinkZone          int32  `json:"linkZone,omitempty"`
}

func decodeMetaxRegister(s string, p *field.Path) ([]Device, field.ErrorList) {
	var list []metaxDevice
	if err := decodeStrict(s, &list); err != nil {
		return nil, field.ErrorList{field.Invalid(p, s, "want Metax's JSON device list: "+err.Error())}
	}
	out := make([]Device, len(list))
	for i, m := range list {
		out[i] = Device{ID: m.UUID, Index: i, Count: m.TotalDevCount, MemoryMiB: m.TotalVRam,
			Cores: m.TotalCompute, NUMA: int(m.Numa), Healthy: m.Healthy}
	}
	return out, nil
}

// capacityDevices derives a whole-card type's devices from the node's
// capacity, as HAMi's GetNodeDevices of those vendors does.
func capacityDevices(node *corev1.Node, t DeviceType) []Device {
	c := t.Annotations.Capacity
	q, ok := node.Status.Capacity[c.Resource]
	if !ok {
		return nil
	}
	total, ok := q.AsInt64()
	if !ok || total <= 0 {
		return nil
	}
	mem := c.MemoryMiB
	if mem == 0 {
		if mq, ok := node.Status.Capacity[t.Memory]; ok {
			if m, ok := mq.AsInt64(); ok && m > 0 {
				mem = shareMiB(m, t.memoryUnit(), c.PerDevice, total)
			}
		}
	}
	// Rounded up without adding first: a capacity near the int64 maximum
	// must not wrap negative.
	cards := total / c.PerDevice
	if total%c.PerDevice != 0 {
		cards++
	}
	// A node cannot hold more cards than this; a larger capacity is a typo.
	cards = min(cards, MaxCapacityDevices)
	out := make([]Device, 0, cards)
	for i := range int(cards) {
		d := Device{ID: fmt.Sprintf("%s-%s-%d", node.Name, c.IDInfix, i), Index: i, Vendor: t.Type, Model: t.Type,
			Count: c.Slots, MemoryMiB: mem, Cores: c.Cores, Healthy: true}
		if c.HalfNUMA && int64(i) >= cards/2 {
			d.NUMA = 1
		}
		out = append(out, d)
	}
	return out
}

// MaxCapacityDevices is the most devices DecodeNode derives from one
// type's capacity (or AWS Neuron's count): a node cannot hold more, and a
// larger capacity is a typo that must not cost a device per unit.
const MaxCapacityDevices = 4096

// shareMiB is one device's share of a capacity-derived memory, m units of
// unit MiB spread over total capacity at per capacity a device: m × unit ×
// per / total, computed without overflow and saturated at math.MaxInt32
// MiB, the most a Device's MemoryMiB holds. A product that wrapped would
// read a huge card as having no memory, or negative memory.
func shareMiB(m, unit, per, total int64) int32 {
	v := new(big.Int).Mul(big.NewInt(m), big.NewInt(unit))
	v.Mul(v, big.NewInt(per))
	v.Quo(v, big.NewInt(total))
	if !v.IsInt64() || v.Int64() > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(max(v.Int64(), 0))
}

// decodeHandshake reads one vendor's handshake annotation.
func decodeHandshake(node *corev1.Node, t DeviceType, v string, p *field.Path) (Handshake, field.ErrorList) {
	h := Handshake{Type: t.Type, Value: v, AllocatableZero: true}
	if q, ok := node.Status.Allocatable[t.Count]; ok && q.Sign() > 0 {
		h.AllocatableZero = false
	}
	if !strings.Contains(v, "Requesting") {
		return h, nil
	}
	_, ts, found := strings.Cut(v, "_")
	at, err := time.ParseInLocation(time.DateTime, ts, time.UTC)
	if !found || err != nil {
		return h, field.ErrorList{field.Invalid(p, v, "want Requesting_<YYYY-MM-DD hh:mm:ss>")}
	}
	h.Requesting, h.Since = true, at
	return h, nil
}

// pairScoreJSON is one entry of hami.io/node-nvidia-score.
type pairScoreJSON struct {
	UUID   string         `json:"uuid"`
	Scores map[string]int `json:"score"`
}

func decodePairScores(s string, p *field.Path) ([]PairScore, field.ErrorList) {
	var list []pairScoreJSON
	if err := decodeStrict(s, &list); err != nil {
		return nil, field.ErrorList{field.Invalid(p, s, "want [{\"uuid\":...,\"score\":{uuid:n}}]: "+err.Error())}
	}
	var out []PairScore
	for _, e := range list {
		for to, sc := range e.Scores {
			out = append(out, PairScore{From: e.UUID, To: to, Score: sc})
		}
	}
	slices.SortFunc(out, func(a, b PairScore) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To), cmp.Compare(a.Score, b.Score))
	})
	return out, nil
}

// EncodeNode writes node's devices back as the annotations DecodeNode reads
// (each type's register, the cordon list and NVIDIA's link scores), for
// tests and fakes that need a node as HAMi's device plugins leave it.
// Capacity-derived types are left out: their devices live in the node's
// status, not in an annotation.
func EncodeNode(n Node, reg Registry) (map[string]string, error) {
	if err := plancore.Invalid(ErrInvalidDevice, validateNode(n, field.NewPath("node"))); err != nil {
		return nil, err
	}
	out := map[string]string{}
	var cordoned []string
	for _, t := range reg.types {
		var devs []Device
		for _, d := range n.Devices {
			if d.Vendor == t.Type {
				devs = append(devs, d)
				if d.Cordoned && t.Annotations.Cordon {
					cordoned = append(cordoned, d.ID)
				}
			}
		}
		if len(devs) == 0 || t.Annotations.Register == "" {
			continue
		}
		switch t.Annotations.RegisterFormat {
		case RegisterJSON:
			out[t.Annotations.Register] = encodeJSONRegister(devs)
		case RegisterLegacy:
			var b strings.Builder
			for _, d := range devs {
				fmt.Fprintf(&b, "%s,%d,%d,%d,%s,%d,%t,%d,%s:", d.ID, d.Count, d.MemoryMiB, d.Cores, d.Model, d.NUMA, d.Healthy, d.Index, d.Mode)
			}
			out[t.Annotations.Register] = b.String()
		case RegisterEnflameDRS:
			out[t.Annotations.Register] = encodeEnflameDRS(devs, n.SliceProfiles)
		case RegisterMetaxSGPU:
			list := make([]metaxDevice, len(devs))
			for i, d := range devs {
				list[i] = metaxDevice{UUID: d.ID, Model: d.Model, TotalDevCount: d.Count, TotalCompute: d.Cores, TotalVRam: d.MemoryMiB, Numa: int32(d.NUMA), Healthy: d.Healthy}
			}
			out[t.Annotations.Register] = mustJSON(list)
		}
	}
	if len(cordoned) > 0 {
		out[AnnoDeviceCordon] = strings.Join(cordoned, ",")
	}
	if len(n.PairScores) > 0 {
		byFrom := map[string]map[string]int{}
		var froms []string
		for _, s := range n.PairScores {
			if byFrom[s.From] == nil {
				byFrom[s.From] = map[string]int{}
				froms = append(froms, s.From)
			}
			byFrom[s.From][s.To] = s.Score
		}
		list := make([]pairScoreJSON, len(froms))
		for i, f := range froms {
			list[i] = pairScoreJSON{UUID: f, Scores: byFrom[f]}
		}
		out[AnnoNvidiaPairScore] = mustJSON(list)
	}
	return out, nil
}

func encodeJSONRegister(devs []Device) string {
	list := make([]registeredDevice, len(devs))
	for i, d := range devs {
		idx := d.Index
		list[i] = registeredDevice{ID: d.ID, Index: &idx, Count: d.Count, Devmem: d.MemoryMiB, Devcore: d.Cores, Type: d.Model,
			Numa: d.NUMA, Mode: d.Mode, Health: d.Healthy, MIGProfiles: d.MIGProfiles}
	}
	return mustJSON(list)
}

// mustJSON marshals plain structs of strings and numbers, which cannot fail.
func mustJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}
