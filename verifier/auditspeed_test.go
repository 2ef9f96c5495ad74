package verifier_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
	"github.com/memtrail/memtrail/verifier/backend"
	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/storage/posix"
	"golang.org/x/mod/sumdb/note"
)

// The audit benchmark's log: blocks of 100 entries, each 94 projection
// records of about 2.7 KB (4 fragments of 200 bytes), 4 compactions of 8
// source items, 1 tombstone of an item of the previous block's first
// compaction, and 1 compaction superseding that one without the item — a
// clean lineage, so every check runs to the end. Blocks depend only on
// their number, so they are signed in parallel.
const (
	benchBlock        = 100
	benchProjections  = 94
	benchFragments    = 4
	benchFragmentSize = 200
	benchItems        = 8
)

var benchBase = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

func benchSigners() *gen.Signers { return gen.Deterministic(42) }

func benchTrust() *receipts.Trust { return benchSigners().Trust(benchBase.Add(-24 * time.Hour)) }

func benchItemsOf(block, k int) []receipts.ManifestItem {
	return gen.Items(fmt.Sprintf("bench/%d/%d", block, k), benchItems)
}

// benchLeaves returns the leaves of block b and the manifests they need.
func benchLeaves(s *gen.Signers, b int) ([][]byte, []*receipts.Manifest, error) {
	leaves := make([][]byte, 0, benchBlock)
	var manifests []*receipts.Manifest
	at := benchBase.Add(time.Duration(b) * time.Second)
	for i := range benchProjections {
		r, _, err := s.Projection(fmt.Sprintf("urn:memtrail:bench:p:%d:%d", b, i), at.Add(time.Duration(i)*time.Millisecond), benchFragments, benchFragmentSize)
		if err != nil {
			return nil, nil, err
		}
		leaves = append(leaves, r.Canonical())
		if i%24 == 23 || i == benchProjections-1 {
			k := min(i/24, 3)
			c, mf, err := s.Compaction(fmt.Sprintf("urn:memtrail:bench:c:%d:%d", b, k), benchItemsOf(b, k), "", nil, nil)
			if err != nil {
				return nil, nil, err
			}
			leaves = append(leaves, c.Canonical())
			manifests = append(manifests, mf)
		}
	}
	if b > 0 {
		prev := benchItemsOf(b-1, 0)
		purged := prev[0].ItemDigest
		ts, err := s.Tombstone(fmt.Sprintf("urn:memtrail:bench:t:%d", b), purged, at.Add(500*time.Millisecond))
		if err != nil {
			return nil, nil, err
		}
		c, mf, err := s.Compaction(fmt.Sprintf("urn:memtrail:bench:c:%d:s", b), prev[1:], fmt.Sprintf("urn:memtrail:bench:c:%d:0", b-1), []string{purged}, nil)
		if err != nil {
			return nil, nil, err
		}
		leaves = append(leaves, ts.Canonical(), c.Canonical())
		manifests = append(manifests, mf)
	} else {
		for _, id := range []string{"urn:memtrail:bench:p:0:x", "urn:memtrail:bench:p:0:y"} {
			r, _, err := s.Projection(id, at, benchFragments, benchFragmentSize)
			if err != nil {
				return nil, nil, err
			}
			leaves = append(leaves, r.Canonical())
		}
	}
	return leaves, manifests, nil
}

// buildBenchLog writes a log of n entries (a multiple of benchBlock) to
// dir with Tessera's POSIX appender, in large batches, signing blocks on
// every core; manifests go where a memtrail log keeps them. It returns
// the log key.
func buildBenchLog(tb testing.TB, dir string, n int) logKey {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key := benchKey(tb)
	s := benchSigners()
	blocks := n / benchBlock
	if err := os.MkdirAll(filepath.Join(dir, "log"), 0o755); err != nil {
		tb.Fatal(err)
	}
	signer, err := note.NewSigner(key.skey)
	if err != nil {
		tb.Fatal(err)
	}
	driver, err := posix.New(ctx, posix.Config{Path: filepath.Join(dir, "log")})
	if err != nil {
		tb.Fatal(err)
	}
	const batch = 1 << 14
	appender, shutdown, _, err := tessera.NewAppender(ctx, driver, tessera.NewAppendOptions().
		WithCheckpointSigner(signer).WithBatching(batch, 100*time.Millisecond).
		WithCheckpointInterval(time.Second).WithPushback(4*batch))
	if err != nil {
		tb.Fatal(err)
	}

	// Blocks are signed on every core and handed over in order.
	type built struct {
		leaves    [][]byte
		manifests []*receipts.Manifest
		err       error
	}
	results := make([]chan built, blocks)
	for i := range results {
		results[i] = make(chan built, 1)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	window := make(chan struct{}, 4*runtime.GOMAXPROCS(0)) // bounds blocks built ahead
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				window <- struct{}{}
				b := int(next.Add(1) - 1)
				if b >= blocks {
					<-window
					return
				}
				l, m, err := benchLeaves(s, b)
				results[b] <- built{l, m, err}
			}
		}()
	}
	var pending []tessera.IndexFuture
	written := 0
	for b := range blocks {
		r := <-results[b]
		<-window
		if r.err != nil {
			tb.Fatal(r.err)
		}
		for _, mf := range r.manifests {
			h := mf.Root()[len("sha256:"):]
			p := filepath.Join(dir, "manifests", h[:2], h+".json")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				tb.Fatal(err)
			}
			if err := os.WriteFile(p, mf.Canonical(), 0o644); err != nil {
				tb.Fatal(err)
			}
		}
		for _, l := range r.leaves {
			pending = append(pending, appender.Add(ctx, tessera.NewEntry(l)))
		}
		written += len(r.leaves)
		if len(pending) >= 2*batch {
			for _, f := range pending {
				if _, err := f(); err != nil {
					tb.Fatal(err)
				}
			}
			pending = pending[:0]
		}
	}
	for _, f := range pending {
		if _, err := f(); err != nil {
			tb.Fatal(err)
		}
	}
	wg.Wait()
	if err := shutdown(ctx); err != nil {
		tb.Fatal(err)
	}
	if written != n {
		tb.Fatalf("wrote %d entries, want %d", written, n)
	}
	return key
}

// benchKey is the bench log's key, fixed so a built log can be reused.
func benchKey(tb testing.TB) logKey {
	const skey = "PRIVATE+KEY+memtrail.bench/audit+288c5a3b+AVphtStonLoiWdX4oFHSyPKohfdo9/pbD0JfZ8zmMceC"
	const vkey = "memtrail.bench/audit+288c5a3b+Adcc73Zitd6OpdFuyM9JPHOm96hDllZCSQYACbT3Y4PF"
	p, err := verifier.ParsePolicy([]byte("log " + vkey + "\nquorum none\n"))
	if err != nil {
		tb.Fatal(err)
	}
	return logKey{skey: skey, vkey: vkey, policy: p}
}

// bareVerify measures GOMAXPROCS goroutines calling ed25519.Verify over
// the given signed messages for at least d, and returns the calls per
// second of wall time and per second of the process's CPU time.
func bareVerify(msgs []signedMsg, d time.Duration) (wall, perCPU float64) {
	workers := runtime.GOMAXPROCS(0)
	var total atomic.Int64
	cpu0 := cpuTime()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for i := w; time.Since(start) < d; i += workers {
				m := &msgs[i%len(msgs)]
				if !ed25519.Verify(m.pub, m.msg, m.sig) {
					panic("bench signature does not verify")
				}
				n++
			}
			total.Add(int64(n))
		}()
	}
	wg.Wait()
	n := float64(total.Load())
	return n / time.Since(start).Seconds(), n / (cpuTime() - cpu0).Seconds()
}

// cpuTime returns the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type signedMsg struct{ pub, msg, sig []byte }

// sampleSigned returns the signed bytes, signatures and keys of the first
// receipts of the bench log, in the same mix.
func sampleSigned(tb testing.TB, n int) []signedMsg {
	s := benchSigners()
	var out []signedMsg
	for b := 0; len(out) < n; b++ {
		leaves, _, err := benchLeaves(s, b)
		if err != nil {
			tb.Fatal(err)
		}
		for _, l := range leaves {
			r, err := receipts.ParseReceipt(l)
			if err != nil {
				tb.Fatal(err)
			}
			switch r := r.(type) {
			case *receipts.ProjectionRecord:
				out = append(out, signedMsg{s.Adapter.Public().(ed25519.PublicKey), r.SignedBytes(), r.Proof.Signature})
			case *receipts.Compaction:
				out = append(out, signedMsg{s.Compactor.Public().(ed25519.PublicKey), r.SignedBytes(), r.Signature.Sig})
			case *receipts.Tombstone:
				out = append(out, signedMsg{s.Issuer.Public().(ed25519.PublicKey), r.SignedBytes(), r.Signature.Sig})
			}
		}
	}
	return out
}

// speed holds the figures of one audit speed run.
type speed struct {
	state             *verifier.AuditState
	entries           int
	elapsed, cpu      time.Duration // of the audit
	bareWall, bareCPU [2]float64    // ed25519.Verify per second, before and after the audit
}

// rate is the audit's receipts per second of wall time; cpuRate its
// receipts per second of CPU time, times GOMAXPROCS: the rate of as many
// cores given to it alone.
func (s speed) rate() float64 { return float64(s.entries) / s.elapsed.Seconds() }
func (s speed) cpuRate() float64 {
	return float64(s.entries) / s.cpu.Seconds() * float64(runtime.GOMAXPROCS(0))
}
func (s speed) bare() float64 { return (s.bareWall[0] + s.bareWall[1]) / 2 }
func (s speed) bareCores() float64 {
	return (s.bareCPU[0] + s.bareCPU[1]) / 2 * float64(runtime.GOMAXPROCS(0))
}

// auditFigures measures the bare Ed25519 rate, audits the bench log, and
// measures the bare rate again.
func auditFigures(tb testing.TB, dir string, key logKey, entries int, baseline time.Duration) speed {
	f := speed{entries: entries}
	msgs := sampleSigned(tb, 20000)
	f.bareWall[0], f.bareCPU[0] = bareVerify(msgs, baseline)
	src, err := backend.NewDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	runtime.GC()
	var stopProfile func()
	if p := os.Getenv("MEMTRAIL_AUDIT_CPUPROFILE"); p != "" {
		pf, err := os.Create(p)
		if err != nil {
			tb.Fatal(err)
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			tb.Fatal(err)
		}
		stopProfile = func() { pprof.StopCPUProfile(); pf.Close() }
	}
	cpu0 := cpuTime()
	start := time.Now()
	workers, _ := strconv.Atoi(os.Getenv("MEMTRAIL_AUDIT_WORKERS"))
	rep, state, err := verifier.AuditLog(context.Background(), src, verifier.AuditOptions{
		Policy: key.policy, Trust: benchTrust(), At: benchBase.Add(24 * time.Hour), Workers: workers})
	f.state = state
	f.elapsed, f.cpu = time.Since(start), cpuTime()-cpu0
	if stopProfile != nil {
		stopProfile()
	}
	if err != nil {
		tb.Fatal(err)
	}
	if !rep.Valid() || rep.EntriesAudited != uint64(entries) {
		tb.Fatalf("bench log audit: %s", rep.Summary())
	}
	f.bareWall[1], f.bareCPU[1] = bareVerify(msgs, baseline)
	return f
}

// TestAuditSpeed is the audit speed run of docs/PERFORMANCE.md, "Audit".
// MEMTRAIL_AUDIT_ENTRIES sets the log's size (a multiple of 100; the
// reference run uses 1000000); without it, "go test" runs it small (2,000
// entries, one round), so the measurement itself keeps working. The log is built in MEMTRAIL_AUDIT_DIR (a
// temporary directory by default) and reused when already there.
// MEMTRAIL_AUDIT_ROUNDS sets the rounds (default 3), MEMTRAIL_AUDIT_WORKERS
// the audit's workers (default GOMAXPROCS), and MEMTRAIL_AUDIT_CPUPROFILE a
// file for a CPU profile of the audits alone.
func TestAuditSpeed(t *testing.T) {
	v := os.Getenv("MEMTRAIL_AUDIT_ENTRIES")
	small := v == ""
	if small {
		v = "2000"
	}
	entries, err := strconv.Atoi(v)
	if err != nil || entries < benchBlock || entries%benchBlock != 0 {
		t.Fatalf("MEMTRAIL_AUDIT_ENTRIES=%q: want a positive multiple of %d", v, benchBlock)
	}
	dir := os.Getenv("MEMTRAIL_AUDIT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	dir = filepath.Join(dir, "bench-"+strconv.Itoa(entries))
	key := benchKey(t)
	if _, err := os.Stat(filepath.Join(dir, "complete")); err != nil {
		os.RemoveAll(dir)
		start := time.Now()
		buildBenchLog(t, dir, entries)
		if err := os.WriteFile(filepath.Join(dir, "complete"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("built a log of %d entries in %s (%.0f entries/s) in %s", entries, time.Since(start).Round(time.Second),
			float64(entries)/time.Since(start).Seconds(), dir)
	} else {
		t.Logf("reusing the log of %d entries in %s", entries, dir)
	}
	rounds := 3
	baseline := 3 * time.Second
	if small {
		rounds, baseline = 1, 300*time.Millisecond
	}
	if v := os.Getenv("MEMTRAIL_AUDIT_ROUNDS"); v != "" {
		if rounds, err = strconv.Atoi(v); err != nil || rounds < 1 {
			t.Fatalf("MEMTRAIL_AUDIT_ROUNDS=%q", v)
		}
	}
	n := runtime.GOMAXPROCS(0)
	t.Logf("GOMAXPROCS %d, NumCPU %d; %d rounds of: bare ed25519.Verify for 3s, the audit, bare ed25519.Verify for 3s", n, runtime.NumCPU(), rounds)
	var wall, cpu []float64
	var last speed
	for r := range rounds {
		f := auditFigures(t, dir, key, entries, baseline)
		last = f
		wall = append(wall, f.rate()/f.bare())
		cpu = append(cpu, f.cpuRate()/f.bareCores())
		t.Logf("round %d, wall clock: bare ed25519.Verify %.0f/s before and %.0f/s after (mean %.0f/s); audit of %d entries in %s: %.0f receipts/s = %.0f%% of the bare rate",
			r+1, f.bareWall[0], f.bareWall[1], f.bare(), entries, f.elapsed.Round(time.Millisecond), f.rate(), 100*f.rate()/f.bare())
		t.Logf("round %d, CPU time (per CPU-second, times %d): bare ed25519.Verify %.0f/s; audit %.0f receipts/s (%s of CPU, %.2f cores busy) = %.0f%% of the bare rate",
			r+1, n, f.bareCores(), f.cpuRate(), f.cpu.Round(time.Millisecond), f.cpu.Seconds()/f.elapsed.Seconds(), 100*f.cpuRate()/f.bareCores())
	}
	t.Logf("median over %d rounds: %.0f%% of the bare Ed25519 rate by wall clock, %.0f%% by CPU time", rounds, 100*median(wall), 100*median(cpu))

	// Resuming: the state file of the whole log, and an audit that starts
	// from it and finds nothing new.
	start := time.Now()
	b := last.state.Marshal()
	marshalled := time.Since(start)
	start = time.Now()
	st, err := verifier.ParseAuditState(b)
	if err != nil {
		t.Fatal(err)
	}
	parsed := time.Since(start)
	src, _ := backend.NewDir(dir)
	start = time.Now()
	rep, _, err := verifier.AuditLog(context.Background(), src, verifier.AuditOptions{Policy: key.policy, Trust: benchTrust(), At: benchBase.Add(24 * time.Hour), State: st})
	if err != nil || !rep.Valid() || rep.EntriesAudited != 0 {
		t.Fatalf("resumed audit: %v %s", err, rep.Summary())
	}
	t.Logf("state file: %.1f MB, written in %s, read in %s; a resumed audit with nothing new took %s",
		float64(len(b))/1e6, marshalled.Round(time.Millisecond), parsed.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	t.Logf("peak resident memory of the test process: %d MB", ru.Maxrss/1024)
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

var (
	benchOnce sync.Once
	benchDir  string
)

// BenchmarkAudit audits a log of 20,000 entries and reports receipts per
// second and the ratio to the bare Ed25519 rate measured in the same run.
func BenchmarkAudit(b *testing.B) {
	const entries = 20000
	benchOnce.Do(func() {
		d, err := os.MkdirTemp("", "memtrail-audit-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = d
		buildBenchLog(b, benchDir, entries)
	})
	key := benchKey(b)
	b.ResetTimer()
	var f speed
	for range b.N {
		f = auditFigures(b, benchDir, key, entries, 500*time.Millisecond)
	}
	b.ReportMetric(f.rate(), "receipts/s")
	b.ReportMetric(100*f.rate()/f.bare(), "%bare-ed25519")
	b.ReportMetric(100*f.cpuRate()/f.bareCores(), "%bare-ed25519-cpu")
}
