package log

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/memtrail/memtrail/receipts"
	"github.com/transparency-dev/tessera"
)

// Accepted describes a logged receipt.
type Accepted struct {
	Index    uint64
	LeafHash [32]byte
	Kind     receipts.Kind
	ID       string
}

// ReplayError refuses the second submission of a single-use id. It names
// the index where the id was first logged.
type ReplayError struct {
	Kind       receipts.Kind
	ID         string
	FirstIndex uint64
}

func (e *ReplayError) Error() string {
	return fmt.Sprintf("%s: %s %q was already logged at index %d", e.Code(), e.Kind, e.ID, e.FirstIndex)
}

// Code returns projection_replay, compaction_replay or tombstone_replay.
func (e *ReplayError) Code() receipts.Code {
	switch e.Kind {
	case receipts.KindCompaction:
		return receipts.CodeCompactionReplay
	case receipts.KindTombstone:
		return receipts.CodeTombstoneReplay
	}
	return receipts.CodeProjectionReplay
}

// Unwrap lets receipts.ErrorCode see the code.
func (e *ReplayError) Unwrap() error {
	return &receipts.Error{Code: e.Code(), Reason: fmt.Sprintf("already logged at index %d", e.FirstIndex)}
}

// ErrOutcomeUnknown is returned when sequencing failed in a way that does
// not say whether the entry was logged. The id (and, for lineage entries,
// what they decide) stays held: a resubmission is refused with this error
// until the index settles whether the entry was logged (see unsettled),
// normally within seconds.
var ErrOutcomeUnknown = errors.New("the outcome of sequencing is unknown")

// ErrPushback is returned when the log is overloaded; retry later.
var ErrPushback = tessera.ErrPushback

// Submit verifies a submission and, if everything holds, logs it. It
// returns once the entry is sequenced and durable. Refusals are
// *receipts.Error or *ReplayError; overload is ErrPushback; anything else is
// an internal failure.
func (l *Log) Submit(ctx context.Context, sub *receipts.Submission) (*Accepted, error) {
	return l.SubmitOrdered(ctx, sub, nil, nil)
}

// SubmitOrdered is Submit for submissions whose lineage decisions must be
// taken in a given order, such as the lines of one batch. A compaction or
// tombstone waits until after is closed before its lineage decision; decided
// (if not nil) is closed once this submission's decision is taken and, if it
// was allowed, the entry is queued for sequencing — or once it is refused.
// Projection records take no lineage decision: they close decided once after
// is closed, without waiting for it themselves.
func (l *Log) SubmitOrdered(ctx context.Context, sub *receipts.Submission, after <-chan struct{}, decided chan struct{}) (*Accepted, error) {
	start := time.Now()
	o := &order{after: after, decided: decided}
	if sub.Receipt.Kind() == receipts.KindProjection {
		o.forward()
	}
	// A submission refused before its decision passes the chain on only
	// once the previous decision is taken, so the order holds past it.
	defer o.forward()
	acc, err := l.submit(ctx, sub, o)
	l.Metrics.observeSubmit(sub.Receipt.Kind(), err, time.Since(start))
	return acc, err
}

// order carries a submission's place in a chain of lineage decisions.
type order struct {
	after   <-chan struct{}
	decided chan struct{}
	closed  bool
}

// wait blocks until the previous decision is taken.
func (o *order) wait(ctx context.Context) error {
	if o.after == nil {
		return nil
	}
	select {
	case <-o.after:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close signals this submission's decision (once).
func (o *order) close() {
	if o.decided != nil && !o.closed {
		o.closed = true
		close(o.decided)
	}
}

// forward passes the previous decision's signal on without waiting for it.
func (o *order) forward() {
	if o.decided != nil && !o.closed {
		o.closed = true
		PassOrder(o.after, o.decided)
	}
}

// PassOrder passes the order of [Log.SubmitOrdered] on for a submission that
// is not submitted (one that does not parse, say): it closes decided (if not
// nil) once after is closed, without blocking.
func PassOrder(after <-chan struct{}, decided chan struct{}) {
	if decided == nil {
		return
	}
	if after == nil {
		close(decided)
		return
	}
	select {
	case <-after:
		close(decided)
		return
	default:
	}
	go func() {
		<-after
		close(decided)
	}()
}

func (l *Log) submit(ctx context.Context, sub *receipts.Submission, o *order) (*Accepted, error) {
	if err := l.storage.unavailable(); err != nil {
		return nil, err
	}
	// Verification is CPU-bound: at most one per core runs at a time, so
	// however many submissions wait, few goroutines are runnable and
	// Tessera's sequencer is not starved of CPU behind them.
	select {
	case l.cpu <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	trust := l.trust.Load()
	err := l.verify(sub, trust)
	<-l.cpu
	if err != nil {
		if spentAnyway(err) {
			// The id is spent whatever the record's age: a retry that
			// comes late learns where its record is, not that it is stale.
			if idx, lerr := l.LookupID(ctx, sub.Receipt.Kind(), sub.Receipt.ID()); lerr == nil {
				return nil, &ReplayError{Kind: sub.Receipt.Kind(), ID: sub.Receipt.ID(), FirstIndex: idx}
			}
		}
		return nil, err
	}
	r := sub.Receipt
	key := claimKey{kind: r.Kind(), id: r.ID()}
	for {
		cl, owner := l.claims.acquire(key)
		if !owner {
			select {
			case <-cl.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if cl.err == nil {
				return nil, &ReplayError{Kind: key.kind, ID: key.id, FirstIndex: cl.idx}
			}
			if errors.Is(cl.err, ErrOutcomeUnknown) {
				return nil, fmt.Errorf("%w: an earlier submission of %s %q failed in sequencing and may be in the log; the id is held until the index settles whether it was logged, normally within seconds", ErrOutcomeUnknown, key.kind, key.id)
			}
			continue // the earlier submission failed; this one may go ahead
		}
		if l.seen != nil && !l.seen.mayContain(key.kind, key.id) {
			// Never indexed, and not claimed: new.
			acc, err := l.append(ctx, sub, o, trust)
			if err != nil {
				l.claims.resolveFailed(key, cl, err)
				return nil, err
			}
			l.claims.logged(cl, acc.Index)
			return acc, nil
		}
		idx, err := l.index.LookupID(ctx, key.kind, key.id)
		if err == nil {
			l.claims.found(key, cl, idx)
			return nil, &ReplayError{Kind: key.kind, ID: key.id, FirstIndex: idx}
		}
		if !errors.Is(err, ErrNotFound) {
			l.claims.failed(key, cl, err)
			return nil, err
		}
		acc, err := l.append(ctx, sub, o, trust)
		if err != nil {
			l.claims.resolveFailed(key, cl, err)
			return nil, err
		}
		l.claims.logged(cl, acc.Index)
		return acc, nil
	}
}

// spentAnyway reports whether a refusal is only about time — the record's
// age or the clock — found after its signature verified. Such a refusal of
// an id that is already logged is answered as the replay it also is.
func spentAnyway(err error) bool {
	switch receipts.ErrorCode(err) {
	case receipts.CodeTrustSnapshotStale, receipts.CodeRecordStale, receipts.CodeRecordFromFuture:
		return true
	}
	return false
}

// verify checks everything about a submission that needs no log state.
func (l *Log) verify(sub *receipts.Submission, t *receipts.Trust) error {
	now := l.cfg.Now()
	f := t.Freshness
	leaf := sub.Receipt.Canonical()
	if len(leaf) > receipts.MaxLeafSize {
		return refusal(receipts.CodeTooLarge, "", "canonical receipt is %d bytes; a log entry is at most %d", len(leaf), receipts.MaxLeafSize)
	}
	switch r := sub.Receipt.(type) {
	case *receipts.ProjectionRecord:
		if err := receipts.VerifyProjectionSignature(r, t.Adapters, now); err != nil {
			return err
		}
		return checkProjectionFreshness(r, now, f)
	case *receipts.Compaction:
		if sub.Manifest == nil {
			return refusal(receipts.CodeManifestInvalid, "manifest", "a compaction is logged only with its source manifest")
		}
		if err := t.VerifyCompaction(r, now); err != nil {
			return err
		}
		if _, err := receipts.ParseBloomFilter(r.TombstoneBloomFilterB64); err != nil {
			return err
		}
		return sub.Manifest.CheckAgainst(r, t.Lattice)
	case *receipts.Tombstone:
		if err := t.VerifyTombstone(r, now); err != nil {
			return err
		}
		if r.PurgedTime().After(now.Add(f.MaxClockSkew)) {
			return refusal(receipts.CodeRecordFromFuture, "purged_at", "is later than now plus the allowed clock skew")
		}
		return nil
	}
	return fmt.Errorf("log: unknown receipt type %T", sub.Receipt)
}

// checkProjectionFreshness applies the freshness policy at ingest: the
// trust evaluation and the record must be recent, neither from the future
// beyond the allowed clock skew, and the trust evaluation no longer before
// created_at than the trust age allowed.
func checkProjectionFreshness(r *receipts.ProjectionRecord, now time.Time, f receipts.Freshness) error {
	te := r.SelectionContext.TrustEvaluatedAt
	switch {
	case te.After(now.Add(f.MaxClockSkew)):
		return refusal(receipts.CodeRecordFromFuture, "selection_context.trust_evaluated_at", "is later than now plus the allowed clock skew (%s)", f.MaxClockSkew)
	case r.CreatedAt.After(now.Add(f.MaxClockSkew)):
		return refusal(receipts.CodeRecordFromFuture, "created_at", "is later than now plus the allowed clock skew (%s)", f.MaxClockSkew)
	case now.Sub(te) > f.MaxTrustAge:
		return refusal(receipts.CodeTrustSnapshotStale, "selection_context.trust_evaluated_at", "trust was evaluated %s ago; at most %s is allowed", now.Sub(te).Round(time.Second), f.MaxTrustAge)
	case r.CreatedAt.Sub(te) > f.MaxTrustAge:
		// Draft -01 section 4.1 bounds the interval between the trust
		// evaluation and created_at too, whatever the time of ingest.
		return refusal(receipts.CodeTrustSnapshotStale, "selection_context.trust_evaluated_at", "trust was evaluated %s before created_at; at most %s is allowed", r.CreatedAt.Sub(te), f.MaxTrustAge)
	case now.Sub(r.CreatedAt) > f.MaxProjectionAge:
		return refusal(receipts.CodeRecordStale, "created_at", "record is %s old; at most %s is allowed", now.Sub(r.CreatedAt).Round(time.Second), f.MaxProjectionAge)
	}
	return nil
}

// append logs a verified submission whose id this call owns.
func (l *Log) append(ctx context.Context, sub *receipts.Submission, o *order, verifiedWith *receipts.Trust) (*Accepted, error) {
	r := sub.Receipt
	entry := tessera.NewEntry(r.Canonical())
	e := Entry{Kind: r.Kind(), ID: r.ID(), LeafHash: [32]byte(entry.LeafHash())}
	// The outcome of an Add must be known whatever the caller does, so
	// the claim is always resolved: sequencing ignores cancellation.
	var pe *pendingEntry
	var future tessera.IndexFuture
	switch rr := r.(type) {
	case *receipts.ProjectionRecord:
		future = l.seq.enqueue(entry)
	case *receipts.Compaction:
		e.ManifestRoot = rr.SourceItemsMerkleRoot
		e.Items = manifestItems(sub.Manifest)
		e.Supersedes = rr.Supersedes
		e.Output = rr.CompactedOutputHash
		var err error
		pe, future, err = l.appendLineage(ctx, e, entry, o, func() error {
			if err := l.stillTrusted(rr, verifiedWith); err != nil {
				return err
			}
			if err := l.decideCompaction(ctx, rr, sub.Manifest); err != nil {
				return err
			}
			// Stored (and synced) before the entry can be sequenced, so
			// every logged compaction has its manifest.
			if err := l.manifests.Put(ctx, sub.Manifest.Root(), sub.Manifest.Canonical()); err != nil {
				return l.storage.failed(fmt.Errorf("couldn't store manifest: %w", err))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	case *receipts.Tombstone:
		e.Item = rr.ItemDigest
		e.PurgedAt = rr.PurgedAt
		var err error
		pe, future, err = l.appendLineage(ctx, e, entry, o, func() error {
			if err := l.stillTrusted(rr, verifiedWith); err != nil {
				return err
			}
			return l.decideTombstone(ctx, rr)
		})
		if err != nil {
			return nil, err
		}
	}
	idx, err := future()
	if err != nil {
		if errors.Is(err, tessera.ErrPushback) {
			// Refused before sequencing: nothing was written.
			if pe != nil {
				l.lineage.mu.Lock()
				l.lineage.remove(pe)
				l.lineage.mu.Unlock()
				close(pe.done)
			}
			l.Metrics.pushback.Add(1)
			return nil, fmt.Errorf("log is overloaded: %w", ErrPushback)
		}
		// Any other failure leaves the outcome unknown: the entry may be
		// in the tree. Its id and lineage stay held, so nothing can be
		// logged that would contradict it.
		l.Metrics.outcomeUnknown.Add(1)
		if pe != nil {
			l.lineage.mu.Lock()
			l.lineage.markUnknown(pe)
			l.lineage.mu.Unlock()
			close(pe.done)
		}
		l.unsettled.add(claimKey{kind: e.Kind, id: e.ID}, pe)
		l.logger.Error("sequencing failed with an unknown outcome; the id stays held until the index settles it", "kind", e.Kind, "id", e.ID, "error", err)
		return nil, fmt.Errorf("%w: %w", ErrOutcomeUnknown, l.storage.failed(fmt.Errorf("couldn't sequence entry: %w", err)))
	}
	e.Index = idx.Index
	if pe != nil {
		l.lineage.mu.Lock()
		l.lineage.sequenced(pe, idx.Index)
		l.lineage.mu.Unlock()
		close(pe.done)
	}
	l.indexer.add(e, pe)
	return &Accepted{Index: idx.Index, LeafHash: e.LeafHash, Kind: e.Kind, ID: e.ID}, nil
}

// stillTrusted checks a compaction's or tombstone's key again, under the
// lineage lock, when the trust file was reloaded since the receipt was
// verified: lineage entries may wait in line order for long (as long as
// the earlier lines of a batch take), and a key revoked meanwhile must not
// get its entry logged after entries submitted once the revocation took
// effect.
func (l *Log) stillTrusted(r receipts.Receipt, verifiedWith *receipts.Trust) error {
	t := l.trust.Load()
	if t == verifiedWith {
		return nil
	}
	switch rr := r.(type) {
	case *receipts.Compaction:
		return t.VerifyCompaction(rr, l.cfg.Now())
	case *receipts.Tombstone:
		return t.VerifyTombstone(rr, l.cfg.Now())
	}
	return nil
}

// appendLineage makes a lineage decision and, if it allows the entry,
// registers it as pending and hands it to the sequencer, all under the
// lineage lock, so that the log's order is the order of decisions.
func (l *Log) appendLineage(ctx context.Context, e Entry, entry *tessera.Entry, o *order, decide func() error) (*pendingEntry, tessera.IndexFuture, error) {
	if err := o.wait(ctx); err != nil {
		return nil, nil, err
	}
	for {
		l.lineage.mu.Lock()
		err := decide()
		var w errWait
		if errors.As(err, &w) {
			l.lineage.mu.Unlock()
			select {
			case <-w.ch:
				continue
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
		if err != nil {
			l.lineage.mu.Unlock()
			return nil, nil, err
		}
		pe := &pendingEntry{entry: e, done: make(chan struct{})}
		l.lineage.add(pe)
		future := l.seq.enqueue(entry)
		l.lineage.mu.Unlock()
		o.close()
		return pe, future, nil
	}
}

func isPushback(err error) bool { return errors.Is(err, tessera.ErrPushback) }
