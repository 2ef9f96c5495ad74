package log

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memtrail/memtrail/receipts"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the log's counters. It is a prometheus.Collector: register it
// to serve them (the API's /metrics does).
type Metrics struct {
	mu       sync.Mutex
	accepted map[receipts.Kind]uint64
	refused  map[[2]string]uint64 // kind, code
	latency  histogram

	pushback    atomic.Uint64
	indexErrors atomic.Uint64
	// outcomeUnknown counts sequencing failures that left it unknown
	// whether the entry was logged (ErrOutcomeUnknown).
	outcomeUnknown atomic.Uint64
	// outcomeSettled counts those whose outcome the log has since settled.
	outcomeSettled atomic.Uint64
	// storageWritable is 1 while the data directory takes writes, 0 while
	// submissions are refused because it does not (ErrStorageUnavailable).
	storageWritable atomic.Int64
	treeSize        atomic.Uint64
	indexed         atomic.Uint64

	cpMu   sync.Mutex
	cpSize uint64
	cpSeen time.Time // when a checkpoint of cpSize was first seen

	// Checkpoints published, and under a witness policy (witnessing),
	// those published without its quorum, whether the latest met it, and
	// the requests to each witness by key name and status.
	published     atomic.Uint64
	witnessing    bool
	withoutQuorum atomic.Uint64
	witnessed     atomic.Int64 // 1 if the latest published checkpoint met the quorum, 0 if not, -1 before the first
	// quorumLost is set once a checkpoint was published without the
	// quorum and said so, until one is published with it again.
	quorumLost  atomic.Bool
	witnessMu   sync.Mutex
	witnessReqs map[[2]string]uint64 // witness, code
	witnessUps  map[string]bool      // witness → answered its last request as the protocol says
}

// witnessUp records whether witness answered its latest request as the
// protocol says (memtrail_witness_up).
func (m *Metrics) witnessUp(witness string, up bool) {
	m.witnessMu.Lock()
	m.witnessUps[witness] = up
	m.witnessMu.Unlock()
}

// witnessRequest counts a request to a witness and its outcome: the HTTP
// status, or "error" when no answer came (refused connection, timeout).
func (m *Metrics) witnessRequest(witness, code string) {
	m.witnessMu.Lock()
	m.witnessReqs[[2]string{witness, code}]++
	m.witnessMu.Unlock()
}

// checkpointSeen notes the size of the published checkpoint, for its age.
func (m *Metrics) checkpointSeen(size uint64) {
	m.cpMu.Lock()
	if size != m.cpSize || m.cpSeen.IsZero() {
		m.cpSize, m.cpSeen = size, time.Now()
	}
	m.cpMu.Unlock()
}

// CheckpointAge returns how long the latest published checkpoint has been
// the latest, or -1 if none has been seen.
func (m *Metrics) CheckpointAge() time.Duration {
	m.cpMu.Lock()
	defer m.cpMu.Unlock()
	if m.cpSeen.IsZero() {
		return -1
	}
	return time.Since(m.cpSeen)
}

// TreeSize returns the last integrated tree size seen.
func (m *Metrics) TreeSize() uint64 { return m.treeSize.Load() }

func newMetrics() *Metrics {
	m := &Metrics{accepted: map[receipts.Kind]uint64{}, refused: map[[2]string]uint64{}, latency: newHistogram(), witnessReqs: map[[2]string]uint64{}, witnessUps: map[string]bool{}}
	m.witnessed.Store(-1)
	m.storageWritable.Store(1)
	return m
}

func (m *Metrics) observeSubmit(kind receipts.Kind, err error, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err == nil {
		m.accepted[kind]++
		m.latency.observe(d.Seconds())
		return
	}
	code := string(receipts.ErrorCode(err))
	if code == "" {
		code = "internal"
		switch {
		case isPushback(err):
			code = "pushback"
		case errors.Is(err, ErrOutcomeUnknown):
			code = "outcome_unknown"
		case errors.Is(err, ErrStorageUnavailable):
			code = "storage_unavailable"
		}
	}
	m.refused[[2]string{string(kind), code}]++
}

// Refused counts a refusal decided before a submission reached the log
// (for example a parse failure in the HTTP layer).
func (m *Metrics) Refused(kind receipts.Kind, code receipts.Code) {
	m.mu.Lock()
	m.refused[[2]string{string(kind), string(code)}]++
	m.mu.Unlock()
}

// histogram is a fixed-bucket latency histogram.
type histogram struct {
	bounds []float64
	counts []uint64
	sum    float64
	n      uint64
}

func newHistogram() histogram {
	b := []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	return histogram{bounds: b, counts: make([]uint64, len(b))}
}

func (h *histogram) observe(v float64) {
	for i, b := range h.bounds {
		if v <= b {
			h.counts[i]++
		}
	}
	h.sum += v
	h.n++
}

// The descriptions of the log's metrics.
var (
	descAccepted        = prometheus.NewDesc("memtrail_submissions_accepted_total", "Receipts logged, by kind.", []string{"kind"}, nil)
	descRefused         = prometheus.NewDesc("memtrail_submissions_refused_total", "Submissions refused, by kind and code.", []string{"kind", "code"}, nil)
	descIngest          = prometheus.NewDesc("memtrail_ingest_seconds", "Time from submission to sequenced, for accepted receipts.", nil, nil)
	descTreeSize        = prometheus.NewDesc("memtrail_tree_size", "Entries integrated into the tree.", nil, nil)
	descIndexed         = prometheus.NewDesc("memtrail_index_watermark", "Entries applied to the index.", nil, nil)
	descCheckpointAge   = prometheus.NewDesc("memtrail_checkpoint_age_seconds", "Seconds since the published tree size last changed.", nil, nil)
	descCheckpointSize  = prometheus.NewDesc("memtrail_checkpoint_size", "Tree size of the latest published checkpoint.", nil, nil)
	descPublished       = prometheus.NewDesc("memtrail_checkpoints_published_total", "Checkpoints published (each distinct checkpoint file seen).", nil, nil)
	descWithoutQuorum   = prometheus.NewDesc("memtrail_checkpoints_published_without_quorum_total", "Checkpoints published although the witness policy's quorum had not cosigned them (--witness-fail-open).", nil, nil)
	descWitnessed       = prometheus.NewDesc("memtrail_checkpoint_witnessed", "Whether the latest published checkpoint carries the witness quorum (1) or not (0).", nil, nil)
	descWitnessUp       = prometheus.NewDesc("memtrail_witness_up", "Whether the witness answered the log's latest add-checkpoint request as the protocol says (1: cosigned, or named its size) or not (0: no answer, an error status or an invalid cosignature); absent before the first request.", []string{"witness"}, nil)
	descWitnessRequests = prometheus.NewDesc("memtrail_witness_requests_total", "add-checkpoint requests to witnesses, by witness key name and HTTP status (\"error\": no answer).", []string{"witness", "code"}, nil)
	descOutcomeUnknown  = prometheus.NewDesc("memtrail_sequencing_outcome_unknown_total", "Sequencing failures that left it unknown whether the entry was logged; its id stays held until the index settles the question.", nil, nil)
	descOutcomeSettled  = prometheus.NewDesc("memtrail_sequencing_outcome_settled_total", "Entries with an unknown sequencing outcome that the index has since found logged or not logged.", nil, nil)
	descPushback        = prometheus.NewDesc("memtrail_pushback_total", "Submissions refused because the log was overloaded.", nil, nil)
	descIndexErrors     = prometheus.NewDesc("memtrail_index_errors_total", "Failed index transactions (retried).", nil, nil)
	descStorageWritable = prometheus.NewDesc("memtrail_storage_writable", "Whether the data directory takes writes (1) or submissions are refused because it does not (0).", nil, nil)
)

// Describe sends the descriptions of every metric Collect may send, for
// prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descAccepted, descRefused, descIngest, descTreeSize, descIndexed, descCheckpointAge, descCheckpointSize,
		descPublished, descWithoutQuorum, descWitnessed, descWitnessUp, descWitnessRequests, descOutcomeUnknown, descOutcomeSettled, descPushback,
		descIndexErrors, descStorageWritable} {
		ch <- d
	}
}

// Collect sends the current value of every metric, for
// prometheus.Collector: the checkpoint's age and size once a checkpoint was
// seen, and the metrics of witnessing only under a witness policy.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	send := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		mt, err := prometheus.NewConstMetric(d, t, v, labels...)
		if err != nil {
			mt = prometheus.NewInvalidMetric(d, err)
		}
		ch <- mt
	}
	m.mu.Lock()
	for _, k := range []receipts.Kind{receipts.KindProjection, receipts.KindCompaction, receipts.KindTombstone} {
		send(descAccepted, prometheus.CounterValue, float64(m.accepted[k]), string(k))
	}
	for k, n := range m.refused {
		send(descRefused, prometheus.CounterValue, float64(n), k[0], k[1])
	}
	buckets := make(map[float64]uint64, len(m.latency.bounds))
	for i, b := range m.latency.bounds {
		buckets[b] = m.latency.counts[i]
	}
	ch <- prometheus.MustNewConstHistogram(descIngest, m.latency.n, m.latency.sum, buckets)
	m.mu.Unlock()

	send(descTreeSize, prometheus.GaugeValue, float64(m.treeSize.Load()))
	send(descIndexed, prometheus.GaugeValue, float64(m.indexed.Load()))
	if age := m.CheckpointAge(); age >= 0 {
		send(descCheckpointAge, prometheus.GaugeValue, age.Seconds())
		m.cpMu.Lock()
		cpSize := m.cpSize
		m.cpMu.Unlock()
		send(descCheckpointSize, prometheus.GaugeValue, float64(cpSize))
	}
	send(descPublished, prometheus.CounterValue, float64(m.published.Load()))
	if m.witnessing {
		send(descWithoutQuorum, prometheus.CounterValue, float64(m.withoutQuorum.Load()))
		if w := m.witnessed.Load(); w >= 0 {
			send(descWitnessed, prometheus.GaugeValue, float64(w))
		}
		m.witnessMu.Lock()
		for k, n := range m.witnessReqs {
			send(descWitnessRequests, prometheus.CounterValue, float64(n), k[0], k[1])
		}
		for n, up := range m.witnessUps {
			v := 0.0
			if up {
				v = 1
			}
			send(descWitnessUp, prometheus.GaugeValue, v, n)
		}
		m.witnessMu.Unlock()
	}
	send(descOutcomeUnknown, prometheus.CounterValue, float64(m.outcomeUnknown.Load()))
	send(descOutcomeSettled, prometheus.CounterValue, float64(m.outcomeSettled.Load()))
	send(descPushback, prometheus.CounterValue, float64(m.pushback.Load()))
	send(descIndexErrors, prometheus.CounterValue, float64(m.indexErrors.Load()))
	send(descStorageWritable, prometheus.GaugeValue, float64(m.storageWritable.Load()))
}
