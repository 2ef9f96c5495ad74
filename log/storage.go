package log

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/memtrail/memtrail/log/store"
)

// Probe intervals: while the storage is healthy a small probe runs now and
// then to notice storage made read-only before a sequencing batch trips
// over it; while it is not, a larger probe runs often, to notice that space
// was freed.
const (
	probeHealthy  = time.Second
	probeDegraded = 250 * time.Millisecond
	// probeSize is written by the probe while degraded: a disk that cannot
	// take it would fail the next batch.
	probeSize = 1 << 20
)

// errLeaseLost is the refusal of submissions once the storage's lease is
// lost: another writer may be appending.
var errLeaseLost = errors.New("the log lost its lease on the storage; restart it once it is the only writer")

// storageGuard keeps track of whether the storage takes writes, as its
// store.Health reads its failures.
type storageGuard struct {
	health  store.Health // nil: no failure is the storage's
	logger  *slog.Logger
	metrics *Metrics

	mu    sync.Mutex
	err   error // the failure that made the storage unavailable; nil when it is writable
	since time.Time
	lost  bool // the lease is lost: unavailable for good
}

// unavailable returns the refusal for submissions while the storage is
// not writable, or nil.
func (g *storageGuard) unavailable() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err == nil {
		return nil
	}
	return fmt.Errorf("%w (since %s): %w", ErrStorageUnavailable, g.since.UTC().Format(time.RFC3339), g.err)
}

// isStorageFailure reports whether err is the storage's failure.
func (g *storageGuard) isStorageFailure(err error) bool {
	return err != nil && (errors.Is(err, ErrStorageUnavailable) || g.health != nil && g.health.Unavailable(err))
}

// failed examines a write failure. If it is a storage failure the log
// stops accepting submissions until a probe succeeds, and the returned
// error wraps ErrStorageUnavailable; otherwise err is returned as is.
func (g *storageGuard) failed(err error) error {
	if !g.isStorageFailure(err) {
		return err
	}
	g.degrade(err)
	if errors.Is(err, ErrStorageUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrStorageUnavailable, err)
}

func (g *storageGuard) degrade(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return
	}
	g.err, g.since = err, time.Now()
	g.metrics.storageWritable.Store(0)
	g.logger.Error("refusing submissions: the log cannot write to its data directory (free space, make it writable, or as the error says); reads go on", "error", err)
}

// leaseLost makes the storage unavailable for good.
func (g *storageGuard) leaseLost() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lost = true
	g.err, g.since = errLeaseLost, time.Now()
	g.metrics.storageWritable.Store(0)
	g.logger.Error("refusing submissions: the log lost its lease on the storage, so another writer may be appending; reads go on")
}

func (g *storageGuard) recover() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err == nil || g.lost {
		return
	}
	g.logger.Info("accepting submissions: the log can write to its data directory again", "unavailable_for", time.Since(g.since).Round(time.Millisecond))
	g.err = nil
	g.metrics.storageWritable.Store(1)
}

// probe asks the storage whether it takes a write of size bytes now.
func (g *storageGuard) probe(ctx context.Context, size int) error {
	if g.health == nil {
		return nil
	}
	return g.health.Probe(ctx, size)
}

// run probes the storage until ctx is done.
func (g *storageGuard) run(ctx context.Context) {
	if g.health == nil {
		return
	}
	for {
		g.mu.Lock()
		degraded, lost := g.err != nil, g.lost
		g.mu.Unlock()
		if lost {
			return
		}
		wait, size := probeHealthy, 0
		if degraded {
			wait, size = probeDegraded, probeSize
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		switch err := g.probe(ctx, size); {
		case err == nil && degraded:
			g.recover()
		case g.isStorageFailure(err):
			g.degrade(err)
		case err != nil:
			g.logger.Warn("couldn't probe the data directory", "error", err)
		}
	}
}

// watchLease refuses every submission once the lease is lost.
func (l *Log) watchLease(ctx context.Context) {
	if l.lease == nil {
		return
	}
	lost := l.lease.Lost()
	if lost == nil {
		return
	}
	select {
	case <-ctx.Done():
	case <-lost:
		l.storage.leaseLost()
	}
}
