package log

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/log/posixstore"
)

// testHealth is a store.Health whose probe fails while fail is set.
type testHealth struct {
	mu   sync.Mutex
	fail error
}

func (h *testHealth) Unavailable(err error) bool { return errors.Is(err, syscall.ENOSPC) }

func (h *testHealth) Probe(ctx context.Context, size int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fail
}

func (h *testHealth) set(err error) {
	h.mu.Lock()
	h.fail = err
	h.mu.Unlock()
}

func TestStorageGuard(t *testing.T) {
	m := newMetrics()
	g := &storageGuard{health: &testHealth{}, logger: slog.New(slog.NewTextHandler(io.Discard, nil)), metrics: m}
	if err := g.unavailable(); err != nil {
		t.Fatalf("a new guard is unavailable: %v", err)
	}
	// A failure that is not the storage's passes through.
	other := errors.New("entry bundle 3 is malformed")
	if err := g.failed(other); err != other || g.unavailable() != nil {
		t.Fatalf("failed(%v) = %v, unavailable %v", other, err, g.unavailable())
	}
	full := fmt.Errorf("couldn't sequence entry: %w", &os.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC})
	err := g.failed(full)
	if !errors.Is(err, ErrStorageUnavailable) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("failed(ENOSPC) = %v", err)
	}
	err = g.unavailable()
	if !errors.Is(err, ErrStorageUnavailable) || !errors.Is(err, syscall.ENOSPC) || m.storageWritable.Load() != 0 {
		t.Fatalf("after ENOSPC: unavailable %v, gauge %d", err, m.storageWritable.Load())
	}
	g.recover()
	if err := g.unavailable(); err != nil || m.storageWritable.Load() != 1 {
		t.Fatalf("after recover: unavailable %v, gauge %d", err, m.storageWritable.Load())
	}
	// An error that says it is the storage's is, whatever the health says.
	if err := g.failed(fmt.Errorf("index: %w", ErrStorageUnavailable)); !errors.Is(err, ErrStorageUnavailable) || g.unavailable() == nil {
		t.Fatalf("failed(ErrStorageUnavailable) = %v, unavailable %v", err, g.unavailable())
	}
	// Without a health reading, nothing is the storage's.
	g = &storageGuard{logger: slog.New(slog.NewTextHandler(io.Discard, nil)), metrics: newMetrics()}
	if err := g.failed(full); err != full || g.unavailable() != nil {
		t.Fatalf("without health: failed(ENOSPC) = %v, unavailable %v", err, g.unavailable())
	}
}

// TestStorageGuardRecovers degrades a running guard and checks that its
// probe brings it back, and that a probe that fails degrades it.
func TestStorageGuardRecovers(t *testing.T) {
	h := &testHealth{}
	g := &storageGuard{health: h, logger: slog.New(slog.NewTextHandler(io.Discard, nil)), metrics: newMetrics()}
	g.failed(&os.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC})
	ctx := t.Context()
	go g.run(ctx)
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s within 5s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("the guard did not recover", func() bool { return g.unavailable() == nil })
	h.set(&os.PathError{Op: "open", Path: "/x", Err: syscall.ENOSPC})
	waitFor("a failing probe did not degrade the guard", func() bool { return g.unavailable() != nil })
	h.set(nil)
	waitFor("the guard did not recover again", func() bool { return g.unavailable() == nil })
}

// TestStorageGuardEmbedded runs the guard on the embedded health of a
// directory.
func TestStorageGuardEmbedded(t *testing.T) {
	g := &storageGuard{health: posixstore.NewHealth([]string{t.TempDir()}, ""), logger: slog.New(slog.NewTextHandler(io.Discard, nil)), metrics: newMetrics()}
	if err := g.probe(context.Background(), probeSize); err != nil {
		t.Fatalf("probe: %v", err)
	}
	g.failed(&os.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC})
	go g.run(t.Context())
	deadline := time.Now().Add(5 * time.Second)
	for g.unavailable() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the guard did not recover within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testLease is a store.Lease that the test can take away.
type testLease struct {
	lost     chan struct{}
	released atomic.Bool
}

func (l *testLease) Lost() <-chan struct{} { return l.lost }
func (l *testLease) Release()              { l.released.Store(true) }

// TestLeaseLost: once the storage's lease is lost the log refuses every
// submission (another writer may be appending), for good; Close releases
// the lease all the same.
func TestLeaseLost(t *testing.T) {
	skey, _, err := GenerateLogKey("memtrail.test/log")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := gen.NewSigners()
	dir := t.TempDir()
	parts := openStorage(t, dir)
	parts.Lease.Release() // the directory's own lock, replaced by one that can be lost
	lease := &testLease{lost: make(chan struct{})}
	parts.Lease = lease
	now := time.Now().UTC().Truncate(time.Millisecond)
	l, err := Open(context.Background(), Config{Storage: parts, SigningKey: skey, Trust: s.Trust(now.Add(-time.Hour)),
		BatchMaxAge: 5 * time.Millisecond, CheckpointInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tl := &testLog{Log: l, t: t, dir: dir, skey: skey, s: s, now: now}
	tl.mustSubmit(tl.projection("urn:p:held"))
	close(lease.lost)
	deadline := time.Now().Add(5 * time.Second)
	for tl.storage.unavailable() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the log did not notice the lost lease within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := tl.Submit(context.Background(), tl.projection("urn:p:after")); !errors.Is(err, ErrStorageUnavailable) || !errors.Is(err, errLeaseLost) {
		t.Fatalf("Submit after the lease was lost = %v, want ErrStorageUnavailable", err)
	}
	// A probe that succeeds does not bring it back.
	time.Sleep(probeHealthy + 200*time.Millisecond)
	if _, err := tl.Submit(context.Background(), tl.projection("urn:p:later")); !errors.Is(err, errLeaseLost) {
		t.Errorf("Submit a probe later = %v, want the lease still lost", err)
	}
	tl.Close(context.Background())
	if !lease.released.Load() {
		t.Error("Close did not release the lease")
	}
}
