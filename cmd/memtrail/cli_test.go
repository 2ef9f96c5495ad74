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
	"github.com/memtrail/memtrail/receipts"
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
	l, err := mlog.Open(context.Background(), mlog.Config{Dir: filepath.Join(dir, "data"), SigningKey: skey, Trust: trust,
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
