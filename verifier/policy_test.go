package verifier

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/tessera"
	"golang.org/x/mod/sumdb/note"
)

// specPolicy is the example of c2sp.org/tlog-policy with real keys.
type specPolicy struct {
	log       *testLog
	witnesses map[string]*testWitness // by policy name
	text      string
}

var specNames = []string{"X1", "X2", "X3", "Y1", "Y2", "Y3"}

func newSpecPolicy(t testing.TB) *specPolicy {
	sp := &specPolicy{log: newTestLog(t, "example.com/log"), witnesses: make(map[string]*testWitness)}
	for _, n := range specNames {
		sp.witnesses[n] = newTestWitness(t, strings.ToLower(n)+".witness.example")
	}
	w := func(n string) string { return sp.witnesses[n].vkey }
	sp.text = fmt.Sprintf(`log %s

witness X1 %s https://x1.witness.example/
witness X2 %s https://x2.witness.example/
witness X3 %s https://x3.witness.example/
group X-witnesses 2 X1 X2 X3

witness Y1 %s https://y1.witness.example/
witness Y2 %s https://y2.witness.example/
witness Y3 %s https://y3.witness.example/
group Y-witnesses any Y1 Y2 Y3

group X-and-Y all X-witnesses Y-witnesses
quorum X-and-Y
`, sp.log.vkey, w("X1"), w("X2"), w("X3"), w("Y1"), w("Y2"), w("Y3"))
	return sp
}

func TestParsePolicy(t *testing.T) {
	sp := newSpecPolicy(t)
	p := mustPolicy(t, sp.text)
	if got := p.Logs(); len(got) != 1 || got[0] != (Log{Origin: "example.com/log", VKey: sp.log.vkey}) {
		t.Errorf("Logs() = %+v, want one log example.com/log", got)
	}
	ws := p.Witnesses()
	if len(ws) != 6 {
		t.Fatalf("Witnesses() = %+v, want 6", ws)
	}
	for i, n := range specNames {
		want := Witness{Name: n, KeyName: sp.witnesses[n].keyName, VKey: sp.witnesses[n].vkey,
			URL: "https://" + strings.ToLower(n) + ".witness.example/"}
		if ws[i] != want {
			t.Errorf("Witnesses()[%d] = %+v, want %+v", i, ws[i], want)
		}
	}
	gs := p.Groups()
	wantGroups := []Group{
		{"X-witnesses", 2, []string{"X1", "X2", "X3"}},
		{"Y-witnesses", 1, []string{"Y1", "Y2", "Y3"}},
		{"X-and-Y", 2, []string{"X-witnesses", "Y-witnesses"}},
	}
	if fmt.Sprint(gs) != fmt.Sprint(wantGroups) {
		t.Errorf("Groups() = %v, want %v", gs, wantGroups)
	}
	if got := p.Quorum(); got != "X-and-Y" {
		t.Errorf("Quorum() = %q, want X-and-Y", got)
	}
	// The accessors return copies.
	gs[0].Members[0] = "changed"
	if p.Groups()[0].Members[0] != "X1" {
		t.Errorf("Groups() shares its slices with the Policy")
	}
}

func TestParsePolicyForms(t *testing.T) {
	l := newTestLog(t, "example.com/log")
	w1 := newTestWitness(t, "w1.example")
	w2 := newTestWitness(t, "w2.example")
	_, pq, err := fnote.GenerateMLDSAKey("pq.example")
	if err != nil {
		t.Fatal(err)
	}
	cosigLog, err := fnote.VKeyToCosignatureV1(newTestLog(t, "example.com/cosig-log").vkey)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		text      string
		logs      int
		witnesses int
		quorum    string
	}{
		{"quorum none", "quorum none\n", 0, 0, "none"},
		{"log only", "log " + l.vkey + "\nquorum none\n", 1, 0, "none"},
		{"single witness quorum", "log " + l.vkey + "\nwitness a " + w1.vkey + "\nquorum a\n", 1, 1, "a"},
		{"whitespace and comments", "\n# comment\n  \t# indented comment\n\t log \t" + l.vkey + "  \n\n witness  a\t" + w1.vkey + "\t\nquorum a   \n   \n", 1, 1, "a"},
		{"no final newline", "log " + l.vkey + "\nwitness a " + w1.vkey + "\nquorum a", 1, 1, "a"},
		{"witness after quorum", "witness a " + w1.vkey + "\nquorum a\nwitness b " + w2.vkey + "\n", 0, 2, "a"},
		{"log after quorum", "quorum none\nlog " + l.vkey + " http://localhost:8080\n", 1, 0, "none"},
		{"URLs", "log " + l.vkey + " https://log.example/\nwitness a " + w1.vkey + " https://w1.example/witness\nquorum a\n", 1, 1, "a"},
		{"ML-DSA-44 witness", "witness pq " + pq + "\nwitness ed " + w1.vkey + "\ngroup g any pq ed\nquorum g\n", 0, 2, "g"},
		{"cosignature log key", "log " + cosigLog + "\nquorum none\n", 1, 0, "none"},
		{"opaque names", "witness K " + w1.vkey + "\nwitness \xe2\x84\xaa " + w2.vkey + "\ngroup \xff all K \xe2\x84\xaa\nquorum \xff\n", 0, 2, "\xff"},
		{"keyword names", "witness log " + w1.vkey + "\nwitness all " + w2.vkey + "\ngroup any all log all\nquorum any\n", 0, 2, "any"},
		{"numeric names", "witness 1 " + w1.vkey + "\nwitness 2 " + w2.vkey + "\ngroup 3 2 2 1\nquorum 3\n", 0, 2, "3"},
		{"hash mark inside a field", "witness a#b " + w1.vkey + " https://w1.example/#x\nquorum a#b\n", 0, 1, "a#b"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePolicy([]byte(tt.text))
			if err != nil {
				t.Fatalf("ParsePolicy() = %v", err)
			}
			if len(p.Logs()) != tt.logs || len(p.Witnesses()) != tt.witnesses || p.Quorum() != tt.quorum {
				t.Errorf("ParsePolicy() = %d logs, %d witnesses, quorum %q; want %d, %d, %q",
					len(p.Logs()), len(p.Witnesses()), p.Quorum(), tt.logs, tt.witnesses, tt.quorum)
			}
			checkPolicyString(t, p)
		})
	}
}

// checkPolicyString checks that String is canonical: it parses to a policy
// that prints the same.
func checkPolicyString(t testing.TB, p *Policy) {
	t.Helper()
	s := p.String()
	q, err := ParsePolicy([]byte(s))
	if err != nil {
		t.Fatalf("ParsePolicy(String()) = %v\n%s", err, s)
	}
	if q.String() != s {
		t.Fatalf("String() is not stable:\n%s\nthen\n%s", s, q.String())
	}
	if fmt.Sprint(q.Logs(), q.Witnesses(), q.Groups(), q.Quorum()) != fmt.Sprint(p.Logs(), p.Witnesses(), p.Groups(), p.Quorum()) {
		t.Fatalf("ParsePolicy(String()) differs from the original")
	}
}

func TestPolicyString(t *testing.T) {
	sp := newSpecPolicy(t)
	p := mustPolicy(t, sp.text)
	want := fmt.Sprintf(`log %s
witness X1 %s https://x1.witness.example/
witness X2 %s https://x2.witness.example/
witness X3 %s https://x3.witness.example/
group X-witnesses 2 X1 X2 X3
witness Y1 %s https://y1.witness.example/
witness Y2 %s https://y2.witness.example/
witness Y3 %s https://y3.witness.example/
group Y-witnesses 1 Y1 Y2 Y3
group X-and-Y 2 X-witnesses Y-witnesses
quorum X-and-Y
`, sp.log.vkey, sp.witnesses["X1"].vkey, sp.witnesses["X2"].vkey, sp.witnesses["X3"].vkey,
		sp.witnesses["Y1"].vkey, sp.witnesses["Y2"].vkey, sp.witnesses["Y3"].vkey)
	if got := p.String(); got != want {
		t.Errorf("String() = \n%s\nwant\n%s", got, want)
	}
	if got := (&Policy{}).String(); got != "" {
		t.Errorf("zero Policy String() = %q, want empty", got)
	}
}

func TestParsePolicyErrors(t *testing.T) {
	l := newTestLog(t, "example.com/log")
	l2 := newTestLog(t, "example.com/log2")
	w1 := newTestWitness(t, "w1.example")
	w2 := newTestWitness(t, "w2.example")

	// Keys derived from the same Ed25519 key as l, under other names and
	// types: duplicates by the spec's definition.
	raw := mustDecode(t, strings.SplitN(l.vkey, "+", 3)[2])[1:]
	sameKeyLog, _ := note.NewEd25519VerifierKey("example.com/renamed", ed25519.PublicKey(raw))
	sameKeyWitness, err := fnote.VKeyToCosignatureV1(sameKeyLog)
	if err != nil {
		t.Fatal(err)
	}
	// A vkey with a wrong key ID, one with a type the policy does not
	// support, and one with non-canonical base64.
	name, id, key := splitVKey(w1.vkey)
	wrongID := fmt.Sprintf("%s+%08x+%s", name, id^1, key)
	k := mustDecode(t, key)
	k[0] = 0x02
	ecdsaType := fmt.Sprintf("%s+%08x+%s", name, vkeyID(name, k), base64.StdEncoding.EncodeToString(k))
	badBase64 := fmt.Sprintf("%s+%08x+%s", name, id, strings.NewReplacer("+", "-", "/", "_").Replace(key)+"!")
	l1Type := strings.Replace(l.vkey, "example.com/log", "w1.example", 1) // hash no longer matches

	for _, tt := range []struct {
		name string
		text string
		line int
		want string
	}{
		{"empty", "", 0, "no quorum line"},
		{"comments only", "# nothing\n", 0, "no quorum line"},
		{"no quorum", "log " + l.vkey + "\n", 0, "no quorum line"},
		{"unknown keyword", "quorum none\nlogs " + l.vkey + "\n", 2, `unknown keyword "logs"`},
		{"keyword case", "QUORUM none\n", 1, "unknown keyword"},
		{"log without key", "log\nquorum none\n", 1, "want \"log <vkey> [<url>]\""},
		{"log with extra field", "log " + l.vkey + " https://log.example/ x\nquorum none\n", 1, "got 4 fields"},
		{"trailing comment", "log " + l.vkey + " # prod\nquorum none\n", 1, "got 4 fields"},
		{"log vkey garbage", "log example.com/log\nquorum none\n", 1, "not a vkey"},
		{"log vkey wrong ID", "log " + wrongID + "\nquorum none\n", 1, "does not match"},
		{"log vkey ID not hex", "log " + name + "+zzzzzzzz+" + key + "\nquorum none\n", 1, "not hexadecimal"},
		{"log vkey unsupported type", "log " + ecdsaType + "\nquorum none\n", 1, "unsupported key type 0x02"},
		{"log vkey bad base64", "log " + badBase64 + "\nquorum none\n", 1, "canonical base64"},
		{"log vkey renamed", "log " + l1Type + "\nquorum none\n", 1, "vkey"},
		{"log URL relative", "log " + l.vkey + " log.example.com/\nquorum none\n", 1, "not an absolute URL"},
		{"log URL invalid", "log " + l.vkey + " https://log.example.com/%zz\nquorum none\n", 1, "log URL"},
		{"duplicate log", "log " + l.vkey + "\nlog " + l.vkey + "\nquorum none\n", 2, "already listed on line 1"},
		{"duplicate log renamed", "log " + l.vkey + "\nlog " + sameKeyLog + "\nquorum none\n", 2, "already listed on line 1"},
		{"witness also a log", "log " + l.vkey + "\nwitness w " + sameKeyWitness + "\nquorum w\n", 2, "already listed on line 1"},
		{"witness without key", "witness a\nquorum none\n", 1, "want \"witness <name> <vkey> [<url>]\""},
		{"witness Ed25519 note key", "witness a " + l2.vkey + "\nquorum a\n", 1, "want a cosignature key"},
		{"witness named none", "witness none " + w1.vkey + "\nquorum none\n", 1, `name "none" is reserved`},
		{"witness name twice", "witness a " + w1.vkey + "\nwitness a " + w2.vkey + "\nquorum a\n", 2, `"a" is already defined`},
		{"witness key twice", "witness a " + w1.vkey + "\nwitness b " + w1.vkey + "\nquorum a\n", 2, "already listed on line 1"},
		{"witness URL relative", "witness a " + w1.vkey + " /witness\nquorum a\n", 1, "not an absolute URL"},
		{"witness too many fields", "witness a " + w1.vkey + " https://w/ https://x/\nquorum a\n", 1, "got 5 fields"},
		{"group without members", "witness a " + w1.vkey + "\ngroup g any\nquorum g\n", 2, "at least one member"},
		{"group name clash", "witness a " + w1.vkey + "\ngroup a any a\nquorum a\n", 2, `"a" is already defined`},
		{"group named none", "witness a " + w1.vkey + "\ngroup none any a\nquorum a\n", 2, "reserved"},
		{"group threshold 0", "witness a " + w1.vkey + "\ngroup g 0 a\nquorum g\n", 2, `threshold "0"`},
		{"group threshold above n", "witness a " + w1.vkey + "\ngroup g 2 a\nquorum g\n", 2, `threshold "2"`},
		{"group threshold leading zero", "witness a " + w1.vkey + "\ngroup g 01 a\nquorum g\n", 2, `threshold "01"`},
		{"group threshold sign", "witness a " + w1.vkey + "\ngroup g +1 a\nquorum g\n", 2, `threshold "+1"`},
		{"group threshold negative", "witness a " + w1.vkey + "\ngroup g -1 a\nquorum g\n", 2, `threshold "-1"`},
		{"group threshold word", "witness a " + w1.vkey + "\ngroup g one a\nquorum g\n", 2, `threshold "one"`},
		{"group threshold case", "witness a " + w1.vkey + "\ngroup g ALL a\nquorum g\n", 2, `threshold "ALL"`},
		{"group threshold huge", "witness a " + w1.vkey + "\ngroup g 99999999999999999999 a\nquorum g\n", 2, "threshold"},
		{"group member undefined", "witness a " + w1.vkey + "\ngroup g any a b\nquorum g\n", 2, `"b", which no earlier line defines`},
		{"group member defined later", "witness a " + w1.vkey + "\ngroup g any a b\nwitness b " + w2.vkey + "\nquorum g\n", 2, "no earlier line"},
		{"group member none", "witness a " + w1.vkey + "\ngroup g any a none\nquorum g\n", 2, "cannot be a member"},
		{"group member twice", "witness a " + w1.vkey + "\ngroup g 1 a a\nquorum g\n", 2, `"a" twice`},
		{"group member itself", "witness a " + w1.vkey + "\ngroup g any g\nquorum g\n", 2, "no earlier line"},
		{"group member a log", "log " + l.vkey + "\ngroup g any example.com/log\nquorum g\n", 2, "no earlier line"},
		{"quorum undefined", "quorum a\n", 1, `quorum "a" is not`},
		{"quorum defined later", "quorum a\nwitness a " + w1.vkey + "\n", 1, "earlier line"},
		{"quorum twice", "quorum none\nquorum none\n", 2, "second quorum line (the first is line 1)"},
		{"quorum without name", "quorum\n", 1, "want \"quorum <name>\""},
		{"quorum two names", "witness a " + w1.vkey + "\nquorum a a\n", 2, "got 3 fields"},
		{"CRLF", "quorum none\r\n", 1, "control character 0x0d"},
		{"NUL", "quorum none\n\x00\n", 2, "control character 0x00"},
		{"DEL", "# \x7f\nquorum none\n", 1, "control character 0x7f"},
		{"vertical tab separator", "quorum\vnone\n", 1, "control character 0x0b"},
		{"no-break space separator", "quorum\u00a0none\n", 1, "unknown keyword"},
		{"too large", "quorum none\n#" + strings.Repeat("x", maxPolicySize), 0, "limit"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePolicy([]byte(tt.text))
			if err == nil {
				t.Fatalf("ParsePolicy() = %s, want error %q", p, tt.want)
			}
			var pe *PolicyError
			if !errors.As(err, &pe) || pe.Line != tt.line {
				t.Errorf("ParsePolicy() = %v, want a PolicyError on line %d", err, tt.line)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParsePolicy() = %q, want it to mention %q", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "verifier: tlog-policy") {
				t.Errorf("ParsePolicy() = %q, want prefix \"verifier: tlog-policy\"", err)
			}
			if !errors.Is(err, ErrMalformed) || errors.Is(err, ErrSecurity) {
				t.Errorf("ParsePolicy() = %v, want ErrMalformed only", err)
			}
		})
	}
}

func TestParsePolicyLimits(t *testing.T) {
	var b strings.Builder
	var names []string
	for i := range maxPolicyWitnesses {
		n := fmt.Sprintf("w%d", i)
		fmt.Fprintf(&b, "witness %s %s\n", n, newTestWitness(t, n+".example").vkey)
		names = append(names, n)
	}
	for i := range maxPolicyGroups {
		fmt.Fprintf(&b, "group g%d any %s\n", i, names[i])
	}
	b.WriteString("quorum g0\n")
	full := b.String()
	if len(full) > maxPolicySize {
		t.Fatalf("policy of %d bytes exceeds the size limit; the count limits are unreachable", len(full))
	}
	p := mustPolicy(t, full)
	if len(p.Witnesses()) != maxPolicyWitnesses || len(p.Groups()) != maxPolicyGroups {
		t.Fatalf("ParsePolicy() = %d witnesses, %d groups", len(p.Witnesses()), len(p.Groups()))
	}
	for _, extra := range []string{
		"witness one-more " + newTestWitness(t, "one-more.example").vkey + "\n",
		"group one-more any w0\n",
	} {
		_, err := ParsePolicy([]byte(full + extra))
		if err == nil || !strings.Contains(err.Error(), "more than 256") {
			t.Errorf("ParsePolicy(%d+1 entries) = %v, want a limit error", maxPolicyWitnesses, err)
		}
	}
	var logs strings.Builder
	for i := range maxPolicyLogs + 1 {
		fmt.Fprintf(&logs, "log %s\n", newTestLog(t, fmt.Sprintf("example.com/log%d", i)).vkey)
	}
	logs.WriteString("quorum none\n")
	if _, err := ParsePolicy([]byte(logs.String())); err == nil || !strings.Contains(err.Error(), "more than 256 logs") {
		t.Errorf("ParsePolicy(257 logs) = %v, want a limit error", err)
	}
}

// TestQuorum checks the quorum rule of the spec's example policy, through
// OpenCheckpoint with real cosignatures.
func TestQuorum(t *testing.T) {
	sp := newSpecPolicy(t)
	p := mustPolicy(t, sp.text)
	text := checkpointText(sp.log.origin, 3, testTree(3).Hash())
	for _, tt := range []struct {
		cosigners string
		met       bool
	}{
		{"", false},
		{"X1 X2 Y1", true},
		{"X1 X3 Y3", true},
		{"X1 X2 X3 Y1 Y2 Y3", true},
		{"X2 X3 Y2 Y3", true},
		{"X1 Y1", false},
		{"X1 Y1 Y2 Y3", false},
		{"X1 X2 X3", false},
		{"Y1 Y2 Y3", false},
	} {
		t.Run(tt.cosigners, func(t *testing.T) {
			signers := []note.Signer{sp.log.signer}
			for _, n := range strings.Fields(tt.cosigners) {
				signers = append(signers, sp.witnesses[n].at(testTime))
			}
			_, err := OpenCheckpoint(p, signNote(t, text, signers...))
			if met := err == nil; met != tt.met {
				t.Errorf("OpenCheckpoint(cosigned by %q) = %v, want quorum met %v", tt.cosigners, err, tt.met)
			}
			if err != nil && !errors.Is(err, ErrQuorum) {
				t.Errorf("OpenCheckpoint() = %v, want ErrQuorum", err)
			}
		})
	}
}

// TestQuorumMatchesTessera checks, for every subset of cosigners, that a
// checkpoint opens under our reading of a policy exactly when Tessera, which
// gathers the log's cosignatures from the same file, considers the policy
// satisfied.
func TestQuorumMatchesTessera(t *testing.T) {
	sp := newSpecPolicy(t)
	all, err := tessera.NewWitnessGroupFromPolicy([]byte(sp.text))
	if err != nil {
		t.Fatalf("tessera.NewWitnessGroupFromPolicy() = %v", err)
	}
	for _, w := range mustPolicy(t, sp.text).Witnesses() {
		u, _ := url.Parse(w.URL)
		if _, ok := all.Endpoints()[u.JoinPath("add-checkpoint").String()]; !ok {
			t.Errorf("Tessera has no endpoint for witness %s (%s)", w.Name, w.URL)
		}
	}
	for _, text := range []string{
		sp.text,
		strings.Replace(sp.text, "group X-and-Y all", "group X-and-Y any", 1),
		strings.Replace(sp.text, "quorum X-and-Y", "quorum X2", 1),
		strings.Replace(sp.text, "quorum X-and-Y", "quorum Y-witnesses", 1),
		strings.Replace(sp.text, "quorum X-and-Y", "quorum none", 1),
	} {
		ours := mustPolicy(t, text)
		theirs, err := tessera.NewWitnessGroupFromPolicy([]byte(text))
		if err != nil {
			t.Fatalf("tessera.NewWitnessGroupFromPolicy() = %v", err)
		}
		cp := checkpointText(sp.log.origin, 3, testTree(3).Hash())
		for set := range 1 << len(specNames) {
			signers := []note.Signer{sp.log.signer}
			var names []string
			for i, n := range specNames {
				if set&(1<<i) != 0 {
					signers = append(signers, sp.witnesses[n].at(testTime))
					names = append(names, n)
				}
			}
			signed := signNote(t, cp, signers...)
			_, err := OpenCheckpoint(ours, signed)
			if got, want := err == nil, theirs.Satisfied(signed); got != want {
				t.Errorf("quorum %q cosigned by %v: ours %v (%v), Tessera %v", ours.Quorum(), names, got, err, want)
			}
		}
	}
}

func mustDecode(t testing.TB, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func splitVKey(vkey string) (name string, id uint32, key string) {
	parts := strings.SplitN(vkey, "+", 3)
	var h uint32
	fmt.Sscanf(parts[1], "%08x", &h)
	return parts[0], h, parts[2]
}

// FuzzParsePolicy parses arbitrary policy files: no panic, errors are
// PolicyErrors, and String of what parses is a stable canonical form.
func FuzzParsePolicy(f *testing.F) {
	sp := newSpecPolicy(f)
	f.Add(sp.text)
	f.Add(mustPolicy(f, sp.text).String())
	f.Add("quorum none\n")
	w := newTestWitness(f, "w1.example")
	f.Add("# c\nwitness a " + w.vkey + " https://w1.example/\ngroup g any a\nquorum g\n")
	_, pq, err := fnote.GenerateMLDSAKey("pq.example")
	if err != nil {
		f.Fatal(err)
	}
	f.Add("witness pq " + pq + "\nquorum pq\n")
	// Policies in the style of Tessera's tests, with Ed25519 note keys as
	// witnesses, which the spec does not allow.
	f.Add("witness w1 sigsum.org+e4ade967+AZuUY6B08pW3QVHu8uvsrxWPcAv9nykap2Nb4oxCee+r https://sigsum.org/witness/\ngroup g1 all w1\nquorum g1\n")
	v := loadSignedNoteVectors(f)
	f.Add("log " + v.Valid[0].VKey + "\nquorum none\n")
	f.Fuzz(func(t *testing.T, text string) {
		p, err := ParsePolicy([]byte(text))
		if err != nil {
			var pe *PolicyError
			if !errors.As(err, &pe) || !errors.Is(err, ErrMalformed) {
				t.Fatalf("ParsePolicy() = %v, want a PolicyError", err)
			}
			return
		}
		checkPolicyString(t, p)
	})
}
