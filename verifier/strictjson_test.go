package verifier_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/verifier"
)

// TestLoneSurrogateRefused checks that the material, policy and state files
// are read by the strict I-JSON reader receipts are read with: a string
// holding a lone surrogate escape is refused, not read as U+FFFD, as are the
// other inputs I-JSON forbids. Each document is accepted as it is before the
// escape is put in it.
func TestLoneSurrogateRefused(t *testing.T) {
	material := `{"native_source_results_by_position":[{"valid":true,"formatVersion":2,` +
		`"sealedObjectDigest":"sha256:0000000000000000000000000000000000000000000000000000000000000000",` +
		`"derivedTrust":"self","authorship":"AUTHOR","authorKeyIdB64u":null,"custodyPresent":false}]}`
	policy := `{"expected_source_profile":"AUTHOR","max_clock_skew_sec":30}`

	key := newLogKey(t)
	sc := newScenario(t)
	dir := t.TempDir()
	writeRaw(t, dir, key, [][]byte{sc.proj("urn:p:0"), sc.comp(dir, "urn:c:0", gen.Items("s", 2), ""), []byte("x")})
	_, st := audit(t, dirSource(t, dir), key, auditRun{trust: sc.trust, at: sc.base.Add(time.Hour)})
	state := strings.Replace(string(st.Marshal()), `"finding_counts":{`, `"finding_counts":{"AUTHOR":1,`, 1)

	for _, doc := range []struct {
		name  string
		text  string
		parse func([]byte) error
	}{
		{"material", material, func(b []byte) error { _, err := verifier.ParseMaterial(b); return err }},
		{"policy", policy, func(b []byte) error { _, err := verifier.ParseVerificationPolicy(b); return err }},
		{"state", state, func(b []byte) error { _, err := verifier.ParseAuditState(b); return err }},
	} {
		if !strings.Contains(doc.text, "AUTHOR") {
			t.Fatalf("%s: no place for the test strings in %s", doc.name, doc.text)
		}
		if err := doc.parse([]byte(strings.Replace(doc.text, "AUTHOR", "author", 1))); err != nil {
			t.Fatalf("%s: the document without the bad string is refused: %v", doc.name, err)
		}
		for _, bad := range []string{`\ud800`, `x\udc00`, `\ud800\u0041`, `\uffff`, `\ufdd0`} {
			err := doc.parse([]byte(strings.Replace(doc.text, "AUTHOR", bad, 1)))
			var ie *verifier.InputError
			if !errors.As(err, &ie) || !errors.Is(err, verifier.ErrMalformed) || !strings.Contains(ie.Reason, "strict I-JSON") {
				t.Errorf("%s with %q: err = %v, want a strict I-JSON refusal", doc.name, bad, err)
			}
		}
	}
}
