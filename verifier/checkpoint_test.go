package verifier

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"
)

// vectorsDir holds the shared interop vectors, beside the repository checkout.
const vectorsDir = "../conformance/vectors"

// readVector reads a file under vectorsDir. A missing file fails the test:
// CI lays out shared/ beside the checkout, so absence is a setup bug.
func readVector(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorsDir, path))
	if err != nil {
		t.Fatalf("reading vector (conformance/vectors): %v", err)
	}
	return b
}

// detReader is a deterministic stream of bytes derived from a label, for
// reproducible keys.
type detReader struct {
	label string
	ctr   uint64
	buf   []byte
}

func (r *detReader) Read(p []byte) (int, error) {
	for len(r.buf) < len(p) {
		h := sha256.Sum256(binary.BigEndian.AppendUint64([]byte(r.label), r.ctr))
		r.ctr++
		r.buf = append(r.buf, h[:]...)
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// testLog is a log key: an Ed25519 signed-note key named by the origin.
type testLog struct {
	origin string
	vkey   string
	signer note.Signer
}

func newTestLog(t testing.TB, origin string) *testLog {
	return newTestLogKey(t, origin, "log key "+origin)
}

func newTestLogKey(t testing.TB, origin, seed string) *testLog {
	t.Helper()
	skey, vkey, err := note.GenerateKey(&detReader{label: seed}, origin)
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return &testLog{origin: origin, vkey: vkey, signer: s}
}

// testWitness is an Ed25519 cosignature/v1 key (vkey type 0x04).
type testWitness struct {
	keyName string
	vkey    string
	priv    ed25519.PrivateKey
	hash    uint32
}

func newTestWitness(t testing.TB, keyName string) *testWitness {
	t.Helper()
	seed := sha256.Sum256([]byte("witness key " + keyName))
	priv := ed25519.NewKeyFromSeed(seed[:])
	v1, err := note.NewEd25519VerifierKey(keyName, priv.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := fnote.VKeyToCosignatureV1(v1)
	if err != nil {
		t.Fatal(err)
	}
	v, err := fnote.NewVerifierForCosignatureV1(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return &testWitness{keyName: keyName, vkey: vkey, priv: priv, hash: v.KeyHash()}
}

// at returns a signer of cosignature/v1 with a fixed timestamp, so that
// fixtures are reproducible.
func (w *testWitness) at(timestamp uint64) note.Signer {
	return &cosigner{w: w, timestamp: timestamp}
}

type cosigner struct {
	w         *testWitness
	timestamp uint64
}

func (c *cosigner) Name() string    { return c.w.keyName }
func (c *cosigner) KeyHash() uint32 { return c.w.hash }
func (c *cosigner) Sign(msg []byte) ([]byte, error) {
	signed := fmt.Appendf(nil, "cosignature/v1\ntime %d\n%s", c.timestamp, msg)
	sig := binary.BigEndian.AppendUint64(nil, c.timestamp)
	return append(sig, ed25519.Sign(c.w.priv, signed)...), nil
}

// testTime is the cosignature timestamp of the fixtures: 2026-08-01T00:00:00Z.
const testTime = 1785542400

func checkpointText(origin string, size uint64, root []byte, ext ...string) string {
	s := fmt.Sprintf("%s\n%d\n%s\n", origin, size, base64.StdEncoding.EncodeToString(root))
	for _, e := range ext {
		s += e + "\n"
	}
	return s
}

func signNote(t testing.TB, text string, signers ...note.Signer) []byte {
	t.Helper()
	b, err := note.Sign(&note.Note{Text: text}, signers...)
	if err != nil {
		t.Fatalf("signing %q: %v", text, err)
	}
	return b
}

// nonCanonical returns the base64 of a 32-byte hash with non-zero padding
// bits: it decodes leniently to the same bytes but is not canonical.
func nonCanonical(b64 string) string {
	last := byte('B') // value 1: a padding bit set
	if b64[42] == 'B' {
		last = 'C'
	}
	return b64[:42] + string(last) + "="
}

func mustPolicy(t testing.TB, text string) *Policy {
	t.Helper()
	p, err := ParsePolicy([]byte(text))
	if err != nil {
		t.Fatalf("ParsePolicy(%q) = %v", text, err)
	}
	return p
}

// testTree returns a tree of n leaves "leaf 0", "leaf 1", ...
func testTree(n int) *testonly.Tree {
	tr := testonly.New(rfc6962.DefaultHasher)
	for i := range n {
		tr.AppendData([]byte(fmt.Sprintf("leaf %d", i)))
	}
	return tr
}

// fixture is a log with three Ed25519 witnesses and one ML-DSA-44 witness.
type fixture struct {
	log        *testLog
	w1, w2, w3 *testWitness
	policy     *Policy // group of w1 w2 w3 with threshold 2
}

func newFixture(t testing.TB) *fixture {
	f := &fixture{
		log: newTestLog(t, "example.com/log"),
		w1:  newTestWitness(t, "witness1.example"),
		w2:  newTestWitness(t, "witness2.example"),
		w3:  newTestWitness(t, "witness3.example"),
	}
	f.policy = mustPolicy(t, fmt.Sprintf(`log %s https://log.example.com/
witness w1 %s
witness w2 %s
witness w3 %s
group g 2 w1 w2 w3
quorum g
`, f.log.vkey, f.w1.vkey, f.w2.vkey, f.w3.vkey))
	return f
}

func TestOpenCheckpoint(t *testing.T) {
	f := newFixture(t)
	tr := testTree(13)
	text := checkpointText(f.log.origin, 13, tr.Hash())
	stranger := newTestWitness(t, "stranger.example")
	otherLog := newTestLog(t, "example.com/other")

	for _, tt := range []struct {
		name    string
		signed  []byte
		want    []string // witnesses that cosigned, in signature order
		wantExt []string
	}{
		{"two of three", signNote(t, text, f.log.signer, f.w1.at(testTime), f.w2.at(testTime+1)), []string{"w1", "w2"}, nil},
		{"three of three", signNote(t, text, f.w3.at(testTime), f.log.signer, f.w1.at(testTime), f.w2.at(testTime)), []string{"w3", "w1", "w2"}, nil},
		{"unknown signatures ignored", signNote(t, text, stranger.at(testTime), f.log.signer, otherLog.signer, f.w1.at(testTime), f.w3.at(testTime)), []string{"w1", "w3"}, nil},
		{"extension lines", signNote(t, checkpointText(f.log.origin, 13, tr.Hash(), "ext one", "ext two"), f.log.signer, f.w1.at(testTime), f.w2.at(testTime)), []string{"w1", "w2"}, []string{"ext one", "ext two"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := OpenCheckpoint(f.policy, tt.signed)
			if err != nil {
				t.Fatalf("OpenCheckpoint() = %v", err)
			}
			if c.Origin != f.log.origin || c.Size != 13 || !bytes.Equal(c.Hash[:], tr.Hash()) {
				t.Errorf("OpenCheckpoint() = %q %d %x, want %q 13 %x", c.Origin, c.Size, c.Hash, f.log.origin, tr.Hash())
			}
			if c.LogKey != f.log.vkey {
				t.Errorf("LogKey = %q, want %q", c.LogKey, f.log.vkey)
			}
			var got []string
			for _, cs := range c.Cosignatures {
				got = append(got, cs.Witness)
				if cs.Time.Unix() < testTime || cs.Time.Unix() > testTime+1 || cs.Time.Location() != time.UTC {
					t.Errorf("cosignature %s time = %v, want about %v UTC", cs.Witness, cs.Time, time.Unix(testTime, 0))
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("cosigned by %q, want %q", got, tt.want)
			}
			if strings.Join(c.Extensions, "|") != strings.Join(tt.wantExt, "|") {
				t.Errorf("Extensions = %q, want %q", c.Extensions, tt.wantExt)
			}
			if !bytes.Equal(c.Raw, tt.signed) {
				t.Errorf("Raw differs from the input")
			}
		})
	}
}

func TestOpenCheckpointCosignatureDetails(t *testing.T) {
	f := newFixture(t)
	text := checkpointText(f.log.origin, 1, rfc6962.DefaultHasher.HashLeaf([]byte("x")))
	c, err := OpenCheckpoint(f.policy, signNote(t, text, f.log.signer, f.w2.at(testTime), f.w3.at(testTime+60)))
	if err != nil {
		t.Fatal(err)
	}
	want := []Cosignature{
		{Witness: "w2", KeyName: "witness2.example", KeyHash: f.w2.hash, Time: time.Unix(testTime, 0).UTC()},
		{Witness: "w3", KeyName: "witness3.example", KeyHash: f.w3.hash, Time: time.Unix(testTime+60, 0).UTC()},
	}
	if len(c.Cosignatures) != len(want) {
		t.Fatalf("Cosignatures = %+v, want %+v", c.Cosignatures, want)
	}
	for i := range want {
		if got := c.Cosignatures[i]; got != want[i] {
			t.Errorf("Cosignatures[%d] = %+v, want %+v", i, got, want[i])
		}
	}
}

func TestOpenCheckpointKeyRotation(t *testing.T) {
	old := newTestLogKey(t, "example.com/log", "old key")
	cur := newTestLogKey(t, "example.com/log", "current key")
	p := mustPolicy(t, "log "+old.vkey+"\nlog "+cur.vkey+"\nquorum none\n")
	text := checkpointText("example.com/log", 1, rfc6962.DefaultHasher.HashLeaf(nil))
	for _, l := range []*testLog{old, cur} {
		c, err := OpenCheckpoint(p, signNote(t, text, l.signer))
		if err != nil {
			t.Fatalf("OpenCheckpoint(signed by %s) = %v", l.vkey, err)
		}
		if c.LogKey != l.vkey {
			t.Errorf("LogKey = %q, want %q", c.LogKey, l.vkey)
		}
	}
}

func TestOpenCheckpointMLDSA(t *testing.T) {
	l := newTestLog(t, "example.com/log")
	skey, vkey, err := fnote.GenerateMLDSAKey("pq-witness.example")
	if err != nil {
		t.Fatal(err)
	}
	pq, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		t.Fatal(err)
	}
	ed := newTestWitness(t, "witness1.example")
	p := mustPolicy(t, fmt.Sprintf("log %s\nwitness pq %s\nwitness ed %s\ngroup both all pq ed\nquorum both\n", l.vkey, vkey, ed.vkey))
	text := checkpointText(l.origin, 5, testTree(5).Hash())

	before := time.Now().Add(-time.Minute)
	c, err := OpenCheckpoint(p, signNote(t, text, l.signer, pq, ed.at(testTime)))
	if err != nil {
		t.Fatalf("OpenCheckpoint() = %v", err)
	}
	if len(c.Cosignatures) != 2 || c.Cosignatures[0].Witness != "pq" || c.Cosignatures[0].Time.Before(before) {
		t.Errorf("Cosignatures = %+v, want pq (now) and ed", c.Cosignatures)
	}
	_, err = OpenCheckpoint(p, signNote(t, text, l.signer, ed.at(testTime)))
	if !errors.Is(err, ErrQuorum) {
		t.Errorf("OpenCheckpoint(without the ML-DSA cosignature) = %v, want ErrQuorum", err)
	}
}

// TestOpenCheckpointMLDSALog checks that a log signing with an ML-DSA-44
// key, whose signature does not cover extension lines, cannot vouch for them.
func TestOpenCheckpointMLDSALog(t *testing.T) {
	skey, vkey, err := fnote.GenerateMLDSAKey("example.com/pq-log")
	if err != nil {
		t.Fatal(err)
	}
	pq, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		t.Fatal(err)
	}
	ed := newTestLog(t, "example.com/pq-log")
	root := testTree(4).Hash()
	p := mustPolicy(t, "log "+vkey+"\nlog "+ed.vkey+"\nquorum none\n")
	plain := signNote(t, checkpointText("example.com/pq-log", 4, root), pq)
	if c, err := OpenCheckpoint(p, plain); err != nil || c.LogKey != vkey {
		t.Errorf("OpenCheckpoint(ML-DSA-44 log) = %+v, %v", c, err)
	}
	signed := signNote(t, checkpointText("example.com/pq-log", 4, root), pq)
	withExt := strings.Replace(string(signed), "\n\n", "\nadded later\n\n", 1)
	_, err = OpenCheckpoint(p, []byte(withExt))
	if !errors.Is(err, ErrLogSignature) || !strings.Contains(err.Error(), "extension lines") {
		t.Errorf("OpenCheckpoint(ML-DSA-44 log, extension added after signing) = %v, want ErrLogSignature", err)
	}
	// With an Ed25519 log signature too, the extension lines are covered.
	both := signNote(t, checkpointText("example.com/pq-log", 4, root, "ext"), pq, ed.signer)
	if c, err := OpenCheckpoint(p, both); err != nil || c.LogKey != ed.vkey {
		t.Errorf("OpenCheckpoint(ML-DSA-44 and Ed25519 log) = %+v, %v, want LogKey %s", c, err, ed.vkey)
	}
}

func TestOpenCheckpointErrors(t *testing.T) {
	f := newFixture(t)
	tr := testTree(13)
	root := tr.Hash()
	text := checkpointText(f.log.origin, 13, root)
	quorum := []note.Signer{f.log.signer, f.w1.at(testTime), f.w2.at(testTime)}
	good := signNote(t, text, quorum...)
	otherLog := newTestLog(t, "example.com/other")
	impostor := newTestLogKey(t, f.log.origin, "impostor")
	twoLogs := mustPolicy(t, fmt.Sprintf("log %s\nlog %s\nquorum none\n", f.log.vkey, otherLog.vkey))

	// signedBy signs arbitrary text with the quorum, so that only the text
	// is wrong.
	signedBy := func(text string) []byte { return signNote(t, text, quorum...) }
	// flip changes one base64 character of the signature line of name.
	flip := func(b []byte, name string) []byte {
		i := bytes.Index(b, []byte("— "+name+" "))
		if i < 0 {
			t.Fatalf("no signature from %s", name)
		}
		j := i + len("— "+name+" ") + 10
		out := bytes.Clone(b)
		if out[j] == 'A' {
			out[j] = 'B'
		} else {
			out[j] = 'A'
		}
		return out
	}
	b64 := base64.StdEncoding.EncodeToString(root)

	for _, tt := range []struct {
		name   string
		policy *Policy
		signed []byte
		want   error
	}{
		{"quorum not met", f.policy, signNote(t, text, f.log.signer, f.w1.at(testTime)), ErrQuorum},
		{"log signature only", f.policy, signNote(t, text, f.log.signer), ErrQuorum},
		{"same witness twice", f.policy, append(signNote(t, text, f.log.signer, f.w1.at(testTime)), []byte(strings.SplitAfter(string(signNote(t, text, f.w1.at(testTime+5))), "\n\n")[1])...), ErrQuorum},
		{"no log signature", f.policy, signNote(t, text, f.w1.at(testTime), f.w2.at(testTime), f.w3.at(testTime)), ErrLogSignature},
		{"unknown key only", f.policy, signNote(t, text, impostor.signer), ErrLogSignature},
		{"impostor log key", f.policy, signNote(t, text, impostor.signer, f.w1.at(testTime), f.w2.at(testTime)), ErrLogSignature},
		{"log of another origin", twoLogs, signNote(t, text, otherLog.signer), ErrLogSignature},
		{"unknown origin", twoLogs, signNote(t, checkpointText("example.com/third", 13, root), f.log.signer, otherLog.signer), ErrLogSignature},
		{"text altered", f.policy, bytes.Replace(good, []byte("\n13\n"), []byte("\n14\n"), 1), ErrInvalidSignature},
		{"log signature altered", f.policy, flip(good, f.log.origin), ErrInvalidSignature},
		{"cosignature altered", f.policy, flip(good, "witness2.example"), ErrInvalidSignature},
		{"timestamp beyond 2^63-1", f.policy, signNote(t, text, f.log.signer, f.w1.at(1<<63), f.w2.at(testTime)), ErrMalformed},

		{"empty", f.policy, nil, ErrMalformed},
		{"text only", f.policy, []byte(text), ErrMalformed},
		{"no final newline", f.policy, bytes.TrimSuffix(good, []byte("\n")), ErrMalformed},
		{"CRLF", f.policy, bytes.ReplaceAll(good, []byte("\n"), []byte("\r\n")), ErrMalformed},
		{"invalid UTF-8", f.policy, signedBy(checkpointText("example.com/log\xff", 13, root)), ErrMalformed},
		{"two lines", f.policy, signedBy(f.log.origin + "\n13\n"), ErrMalformed},
		{"empty origin", f.policy, signedBy("\n13\n" + b64 + "\n"), ErrMalformed},
		{"size with leading zero", f.policy, signedBy(f.log.origin + "\n013\n" + b64 + "\n"), ErrMalformed},
		{"size with sign", f.policy, signedBy(f.log.origin + "\n+13\n" + b64 + "\n"), ErrMalformed},
		{"negative size", f.policy, signedBy(f.log.origin + "\n-13\n" + b64 + "\n"), ErrMalformed},
		{"size beyond 2^64-1", f.policy, signedBy(f.log.origin + "\n18446744073709551616\n" + b64 + "\n"), ErrMalformed},
		{"size with space", f.policy, signedBy(f.log.origin + "\n13 \n" + b64 + "\n"), ErrMalformed},
		{"hash of 31 bytes", f.policy, signedBy(checkpointText(f.log.origin, 13, root[:31])), ErrMalformed},
		{"hash of 33 bytes", f.policy, signedBy(checkpointText(f.log.origin, 13, append(root, 0))), ErrMalformed},
		{"hash unpadded", f.policy, signedBy(f.log.origin + "\n13\n" + strings.TrimRight(b64, "=") + "\n"), ErrMalformed},
		{"hash non-canonical", f.policy, signedBy(f.log.origin + "\n13\n" + nonCanonical(b64) + "\n"), ErrMalformed},
		{"hash base64url", f.policy, signedBy(f.log.origin + "\n13\n" + base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)) + "\n"), ErrMalformed},
		{"empty extension line", f.policy, signedBy(text + "\next\n"), ErrMalformed},
		{"size 0 with a root", f.policy, signedBy(checkpointText(f.log.origin, 0, root)), ErrMalformed},
		{"no signature block", f.policy, append([]byte(text), "— example.com/log AAAA\n"...), ErrMalformed},
		{"bad signature line", f.policy, append(bytes.Clone(good), "— example.com/log\n"...), ErrMalformed},
		{"too large", f.policy, append(signedBy(text+strings.Repeat("x", maxCheckpointSize)+"\n"), '\n'), ErrMalformed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := OpenCheckpoint(tt.policy, tt.signed)
			if err == nil {
				t.Fatalf("OpenCheckpoint() = %+v, want error %v", c, tt.want)
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("OpenCheckpoint() = %v, want %v", err, tt.want)
			}
			if errors.Is(err, ErrMalformed) == errors.Is(err, ErrSecurity) {
				t.Errorf("OpenCheckpoint() = %v: matches ErrMalformed %v and ErrSecurity %v, want exactly one",
					err, errors.Is(err, ErrMalformed), errors.Is(err, ErrSecurity))
			}
			if !strings.HasPrefix(err.Error(), "verifier: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}

	if _, err := OpenCheckpoint(nil, good); err == nil {
		t.Errorf("OpenCheckpoint(nil policy) succeeded")
	}
	if _, err := OpenCheckpoint(&Policy{}, good); err == nil {
		t.Errorf("OpenCheckpoint(zero policy) succeeded")
	}
}

// TestCheckpointText checks what the verifier adds to the checkpoint text
// parser of internal/tlogfmt (whose own tests hold the grammar): a tree of
// size 0 must have the empty tree's root, and every refusal is ErrMalformed.
func TestCheckpointText(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString(testTree(3).Hash())
	empty := base64.StdEncoding.EncodeToString(rfc6962.DefaultHasher.EmptyRoot())
	for _, tt := range []struct {
		text string
		ok   bool
	}{
		{"o\n3\n" + b64 + "\next\n", true},
		{"o\n0\n" + empty + "\n", true},
		{"o\n0\n" + b64 + "\n", false},
		{"o\n3\n" + b64 + "\n\n", false},
	} {
		c, err := parseCheckpointText(tt.text)
		switch {
		case (err == nil) != tt.ok:
			t.Errorf("parseCheckpointText(%q) = %v, want ok %v", tt.text, err, tt.ok)
		case err != nil && !errors.Is(err, ErrMalformed):
			t.Errorf("parseCheckpointText(%q) = %v, want ErrMalformed", tt.text, err)
		case err == nil && formatCheckpointText(c) != tt.text:
			t.Errorf("formatCheckpointText(parseCheckpointText(%q)) = %q", tt.text, formatCheckpointText(c))
		}
	}
}

// signedNoteVectors is the shape of c2sp-signed-note/signed_note_examples.json.
type signedNoteVectors struct {
	Valid []struct {
		VKey     string `json:"vkey"`
		KeyName  string `json:"key_name"`
		Note     string `json:"note"`
		NoteText string `json:"note_text"`
		Expect   string `json:"expect"`
	} `json:"valid"`
	NoVKey []struct {
		Note     string `json:"note"`
		NoteText string `json:"note_text"`
		KeyName  string `json:"key_name"`
	} `json:"no_vkey"`
	Checkpoint struct {
		Note string `json:"note"`
	} `json:"checkpoint_example_unverifiable"`
}

func loadSignedNoteVectors(t testing.TB) signedNoteVectors {
	var v signedNoteVectors
	if err := json.Unmarshal(readVector(t, "c2sp-signed-note/signed_note_examples.json"), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Valid) == 0 || len(v.NoVKey) == 0 || v.Checkpoint.Note == "" {
		t.Fatalf("signed-note vectors are missing cases: %+v", v)
	}
	return v
}

// TestSignedNoteVectors runs the C2SP signed-note examples through the
// policy and checkpoint paths.
func TestSignedNoteVectors(t *testing.T) {
	v := loadSignedNoteVectors(t)

	for i, vec := range v.Valid {
		t.Run(fmt.Sprintf("valid/%d", i), func(t *testing.T) {
			// The vkey is an Ed25519 signed-note key: a valid log line.
			p := mustPolicy(t, "log "+vec.VKey+"\nquorum none\n")
			if got := p.Logs()[0].Origin; got != vec.KeyName {
				t.Errorf("log origin = %q, want %q", got, vec.KeyName)
			}
			// Its signature verifies, so the failure is only that the text
			// is not a checkpoint.
			_, err := OpenCheckpoint(p, []byte(vec.Note))
			if !errors.Is(err, ErrMalformed) || errors.Is(err, ErrSecurity) {
				t.Errorf("OpenCheckpoint(signed example) = %v, want ErrMalformed only", err)
			}
			// One changed character breaks the signature.
			altered := strings.Replace(vec.Note, "example", "exbmple", 1)
			if _, err := OpenCheckpoint(p, []byte(altered)); !errors.Is(err, ErrInvalidSignature) {
				t.Errorf("OpenCheckpoint(altered example) = %v, want ErrInvalidSignature", err)
			}
			// A policy whose log has the same name and another key ignores
			// the signature.
			other := newTestLog(t, vec.KeyName)
			q := mustPolicy(t, "log "+other.vkey+"\nquorum none\n")
			if _, err := OpenCheckpoint(q, []byte(vec.Note)); !errors.Is(err, ErrMalformed) {
				t.Errorf("OpenCheckpoint(example, other key) = %v, want ErrMalformed (text is checked before trust)", err)
			}
		})
	}

	for i, vec := range v.NoVKey {
		t.Run(fmt.Sprintf("no_vkey/%d", i), func(t *testing.T) {
			// The text has a blank line: signatures start after the last
			// one, and the text is not a checkpoint.
			l := newTestLog(t, vec.KeyName)
			p := mustPolicy(t, "log "+l.vkey+"\nquorum none\n")
			_, err := OpenCheckpoint(p, []byte(vec.Note))
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("OpenCheckpoint() = %v, want ErrMalformed", err)
			}
			_, err = note.Open([]byte(vec.Note), note.VerifierList())
			var unverified *note.UnverifiedNoteError
			if !errors.As(err, &unverified) || unverified.Note.Text != vec.NoteText {
				t.Errorf("note text = %v, want %q", err, vec.NoteText)
			}
		})
	}

	t.Run("checkpoint", func(t *testing.T) {
		text, _, ok := strings.Cut(v.Checkpoint.Note, "\n\n")
		if !ok {
			t.Fatal("no signature block")
		}
		c, err := parseCheckpointText(text + "\n")
		if err != nil {
			t.Fatalf("parseCheckpointText() = %v", err)
		}
		if c.Origin != "example.com/behind-the-sofa" || c.Size != 20852163 ||
			base64.StdEncoding.EncodeToString(c.Hash[:]) != "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=" {
			t.Errorf("parseCheckpointText() = %+v", c)
		}
		// Its keys are not published: under a policy for the same origin
		// with another key, the checkpoint is well formed but untrusted.
		l := newTestLog(t, c.Origin)
		w := newTestWitness(t, "witness.example.com/w1")
		p := mustPolicy(t, fmt.Sprintf("log %s\nwitness w1 %s\nquorum w1\n", l.vkey, w.vkey))
		_, err = OpenCheckpoint(p, []byte(v.Checkpoint.Note))
		if !errors.Is(err, ErrLogSignature) {
			t.Errorf("OpenCheckpoint() = %v, want ErrLogSignature", err)
		}
	})
}

// FuzzOpenCheckpoint opens arbitrary bytes under a fixed policy: no panic,
// exactly one error class, and acceptance only of properly signed input.
func FuzzOpenCheckpoint(f *testing.F) {
	fx := newFixture(f)
	text := checkpointText(fx.log.origin, 13, testTree(13).Hash())
	f.Add(signNote(f, text, fx.log.signer, fx.w1.at(testTime), fx.w2.at(testTime)))
	f.Add(signNote(f, text+"ext\n", fx.log.signer, fx.w1.at(testTime), fx.w2.at(testTime), fx.w3.at(testTime)))
	f.Add(signNote(f, text, fx.log.signer))
	v := loadSignedNoteVectors(f)
	f.Add([]byte(v.Checkpoint.Note))
	f.Add([]byte(v.Valid[0].Note))
	f.Add([]byte(v.NoVKey[0].Note))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := OpenCheckpoint(fx.policy, b)
		if err != nil {
			if errors.Is(err, ErrMalformed) == errors.Is(err, ErrSecurity) {
				t.Fatalf("OpenCheckpoint() = %v: want exactly one of ErrMalformed and ErrSecurity", err)
			}
			return
		}
		if c.LogKey != fx.log.vkey || len(c.Cosignatures) < 2 || !bytes.Equal(c.Raw, b) {
			t.Fatalf("OpenCheckpoint() accepted %q as %+v", b, c)
		}
	})
}

// FuzzCheckpointText checks the checkpoint text parser, which runs before any
// signature is trusted: no panic, and what parses formats back to itself.
func FuzzCheckpointText(f *testing.F) {
	f.Add(checkpointText("example.com/log", 13, testTree(13).Hash()))
	f.Add(checkpointText("example.com/log", 0, rfc6962.DefaultHasher.EmptyRoot(), "ext"))
	f.Add("example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := parseCheckpointText(text)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("parseCheckpointText() = %v, want ErrMalformed", err)
			}
			return
		}
		if got := formatCheckpointText(c); got != text {
			t.Fatalf("formatCheckpointText(parseCheckpointText(%q)) = %q", text, got)
		}
	})
}

// TestOpenCheckpointNamesKeys: a checkpoint under the wrong log key names
// the key the policy expects and the key it found; a cosignature from a
// witness the policy does not know is named in the quorum error.
func TestOpenCheckpointNamesKeys(t *testing.T) {
	f := newFixture(t)
	text := checkpointText(f.log.origin, 13, testTree(13).Hash())
	impostor := newTestLogKey(t, f.log.origin, "impostor")
	name := func(vkey string) string {
		parts := strings.SplitN(vkey, "+", 3)
		return parts[0] + "+" + parts[1]
	}
	stranger := newTestWitness(t, "stranger.example")
	for _, tt := range []struct {
		name   string
		signed []byte
		want   error
		says   []string
	}{
		{"wrong log key", signNote(t, text, impostor.signer, f.w1.at(testTime), f.w2.at(testTime)), ErrLogSignature,
			[]string{"expects a signature by " + name(f.log.vkey), "signed by " + name(impostor.vkey)}},
		{"wrong log key alone", signNote(t, text, impostor.signer), ErrLogSignature,
			[]string{"expects a signature by " + name(f.log.vkey), "signed by " + name(impostor.vkey)}},
		{"unknown witness", signNote(t, text, f.log.signer, f.w1.at(testTime), stranger.at(testTime)), ErrQuorum,
			[]string{"keys the policy does not know: " + fmt.Sprintf("stranger.example+%08x", stranger.hash)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := OpenCheckpoint(f.policy, tt.signed)
			if !errors.Is(err, tt.want) {
				t.Fatalf("OpenCheckpoint = %v, want %v", err, tt.want)
			}
			for _, s := range tt.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("OpenCheckpoint = %v; want it to say %q", err, s)
				}
			}
		})
	}
}
