package log

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memtrail/memtrail/internal/tlogfmt"
	"github.com/memtrail/memtrail/receipts"
	"github.com/transparency-dev/tessera/api"
	"github.com/transparency-dev/tessera/api/layout"
)

// The indexer applies sequenced entries to the index in log order. Entries
// sequenced by this process arrive in memory (add); entries it did not see
// (after a restart, or if one is ever missing for long) are read back from
// the tiles, so recovery and steady state share one path: the index always
// advances by whole, contiguous runs from its watermark. It applies only
// integrated entries: the watermark never passes the integrated size, so
// the index holds nothing the log cannot give back, and the settling of
// unknown outcomes can rely on it (see unsettled). The POSIX driver
// integrates within Add, so an entry is integrated by the time it arrives;
// with a driver that integrates later, entries wait in memory until the
// tree holds them.
type indexer struct {
	l *Log

	mu      sync.Mutex
	next    uint64                 // the watermark: entries below it are applied
	pending map[uint64]pendingItem // sequenced, not yet applied
	since   time.Time              // when next was first found missing
	// integrated is an integrated size read from the log: entries below
	// it may be applied.
	integrated uint64
	wake       chan struct{}
	idle       *sync.Cond // broadcast after each apply
	err        error      // last apply failure, for metrics and drain
}

type pendingItem struct {
	e  Entry
	pe *pendingEntry
}

// maxApply bounds one index transaction.
const maxApply = 4096

// missingAfter is how long the indexer waits for an entry to arrive in
// memory before reading it from the tiles.
const missingAfter = 2 * time.Second

func newIndexer(l *Log, watermark uint64) *indexer {
	ix := &indexer{l: l, next: watermark, pending: map[uint64]pendingItem{}, wake: make(chan struct{}, 1)}
	ix.idle = sync.NewCond(&ix.mu)
	return ix
}

func (ix *indexer) add(e Entry, pe *pendingEntry) {
	ix.mu.Lock()
	if e.Index < ix.next {
		// Already applied from the tiles while it was on its way here.
		ix.mu.Unlock()
		if pe != nil {
			ix.l.lineage.mu.Lock()
			ix.l.lineage.remove(pe)
			ix.l.lineage.mu.Unlock()
		}
		return
	}
	ix.pending[e.Index] = pendingItem{e: e, pe: pe}
	ix.mu.Unlock()
	select {
	case ix.wake <- struct{}{}:
	default:
	}
}

func (ix *indexer) watermark() uint64 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.next
}

func (ix *indexer) run(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ix.wake:
		case <-t.C:
		}
		for ix.step(ctx) {
		}
		ix.l.settleUnknowns(ctx)
	}
}

// step applies one run of entries; it reports whether there may be more.
func (ix *indexer) step(ctx context.Context) bool {
	ix.mu.Lock()
	first := ix.next
	var run []pendingItem
	for i := first; len(run) < maxApply; i++ {
		p, ok := ix.pending[i]
		if !ok {
			break
		}
		run = append(run, p)
	}
	if len(run) > 0 && first+uint64(len(run)) > ix.integrated {
		ix.mu.Unlock()
		size, err := ix.l.reader.IntegratedSize(ctx)
		ix.mu.Lock()
		if err == nil && size > ix.integrated {
			ix.integrated = size
		}
		if first+uint64(len(run)) > ix.integrated {
			// Sequenced but not integrated yet: it waits.
			run = run[:min(uint64(len(run)), ix.integrated-min(ix.integrated, first))]
		}
	}
	if len(run) == 0 {
		// An entry missing below the ones held, or one whose sequencing
		// failed with an unknown outcome (it may be in the log though no
		// entry follows it), is read from the log once it is late.
		missing := len(ix.pending) > 0 || ix.l.unsettled.len() > 0
		if !missing {
			ix.since = time.Time{}
			ix.mu.Unlock()
			return false
		}
		if ix.since.IsZero() {
			ix.since = time.Now()
		}
		stale := time.Since(ix.since) > missingAfter
		ix.mu.Unlock()
		if !stale {
			return false
		}
		// An entry below the ones we hold never arrived: read it.
		size, err := ix.l.reader.IntegratedSize(ctx)
		if err != nil || size <= first {
			return false
		}
		if err := ix.catchUp(ctx, min(size, first+maxApply)); err != nil {
			ix.l.logger.Error("couldn't index entries from the log", "from", first, "error", err)
			return false
		}
		return true
	}
	ix.mu.Unlock()
	return ix.apply(ctx, first, run)
}

func (ix *indexer) apply(ctx context.Context, first uint64, run []pendingItem) bool {
	entries := make([]Entry, len(run))
	for i := range run {
		entries[i] = run[i].e
	}
	if err := ix.l.index.Apply(ctx, first, entries); err != nil {
		// The entries are logged; while the index cannot take them their
		// claims stay in memory, and a storage failure stops submissions.
		ix.l.storage.failed(err)
		ix.mu.Lock()
		ix.err = err
		ix.mu.Unlock()
		ix.l.Metrics.indexErrors.Add(1)
		ix.l.logger.Error("couldn't apply entries to the index", "first", first, "n", len(entries), "error", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
		return false
	}
	keys := make([]claimKey, len(run))
	for i := range run {
		keys[i] = claimKey{kind: run[i].e.Kind, id: run[i].e.ID}
		if ix.l.seen != nil {
			ix.l.seen.add(run[i].e.Kind, run[i].e.ID)
		}
	}
	ix.l.claims.forget(keys)
	// Retire the pending state of the run: the handles it carries, and any
	// that arrived in memory while it was read from the tiles.
	var retired []*pendingEntry
	ix.mu.Lock()
	for i := range run {
		if run[i].pe != nil {
			retired = append(retired, run[i].pe)
		}
		if p, ok := ix.pending[run[i].e.Index]; ok {
			if p.pe != nil && p.pe != run[i].pe {
				retired = append(retired, p.pe)
			}
			delete(ix.pending, run[i].e.Index)
		}
	}
	ix.next = first + uint64(len(run))
	ix.since = time.Time{}
	ix.err = nil
	ix.idle.Broadcast()
	ix.mu.Unlock()
	ix.l.lineage.mu.Lock()
	for _, pe := range retired {
		ix.l.lineage.remove(pe)
	}
	ix.l.lineage.mu.Unlock()
	ix.l.Metrics.indexed.Store(first + uint64(len(run)))
	return true
}

// catchUp applies the entries from the watermark up to size, reading them
// from the tiles.
func (ix *indexer) catchUp(ctx context.Context, size uint64) error {
	ix.mu.Lock()
	ix.integrated = max(ix.integrated, size)
	ix.mu.Unlock()
	for {
		first := ix.watermark()
		if first >= size {
			return nil
		}
		n := min(size-first, maxApply)
		entries, err := ix.l.readEntries(ctx, first, n, size)
		if err != nil {
			return err
		}
		// Entries that did arrive in memory keep their lineage handle, so
		// applying them from the tiles also retires their pending state.
		run := make([]pendingItem, len(entries))
		ix.mu.Lock()
		for i := range entries {
			run[i] = pendingItem{e: entries[i], pe: ix.pending[entries[i].Index].pe}
		}
		ix.mu.Unlock()
		if !ix.apply(ctx, first, run) {
			ix.mu.Lock()
			err := ix.err
			ix.mu.Unlock()
			return err
		}
	}
}

// drain waits until every entry handed to the indexer is applied.
func (ix *indexer) drain(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		ix.mu.Lock()
		n := len(ix.pending)
		err := ix.err
		ix.mu.Unlock()
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil || ix.l.storage.unavailable() != nil && err != nil {
			// (With the storage unavailable, waiting is futile.)
			return fmt.Errorf("couldn't index %d entries before closing (they will be indexed from the log at the next start): %v", n, err)
		}
		select {
		case ix.wake <- struct{}{}:
		default:
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// bundleReader reads entry bundles.
type bundleReader interface {
	ReadEntryBundle(ctx context.Context, index uint64, p uint8) ([]byte, error)
}

// readEntries reads n entries from index first out of a tree of size
// treeSize and turns them into index entries.
func (l *Log) readEntries(ctx context.Context, first, n, treeSize uint64) ([]Entry, error) {
	return l.readEntriesFrom(ctx, l.reader, first, n, treeSize)
}

func (l *Log) readEntriesFrom(ctx context.Context, reader bundleReader, first, n, treeSize uint64) ([]Entry, error) {
	leaves := make([][]byte, 0, n)
	for ri := range layout.Range(first, n, treeSize) {
		raw, err := reader.ReadEntryBundle(ctx, ri.Index, ri.Partial)
		if err != nil {
			return nil, fmt.Errorf("couldn't read entry bundle %d: %w", ri.Index, err)
		}
		var b api.EntryBundle
		if err := b.UnmarshalText(raw); err != nil {
			return nil, fmt.Errorf("entry bundle %d is malformed: %w", ri.Index, err)
		}
		if uint(len(b.Entries)) < ri.First+ri.N {
			return nil, fmt.Errorf("entry bundle %d has %d entries, want at least %d", ri.Index, len(b.Entries), ri.First+ri.N)
		}
		leaves = append(leaves, b.Entries[ri.First:ri.First+ri.N]...)
	}
	// Parsing is the cost: spread it over the cores.
	out := make([]Entry, len(leaves))
	errs := make([]error, runtime.GOMAXPROCS(0))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(leaves) || errs[w] != nil {
					return
				}
				out[i], errs[w] = l.entryFromLeaf(ctx, first+uint64(i), leaves[i])
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// entryFromLeaf parses a logged leaf into an index entry.
func (l *Log) entryFromLeaf(ctx context.Context, idx uint64, leaf []byte) (Entry, error) {
	r, err := receipts.ParseReceipt(leaf)
	if err != nil {
		return Entry{}, fmt.Errorf("entry %d is not a receipt: %w", idx, err)
	}
	e := Entry{Index: idx, Kind: r.Kind(), ID: r.ID(), LeafHash: tlogfmt.LeafHash(leaf)}
	switch rr := r.(type) {
	case *receipts.Compaction:
		raw, err := l.manifests.Get(ctx, rr.SourceItemsMerkleRoot)
		if err != nil {
			return Entry{}, fmt.Errorf("entry %d: compaction %s: %w", idx, rr.EventID, err)
		}
		mf, err := receipts.ParseManifest(raw)
		if err != nil {
			return Entry{}, fmt.Errorf("entry %d: manifest of compaction %s: %w", idx, rr.EventID, err)
		}
		e.ManifestRoot = rr.SourceItemsMerkleRoot
		e.Items = manifestItems(mf)
		e.Supersedes = rr.Supersedes
		e.Output = rr.CompactedOutputHash
	case *receipts.Tombstone:
		e.Item = rr.ItemDigest
		e.PurgedAt = rr.PurgedAt
	}
	return e, nil
}
