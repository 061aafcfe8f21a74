package gpu

import (
	"cmp"
	"encoding/json"
	"slices"
)

// ScoreRule names a vendor's node score computed from the devices a fit
// chose: HAMi's per-vendor ScoreNode, which its NodeScore.OverrideScore adds
// to the node's default score once the pod's devices are known. A caller
// cannot compute it beforehand, so it is a rule of the registry row, read
// into Node.VendorScores by DecodeNode; Node.BackendScore stays for a
// caller's own addend. "" adds nothing.
type ScoreRule string

const (
	// ScoreNone adds nothing (the zero value; HAMi's ScoreNode returning 0).
	ScoreNone ScoreRule = ""
	// ScoreLinkGroups is HAMi's whole-Kunlun ScoreNode (pkg/device/kunlun/
	// device.go ScoreNode and topo.go calcscore): a placement that leaves
	// fewer half-used groups of four XPUs scores higher (see
	// linkGroupScore). It scores 0 on a node holding devices of another
	// type.
	ScoreLinkGroups ScoreRule = "LinkGroups"
	// ScoreTopologyTables is HAMi's whole-card Metax ScoreNode
	// (pkg/device/metax/device.go ScoreNode and parseMetaxAnnos): the node
	// publishes, per number of devices a pod is given, a topology loss
	// (Annotations.TopologyLosses, read under the binpack node policy) and a
	// topology score (Annotations.TopologyScores, under spread); a node
	// carrying the table scores 2000 minus the entry for the number of the
	// type's devices the pod was given (0 when the table has no entry for
	// it), a node without it 0.
	ScoreTopologyTables ScoreRule = "TopologyTables"
	// ScoreSameCard is HAMi's Vastai ScoreNode (pkg/device/vastai/device.go):
	// for each container given dies of the type, the share of them on the
	// card holding most of them (Device.Card), summed over the containers;
	// 0 when a device given is not a die.
	ScoreSameCard ScoreRule = "SameCard"
	// ScoreNetworks is HAMi's Ascend 910 ScoreNode (pkg/device/ascend/
	// device.go): for each container given devices of the type, the share of
	// them in the network holding most of them (Device.Network), summed over
	// the containers and weighted 10; 0 when a device given names no
	// network.
	ScoreNetworks ScoreRule = "Networks"
)

// scoreRules lists the score rules.
func scoreRules() []ScoreRule {
	return []ScoreRule{ScoreNone, ScoreLinkGroups, ScoreTopologyTables, ScoreSameCard, ScoreNetworks}
}

// VendorScore is one vendor's placement-dependent score rule on a node, with
// what the rule reads from the node. Decide adds it to the score of a node
// that fits whenever the node holds a device of Type, whether or not the pod
// asked for Type, as HAMi's OverrideScore scores every device type of the
// node.
type VendorScore struct {
	// Type is the registry type.
	Type string
	// Rule is the type's ScoreRule.
	Rule ScoreRule
	// Losses and Scores are the node's topology tables (ScoreTopologyTables).
	Losses, Scores ScoreTable
}

// ScoreTable is a node annotation mapping a number of devices to a value
// (Metax's metax-tech.com/gpu.topology.losses and .scores, JSON objects
// such as {"1":100,"2":200}).
type ScoreTable struct {
	// Set is true when the node carries the annotation. HAMi reads an
	// annotation that is not such an object as an empty table, so a node
	// carrying one still scores 2000; DecodeNode reads it the same way.
	Set bool
	// Entries are the table's entries, sorted by Devices.
	Entries []ScoreEntry
}

// ScoreEntry is one entry of a ScoreTable.
type ScoreEntry struct {
	Devices int
	Value   int
}

// value returns the entry for devices, 0 when there is none.
func (t ScoreTable) value(devices int) int {
	i, ok := slices.BinarySearchFunc(t.Entries, devices, func(e ScoreEntry, n int) int { return cmp.Compare(e.Devices, n) })
	if !ok {
		return 0
	}
	return t.Entries[i].Value
}

// decodeScoreTable reads a topology table annotation as HAMi's
// parseMetaxAnnos does: a JSON object from device counts to integers; what
// is not one is an empty table.
func decodeScoreTable(s string) ScoreTable {
	m := map[int]int{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return ScoreTable{Set: true}
	}
	t := ScoreTable{Set: true, Entries: make([]ScoreEntry, 0, len(m))}
	for k, v := range m {
		t.Entries = append(t.Entries, ScoreEntry{Devices: k, Value: v})
	}
	slices.SortFunc(t.Entries, func(a, b ScoreEntry) int { return cmp.Compare(a.Devices, b.Devices) })
	return t
}

// placementScore is the sum of the node's vendor scores for the devices the
// pod was given (init containers' included, as HAMi adds them before
// scoring), in float32 as HAMi sums them.
func placementScore(n Node, containers []ContainerAllocation, policy Policy) float32 {
	var sum float32
	for _, vs := range n.VendorScores {
		if vs.Rule == ScoreNone || !slices.ContainsFunc(n.Devices, func(d Device) bool { return d.Vendor == vs.Type }) {
			continue
		}
		switch vs.Rule {
		case ScoreLinkGroups:
			sum += linkGroupScore(n, containers, vs.Type)
		case ScoreTopologyTables:
			sum += topologyTableScore(vs, containers, policy)
		case ScoreSameCard:
			sum += groupShareScore(n, containers, vs.Type, cardOf)
		case ScoreNetworks:
			sum += groupShareScore(n, containers, vs.Type, networkOf) * ascendNetworkWeight
		}
	}
	return sum
}
