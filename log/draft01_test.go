package log

import (
	"errors"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/receipts"
)

// TestTrustIntervalAtIngest: draft -01 section 4.1 bounds the interval
// between trust_evaluated_at and created_at, not only their ages at ingest.
// A record dated 40 s ahead (within the 60 s skew) whose trust was
// evaluated 270 s ago is recent at ingest, but 310 s lie between its trust
// evaluation and created_at, more than the 300 s allowed.
func TestTrustIntervalAtIngest(t *testing.T) {
	tl := newTestLog(t)
	sub := func(id string, trustAge, ahead time.Duration) *receipts.Submission {
		now := time.Now().UTC()
		r, _, err := tl.s.Projection(id, now.Add(ahead), 1, 10)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := gen.Resign(r.Canonical(), tl.s.Adapter, func(m map[string]any) {
			m["selection_context"].(map[string]any)["trust_evaluated_at"] = receipts.FormatTimestamp(now.Add(-trustAge))
		})
		if err != nil {
			t.Fatal(err)
		}
		p, err := receipts.ParseProjectionRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		return &receipts.Submission{Receipt: p}
	}
	err := tl.wantRefused(sub("urn:p:interval", 270*time.Second, 40*time.Second), receipts.CodeTrustSnapshotStale)
	var e *receipts.Error
	if !errors.As(err, &e) || e.Member != "selection_context.trust_evaluated_at" {
		t.Errorf("refusal %v, want it at selection_context.trust_evaluated_at", err)
	}
	tl.mustSubmit(sub("urn:p:interval-ok", 250*time.Second, 40*time.Second))
}
