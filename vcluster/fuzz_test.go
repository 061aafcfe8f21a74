package vcluster_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/plancore/plancore/vcluster"
)

// FuzzUnmarshalRecord: any bytes either fail with ErrBadRecord or decode to a
// record that encodes and decodes back to itself.
func FuzzUnmarshalRecord(f *testing.F) {
	for _, seed := range []string{
		`{"id":"a","divisible":true,"revision":3,"nodes":{"n1":{"template":"t","hostname":"h"}}}`,
		`{"id":"a##j","divisible":false,"revision":0,"nodes":{},"removed":true}`,
		`{"id":"x","divisible":false,"revision":1,"nodes":null,"zero_templates":["gpu"]}`,
		`{"id":""}`, `null`, `{"id":"a"} {}`, `{"id":"a","extra":1}`, `[`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := vcluster.UnmarshalRecord(data)
		if err != nil {
			if !errors.Is(err, vcluster.ErrBadRecord) {
				t.Fatalf("error %v does not wrap ErrBadRecord", err)
			}
			return
		}
		enc, err := vcluster.MarshalRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		back, err := vcluster.UnmarshalRecord(enc)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", enc, err)
		}
		if !reflect.DeepEqual(r, back) {
			t.Fatalf("round trip changed the record: %+v vs %+v", r, back)
		}
	})
}

// FuzzPlanRecover: a node table and stored records built from arbitrary
// bytes never make PlanRecover panic, and it always returns a valid state
// whose recovery from its own records writes nothing.
func FuzzPlanRecover(f *testing.F) {
	f.Add([]byte("\x05\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c"))
	f.Add([]byte("\xff\x00\x10\x20\x30\x40\x50\x60\x70\x80\x90"))
	f.Fuzz(func(t *testing.T, data []byte) {
		next := func() byte {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return b
		}
		nodeIDs := []string{"n0", "n1", "n2", "n3", "n4", "n5", "", "ghost"}
		templates := []string{"t0", "t1", ""}
		clusterIDs := []string{"a", "b", "a##j", "b##k", vcluster.PrimaryID + "##p", vcluster.PrimaryID, "", "x##", "##y"}
		var table []vcluster.Node
		for range next() % 8 {
			b := next()
			table = append(table, vcluster.Node{ID: nodeIDs[b%8], Template: templates[(b>>3)%3], Alive: b&0x40 != 0, Busy: b&0x80 != 0})
		}
		var records []vcluster.Record
		for range next() % 6 {
			b := next()
			r := vcluster.Record{ID: clusterIDs[int(b)%len(clusterIDs)], Divisible: b&0x10 != 0, Revision: uint64(b >> 5), Removed: b&0x20 != 0 && b&0x40 != 0, Nodes: map[string]vcluster.RecordNode{}}
			for range next() % 5 {
				c := next()
				r.Nodes[nodeIDs[c%8]] = vcluster.RecordNode{Template: templates[(c>>3)%3]}
			}
			records = append(records, r)
		}
		s, p := recoverPlan(table, records)
		if err := s.Validate(); err != nil {
			t.Fatalf("%v\n%s", err, p)
		}
		if err := checkInvariants(s); err != nil {
			t.Fatal(err)
		}
		again, p2 := recoverPlan(tableOf(s), recordList(storedRecords(s)))
		if len(p2.Flush) != 0 || again.String() != s.String() {
			t.Fatalf("recovery from its own records is not a fixed point:\n%s\n%s\nvs\n%s", p2, s, again)
		}
	})
}
