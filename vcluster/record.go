package vcluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// RecordNode is what a record says about one member node.
type RecordNode struct {
	Template string `json:"template"`
	Hostname string `json:"hostname"`
}

// Record is a cluster as stored and published: its buckets flattened. A
// record with Removed set announces a deletion.
type Record struct {
	ID        string `json:"id"`
	Divisible bool   `json:"divisible"`
	// Revision is stored so that it survives a restart (the anchor resets
	// every revision to the load time).
	Revision uint64 `json:"revision"`
	// Nodes maps member node id → template and hostname.
	Nodes map[string]RecordNode `json:"nodes"`
	// ZeroTemplates keeps a create's {t: 0} entries across a restart.
	ZeroTemplates []string `json:"zero_templates,omitempty"`
	Removed       bool     `json:"removed,omitempty"`
}

// ReplicaSet returns the node count per template of r, with its zero
// templates.
func (r Record) ReplicaSet() ReplicaSet {
	rs := ReplicaSet{}
	for _, n := range r.Nodes {
		rs[n.Template]++
	}
	for _, t := range r.ZeroTemplates {
		if _, ok := rs[t]; !ok {
			rs[t] = 0
		}
	}
	return rs
}

// RecordOf returns the record of cluster id in s: every member of every
// bucket. ok is false when s has no such cluster. The primary has a record
// for reading, but is never stored.
func RecordOf(s State, id string) (Record, bool) {
	c, ok := s.Cluster(id)
	if !ok {
		return Record{}, false
	}
	r := Record{ID: id, Divisible: c.Kind.divisible(), Revision: c.Revision, Nodes: map[string]RecordNode{}}
	if c.Kind != Job {
		r.ZeroTemplates = slices.Clone(c.ZeroTemplates)
	}
	for _, n := range s.Members(id) {
		node := s.Nodes.Node(n)
		r.Nodes[n] = RecordNode{Template: node.Template, Hostname: node.Hostname}
	}
	return r, true
}

// Filter selects the records Records returns, like the anchor's
// GetVirtualClusters request.
type Filter struct {
	// ID is "" for every logical cluster and then the primary, PrimaryID for
	// the primary, or one logical cluster id.
	ID string
	// IncludeJobs emits the job clusters of every visited divisible cluster.
	IncludeJobs bool
	// OnlyIndivisible drops divisible clusters (job clusters are indivisible).
	OnlyIndivisible bool
}

// Records returns the records f selects: it visits the clusters f.ID names;
// for each visited divisible cluster it emits its job clusters (in id order)
// when IncludeJobs is set, then the cluster itself unless it is the primary
// or is divisible while OnlyIndivisible is set.
func Records(s State, f Filter) []Record {
	var visit []string
	switch f.ID {
	case "":
		visit = append(sortedClusterIDs(s.Logical), PrimaryID)
	default:
		if _, ok := s.Cluster(f.ID); ok && !IsJobID(f.ID) {
			visit = []string{f.ID}
		}
	}
	var out []Record
	for _, id := range visit {
		c, _ := s.Cluster(id)
		if c.Kind.divisible() && f.IncludeJobs {
			for _, jid := range sortedClusterIDs(s.Jobs) {
				if p, _, _ := SplitJobID(jid); p == id {
					r, _ := RecordOf(s, jid)
					out = append(out, r)
				}
			}
		}
		if id == PrimaryID || (c.Kind.divisible() && f.OnlyIndivisible) {
			continue
		}
		r, _ := RecordOf(s, id)
		out = append(out, r)
	}
	return out
}

// MarshalRecord encodes r as JSON with node ids in ascending order, so equal
// records encode to equal bytes.
func MarshalRecord(r Record) ([]byte, error) {
	if r.Nodes == nil {
		r.Nodes = map[string]RecordNode{}
	}
	return json.Marshal(r)
}

// UnmarshalRecord decodes a record written by MarshalRecord. Unknown fields
// and trailing data are refused, so a corrupted value is an error wrapping
// ErrBadRecord rather than a half-read record.
func UnmarshalRecord(data []byte) (Record, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Record
	if err := dec.Decode(&r); err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrBadRecord, err)
	}
	if dec.More() {
		return Record{}, fmt.Errorf("%w: trailing data", ErrBadRecord)
	}
	if r.ID == "" {
		return Record{}, fmt.Errorf("%w: empty id", ErrBadRecord)
	}
	if r.Nodes == nil {
		r.Nodes = map[string]RecordNode{}
	}
	return r, nil
}
