package verifier_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
)

// TestLineageAgreesWithLog drives a real log with random lineage
// submissions — compactions of random items (outputs of other compactions
// among them), supersessions right and wrong, tombstones of items and of
// outputs — and checks that the audit agrees with the log: nothing the log
// accepted breaks a lineage rule, and the compactions with open obligations
// are exactly those the log shows awaiting recompaction or erasure, the
// ones only an output tombstone can discharge being those it shows
// awaiting_erasure.
func TestLineageAgreesWithLog(t *testing.T) {
	seen := map[string]bool{}
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			for _, st := range lineageAgreement(t, seed) {
				seen[st] = true
			}
		})
	}
	// The random histories must reach every state, or they test little.
	for _, st := range []string{"current", "awaiting_recompaction", "awaiting_erasure", "superseded", "erased"} {
		if !seen[st] {
			t.Errorf("no compaction of the random histories ended %s", st)
		}
	}
}

func lineageAgreement(t *testing.T, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 99))
	dir := t.TempDir()
	key := newLogKey(t)
	s := gen.Deterministic(byte(seed))
	now := time.Now().UTC().Truncate(time.Second)
	trust := s.Trust(now.Add(-time.Hour))
	l := openRealLog(t, dir, key, s, trust)
	defer l.close() // before TempDir's cleanup: Tessera writes until it is closed
	ctx := context.Background()

	pool := gen.Items(fmt.Sprint("agree", seed), 10)
	type comp struct {
		id     string
		items  []receipts.ManifestItem
		output string
	}
	var comps []comp
	purged := map[string]bool{}
	submit := func(sub *receipts.Submission) bool {
		_, err := l.Submit(ctx, sub)
		switch receipts.ErrorCode(err) {
		case "":
			return true
		case receipts.CodeItemPurged, receipts.CodeSupersessionInvalid:
			return false
		}
		t.Fatalf("Submit(%s %s) = %v", sub.Receipt.Kind(), sub.Receipt.ID(), err)
		return false
	}
	for n := 0; n < 60; n++ {
		switch op := rng.IntN(10); {
		case op < 4 || len(comps) == 0: // a new compaction
			var items []receipts.ManifestItem
			for _, it := range pool {
				if rng.IntN(3) == 0 {
					items = append(items, it)
				}
			}
			if len(comps) > 0 && rng.IntN(4) == 0 { // a summary of a summary
				items = append(items, receipts.ManifestItem{ItemDigest: comps[rng.IntN(len(comps))].output, Sensitivity: "INTERNAL"})
			}
			if len(items) == 0 {
				items = pool[:1]
			}
			id := fmt.Sprintf("urn:c:%d", n)
			c, mf, err := s.Compaction(id, items, "", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if submit(&receipts.Submission{Receipt: c, Manifest: mf}) {
				comps = append(comps, comp{id, items, c.CompactedOutputHash})
			}
		case op < 6: // a supersession, usually right
			old := comps[rng.IntN(len(comps))]
			var rest []receipts.ManifestItem
			var gone []string
			for _, it := range old.items {
				if purged[it.ItemDigest] && rng.IntN(8) != 0 {
					gone = append(gone, it.ItemDigest)
				} else {
					rest = append(rest, it)
				}
			}
			if len(rest) == 0 {
				i := rng.IntN(len(pool))
				rest = pool[i : i+1]
			}
			id := fmt.Sprintf("urn:c:%d", n)
			c, mf, err := s.Compaction(id, rest, old.id, gone, nil)
			if err != nil {
				t.Fatal(err)
			}
			if submit(&receipts.Submission{Receipt: c, Manifest: mf}) {
				comps = append(comps, comp{id, rest, c.CompactedOutputHash})
			}
		default: // a tombstone of an item or of an output
			d := pool[rng.IntN(len(pool))].ItemDigest
			if rng.IntN(3) == 0 {
				d = comps[rng.IntN(len(comps))].output
			}
			ts, err := s.Tombstone(fmt.Sprintf("urn:t:%d", n), d, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if submit(&receipts.Submission{Receipt: ts}) {
				purged[d] = true
			}
		}
	}
	size, err := l.IntegratedSize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l.waitPublished(size)

	rep, _ := audit(t, dirSource(t, dir), key, auditRun{trust: trust, at: now.Add(time.Minute)})
	if !rep.Valid() {
		t.Fatalf("the audit refuses what the log accepted:\n%s", rep.Summary())
	}
	open, eraseOnly := map[string]bool{}, map[string]bool{}
	for _, o := range rep.Obligations {
		open[o.CompactionID] = true
		if o.Discharge == verifier.DischargeErasure {
			eraseOnly[o.CompactionID] = true
		}
	}
	var states []string
	for _, c := range comps {
		info, err := l.Compaction(ctx, c.id)
		if err != nil {
			t.Fatal(err)
		}
		st := info.State()
		states = append(states, st)
		logOpen := st == "awaiting_recompaction" || st == "awaiting_erasure"
		if logOpen != open[c.id] || (st == "awaiting_erasure") != eraseOnly[c.id] {
			t.Errorf("compaction %s: the log says %s (%+v); the audit lists it open %v, only erasure %v", c.id, st, info, open[c.id], eraseOnly[c.id])
		}
	}
	return states
}
