package api

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/receipts"
)

// TestObligationsEndpoint: GET /v1/obligations lists every tombstoned item
// of every compaction not superseded, with its count, and a superseding
// compaction discharges them.
func TestObligationsEndpoint(t *testing.T) {
	ts := newTestServer(t)
	items := gen.Items("obl", 3)
	c1, mf1, _ := ts.s.Compaction("urn:c:1", items, "", nil, nil)
	tomb, _ := ts.s.Tombstone("urn:t:1", items[1].ItemDigest, time.Now())
	get := func(q string) (int, Obligations, []byte) {
		code, _, body := ts.do("GET", "/v1/obligations"+q, "", nil)
		var o Obligations
		if code == 200 {
			if err := json.Unmarshal(body, &o); err != nil {
				t.Fatalf("%s: %v", body, err)
			}
		}
		return code, o, body
	}
	if code, o, body := get(""); code != 200 || o.Count != 0 || o.Obligations == nil || len(o.Obligations) != 0 || o.Truncated {
		t.Errorf("empty log: %d %s", code, body)
	}
	code, results, body := ts.batch(gen.CompactionSubmission(c1, mf1), tomb.Canonical())
	if code != 200 || len(results) != 2 || results[0].Status != 201 || results[1].Status != 201 {
		t.Fatalf("batch: %d %s", code, body)
	}
	code, o, body := get("")
	want := Obligation{Item: items[1].ItemDigest, TombstoneID: "urn:t:1", TombstoneIndex: results[1].Index, PurgedAt: tomb.PurgedAt,
		CompactionID: "urn:c:1", CompactionIndex: results[0].Index}
	if code != 200 || o.Count != 1 || len(o.Obligations) != 1 || o.Obligations[0] != want || o.Truncated {
		t.Errorf("one obligation: %d %s, want %+v", code, body, want)
	}
	for _, q := range []string{"?limit=0", "?limit=10001", "?limit=x"} {
		if code, _, body := get(q); code != 400 || refusalOf(t, body).Code != "bad_request" {
			t.Errorf("%s: %d %s", q, code, body)
		}
	}
	c2, mf2, _ := ts.s.Compaction("urn:c:2", []receipts.ManifestItem{items[0], items[2]}, "urn:c:1", []string{items[1].ItemDigest}, nil)
	if code, _, body := ts.do("POST", "/v1/compactions", "application/json", gen.CompactionSubmission(c2, mf2)); code != 201 {
		t.Fatalf("supersession: %d %s", code, body)
	}
	if code, o, body := get("?limit=5"); code != 200 || o.Count != 0 || len(o.Obligations) != 0 {
		t.Errorf("after the supersession: %d %s", code, body)
	}
}
