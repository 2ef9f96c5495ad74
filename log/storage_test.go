package log

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestIsStorageError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{fmt.Errorf("couldn't store manifest: %w", &os.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC}), true},
		{fmt.Errorf("couldn't sequence entry: %w", &os.PathError{Op: "open", Path: "/x", Err: syscall.EROFS}), true},
		// Tessera formats some errors with %v: the errno is gone, its text is not.
		{fmt.Errorf("failed to create temp file: %v", &os.PathError{Op: "write", Path: "/x", Err: syscall.EFBIG}), true},
		{fmt.Errorf("failed: %v", &os.PathError{Op: "open", Path: "/x", Err: syscall.EACCES}), true},
		{errors.New("couldn't index: database or disk is full (13)"), true},
		{errors.New("couldn't index: attempt to write a readonly database (8)"), true},
		{fmt.Errorf("entry 4: %w", ErrNotFound), false},
		{fmt.Errorf("%w", ErrPushback), false},
		{errors.New("entry bundle 3 is malformed"), false},
	} {
		if got := isStorageError(tc.err); got != tc.want {
			t.Errorf("isStorageError(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestStorageGuard(t *testing.T) {
	dir := t.TempDir()
	m := newMetrics()
	g := &storageGuard{dirs: []string{dir}, logger: slog.New(slog.NewTextHandler(io.Discard, nil)), metrics: m}
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
	// The probe writes, and cleans up after itself.
	if err := g.probe(probeSize); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".probe-*")); len(left) != 0 {
		t.Errorf("the probe left %v", left)
	}
	g.recover()
	if err := g.unavailable(); err != nil || m.storageWritable.Load() != 1 {
		t.Fatalf("after recover: unavailable %v, gauge %d", err, m.storageWritable.Load())
	}
	// A directory that cannot take a file fails the probe.
	g.dirs = []string{filepath.Join(dir, "missing")}
	if err := g.probe(0); err == nil {
		t.Error("probe of a missing directory succeeded")
	}
}

func TestStorageGuardIndexGone(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "index.db")
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	g := &storageGuard{dirs: []string{dir}, logger: slog.New(slog.NewTextHandler(io.Discard, nil)), metrics: newMetrics(), indexPath: path, indexFile: fi}
	if err := g.probe(0); err != nil {
		t.Fatalf("probe: %v", err)
	}
	held, err := os.Open(path) // as the index's connections hold it
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	os.Remove(path)
	if err := g.probe(0); !errors.Is(err, errIndexGone) {
		t.Fatalf("probe after the index was removed: %v", err)
	}
	os.WriteFile(path, []byte("x"), 0o600) // another file under the same name
	if err := g.probe(0); !errors.Is(err, errIndexGone) {
		t.Fatalf("probe after the index was replaced: %v", err)
	}
}

// TestStorageGuardRecovers degrades a running guard and checks that its
// probe brings it back.
func TestStorageGuardRecovers(t *testing.T) {
	g := &storageGuard{dirs: []string{t.TempDir()}, logger: slog.New(slog.NewTextHandler(io.Discard, nil)), metrics: newMetrics()}
	g.failed(&os.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC})
	ctx := t.Context()
	go g.run(ctx)
	deadline := time.Now().Add(5 * time.Second)
	for g.unavailable() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the guard did not recover within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
