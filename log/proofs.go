package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/memtrail/memtrail/internal/tlogfmt"
	"github.com/memtrail/memtrail/receipts"
	fmtlog "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/api"
	"github.com/transparency-dev/tessera/api/layout"
	"github.com/transparency-dev/tessera/client"
)

// ErrNotPublished is returned for an index or size beyond the latest
// published checkpoint.
var ErrNotPublished = errors.New("not yet covered by a published checkpoint")

// proofCache shares one proof builder per published checkpoint: its node
// cache makes the many proofs released by one checkpoint cheap.
type proofCache struct {
	mu   sync.Mutex
	size uint64
	pb   *client.ProofBuilder
}

// archiveCheckpoints records every newly published checkpoint in the
// checkpoint archive, so proofs can be given against any checkpoint the log
// has published, and keeps the tree size and checkpoint age metrics. A
// checkpoint published again at the same size (Tessera signs an unchanged
// tree again now and then) replaces the archived one only when it carries
// the witness quorum the archived one lacks: a cosigned checkpoint after a
// fail-open one, or after witnessing was turned on.
func (l *Log) archiveCheckpoints(ctx context.Context) {
	t := time.NewTicker(l.cfg.CheckpointInterval / 2)
	defer t.Stop()
	var last uint64
	archived := false  // whether last is a size already archived
	var lastRaw []byte // the latest checkpoint file seen, to tell new ones
	judged := false
	// Whether the archived checkpoint of size last lacks the quorum, and
	// the last checkpoint of that size judged not to replace it.
	lacksQuorum := false
	var notBetter []byte
	if size, raw, err := l.checkpoints.Latest(ctx); err == nil {
		last, lastRaw, archived = size, raw, true
		lacksQuorum = !l.MeetsQuorum(raw)
	}
	for first := true; ; first = false {
		// The first pass runs at once: a fresh log's size-0 checkpoint
		// is archived before anything can be appended.
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
		if size, err := l.reader.IntegratedSize(ctx); err == nil {
			l.Metrics.treeSize.Store(size)
		}
		raw, cp, err := l.Checkpoint(ctx)
		if err != nil {
			continue
		}
		l.Metrics.checkpointSeen(cp.Size)
		// The checkpoint the first pass finds was published before this
		// loop could see it (by an earlier run, which may have stopped
		// before archiving it, or as a fresh log's size-0 checkpoint):
		// it is judged, but not counted as newly published.
		if isNew := !first && !bytes.Equal(raw, lastRaw); isNew || !judged {
			l.checkpointPublished(raw, cp.Size, isNew)
			lastRaw, judged = raw, true
		}
		meets := true
		if archived && cp.Size == last {
			if !lacksQuorum || bytes.Equal(raw, notBetter) {
				continue
			}
			if meets = l.MeetsQuorum(raw); !meets {
				notBetter = raw
				continue
			}
		} else {
			meets = l.MeetsQuorum(raw)
		}
		if err := l.checkpoints.Put(ctx, cp.Size, raw); err != nil {
			// Tried again at the next pass.
			l.logger.Error("couldn't archive checkpoint", "size", cp.Size, "error", err)
			continue
		}
		last, archived, lacksQuorum, notBetter = cp.Size, true, !meets, nil
	}
}

// CheckpointAt returns the signed checkpoint the log published at size:
// the latest, or one from the checkpoint archive, whose signature is
// checked before it is returned.
func (l *Log) CheckpointAt(ctx context.Context, size uint64) ([]byte, error) {
	raw, cp, err := l.Checkpoint(ctx)
	if err == nil && cp.Size == size {
		return raw, nil
	}
	note, xerr := l.checkpoints.Get(ctx, size)
	if errors.Is(xerr, ErrNotFound) && err == nil {
		return nil, fmt.Errorf("no checkpoint of size %d was published: the log archives the checkpoints it publishes (GET /v1/checkpoints/{size}), and the latest is of size %d; use the size of one it published, or none for the latest: %w", size, cp.Size, ErrNotFound)
	}
	if xerr != nil {
		return nil, xerr
	}
	if c, _, _, err := fmtlog.ParseCheckpoint(note, l.origin, l.verifier); err != nil || c.Size != size {
		return nil, fmt.Errorf("the archived checkpoint of size %d does not verify under the log's key", size)
	}
	return note, nil
}

// Checkpoint returns the latest published checkpoint (with any witness
// cosignatures) and its parsed body.
func (l *Log) Checkpoint(ctx context.Context) ([]byte, *fmtlog.Checkpoint, error) {
	raw, err := l.reader.ReadCheckpoint(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("couldn't read checkpoint: %w", err)
	}
	cp, _, _, err := fmtlog.ParseCheckpoint(raw, l.origin, l.verifier)
	if err != nil {
		return nil, nil, fmt.Errorf("published checkpoint does not verify: %w", err)
	}
	return raw, cp, nil
}

func (l *Log) proofBuilder(ctx context.Context, size uint64, f func(pb *client.ProofBuilder) error) error {
	l.proofs.mu.Lock()
	defer l.proofs.mu.Unlock()
	if l.proofs.pb == nil || l.proofs.size != size {
		pb, err := client.NewProofBuilder(ctx, size, l.readTile)
		if err != nil {
			return fmt.Errorf("couldn't build proofs at size %d: %w", size, err)
		}
		l.proofs.pb, l.proofs.size = pb, size
	}
	err := f(l.proofs.pb)
	if err != nil && !errors.Is(err, ErrTileDamaged) && strings.Contains(err.Error(), ErrTileDamaged.Error()) {
		// Tessera's proof builder formats the fetch error with %v.
		err = fmt.Errorf("%w: %w", ErrTileDamaged, err)
	}
	return err
}

// InclusionProof returns the C2SP tlog-proof of the entry at index against
// the signed checkpoint cp (which must be one of this log's and cover it).
func (l *Log) InclusionProof(ctx context.Context, index uint64, cp []byte) ([]byte, error) {
	c, _, _, err := fmtlog.ParseCheckpoint(cp, l.origin, l.verifier)
	if err != nil {
		return nil, fmt.Errorf("checkpoint does not verify: %w", err)
	}
	if index >= c.Size {
		if n, err := l.reader.IntegratedSize(ctx); err == nil && index >= n {
			return nil, fmt.Errorf("entry %d does not exist: the log has %d entries (0 to %d): %w", index, n, int64(n)-1, ErrNotFound)
		}
		return nil, fmt.Errorf("entry %d is logged but the latest published checkpoint (size %d) does not cover it yet; a checkpoint normally follows within the checkpoint interval: %w", index, c.Size, ErrNotPublished)
	}
	var path [][]byte
	err = l.proofBuilder(ctx, c.Size, func(pb *client.ProofBuilder) error {
		var err error
		path, err = pb.InclusionProof(ctx, index)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("couldn't build inclusion proof: %w", err)
	}
	return tlogfmt.FormatProof(index, path, cp), nil
}

// LatestInclusionProof returns the tlog-proof of index against the latest
// published checkpoint.
func (l *Log) LatestInclusionProof(ctx context.Context, index uint64) ([]byte, error) {
	cp, _, err := l.Checkpoint(ctx)
	if err != nil {
		return nil, err
	}
	return l.InclusionProof(ctx, index, cp)
}

// ConsistencyProof returns the RFC 9162 consistency proof from size from
// to size to, which must not exceed the published size.
func (l *Log) ConsistencyProof(ctx context.Context, from, to uint64) ([][]byte, error) {
	_, c, err := l.Checkpoint(ctx)
	if err != nil {
		return nil, err
	}
	if from > to {
		return nil, fmt.Errorf("consistency from %d to %d: the first size must not exceed the second", from, to)
	}
	if to > c.Size {
		if n, err := l.reader.IntegratedSize(ctx); err == nil && to > n {
			return nil, fmt.Errorf("size %d: the log has only %d entries: %w", to, n, ErrNotFound)
		}
		return nil, fmt.Errorf("size %d: the log has that many entries but the latest published checkpoint is of size %d; a checkpoint normally follows within the checkpoint interval: %w", to, c.Size, ErrNotPublished)
	}
	var path [][]byte
	err = l.proofBuilder(ctx, c.Size, func(pb *client.ProofBuilder) error {
		var err error
		path, err = pb.ConsistencyProof(ctx, from, to)
		return err
	})
	return path, err
}

// WaitPublished blocks until a published checkpoint covers index and
// returns that checkpoint.
//
// Tessera's awaiter notices a cancelled context only at its next poll, so
// the wait runs aside and ctx is honoured at once.
func (l *Log) WaitPublished(ctx context.Context, index uint64) ([]byte, error) {
	type result struct {
		cp  []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		_, cp, err := l.awaiter.Await(ctx, func() (tessera.Index, error) { return tessera.Index{Index: index}, nil })
		ch <- result{cp, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("couldn't wait for publication: %w", r.err)
		}
		return r.cp, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("couldn't wait for publication: %w", ctx.Err())
	}
}

// LookupID returns the index where id was logged for kind: from the index
// or, for an entry sequenced but not yet indexed (the index trails the log,
// and cannot take entries at all while the disk is full), from the claim
// that logged it. It returns an error wrapping ErrNotFound otherwise.
func (l *Log) LookupID(ctx context.Context, kind receipts.Kind, id string) (uint64, error) {
	idx, err := l.index.LookupID(ctx, kind, id)
	if errors.Is(err, ErrNotFound) {
		if at, ok := l.claims.loggedAt(claimKey{kind: kind, id: id}); ok {
			return at, nil
		}
	}
	return idx, err
}

// ReadLeaf returns the logged bytes of the entry at index.
func (l *Log) ReadLeaf(ctx context.Context, index uint64) ([]byte, error) {
	size, err := l.reader.IntegratedSize(ctx)
	if err != nil {
		return nil, fmt.Errorf("couldn't read tree size: %w", err)
	}
	if index >= size {
		return nil, fmt.Errorf("entry %d: %w", index, ErrNotFound)
	}
	bundle := index / layout.EntryBundleWidth
	raw, err := l.reader.ReadEntryBundle(ctx, bundle, layout.PartialTileSize(0, bundle, size))
	if err != nil {
		return nil, fmt.Errorf("couldn't read entry bundle %d: %w", bundle, err)
	}
	var b api.EntryBundle
	if err := b.UnmarshalText(raw); err != nil {
		return nil, fmt.Errorf("entry bundle %d is malformed: %w", bundle, err)
	}
	i := index % layout.EntryBundleWidth
	if uint64(len(b.Entries)) <= i {
		return nil, fmt.Errorf("entry bundle %d lacks entry %d", bundle, i)
	}
	return b.Entries[i], nil
}
