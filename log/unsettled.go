package log

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// unsettled tracks the entries whose sequencing failed without saying
// whether they were logged (ErrOutcomeUnknown). Their ids and lineage stay
// held until the log settles the question.
//
// It always can, on any driver, and only against the integrated tree. The
// driver's contract (store.Driver) seals a failed Add's fate when its
// future resolves: if the entry was sequenced at all, its index is below
// the NextIndex read after that, and nothing sequences it later. So once
// the integrated tree reaches that NextIndex, and the index has applied
// every entry below it (the indexer applies integrated entries only), the
// entry is in the index if and only if it was logged: found, it is a replay
// like any other; not found, its id and lineage are released and it may be
// submitted again. Neither what the failed Add returned nor the tree size
// at the time of the failure settles anything: with a driver that
// integrates after Add (Tessera's AWS driver), an entry sequenced by a
// failed Add is integrated later, and an id released against a tree that
// did not hold it yet could be logged twice.
type unsettled struct {
	mu   sync.Mutex
	list []*unsettledEntry
}

type unsettledEntry struct {
	key      claimKey
	pe       *pendingEntry // nil for projection records
	settleAt uint64        // NextIndex read after the failure
	sized    bool          // settleAt is valid
}

func (u *unsettled) add(k claimKey, pe *pendingEntry) {
	u.mu.Lock()
	u.list = append(u.list, &unsettledEntry{key: k, pe: pe})
	u.mu.Unlock()
}

func (u *unsettled) len() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.list)
}

// settleUnknowns settles what it can of the unsettled entries; the indexer
// calls it after each pass.
func (l *Log) settleUnknowns(ctx context.Context) {
	if l.settlePaused.Load() {
		return
	}
	u := &l.unsettled
	u.mu.Lock()
	if len(u.list) == 0 {
		u.mu.Unlock()
		return
	}
	var unsized []*unsettledEntry
	for _, e := range u.list {
		if !e.sized {
			unsized = append(unsized, e)
		}
	}
	u.mu.Unlock()
	if len(unsized) > 0 {
		// Every entry in unsized failed before this read began.
		size, err := l.reader.NextIndex(ctx)
		if err != nil {
			return
		}
		u.mu.Lock()
		for _, e := range unsized {
			e.settleAt, e.sized = size, true
		}
		u.mu.Unlock()
	}
	// The indexer's watermark never passes the integrated size.
	wm := l.indexer.watermark()
	u.mu.Lock()
	var ready []*unsettledEntry
	for _, e := range u.list {
		if e.sized && e.settleAt <= wm {
			ready = append(ready, e)
		}
	}
	u.mu.Unlock()
	// Entries stay listed until settled, so len counts them throughout.
	settled := map[*unsettledEntry]bool{}
	for _, e := range ready {
		_, err := l.index.LookupID(ctx, e.key.kind, e.key.id)
		switch {
		case err == nil:
			// Logged after all: the index holds it, so the claim was
			// forgotten when it was applied; retire its lineage entry.
			l.logger.Info("an entry whose sequencing failed is in the log", "kind", e.key.kind, "id", e.key.id)
		case errors.Is(err, ErrNotFound):
			if !l.claims.releaseUnknown(e.key) {
				continue // its submitter has not resolved the claim yet
			}
			l.logger.Info("an entry whose sequencing failed is not in the log; its id is released", "kind", e.key.kind, "id", e.key.id)
		default:
			continue
		}
		if e.pe != nil {
			l.lineage.mu.Lock()
			l.lineage.remove(e.pe)
			l.lineage.mu.Unlock()
		}
		l.Metrics.outcomeSettled.Add(1)
		settled[e] = true
	}
	if len(settled) > 0 {
		u.mu.Lock()
		u.list = slices.DeleteFunc(u.list, func(e *unsettledEntry) bool { return settled[e] })
		u.mu.Unlock()
	}
}
