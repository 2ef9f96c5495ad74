package log

import (
	"cmp"
	"context"
	"errors"
	"slices"
)

// The lineage lookups below answer from the log as it stands, not only
// from the index: the index trails the log (by a few milliseconds, or for
// as long as it cannot write, as on a full disk), and an entry that was
// acknowledged must be found, and must count, at once. They overlay the
// index with the lineage entries sequenced but not yet indexed.
//
// The pending entries are read before the index: an entry leaves the
// pending set only after the index has committed it, so it is seen in one
// or the other (or both, which the overlay tolerates), never in neither.

// pendingView is a copy of the sequenced, not yet indexed lineage entries.
type pendingView struct {
	compactions []Entry
	tombstones  []Entry
}

func (l *Log) pendingLineage() pendingView {
	var v pendingView
	g := &l.lineage
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range g.compactions {
		if p.sequenced {
			v.compactions = append(v.compactions, p.entry)
		}
	}
	for _, p := range g.tombstones {
		if p.sequenced {
			v.tombstones = append(v.tombstones, p.entry)
		}
	}
	return v
}

// Compaction returns the state of compaction id.
func (l *Log) Compaction(ctx context.Context, id string) (*CompactionInfo, error) {
	v := l.pendingLineage()
	var c *CompactionInfo
	w, err := l.readIndexed(ctx, func() (err error) {
		c, err = l.index.Compaction(ctx, id)
		return err
	})
	var items []string // known only for a pending compaction
	if errors.Is(err, ErrNotFound) {
		for _, e := range v.compactions {
			if e.ID == id {
				c = pendingInfo(e)
				items, err = e.Items, nil
				break
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if err := l.overlay(ctx, v, c, items, w); err != nil {
		return nil, err
	}
	return c, nil
}

// CompactionsIncluding returns the compactions whose sources include item,
// in log order.
func (l *Log) CompactionsIncluding(ctx context.Context, item string) ([]*CompactionInfo, error) {
	v := l.pendingLineage()
	var cs []*CompactionInfo
	w, err := l.readIndexed(ctx, func() (err error) {
		cs, err = l.index.CompactionsIncluding(ctx, item)
		return err
	})
	if err != nil {
		return nil, err
	}
	return l.withPending(ctx, v, w, cs, func(e Entry) bool { return slices.Contains(e.Items, item) })
}

// CompactionsProducing returns the compactions whose compacted output is
// output, in log order.
func (l *Log) CompactionsProducing(ctx context.Context, output string) ([]*CompactionInfo, error) {
	v := l.pendingLineage()
	var cs []*CompactionInfo
	w, err := l.readIndexed(ctx, func() (err error) {
		cs, err = l.index.CompactionsProducing(ctx, output)
		return err
	})
	if err != nil {
		return nil, err
	}
	return l.withPending(ctx, v, w, cs, func(e Entry) bool { return e.Output == output })
}

// withPending adds to the indexed compactions cs the pending ones that
// match and are not among them, overlays each with the pending lineage v,
// and sorts them in log order. The indexed ones were read at watermark w
// (see readIndexed).
func (l *Log) withPending(ctx context.Context, v pendingView, w uint64, cs []*CompactionInfo, match func(Entry) bool) ([]*CompactionInfo, error) {
	for _, e := range v.compactions {
		if !match(e) || slices.ContainsFunc(cs, func(c *CompactionInfo) bool { return c.ID == e.ID }) {
			continue
		}
		cs = append(cs, pendingInfo(e))
	}
	for _, c := range cs {
		var items []string
		for _, e := range v.compactions {
			if e.ID == c.ID {
				items = e.Items
			}
		}
		if err := l.overlay(ctx, v, c, items, w); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(cs, func(a, b *CompactionInfo) int { return cmp.Compare(a.Index, b.Index) })
	return cs, nil
}

func pendingInfo(e Entry) *CompactionInfo {
	return &CompactionInfo{ID: e.ID, Index: e.Index, ManifestRoot: e.ManifestRoot, ItemCount: len(e.Items), Supersedes: e.Supersedes, OutputHash: e.Output}
}

// Tombstone returns the tombstone of item.
func (l *Log) Tombstone(ctx context.Context, item string) (*TombstoneInfo, error) {
	v := l.pendingLineage()
	t, err := l.index.Tombstone(ctx, item)
	if errors.Is(err, ErrNotFound) {
		for _, e := range v.tombstones {
			if e.Item == item {
				return &TombstoneInfo{ID: e.ID, Index: e.Index, Item: item, PurgedAt: e.PurgedAt}, nil
			}
		}
	}
	return t, err
}

// overlay applies the pending supersessions and tombstones to c. items are
// c's items when c itself is pending (nil when it is indexed).
func (l *Log) overlay(ctx context.Context, v pendingView, c *CompactionInfo, items []string, w uint64) error {
	if c.SupersededBy == "" {
		for _, e := range v.compactions {
			if e.Supersedes == c.ID {
				c.SupersededBy, c.SupersededAt = e.ID, e.Index
			}
		}
	}
	for _, t := range v.tombstones {
		if c.ErasedBy == "" && c.OutputHash != "" && t.Item == c.OutputHash {
			c.ErasedBy, c.ErasedAt = t.ID, t.Index
		}
		in := slices.Contains(items, t.Item)
		if items == nil {
			cs, err := l.index.CompactionsIncluding(ctx, t.Item)
			if err != nil {
				return err
			}
			in = slices.ContainsFunc(cs, func(x *CompactionInfo) bool { return x.ID == c.ID })
		}
		if !in {
			continue
		}
		if t.Index < w {
			continue // indexed before c was read, and counted in it
		}
		c.PurgedItems++
		if c.PurgedSinceAt == 0 || t.Index < c.PurgedSinceAt {
			c.PurgedSinceAt = t.Index
		}
	}
	return nil
}

// OpenObligations returns the open erasure obligations — every tombstoned
// item of every compaction neither superseded nor erased — ordered by compaction index
// then tombstone index, at most limit of them, and how many there are. Like
// the other lineage lookups it overlays the index with the entries
// sequenced but not yet indexed; the count can be off by the entries the
// index takes in while the call runs (milliseconds), the list cannot hold
// an obligation that is not open.
func (l *Log) OpenObligations(ctx context.Context, limit int) ([]Obligation, int, error) {
	v := l.pendingLineage()
	// Compactions a pending one supersedes: their obligations are
	// discharged, but the index still lists them; ask for as many more.
	// (superseded holds the erased ones too.)
	superseded := map[string]bool{}
	extra := 0
	for _, e := range v.compactions {
		if e.Supersedes == "" {
			continue
		}
		superseded[e.Supersedes] = true
		c, err := l.index.Compaction(ctx, e.Supersedes)
		switch {
		case err == nil && c.SupersededBy == "":
			extra += c.PurgedItems
		case err != nil && !errors.Is(err, ErrNotFound):
			return nil, 0, err
		}
	}
	// Compactions whose output a pending tombstone erases: discharged
	// too.
	for _, t := range v.tombstones {
		cs, err := l.index.CompactionsProducing(ctx, t.Item)
		if err != nil {
			return nil, 0, err
		}
		for _, c := range cs {
			if !superseded[c.ID] && c.SupersededBy == "" && c.ErasedBy == "" {
				superseded[c.ID] = true
				extra += c.PurgedItems
			}
		}
	}
	var obs []Obligation
	var total int
	w, err := l.readIndexed(ctx, func() (err error) {
		obs, total, err = l.index.OpenObligations(ctx, limit+extra)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	total -= extra
	out := obs[:0]
	for _, o := range obs {
		if !superseded[o.CompactionID] {
			out = append(out, o)
		}
	}
	// Pending tombstones open obligations on the compactions, indexed or
	// pending, that include their items.
	for _, t := range v.tombstones {
		if t.Index < w {
			continue // indexed before the index was read: it listed it
		}
		cs, err := l.CompactionsIncluding(ctx, t.Item)
		if err != nil {
			return nil, 0, err
		}
		for _, c := range cs {
			if c.SupersededBy != "" || c.ErasedBy != "" || superseded[c.ID] || c.Index > t.Index {
				continue
			}
			out = append(out, Obligation{Item: t.Item, TombstoneID: t.ID, TombstoneIndex: t.Index, PurgedAt: t.PurgedAt, CompactionID: c.ID, CompactionIndex: c.Index})
			total++
		}
	}
	slices.SortFunc(out, func(a, b Obligation) int {
		return cmp.Or(cmp.Compare(a.CompactionIndex, b.CompactionIndex), cmp.Compare(a.TombstoneIndex, b.TombstoneIndex))
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, max(total, len(out)), nil
}

// readIndexed runs read, a read of the index, between two readings of the
// index's watermark, until both agree, and returns that watermark: what
// read saw is then the index of exactly the entries below it, so a pending
// entry at or above it is not in what read saw, and one below it is. (The
// index applies entries in log order and a pending entry leaves the pending
// view only once applied.) After 100 reads that never agree, the watermark
// before the last is returned: an entry applied during that read can then
// be counted twice by an overlay.
func (l *Log) readIndexed(ctx context.Context, read func() error) (uint64, error) {
	for i := 0; ; i++ {
		w1, err := l.index.Watermark(ctx)
		if err != nil {
			return 0, err
		}
		if err := read(); err != nil {
			return w1, err
		}
		w2, err := l.index.Watermark(ctx)
		if err != nil {
			return 0, err
		}
		if w1 == w2 || i == 99 {
			return w1, nil
		}
	}
}
