package posixstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/memtrail/memtrail/log/store"
	"github.com/transparency-dev/tessera"
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
		{fmt.Errorf("entry 4: %w", store.ErrNotFound), false},
		{fmt.Errorf("%w", tessera.ErrPushback), false},
		{errors.New("entry bundle 3 is malformed"), false},
	} {
		if got := isStorageError(tc.err); got != tc.want {
			t.Errorf("isStorageError(%v) = %v, want %v", tc.err, got, tc.want)
		}
		if got := NewHealth(nil, "").Unavailable(tc.err); got != tc.want {
			t.Errorf("Unavailable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestHealthProbe(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	h := NewHealth([]string{dir}, "")
	// The probe writes, and cleans up after itself.
	if err := h.Probe(ctx, 1<<20); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".probe-*")); len(left) != 0 {
		t.Errorf("the probe left %v", left)
	}
	// A directory that cannot take a file fails the probe.
	if err := NewHealth([]string{filepath.Join(dir, "missing")}, "").Probe(ctx, 0); err == nil {
		t.Error("probe of a missing directory succeeded")
	}
}

func TestHealthIndexGone(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "index.db")
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := NewHealth([]string{dir}, path)
	if err := h.Probe(ctx, 0); err != nil {
		t.Fatalf("probe: %v", err)
	}
	held, err := os.Open(path) // as the index's connections hold it
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	os.Remove(path)
	if err := h.Probe(ctx, 0); !errors.Is(err, errIndexGone) || !h.Unavailable(err) {
		t.Fatalf("probe after the index was removed: %v", err)
	}
	os.WriteFile(path, []byte("x"), 0o600) // another file under the same name
	if err := h.Probe(ctx, 0); !errors.Is(err, errIndexGone) {
		t.Fatalf("probe after the index was replaced: %v", err)
	}
}
