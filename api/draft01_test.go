package api

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/gen"
	mlog "github.com/memtrail/memtrail/log"
	"github.com/memtrail/memtrail/receipts"
)

// TestIngestSourceResultCombinations: the 36 combinations of derived_trust
// × authorship × author key × custody, each set on the first entry of a
// fresh record and signed again by the pinned adapter, submitted over
// HTTP. Those the draft -01 rule allows are logged; every other one is
// refused 400 source_result_invalid, naming the entry, and nothing of it
// is logged: the tree grows by exactly the allowed ones and no refused id
// is found.
func TestIngestSourceResultCombinations(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	allowed := 0
	var refusedIDs []string
	for i, s := range gen.SourceResults() {
		id := fmt.Sprintf("urn:p:combination:%d", i)
		r, _, err := ts.s.Projection(id, time.Now().UTC(), 2, 50)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := gen.Resign(r.Canonical(), ts.s.Adapter, func(m map[string]any) {
			s.Set(m["delivered"].([]any)[0].(map[string]any))
		})
		if err != nil {
			t.Fatal(err)
		}
		code, _, body := ts.do("POST", "/v1/projections", "application/json", rec)
		if s.AllowedByDraft01() {
			allowed++
			if code != 201 {
				t.Errorf("%s: %d %s, want 201", s, code, body)
			}
			continue
		}
		refusedIDs = append(refusedIDs, id)
		ref := refusalOf(t, body)
		if code != 400 || ref.Code != string(receipts.CodeSourceResultInvalid) || len(ref.Member) < len("delivered[0].") || ref.Member[:len("delivered[0].")] != "delivered[0]." {
			t.Errorf("%s: %d %+v, want 400 source_result_invalid at delivered[0]", s, code, ref)
		}
	}
	if allowed != 8 || len(refusedIDs) != 28 {
		t.Fatalf("the rule allows %d and refuses %d of 36, want 8 and 28", allowed, len(refusedIDs))
	}
	if size, _ := ts.l.IntegratedSize(ctx); size != uint64(allowed) {
		t.Errorf("tree size %d, want %d: only the allowed combinations are logged", size, allowed)
	}
	for _, id := range refusedIDs {
		if _, err := ts.l.LookupID(ctx, receipts.KindProjection, id); !errors.Is(err, mlog.ErrNotFound) {
			t.Errorf("refused %s: lookup %v, want not found", id, err)
		}
	}
}
