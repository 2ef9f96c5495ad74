package verifier_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/memtrail/memtrail/api"
	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
	"github.com/memtrail/memtrail/verifier/backend"
	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/tessera/api/layout"
	"golang.org/x/mod/sumdb/note"
)

// scenario builds receipts for logs written directly, so that the audit
// can be shown what memtrail's ingest would refuse.
type scenario struct {
	t     testing.TB
	s     *gen.Signers
	trust *receipts.Trust
	base  time.Time
	n     int
}

func newScenario(t testing.TB) *scenario {
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s := gen.Deterministic(7)
	return &scenario{t: t, s: s, trust: s.Trust(base.Add(-24 * time.Hour)), base: base}
}

// now returns a time one second after the previous one.
func (sc *scenario) now() time.Time {
	sc.n++
	return sc.base.Add(time.Duration(sc.n) * time.Second)
}

func (sc *scenario) proj(id string) []byte {
	sc.t.Helper()
	r, _, err := sc.s.Projection(id, sc.now(), 2, 64)
	if err != nil {
		sc.t.Fatal(err)
	}
	return r.Canonical()
}

func (sc *scenario) comp(dir, id string, items []receipts.ManifestItem, supersedes string, purged ...string) []byte {
	sc.t.Helper()
	c, mf, err := sc.s.Compaction(id, items, supersedes, purged, nil)
	if err != nil {
		sc.t.Fatal(err)
	}
	if dir != "" {
		putManifest(sc.t, dir, mf)
	}
	return c.Canonical()
}

func (sc *scenario) tomb(id, item string, purgedAt time.Time) []byte {
	sc.t.Helper()
	ts, err := sc.s.Tombstone(id, item, purgedAt)
	if err != nil {
		sc.t.Fatal(err)
	}
	return ts.Canonical()
}

func without(items []receipts.ManifestItem, drop ...int) []receipts.ManifestItem {
	var out []receipts.ManifestItem
	for i, it := range items {
		if !containsInt(drop, i) {
			out = append(out, it)
		}
	}
	return out
}

func containsInt(list []int, x int) bool {
	for _, y := range list {
		if y == x {
			return true
		}
	}
	return false
}

type auditRun struct {
	trust *receipts.Trust
	at    time.Time
	grace time.Duration
	state *verifier.AuditState
}

func audit(t *testing.T, src verifier.LogSource, key logKey, r auditRun) (*verifier.AuditReport, *verifier.AuditState) {
	t.Helper()
	if r.grace == 0 {
		r.grace = verifier.DefaultGrace
	}
	rep, st, err := verifier.AuditLog(context.Background(), src, verifier.AuditOptions{
		Policy: key.policy, Trust: r.trust, At: r.at, Grace: r.grace, State: r.state, Workers: 2})
	if err != nil {
		t.Fatalf("AuditLog: %v", err)
	}
	return rep, st
}

func dirSource(t *testing.T, dir string) verifier.LogSource {
	t.Helper()
	src, err := backend.NewDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func findingsByCode(rep *verifier.AuditReport) map[receipts.Code][]verifier.Finding {
	out := map[receipts.Code][]verifier.Finding{}
	for _, f := range rep.Findings {
		out[f.Code] = append(out[f.Code], f)
	}
	return out
}

func checkOutcome(rep *verifier.AuditReport, name string) verifier.Check {
	for _, c := range rep.Checks {
		if c.Check == name {
			return c
		}
	}
	return verifier.Check{}
}

// TestAuditRealLog audits a log written through memtrail's ingest, from
// its data directory and from its URL, and resumes from the saved state.
func TestAuditRealLog(t *testing.T) {
	dir := t.TempDir()
	key := newLogKey(t)
	s := gen.Deterministic(3)
	now := time.Now().UTC().Truncate(time.Second)
	trust := s.Trust(now.Add(-time.Hour))
	l := openRealLog(t, dir, key, s, trust)

	itemsA, itemsB := gen.Items("a", 10), gen.Items("b", 10)
	mk := func(id string, items []receipts.ManifestItem, sup string, purged ...string) *receipts.Submission {
		c, mf, err := s.Compaction(id, items, sup, purged, nil)
		if err != nil {
			t.Fatal(err)
		}
		return &receipts.Submission{Receipt: c, Manifest: mf}
	}
	proj := func(id string) *receipts.Submission {
		r, _, err := s.Projection(id, time.Now().UTC(), 3, 100)
		if err != nil {
			t.Fatal(err)
		}
		return &receipts.Submission{Receipt: r}
	}
	tomb := func(id, item string) *receipts.Submission {
		ts, err := s.Tombstone(id, item, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return &receipts.Submission{Receipt: ts}
	}
	for i := range 20 {
		l.submit(proj(fmt.Sprintf("urn:p:%d", i)))
	}
	l.submit(mk("urn:c:a", itemsA, ""))
	cb := l.submit(mk("urn:c:b", itemsB, ""))
	l.submit(tomb("urn:t:1", itemsA[3].ItemDigest))
	l.submit(mk("urn:c:a2", without(itemsA, 3), "urn:c:a", itemsA[3].ItemDigest))
	tb := l.submit(tomb("urn:t:2", itemsB[5].ItemDigest))
	last := l.submit(proj("urn:p:last"))
	l.waitPublished(last + 1)

	// From the URL, while the log runs.
	srv := httptest.NewServer(api.New(l.Log, api.Config{Logger: quiet}).Handler())
	hsrc, err := backend.NewHTTP(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC()
	rep, st := audit(t, hsrc, key, auditRun{trust: trust, at: at})
	if !rep.Valid() || st == nil {
		t.Fatalf("HTTP audit: %s", rep.Summary())
	}
	if rep.Counts != (verifier.Counts{Projections: 21, Compactions: 3, Tombstones: 2}) || rep.EntriesAudited != last+1 {
		t.Errorf("counts = %+v, audited %d", rep.Counts, rep.EntriesAudited)
	}
	if len(rep.Obligations) != 1 {
		t.Fatalf("obligations = %+v, want the one of compaction b", rep.Obligations)
	}
	o := rep.Obligations[0]
	if o.CompactionID != "urn:c:b" || o.CompactionIndex != cb || o.TombstoneIndex != tb || o.Item != itemsB[5].ItemDigest || o.Overdue {
		t.Errorf("obligation = %+v", o)
	}
	srv.Close()

	// The same from the data directory, once closed.
	l.close()
	rep2, st2 := audit(t, dirSource(t, dir), key, auditRun{trust: trust, at: at})
	if !rep2.Valid() || rep2.RootHash != rep.RootHash || len(rep2.Obligations) != 1 {
		t.Fatalf("directory audit: %s", rep2.Summary())
	}
	if !reflect.DeepEqual(st.Marshal(), st2.Marshal()) {
		t.Errorf("the HTTP and directory audits saved different states")
	}

	// A day later, the obligation is overdue.
	rep3, _ := audit(t, dirSource(t, dir), key, auditRun{trust: trust, at: at.Add(25 * time.Hour)})
	if rep3.Result != "obligation_overdue" || !rep3.Obligations[0].Overdue {
		t.Fatalf("a day later: %s", rep3.Summary())
	}
	f := findingsByCode(rep3)["obligation_overdue"][0]
	if *f.Index != cb || f.Evidence.TombstoneIndex == nil || *f.Evidence.TombstoneIndex != tb || f.Evidence.AgeSec < 25*3600 {
		t.Errorf("overdue finding = %+v %+v", f, f.Evidence)
	}

	// Resume: the log grows, the obligation is met, only the new entries
	// are read.
	l = openRealLog(t, dir, key, s, trust)
	l.submit(mk("urn:c:b2", without(itemsB, 5), "urn:c:b", itemsB[5].ItemDigest))
	for i := range 5 {
		l.submit(proj(fmt.Sprintf("urn:p:more:%d", i)))
	}
	l.close()
	saved, err := verifier.ParseAuditState(st2.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	rep4, st4 := audit(t, dirSource(t, dir), key, auditRun{trust: trust, at: at.Add(25 * time.Hour), state: saved})
	if !rep4.Valid() || rep4.ResumedFrom == nil || *rep4.ResumedFrom != last+1 || rep4.EntriesAudited != 6 || len(rep4.Obligations) != 0 {
		t.Fatalf("resumed audit: %s", rep4.Summary())
	}
	if rep4.Counts.Compactions != 4 || rep4.Counts.Projections != 26 {
		t.Errorf("resumed counts = %+v", rep4.Counts)
	}
	full, _ := audit(t, dirSource(t, dir), key, auditRun{trust: trust, at: at.Add(25 * time.Hour)})
	if !full.Valid() || full.RootHash != rep4.RootHash || !reflect.DeepEqual(st4.Marshal(), mustState(t, dir, key, trust).Marshal()) {
		t.Errorf("a resumed audit and a full one disagree")
	}
}

func mustState(t *testing.T, dir string, key logKey, trust *receipts.Trust) *verifier.AuditState {
	_, st := audit(t, dirSource(t, dir), key, auditRun{trust: trust, at: time.Now()})
	if st == nil {
		t.Fatal("no state")
	}
	return st
}

// TestAuditLineageRules writes logs that memtrail's ingest would refuse,
// directly with Tessera's appender, and checks that the audit names each
// violation with its code, entry index and evidence.
func TestAuditLineageRules(t *testing.T) {
	key := newLogKey(t)
	type built struct {
		leaves [][]byte
		trust  *receipts.Trust // nil: the scenario's
		at     time.Time       // zero: a minute after the scenario's base
	}
	items := gen.Items("x", 6)
	cases := []struct {
		name  string
		build func(sc *scenario, dir string) built
		code  receipts.Code
		index uint64
		check func(t *testing.T, f verifier.Finding)
	}{
		{"compaction after a tombstone includes its item", func(sc *scenario, dir string) built {
			return built{leaves: [][]byte{
				sc.proj("urn:p:0"),
				sc.tomb("urn:t:0", items[2].ItemDigest, sc.now()),
				sc.comp(dir, "urn:c:0", items, ""),
			}}
		}, receipts.CodeItemPurged, 2, func(t *testing.T, f verifier.Finding) {
			if f.Evidence.Item != items[2].ItemDigest || *f.Evidence.TombstoneIndex != 1 || f.Evidence.TombstoneID != "urn:t:0" {
				t.Errorf("evidence = %+v", f.Evidence)
			}
		}},
		{"projection id used twice", func(sc *scenario, dir string) built {
			return built{leaves: [][]byte{sc.proj("urn:p:0"), sc.proj("urn:p:1"), sc.proj("urn:p:0")}}
		}, receipts.CodeProjectionReplay, 2, func(t *testing.T, f verifier.Finding) {
			if *f.Evidence.FirstIndex != 0 {
				t.Errorf("first index = %d", *f.Evidence.FirstIndex)
			}
		}},
		{"compaction id used twice", func(sc *scenario, dir string) built {
			return built{leaves: [][]byte{sc.comp(dir, "urn:c:0", items[:2], ""), sc.comp(dir, "urn:c:0", items[2:4], "")}}
		}, receipts.CodeCompactionReplay, 1, nil},
		{"tombstone id used twice", func(sc *scenario, dir string) built {
			return built{leaves: [][]byte{sc.tomb("urn:t:0", items[0].ItemDigest, sc.now()), sc.tomb("urn:t:0", items[1].ItemDigest, sc.now())}}
		}, receipts.CodeTombstoneReplay, 1, nil},
		{"item tombstoned twice", func(sc *scenario, dir string) built {
			return built{leaves: [][]byte{sc.tomb("urn:t:0", items[0].ItemDigest, sc.now()), sc.tomb("urn:t:1", items[0].ItemDigest, sc.now())}}
		}, receipts.CodeItemPurged, 1, nil},
		{"supersedes a compaction not in the log", func(sc *scenario, dir string) built {
			return built{leaves: [][]byte{sc.comp(dir, "urn:c:1", items, "urn:c:0")}}
		}, receipts.CodeSupersessionInvalid, 0, nil},
		{"supersedes a compaction logged later", func(sc *scenario, dir string) built {
			return built{leaves: [][]byte{sc.comp(dir, "urn:c:1", items[:3], "urn:c:0"), sc.comp(dir, "urn:c:0", items, "")}}
		}, receipts.CodeSupersessionInvalid, 0, nil},
		{"supersession keeps a purged item", func(sc *scenario, dir string) built {
			return built{leaves: [][]byte{
				sc.comp(dir, "urn:c:0", items, ""),
				sc.tomb("urn:t:0", items[1].ItemDigest, sc.now()),
				sc.comp(dir, "urn:c:1", items[2:], "urn:c:0", items[1].ItemDigest), // also drops item 0, which was not purged
			}}
		}, receipts.CodeSupersessionInvalid, 2, func(t *testing.T, f verifier.Finding) {
			if f.Member != "manifest" || *f.Evidence.CompactionIndex != 0 {
				t.Errorf("finding = %+v %+v", f, f.Evidence)
			}
		}},
		{"supersession's Bloom filter lacks the purged item", func(sc *scenario, dir string) built {
			return built{leaves: [][]byte{
				sc.comp(dir, "urn:c:0", items, ""),
				sc.tomb("urn:t:0", items[1].ItemDigest, sc.now()),
				sc.comp(dir, "urn:c:1", without(items, 1), "urn:c:0"),
			}}
		}, receipts.CodeSupersessionInvalid, 2, func(t *testing.T, f verifier.Finding) {
			if f.Member != "tombstone_bloom_filter_b64" || f.Evidence.Item != items[1].ItemDigest {
				t.Errorf("finding = %+v %+v", f, f.Evidence)
			}
		}},
		{"compaction superseded twice", func(sc *scenario, dir string) built {
			return built{leaves: [][]byte{
				sc.comp(dir, "urn:c:0", items, ""),
				sc.tomb("urn:t:0", items[1].ItemDigest, sc.now()),
				sc.comp(dir, "urn:c:1", without(items, 1), "urn:c:0", items[1].ItemDigest),
				sc.comp(dir, "urn:c:2", without(items, 1), "urn:c:0", items[1].ItemDigest),
			}}
		}, receipts.CodeSupersessionInvalid, 3, func(t *testing.T, f verifier.Finding) {
			if *f.Evidence.FirstIndex != 2 {
				t.Errorf("evidence = %+v", f.Evidence)
			}
		}},
		{"ceiling below the sources' labels", func(sc *scenario, dir string) built {
			mf, _ := receipts.NewManifest(items)
			putManifest(t, dir, mf)
			c, err := receipts.SignCompaction(&receipts.Compaction{EventID: "urn:c:0", SourceItemsMerkleRoot: mf.Root(), SourceItemCount: int64(len(items)),
				CompactedOutputHash: receipts.Digest([]byte("out")), InheritedSensitivityCeiling: "PUBLIC", RetentionPurgeEpoch: 4102444800,
				TombstoneBloomFilterB64: receipts.EmptyBloomFilter}, sc.s.Compactor)
			if err != nil {
				t.Fatal(err)
			}
			return built{leaves: [][]byte{sc.proj("urn:p:0"), c.Canonical()}}
		}, receipts.CodeSensitivityCeilingMismatch, 1, nil},
		{"retention beyond a source's expiry", func(sc *scenario, dir string) built {
			exp := append([]receipts.ManifestItem(nil), items...)
			exp[4].ExpiresAt = 1800000000
			mf, _ := receipts.NewManifest(exp)
			putManifest(t, dir, mf)
			c, err := receipts.SignCompaction(&receipts.Compaction{EventID: "urn:c:0", SourceItemsMerkleRoot: mf.Root(), SourceItemCount: int64(len(items)),
				CompactedOutputHash: receipts.Digest([]byte("out")), InheritedSensitivityCeiling: "CONFIDENTIAL", RetentionPurgeEpoch: 1800000001,
				TombstoneBloomFilterB64: receipts.EmptyBloomFilter}, sc.s.Compactor)
			if err != nil {
				t.Fatal(err)
			}
			return built{leaves: [][]byte{c.Canonical()}}
		}, receipts.CodeRetentionCeilingExceeded, 0, nil},
		{"Bloom filter not in the profile's format", func(sc *scenario, dir string) built {
			mf, _ := receipts.NewManifest(items)
			putManifest(t, dir, mf)
			c, err := receipts.SignCompaction(&receipts.Compaction{EventID: "urn:c:0", SourceItemsMerkleRoot: mf.Root(), SourceItemCount: int64(len(items)),
				CompactedOutputHash: receipts.Digest([]byte("out")), InheritedSensitivityCeiling: "CONFIDENTIAL", RetentionPurgeEpoch: 4102444800,
				TombstoneBloomFilterB64: "base64url_bloom_8B_A8f3_91b0"}, sc.s.Compactor)
			if err != nil {
				t.Fatal(err)
			}
			return built{leaves: [][]byte{c.Canonical()}}
		}, receipts.CodeBloomFilterInvalid, 0, nil},
		{"manifest missing", func(sc *scenario, dir string) built {
			return built{leaves: [][]byte{sc.proj("urn:p:0"), sc.comp("", "urn:c:0", items, "")}}
		}, verifier.CodeManifestMissing, 1, func(t *testing.T, f verifier.Finding) {
			if !receipts.IsDigest(f.Evidence.ManifestRoot) {
				t.Errorf("evidence = %+v", f.Evidence)
			}
		}},
		{"projection from an unpinned adapter", func(sc *scenario, dir string) built {
			other := gen.Deterministic(99)
			other.AdapterID = "urn:memtrail:adapter:other"
			r, _, _ := other.Projection("urn:p:other", sc.now(), 1, 10)
			return built{leaves: [][]byte{sc.proj("urn:p:0"), r.Canonical()}}
		}, receipts.CodeAdapterKeyNotPinned, 1, nil},
		{"compaction from an unregistered compactor", func(sc *scenario, dir string) built {
			other := gen.Deterministic(99)
			c, mf, _ := other.Compaction("urn:c:0", items, "", nil, nil)
			putManifest(t, dir, mf)
			return built{leaves: [][]byte{c.Canonical()}}
		}, receipts.CodeKeyNotPinned, 0, nil},
		{"tombstone purged before its issuer's key was valid", func(sc *scenario, dir string) built {
			return built{leaves: [][]byte{sc.tomb("urn:t:0", items[0].ItemDigest, sc.base.Add(-48*time.Hour))}}
		}, receipts.CodeKeyExpired, 0, nil},
		{"projection signed under a key revoked before created_at", func(sc *scenario, dir string) built {
			trust := sc.s.Trust(sc.base.Add(-24 * time.Hour))
			rev := sc.base.Add(30 * time.Second)
			trust.Adapters[0].Status, trust.Adapters[0].RevokedAt = "revoked", &rev
			sc.n = 60
			return built{leaves: [][]byte{sc.proj("urn:p:0")}, trust: trust}
		}, receipts.CodeAdapterKeyRevoked, 0, nil},
		{"compaction logged after its key was revoked", func(sc *scenario, dir string) built {
			trust := sc.s.Trust(sc.base.Add(-24 * time.Hour))
			rev := sc.base.Add(10 * time.Minute)
			for _, k := range trust.Compactors {
				k.RevokedAt = &rev
			}
			sc.n = 3600 // the projection is dated an hour after the base
			return built{leaves: [][]byte{sc.proj("urn:p:0"), sc.comp(dir, "urn:c:0", items, "")}, trust: trust}
		}, receipts.CodeKeyRevoked, 1, func(t *testing.T, f verifier.Finding) {
			if f.Evidence.LoggedAfter == "" || f.Evidence.KID == "" {
				t.Errorf("evidence = %+v", f.Evidence)
			}
		}},
		{"tombstone back-dated under an issuer key revoked before the log reached it", func(sc *scenario, dir string) built {
			trust := sc.s.Trust(sc.base.Add(-24 * time.Hour))
			rev := sc.base.Add(10 * time.Minute)
			for _, k := range trust.Issuers {
				k.RevokedAt = &rev
			}
			sc.n = 7200 // the projection is dated two hours after the base
			return built{leaves: [][]byte{sc.proj("urn:p:0"), sc.tomb("urn:t:0", items[0].ItemDigest, sc.base)}, trust: trust}
		}, receipts.CodeKeyRevoked, 1, func(t *testing.T, f verifier.Finding) {
			if f.Kind != string(receipts.KindTombstone) || f.Evidence.LoggedAfter == "" || f.Evidence.KID == "" {
				t.Errorf("finding = %+v %+v", f, f.Evidence)
			}
		}},
		{"projection back-dated under an adapter key revoked before the log reached it", func(sc *scenario, dir string) built {
			trust := sc.s.Trust(sc.base.Add(-24 * time.Hour))
			rev := sc.base.Add(10 * time.Minute)
			trust.Adapters[0].Status, trust.Adapters[0].RevokedAt = "revoked", &rev
			return built{leaves: [][]byte{sc.tomb("urn:t:0", items[0].ItemDigest, sc.base.Add(2*time.Hour)), sc.proj("urn:p:0")}, trust: trust}
		}, receipts.CodeAdapterKeyRevoked, 1, func(t *testing.T, f verifier.Finding) {
			if f.Kind != string(receipts.KindProjection) || f.Evidence.LoggedAfter == "" || f.Evidence.KID == "" {
				t.Errorf("finding = %+v %+v", f, f.Evidence)
			}
		}},
		{"entry not canonical", func(sc *scenario, dir string) built {
			p := sc.proj("urn:p:0")
			return built{leaves: [][]byte{append([]byte(" "), p...)}}
		}, verifier.CodeLeafNotCanonical, 0, nil},
		{"entry not a receipt", func(sc *scenario, dir string) built {
			return built{leaves: [][]byte{sc.proj("urn:p:0"), []byte("hello")}}
		}, receipts.CodeRecordInvalid, 1, nil},
		{"signature altered", func(sc *scenario, dir string) built {
			p := sc.proj("urn:p:0")
			p = bytes.Replace(p, []byte(`"urn:p:0"`), []byte(`"urn:p:9"`), 1)
			return built{leaves: [][]byte{p}}
		}, receipts.CodeSignatureInvalid, 0, nil},
		{"compaction produces an erased output", func(sc *scenario, dir string) built {
			return built{leaves: [][]byte{
				sc.tomb("urn:t:0", receipts.Digest([]byte("summary of urn:c:0")), sc.now()),
				sc.comp(dir, "urn:c:0", items, ""),
			}}
		}, receipts.CodeItemPurged, 1, func(t *testing.T, f verifier.Finding) {
			if f.Member != "compacted_output_hash" || f.Evidence.TombstoneID != "urn:t:0" {
				t.Errorf("finding = %+v %+v", f, f.Evidence)
			}
		}},
		{"supersedes an erased compaction", func(sc *scenario, dir string) built {
			return built{leaves: [][]byte{
				sc.comp(dir, "urn:c:0", items, ""),
				sc.tomb("urn:t:0", items[1].ItemDigest, sc.now()),
				sc.tomb("urn:t:1", receipts.Digest([]byte("summary of urn:c:0")), sc.now()),
				sc.comp(dir, "urn:c:1", without(items, 1), "urn:c:0", items[1].ItemDigest),
			}}
		}, receipts.CodeSupersessionInvalid, 3, func(t *testing.T, f verifier.Finding) {
			if f.Member != "supersedes" || f.Evidence.TombstoneID != "urn:t:1" || !strings.Contains(f.Detail, "discharged") {
				t.Errorf("finding = %+v %+v", f, f.Evidence)
			}
		}},
		{"supersedes a compaction whose every item was purged", func(sc *scenario, dir string) built {
			return built{leaves: [][]byte{
				sc.comp(dir, "urn:c:0", items[:1], ""),
				sc.tomb("urn:t:0", items[0].ItemDigest, sc.now()),
				sc.comp(dir, "urn:c:1", items[1:2], "urn:c:0", items[0].ItemDigest),
			}}
		}, receipts.CodeSupersessionInvalid, 2, func(t *testing.T, f verifier.Finding) {
			if !strings.Contains(f.Detail, "no compaction can supersede it") || f.Evidence.CompactedOutputHash != receipts.Digest([]byte("summary of urn:c:0")) {
				t.Errorf("finding = %+v %+v", f, f.Evidence)
			}
		}},
		{"obligation overdue", func(sc *scenario, dir string) built {
			return built{leaves: [][]byte{
				sc.comp(dir, "urn:c:0", items, ""),
				sc.tomb("urn:t:0", items[1].ItemDigest, sc.base),
			}, at: sc.base.Add(24*time.Hour + time.Second)}
		}, verifier.CodeObligationOverdue, 0, func(t *testing.T, f verifier.Finding) {
			if f.Check != verifier.CheckObligations || *f.Evidence.TombstoneIndex != 1 || f.Evidence.AgeSec != 24*3600+1 {
				t.Errorf("finding = %+v %+v", f, f.Evidence)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			sc := newScenario(t)
			b := c.build(sc, dir)
			writeRaw(t, dir, key, b.leaves)
			trust := b.trust
			if trust == nil {
				trust = sc.trust
			}
			at := b.at
			if at.IsZero() {
				at = sc.base.Add(time.Minute)
			}
			rep, st := audit(t, dirSource(t, dir), key, auditRun{trust: trust, at: at})
			if rep.Result != string(c.code) {
				t.Fatalf("result = %s, want %s\n%s", rep.Result, c.code, rep.Summary())
			}
			fs := findingsByCode(rep)[c.code]
			if len(fs) == 0 || fs[0].Index == nil || *fs[0].Index != c.index {
				t.Fatalf("findings = %+v, want %s at index %d", rep.Findings, c.code, c.index)
			}
			if fs[0].Evidence == nil || (fs[0].Check != verifier.CheckObligations && fs[0].Evidence.LeafHash == "") {
				t.Errorf("finding without evidence: %+v", fs[0])
			}
			if c.check != nil {
				c.check(t, fs[0])
			}
			if st == nil {
				t.Errorf("no state saved after a complete audit")
			}
		})
	}
}

// TestAuditValidLineage checks a clean purge-and-supersede history.
func TestAuditValidLineage(t *testing.T) {
	key := newLogKey(t)
	dir := t.TempDir()
	sc := newScenario(t)
	items := gen.Items("v", 8)
	leaves := [][]byte{
		sc.comp(dir, "urn:c:0", items, ""),
		sc.proj("urn:p:0"),
		sc.comp(dir, "urn:c:1", items[:4], ""),
		sc.tomb("urn:t:0", items[1].ItemDigest, sc.now()),
		sc.tomb("urn:t:1", items[5].ItemDigest, sc.now()),
		sc.comp(dir, "urn:c:0b", without(items, 1, 5), "urn:c:0", items[1].ItemDigest, items[5].ItemDigest),
		sc.comp(dir, "urn:c:1b", without(items[:4], 1), "urn:c:1", items[1].ItemDigest),
		sc.tomb("urn:t:2", items[0].ItemDigest, sc.now()),
		sc.comp(dir, "urn:c:0c", without(items, 0, 1, 5), "urn:c:0b", items[0].ItemDigest),
	}
	writeRaw(t, dir, key, leaves)
	rep, st := audit(t, dirSource(t, dir), key, auditRun{trust: sc.trust, at: sc.base.Add(48 * time.Hour)})
	if rep.Result != "obligation_overdue" {
		t.Fatalf("result = %s\n%s", rep.Result, rep.Summary())
	}
	// Compaction 1b still includes item 0, tombstoned at index 7.
	if len(rep.Obligations) != 1 || rep.Obligations[0].CompactionID != "urn:c:1b" || rep.Obligations[0].Item != items[0].ItemDigest {
		t.Fatalf("obligations = %+v", rep.Obligations)
	}
	if st == nil || len(st.Compactions) != 5 || len(st.Tombstones) != 3 {
		t.Fatalf("state = %+v", st)
	}
	// Within the grace period the log is valid, the obligation open.
	rep, _ = audit(t, dirSource(t, dir), key, auditRun{trust: sc.trust, at: sc.base.Add(time.Hour)})
	if !rep.Valid() || len(rep.Obligations) != 1 || rep.Obligations[0].Overdue {
		t.Fatalf("within grace: %s", rep.Summary())
	}
}

// TestAuditTampering alters a log after the fact: an entry bundle, a
// manifest, the checkpoint.
func TestAuditTampering(t *testing.T) {
	key := newLogKey(t)
	build := func(t *testing.T) (string, *scenario) {
		dir := t.TempDir()
		sc := newScenario(t)
		items := gen.Items("t", 4)
		var leaves [][]byte
		for i := range 300 {
			leaves = append(leaves, sc.proj(fmt.Sprintf("urn:p:%d", i)))
		}
		leaves = append(leaves, sc.comp(dir, "urn:c:0", items, ""))
		writeRaw(t, dir, key, leaves)
		return dir, sc
	}
	t.Run("altered entry bundle", func(t *testing.T) {
		dir, sc := build(t)
		p := filepath.Join(dir, "log", filepath.FromSlash(layout.EntriesPath(0, 0)))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b2 := bytes.Replace(b, []byte(`"urn:p:7"`), []byte(`"urn:p:X"`), 1)
		if bytes.Equal(b, b2) {
			t.Fatal("nothing to alter")
		}
		if err := os.WriteFile(p, b2, 0o644); err != nil {
			t.Fatal(err)
		}
		rep, st := audit(t, dirSource(t, dir), key, auditRun{trust: sc.trust, at: sc.base.Add(time.Hour)})
		if rep.Result != string(verifier.CodeTreeRootMismatch) || st != nil {
			t.Fatalf("result %s\n%s", rep.Result, rep.Summary())
		}
		f := findingsByCode(rep)[verifier.CodeTreeRootMismatch][0]
		if f.Index == nil || *f.Index != 7 || f.Evidence.CommittedLeafHash == "" || f.Evidence.LeafHash == f.Evidence.CommittedLeafHash {
			t.Errorf("root mismatch not located at entry 7: %+v %+v", f, f.Evidence)
		}
		if sig := findingsByCode(rep)[receipts.CodeSignatureInvalid]; len(sig) != 1 || *sig[0].Index != 7 {
			t.Errorf("signature findings = %+v", sig)
		}
	})
	t.Run("entry bundle removed", func(t *testing.T) {
		dir, sc := build(t)
		if err := os.Remove(filepath.Join(dir, "log", filepath.FromSlash(layout.EntriesPath(0, 0)))); err != nil {
			t.Fatal(err)
		}
		rep, st := audit(t, dirSource(t, dir), key, auditRun{trust: sc.trust, at: sc.base.Add(time.Hour)})
		if rep.Result != string(verifier.CodeEntryBundleInvalid) || st != nil {
			t.Fatalf("result %s\n%s", rep.Result, rep.Summary())
		}
		if c := checkOutcome(rep, verifier.CheckObligations); c.Outcome != verifier.NotRun {
			t.Errorf("obligations after an unreadable log: %+v", c)
		}
	})
	t.Run("entry bundle truncated", func(t *testing.T) {
		dir, sc := build(t)
		p := filepath.Join(dir, "log", filepath.FromSlash(layout.EntriesPath(1, 45)))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b[:len(b)-10], 0o644); err != nil {
			t.Fatal(err)
		}
		rep, _ := audit(t, dirSource(t, dir), key, auditRun{trust: sc.trust, at: sc.base.Add(time.Hour)})
		if rep.Result != string(verifier.CodeEntryBundleInvalid) {
			t.Fatalf("result %s\n%s", rep.Result, rep.Summary())
		}
	})
	t.Run("manifest removed", func(t *testing.T) {
		dir, sc := build(t)
		if err := os.RemoveAll(filepath.Join(dir, "manifests")); err != nil {
			t.Fatal(err)
		}
		rep, _ := audit(t, dirSource(t, dir), key, auditRun{trust: sc.trust, at: sc.base.Add(time.Hour)})
		if rep.Result != string(verifier.CodeManifestMissing) || *findingsByCode(rep)[verifier.CodeManifestMissing][0].Index != 300 {
			t.Fatalf("result %s\n%s", rep.Result, rep.Summary())
		}
	})
	t.Run("manifest altered", func(t *testing.T) {
		dir, sc := build(t)
		var path string
		filepath.WalkDir(filepath.Join(dir, "manifests"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				path = p
			}
			return nil
		})
		b, _ := os.ReadFile(path)
		os.WriteFile(path, bytes.Replace(b, []byte("INTERNAL"), []byte("PUBLIC"), 1), 0o644)
		rep, _ := audit(t, dirSource(t, dir), key, auditRun{trust: sc.trust, at: sc.base.Add(time.Hour)})
		if rep.Result != string(receipts.CodeMerkleRootMismatch) {
			t.Fatalf("result %s\n%s", rep.Result, rep.Summary())
		}
	})
	t.Run("checkpoint from another key", func(t *testing.T) {
		dir, sc := build(t)
		other := newLogKey(t)
		rep, st := audit(t, dirSource(t, dir), other, auditRun{trust: sc.trust, at: sc.base.Add(time.Hour)})
		if rep.Result != string(verifier.CodeCheckpointInvalid) || st != nil {
			t.Fatalf("result %s\n%s", rep.Result, rep.Summary())
		}
	})
	t.Run("witness quorum not met", func(t *testing.T) {
		dir, sc := build(t)
		_, wvkey, err := mlogGenerateWitnessKey("witness.test")
		if err != nil {
			t.Fatal(err)
		}
		p, err := verifier.ParsePolicy([]byte("log " + key.vkey + "\nwitness w " + wvkey + "\nquorum w\n"))
		if err != nil {
			t.Fatal(err)
		}
		k := key
		k.policy = p
		rep, _ := audit(t, dirSource(t, dir), k, auditRun{trust: sc.trust, at: sc.base.Add(time.Hour)})
		if rep.Result != string(verifier.CodeWitnessQuorum) {
			t.Fatalf("result %s\n%s", rep.Result, rep.Summary())
		}
	})
}

// TestAuditForkAndRollback checks a saved state against a log that forked
// or went back.
func TestAuditForkAndRollback(t *testing.T) {
	key := newLogKey(t)
	sc := newScenario(t)
	var first, second [][]byte
	for i := range 10 {
		first = append(first, sc.proj(fmt.Sprintf("urn:p:%d", i)))
		second = append(second, sc.proj(fmt.Sprintf("urn:q:%d", i)))
	}
	dirA, dirB := t.TempDir(), t.TempDir()
	writeRaw(t, dirA, key, first[:5])
	snapshot := t.TempDir()
	copyDir(t, dirA, snapshot)
	writeRaw(t, dirA, key, first[5:])
	writeRaw(t, dirB, key, second) // same key, same size, other entries
	at := sc.base.Add(time.Hour)

	rep, st := audit(t, dirSource(t, dirA), key, auditRun{trust: sc.trust, at: at})
	if !rep.Valid() || st == nil || st.TreeSize != 10 {
		t.Fatalf("first audit: %s", rep.Summary())
	}
	t.Run("fork", func(t *testing.T) {
		rep, st2 := audit(t, dirSource(t, dirB), key, auditRun{trust: sc.trust, at: at, state: st})
		if rep.Result != string(verifier.CodeLogFork) || st2 != nil || rep.Fork == nil || !rep.Fork.Conclusive || rep.Fork.Kind != verifier.ForkSameSize {
			t.Fatalf("result %s\n%s", rep.Result, rep.Summary())
		}
		if rep.Fork.Older != string(st.Checkpoint) || !strings.HasPrefix(rep.Fork.Newer, testOrigin+"\n10\n") || rep.Fork.Older == rep.Fork.Newer {
			t.Errorf("evidence = %+v", rep.Fork)
		}
		if rep.EntriesAudited != 0 {
			t.Errorf("entries were read after a fork")
		}
	})
	t.Run("fork that grew", func(t *testing.T) {
		dirC := t.TempDir()
		writeRaw(t, dirC, key, append(append([][]byte{}, second...), first...))
		rep, _ := audit(t, dirSource(t, dirC), key, auditRun{trust: sc.trust, at: at, state: st})
		if rep.Result != string(verifier.CodeLogFork) || rep.Fork.Kind != verifier.ForkInconsistent {
			t.Fatalf("result %s\n%s", rep.Result, rep.Summary())
		}
	})
	t.Run("rollback", func(t *testing.T) {
		rep, _ := audit(t, dirSource(t, snapshot), key, auditRun{trust: sc.trust, at: at, state: st})
		if rep.Result != string(verifier.CodeLogRollback) || rep.Fork.Kind != verifier.ForkRollback {
			t.Fatalf("result %s\n%s", rep.Result, rep.Summary())
		}
	})
	t.Run("state of another log", func(t *testing.T) {
		other := newLogKey(t)
		dirD := t.TempDir()
		otherOrigin := other
		writeRaw(t, dirD, otherOrigin, first[:2])
		s2 := *st
		s2.Origin = "example.com/other"
		if _, _, err := verifier.AuditLog(context.Background(), dirSource(t, dirD), verifier.AuditOptions{Policy: other.policy, Trust: sc.trust, At: at, State: &s2}); err == nil {
			t.Errorf("a state of another log was accepted")
		}
	})
}

// TestAuditResumeKeepsOutcomes: a state keeps at most MaxReportedFindings
// findings, receipt findings first, yet a resumed audit must report the
// same check outcomes as an audit of the whole log: a lineage violation
// beyond the cap still fails the lineage check after resuming.
func TestAuditResumeKeepsOutcomes(t *testing.T) {
	key := newLogKey(t)
	sc := newScenario(t)
	dir := t.TempDir()
	leaves := make([][]byte, 0, verifier.MaxReportedFindings+2)
	for i := range verifier.MaxReportedFindings {
		leaves = append(leaves, []byte(fmt.Sprintf("not a receipt %d", i)))
	}
	leaves = append(leaves, sc.proj("urn:p:0"), sc.proj("urn:p:0"))
	writeRaw(t, dir, key, leaves)
	at := sc.base.Add(time.Hour)
	rep, st := audit(t, dirSource(t, dir), key, auditRun{trust: sc.trust, at: at})
	if c := checkOutcome(rep, verifier.CheckLineage); c.Outcome != verifier.Failed || c.Code != receipts.CodeProjectionReplay || st == nil {
		t.Fatalf("first audit: lineage %+v\n%s", c, rep.Summary())
	}
	if !rep.FindingsTruncated || len(rep.Findings) != verifier.MaxReportedFindings || len(findingsByCode(rep)[receipts.CodeProjectionReplay]) != 1 {
		t.Errorf("the truncated findings do not list the lineage check's finding (%d listed, truncated %v)", len(rep.Findings), rep.FindingsTruncated)
	}
	st, err := verifier.ParseAuditState(st.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	writeRaw(t, dir, key, [][]byte{sc.proj("urn:p:1")})
	resumed, _ := audit(t, dirSource(t, dir), key, auditRun{trust: sc.trust, at: at, state: st})
	whole, _ := audit(t, dirSource(t, dir), key, auditRun{trust: sc.trust, at: at})
	if resumed.ResumedFrom == nil || resumed.EntriesAudited != 1 {
		t.Fatalf("not resumed: %s", resumed.Summary())
	}
	for _, name := range []string{verifier.CheckReceipts, verifier.CheckLineage, verifier.CheckObligations} {
		r, w := checkOutcome(resumed, name), checkOutcome(whole, name)
		if r.Outcome != w.Outcome || r.Code != w.Code || r.Member != w.Member {
			t.Errorf("%s: resumed %+v, whole log %+v", name, r, w)
		}
	}
	if c := checkOutcome(resumed, verifier.CheckLineage); c.Outcome != verifier.Failed || c.Code != receipts.CodeProjectionReplay {
		t.Errorf("resumed: lineage %+v", c)
	}
	if resumed.Result != whole.Result || !reflect.DeepEqual(resumed.FindingCounts, whole.FindingCounts) {
		t.Errorf("resumed: %s %v; whole log: %s %v", resumed.Result, resumed.FindingCounts, whole.Result, whole.FindingCounts)
	}
}

// TestAuditResume checks that a resumed audit reads only new entries,
// carries earlier findings, finds an id reused across the boundary, and
// audits everything again when the trust file changed.
func TestAuditResume(t *testing.T) {
	key := newLogKey(t)
	sc := newScenario(t)
	dir := t.TempDir()
	items := gen.Items("r", 4)
	writeRaw(t, dir, key, [][]byte{sc.proj("urn:p:0"), []byte("not a receipt"), sc.comp(dir, "urn:c:0", items, "")})
	at := sc.base.Add(time.Hour)
	rep, st := audit(t, dirSource(t, dir), key, auditRun{trust: sc.trust, at: at})
	if rep.Result != "record_invalid" || st == nil {
		t.Fatalf("first audit: %s", rep.Summary())
	}
	st, err := verifier.ParseAuditState(st.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	writeRaw(t, dir, key, [][]byte{
		sc.tomb("urn:t:0", items[0].ItemDigest, sc.now()),
		sc.proj("urn:p:0"),
		sc.comp(dir, "urn:c:1", items[1:], "urn:c:0", items[0].ItemDigest),
	})
	rep, st2 := audit(t, dirSource(t, dir), key, auditRun{trust: sc.trust, at: at, state: st})
	if rep.EntriesAudited != 3 || *rep.ResumedFrom != 3 {
		t.Fatalf("resumed: %s", rep.Summary())
	}
	codes := findingsByCode(rep)
	if len(codes["record_invalid"]) != 1 || *codes["record_invalid"][0].Index != 1 {
		t.Errorf("the earlier finding was not carried: %+v", rep.Findings)
	}
	if len(codes["projection_replay"]) != 1 || *codes["projection_replay"][0].Index != 4 || *codes["projection_replay"][0].Evidence.FirstIndex != 0 {
		t.Errorf("replay across the boundary: %+v", rep.Findings)
	}
	if len(rep.Obligations) != 0 || rep.Result != "record_invalid" {
		t.Errorf("result %s, obligations %+v", rep.Result, rep.Obligations)
	}
	if st2.FindingCounts["record_invalid"] != 1 || st2.FindingCounts["projection_replay"] != 1 {
		t.Errorf("state finding counts = %v", st2.FindingCounts)
	}

	// Nothing new: nothing read, same result.
	rep, _ = audit(t, dirSource(t, dir), key, auditRun{trust: sc.trust, at: at, state: st2})
	if rep.EntriesAudited != 0 || rep.Result != "record_invalid" || rep.Counts.Projections != 2 {
		t.Errorf("idle resume: %s", rep.Summary())
	}

	// Another trust file: everything again.
	trust2 := sc.s.Trust(sc.base.Add(-2 * time.Hour))
	rep, _ = audit(t, dirSource(t, dir), key, auditRun{trust: trust2, at: at, state: st2})
	if rep.EntriesAudited != 6 || rep.ResumedFrom != nil || rep.Result != "record_invalid" {
		t.Errorf("trust changed: %s", rep.Summary())
	}
}

func TestAuditStateRoundTrip(t *testing.T) {
	key := newLogKey(t)
	sc := newScenario(t)
	dir := t.TempDir()
	items := gen.Items("s", 3)
	writeRaw(t, dir, key, [][]byte{sc.proj("urn:p:0"), sc.comp(dir, "urn:c:0", items, ""), sc.tomb("urn:t:0", items[0].ItemDigest, sc.now()), []byte("x")})
	_, st := audit(t, dirSource(t, dir), key, auditRun{trust: sc.trust, at: sc.base.Add(time.Hour)})
	b := st.Marshal()
	back, err := verifier.ParseAuditState(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Marshal(), b) {
		t.Errorf("round trip changed the state:\n%s\n%s", b, back.Marshal())
	}
	bad := map[string]string{
		"unknown member":     strings.Replace(string(b), `"origin"`, `"Origin2":1,"origin"`, 1),
		"case-folded member": strings.Replace(string(b), `"origin"`, `"Origin"`, 1),
		"wrong version":      strings.Replace(string(b), verifier.StateVersion, "memtrail-audit-state/v0", 1),
		"size off by one":    strings.Replace(string(b), `"tree_size":4`, `"tree_size":5`, 1),
		"duplicate member":   strings.Replace(string(b), `"origin"`, `"trust_digest":"x","origin"`, 1),
		"unknown kind":       strings.Replace(string(b), `"ids":{`, `"ids":{"other":{},`, 1),
		"not json":           "{",
	}
	for name, in := range bad {
		if _, err := verifier.ParseAuditState([]byte(in)); !errors.Is(err, verifier.ErrMalformed) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		target := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// mlogGenerateWitnessKey makes a cosignature/v1 witness key pair.
func mlogGenerateWitnessKey(name string) (string, string, error) {
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		return "", "", err
	}
	cvkey, err := fnote.VKeyToCosignatureV1(vkey)
	return skey, cvkey, err
}

// TestAuditOutputErasure: on a real log, a compaction whose every item was
// purged stays an open obligation that only a tombstone of its output can
// discharge, and the finding says so; once the output is tombstoned the
// log is valid, in a full audit and in a resumed one.
func TestAuditOutputErasure(t *testing.T) {
	dir := t.TempDir()
	key := newLogKey(t)
	s := gen.Deterministic(5)
	now := time.Now().UTC().Truncate(time.Second)
	trust := s.Trust(now.Add(-time.Hour))
	l := openRealLog(t, dir, key, s, trust)
	items := gen.Items("gone", 3)
	c, mf, err := s.Compaction("urn:c:gone", items, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	part, pmf, err := s.Compaction("urn:c:part", gen.Items("part", 2), "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	tomb := func(id, item string) *receipts.Submission {
		ts, err := s.Tombstone(id, item, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return &receipts.Submission{Receipt: ts}
	}
	ci := l.submit(&receipts.Submission{Receipt: c, Manifest: mf})
	l.submit(&receipts.Submission{Receipt: part, Manifest: pmf})
	for i, it := range items {
		l.submit(tomb(fmt.Sprintf("urn:t:%d", i), it.ItemDigest))
	}
	last := l.submit(tomb("urn:t:part", pmf.Items[0].ItemDigest))
	l.waitPublished(last + 1)
	l.close()

	at := now.Add(time.Hour)
	rep, st := audit(t, dirSource(t, dir), key, auditRun{trust: trust, at: at, grace: time.Second})
	if rep.Result != string(verifier.CodeObligationOverdue) || len(rep.Obligations) != 4 {
		t.Fatalf("audit with every item purged: %s", rep.Summary())
	}
	for _, o := range rep.Obligations {
		want := verifier.DischargeErasure
		if o.CompactionID == "urn:c:part" {
			want = verifier.DischargeSupersessionOrErasure
		}
		if o.Discharge != want || o.CompactedOutputHash == "" {
			t.Errorf("obligation %+v: discharge %q, want %q", o, o.Discharge, want)
		}
	}
	var gone verifier.Finding
	for _, f := range findingsByCode(rep)[verifier.CodeObligationOverdue] {
		if f.ID == "urn:c:gone" {
			gone = f
		}
	}
	if gone.Index == nil || *gone.Index != ci || !strings.Contains(gone.Detail, "only a tombstone of its output "+c.CompactedOutputHash) ||
		gone.Evidence.CompactedOutputHash != c.CompactedOutputHash {
		t.Errorf("finding for the fully purged compaction = %+v", gone)
	}
	if !strings.Contains(rep.Summary(), "only a tombstone of its output") {
		t.Errorf("summary does not say how to discharge it:\n%s", rep.Summary())
	}

	// Erase both outputs.
	l = openRealLog(t, dir, key, s, trust)
	l.submit(tomb("urn:t:out", c.CompactedOutputHash))
	last = l.submit(tomb("urn:t:out-part", part.CompactedOutputHash))
	l.waitPublished(last + 1)
	l.close()
	saved, err := verifier.ParseAuditState(st.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	resumed, _ := audit(t, dirSource(t, dir), key, auditRun{trust: trust, at: at, grace: time.Second, state: saved})
	full, _ := audit(t, dirSource(t, dir), key, auditRun{trust: trust, at: at, grace: time.Second})
	for name, r := range map[string]*verifier.AuditReport{"resumed": resumed, "full": full} {
		if !r.Valid() || len(r.Obligations) != 0 {
			t.Errorf("%s audit after the outputs' tombstones: %s", name, r.Summary())
		}
	}
}
