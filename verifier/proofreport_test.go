package verifier_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
	"github.com/memtrail/memtrail/verifier/backend"
)

// TestReceiptProofAndConsistency takes proofs from a real log and checks
// them, and consistency between its checkpoints.
func TestReceiptProofAndConsistency(t *testing.T) {
	dir := t.TempDir()
	key := newLogKey(t)
	s := gen.Deterministic(11)
	now := time.Now().UTC()
	l := openRealLog(t, dir, key, s, s.Trust(now.Add(-time.Hour)))
	defer l.close()
	ctx := context.Background()
	var recs []*receipts.ProjectionRecord
	for i := range 5 {
		r, _, err := s.Projection("urn:p:"+string(rune('a'+i)), time.Now().UTC(), 2, 50)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
		l.submit(&receipts.Submission{Receipt: r})
	}
	l.waitPublished(5)
	old, _, err := l.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	items := gen.Items("pr", 3)
	c, mf, err := s.Compaction("urn:c:pr", items, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ci := l.submit(&receipts.Submission{Receipt: c, Manifest: mf})
	l.waitPublished(ci + 1)
	newer, _, err := l.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}

	proof, err := l.LatestInclusionProof(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	rep := verifier.VerifyReceiptProof(key.policy, proof, recs[2].Canonical())
	if !rep.Valid() || *rep.Index != 2 || rep.ReceiptID != recs[2].ProjectionID {
		t.Fatalf("proof of entry 2: %s", rep.Summary())
	}
	if rep := verifier.VerifyReceiptProof(key.policy, proof, recs[3].Canonical()); rep.Result != "inclusion_proof_invalid" {
		t.Errorf("proof for another receipt: %s", rep.Summary())
	}
	if rep := verifier.VerifyReceiptProof(newLogKey(t).policy, proof, recs[2].Canonical()); rep.Result != "checkpoint_invalid" {
		t.Errorf("proof under another policy: %s", rep.Summary())
	}
	if rep := verifier.VerifyReceiptProof(key.policy, proof[:40], recs[2].Canonical()); rep.Result != "proof_malformed" {
		t.Errorf("truncated proof: %s", rep.Summary())
	}
	if rep := verifier.VerifyReceiptProof(key.policy, proof, []byte("{}")); rep.Result != "record_invalid" {
		t.Errorf("not a receipt: %s", rep.Summary())
	}
	// A compaction proves from its ECCR or its submission form.
	cproof, err := l.LatestInclusionProof(ctx, ci)
	if err != nil {
		t.Fatal(err)
	}
	if rep := verifier.VerifyReceiptProof(key.policy, cproof, gen.CompactionSubmission(c, mf)); !rep.Valid() || rep.ReceiptKind != "compaction" {
		t.Errorf("compaction submission: %s", rep.Summary())
	}
	if rep := verifier.VerifyReceiptProof(key.policy, cproof, c.Canonical()); !rep.Valid() {
		t.Errorf("compaction: %s", rep.Summary())
	}

	// Consistency from the log.
	src, err := backend.NewDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	path, err := l.ConsistencyProof(ctx, 5, ci+1)
	if err != nil {
		t.Fatal(err)
	}
	crep := verifier.VerifyCheckpoints(key.policy, old, newer, path)
	if !crep.Valid() || *crep.OldSize != 5 || *crep.NewSize != ci+1 {
		t.Fatalf("consistency: %s", crep.Summary())
	}
	tiles, err := src.ConsistencyProof(ctx, 5, ci+1)
	if err != nil || len(tiles) != len(path) {
		t.Errorf("proof from the tiles = %d hashes, %v", len(tiles), err)
	}
	if crep := verifier.VerifyCheckpoints(key.policy, newer, old, nil); crep.Result != "log_rollback" || crep.Fork == nil {
		t.Errorf("reversed: %s", crep.Summary())
	}
	bad := append([][]byte(nil), path...)
	bad[0] = make([]byte, 32)
	if crep := verifier.VerifyCheckpoints(key.policy, old, newer, bad); crep.Result != "log_fork" || crep.Fork.Kind != verifier.ForkInconsistent {
		t.Errorf("bad proof: %s", crep.Summary())
	}
	if crep := verifier.VerifyCheckpoints(key.policy, old, []byte("junk"), path); crep.Result != "proof_malformed" {
		t.Errorf("junk checkpoint: %s", crep.Summary())
	}
}

// TestForkEvidence checks the fork report of two checkpoints of one size.
func TestForkEvidence(t *testing.T) {
	key := newLogKey(t)
	sc := newScenario(t)
	a, b := t.TempDir(), t.TempDir()
	writeRaw(t, a, key, [][]byte{sc.proj("urn:p:1"), sc.proj("urn:p:2")})
	writeRaw(t, b, key, [][]byte{sc.proj("urn:p:1"), sc.proj("urn:p:3")})
	ca, _ := dirSource(t, a).ReadCheckpoint(context.Background())
	cb, _ := dirSource(t, b).ReadCheckpoint(context.Background())
	rep := verifier.VerifyCheckpoints(key.policy, ca, cb, nil)
	if rep.Result != "log_fork" || !rep.Fork.Conclusive || rep.Fork.Older != string(ca) || rep.Fork.Newer != string(cb) {
		t.Fatalf("fork: %s", rep.Summary())
	}
	if s := rep.Summary(); !strings.Contains(s, "same_size_different_root") || !strings.Contains(s, testOrigin) {
		t.Errorf("summary = %s", s)
	}
}

func TestParseConsistencyAnswer(t *testing.T) {
	h := "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
	for _, c := range []struct {
		in   string
		n    int
		fail bool
	}{
		{`{"from":1,"to":2,"proof":["` + h + `"]}`, 1, false},
		{`{"from":1,"to":3,"proof":["` + h + `"]}`, 0, true},
		{`{"from":1,"to":2,"proof":["` + h + `"],"x":1}`, 0, true},
		{h + "\n" + h + "\n", 2, false},
		{"", 0, false},
		{"AAAA\n", 0, true},
	} {
		p, err := backend.ParseConsistencyAnswer([]byte(c.in), 1, 2)
		if (err != nil) != c.fail || len(p) != c.n {
			t.Errorf("ParseConsistencyAnswer(%q) = %d hashes, %v", c.in, len(p), err)
		}
	}
}
