package vcluster

import (
	"fmt"
	"slices"
	"strings"
)

// String renders s for logs and golden transcripts: every cluster with its
// attributes, then its buckets by template and bucket id, node ids marked
// "+" when dead and "*" when busy. Clusters, templates and buckets are in
// ascending order (the undivided bucket first).
func (s State) String() string {
	var b strings.Builder
	dead, busy := 0, 0
	for _, n := range s.Nodes.All() {
		switch {
		case !n.Alive:
			dead++
		case n.Busy:
			busy++
		}
	}
	fmt.Fprintf(&b, "nodes %d (dead %d, busy %d)\n", s.Nodes.Len(), dead, busy)
	s.describe(&b, s.Primary)
	for _, id := range sortedClusterIDs(s.Logical) {
		s.describe(&b, s.Logical[id])
	}
	return b.String()
}

func (s State) describe(b *strings.Builder, c Cluster) {
	fmt.Fprintf(b, "%s %s", c.Kind, c.ID)
	if c.Kind != Primary {
		fmt.Fprintf(b, " rev=%d", c.Revision)
	}
	if c.Detached > 0 {
		fmt.Fprintf(b, " detached=%d", c.Detached)
	}
	fmt.Fprintf(b, " %s\n", s.ReplicaSet(c.ID))
	for _, t := range templates(c) {
		buckets := make([]string, 0, len(c.Buckets[t]))
		for bid := range c.Buckets[t] {
			buckets = append(buckets, bid)
		}
		slices.SortFunc(buckets, func(x, y string) int {
			switch {
			case x == y:
				return 0
			case x == Undivided:
				return -1
			case y == Undivided:
				return 1
			}
			return strings.Compare(x, y)
		})
		for _, bid := range buckets {
			fmt.Fprintf(b, "  %s %s [%s]\n", t, bid, s.markedIDs(c.Buckets[t][bid]))
		}
	}
	if c.Kind.divisible() {
		for _, jid := range sortedClusterIDs(s.Jobs) {
			if p, _, _ := SplitJobID(jid); p != c.ID {
				continue
			}
			j := s.Jobs[jid]
			fmt.Fprintf(b, "  job %s rev=%d", jid, j.Revision)
			if j.Detached > 0 {
				fmt.Fprintf(b, " detached=%d", j.Detached)
			}
			if j.JobDead {
				b.WriteString(" job-dead")
			}
			fmt.Fprintf(b, " %s\n", s.ReplicaSet(jid))
		}
	}
}

func (s State) markedIDs(ids []string) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		n := s.Nodes.Node(id)
		switch {
		case !n.Alive:
			parts[i] = id + "+"
		case n.Busy:
			parts[i] = id + "*"
		default:
			parts[i] = id
		}
	}
	return strings.Join(parts, " ")
}
