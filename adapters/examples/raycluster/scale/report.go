package main

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Markdown is the results as tables: one row per operator, then the
// requests by verb and resource, then the burst if there was one.
func (r *Results) Markdown() string {
	var b strings.Builder
	c := r.Config
	fmt.Fprintf(&b, "\n%d RayClusters x (1 head + %d workers) = %d pods per operator, created at %g/s over %d namespaces; kubelet delay %v; "+
		"operators' client QPS %g burst %d; plancore %d reconciles x %d creates in flight; KubeRay %s, %d reconcile(s)\n\n",
		c.Clusters, c.Workers, c.Clusters*(1+c.Workers), c.QPS, c.Namespaces, c.KubeletDelay,
		c.OperatorQPS, c.OperatorBurst, c.PlancoreReconciles, c.PlancoreInFlight, c.KubeRayVersion, c.KubeRayReconciles)
	b.WriteString("| operator | all ready | create→first pod p50 | p99 | requests | until quiet | operator CPU s | peak heap in use MiB | peak RSS MiB | kube-apiserver CPU s | etcd CPU s | load |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %s |\n", row.Operator, sec(row.AllReady),
			ms(row.FirstPodP50), ms(row.FirstPodP99), total(row.Requests), total(row.RequestsUntilQuiet), row.CPUSeconds, row.PeakHeapMiB, row.PeakRSSMiB,
			row.APIServerCPU, row.EtcdCPU, row.Load)
	}
	fmt.Fprintf(&b, "\nRequests until every cluster was ready (and until the operator then sent nothing but watches for %v: the status writes and events it still had queued), by verb and resource:\n\n", quietFor)
	requestTable(&b, r.Rows, func(row Row) map[string]int { return row.Requests }, func(row Row) map[string]int { return row.RequestsUntilQuiet })
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "\n%s: watches the API server ended and the operator re-opened: %s; watchers of any client the API server closed as too slow to read: %s; "+
			"watch cache capacity when the operator's watches opened: pods %s, rayclusters %s\n",
			row.Operator, byKey(row.WatchesEnded), byKey(row.SlowWatchersClosed),
			capacity(row.WatchCacheCapacity, "pods"), capacity(row.WatchCacheCapacity, "rayclusters.ray.io"))
	}
	if len(r.Rows) > 0 && r.Rows[0].Burst != nil {
		fmt.Fprintf(&b, "\nBurst: cluster 0 from %d to %d workers, cluster 1 from %d to %d right after, %d clusters steady:\n\n",
			c.Workers, c.BurstWorkers, c.Workers, c.Workers+1, c.Clusters)
		b.WriteString("| operator | burst pods all exist | all ready | changed cluster's wait | requests | operator CPU s | peak heap in use MiB | peak RSS MiB | load |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, row := range r.Rows {
			br := row.Burst
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %.1f | %.1f | %.1f | %s |\n", row.Operator, sec(br.AllExist), sec(br.AllReady),
				ms(br.ChangedWait), total(br.Requests), br.CPUSeconds, br.PeakHeapMiB, br.PeakRSSMiB, br.Load)
		}
		b.WriteString("\nRequests during the burst:\n\n")
		requestTable(&b, r.Rows, func(row Row) map[string]int { return row.Burst.Requests }, nil)
	}
	fmt.Fprintf(&b, "\n%s, %d CPUs (%s/%s)\n", time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
	return b.String()
}

// requestTable writes counts by verb and resource, a column per row;
// with later, each cell is "counts (later)".
func requestTable(b *strings.Builder, rows []Row, counts, later func(Row) map[string]int) {
	all := map[string]int{}
	b.WriteString("| verb resource |")
	for _, row := range rows {
		fmt.Fprintf(b, " %s |", row.Operator)
		for k, v := range counts(row) {
			all[k] += v
		}
		if later != nil {
			for k, v := range later(row) {
				all[k] += v
			}
		}
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(rows)) + "\n")
	for _, k := range sortedKeys(all) {
		fmt.Fprintf(b, "| %s |", k)
		for _, row := range rows {
			if later != nil {
				fmt.Fprintf(b, " %d (%d) |", counts(row)[k], later(row)[k])
			} else {
				fmt.Fprintf(b, " %d |", counts(row)[k])
			}
		}
		b.WriteString("\n")
	}
}

// capacity is a watch cache's capacity; the API server reports it only
// once resized, from its initial 100.
func capacity(c map[string]int, resource string) string {
	if n, ok := c[resource]; ok {
		return strconv.Itoa(n)
	}
	return "100 (never resized)"
}

// byKey is "a 3, b 1", largest first, or "none".
func byKey(counts map[string]int) string {
	if total(counts) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range sortedKeys(counts) {
		if counts[k] != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
		}
	}
	return strings.Join(parts, ", ")
}

func sec(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
func ms(d time.Duration) string  { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
