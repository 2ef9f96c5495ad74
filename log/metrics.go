package log

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memtrail/memtrail/receipts"
)

// Metrics are the log's counters, written in the Prometheus text format by
// WriteTo.
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

// WriteMetrics writes the metrics; checkpointAge is the age of the latest
// published checkpoint (negative if unknown).
func (m *Metrics) WriteMetrics(w io.Writer, treeSize uint64, checkpointAge time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprintf(w, "# HELP memtrail_submissions_accepted_total Receipts logged, by kind.\n# TYPE memtrail_submissions_accepted_total counter\n")
	kinds := []receipts.Kind{receipts.KindProjection, receipts.KindCompaction, receipts.KindTombstone}
	for _, k := range kinds {
		fmt.Fprintf(w, "memtrail_submissions_accepted_total{kind=%q} %d\n", k, m.accepted[k])
	}
	fmt.Fprintf(w, "# HELP memtrail_submissions_refused_total Submissions refused, by kind and code.\n# TYPE memtrail_submissions_refused_total counter\n")
	keys := make([][2]string, 0, len(m.refused))
	for k := range m.refused {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0]+keys[i][1] < keys[j][0]+keys[j][1] })
	for _, k := range keys {
		fmt.Fprintf(w, "memtrail_submissions_refused_total{kind=%q,code=%q} %d\n", k[0], k[1], m.refused[k])
	}
	fmt.Fprintf(w, "# HELP memtrail_ingest_seconds Time from submission to sequenced, for accepted receipts.\n# TYPE memtrail_ingest_seconds histogram\n")
	for i, b := range m.latency.bounds {
		fmt.Fprintf(w, "memtrail_ingest_seconds_bucket{le=\"%g\"} %d\n", b, m.latency.counts[i])
	}
	fmt.Fprintf(w, "memtrail_ingest_seconds_bucket{le=\"+Inf\"} %d\nmemtrail_ingest_seconds_sum %g\nmemtrail_ingest_seconds_count %d\n", m.latency.n, m.latency.sum, m.latency.n)
	fmt.Fprintf(w, "# HELP memtrail_tree_size Entries integrated into the tree.\n# TYPE memtrail_tree_size gauge\nmemtrail_tree_size %d\n", treeSize)
	fmt.Fprintf(w, "# HELP memtrail_index_watermark Entries applied to the index.\n# TYPE memtrail_index_watermark gauge\nmemtrail_index_watermark %d\n", m.indexed.Load())
	if checkpointAge >= 0 {
		fmt.Fprintf(w, "# HELP memtrail_checkpoint_age_seconds Seconds since the published tree size last changed.\n# TYPE memtrail_checkpoint_age_seconds gauge\nmemtrail_checkpoint_age_seconds %g\n", checkpointAge.Seconds())
		m.cpMu.Lock()
		cpSize := m.cpSize
		m.cpMu.Unlock()
		fmt.Fprintf(w, "# HELP memtrail_checkpoint_size Tree size of the latest published checkpoint.\n# TYPE memtrail_checkpoint_size gauge\nmemtrail_checkpoint_size %d\n", cpSize)
	}
	fmt.Fprintf(w, "# HELP memtrail_checkpoints_published_total Checkpoints published (each distinct checkpoint file seen).\n# TYPE memtrail_checkpoints_published_total counter\nmemtrail_checkpoints_published_total %d\n", m.published.Load())
	if m.witnessing {
		m.writeWitnessMetrics(w)
	}
	fmt.Fprintf(w, "# HELP memtrail_sequencing_outcome_unknown_total Sequencing failures that left it unknown whether the entry was logged; its id stays held until the index settles the question.\n# TYPE memtrail_sequencing_outcome_unknown_total counter\nmemtrail_sequencing_outcome_unknown_total %d\n", m.outcomeUnknown.Load())
	fmt.Fprintf(w, "# HELP memtrail_sequencing_outcome_settled_total Entries with an unknown sequencing outcome that the index has since found logged or not logged.\n# TYPE memtrail_sequencing_outcome_settled_total counter\nmemtrail_sequencing_outcome_settled_total %d\n", m.outcomeSettled.Load())
	fmt.Fprintf(w, "# HELP memtrail_pushback_total Submissions refused because the log was overloaded.\n# TYPE memtrail_pushback_total counter\nmemtrail_pushback_total %d\n", m.pushback.Load())
	fmt.Fprintf(w, "# HELP memtrail_index_errors_total Failed index transactions (retried).\n# TYPE memtrail_index_errors_total counter\nmemtrail_index_errors_total %d\n", m.indexErrors.Load())
	fmt.Fprintf(w, "# HELP memtrail_storage_writable Whether the data directory takes writes (1) or submissions are refused because it does not (0).\n# TYPE memtrail_storage_writable gauge\nmemtrail_storage_writable %d\n", m.storageWritable.Load())
}

// writeWitnessMetrics writes the metrics of witnessing, present only when
// the log has a witness policy.
func (m *Metrics) writeWitnessMetrics(w io.Writer) {
	fmt.Fprintf(w, "# HELP memtrail_checkpoints_published_without_quorum_total Checkpoints published although the witness policy's quorum had not cosigned them (--witness-fail-open).\n# TYPE memtrail_checkpoints_published_without_quorum_total counter\nmemtrail_checkpoints_published_without_quorum_total %d\n", m.withoutQuorum.Load())
	if m.witnessed.Load() >= 0 {
		fmt.Fprintf(w, "# HELP memtrail_checkpoint_witnessed Whether the latest published checkpoint carries the witness quorum (1) or not (0).\n# TYPE memtrail_checkpoint_witnessed gauge\nmemtrail_checkpoint_witnessed %d\n", m.witnessed.Load())
	}
	m.witnessMu.Lock()
	defer m.witnessMu.Unlock()
	fmt.Fprintf(w, "# HELP memtrail_witness_requests_total add-checkpoint requests to witnesses, by witness key name and HTTP status (\"error\": no answer).\n# TYPE memtrail_witness_requests_total counter\n")
	keys := make([][2]string, 0, len(m.witnessReqs))
	for k := range m.witnessReqs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	for _, k := range keys {
		fmt.Fprintf(w, "memtrail_witness_requests_total{witness=%q,code=%q} %d\n", k[0], k[1], m.witnessReqs[k])
	}
	fmt.Fprintf(w, "# HELP memtrail_witness_up Whether the witness answered the log's latest add-checkpoint request as the protocol says (1: cosigned, or named its size) or not (0: no answer, an error status or an invalid cosignature); absent before the first request.\n# TYPE memtrail_witness_up gauge\n")
	names := make([]string, 0, len(m.witnessUps))
	for n := range m.witnessUps {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		up := 0
		if m.witnessUps[n] {
			up = 1
		}
		fmt.Fprintf(w, "memtrail_witness_up{witness=%q} %d\n", n, up)
	}
}
