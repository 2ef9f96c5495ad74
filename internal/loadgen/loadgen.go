// Package loadgen drives load against a memtrail log, and against raw
// Tessera as a baseline, for "memtrail bench": it pre-signs receipts, sends
// them with many concurrent clients and measures throughput and latency.
package loadgen

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memtrail/memtrail/internal/gen"
	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/storage/posix"
	"golang.org/x/mod/sumdb/note"
)

// Result is one measured run.
type Result struct {
	Mode      string        `json:"mode"`
	Clients   int           `json:"clients"`
	Entries   int           `json:"entries"` // acknowledged
	Errors    int           `json:"errors"`
	Duration  time.Duration `json:"duration_ns"`
	PerSecond float64       `json:"entries_per_second"`
	P50       time.Duration `json:"p50_ns"`
	P90       time.Duration `json:"p90_ns"`
	P99       time.Duration `json:"p99_ns"`
	FirstErr  string        `json:"first_error,omitempty"`
	// CPU time per acknowledged entry, when the bench could read it: the
	// log's own (for raw, this process running Tessera), and the load
	// generator's.
	LogCPUPerEntry  time.Duration `json:"log_cpu_per_entry_ns,omitempty"`
	LoadCPUPerEntry time.Duration `json:"load_cpu_per_entry_ns,omitempty"`
	// BareVerify is one bare Ed25519 verification of the run's receipts,
	// timed on one core just before the run: the unit in which CPU per
	// entry compares across runs on a machine whose speed drifts.
	BareVerify time.Duration `json:"bare_verify_ns,omitempty"`
}

// CPUString describes the run's CPU time per entry, in time and in bare
// Ed25519 verifications, or is empty.
func (r Result) CPUString() string {
	d := func(x time.Duration) string {
		s := x.Round(100 * time.Nanosecond).String()
		if r.BareVerify > 0 {
			s += fmt.Sprintf(" (%.2f verifications)", float64(x)/float64(r.BareVerify))
		}
		return s
	}
	var parts []string
	if r.LogCPUPerEntry > 0 {
		name := "log"
		if r.LoadCPUPerEntry == 0 {
			name = "this process"
		}
		parts = append(parts, name+" "+d(r.LogCPUPerEntry))
	}
	if r.LoadCPUPerEntry > 0 {
		parts = append(parts, "load generator "+d(r.LoadCPUPerEntry))
	}
	if len(parts) == 0 {
		return ""
	}
	s := "CPU per entry: " + strings.Join(parts, ", ")
	if r.BareVerify > 0 {
		s += fmt.Sprintf("; one bare Ed25519 verification: %s", r.BareVerify.Round(100*time.Nanosecond))
	}
	return s
}

func (r Result) String() string {
	s := fmt.Sprintf("%-10s clients=%-5d entries=%-7d errors=%-5d %9.0f entries/s  p50 %-9s p90 %-9s p99 %s",
		r.Mode, r.Clients, r.Entries, r.Errors, r.PerSecond, r.P50.Round(10*time.Microsecond), r.P90.Round(10*time.Microsecond), r.P99.Round(10*time.Microsecond))
	if r.FirstErr != "" {
		s += "\n           first error: " + r.FirstErr
	}
	return s
}

// Projections signs n distinct projection records (2 fragments of 200
// bytes, about 2.7 KB each) in parallel.
func Projections(s *gen.Signers, prefix string, n int) ([][]byte, error) {
	out := make([][]byte, n)
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	now := time.Now().UTC()
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				r, _, err := s.Projection(fmt.Sprintf("urn:bench:%s:%d", prefix, i), now, 2, 200)
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				out[i] = r.Canonical()
			}
		}()
	}
	wg.Wait()
	return out, firstErr
}

// NewClient returns an HTTP client keeping up to conns connections open.
func NewClient(conns int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = conns + 16
	t.MaxIdleConnsPerHost = conns + 16
	t.MaxConnsPerHost = 0
	return &http.Client{Transport: t, Timeout: 5 * time.Minute}
}

type recorder struct {
	mu        sync.Mutex
	latencies []time.Duration
	entries   int
	errors    int
	firstErr  string
}

func (r *recorder) ok(d time.Duration, n int) {
	r.mu.Lock()
	r.latencies = append(r.latencies, d)
	r.entries += n
	r.mu.Unlock()
}

func (r *recorder) fail(err error) {
	r.mu.Lock()
	r.errors++
	if r.firstErr == "" {
		r.firstErr = err.Error()
	}
	r.mu.Unlock()
}

func (r *recorder) result(mode string, clients int, d time.Duration) Result {
	sort.Slice(r.latencies, func(i, j int) bool { return r.latencies[i] < r.latencies[j] })
	pct := func(p float64) time.Duration {
		if len(r.latencies) == 0 {
			return 0
		}
		return r.latencies[min(len(r.latencies)-1, int(p*float64(len(r.latencies))))]
	}
	return Result{Mode: mode, Clients: clients, Entries: r.entries, Errors: r.errors, Duration: d,
		PerSecond: float64(r.entries) / d.Seconds(), P50: pct(0.50), P90: pct(0.90), P99: pct(0.99), FirstErr: r.firstErr}
}

// Single posts each body to url+"/v1/projections" (with ?wait=proof when
// wait), from clients concurrent clients; latency is per request.
func Single(ctx context.Context, base string, bodies [][]byte, clients int, wait bool) Result {
	client := NewClient(clients)
	u := base + "/v1/projections"
	mode := "single"
	if wait {
		u += "?wait=proof"
		mode = "wait-proof"
	}
	rec := &recorder{}
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(bodies) {
					return
				}
				t0 := time.Now()
				if err := post(ctx, client, u, "application/json", bodies[i], http.StatusCreated, wait); err != nil {
					rec.fail(err)
					continue
				}
				rec.ok(time.Since(t0), 1)
			}
		}()
	}
	wg.Wait()
	return rec.result(mode, clients, time.Since(start))
}

// Batch posts the bodies as NDJSON batches of size lines from clients
// concurrent clients; latency is per batch request.
func Batch(ctx context.Context, base string, bodies [][]byte, clients, size int) Result {
	client := NewClient(clients)
	u := base + "/v1/batch"
	rec := &recorder{}
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf bytes.Buffer
			for ctx.Err() == nil {
				first := int(next.Add(int64(size)) - int64(size))
				if first >= len(bodies) {
					return
				}
				last := min(first+size, len(bodies))
				buf.Reset()
				for _, b := range bodies[first:last] {
					buf.Write(b)
					buf.WriteByte('\n')
				}
				t0 := time.Now()
				n, err := postBatch(ctx, client, u, buf.Bytes())
				if err != nil {
					rec.fail(err)
				}
				if n > 0 {
					rec.ok(time.Since(t0), n)
				}
			}
		}()
	}
	wg.Wait()
	return rec.result("batch", clients, time.Since(start))
}

// Rate sends single submissions at a fixed rate (open loop) and measures
// each one's latency: submit to sequenced and acknowledged.
func Rate(ctx context.Context, base string, bodies [][]byte, perSecond float64) Result {
	client := NewClient(512)
	u := base + "/v1/projections"
	rec := &recorder{}
	interval := time.Duration(float64(time.Second) / perSecond)
	var wg sync.WaitGroup
	// The arrivals do not wait for answers, but at most 2,048 requests are
	// open at once: past that the log is not keeping up, and further
	// arrivals are counted as failures rather than opened.
	open := make(chan struct{}, 2048)
	start := time.Now()
	for i := range bodies {
		if ctx.Err() != nil {
			break
		}
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		select {
		case open <- struct{}{}:
		default:
			rec.fail(errors.New("more than 2,048 requests open: the log is not keeping up with the rate"))
			continue
		}
		wg.Add(1)
		go func(b []byte) {
			defer func() { <-open; wg.Done() }()
			t0 := time.Now()
			if err := post(ctx, client, u, "application/json", b, http.StatusCreated, false); err != nil {
				rec.fail(err)
				return
			}
			rec.ok(time.Since(t0), 1)
		}(bodies[i])
	}
	wg.Wait()
	r := rec.result(fmt.Sprintf("rate-%.0f", perSecond), 0, time.Since(start))
	return r
}

func post(ctx context.Context, client *http.Client, u, ctype string, body []byte, want int, wantProof bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", ctype)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s: %.200s", resp.Status, raw)
	}
	if wantProof {
		var a struct{ Proof string }
		if json.Unmarshal(raw, &a) != nil || a.Proof == "" {
			return errors.New("answer carries no proof")
		}
	}
	return nil
}

func postBatch(ctx context.Context, client *http.Client, u string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		return 0, fmt.Errorf("%s: %.200s", resp.Status, raw)
	}
	dec := json.NewDecoder(resp.Body)
	ok := 0
	var firstErr error
	for dec.More() {
		var r struct {
			Status int    `json:"status"`
			Code   string `json:"code"`
			Detail string `json:"detail"`
		}
		if err := dec.Decode(&r); err != nil {
			return ok, err
		}
		if r.Status == http.StatusCreated {
			ok++
		} else if firstErr == nil {
			firstErr = fmt.Errorf("line refused: %d %s %s", r.Status, r.Code, r.Detail)
		}
	}
	return ok, firstErr
}

// Prefill appends n valid, signed, distinct projection records to a fresh
// Tessera POSIX log in dir (the tiles directory of a memtrail data
// directory), signing them on every core as it goes, with large batches.
// The log's index catches up from the tiles when the log opens. progress, if
// not nil, is called now and then with the number appended.
func Prefill(ctx context.Context, dir string, s *gen.Signers, prefix string, n int, progress func(int)) error {
	skey, _, err := note.GenerateKey(rand.Reader, "bench.example/prefill")
	if err != nil {
		return err
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		return err
	}
	driver, err := posix.New(ctx, posix.Config{Path: dir})
	if err != nil {
		return err
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	appender, shutdown, _, err := tessera.NewAppender(rctx, driver, tessera.NewAppendOptions().
		WithCheckpointSigner(signer).WithBatching(8192, 200*time.Millisecond).
		WithCheckpointInterval(time.Second).WithPushback(1<<17))
	if err != nil {
		return err
	}
	var next, done atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	now := time.Now().UTC()
	for w := 0; w < 4096; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				r, _, err := s.Projection(fmt.Sprintf("urn:prefill:%s:%d", prefix, i), now, 1, 64)
				if err == nil {
					_, err = appender.Add(ctx, tessera.NewEntry(r.Canonical()))()
				}
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				if d := done.Add(1); progress != nil && d%100000 == 0 {
					progress(int(d))
				}
			}
		}()
	}
	wg.Wait()
	if err := shutdown(ctx); err != nil && firstErr == nil {
		firstErr = err
	}
	return firstErr
}

// RawTessera adds entries to a fresh Tessera POSIX log in dir with the same
// batching as the log, from clients concurrent clients, with no
// verification, index or HTTP: the baseline the log is compared with.
func RawTessera(ctx context.Context, dir string, entries [][]byte, clients int, batchSize uint, batchAge time.Duration) (Result, error) {
	skey, _, err := note.GenerateKey(rand.Reader, "bench.example/raw")
	if err != nil {
		return Result{}, err
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		return Result{}, err
	}
	driver, err := posix.New(ctx, posix.Config{Path: dir})
	if err != nil {
		return Result{}, err
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	appender, shutdown, _, err := tessera.NewAppender(rctx, driver, tessera.NewAppendOptions().
		WithCheckpointSigner(signer).WithBatching(batchSize, batchAge).
		WithCheckpointInterval(time.Second).WithPushback(1<<16))
	if err != nil {
		return Result{}, err
	}
	rec := &recorder{}
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(entries) {
					return
				}
				t0 := time.Now()
				if _, err := appender.Add(ctx, tessera.NewEntry(entries[i]))(); err != nil {
					rec.fail(err)
					continue
				}
				rec.ok(time.Since(t0), 1)
			}
		}()
	}
	wg.Wait()
	res := rec.result("raw-tessera", clients, time.Since(start))
	shutdown(ctx)
	return res, nil
}
