package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
	"github.com/memtrail/memtrail/witness"
)

// trustFixture is a log and two witnesses, keys and policy files made with
// the built binary; the witnesses are started on demand.
type trustFixture struct {
	t              *testing.T
	bin, dir, data string
	trust          string
	logVKey        string
	w1VKey, w2VKey string
	w1Addr, w2Addr string
	w1Data, w2Data string
	logsFile       string
	signers        *gen.Signers
	seq            int
	policy         map[string]string // name → file
	p1             *verifier.Policy  // quorum w1
	none           string            // the unwitnessed policy's text
}

func newTrustFixture(t *testing.T) *trustFixture {
	t.Helper()
	bin := buildMemtrail(t)
	dir := t.TempDir()
	f := &trustFixture{t: t, bin: bin, dir: dir, data: filepath.Join(dir, "log"), signers: gen.Deterministic(47), policy: map[string]string{}}
	f.trust = writeTestTrust(t, dir, f.signers)
	const origin = "memtrail.test/trust"
	f.logVKey = keygenInto(t, bin, "log", origin, f.data, logKeyFile)
	f.w1Data, f.w2Data = filepath.Join(dir, "w1"), filepath.Join(dir, "w2")
	f.w1VKey = keygenInto(t, bin, "witness", "witness.test/w1", f.w1Data, witnessKeyFile)
	f.w2VKey = keygenInto(t, bin, "witness", "witness.test/w2", f.w2Data, witnessKeyFile)
	f.logsFile = writeFile(t, dir, "witness-logs", witness.FormatLogs([]witness.Log{{Origin: origin, VKey: f.logVKey}}))
	f.w1Addr, f.w2Addr = "127.0.0.1:"+freePort(t), "127.0.0.1:"+freePort(t)
	w1 := fmt.Sprintf("witness w1 %s http://%s\n", f.w1VKey, f.w1Addr)
	w2 := fmt.Sprintf("witness w2 %s http://%s\n", f.w2VKey, f.w2Addr)
	for name, body := range map[string]string{
		"w1":          w1 + "quorum w1\n",
		"w1-moved":    fmt.Sprintf("witness w1 %s http://%s/\nquorum w1\n", f.w1VKey, f.w1Addr),
		"w2":          w2 + "quorum w2\n",
		"w1-or-w2":    w1 + w2 + "group g any w1 w2\nquorum g\n",
		"w1-and-w2":   w1 + w2 + "group g all w1 w2\nquorum g\n",
		"quorum-none": "quorum none\n",
	} {
		f.policy[name] = writeFile(t, dir, name+".policy", []byte("log "+f.logVKey+"\n"+body))
	}
	f.p1 = mustPolicy(t, "log "+f.logVKey+"\n"+w1+"quorum w1\n")
	f.none = "log " + f.logVKey + "\nquorum none\n"
	return f
}

// startW1 starts the first witness.
func (f *trustFixture) startW1() *testProc {
	f.t.Helper()
	return startTestProc(f.t, "memtrail witness", f.bin, "http://"+f.w1Addr+"/metrics",
		"witness", "serve", "--data", f.w1Data, "--logs", f.logsFile, "--listen", f.w1Addr)
}

func (f *trustFixture) serveArgs(extra ...string) []string {
	return append([]string{"serve", "--data", f.data, "--trust", f.trust, "--batch-age", "10ms", "--checkpoint-interval", "200ms"}, extra...)
}

// start starts the log, which must start.
func (f *trustFixture) start(extra ...string) *testProc {
	f.t.Helper()
	port := freePort(f.t)
	return startTestProc(f.t, "memtrail serve", f.bin, "http://127.0.0.1:"+port+"/healthz",
		f.serveArgs(append([]string{"--listen", "127.0.0.1:" + port}, extra...)...)...)
}

// startFails runs the log, which must refuse to start (within a minute),
// and returns its exit status and output.
func (f *trustFixture) startFails(extra ...string) (int, string) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := f.serveArgs(append([]string{"--listen", "127.0.0.1:" + freePort(f.t)}, extra...)...)
	out, err := exec.CommandContext(ctx, f.bin, args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		f.t.Fatalf("memtrail %s did not refuse to start:\n%s", strings.Join(args, " "), out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	case err != nil:
		f.t.Fatal(err)
	}
	f.t.Fatalf("memtrail %s exited 0; want a refusal:\n%s", strings.Join(args, " "), out)
	return 0, ""
}

func (f *trustFixture) projection() *receipts.ProjectionRecord {
	f.t.Helper()
	f.seq++
	r, _, err := f.signers.Projection(fmt.Sprintf("urn:trust:%d", f.seq), time.Now().UTC(), 2, 64)
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

// published returns DATA/log.policy.
func (f *trustFixture) published() string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.data, logPolicyFile))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

// replaced returns the contents of the log.policy.replaced-* files, oldest
// first.
func (f *trustFixture) replaced() []string {
	f.t.Helper()
	names, err := filepath.Glob(filepath.Join(f.data, logPolicyFile+".replaced-*"))
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, n := range names { // Glob sorts; the names sort by time
		b, err := os.ReadFile(n)
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

func (f *trustFixture) read(name string) string {
	f.t.Helper()
	b, err := os.ReadFile(f.policy[name])
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

// TestTrustWitnessPolicyKept: a witnessed log stays witnessed. Its policy
// is recorded in DATA/log.policy; a start without --witness-policy, or
// with a weaker one (a witness dropped, replaced, or made optional), is
// refused with an ERROR saying how to proceed, and changes nothing; the
// published policy itself, an equivalent one (new URL) and a stricter one
// are accepted, the stricter one replacing the record with the old one
// kept beside it; --allow-policy-downgrade lets the operator weaken it on
// purpose. A log.policy removed by hand does not make a witnessed log
// unwitnessed either: the cosignatures on its checkpoint show it was.
func TestTrustWitnessPolicyKept(t *testing.T) {
	f := newTrustFixture(t)
	f.startW1()
	l := f.start("--witness-policy", f.policy["w1"])
	r := f.projection()
	checkWitnessedProof(t, f.bin, f.dir, r, submitWait(t, l.url, r, 30*time.Second).Proof, f.p1, f.policy["w1"],
		mustPolicy(t, f.read("w1-and-w2")), f.policy["w1-and-w2"])
	l.stop(t)
	if got := f.published(); got != f.read("w1") {
		t.Fatalf("log.policy = %q, want the --witness-policy file", got)
	}

	refused := func(what string, extra ...string) {
		t.Helper()
		code, out := f.startFails(extra...)
		for _, want := range []string{"level=ERROR", "refusing to weaken the witness policy", "--witness-policy " + filepath.Join(f.data, logPolicyFile), "--allow-policy-downgrade"} {
			if !strings.Contains(out, want) {
				t.Errorf("start %s: output lacks %q (exit %d):\n%s", what, want, code, out)
			}
		}
		if code != 1 {
			t.Errorf("start %s: exit %d, want 1", what, code)
		}
		if got := f.published(); got != f.read("w1") {
			t.Errorf("start %s rewrote log.policy to:\n%s", what, got)
		}
		if got := f.replaced(); len(got) != 0 {
			t.Errorf("start %s kept %d replaced policies", what, len(got))
		}
	}
	refused("without --witness-policy")
	refused("with another witness", "--witness-policy", f.policy["w2"])
	refused("with the witness made optional", "--witness-policy", f.policy["w1-or-w2"])
	refused("with quorum none", "--witness-policy", f.policy["quorum-none"])

	// The published policy, and one that only moves a URL.
	l = f.start("--witness-policy", filepath.Join(f.data, logPolicyFile))
	l.stop(t)
	l = f.start("--witness-policy", f.policy["w1-moved"])
	l.stop(t)
	if got, old := f.published(), f.replaced(); got != f.read("w1-moved") || len(old) != 1 || old[0] != f.read("w1") {
		t.Errorf("after an equivalent policy: log.policy %q, replaced %q", got, old)
	}
	// Stricter: both witnesses (the second is not running: nothing new is
	// published, and the log still starts and stops).
	l = f.start("--witness-policy", f.policy["w1-and-w2"])
	l.stop(t)
	if got, old := f.published(), f.replaced(); got != f.read("w1-and-w2") || len(old) != 2 || old[1] != f.read("w1-moved") {
		t.Errorf("after a stricter policy: log.policy %q, replaced %q", got, old)
	}
	// Back to one witness is weaker than both.
	code, out := f.startFails("--witness-policy", f.policy["w1"])
	if code != 1 || !strings.Contains(out, "is weaker than the one this log publishes under") {
		t.Errorf("start with one witness of two: exit %d\n%s", code, out)
	}
	// On purpose.
	l = f.start("--witness-policy", f.policy["w1"], "--allow-policy-downgrade")
	l.stop(t)
	if got := f.published(); got != f.read("w1") {
		t.Errorf("after --allow-policy-downgrade: log.policy %q", got)
	}
	if !strings.Contains(l.stderr.tail(1<<20), "level=WARN msg=\"publishing under a weaker witness policy (--allow-policy-downgrade)") {
		t.Errorf("a downgrade was not logged as a warning:\n%s", l.stderr.tail(4000))
	}

	// log.policy removed by hand: the published checkpoint is cosigned.
	if err := os.Remove(filepath.Join(f.data, logPolicyFile)); err != nil {
		t.Fatal(err)
	}
	code, out = f.startFails()
	if code != 1 || !strings.Contains(out, "the published checkpoint carries 1 witness cosignatures") {
		t.Errorf("start without log.policy and without --witness-policy on a witnessed log: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(f.data, logPolicyFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused start wrote log.policy: %v", err)
	}
	// Unwitnessed on purpose.
	l = f.start("--allow-policy-downgrade")
	l.stop(t)
	if got := f.published(); got != f.none {
		t.Errorf("after an explicit downgrade to no witnesses: log.policy %q", got)
	}
	l = f.start() // and it stays so without the flag
	l.stop(t)
}

// TestTrustSecondServe: a second "memtrail serve" on a data directory in
// use fails, saying so, before it writes anything: the running log's
// published policy is untouched, whatever the second was asked to publish.
func TestTrustSecondServe(t *testing.T) {
	f := newTrustFixture(t)
	l := f.start("--witness-policy", f.policy["w1"]) // its witness need not be up
	before := f.published()
	listing := func() string {
		es, err := os.ReadDir(f.data)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range es {
			if !strings.HasPrefix(e.Name(), "index.db") {
				names = append(names, e.Name())
			}
		}
		return strings.Join(names, " ")
	}
	files := listing()
	for _, extra := range [][]string{nil, {"--allow-policy-downgrade"}, {"--witness-policy", f.policy["w1-and-w2"]}} {
		code, out := f.startFails(extra...)
		if code != 1 || !strings.Contains(out, "the data directory is in use") || strings.Contains(out, "refusing to weaken") {
			t.Errorf("second serve %v: exit %d, want 1 and \"in use\":\n%s", extra, code, out)
		}
		if got := f.published(); got != before {
			t.Errorf("second serve %v rewrote the running log's log.policy to:\n%s", extra, got)
		}
		if got := listing(); got != files {
			t.Errorf("second serve %v changed the data directory: %s, was %s", extra, got, files)
		}
	}
	l.stop(t)
}

// TestTrustRewitnessIdleLog: witnessing turned on for a log that is idle
// publishes, at start, a witnessed checkpoint of the same size, so the
// proofs of what it holds verify under the policy it now publishes
// without waiting for the tree to grow. The same holds for a log whose
// last checkpoint was published fail-open.
func TestTrustRewitnessIdleLog(t *testing.T) {
	f := newTrustFixture(t)
	l := f.start()
	r := f.projection()
	acc := submitWait(t, l.url, r, 30*time.Second)
	l.stop(t)
	pNone := mustPolicy(t, f.none)
	before := servedCheckpointOf(t, filepath.Join(f.data, "log", "checkpoint"), pNone)

	f.startW1()
	l = f.start("--witness-policy", f.policy["w1"])
	var c *verifier.Checkpoint
	waitFor(t, 10*time.Second, "a witnessed checkpoint of the idle log", func() bool {
		var err error
		c, err = verifier.OpenCheckpoint(f.p1, []byte(httpGet(t, l.url+"/checkpoint")))
		return err == nil
	})
	if c.Size != before.Size || c.Hash != before.Hash {
		t.Errorf("the witnessed checkpoint is of size %d, root %x; want the same tree as before, size %d", c.Size, c.Hash, before.Size)
	}
	// Its proofs verify under the log's own log.policy, and the archive
	// serves the witnessed checkpoint at that size.
	proofFile := filepath.Join(f.dir, "p.tlog-proof")
	if code, out := runBin(t, f.bin, "proof", "--log", l.url, "--index", strconv.FormatUint(acc.Index, 10), "-o", proofFile); code != 0 {
		t.Fatalf("memtrail proof: exit %d\n%s", code, out)
	}
	receiptFile := writeFile(t, f.dir, "r.json", r.Canonical())
	if code, out := runBin(t, f.bin, "verify", "proof", proofFile, "--receipt", receiptFile, "--policy", filepath.Join(f.data, logPolicyFile)); code != 0 {
		t.Errorf("verify proof --policy DATA/log.policy of the idle log's entry: exit %d\n%s", code, out)
	}
	waitFor(t, 5*time.Second, "the witnessed checkpoint archived", func() bool {
		_, err := verifier.OpenCheckpoint(f.p1, []byte(httpGet(t, fmt.Sprintf("%s/v1/checkpoints/%d", l.url, c.Size))))
		return err == nil
	})
	l.stop(t)
}

// TestTrustSubmitWithoutQuorum: under --witness-fail-open with its witness
// down, the log proves entries against checkpoints without the quorum, and
// "memtrail submit --proof-dir" reports each such proof as one without the
// quorum, with how to fetch a witnessed one later, and exits 3 (as for a
// proof that did not arrive), with or without --policy. Once the witness is
// back, the next start has the same tree cosigned, and the proof fetched
// then verifies under the log's policy.
func TestTrustSubmitWithoutQuorum(t *testing.T) {
	f := newTrustFixture(t)
	l := f.start("--witness-policy", f.policy["w1"], "--witness-fail-open", "--witness-timeout", "1s")
	proofs := filepath.Join(f.dir, "proofs")
	policy := filepath.Join(f.data, logPolicyFile)
	var lastIndex uint64
	var lastFile string
	for i, extra := range [][]string{nil, {"--policy", policy}, {"--json"}} {
		r := f.projection()
		file := writeFile(t, f.dir, fmt.Sprintf("p%d.json", i), r.Canonical())
		args := append([]string{"submit", "--log", l.url, "--proof-dir", proofs}, extra...)
		code, out, errOut := runCLI(t, f.dir, append(args, file)...)
		if code != 3 {
			t.Errorf("submit %v of a fail-open log without its witness: exit %d, want 3\n%s%s", extra, code, out, errOut)
		}
		want := "proof without the witness quorum"
		if len(extra) > 0 && extra[0] == "--json" {
			want = `"proof_without_quorum":`
		}
		if !strings.Contains(out, want) || !strings.Contains(errOut, "memtrail proof --log "+l.url+" --index ") {
			t.Errorf("submit %v does not report the proof without quorum, and how to fetch it later:\n%s%s", extra, out, errOut)
		}
		// The proof written is the one that fails the log's policy.
		proofFile := filepath.Join(proofs, filepath.Base(file)+".tlog-proof")
		if code, out := runBin(t, f.bin, "verify", "proof", proofFile, "--receipt", file, "--policy", policy); code != 1 || !strings.Contains(out, "witness_quorum") {
			t.Errorf("verify proof of a fail-open proof under log.policy: exit %d\n%s", code, out)
		}
		lastFile = file
		lastIndex = uint64(f.seq - 1)
	}
	// Under a policy of its own that needs no witness, the proof is fine.
	r := f.projection()
	file := writeFile(t, f.dir, "p-none.json", r.Canonical())
	if code, out, errOut := runCLI(t, f.dir, "submit", "--log", l.url, "--policy", f.policy["quorum-none"], file); code != 0 {
		t.Errorf("submit --policy (quorum none) of a fail-open log: exit %d, want 0\n%s%s", code, out, errOut)
	}
	l.stop(t)

	// The witness is back: the next start has the same tree cosigned.
	f.startW1()
	l = f.start("--witness-policy", f.policy["w1"])
	waitFor(t, 10*time.Second, "a witnessed checkpoint of the tree published fail-open", func() bool {
		_, err := verifier.OpenCheckpoint(f.p1, []byte(httpGet(t, l.url+"/checkpoint")))
		return err == nil
	})
	proofFile := filepath.Join(f.dir, "later.tlog-proof")
	if code, out := runBin(t, f.bin, "proof", "--log", l.url, "--index", strconv.FormatUint(lastIndex, 10), "-o", proofFile); code != 0 {
		t.Fatalf("memtrail proof: exit %d\n%s", code, out)
	}
	if code, out := runBin(t, f.bin, "verify", "proof", proofFile, "--receipt", lastFile, "--policy", policy); code != 0 {
		t.Errorf("verify proof of the proof fetched once witnessed: exit %d\n%s", code, out)
	}
	l.stop(t)
}

// servedCheckpointOf opens the checkpoint file path under p.
func servedCheckpointOf(t *testing.T, path string, p *verifier.Policy) *verifier.Checkpoint {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := verifier.OpenCheckpoint(p, b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

// TestTrustArchiveSurvivesIndexLoss: the checkpoints a log published are
// not derived, and do not live in the index. After the index is damaged
// and fsck --repair rebuilds it, or after it is deleted, every old size is
// still served at /v1/checkpoints/N (the same bytes) and "memtrail proof
// --size N" proves against it. The archive can be copied while the log
// runs and restored by copying the files back (docs/RELIABILITY.md,
// "Backup and restore"); fsck checks what was restored against the log.
func TestTrustArchiveSurvivesIndexLoss(t *testing.T) {
	f := newTrustFixture(t)
	l := f.start()
	archived := map[uint64]string{}
	var first *receipts.ProjectionRecord
	for range 3 {
		r := f.projection()
		if first == nil {
			first = r
		}
		acc := submitWait(t, l.url, r, 30*time.Second)
		c := mustCheckpoint(t, mustPolicy(t, f.none), acc.Checkpoint)
		waitFor(t, 5*time.Second, fmt.Sprintf("the checkpoint of size %d archived", c.Size), func() bool {
			code, _, body := httpGetStatus(t, fmt.Sprintf("%s/v1/checkpoints/%d", l.url, c.Size))
			return code == http.StatusOK && string(body) == acc.Checkpoint
		})
		archived[c.Size] = acc.Checkpoint
	}
	l.stop(t)
	receiptFile := writeFile(t, f.dir, "first.json", first.Canonical())
	check := func(what string, l *testProc) {
		t.Helper()
		for size, want := range archived {
			if code, _, body := httpGetStatus(t, fmt.Sprintf("%s/v1/checkpoints/%d", l.url, size)); code != http.StatusOK || string(body) != want {
				t.Errorf("%s: GET /v1/checkpoints/%d = %d %q, want the checkpoint published then", what, size, code, body)
			}
			proofFile := filepath.Join(f.dir, "sized.tlog-proof")
			if code, out := runBin(t, f.bin, "proof", "--log", l.url, "--index", "0", "--size", strconv.FormatUint(size, 10), "-o", proofFile); code != 0 {
				t.Errorf("%s: memtrail proof --size %d: exit %d\n%s", what, size, code, out)
				continue
			}
			if code, out := runBin(t, f.bin, "verify", "proof", proofFile, "--receipt", receiptFile, "--policy", filepath.Join(f.data, logPolicyFile)); code != 0 {
				t.Errorf("%s: verify proof at size %d: exit %d\n%s", what, size, code, out)
			}
		}
	}

	// Damaged, and rebuilt by fsck --repair.
	db := filepath.Join(f.data, "index.db")
	if err := os.WriteFile(db, bytes.Repeat([]byte("garbage!"), 512), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(db + "-wal")
	os.Remove(db + "-shm")
	if code, out := runBin(t, f.bin, "fsck", "--data", f.data, "--repair"); code != 0 || !strings.Contains(out, "index_damaged") {
		t.Fatalf("fsck --repair of a damaged index: exit %d\n%s", code, out)
	}
	l = f.start()
	check("after fsck --repair rebuilt the index", l)
	// A backup of the archive taken while the log runs.
	backup := filepath.Join(f.dir, "checkpoints-backup")
	if err := os.CopyFS(backup, os.DirFS(filepath.Join(f.data, "checkpoints"))); err != nil {
		t.Fatal(err)
	}
	l.stop(t)

	// Deleted: the start rebuilds it.
	removeIndex(t, f.data)
	os.Remove(db + "-ids")
	l = f.start()
	check("after the index was deleted", l)
	l.stop(t)

	// Lost, and restored from the backup.
	if err := os.RemoveAll(filepath.Join(f.data, "checkpoints")); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(f.data, "checkpoints"), os.DirFS(backup)); err != nil {
		t.Fatal(err)
	}
	if code, out := runBin(t, f.bin, "fsck", "--data", f.data); code != 0 {
		t.Errorf("fsck of the restored archive: exit %d\n%s", code, out)
	}
	l = f.start()
	check("after the archive was restored", l)
	l.stop(t)
}

func mustCheckpoint(t *testing.T, p *verifier.Policy, raw string) *verifier.Checkpoint {
	t.Helper()
	c, err := verifier.OpenCheckpoint(p, []byte(raw))
	if err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	return c
}
