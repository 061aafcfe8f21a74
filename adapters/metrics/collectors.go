package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/expectations"
)

// The result labels of capacity.MetricsSnapshot: every status, "error" for a
// failed call and "rolled-back" for an all-or-nothing batch's taken-back
// items. Each is exported, at zero until it happens.
var (
	reserveResults = []string{"error", string(capacity.ReserveOK), string(capacity.ReserveDuplicate), string(capacity.ReserveFull),
		string(capacity.ReserveUnknownNode), string(capacity.ReserveStaleHeartbeat), string(capacity.ReserveLimitMismatch), "rolled-back"}
	ackResults = []string{"error", string(capacity.AckOK), string(capacity.AckDuplicate), string(capacity.AckEpochMismatch),
		string(capacity.AckExpired), string(capacity.AckLate)}
)

type capacityStoreCollector struct {
	m            *capacity.Metrics
	reserve, ack *prometheus.Desc
}

// CapacityStoreCollector exports the counters of m, the Metrics of a
// capacity.CountingStore, at scrape time:
//
//	plancore_capacity_reserve_total{result}  every Reserve and batch item
//	plancore_capacity_ack_total{result}      every Ack
//
// A nil m exports nothing.
func CapacityStoreCollector(m *capacity.Metrics) prometheus.Collector {
	return &capacityStoreCollector{m: m,
		reserve: prometheus.NewDesc("plancore_capacity_reserve_total", "Reserve calls and batch items of a capacity CountingStore, by result.", []string{"result"}, nil),
		ack:     prometheus.NewDesc("plancore_capacity_ack_total", "Ack calls of a capacity CountingStore, by result.", []string{"result"}, nil),
	}
}

func (c *capacityStoreCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.reserve
	ch <- c.ack
}

func (c *capacityStoreCollector) Collect(ch chan<- prometheus.Metric) {
	if c.m == nil {
		return
	}
	s := c.m.Snapshot()
	for _, r := range reserveResults {
		ch <- prometheus.MustNewConstMetric(c.reserve, prometheus.CounterValue, float64(s.Reserve[r]), r)
	}
	for _, r := range ackResults {
		ch <- prometheus.MustNewConstMetric(c.ack, prometheus.CounterValue, float64(s.Ack[r]), r)
	}
}

type trackerCollector struct {
	t                         *expectations.Tracker
	expired, overdue, pending *prometheus.Desc
}

// TrackerCollector exports an expectations.Tracker's counters and size at
// scrape time:
//
//	plancore_expectations_expired_total    items reported Expired
//	plancore_expectations_overdue_total    items past their deadline under OnExpiry Block
//	plancore_expectations_pending_records  records the tracker holds
//
// A nil t exports nothing.
func TrackerCollector(t *expectations.Tracker) prometheus.Collector {
	return &trackerCollector{t: t,
		expired: prometheus.NewDesc("plancore_expectations_expired_total", "Expectation items reported Expired (lingering ones included).", nil, nil),
		overdue: prometheus.NewDesc("plancore_expectations_overdue_total", "Expectation items that passed their deadline under OnExpiry Block.", nil, nil),
		pending: prometheus.NewDesc("plancore_expectations_pending_records", "Expectation records the tracker holds.", nil, nil),
	}
}

func (c *trackerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.expired
	ch <- c.overdue
	ch <- c.pending
}

func (c *trackerCollector) Collect(ch chan<- prometheus.Metric) {
	if c.t == nil {
		return
	}
	s := c.t.Stats()
	ch <- prometheus.MustNewConstMetric(c.expired, prometheus.CounterValue, float64(s.Expired))
	ch <- prometheus.MustNewConstMetric(c.overdue, prometheus.CounterValue, float64(s.Overdue))
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(c.t.Len()))
}
