package log

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/memtrail/memtrail/receipts"
)

// lineage holds the lineage entries (compactions and tombstones) that were
// accepted but are not yet in the index, and the lock under which lineage
// decisions are made and appended.
type lineage struct {
	mu           sync.Mutex
	compactions  map[string]*pendingEntry // by compaction_event_id
	supersededBy map[string]*pendingEntry // superseded compaction id → its superseder
	tombstones   map[string]*pendingEntry // by purged item digest

	// unsequenced maps a digest to the pending compactions that include
	// it as an item, or produce it as their output, and have no index yet.
	// Tessera may sequence two batches in either order, so a tombstone is
	// not enqueued until every compaction accepted before it that holds or
	// produced its digest has an index: otherwise that compaction could
	// land after the purge.
	unsequenced map[string][]*pendingEntry
}

// A pendingEntry is a lineage entry between its acceptance and its arrival
// in the index. Fields other than done are guarded by lineage.mu.
type pendingEntry struct {
	entry     Entry
	sequenced bool          // entry.Index is valid
	unknown   bool          // sequencing failed without saying whether it was logged
	done      chan struct{} // closed once sequenced or failed
}

func (g *lineage) init() {
	g.compactions = map[string]*pendingEntry{}
	g.supersededBy = map[string]*pendingEntry{}
	g.tombstones = map[string]*pendingEntry{}
	g.unsequenced = map[string][]*pendingEntry{}
}

// add registers p (g.mu held).
func (g *lineage) add(p *pendingEntry) {
	switch p.entry.Kind {
	case receipts.KindCompaction:
		g.compactions[p.entry.ID] = p
		if p.entry.Supersedes != "" {
			g.supersededBy[p.entry.Supersedes] = p
		}
		for _, it := range lineageDigests(&p.entry) {
			g.unsequenced[it] = append(g.unsequenced[it], p)
		}
	case receipts.KindTombstone:
		g.tombstones[p.entry.Item] = p
	}
}

// markUnknown holds p after a sequencing failure that does not say
// whether it was logged (g.mu held).
func (g *lineage) markUnknown(p *pendingEntry) {
	p.unknown = true
	g.unlinkItems(p)
}

// sequenced records p's index (g.mu held).
func (g *lineage) sequenced(p *pendingEntry, index uint64) {
	p.entry.Index = index
	p.sequenced = true
	g.unlinkItems(p)
}

// unlinkItems drops compaction p from the unsequenced item map.
func (g *lineage) unlinkItems(p *pendingEntry) {
	if p.entry.Kind != receipts.KindCompaction {
		return
	}
	for _, it := range lineageDigests(&p.entry) {
		ps := g.unsequenced[it]
		for i, q := range ps {
			if q == p {
				ps = append(ps[:i], ps[i+1:]...)
				break
			}
		}
		if len(ps) == 0 {
			delete(g.unsequenced, it)
		} else {
			g.unsequenced[it] = ps
		}
	}
}

// lineageDigests returns the digests a compaction's lineage depends on: its
// items, then its output.
func lineageDigests(e *Entry) []string {
	if e.Output == "" {
		return e.Items
	}
	return append(e.Items[:len(e.Items):len(e.Items)], e.Output)
}

// remove drops p from the maps where it is still registered (g.mu held).
func (g *lineage) remove(p *pendingEntry) {
	switch p.entry.Kind {
	case receipts.KindCompaction:
		if g.compactions[p.entry.ID] == p {
			delete(g.compactions, p.entry.ID)
		}
		if p.entry.Supersedes != "" && g.supersededBy[p.entry.Supersedes] == p {
			delete(g.supersededBy, p.entry.Supersedes)
		}
		if !p.sequenced {
			g.unlinkItems(p)
		}
	case receipts.KindTombstone:
		if g.tombstones[p.entry.Item] == p {
			delete(g.tombstones, p.entry.Item)
		}
	}
}

// errWait is returned by a decision that depends on an entry not yet
// sequenced; the caller waits on the channel and decides again.
type errWait struct{ ch chan struct{} }

func (e errWait) Error() string { return "waiting for an earlier lineage entry to be sequenced" }

// settled returns nil once p has an index, errWait while it is queued, and
// ErrOutcomeUnknown if its sequencing failed without saying whether it was
// logged: no decision that depends on it can be taken until the index
// settles that.
func (p *pendingEntry) settled() error {
	switch {
	case p.sequenced:
		return nil
	case p.unknown:
		return fmt.Errorf("%w: it depends on %s %q, whose sequencing failed and which may be in the log; retry once the index has settled it, normally within seconds", ErrOutcomeUnknown, p.entry.Kind, p.entry.ID)
	}
	return errWait{p.done}
}

// decideCompaction applies the lineage rules to compaction c with manifest
// mf (g.mu held).
func (l *Log) decideCompaction(ctx context.Context, c *receipts.Compaction, mf *receipts.Manifest) error {
	g := &l.lineage
	items := manifestItems(mf)
	// No item may already be purged.
	for _, it := range items {
		if p, ok := g.tombstones[it]; ok {
			if err := p.settled(); err != nil {
				return err
			}
			return refusal(receipts.CodeItemPurged, "manifest", "item %s was tombstoned at index %d", it, p.entry.Index)
		}
	}
	ts, err := l.index.TombstonesOf(ctx, items)
	if err != nil {
		return err
	}
	for _, it := range items {
		if t, ok := ts[it]; ok {
			return refusal(receipts.CodeItemPurged, "manifest", "item %s was tombstoned at index %d", it, t.Index)
		}
	}
	// Nor may its output have been erased: producing it again would bring
	// back what the tombstone erased.
	if t, err := l.tombstoneOf(ctx, c.CompactedOutputHash); err != nil {
		return err
	} else if t != nil {
		return refusal(receipts.CodeItemPurged, "compacted_output_hash", "output %s was tombstoned (erased) by %s at index %d", c.CompactedOutputHash, t.ID, t.Index)
	}
	if c.Supersedes == "" {
		return nil
	}
	return l.decideSupersession(ctx, c, items)
}

func (l *Log) decideSupersession(ctx context.Context, c *receipts.Compaction, items []string) error {
	g := &l.lineage
	target := c.Supersedes
	if p, ok := g.supersededBy[target]; ok {
		if err := p.settled(); err != nil {
			return err
		}
		return refusal(receipts.CodeSupersessionInvalid, "supersedes", "compaction %s was already superseded by %s at index %d", target, p.entry.ID, p.entry.Index)
	}
	var oldItems []string
	var oldOutput string
	if p, ok := g.compactions[target]; ok {
		if err := p.settled(); err != nil {
			return err
		}
		oldItems, oldOutput = p.entry.Items, p.entry.Output
	} else {
		info, err := l.index.Compaction(ctx, target)
		if errors.Is(err, ErrNotFound) {
			return refusal(receipts.CodeSupersessionInvalid, "supersedes", "compaction %s is not in the log", target)
		}
		if err != nil {
			return err
		}
		if info.SupersededBy != "" {
			return refusal(receipts.CodeSupersessionInvalid, "supersedes", "compaction %s was already superseded by %s at index %d", target, info.SupersededBy, info.SupersededAt)
		}
		raw, err := l.manifests.Get(ctx, info.ManifestRoot)
		if err != nil {
			return fmt.Errorf("couldn't load the manifest of compaction %s: %w", target, err)
		}
		old, err := receipts.ParseManifest(raw)
		if err != nil {
			return fmt.Errorf("stored manifest of compaction %s: %w", target, err)
		}
		oldItems, oldOutput = manifestItems(old), info.OutputHash
	}
	// A compaction whose output was erased is discharged: nothing is left
	// to supersede (a compaction of its remaining items needs no
	// supersedes).
	if t, err := l.tombstoneOf(ctx, oldOutput); err != nil {
		return err
	} else if t != nil {
		return refusal(receipts.CodeSupersessionInvalid, "supersedes", "compaction %s was discharged when its output %s was tombstoned by %s at index %d", target, oldOutput, t.ID, t.Index)
	}
	// The items purged since the old compaction: every tombstoned item of
	// it (none can predate it, as it was refused otherwise).
	purged := map[string]bool{}
	for _, it := range oldItems {
		if p, ok := g.tombstones[it]; ok {
			if err := p.settled(); err != nil {
				return err
			}
			purged[it] = true
		}
	}
	ts, err := l.index.TombstonesOf(ctx, oldItems)
	if err != nil {
		return err
	}
	for it := range ts {
		purged[it] = true
	}
	var want []string
	for _, it := range oldItems {
		if !purged[it] {
			want = append(want, it)
		}
	}
	if len(want) == 0 {
		return refusal(receipts.CodeSupersessionInvalid, "supersedes", "every item of compaction %s (%s) has been purged, so no compaction can supersede it; a tombstone of its output %s discharges it", target, plural(len(oldItems), "item"), oldOutput)
	}
	if !equalStrings(want, items) {
		return refusal(receipts.CodeSupersessionInvalid, "manifest", "must be the manifest of %s (%d items) minus the %d items purged since, in order (%d items); got %d items%s",
			target, len(oldItems), len(purged), len(want), len(items), firstDifference(want, items))
	}
	bf, err := receipts.ParseBloomFilter(c.TombstoneBloomFilterB64)
	if err != nil {
		return err
	}
	for it := range purged {
		if !bf.Contains(receipts.DigestBytes(it)) {
			return refusal(receipts.CodeSupersessionInvalid, "tombstone_bloom_filter_b64", "does not hold purged item %s", it)
		}
	}
	return nil
}

// decideTombstone refuses a second tombstone for one item (g.mu held),
// and holds a tombstone back until the compactions accepted before it that
// include its item are sequenced.
func (l *Log) decideTombstone(ctx context.Context, t *receipts.Tombstone) error {
	if ps := l.lineage.unsequenced[t.ItemDigest]; len(ps) > 0 {
		return errWait{ps[0].done}
	}
	if p, ok := l.lineage.tombstones[t.ItemDigest]; ok {
		if err := p.settled(); err != nil {
			return err
		}
		return refusal(receipts.CodeItemPurged, "item_digest", "item was already tombstoned by %s at index %d", p.entry.ID, p.entry.Index)
	}
	old, err := l.index.Tombstone(ctx, t.ItemDigest)
	if err == nil {
		return refusal(receipts.CodeItemPurged, "item_digest", "item was already tombstoned by %s at index %d", old.ID, old.Index)
	}
	if !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}

// tombstoneOf returns the tombstone of digest d, pending or indexed, or nil
// when there is none (g.mu held).
func (l *Log) tombstoneOf(ctx context.Context, d string) (*TombstoneInfo, error) {
	if d == "" {
		return nil, nil
	}
	if p, ok := l.lineage.tombstones[d]; ok {
		if err := p.settled(); err != nil {
			return nil, err
		}
		return &TombstoneInfo{ID: p.entry.ID, Index: p.entry.Index, Item: d, PurgedAt: p.entry.PurgedAt}, nil
	}
	t, err := l.index.Tombstone(ctx, d)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return t, err
}

func manifestItems(mf *receipts.Manifest) []string {
	out := make([]string, len(mf.Items))
	for i := range mf.Items {
		out[i] = mf.Items[i].ItemDigest
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func firstDifference(want, got []string) string {
	for i := 0; i < len(want) && i < len(got); i++ {
		if want[i] != got[i] {
			return fmt.Sprintf(" (item %d is %s, want %s)", i, got[i], want[i])
		}
	}
	if len(got) > len(want) {
		return fmt.Sprintf(" (extra item %s)", got[len(want)])
	}
	if len(want) > len(got) {
		return fmt.Sprintf(" (missing item %s)", want[len(got)])
	}
	return ""
}

func refusal(code receipts.Code, member, format string, args ...any) error {
	return &receipts.Error{Code: code, Member: member, Reason: strings.TrimSpace(fmt.Sprintf(format, args...))}
}

// plural is n followed by noun, with an "s" unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
