package gpu

import (
	"bytes"
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
)

// Handshake is one vendor's scheduler/device-plugin handshake annotation
// (HAMi pkg/device/devices.go, CheckHealth).
type Handshake struct {
	// Type is the registry type.
	Type string
	// Value is the annotation's text.
	Value string
	// Requesting is true when the scheduler asked the plugin to report at a
	// time HAMi's CheckHealth can read ("Requesting_2006-01-02 15:04:05")
	// and the plugin has not answered yet. A handshake holding "Requesting"
	// with no time after a "_", or a time in another layout ("Requesting",
	// "Requesting_2024.01.10 04:06:57"), is not: CheckHealth keeps such a
	// vendor's devices however old it is, and so does DropStaleVendors.
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

// UnreadableVendor is a vendor whose devices DecodeNode could not read on a
// node: its register annotation (or, for NVIDIA, its link scores) does not
// decode, or names an impossible device. Its devices are left out of
// Node.Devices, so nothing is placed on a device that was not read, and the
// node's other vendors stay usable.
type UnreadableVendor struct {
	// Type is the registry type.
	Type string
	// Annotation is the node annotation that could not be read.
	Annotation string
	// Reason is ReasonVendorUnreadable with what was wrong.
	Reason Reason
	// Problems name each problem by its path in the annotation
	// (metadata.annotations[<key>][i].<field>) or, for an impossible
	// device, in the node (node.devices[i].<field>), with the bad value.
	Problems field.ErrorList
}

// ReasonVendorUnreadable says a vendor's devices were left out of a
// decoded node because its annotation could not be read.
const ReasonVendorUnreadable ReasonCode = "VendorUnreadable"

// DecodeNode reads the devices HAMi's device plugins registered on node:
// every registry type's register annotation (HAMi's JSON list, its legacy
// "id,count,mem,cores,type,numa,health[,index,mode]:" list, Metax's own JSON)
// or, for whole-card types without one, the node's capacity; the
// hami.io/device-cordon list; NVIDIA's link scores; and each vendor's
// handshake. Devices come in registry type order, each vendor's in its
// register's order.
//
// It reads what machines wrote as HAMi v2.10 reads it. JSON is read with
// encoding/json as HAMi does: keys it does not know are ignored (HAMi
// v2.9's devicepairscore and migtemplate, a MIG profile's instanceCount or
// multiprocessorCount, any key a newer plugin adds). A handshake never
// fails: it means what HAMi's CheckHealth makes of it (see Handshake). A
// vendor whose annotation cannot be read, as HAMi's GetNodeDevices of that
// vendor would fail (or NVIDIA's link scores, which fail HAMi's NVIDIA
// GetNodeDevices too), or which names an impossible device (an empty or
// duplicated id, a negative index, count, memory or cores, a MIG profile
// without a name or a placement without slices), is listed in
// Node.Unreadable with the reason and its devices are left out: the node's
// other vendors stay usable, and no device that was not read is ever
// offered. HAMi logs such a vendor and skips it the same way.
//
// The only error is a nil node: a *plancore.InvalidError wrapping
// ErrInvalidDevice (and so ErrInvalidInput). It never panics, and its cost
// is linear in the size of the node's annotations.
func DecodeNode(node *corev1.Node, reg Registry) (Node, error) {
	if node == nil {
		return Node{}, invalid(ErrInvalidDevice, field.ErrorList{field.Required(field.NewPath("node"), "a node is required")})
	}
	out := Node{Name: node.Name, InstanceType: node.Labels[LabelInstanceType], VNPUCore: node.Annotations[AnnoVNPUCore] == "true"}
	annos := field.NewPath("metadata", "annotations")
	seen := map[string]bool{}
	for _, t := range reg.types {
		var devs []Device
		var profiles []SliceProfile
		var bad field.ErrorList
		if v, ok := node.Annotations[t.Annotations.Register]; ok && t.Annotations.RegisterFormat == RegisterEnflameDRS {
			devs, profiles, bad = decodeEnflameDRS(node, t.Type, v, annos.Key(t.Annotations.Register))
		} else {
			devs, bad = decodeRegister(node, t, annos)
		}
		bad = append(bad, vendorDeviceErrors(devs, seen)...)
		if len(bad) > 0 {
			out.Unreadable = append(out.Unreadable, unreadable(t.Type, t.Annotations.Register, bad))
		} else {
			for _, d := range devs {
				seen[d.ID] = true
			}
			out.Devices = append(out.Devices, devs...)
			out.SliceProfiles = append(out.SliceProfiles, profiles...)
			if t.Score != ScoreNone && len(devs) > 0 {
				out.VendorScores = append(out.VendorScores, vendorScore(node, t))
			}
		}
		if h, ok := node.Annotations[t.Annotations.Handshake]; ok && t.Annotations.Handshake != "" {
			out.Handshakes = append(out.Handshakes, decodeHandshake(node, t, h))
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
	for _, t := range reg.types {
		key := t.Annotations.LinkScores
		v, ok := node.Annotations[key]
		if !ok || key == "" {
			continue
		}
		scores, bad := decodePairScores(v, annos.Key(key))
		if len(bad) == 0 {
			out.PairScores = append(out.PairScores, scores...)
			continue
		}
		// HAMi's NVIDIA GetNodeDevices fails on link scores it cannot
		// read, and the scheduler then skips every NVIDIA device.
		out.Unreadable = append(out.Unreadable, unreadable(t.Type, key, bad))
		out.Devices = slices.DeleteFunc(out.Devices, func(d Device) bool { return d.Vendor == t.Type })
	}
	return out, nil
}

// vendorScore reads what type t's score rule reads from node.
func vendorScore(node *corev1.Node, t DeviceType) VendorScore {
	vs := VendorScore{Type: t.Type, Rule: t.Score}
	if v, ok := node.Annotations[t.Annotations.TopologyLosses]; ok && t.Annotations.TopologyLosses != "" {
		vs.Losses = decodeScoreTable(v)
	}
	if v, ok := node.Annotations[t.Annotations.TopologyScores]; ok && t.Annotations.TopologyScores != "" {
		vs.Scores = decodeScoreTable(v)
	}
	return vs
}

// unreadable is the UnreadableVendor of type typ whose annotation key
// failed with errs.
func unreadable(typ, key string, errs field.ErrorList) UnreadableVendor {
	return UnreadableVendor{Type: typ, Annotation: key, Problems: errs, Reason: Reason{Code: ReasonVendorUnreadable,
		Message: fmt.Sprintf("%s devices left out: %s", typ, errs.ToAggregate().Error())}}
}

// vendorDeviceErrors names the impossible devices of one vendor's decoded
// register, by their path in the node: what Decide would refuse
// (validateNode), and an id another vendor of the node registered already
// (in seen).
func vendorDeviceErrors(devs []Device, seen map[string]bool) field.ErrorList {
	errs := validateNode(Node{Devices: devs}, nodePath)
	for i, d := range devs {
		if seen[d.ID] {
			errs = append(errs, field.Duplicate(nodePath().Child("devices").Index(i).Child("id"), d.ID))
		}
	}
	return errs
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
		devs, errs = decodeJSONRegister(v, p, a)
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
// MarshalNodeDevices writes it). Any other key (HAMi v2.9's
// devicepairscore, a newer plugin's) is ignored, as HAMi's
// UnMarshalNodeDevices ignores it.
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

// decodeJSON unmarshals machine-written JSON s into v as HAMi does, with
// encoding/json: keys v does not have are ignored, trailing data refused.
func decodeJSON(s string, v any) error {
	return json.Unmarshal([]byte(s), v)
}

func decodeJSONRegister(s string, p *field.Path, a Annotations) ([]Device, field.ErrorList) {
	var list []registeredDevice
	if err := decodeJSON(s, &list); err != nil {
		return nil, field.ErrorList{field.Invalid(p, s, "want HAMi's JSON device list: "+err.Error())}
	}
	out := make([]Device, len(list))
	var errs field.ErrorList
	for i, r := range list {
		// HAMi omits a zero index (omitempty), so an absent one is 0; equal
		// indices keep their list order.
		idx := 0
		if r.Index != nil {
			idx = *r.Index
		}
		out[i] = Device{ID: r.ID, Index: idx, Model: r.Type, Count: r.Count, MemoryMiB: r.Devmem, Cores: r.Devcore,
			NUMA: r.Numa, Healthy: r.Health, Mode: r.Mode, MIGProfiles: r.MIGProfiles}
		if len(r.CustomInfo) == 0 || !(a.DieCards || a.NetworkIDs) {
			continue
		}
		var err error
		if a.DieCards {
			out[i].Card, err = dieCard(r.CustomInfo)
		} else {
			out[i].Network, err = networkID(r.CustomInfo)
		}
		if err != nil {
			errs = append(errs, field.Invalid(p.Index(i).Child("custominfo"), string(r.CustomInfo), err.Error()))
		}
	}
	return out, append(errs, registeredErrors(out, p)...)
}

// registeredErrors names the impossible values of decoded devices.
func registeredErrors(devs []Device, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, d := range devs {
		if d.Index < 0 {
			errs = append(errs, field.Invalid(p.Index(i).Child("index"), d.Index, "must not be negative"))
		}
		errs = append(errs, validateMIG(d, func() *field.Path { return p.Index(i) })...)
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

// decodeHandshake reads one vendor's handshake annotation as HAMi's
// CheckHealth does: only "Requesting_<YYYY-MM-DD hh:mm:ss>" (anything
// holding "Requesting", cut at its first "_") starts the timeout; a
// Requesting without a time or with one that does not parse is healthy,
// and never times out, as in HAMi.
func decodeHandshake(node *corev1.Node, t DeviceType, v string) Handshake {
	h := Handshake{Type: t.Type, Value: v, AllocatableZero: true}
	if q, ok := node.Status.Allocatable[t.Count]; ok && q.Sign() > 0 {
		h.AllocatableZero = false
	}
	if !strings.Contains(v, "Requesting") {
		return h
	}
	_, ts, found := strings.Cut(v, "_")
	if !found {
		return h
	}
	at, err := time.ParseInLocation(time.DateTime, ts, time.UTC)
	if err != nil {
		return h
	}
	h.Requesting, h.Since = true, at
	return h
}

// EncodeNode writes node's devices back as the annotations DecodeNode reads
// (each type's register, the cordon list and NVIDIA's link scores), for
// tests and fakes that need a node as HAMi's device plugins leave it.
// Capacity-derived types are left out: their devices live in the node's
// status, not in an annotation.
func EncodeNode(n Node, reg Registry) (map[string]string, error) {
	if err := invalid(ErrInvalidDevice, validateNode(n, nodePath)); err != nil {
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
	if key := reg.linkScoresAnnotation(); len(n.PairScores) > 0 && key != "" {
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
		out[key] = mustJSON(list)
	}
	return out, nil
}

func encodeJSONRegister(devs []Device) string {
	list := make([]registeredDevice, len(devs))
	for i, d := range devs {
		idx := d.Index
		list[i] = registeredDevice{ID: d.ID, Index: &idx, Count: d.Count, Devmem: d.MemoryMiB, Devcore: d.Cores, Type: d.Model,
			Numa: d.NUMA, Mode: d.Mode, Health: d.Healthy, MIGProfiles: d.MIGProfiles}
		switch {
		case d.Card != "":
			list[i].CustomInfo = json.RawMessage(mustJSON(map[string]string{"DeviceStrategy": "die", "AIC": d.Card}))
		case d.Network != "":
			list[i].CustomInfo = json.RawMessage(`{"NetworkID":` + d.Network + `}`)
		}
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
