package verifier

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/memtrail/memtrail/receipts"
)

// lineage is the erasure-lineage state of a log audited up to some size:
// every single-use id, every compaction with its manifest's items and its
// supersession, every tombstone. Entries are applied in log order, never
// by a time a producer wrote.
type lineage struct {
	ids         map[receipts.Kind]map[idHash]uint64 // first index of each id
	compactions map[string]*lineageCompaction       // by compaction_event_id
	itemIn      map[digest][]*lineageCompaction     // item → compactions including it, in log order
	outputOf    map[digest][]*lineageCompaction     // compacted output → compactions producing it, in log order
	tombstones  map[digest]*lineageTombstone        // by item (the first tombstone of each)
	counts      Counts

	// floor is the latest time the log is known to have passed when it
	// logged the next entry: the greatest created_at or purged_at of a
	// verified earlier entry, minus the allowed clock skew (ingest refuses
	// receipts dated further ahead of its clock than that).
	floor    time.Time
	hasFloor bool
}

// Ids and digests are kept as arrays, not strings: a log's lineage state
// holds one entry per receipt, and maps without pointers cost the garbage
// collector nothing to scan.

// idHash names a single-use id by the first 16 bytes of the SHA-256 of its
// bytes. Two ids sharing them (a 2^-128 chance for any pair) would be
// reported as a replay, never missed.
type idHash [16]byte

func hashID(id string) idHash {
	h := sha256.Sum256([]byte(id))
	return idHash(h[:16])
}

// digest is the raw SHA-256 of a "sha256:<hex>" item digest.
type digest [32]byte

func (d digest) String() string { return "sha256:" + hex.EncodeToString(d[:]) }

func digestsOf(items []string) []digest {
	out := make([]digest, len(items))
	for i, it := range items {
		out[i] = receipts.DigestBytes(it)
	}
	return out
}

type lineageCompaction struct {
	id           string
	index        uint64
	root         string
	items        []digest // nil when the manifest could not be read
	supersedes   string
	supersededBy string
	supersededAt uint64
	output       digest // compacted_output_hash
	// erasedBy and erasedAt name the tombstone of output, which
	// discharges the compaction whatever was purged.
	erasedBy string
	erasedAt uint64
}

type lineageTombstone struct {
	id       string
	index    uint64
	item     digest
	purgedAt int64
}

// Counts counts a log's entries by kind. Unparsed entries are those that
// are not receipts at all.
type Counts struct {
	Projections uint64 `json:"projections"`
	Compactions uint64 `json:"compactions"`
	Tombstones  uint64 `json:"tombstones"`
	Unparsed    uint64 `json:"unparsed"`
}

func newLineage() *lineage {
	return &lineage{
		ids: map[receipts.Kind]map[idHash]uint64{
			receipts.KindProjection: {}, receipts.KindCompaction: {}, receipts.KindTombstone: {},
		},
		compactions: map[string]*lineageCompaction{},
		itemIn:      map[digest][]*lineageCompaction{},
		outputOf:    map[digest][]*lineageCompaction{},
		tombstones:  map[digest]*lineageTombstone{},
	}
}

// entryResult is what verifying one entry yields, for the in-order stage.
// Strings are copies, never views into the entry bundle.
type entryResult struct {
	index    uint64
	leafHash []byte
	kind     receipts.Kind // "" when the entry is not a receipt
	id       string
	idHash   idHash
	findings []Finding
	// verified: the receipt parsed and its signature verified, so its
	// lineage effects apply.
	verified bool
	at       time.Time // created_at or purged_at; zero for compactions

	// The key the receipt verified under: key for compactions and
	// tombstones, pin for projections.
	key *receipts.Key
	pin *receipts.AdapterPin

	// Compactions.
	root       string
	items      []digest // nil when the manifest is missing or refused
	supersedes string
	bloom      *receipts.BloomFilter
	output     digest

	// Tombstones.
	item     digest
	purgedAt int64
}

func replayCode(k receipts.Kind) receipts.Code {
	switch k {
	case receipts.KindCompaction:
		return receipts.CodeCompactionReplay
	case receipts.KindTombstone:
		return receipts.CodeTombstoneReplay
	}
	return receipts.CodeProjectionReplay
}

func u64(v uint64) *uint64 { return &v }

// apply applies one entry in log order and returns the lineage findings.
func (g *lineage) apply(e *entryResult, skew time.Duration) []Finding {
	var out []Finding
	finding := func(code receipts.Code, member, detail string, ev *Evidence) {
		if ev == nil {
			ev = &Evidence{}
		}
		ev.LeafHash = b64(e.leafHash)
		out = append(out, Finding{Code: code, Check: CheckLineage, Index: u64(e.index), Kind: string(e.kind), ID: e.id, Member: member, Detail: detail, Evidence: ev})
	}
	switch e.kind {
	case receipts.KindProjection:
		g.counts.Projections++
	case receipts.KindCompaction:
		g.counts.Compactions++
	case receipts.KindTombstone:
		g.counts.Tombstones++
	default:
		g.counts.Unparsed++
		return nil
	}
	// Single use holds for every logged id, whether or not the receipt
	// verifies: the log logs an id at most once.
	if first, dup := g.ids[e.kind][e.idHash]; dup {
		finding(replayCode(e.kind), e.idMember(), fmt.Sprintf("%s %s was already logged at index %d", e.kind, e.id, first),
			&Evidence{FirstIndex: u64(first)})
		return out
	}
	g.ids[e.kind][e.idHash] = e.index
	if !e.verified {
		return out
	}

	// The log logged this entry no earlier than the floor. A revoked key
	// is assumed compromised, and a compromised key can sign with any
	// created_at or purged_at (and an ECCR carries no time), so a key
	// revoked by the floor is refused whatever time the receipt names.
	// (The receipt's own time was judged in verifyEntry; this catches the
	// back-dated ones, and compactions.)
	revoked := false
	if g.hasFloor {
		switch {
		case e.key != nil && e.key.RevokedAt != nil && !e.key.RevokedAt.After(g.floor):
			k, after := e.key, receipts.FormatTimestamp(g.floor)
			role, whatever := "compactor", ""
			if e.kind == receipts.KindTombstone {
				role, whatever = "issuer", ", whatever its purged_at says"
			}
			finding(receipts.CodeKeyRevoked, "signature.kid", fmt.Sprintf("%s key %s was revoked at %s, and the log logged this %s after %s%s",
				role, k.KID, receipts.FormatTimestamp(*k.RevokedAt), e.kind, after, whatever), &Evidence{KID: k.KID, LoggedAfter: after})
			revoked = true
		case e.pin != nil && e.pin.RevokedAt != nil && !e.pin.RevokedAt.After(g.floor):
			p, after := e.pin, receipts.FormatTimestamp(g.floor)
			finding(receipts.CodeAdapterKeyRevoked, "adapter.key_id", fmt.Sprintf("adapter key %q of %s was revoked at %s, and the log logged this projection after %s, whatever its created_at says",
				p.KeyID, p.AdapterID, receipts.FormatTimestamp(*p.RevokedAt), after), &Evidence{KID: p.KeyID, LoggedAfter: after})
			revoked = true
		}
	}

	switch e.kind {
	case receipts.KindCompaction:
		// Nor may a compactor's key have expired by then.
		if k := e.key; k != nil && g.hasFloor && !revoked && k.ValidTo != nil && !g.floor.Before(*k.ValidTo) {
			finding(receipts.CodeKeyExpired, "signature.kid", fmt.Sprintf("compactor key %s expired at %s, and the log logged this compaction after %s",
				k.KID, receipts.FormatTimestamp(*k.ValidTo), receipts.FormatTimestamp(g.floor)), &Evidence{KID: k.KID, LoggedAfter: receipts.FormatTimestamp(g.floor)})
		}
		c := &lineageCompaction{id: e.id, index: e.index, root: e.root, items: e.items, supersedes: e.supersedes, output: e.output}
		// Nor produce an output already erased.
		if t, ok := g.tombstones[e.output]; ok {
			finding(receipts.CodeItemPurged, "compacted_output_hash", fmt.Sprintf("produces output %s, tombstoned (erased) by %s at index %d", e.output, t.id, t.index),
				&Evidence{Item: e.output.String(), TombstoneID: t.id, TombstoneIndex: u64(t.index), PurgedAt: t.purgedAt})
			c.erasedBy, c.erasedAt = t.id, t.index
		}
		if e.items != nil {
			// No compaction logged after a tombstone may include its item.
			for _, it := range e.items {
				if t, ok := g.tombstones[it]; ok {
					finding(receipts.CodeItemPurged, "manifest", fmt.Sprintf("includes item %s, tombstoned by %s at index %d", it, t.id, t.index),
						&Evidence{Item: it.String(), TombstoneID: t.id, TombstoneIndex: u64(t.index), PurgedAt: t.purgedAt, ManifestRoot: e.root})
					break
				}
			}
		}
		if e.supersedes != "" {
			if f := g.supersede(c, e); f != nil {
				finding(receipts.CodeSupersessionInvalid, f.member, f.detail, f.ev)
			}
		}
		g.add(c)
	case receipts.KindTombstone:
		if t, ok := g.tombstones[e.item]; ok {
			finding(receipts.CodeItemPurged, "item_digest", fmt.Sprintf("item %s was already tombstoned by %s at index %d", e.item, t.id, t.index),
				&Evidence{Item: e.item.String(), TombstoneID: t.id, TombstoneIndex: u64(t.index), PurgedAt: t.purgedAt})
		} else {
			g.addTombstone(&lineageTombstone{id: e.id, index: e.index, item: e.item, purgedAt: e.purgedAt})
		}
	}
	if !e.at.IsZero() {
		if f := e.at.Add(-skew); !g.hasFloor || f.After(g.floor) {
			g.floor, g.hasFloor = f, true
		}
	}
	return out
}

// add records compaction c.
func (g *lineage) add(c *lineageCompaction) {
	g.compactions[c.id] = c
	for _, it := range c.items {
		g.itemIn[it] = append(g.itemIn[it], c)
	}
	g.outputOf[c.output] = append(g.outputOf[c.output], c)
}

// addTombstone records tombstone t, the first of its item: the item is
// purged, and so is the output of every compaction that produced it.
func (g *lineage) addTombstone(t *lineageTombstone) {
	g.tombstones[t.item] = t
	for _, c := range g.outputOf[t.item] {
		if c.erasedBy == "" {
			c.erasedBy, c.erasedAt = t.id, t.index
		}
	}
}

func (e *entryResult) idMember() string {
	switch e.kind {
	case receipts.KindCompaction:
		return "compaction_event_id"
	case receipts.KindTombstone:
		return "tombstone_id"
	}
	return "projection_id"
}

type lineageFailure struct {
	member, detail string
	ev             *Evidence
}

// supersede checks that compaction c (entry e) may supersede its target:
// the target was logged before and not yet superseded, c's manifest is
// exactly the target's minus every item tombstoned since, in order, and
// c's Bloom filter holds each of those items. When it may, the target is
// marked superseded and its obligations close.
func (g *lineage) supersede(c *lineageCompaction, e *entryResult) *lineageFailure {
	target, ok := g.compactions[e.supersedes]
	if !ok {
		return &lineageFailure{"supersedes", fmt.Sprintf("compaction %s is not logged before index %d", e.supersedes, e.index),
			&Evidence{CompactionID: e.supersedes}}
	}
	if target.supersededBy != "" {
		return &lineageFailure{"supersedes", fmt.Sprintf("compaction %s was already superseded by %s at index %d", target.id, target.supersededBy, target.supersededAt),
			&Evidence{CompactionID: target.id, CompactionIndex: u64(target.index), FirstIndex: u64(target.supersededAt)}}
	}
	if target.erasedBy != "" {
		return &lineageFailure{"supersedes", fmt.Sprintf("compaction %s was discharged when its output %s was tombstoned by %s at index %d", target.id, target.output, target.erasedBy, target.erasedAt),
			&Evidence{CompactionID: target.id, CompactionIndex: u64(target.index), Item: target.output.String(), TombstoneID: target.erasedBy, TombstoneIndex: u64(target.erasedAt)}}
	}
	if target.items != nil && e.items != nil {
		var want, purged []digest
		for _, it := range target.items {
			if _, gone := g.tombstones[it]; gone {
				purged = append(purged, it)
			} else {
				want = append(want, it)
			}
		}
		if len(want) == 0 {
			return &lineageFailure{"supersedes", fmt.Sprintf("every item of compaction %s (%d items) was tombstoned before index %d, so no compaction can supersede it; a tombstone of its output %s discharges it",
				target.id, len(target.items), e.index, target.output), &Evidence{CompactionID: target.id, CompactionIndex: u64(target.index), CompactedOutputHash: target.output.String()}}
		}
		if diff := firstDifference(want, e.items); diff != "" {
			return &lineageFailure{"manifest", fmt.Sprintf("must be the manifest of %s (%d items) minus the %d items tombstoned since (%d items)%s",
				target.id, len(target.items), len(purged), len(want), diff), &Evidence{CompactionID: target.id, CompactionIndex: u64(target.index), ManifestRoot: e.root}}
		}
		for _, it := range purged {
			if e.bloom == nil || !e.bloom.Contains(it) {
				t := g.tombstones[it]
				return &lineageFailure{"tombstone_bloom_filter_b64", fmt.Sprintf("does not hold item %s, purged since %s", it, target.id),
					&Evidence{Item: it.String(), TombstoneID: t.id, TombstoneIndex: u64(t.index), CompactionID: target.id, CompactionIndex: u64(target.index)}}
			}
		}
	}
	target.supersededBy, target.supersededAt = c.id, c.index
	return nil
}

func firstDifference(want, got []digest) string {
	for i := 0; i < len(want) && i < len(got); i++ {
		if want[i] != got[i] {
			return fmt.Sprintf("; item %d is %s, want %s", i, got[i], want[i])
		}
	}
	switch {
	case len(got) > len(want):
		return fmt.Sprintf("; extra item %s", got[len(want)])
	case len(want) > len(got):
		return fmt.Sprintf("; missing item %s", want[len(got)])
	}
	return ""
}

// Obligation is an erasure obligation still open: an item was tombstoned,
// and a compaction that included it before the tombstone is neither
// superseded by one that excludes it nor erased (its compacted output
// tombstoned).
type Obligation struct {
	Item            string `json:"item"`
	TombstoneID     string `json:"tombstone_id"`
	TombstoneIndex  uint64 `json:"tombstone_index"`
	PurgedAt        int64  `json:"purged_at"`
	CompactionID    string `json:"compaction_id"`
	CompactionIndex uint64 `json:"compaction_index"`
	// CompactedOutputHash is the compaction's output: a tombstone of it
	// discharges the obligation.
	CompactedOutputHash string `json:"compacted_output_hash"`
	// Discharge says what can discharge the obligation:
	// DischargeSupersessionOrErasure, or DischargeErasure when every item
	// of the compaction was purged, so that no compaction can supersede it
	// (a manifest holds at least one item).
	Discharge string `json:"discharge"`
	// AgeSec is the time from purged_at to the audit time, in seconds.
	AgeSec int64 `json:"age_sec"`
	// Overdue is set once the age exceeds the grace period: the
	// obligation is then a violation (obligation_overdue).
	Overdue bool `json:"overdue"`
}

// The values of [Obligation.Discharge].
const (
	DischargeSupersessionOrErasure = "supersession_or_output_tombstone"
	DischargeErasure               = "output_tombstone"
)

// fullyPurged reports whether every item of c is tombstoned (false when its
// manifest could not be read).
func (g *lineage) fullyPurged(c *lineageCompaction) bool {
	if c.items == nil {
		return false
	}
	for _, it := range c.items {
		if _, ok := g.tombstones[it]; !ok {
			return false
		}
	}
	return true
}

// obligations lists the open obligations at time at, oldest tombstone
// first, and the findings for those older than grace.
func (g *lineage) obligations(at time.Time, grace time.Duration) ([]Obligation, []Finding) {
	out := []Obligation{}
	var findings []Finding
	items := make([]*lineageTombstone, 0, len(g.tombstones))
	for _, t := range g.tombstones {
		items = append(items, t)
	}
	sort.Slice(items, func(i, j int) bool { return items[i].index < items[j].index })
	for _, t := range items {
		for _, c := range g.itemIn[t.item] {
			if c.index > t.index || c.supersededBy != "" || c.erasedBy != "" {
				continue
			}
			age := at.Unix() - t.purgedAt
			o := Obligation{Item: t.item.String(), TombstoneID: t.id, TombstoneIndex: t.index, PurgedAt: t.purgedAt,
				CompactionID: c.id, CompactionIndex: c.index, CompactedOutputHash: c.output.String(), Discharge: DischargeSupersessionOrErasure,
				AgeSec: age, Overdue: age > int64(grace/time.Second)}
			if g.fullyPurged(c) {
				o.Discharge = DischargeErasure
			}
			out = append(out, o)
			if o.Overdue {
				findings = append(findings, Finding{Code: CodeObligationOverdue, Check: CheckObligations, Index: u64(c.index),
					Kind: string(receipts.KindCompaction), ID: c.id,
					Detail: fmt.Sprintf("item %s was tombstoned by %s at index %d (purged_at %s), %s ago, and compaction %s still includes it; %s; the grace period is %s",
						t.item, t.id, t.index, receipts.FormatTimestamp(time.Unix(t.purgedAt, 0)), formatAge(age), c.id, dischargeText(o), grace),
					Evidence: &Evidence{Item: t.item.String(), TombstoneID: t.id, TombstoneIndex: u64(t.index), PurgedAt: t.purgedAt,
						CompactionID: c.id, CompactionIndex: u64(c.index), CompactedOutputHash: o.CompactedOutputHash, AgeSec: age}})
			}
		}
	}
	return out, findings
}

func describeObligation(o Obligation) string {
	state := "open"
	if o.Overdue {
		state = "OVERDUE"
	}
	return fmt.Sprintf("%s: item %s (tombstone %s at index %d) still in compaction %s at index %d, %s old; %s",
		state, o.Item, o.TombstoneID, o.TombstoneIndex, o.CompactionID, o.CompactionIndex, formatAge(o.AgeSec), dischargeText(o))
}

// dischargeText says what can discharge an obligation.
func dischargeText(o Obligation) string {
	if o.Discharge == DischargeErasure {
		return fmt.Sprintf("every item of %s has been purged, so no compaction can supersede it: only a tombstone of its output %s (the summary erased) discharges it",
			o.CompactionID, o.CompactedOutputHash)
	}
	return fmt.Sprintf("a compaction superseding it without the purged items, or a tombstone of its output %s, discharges it", o.CompactedOutputHash)
}

// formatAge writes an age in seconds as a duration ("26h0m0s"), or in
// seconds when it is beyond what a time.Duration holds.
func formatAge(sec int64) string {
	if sec > -1<<33 && sec < 1<<33 {
		return (time.Duration(sec) * time.Second).String()
	}
	return strconv.FormatInt(sec, 10) + "s"
}
