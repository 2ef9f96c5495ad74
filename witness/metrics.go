package witness

import (
	"bufio"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
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

// metrics are counters exposed at /metrics in the Prometheus text format.
// Every value is an atomic, so recording never takes a lock.
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

func (w *Witness) serveMetrics(rw http.ResponseWriter, r *http.Request) {
	rw.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	b := bufio.NewWriter(rw)
	defer b.Flush()
	m := &w.m

	header := func(name, typ, help string) {
		fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}

	header("memtrail_witness_http_requests_total", "counter", "HTTP requests answered, by endpoint and status code.")
	for e := range numEndpoints {
		for code := range m.requests[e] {
			if n := m.requests[e][code].Load(); n > 0 {
				fmt.Fprintf(b, "memtrail_witness_http_requests_total{endpoint=%q,code=\"%d\"} %d\n", endpointNames[e], code, n)
			}
		}
	}

	const hist = "memtrail_witness_add_checkpoint_duration_seconds"
	header(hist, "histogram", "Time to answer add-checkpoint requests, from the whole body read to the answer.")
	var cum uint64
	for i := range m.durationCount {
		cum += m.durationCount[i].Load()
		le := "+Inf"
		if i < len(durationBuckets) {
			le = strconv.FormatFloat(durationBuckets[i], 'g', -1, 64)
		}
		fmt.Fprintf(b, "%s_bucket{le=%q} %d\n", hist, le, cum)
	}
	fmt.Fprintf(b, "%s_sum %s\n%s_count %d\n", hist,
		formatFloat(float64(m.durationSumNano.Load())/1e9), hist, cum)

	header("memtrail_witness_store_errors_total", "counter", "Failed reads or writes of the checkpoint store.")
	fmt.Fprintf(b, "memtrail_witness_store_errors_total %d\n", m.storeErrors.Load())

	header("memtrail_witness_log_reloads_total", "counter", "Successful replacements of the set of known logs.")
	fmt.Fprintf(b, "memtrail_witness_log_reloads_total %d\n", m.reloads.Load())

	known := w.logs.Load()
	header("memtrail_witness_known_logs", "gauge", "Number of log origins the witness accepts checkpoints from.")
	fmt.Fprintf(b, "memtrail_witness_known_logs %d\n", len(known.verifiers))

	// Per-origin series cover the origins that are known now, a set the
	// operator controls; unknown origins never get a series.
	origins := make([]string, 0, len(known.verifiers))
	for o := range known.verifiers {
		origins = append(origins, o)
	}
	slices.Sort(origins)
	type row struct {
		origin                       string
		size, cosigned, inconsistent uint64
		loaded                       bool
	}
	rows := make([]row, 0, len(origins))
	for _, o := range origins {
		st := w.stateIfExists(o)
		if st == nil {
			continue
		}
		rows = append(rows, row{o, st.size.Load(), st.cosignatures.Load(), st.inconsistent.Load(), st.sizeKnown.Load()})
	}

	header("memtrail_witness_cosignatures_total", "counter", "Cosignatures issued since the process started, by log origin.")
	for _, r := range rows {
		fmt.Fprintf(b, "memtrail_witness_cosignatures_total{origin=\"%s\"} %d\n", escapeLabel(r.origin), r.cosigned)
	}
	header("memtrail_witness_inconsistent_checkpoints_total", "counter",
		"Validly signed checkpoints refused as inconsistent with the cosigned state (answered 422), by log origin.")
	for _, r := range rows {
		fmt.Fprintf(b, "memtrail_witness_inconsistent_checkpoints_total{origin=\"%s\"} %d\n", escapeLabel(r.origin), r.inconsistent)
	}
	header("memtrail_witness_checkpoint_size", "gauge", "Tree size of the latest cosigned checkpoint, by log origin.")
	for _, r := range rows {
		if r.loaded {
			fmt.Fprintf(b, "memtrail_witness_checkpoint_size{origin=\"%s\"} %d\n", escapeLabel(r.origin), r.size)
		}
	}
}

// escapeLabel escapes a label value for the Prometheus text format, where
// backslash, double quote and newline are the only escapes.
func escapeLabel(s string) string {
	if !strings.ContainsAny(s, "\\\"\n") {
		return s
	}
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

func formatFloat(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
