package witness

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Endpoints, as used in the endpoint label of the request counter.
const (
	endpointAddCheckpoint = iota
	endpointCheckpoint
	numEndpoints
)

var endpointNames = [numEndpoints]string{"add-checkpoint", "checkpoint"}

// durationBuckets are the upper bounds, in seconds, of the add-checkpoint
// latency histogram. A commit to disk takes about a millisecond.
var durationBuckets = [...]float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

// metrics are counters exposed at /metrics (by collector). Every value is
// an atomic, so recording never takes a lock.
type metrics struct {
	requests [numEndpoints][600]atomic.Uint64 // by HTTP status code

	durationCount   [len(durationBuckets) + 1]atomic.Uint64 // the last is +Inf
	durationSumNano atomic.Uint64

	storeErrors atomic.Uint64
	reloads     atomic.Uint64
}

func (m *metrics) countRequest(endpoint, code int) {
	if code < 0 || code >= len(m.requests[endpoint]) {
		code = 0
	}
	m.requests[endpoint][code].Add(1)
}

func (m *metrics) observeDuration(d time.Duration) {
	s := d.Seconds()
	i := 0
	for i < len(durationBuckets) && s > durationBuckets[i] {
		i++
	}
	m.durationCount[i].Add(1)
	m.durationSumNano.Add(uint64(d.Nanoseconds()))
}

// The descriptions of the witness's metrics.
var (
	descRequests     = prometheus.NewDesc("memtrail_witness_http_requests_total", "HTTP requests answered, by endpoint and status code.", []string{"endpoint", "code"}, nil)
	descDuration     = prometheus.NewDesc("memtrail_witness_add_checkpoint_duration_seconds", "Time to answer add-checkpoint requests, from the whole body read to the answer.", nil, nil)
	descStoreErrors  = prometheus.NewDesc("memtrail_witness_store_errors_total", "Failed reads or writes of the checkpoint store.", nil, nil)
	descReloads      = prometheus.NewDesc("memtrail_witness_log_reloads_total", "Successful replacements of the set of known logs.", nil, nil)
	descKnownLogs    = prometheus.NewDesc("memtrail_witness_known_logs", "Number of log origins the witness accepts checkpoints from.", nil, nil)
	descCosignatures = prometheus.NewDesc("memtrail_witness_cosignatures_total", "Cosignatures issued since the process started, by log origin.", []string{"origin"}, nil)
	descInconsistent = prometheus.NewDesc("memtrail_witness_inconsistent_checkpoints_total",
		"Validly signed checkpoints refused as inconsistent with the cosigned state (answered 422), by log origin.", []string{"origin"}, nil)
	descSize = prometheus.NewDesc("memtrail_witness_checkpoint_size", "Tree size of the latest cosigned checkpoint, by log origin.", []string{"origin"}, nil)
)

// collector is the witness's prometheus.Collector.
type collector struct{ w *Witness }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRequests, descDuration, descStoreErrors, descReloads, descKnownLogs, descCosignatures, descInconsistent, descSize} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	w, m := c.w, &c.w.m
	send := func(d *prometheus.Desc, t prometheus.ValueType, v uint64, labels ...string) {
		mt, err := prometheus.NewConstMetric(d, t, float64(v), labels...)
		if err != nil {
			mt = prometheus.NewInvalidMetric(d, err)
		}
		ch <- mt
	}
	for e := range numEndpoints {
		for code := range m.requests[e] {
			if n := m.requests[e][code].Load(); n > 0 {
				send(descRequests, prometheus.CounterValue, n, endpointNames[e], strconv.Itoa(code))
			}
		}
	}
	var cum uint64
	buckets := make(map[float64]uint64, len(durationBuckets))
	for i := range m.durationCount {
		cum += m.durationCount[i].Load()
		if i < len(durationBuckets) {
			buckets[durationBuckets[i]] = cum
		}
	}
	ch <- prometheus.MustNewConstHistogram(descDuration, cum, float64(m.durationSumNano.Load())/1e9, buckets)
	send(descStoreErrors, prometheus.CounterValue, m.storeErrors.Load())
	send(descReloads, prometheus.CounterValue, m.reloads.Load())

	known := w.logs.Load()
	send(descKnownLogs, prometheus.GaugeValue, uint64(len(known.verifiers)))
	// Per-origin series cover the origins that are known now, a set the
	// operator controls; unknown origins never get a series.
	for o := range known.verifiers {
		st := w.stateIfExists(o)
		if st == nil {
			continue
		}
		send(descCosignatures, prometheus.CounterValue, st.cosignatures.Load(), o)
		send(descInconsistent, prometheus.CounterValue, st.inconsistent.Load(), o)
		if st.sizeKnown.Load() {
			send(descSize, prometheus.GaugeValue, st.size.Load(), o)
		}
	}
}
