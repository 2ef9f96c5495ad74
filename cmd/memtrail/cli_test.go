package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memtrail/memtrail/api"
	"github.com/memtrail/memtrail/internal/gen"
	mlog "github.com/memtrail/memtrail/log"
	"github.com/memtrail/memtrail/log/posixstore"
	"github.com/memtrail/memtrail/log/store"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
)

// runCLI runs the built binary in dir and returns its exit status,
// standard output and standard error.
func runCLI(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(buildMemtrail(t), args...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errOut.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String(), errOut.String()
	}
	t.Fatalf("memtrail %s: %v", strings.Join(args, " "), err)
	return -1, "", ""
}

// cliLog is a log served over HTTP in process, with the files the
// producer commands take: the signers' keys and the trust file.
type cliLog struct {
	url, dir, trust        string
	adapter, compactor, is string // private key files
	s                      *gen.Signers
	l                      *mlog.Log
}

// newCLILog starts a log that publishes a checkpoint every interval and
// gives up on ?wait=proof after wait; tr, if not nil, edits its trust.
func newCLILog(t *testing.T, interval, wait time.Duration, tr func(*receipts.Trust)) *cliLog {
	t.Helper()
	dir := t.TempDir()
	skey, _, err := mlog.GenerateLogKey("memtrail.test/cli")
	if err != nil {
		t.Fatal(err)
	}
	s := gen.Deterministic(41)
	trust := s.Trust(time.Now().UTC().Add(-time.Hour).Truncate(time.Second))
	if tr != nil {
		tr(trust)
	}
	l, err := mlog.Open(context.Background(), mlog.Config{Storage: openStorage(t, filepath.Join(dir, "data")), SigningKey: skey, Trust: trust,
		BatchMaxAge: 5 * time.Millisecond, CheckpointInterval: interval, Logger: vtQuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(l, api.Config{WaitTimeout: wait, Logger: vtQuietLogger()}).Handler())
	t.Cleanup(func() {
		srv.Close()
		// A log that has not published its last entries would wait for
		// the next checkpoint; a test need not.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		l.Close(ctx)
	})
	cl := &cliLog{url: srv.URL, dir: dir, s: s, l: l,
		trust:     writeFile(t, dir, "trust.json", receipts.MarshalTrust(trust)),
		adapter:   filepath.Join(dir, "adapter.pem"),
		compactor: filepath.Join(dir, "compactor.pem"),
		is:        filepath.Join(dir, "issuer.pem")}
	for path, k := range map[string]ed25519.PrivateKey{cl.adapter: s.Adapter, cl.compactor: s.Compactor, cl.is: s.Issuer} {
		if err := receipts.WritePrivateKeyFile(path, k); err != nil {
			t.Fatal(err)
		}
	}
	return cl
}

// TestCLISignEmptyProjection: the draft allows a projection that delivered
// nothing (its delivered list has no minimum length), so FRAGMENT is
// optional, and the usage says so.
func TestCLISignEmptyProjection(t *testing.T) {
	cl := newCLILog(t, 100*time.Millisecond, 5*time.Second, nil)
	code, out, _ := runCLI(t, cl.dir, "sign", "-h")
	if code != 0 || !strings.Contains(out, "[FRAGMENT...]") || strings.Contains(out, "] FRAGMENT...") {
		t.Errorf("sign -h (exit %d) does not show FRAGMENT as optional:\n%s", code, out)
	}
	code, out, errOut := runCLI(t, cl.dir, "sign", "projection", "--key", cl.adapter)
	if code != 0 {
		t.Fatalf("sign projection with no fragment: exit %d\n%s", code, errOut)
	}
	r, err := receipts.ParseProjectionRecord([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Delivered) != 0 || r.Projection.ByteLength != 0 || r.Projection.Digest != receipts.Digest(nil) {
		t.Errorf("empty projection: %+v %+v", r.Delivered, r.Projection)
	}
}

// TestCLISignCompactionLattice: "sign compaction" orders the labels by the
// log's lattice (--trust, --lattice), so the log accepts its ceiling, and
// refuses a label that is not in the lattice instead of ranking it top.
func TestCLISignCompactionLattice(t *testing.T) {
	lattice, err := receipts.NewLattice([]string{"PUBLIC", "INTERNAL", "SECRET", "TOP_SECRET"})
	if err != nil {
		t.Fatal(err)
	}
	cl := newCLILog(t, 100*time.Millisecond, 5*time.Second, func(tr *receipts.Trust) { tr.Lattice = lattice })
	manifest := func(name string, labels ...string) string {
		var b strings.Builder
		b.WriteString("# digest label\n")
		for i, l := range labels {
			b.WriteString(receipts.Digest([]byte(name+l+string(rune('a'+i)))) + " " + l + "\n")
		}
		return writeFile(t, cl.dir, name, []byte(b.String()))
	}
	for _, how := range [][]string{{"--trust", cl.trust}, {"--lattice", "PUBLIC,INTERNAL,SECRET,TOP_SECRET"}} {
		m := manifest("m"+how[0], "PUBLIC", "SECRET", "INTERNAL")
		code, out, errOut := runCLI(t, cl.dir, append([]string{"sign", "compaction", "--key", cl.compactor, "--manifest", m}, how...)...)
		if code != 0 {
			t.Fatalf("sign compaction %s: exit %d\n%s", how[0], code, errOut)
		}
		if !strings.Contains(out, `"inherited_sensitivity_ceiling":"SECRET"`) {
			t.Errorf("sign compaction %s: ceiling is not SECRET:\n%s", how[0], out)
		}
		f := writeFile(t, cl.dir, "c"+how[0]+".json", []byte(out))
		if code, out, errOut := runCLI(t, cl.dir, "submit", "--log", cl.url, f); code != 0 || !strings.Contains(out, "logged compaction") {
			t.Errorf("submit of a compaction signed with %s: exit %d\n%s%s", how[0], code, out, errOut)
		}
	}
	// A mistyped label is refused, naming the line and the lattice.
	m := manifest("typo", "PUBLIC", "CONFIDENTAIL")
	for _, how := range [][]string{{}, {"--trust", cl.trust}} {
		code, out, errOut := runCLI(t, cl.dir, append([]string{"sign", "compaction", "--key", cl.compactor, "--manifest", m}, how...)...)
		want := "PUBLIC,INTERNAL,CONFIDENTIAL,CONFIDENTIAL_RESTRICTED,HIGHLY_CONFIDENTIAL"
		if len(how) > 0 {
			want = "PUBLIC,INTERNAL,SECRET,TOP_SECRET"
		}
		if code != 1 || out != "" || !strings.Contains(errOut, m+`:3: sensitivity label "CONFIDENTAIL" is not in the lattice `+want) {
			t.Errorf("sign compaction %v with a mistyped label: exit %d\n%s%s", how, code, out, errOut)
		}
	}
	// The JSON form of a manifest names the item.
	js := writeFile(t, cl.dir, "typo.json", []byte(`{"manifest_version": "1.0", "items": [{"item_digest": "`+receipts.Digest([]byte("x"))+`", "sensitivity": "CONFIDENTAIL"}]}`))
	if code, _, errOut := runCLI(t, cl.dir, "sign", "compaction", "--key", cl.compactor, "--manifest", js); code != 1 || !strings.Contains(errOut, js+`: items[0]: sensitivity label "CONFIDENTAIL" is not in the lattice`) {
		t.Errorf("sign compaction, JSON manifest with a mistyped label: exit %d\n%s", code, errOut)
	}
	if code, _, _ := runCLI(t, cl.dir, "sign", "compaction", "--key", cl.compactor, "--manifest", js, "--trust", cl.trust, "--lattice", "A,B"); code != 2 {
		t.Errorf("sign compaction with --trust and --lattice: exit %d, want 2", code)
	}
}

// TestCLISubmitProofPending: when no proof arrives in time (here the log
// publishes no checkpoint), "submit --proof-dir" and "--wait" say the entry
// is logged and how to fetch its proof later, and exit 3, not 0.
func TestCLISubmitProofPending(t *testing.T) {
	cl := newCLILog(t, 9*time.Minute, 300*time.Millisecond, nil)
	frag := writeFile(t, cl.dir, "memory.txt", []byte("user prefers formal emails\n"))
	for i, flags := range [][]string{{"--proof-dir", "proofs"}, {"--wait"}, {"--proof-dir", "proofs", "--json"}} {
		code, rec, errOut := runCLI(t, cl.dir, "sign", "projection", "--key", cl.adapter, frag)
		if code != 0 {
			t.Fatalf("sign: exit %d\n%s", code, errOut)
		}
		p := writeFile(t, cl.dir, "p.json", []byte(rec))
		code, out, errOut := runCLI(t, cl.dir, append(append([]string{"submit", "--log", cl.url}, flags...), p)...)
		if code != 3 {
			t.Errorf("submit %v with no proof in time: exit %d, want 3\n%s%s", flags, code, out, errOut)
		}
		if len(flags) == 1 || flags[len(flags)-1] != "--json" {
			if !strings.Contains(out, "p.json: logged projection") || !strings.Contains(out, "p.json: no proof yet") {
				t.Errorf("submit %v: does not say the entry is logged without a proof:\n%s", flags, out)
			}
		} else if !strings.Contains(out, `"proof_pending"`) {
			t.Errorf("submit %v: no proof_pending:\n%s", flags, out)
		}
		want := fmt.Sprintf("memtrail proof --log %s --index %d", cl.url, i)
		if !strings.Contains(errOut, "1 of 1 entry was logged but has no proof yet") || !strings.Contains(errOut, want) {
			t.Errorf("submit %v: does not say how to fetch the proof later (%q):\n%s", flags, want, errOut)
		}
		if _, err := os.Stat(filepath.Join(cl.dir, "proofs", "p.json.tlog-proof")); err == nil {
			t.Errorf("submit %v wrote a proof file", flags)
		}
	}
	if code, out, errOut := runCLI(t, cl.dir, "submit", "-h"); code != 0 || !strings.Contains(out+errOut, "3 if") {
		t.Errorf("submit -h does not document exit status 3:\n%s%s", out, errOut)
	}
}

// TestCLISubmitLocalRefusals: a file submit cannot send (empty, truncated,
// missing) is reported as not sent, with no HTTP status, the same way
// alone and among others, and the other files are still sent.
func TestCLISubmitLocalRefusals(t *testing.T) {
	cl := newCLILog(t, 100*time.Millisecond, 5*time.Second, nil)
	frag := writeFile(t, cl.dir, "memory.txt", []byte("user prefers formal emails\n"))
	sign := func(name string) string {
		code, rec, errOut := runCLI(t, cl.dir, "sign", "projection", "--key", cl.adapter, frag)
		if code != 0 {
			t.Fatalf("sign: exit %d\n%s", code, errOut)
		}
		return writeFile(t, cl.dir, name, []byte(rec))
	}
	sign("a.json")
	b := sign("b.json")
	rec, _ := os.ReadFile(b)
	writeFile(t, cl.dir, "truncated.json", rec[:300])
	writeFile(t, cl.dir, "empty.json", nil)
	writeFile(t, cl.dir, "array.json", []byte("[1, 2]\n"))
	lines := func(out string) map[string]string {
		m := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if f, _, ok := strings.Cut(l, ": "); ok {
				m[f] = l
			}
		}
		return m
	}
	want := map[string]string{
		"empty.json":     "empty.json: not sent (record_invalid): the file is empty",
		"truncated.json": "truncated.json: not sent (record_invalid): not valid JSON: byte 300: unexpected end of JSON input",
		"array.json":     "array.json: not sent (record_invalid): not a JSON object",
		"nofile.json":    "nofile.json: not sent (file_unreadable): couldn't read it: no such file or directory",
	}
	for f, w := range want {
		code, out, errOut := runCLI(t, cl.dir, "submit", "--log", cl.url, f)
		if code != 1 || strings.TrimSpace(out) != w || !strings.Contains(errOut, "1 of 1 submission was not logged") {
			t.Errorf("submit %s: exit %d\n%s%s\nwant %q", f, code, out, errOut, w)
		}
		code, out, _ = runCLI(t, cl.dir, "submit", "--json", "--log", cl.url, f)
		if code != 1 || strings.Contains(out, `"status"`) || !strings.Contains(out, `"sent":false`) {
			t.Errorf("submit --json %s: exit %d\n%s", f, code, out)
		}
	}
	// Among others: the same answers, and the readable files are sent.
	code, out, errOut := runCLI(t, cl.dir, "submit", "--log", cl.url, "a.json", "truncated.json", "nofile.json", "empty.json", "b.json", "array.json")
	got := lines(out)
	for f, w := range want {
		if got[f] != w {
			t.Errorf("submit of several: %s: %q, want %q", f, got[f], w)
		}
	}
	for _, f := range []string{"a.json", "b.json"} {
		if !strings.HasPrefix(got[f], f+": logged projection") {
			t.Errorf("submit of several: %s was not logged: %q", f, got[f])
		}
	}
	if code != 1 || !strings.Contains(errOut, "4 of 6 submissions were not logged") {
		t.Errorf("submit of several: exit %d\n%s", code, errOut)
	}
	if code, out, errOut := runCLI(t, cl.dir, "submit", "-h"); code != 0 || !strings.Contains(out+errOut, "not sent") {
		t.Errorf("submit -h does not say what happens to a file that cannot be sent:\n%s%s", out, errOut)
	}
}

// TestCLIFlagsAnywhere: sign, submit and proof take flags before or after
// their arguments, and "--" ends the flags.
func TestCLIFlagsAnywhere(t *testing.T) {
	cl := newCLILog(t, 100*time.Millisecond, 5*time.Second, nil)
	writeFile(t, cl.dir, "a.txt", []byte("first memory\n"))
	writeFile(t, cl.dir, "-b.txt", []byte("second memory\n"))
	fragments := func(rec string) int {
		t.Helper()
		r, err := receipts.ParseProjectionRecord([]byte(rec))
		if err != nil {
			t.Fatalf("%v\n%s", err, rec)
		}
		return len(r.Delivered)
	}
	for _, tc := range []struct {
		args []string
		n    int
	}{
		{[]string{"a.txt", "--key", cl.adapter}, 1},
		{[]string{"--key", cl.adapter, "a.txt", "--id", "urn:x:1"}, 1},
		{[]string{"--key", cl.adapter, "--", "-b.txt"}, 1},
		{[]string{"--key", cl.adapter, "--", "a.txt", "-b.txt"}, 2},
		{[]string{"a.txt", "--key", cl.adapter, "--", "-b.txt", "a.txt"}, 3},
		{[]string{"--material-out", "--", "--key", cl.adapter, "a.txt"}, 1}, // "--" as a flag's value
	} {
		code, out, errOut := runCLI(t, cl.dir, append([]string{"sign", "projection"}, tc.args...)...)
		if code != 0 {
			t.Errorf("sign projection %v: exit %d\n%s", tc.args, code, errOut)
			continue
		}
		if n := fragments(out); n != tc.n {
			t.Errorf("sign projection %v: %d fragments, want %d", tc.args, n, tc.n)
		}
	}
	code, out, errOut := runCLI(t, cl.dir, "sign", "projection", "a.txt", "--key", cl.adapter)
	if code != 0 {
		t.Fatalf("sign: exit %d\n%s", code, errOut)
	}
	writeFile(t, cl.dir, "p.json", []byte(out))
	writeFile(t, cl.dir, "-t.json", nil)
	code, out, errOut = runCLI(t, cl.dir, "submit", "p.json", "--log", cl.url, "--json", "--", "-t.json")
	if code != 1 || !strings.Contains(out, `"file":"p.json","sent":true`) || !strings.Contains(out, `"file":"-t.json"`) {
		t.Errorf("submit with flags after the files: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, cl.dir, "sign", "tombstone", "--item", receipts.Digest([]byte("gone")), "--id", "urn:t:1", "--key", cl.is)
	if code != 0 {
		t.Fatalf("sign tombstone: exit %d\n%s", code, errOut)
	}
	writeFile(t, cl.dir, "t.json", []byte(out))
	if code, out, errOut := runCLI(t, cl.dir, "submit", "t.json", "--wait", "--log", cl.url); code != 0 {
		t.Fatalf("submit t.json --wait: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, cl.dir, "proof", "--index", "1", "stray", "--log", cl.url); code != 2 || out != "" {
		t.Errorf("proof with a stray argument: exit %d, want 2\n%s%s", code, out, errOut)
	}
}

// TestCLILogURL: a --log that is not an http(s) URL is a usage error (exit
// 2), with a hint when only the scheme is missing.
func TestCLILogURL(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"submit", "--log", "127.0.0.1:8080", "p.json"},
		{"proof", "--log", "127.0.0.1:8080", "--index", "0"},
	} {
		code, out, errOut := runCLI(t, dir, args...)
		if code != 2 || out != "" || !strings.Contains(errOut, "did you mean http://127.0.0.1:8080?") {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	for _, args := range [][]string{
		{"submit", "--log", "ftp://example.com", "p.json"},
		{"submit", "--log", "localhost:8080", "p.json"},
		{"proof", "--log", "http://", "--index", "0"},
		{"proof", "--log", "http://example.com/?x=1", "--index", "0"},
	} {
		if code, out, errOut := runCLI(t, dir, args...); code != 2 || !strings.Contains(errOut, "--log") {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
}

// TestCLIExitStatus: each producer command's -h states the exit statuses
// (2 for a usage error), and they are what it exits with.
func TestCLIExitStatus(t *testing.T) {
	dir := t.TempDir()
	for _, cmd := range []string{"sign", "submit", "proof", "keygen"} {
		code, out, errOut := runCLI(t, dir, cmd, "-h")
		if text := strings.Join(strings.Fields(out+errOut), " "); code != 0 || !strings.Contains(text, "The command exits 0 if") || !strings.Contains(text, ", and 2 on a usage error") {
			t.Errorf("%s -h (exit %d) does not say it exits 2 on a usage error:\n%s%s", cmd, code, out, errOut)
		}
	}
	existing := writeFile(t, dir, "existing.pem", []byte("x"))
	manifest := writeFile(t, dir, "m.txt", []byte(receipts.Digest([]byte("a"))+" PUBLIC\n"))
	for _, tc := range []struct {
		code int
		args []string
	}{
		{2, []string{"sign"}},
		{2, []string{"sign", "receipt"}},
		{2, []string{"sign", "projection", "--bogus"}},
		{2, []string{"sign", "projection", "a.txt"}},
		{2, []string{"sign", "compaction", "--manifest", manifest}},
		{2, []string{"sign", "compaction", "--key", existing, "--manifest", manifest, "--purged", receipts.Digest(nil)}},
		{2, []string{"sign", "compaction", "--key", existing, "--manifest", manifest, "--lattice", "PUBLIC,public"}},
		{2, []string{"sign", "tombstone", "--key", existing}},
		{1, []string{"sign", "tombstone", "--key", existing, "--item", receipts.Digest(nil)}},
		{2, []string{"keygen"}},
		{2, []string{"keygen", "--kind", "log", "--out", existing}},
		{2, []string{"keygen", "--kind", "witness", "--out", filepath.Join(dir, "w")}},
		{2, []string{"keygen", "--kind", "adapter", "--name", "urn:a:1", "--out", filepath.Join(dir, "a")}},
		{2, []string{"keygen", "--kind", "bogus", "--out", existing}},
		{1, []string{"keygen", "--kind", "compactor", "--out", existing}},
		{2, []string{"proof", "--log", "http://127.0.0.1:1"}},
		{2, []string{"proof", "--log", "http://127.0.0.1:1", "--index", "0", "--projection", "urn:x"}},
		{1, []string{"proof", "--log", "http://127.0.0.1:1", "--index", "0"}},
		{2, []string{"submit", "p.json"}},
	} {
		if code, out, errOut := runCLI(t, dir, tc.args...); code != tc.code {
			t.Errorf("%v: exit %d, want %d\n%s%s", tc.args, code, tc.code, out, errOut)
		}
	}
}

// TestCLIProofUnpublishedSize: "proof --size N" for a size the log never
// published says which size it has and to use a published one or omit
// --size.
func TestCLIProofUnpublishedSize(t *testing.T) {
	cl := newCLILog(t, 100*time.Millisecond, 5*time.Second, nil)
	var files []string
	for i := range 3 {
		r, _, err := cl.s.Projection(fmt.Sprintf("urn:p:%d", i), time.Now().UTC(), 1, 20)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, writeFile(t, cl.dir, fmt.Sprintf("p%d.json", i), r.Canonical()))
	}
	if code, out, errOut := runCLI(t, cl.dir, append([]string{"submit", "--wait", "--log", cl.url}, files...)...); code != 0 {
		t.Fatalf("submit: exit %d\n%s%s", code, out, errOut)
	}
	var info api.LogInfo
	if err := json.Unmarshal([]byte(httpGet(t, cl.url+"/v1/log")), &info); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, cl.dir, "proof", "--log", cl.url, "--index", "0", "--size", "999")
	want := fmt.Sprintf("the latest is of size %d", info.TreeSize)
	if code != 1 || out != "" || !strings.Contains(errOut, "no checkpoint of size 999") || !strings.Contains(errOut, want) ||
		!strings.Contains(errOut, "memtrail: hint: use the size of a checkpoint the log published") || !strings.Contains(errOut, "omit --size") {
		t.Errorf("proof --size 999: exit %d\n%s%s", code, out, errOut)
	}
	// A published size works, and so does no --size.
	for _, args := range [][]string{{"--size", fmt.Sprint(info.TreeSize)}, nil} {
		code, out, errOut := runCLI(t, cl.dir, append([]string{"proof", "--log", cl.url, "--index", "0"}, args...)...)
		if code != 0 || !strings.HasPrefix(out, "c2sp.org/tlog-proof@v1\n") {
			t.Errorf("proof %v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
}

// TestCLIProofByID: "proof" finds an entry by its projection, compaction
// or tombstone id (GET /v1/{kind}/{id}), ids with a slash included.
func TestCLIProofByID(t *testing.T) {
	cl := newCLILog(t, 100*time.Millisecond, 5*time.Second, nil)
	frag := writeFile(t, cl.dir, "memory.txt", []byte("user prefers formal emails\n"))
	manifest := writeFile(t, cl.dir, "m.txt", []byte(receipts.Digest([]byte("item"))+" INTERNAL\n"))
	signs := [][]string{
		{"projection", "--key", cl.adapter, "--id", "urn:p:a/1", frag},
		{"compaction", "--key", cl.compactor, "--manifest", manifest, "--id", "urn:c:a/1"},
		{"tombstone", "--key", cl.is, "--item", receipts.Digest([]byte("gone")), "--id", "urn:t:a/1"},
	}
	var files []string
	for i, args := range signs {
		code, out, errOut := runCLI(t, cl.dir, append([]string{"sign"}, args...)...)
		if code != 0 {
			t.Fatalf("sign %v: exit %d\n%s", args, code, errOut)
		}
		files = append(files, writeFile(t, cl.dir, fmt.Sprintf("r%d.json", i), []byte(out)))
	}
	code, out, errOut := runCLI(t, cl.dir, append([]string{"submit", "--wait", "--log", cl.url}, files...)...)
	if code != 0 {
		t.Fatalf("submit: exit %d\n%s%s", code, out, errOut)
	}
	index := map[int]string{} // file number to the index submit reported
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var n int
		f, _, _ := strings.Cut(l, ": ")
		if _, err := fmt.Sscanf(filepath.Base(f), "r%d.json", &n); err == nil {
			index[n] = l[strings.LastIndex(l, " ")+1:]
		}
	}
	for i, by := range [][]string{{"--projection", "urn:p:a/1"}, {"--compaction", "urn:c:a/1"}, {"--tombstone", "urn:t:a/1"}} {
		p := filepath.Join(cl.dir, fmt.Sprintf("r%d.tlog-proof", i))
		code, out, errOut := runCLI(t, cl.dir, append([]string{"proof", "--log", cl.url, "-o", p}, by...)...)
		if code != 0 {
			t.Errorf("proof %v: exit %d\n%s%s", by, code, out, errOut)
			continue
		}
		proof, err := os.ReadFile(p)
		if err != nil || index[i] == "" || !strings.HasPrefix(string(proof), "c2sp.org/tlog-proof@v1\nindex "+index[i]+"\n") {
			t.Errorf("proof %v (logged at index %q): %v\n%s", by, index[i], err, proof)
		}
	}
	if code, _, errOut := runCLI(t, cl.dir, "proof", "--log", cl.url, "--tombstone", "urn:t:none"); code != 1 || !strings.Contains(errOut, "not_found") {
		t.Errorf("proof of an unknown tombstone: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := runCLI(t, cl.dir, "proof", "--log", cl.url, "--tombstone", "urn:t:a/1", "--index", "2"); code != 2 || !strings.Contains(errOut, "--tombstone") {
		t.Errorf("proof with --tombstone and --index: exit %d\n%s", code, errOut)
	}
}

// TestCLIEraseFullyPurgedCompaction: a compaction whose every item was
// purged cannot be superseded; "verify log" says that only a tombstone of
// its output discharges it, and once that tombstone is logged the audit
// passes.
func TestCLIEraseFullyPurgedCompaction(t *testing.T) {
	tl := newVTLog(t)
	srv := httptest.NewServer(api.New(tl.l, api.Config{Logger: vtQuietLogger()}).Handler())
	defer srv.Close()
	compactor, issuer := filepath.Join(tl.dir, "compactor.pem"), filepath.Join(tl.dir, "issuer.pem")
	for path, k := range map[string]ed25519.PrivateKey{compactor: tl.s.Compactor, issuer: tl.s.Issuer} {
		if err := receipts.WritePrivateKeyFile(path, k); err != nil {
			t.Fatal(err)
		}
	}
	a, b := receipts.Digest([]byte("memory a")), receipts.Digest([]byte("memory b"))
	manifest := writeFile(t, tl.dir, "m.txt", []byte(a+" INTERNAL\n"+b+" PUBLIC\n"))
	summary := writeFile(t, tl.dir, "summary.txt", []byte("a and b, summarised"))
	output := receipts.Digest([]byte("a and b, summarised"))
	sign := func(name string, args ...string) string {
		t.Helper()
		code, out, errOut := runCLI(t, tl.dir, append([]string{"sign"}, args...)...)
		if code != 0 {
			t.Fatalf("sign %v: exit %d\n%s", args, code, errOut)
		}
		return writeFile(t, tl.dir, name, []byte(out))
	}
	submit := func(files ...string) {
		t.Helper()
		code, out, errOut := runCLI(t, tl.dir, append([]string{"submit", "--log", srv.URL}, files...)...)
		if code != 0 {
			t.Fatalf("submit %v: exit %d\n%s%s", files, code, out, errOut)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		size, err := tl.l.IntegratedSize(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tl.l.WaitPublished(ctx, size-1); err != nil {
			t.Fatal(err)
		}
	}
	old := fmt.Sprint(time.Now().Add(-time.Hour).Unix())
	submit(sign("c.json", "compaction", "--key", compactor, "--manifest", manifest, "--output", summary, "--id", "urn:c:gone", "--trust", tl.trust),
		sign("ta.json", "tombstone", "--key", issuer, "--item", a, "--purged-at", old),
		sign("tb.json", "tombstone", "--key", issuer, "--item", b, "--purged-at", old))

	audit := []string{"verify", "log", "--log", srv.URL, "--policy", tl.policy, "--trust", tl.trust, "--grace", "0"}
	code, out, errOut := runCLI(t, tl.dir, audit...)
	if code != 1 || vtResult(t, out) != "obligation_overdue" {
		t.Fatalf("audit with every item purged: exit %d\n%s\n%s", code, out, errOut)
	}
	var rep verifier.AuditReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Obligations) != 2 || rep.Obligations[0].Discharge != verifier.DischargeErasure || rep.Obligations[0].CompactedOutputHash != output {
		t.Errorf("obligations = %+v; want both discharged only by a tombstone of %s", rep.Obligations, output)
	}
	if !strings.Contains(errOut, "only a tombstone of its output "+output) {
		t.Errorf("the summary does not say how to discharge the obligation:\n%s", errOut)
	}
	// The log refuses a superseder, and names the output to tombstone.
	code, out, errOut = runCLI(t, tl.dir, "submit", "--log", srv.URL,
		sign("c2.json", "compaction", "--key", compactor, "--manifest", writeFile(t, tl.dir, "m2.txt", []byte(receipts.Digest([]byte("c"))+" PUBLIC\n")),
			"--supersedes", "urn:c:gone", "--purged", a, "--purged", b))
	if code == 0 || !strings.Contains(out+errOut, "supersession_invalid") || !strings.Contains(out+errOut, output) {
		t.Errorf("superseding a fully purged compaction: exit %d\n%s%s", code, out, errOut)
	}

	submit(sign("tout.json", "tombstone", "--key", issuer, "--item", output))
	code, out, errOut = runCLI(t, tl.dir, audit...)
	if code != 0 || !strings.Contains(out, `"open_obligations": []`) {
		t.Fatalf("audit after the output's tombstone: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestCLISignCompactionPurgedStillInManifest: "sign compaction" refuses a
// --purged item that its manifest still holds, naming the rule; it says
// what retention_purge_epoch is when no item expires.
func TestCLISignCompactionPurgedStillInManifest(t *testing.T) {
	dir := t.TempDir()
	s := gen.Deterministic(3)
	key := filepath.Join(dir, "compactor.pem")
	if err := receipts.WritePrivateKeyFile(key, s.Compactor); err != nil {
		t.Fatal(err)
	}
	a, b := receipts.Digest([]byte("a")), receipts.Digest([]byte("b"))
	manifest := writeFile(t, dir, "m.txt", []byte(a+" PUBLIC\n"+b+" PUBLIC\n"))
	code, out, errOut := runCLI(t, dir, "sign", "compaction", "--key", key, "--manifest", manifest, "--supersedes", "urn:c:0", "--purged", b)
	if code != 1 || out != "" || !strings.Contains(errOut, "--purged "+b+" is still item 1 of the manifest") || !strings.Contains(errOut, "minus the items purged") {
		t.Errorf("--purged item still in the manifest: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = runCLI(t, dir, "sign", "compaction", "--key", key, "--manifest", manifest, "--supersedes", "urn:c:0", "--purged", "sha256:abc")
	if code != 1 || !strings.Contains(errOut, `--purged "sha256:abc"`) {
		t.Errorf("malformed --purged: exit %d\n%s", code, errOut)
	}
	code, out, errOut = runCLI(t, dir, "sign", "compaction", "--key", key, "--manifest", manifest)
	if code != 0 || !strings.Contains(errOut, "retention_purge_epoch is 4102444800 (2100-01-01T00:00:00Z)") || !strings.Contains(out, `"retention_purge_epoch":4102444800`) {
		t.Errorf("no expiry: exit %d\n%s%s", code, out, errOut)
	}
	expiring := writeFile(t, dir, "e.txt", []byte(a+" PUBLIC 1796083200\n"))
	if code, _, errOut = runCLI(t, dir, "sign", "compaction", "--key", key, "--manifest", expiring); code != 0 || strings.Contains(errOut, "retention_purge_epoch is") {
		t.Errorf("an expiring item: exit %d\n%s", code, errOut)
	}
}

// TestCLIKeyRoles: a key registered in one role that signs a receipt of
// another role is refused as a key of the wrong role, by the log and by
// "verify receipt"; a proof under a policy with another key for the log's
// origin names both keys.
func TestCLIKeyRoles(t *testing.T) {
	cl := newCLILog(t, 100*time.Millisecond, 5*time.Second, nil)
	manifest := writeFile(t, cl.dir, "m.txt", []byte(receipts.Digest([]byte("x"))+" PUBLIC\n"))
	code, out, errOut := runCLI(t, cl.dir, "sign", "compaction", "--key", cl.is, "--manifest", manifest)
	if code != 0 {
		t.Fatalf("sign compaction: exit %d\n%s", code, errOut)
	}
	comp := writeFile(t, cl.dir, "c.json", []byte(out))
	code, out, errOut = runCLI(t, cl.dir, "sign", "tombstone", "--key", cl.compactor, "--item", receipts.Digest([]byte("x")))
	if code != 0 {
		t.Fatalf("sign tombstone: exit %d\n%s", code, errOut)
	}
	tomb := writeFile(t, cl.dir, "t.json", []byte(out))
	for file, want := range map[string]string{
		comp: "is the kid of an issuer key, not of a compactor key",
		tomb: "is the kid of a compactor key, not of an issuer key",
	} {
		code, out, errOut := runCLI(t, cl.dir, "submit", "--log", cl.url, file)
		if code != 1 || !strings.Contains(out+errOut, "key_not_pinned") || !strings.Contains(out+errOut, want) {
			t.Errorf("submit %s signed by the wrong role: exit %d\n%s%s\nwant it to say %q", filepath.Base(file), code, out, errOut, want)
		}
		code, out, errOut = runCLI(t, cl.dir, "verify", "receipt", file, "--trust", cl.trust)
		if code != 1 || !strings.Contains(out+errOut, want) {
			t.Errorf("verify receipt %s: exit %d\n%s%s\nwant it to say %q", filepath.Base(file), code, out, errOut, want)
		}
	}

	// A proof checked under a policy that names another key for the origin.
	code, out, errOut = runCLI(t, cl.dir, "sign", "projection", "--key", cl.adapter)
	if code != 0 {
		t.Fatalf("sign projection: exit %d\n%s", code, errOut)
	}
	rec := writeFile(t, cl.dir, "p.json", []byte(out))
	if code, out, errOut = runCLI(t, cl.dir, "submit", "--log", cl.url, "--proof-dir", cl.dir, rec); code != 0 {
		t.Fatalf("submit: exit %d\n%s%s", code, out, errOut)
	}
	_, other, err := mlog.GenerateLogKey(cl.l.Origin())
	if err != nil {
		t.Fatal(err)
	}
	policy := writeFile(t, cl.dir, "other.policy", []byte("log "+other+"\nquorum none\n"))
	keyName := func(vkey string) string { p := strings.SplitN(vkey, "+", 3); return p[0] + "+" + p[1] }
	code, out, errOut = runCLI(t, cl.dir, "verify", "proof", rec+".tlog-proof", "--receipt", rec, "--policy", policy)
	for _, want := range []string{"expects a signature by " + keyName(other), "signed by " + keyName(cl.l.VerifierKey())} {
		if code != 1 || !strings.Contains(out+errOut, want) {
			t.Errorf("verify proof under another key: exit %d\n%s%s\nwant it to say %q", code, out, errOut, want)
		}
	}
}

// TestCLIVerifyProjectionLogRefuses: a record the log refuses gets one
// verdict, the log's, in the JSON report on standard output, with exit
// status 1 and no advice to retry.
func TestCLIVerifyProjectionLogRefuses(t *testing.T) {
	cl := newCLILog(t, 100*time.Millisecond, 5*time.Second, func(tr *receipts.Trust) { tr.Freshness.MaxTrustAge = time.Second })
	code, out, errOut := runCLI(t, cl.dir, "sign", "projection", "--key", cl.adapter)
	if code != 0 {
		t.Fatalf("sign projection: exit %d\n%s", code, errOut)
	}
	rec := writeFile(t, cl.dir, "p.json", []byte(out))
	policy := writeFile(t, cl.dir, "log.policy", []byte("log "+cl.l.VerifierKey()+"\nquorum none\n"))
	time.Sleep(1500 * time.Millisecond) // the log now finds the trust evaluation stale; the verifier's default allows it
	code, out, errOut = runCLI(t, cl.dir, "verify", "projection", rec, "--trust", cl.trust, "--log", cl.url, "--log-policy", policy)
	if code != 1 || vtResult(t, out) != "trust_snapshot_stale" {
		t.Fatalf("verify projection --log on a record the log refuses: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if strings.Contains(errOut, "VALID") || strings.Contains(errOut, "error:") || strings.Contains(errOut, "again") || !strings.Contains(errOut, "refused to register") {
		t.Errorf("the summary does not give the log's verdict alone:\n%s", errOut)
	}
}

// TestCLIFsckDamagedEntryBundle: one byte flipped in a full entry bundle
// is named by "fsck" (entry, bundle, file), which offers no repair it
// cannot make, and "fsck --repair" says why it repaired nothing.
func TestCLIFsckDamagedEntryBundle(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	skey, vkey, err := mlog.GenerateLogKey("memtrail.test/fsck")
	if err != nil {
		t.Fatal(err)
	}
	s := gen.Deterministic(9)
	l, err := mlog.Open(context.Background(), mlog.Config{Storage: openStorage(t, data), SigningKey: skey, Trust: s.Trust(time.Now().Add(-time.Hour)),
		BatchMaxAge: 5 * time.Millisecond, CheckpointInterval: 100 * time.Millisecond, Logger: vtQuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		r, _, err := s.Projection(fmt.Sprintf("urn:p:fsck:%d", i), time.Now().UTC(), 1, 20)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Submit(context.Background(), &receipts.Submission{Receipt: r}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(data, "log", "tile", "entries", "000")
	b, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(bundle, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, repair := range []bool{false, true} {
		args := []string{"fsck", "--data", data, "--vkey", vkey}
		if repair {
			args = append(args, "--repair")
		}
		code, out, errOut := runCLI(t, dir, args...)
		if code != 1 || !strings.Contains(out, "entry_mismatch at entry ") || !strings.Contains(out, "file "+filepath.Join("log", "tile", "entries", "000")+")") ||
			strings.Contains(out, "repairable with --repair") || strings.Contains(out, "(repaired)") ||
			!strings.Contains(errOut, "fsck cannot repair") || !strings.Contains(errOut, "entry_mismatch") {
			t.Errorf("fsck (repair %v): exit %d\n%s%s", repair, code, out, errOut)
		}
	}
}

// openStorage opens the embedded storage of the data directory dir.
func openStorage(t testing.TB, dir string) store.Parts {
	t.Helper()
	p, err := posixstore.Open(context.Background(), posixstore.Config{Dir: dir})
	if err != nil {
		t.Fatalf("posixstore.Open(%s): %v", dir, err)
	}
	return p
}
