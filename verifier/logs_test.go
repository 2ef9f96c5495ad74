package verifier_test

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/gen"
	mlog "github.com/memtrail/memtrail/log"
	"github.com/memtrail/memtrail/log/posixstore"
	"github.com/memtrail/memtrail/log/store"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/storage/posix"
	"golang.org/x/mod/sumdb/note"
	"k8s.io/klog/v2"
)

func TestMain(m *testing.M) {
	// Tessera logs through klog; tests have nothing to say to it.
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	fs.Set("logtostderr", "false")
	fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir) // the log BenchmarkAudit built
	}
	os.Exit(code)
}

// testOrigin names every test log.
const testOrigin = "memtrail.test/audit"

// logKey is a log signing key and the tlog-policy that accepts its
// checkpoints with no witness.
type logKey struct {
	skey, vkey string
	policy     *verifier.Policy
}

func newLogKey(t testing.TB) logKey {
	t.Helper()
	skey, vkey, err := mlog.GenerateLogKey(testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	p, err := verifier.ParsePolicy([]byte("log " + vkey + "\nquorum none\n"))
	if err != nil {
		t.Fatal(err)
	}
	return logKey{skey: skey, vkey: vkey, policy: p}
}

// writeRaw appends leaves to the log in dir/log with Tessera's POSIX
// appender directly, bypassing memtrail's ingest (so it can write what the
// log would refuse), and returns once a checkpoint covers them. Calling it
// again on the same directory extends the log.
func writeRaw(t testing.TB, dir string, key logKey, leaves [][]byte) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // stops the appender's background work once it is shut down
	if err := os.MkdirAll(filepath.Join(dir, "log"), 0o755); err != nil {
		t.Fatal(err)
	}
	signer, err := note.NewSigner(key.skey)
	if err != nil {
		t.Fatal(err)
	}
	driver, err := posix.New(ctx, posix.Config{Path: filepath.Join(dir, "log")})
	if err != nil {
		t.Fatal(err)
	}
	opts := tessera.NewAppendOptions().
		WithCheckpointSigner(signer).
		WithBatching(uint(max(len(leaves), 1)), 10*time.Millisecond).
		WithCheckpointInterval(100 * time.Millisecond).
		WithPushback(uint(max(len(leaves), 1) * 2))
	appender, shutdown, _, err := tessera.NewAppender(ctx, driver, opts)
	if err != nil {
		t.Fatal(err)
	}
	futures := make([]tessera.IndexFuture, len(leaves))
	for i, l := range leaves {
		futures[i] = appender.Add(ctx, tessera.NewEntry(l))
	}
	for i, f := range futures {
		if _, err := f(); err != nil {
			t.Fatalf("adding leaf %d: %v", i, err)
		}
	}
	if err := shutdown(ctx); err != nil {
		t.Fatalf("shutting the appender down: %v", err)
	}
}

// putManifest stores a manifest where a memtrail log keeps it.
func putManifest(t testing.TB, dir string, mf *receipts.Manifest) {
	t.Helper()
	ms, err := posixstore.NewFileManifestStore(filepath.Join(dir, "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ms.Put(context.Background(), mf.Root(), mf.Canonical()); err != nil {
		t.Fatal(err)
	}
}

// realLog is a memtrail log opened in a temporary directory.
type realLog struct {
	*mlog.Log
	t   testing.TB
	dir string
	key logKey
	s   *gen.Signers
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func openRealLog(t testing.TB, dir string, key logKey, s *gen.Signers, trust *receipts.Trust) *realLog {
	t.Helper()
	l, err := mlog.Open(context.Background(), mlog.Config{
		Storage: openStorage(t, dir), SigningKey: key.skey, Trust: trust,
		BatchMaxAge: 5 * time.Millisecond, CheckpointInterval: 100 * time.Millisecond, Logger: quiet,
	})
	if err != nil {
		t.Fatalf("log.Open: %v", err)
	}
	return &realLog{Log: l, t: t, dir: dir, key: key, s: s}
}

func (l *realLog) submit(sub *receipts.Submission) uint64 {
	l.t.Helper()
	acc, err := l.Submit(context.Background(), sub)
	if err != nil {
		l.t.Fatalf("Submit(%s %s): %v", sub.Receipt.Kind(), sub.Receipt.ID(), err)
	}
	return acc.Index
}

func (l *realLog) close() {
	l.t.Helper()
	if err := l.Close(context.Background()); err != nil {
		l.t.Fatalf("Close: %v", err)
	}
}

// waitPublished waits until a published checkpoint covers size entries.
func (l *realLog) waitPublished(size uint64) {
	l.t.Helper()
	if size == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := l.WaitPublished(ctx, size-1); err != nil {
		l.t.Fatal(err)
	}
}

// openStorage opens the embedded storage of the data directory dir.
func openStorage(t testing.TB, dir string) store.Parts {
	t.Helper()
	p, err := posixstore.Open(context.Background(), posixstore.Config{Dir: dir})
	if err != nil {
		t.Fatalf("posixstore.Open(%s): %v", dir, err)
	}
	return p
}
