package log

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/memtrail/memtrail/log/store"
	"github.com/transparency-dev/tessera"
)

// lateDriver makes the embedded driver behave as one that integrates after
// Add (Tessera's drivers with a sequencing queue): while held, the
// integrated size its readers report stays where it was, though Add goes
// on sequencing (and NextIndex counts what it sequenced).
type lateDriver struct {
	store.Driver
	mu   sync.Mutex
	hold bool
	at   uint64 // the integrated size reported while held
}

func (d *lateDriver) holdAt(n uint64) {
	d.mu.Lock()
	d.hold, d.at = true, n
	d.mu.Unlock()
}

func (d *lateDriver) release() {
	d.mu.Lock()
	d.hold = false
	d.mu.Unlock()
}

func (d *lateDriver) integrated(n uint64) uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.hold {
		return min(n, d.at)
	}
	return n
}

type appendLifecycle interface {
	Appender(context.Context, *tessera.AppendOptions) (*tessera.Appender, tessera.LogReader, error)
}

func (d *lateDriver) Open(ctx context.Context, opts store.DriverOptions) (tessera.Driver, error) {
	drv, err := d.Driver.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &lateAppender{inner: drv.(appendLifecycle), d: d}, nil
}

type lateAppender struct {
	inner appendLifecycle
	d     *lateDriver
}

func (a *lateAppender) Appender(ctx context.Context, opts *tessera.AppendOptions) (*tessera.Appender, tessera.LogReader, error) {
	ap, r, err := a.inner.Appender(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	return ap, &lateReader{LogReader: r, d: a.d}, nil
}

type lateReader struct {
	tessera.LogReader
	d *lateDriver
}

func (r *lateReader) IntegratedSize(ctx context.Context) (uint64, error) {
	n, err := r.LogReader.IntegratedSize(ctx)
	return r.d.integrated(n), err
}

func (r *lateReader) NextIndex(ctx context.Context) (uint64, error) {
	return r.LogReader.IntegratedSize(ctx) // the POSIX driver's next index is its size
}

// TestUnknownOutcomeAgainstIntegratedTree: with a driver that integrates
// after Add, an entry sequenced by an Add that failed is not in the tree
// yet when the failure is reported, nor for a while after. Its id stays
// held until the integrated tree passes the next index read after the
// failure; then it is a replay. Settling against the tree size of the
// moment (or against the index, which holds only integrated entries)
// would release it, and the id would be logged twice.
func TestUnknownOutcomeAgainstIntegratedTree(t *testing.T) {
	var late *lateDriver
	tl := newTestLogWith(t, func(p *store.Parts) {
		late = &lateDriver{Driver: p.Driver}
		p.Driver = late
	})
	ctx := context.Background()
	first := tl.mustSubmit(tl.projection("urn:p:before"))
	tl.waitIndexed(first.Index + 1)

	late.holdAt(first.Index + 1)
	// Accepted while held: sequenced, so a replay at once, but not
	// indexed until the tree holds it.
	held := tl.mustSubmit(tl.projection("urn:p:sequenced"))
	var re *ReplayError
	if _, err := tl.Submit(ctx, tl.projection("urn:p:sequenced")); !errors.As(err, &re) || re.FirstIndex != held.Index {
		t.Fatalf("resubmission of an entry sequenced but not integrated = %v, want a replay at %d", err, held.Index)
	}
	// Sequenced, though Add says it failed.
	real := tl.seq.add
	tl.seq.mu.Lock()
	tl.seq.add = func(e *tessera.Entry) tessera.IndexFuture {
		f := real(e)
		return func() (tessera.Index, error) {
			if _, err := f(); err != nil {
				return tessera.Index{}, err
			}
			return tessera.Index{}, errors.New("the sequencing transaction's commit was not acknowledged")
		}
	}
	tl.seq.mu.Unlock()
	p := tl.projection("urn:p:unknown")
	if _, err := tl.Submit(ctx, p); !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("Submit with a failing Add = %v, want ErrOutcomeUnknown", err)
	}
	tl.seq.mu.Lock()
	tl.seq.add = real
	tl.seq.mu.Unlock()

	// However long the tree takes, the id stays held.
	deadline := time.Now().Add(missingAfter + time.Second)
	for time.Now().Before(deadline) {
		if _, err := tl.Submit(ctx, p); !errors.Is(err, ErrOutcomeUnknown) {
			t.Fatalf("resubmission while the tree does not hold the entry yet = %v, want ErrOutcomeUnknown (an id released now could be logged twice)", err)
		}
		if wm := tl.indexer.watermark(); wm > first.Index+1 {
			t.Fatalf("index watermark %d beyond the integrated size %d", wm, first.Index+1)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if tl.unsettled.len() != 1 {
		t.Fatalf("%d unsettled entries, want 1", tl.unsettled.len())
	}

	// Integrated: settled as logged.
	late.release()
	deadline = time.Now().Add(10 * time.Second)
	for tl.unsettled.len() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d entries still unsettled once the tree holds them", tl.unsettled.len())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := tl.Submit(ctx, p); !errors.As(err, &re) || re.FirstIndex != held.Index+1 {
		t.Errorf("resubmission once settled = %v, want a replay at %d", err, held.Index+1)
	}
	tl.waitIndexed(held.Index + 2)
	tl2 := tl.reopen()
	if _, err := tl2.Submit(ctx, p); !errors.As(err, &re) {
		t.Errorf("after a restart: %v, want a replay", err)
	}
}
