package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memtrail/memtrail/api"
	"github.com/memtrail/memtrail/internal/gen"
	mlog "github.com/memtrail/memtrail/log"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
	"github.com/memtrail/memtrail/witness"
)

// TestWitnessedLog runs "memtrail serve --witness-policy" against "memtrail
// witness serve", both as processes, and checks the log side of witnessing:
//
//   - a new log whose witness is not up yet starts but publishes nothing
//     (/checkpoint is 404) until the witness has cosigned its first
//     checkpoint;
//   - with the witness up, ?wait=proof answers, /checkpoint and /v1/proof
//     carry its cosignature: the proof verifies under the 1-of-1 policy
//     naming the witness, and not under a 2-of-2 policy that also requires
//     a witness the log never asked (with the verifier package and with
//     "memtrail verify proof");
//   - with the witness stopped and the default (fail closed), the
//     published checkpoint stops advancing, ?wait=proof times out, and the
//     metrics show it (tree size ahead of the checkpoint, failed witness
//     requests, none published without the quorum); once the witness is
//     back, the checkpoint advances, cosigned;
//   - with --witness-fail-open, a stopped witness, or one that accepts
//     connections and never answers (after --witness-timeout), does not stop
//     publication: the checkpoint advances without the cosignature, its
//     proofs fail the policy, and
//     memtrail_checkpoints_published_without_quorum_total counts it; once
//     the witness is back, checkpoints are cosigned again.
func TestWitnessedLog(t *testing.T) {
	bin := buildMemtrail(t)
	dir := t.TempDir()
	const origin = "memtrail.test/witnessed"
	signers := gen.Deterministic(41)
	trust := writeTestTrust(t, dir, signers)

	data := filepath.Join(dir, "log")
	logVKey := keygenInto(t, bin, "log", origin, data, logKeyFile)
	wdata := filepath.Join(dir, "witness")
	const wName = "witness.test/w1"
	wVKey := keygenInto(t, bin, "witness", wName, wdata, witnessKeyFile)
	logsFile := writeFile(t, dir, "witness-logs", witness.FormatLogs([]witness.Log{{Origin: origin, VKey: logVKey}}))
	wAddr := "127.0.0.1:" + freePort(t)
	startWitness := func() *testProc {
		p := startTestProc(t, "memtrail witness", bin, "http://"+wAddr+"/metrics",
			"witness", "serve", "--data", wdata, "--logs", logsFile, "--listen", wAddr)
		if got := p.firstLine(t); got != wVKey {
			t.Fatalf("memtrail witness serve printed %q, want its key %q", got, wVKey)
		}
		return p
	}

	_, absentVKey, err := witness.GenerateKey("witness.test/absent")
	if err != nil {
		t.Fatal(err)
	}
	policy1 := fmt.Sprintf("log %s\nwitness w1 %s http://%s\nquorum w1\n", logVKey, wVKey, wAddr)
	policy2 := fmt.Sprintf("log %s\nwitness w1 %s http://%s\nwitness w2 %s http://127.0.0.1:9\ngroup both all w1 w2\nquorum both\n", logVKey, wVKey, wAddr, absentVKey)
	policy1File := writeFile(t, dir, "1-of-1.policy", []byte(policy1))
	policy2File := writeFile(t, dir, "2-of-2.policy", []byte(policy2))
	p1, p2 := mustPolicy(t, policy1), mustPolicy(t, policy2)
	pNone := mustPolicy(t, "log "+logVKey+"\nquorum none\n")

	serveArgs := []string{"serve", "--data", data, "--trust", trust, "--witness-policy", policy1File,
		"--batch-age", "10ms", "--checkpoint-interval", "200ms"}
	startLog := func(extra ...string) *testProc {
		port := freePort(t)
		args := append(append(append([]string(nil), serveArgs...), "--listen", "127.0.0.1:"+port), extra...)
		p := startTestProc(t, "memtrail serve", bin, "http://127.0.0.1:"+port+"/healthz", args...)
		if got := p.firstLine(t); got != logVKey {
			t.Fatalf("memtrail serve printed %q, want its key %q", got, logVKey)
		}
		return p
	}
	wRequests := func(p *testProc, code string) float64 {
		return p.metric(t, fmt.Sprintf("memtrail_witness_requests_total{code=%q,witness=%q}", code, wName))
	}

	// A new log whose witness is not up yet starts, but publishes nothing
	// until the witness has cosigned its first checkpoint.
	l := startLog()
	if code := httpStatus(t, l.url+"/checkpoint"); code != http.StatusNotFound {
		t.Errorf("GET /checkpoint of a new log without its witness: %d, want 404", code)
	}
	waitFor(t, 5*time.Second, "failed witness request", func() bool { return wRequests(l, "error") >= 1 })
	if code := httpStatus(t, l.url+"/checkpoint"); code != http.StatusNotFound {
		t.Errorf("GET /checkpoint of a new log without its witness: %d, want 404", code)
	}
	w := startWitness()
	waitFor(t, 15*time.Second, "cosigned first checkpoint", func() bool {
		_, err := verifier.OpenCheckpoint(p1, []byte(httpGetAny(t, l.url+"/checkpoint")))
		return err == nil
	})

	// Witnessed: every form of the proof carries the cosignature.
	seq := 0
	next := func() *receipts.ProjectionRecord {
		seq++
		r, _, err := signers.Projection(fmt.Sprintf("urn:witnessed:%d", seq), time.Now().UTC(), 2, 64)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := next()
	acc := submitWait(t, l.url, r, 30*time.Second)
	c := checkWitnessedProof(t, bin, dir, r, acc.Proof, p1, policy1File, p2, policy2File)
	if len(c.Cosignatures) != 1 || c.Cosignatures[0].Witness != "w1" || c.Cosignatures[0].KeyName != wName {
		t.Errorf("cosignatures on the ?wait=proof checkpoint = %+v, want one from w1 (%s)", c.Cosignatures, wName)
	}
	if acc.Checkpoint != string(c.Raw) {
		t.Errorf("the answer's checkpoint is not the one in its proof")
	}
	served := servedCheckpoint(t, l.url, p1)
	if served.Size < c.Size {
		t.Errorf("/checkpoint size %d, below the size %d of an earlier answer", served.Size, c.Size)
	}
	checkWitnessedProof(t, bin, dir, r, httpGet(t, l.url+"/v1/proof/"+strconv.FormatUint(acc.Index, 10)), p1, policy1File, p2, policy2File)
	waitFor(t, 5*time.Second, "memtrail_checkpoint_witnessed 1", func() bool { return l.metric(t, "memtrail_checkpoint_witnessed") == 1 })
	if got := l.metric(t, "memtrail_checkpoints_published_without_quorum_total"); got != 0 {
		t.Errorf("memtrail_checkpoints_published_without_quorum_total = %v, want 0", got)
	}
	if got := wRequests(l, "200"); got < 1 {
		t.Errorf("witness requests answered 200 = %v, want at least 1", got)
	}

	// Fail closed: without the witness, nothing is published.
	w.stop(t)
	before := servedCheckpoint(t, l.url, p1)
	pending := next()
	pacc, status, err := post(context.Background(), http.DefaultClient, l.url+"/v1/projections", pending.Canonical())
	if err != nil || status != http.StatusCreated {
		t.Fatalf("submission with the witness down: %d %v, want 201", status, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_, status, err = post(ctx, http.DefaultClient, l.url+"/v1/projections?wait=proof", next().Canonical())
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("?wait=proof with the witness down: status %d, error %v; want no answer within 2s", status, err)
	}
	time.Sleep(time.Second)
	if after := servedCheckpoint(t, l.url, p1); after.Size != before.Size || !bytes.Equal(after.Raw, before.Raw) {
		t.Errorf("the checkpoint changed from size %d to %d with the witness down and no fail-open", before.Size, after.Size)
	}
	if tree, cp := l.metric(t, "memtrail_tree_size"), l.metric(t, "memtrail_checkpoint_size"); tree < float64(before.Size+2) || cp != float64(before.Size) {
		t.Errorf("metrics with the witness down: tree size %v, checkpoint size %v; want tree ≥ %d, checkpoint %d", tree, cp, before.Size+2, before.Size)
	}
	if got := l.metric(t, "memtrail_checkpoint_age_seconds"); got < 2 {
		t.Errorf("memtrail_checkpoint_age_seconds = %v after 3s without publication", got)
	}
	if got := wRequests(l, "error"); got < 1 {
		t.Errorf("failed witness requests = %v, want at least 1", got)
	}
	if got := l.metric(t, "memtrail_checkpoints_published_without_quorum_total"); got != 0 {
		t.Errorf("memtrail_checkpoints_published_without_quorum_total = %v without fail-open, want 0", got)
	}

	// The witness is back: the checkpoint covers the pending entry, cosigned.
	w = startWitness()
	waitFor(t, 15*time.Second, "a cosigned checkpoint covering the entries sent while the witness was down", func() bool {
		cp, err := verifier.OpenCheckpoint(p1, []byte(httpGet(t, l.url+"/checkpoint")))
		return err == nil && cp.Size > pacc.Index+1
	})
	checkWitnessedProof(t, bin, dir, pending, httpGet(t, l.url+"/v1/proof/"+strconv.FormatUint(pacc.Index, 10)), p1, policy1File, p2, policy2File)
	l.stop(t)

	// Fail open: publication goes on without the witness, and says so.
	l = startLog("--witness-fail-open", "--witness-timeout", "1s")
	r = next()
	checkWitnessedProof(t, bin, dir, r, submitWait(t, l.url, r, 30*time.Second).Proof, p1, policy1File, p2, policy2File)
	w.stop(t)
	r = next()
	acc = submitWait(t, l.url, r, 30*time.Second)
	checkUnwitnessedProof(t, bin, dir, r, acc.Proof, p1, policy1File, pNone)
	waitFor(t, 5*time.Second, "memtrail_checkpoints_published_without_quorum_total ≥ 1", func() bool {
		return l.metric(t, "memtrail_checkpoints_published_without_quorum_total") >= 1
	})
	waitFor(t, 5*time.Second, "memtrail_checkpoint_witnessed 0", func() bool { return l.metric(t, "memtrail_checkpoint_witnessed") == 0 })

	// A witness that never answers: publication waits --witness-timeout.
	hung := hangOn(t, wAddr)
	unwitnessed := l.metric(t, "memtrail_checkpoints_published_without_quorum_total")
	r = next()
	start := time.Now()
	acc = submitWait(t, l.url, r, 30*time.Second)
	if d := time.Since(start); d < time.Second {
		t.Errorf("?wait=proof answered in %v with a silent witness, before the 1s witness timeout", d)
	}
	checkUnwitnessedProof(t, bin, dir, r, acc.Proof, p1, policy1File, pNone)
	waitFor(t, 5*time.Second, fmt.Sprintf("memtrail_checkpoints_published_without_quorum_total above %v", unwitnessed), func() bool {
		return l.metric(t, "memtrail_checkpoints_published_without_quorum_total") > unwitnessed
	})
	hung.Close()

	// The witness is back: it catches up from the size it cosigned last.
	w = startWitness()
	r = next()
	checkWitnessedProof(t, bin, dir, r, submitWait(t, l.url, r, 30*time.Second).Proof, p1, policy1File, p2, policy2File)
	waitFor(t, 5*time.Second, "memtrail_checkpoint_witnessed 1", func() bool { return l.metric(t, "memtrail_checkpoint_witnessed") == 1 })
	if got := wRequests(l, "409"); got < 1 {
		t.Errorf("witness requests answered 409 = %v; the returning witness should have named the older size it holds", got)
	}
	l.stop(t)
	w.stop(t)
}

// TestWitnessInteropOmniwitness runs memtrail's log against omniwitness
// (github.com/transparency-dev/witness), a witness that is not ours: the log
// collects its cosignatures through Tessera, over several checkpoints (so
// with consistency proofs), and the proofs it hands out verify under the
// 1-of-1 policy naming omniwitness and fail under a 2-of-2 policy, with the
// verifier package and with "memtrail verify proof".
//
// omniwitness is built at omniwitnessVersion, outside this module, into a
// directory kept across runs (see buildOmniwitness). It is told about our log
// with --additional_logs; it makes no outbound requests without a distributor,
// bastion or public witness network flag.
func TestWitnessInteropOmniwitness(t *testing.T) {
	bin := buildMemtrail(t)
	omni := buildOmniwitness(t)
	dir := t.TempDir()
	const origin = "memtrail.test/omniwitnessed"
	signers := gen.Deterministic(43)
	trust := writeTestTrust(t, dir, signers)
	data := filepath.Join(dir, "log")
	logVKey := keygenInto(t, bin, "log", origin, data, logKeyFile)

	// omniwitness reads a signed-note private key; ours are in that form.
	const oName = "omniwitness.test/w"
	oVKey := keygenInto(t, bin, "witness", oName, dir, "omniwitness.key")
	logPort := freePort(t)
	yaml := fmt.Sprintf("Logs:\n  - Origin: %s\n    PublicKey: %s\n    URL: http://127.0.0.1:%s/\n", origin, logVKey, logPort)
	yamlFile := writeFile(t, dir, "omniwitness-logs.yaml", []byte(yaml))
	oAddr := "127.0.0.1:" + freePort(t)
	o := startTestProc(t, "omniwitness", omni, "http://"+oAddr+"/",
		"--listen", oAddr, "--metrics_listen", "", "--db_file", filepath.Join(dir, "omniwitness.db"),
		"--private_key_path", filepath.Join(dir, "omniwitness.key"), "--additional_logs", yamlFile)

	_, absentVKey, err := witness.GenerateKey("witness.test/absent")
	if err != nil {
		t.Fatal(err)
	}
	policy1 := fmt.Sprintf("log %s\nwitness omni %s http://%s\nquorum omni\n", logVKey, oVKey, oAddr)
	policy2 := fmt.Sprintf("log %s\nwitness omni %s http://%s\nwitness other %s http://127.0.0.1:9\ngroup both all omni other\nquorum both\n", logVKey, oVKey, oAddr, absentVKey)
	policy1File := writeFile(t, dir, "1-of-1.policy", []byte(policy1))
	policy2File := writeFile(t, dir, "2-of-2.policy", []byte(policy2))
	p1, p2 := mustPolicy(t, policy1), mustPolicy(t, policy2)

	l := startTestProc(t, "memtrail serve", bin, "http://127.0.0.1:"+logPort+"/healthz",
		"serve", "--data", data, "--trust", trust, "--witness-policy", policy1File, "--listen", "127.0.0.1:"+logPort,
		"--batch-age", "10ms", "--checkpoint-interval", "200ms")
	var sizes []uint64
	for i := range 3 {
		r, _, err := signers.Projection(fmt.Sprintf("urn:omniwitnessed:%d", i), time.Now().UTC(), 2, 64)
		if err != nil {
			t.Fatal(err)
		}
		acc := submitWait(t, "http://127.0.0.1:"+logPort, r, 30*time.Second)
		c := checkWitnessedProof(t, bin, dir, r, acc.Proof, p1, policy1File, p2, policy2File)
		if len(c.Cosignatures) != 1 || c.Cosignatures[0].Witness != "omni" || c.Cosignatures[0].KeyName != oName {
			t.Errorf("cosignatures = %+v, want one from omniwitness (%s)", c.Cosignatures, oName)
		}
		sizes = append(sizes, c.Size)
	}
	if sizes[0] == sizes[len(sizes)-1] {
		t.Errorf("all proofs are against size %d; want omniwitness to cosign growing checkpoints", sizes[0])
	}
	servedCheckpoint(t, "http://127.0.0.1:"+logPort, p1)
	if got := l.metric(t, fmt.Sprintf("memtrail_witness_requests_total{code=\"200\",witness=%q}", oName)); got < 3 {
		t.Errorf("requests to omniwitness answered 200 = %v, want at least 3", got)
	}
	if got := l.metric(t, "memtrail_checkpoints_published_without_quorum_total"); got != 0 {
		t.Errorf("memtrail_checkpoints_published_without_quorum_total = %v, want 0", got)
	}
	l.stop(t)
	o.kill() // omniwitness does not handle SIGTERM
}

// TestWitnessDocPolicy checks that the policy file shown in docs/witness.md,
// "Witnessing a memtrail log", is one "memtrail serve --witness-policy"
// accepts for the log it names, and refuses for another log.
func TestWitnessDocPolicy(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "witness.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## Witnessing a memtrail log\n")
	if !ok {
		t.Fatal(`docs/witness.md has no "Witnessing a memtrail log" section`)
	}
	var lines []string
	for _, line := range strings.Split(section, "\n") {
		if l, ok := strings.CutPrefix(line, "    "); ok {
			lines = append(lines, l)
		} else if len(lines) > 0 {
			break
		}
	}
	policy := strings.Join(lines, "\n") + "\n"
	var logVKey string
	for _, l := range lines {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "log" {
			logVKey = f[1]
		}
	}
	path := writeFile(t, t.TempDir(), "log.policy", []byte(policy))
	wg, err := readWitnessPolicy(path, logVKey)
	if err != nil {
		t.Fatalf("the policy of docs/witness.md: %v\n%s", err, policy)
	}
	if n := len(wg.Endpoints()); n != 3 {
		t.Errorf("the policy of docs/witness.md has %d witness endpoints, want 3", n)
	}
	_, other, err := mlog.GenerateLogKey("other.example.com/log")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readWitnessPolicy(path, other); err == nil {
		t.Errorf("readWitnessPolicy accepted the policy of docs/witness.md for a log it does not name")
	}
}

// omniwitnessVersion is the omniwitness TestWitnessInteropOmniwitness runs.
const omniwitnessVersion = "v0.0.0-20260720115447-2e1c6971d19e"

var (
	omniOnce sync.Once
	omniPath string
	omniErr  error
)

// buildOmniwitness installs omniwitness at omniwitnessVersion with "go
// install pkg@version", which resolves it with its own go.mod (our go.mod is
// not touched), into a directory under the system temporary directory named
// by the version, so that later runs reuse the binary. It installs into a
// fresh directory first and renames it into place, so concurrent runs never
// see a partial binary.
func buildOmniwitness(t *testing.T) string {
	t.Helper()
	omniOnce.Do(func() {
		final := filepath.Join(os.TempDir(), "memtrail-omniwitness-"+omniwitnessVersion)
		omniPath = filepath.Join(final, "omniwitness")
		if fi, err := os.Stat(omniPath); err == nil && fi.Mode().IsRegular() {
			return
		}
		gobin, err := os.MkdirTemp(os.TempDir(), "memtrail-omniwitness-build-")
		if err != nil {
			omniErr = err
			return
		}
		defer os.RemoveAll(gobin)
		cmd := exec.Command(goTool(), "install", "github.com/transparency-dev/witness/cmd/omniwitness@"+omniwitnessVersion)
		cmd.Dir = gobin
		cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			omniErr = fmt.Errorf("go install omniwitness@%s: %w\n%s", omniwitnessVersion, err, out)
			return
		}
		if err := os.Rename(gobin, final); err != nil {
			if _, serr := os.Stat(omniPath); serr != nil {
				omniErr = fmt.Errorf("couldn't keep the omniwitness build: %w", err)
			}
		}
	})
	if omniErr != nil {
		t.Fatal(omniErr)
	}
	return omniPath
}

// goTool is the go command of the toolchain running the test.
func goTool() string {
	if p := filepath.Join(os.Getenv("GOROOT"), "bin", "go"); os.Getenv("GOROOT") != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "go"
}

// checkWitnessedProof checks that the tlog-proof of r verifies under p1 (with
// the verifier package and with "memtrail verify proof") and fails under p2,
// whose quorum needs a witness that did not cosign.
func checkWitnessedProof(t *testing.T, bin, dir string, r *receipts.ProjectionRecord, proof string, p1 *verifier.Policy, p1File string, p2 *verifier.Policy, p2File string) *verifier.Checkpoint {
	t.Helper()
	leaf := verifier.LeafHash(r.Canonical())
	ip, c, err := verifier.VerifyProof(p1, []byte(proof), leaf)
	if err != nil {
		t.Fatalf("VerifyProof under the 1-of-1 policy: %v\n%s", err, proof)
	}
	if len(c.Cosignatures) == 0 {
		t.Errorf("proof of %d verified under the 1-of-1 policy without cosignatures", ip.Index)
	}
	if _, _, err := verifier.VerifyProof(p2, []byte(proof), leaf); !errors.Is(err, verifier.ErrQuorum) {
		t.Errorf("VerifyProof under the 2-of-2 policy: %v, want ErrQuorum", err)
	}
	proofFile := writeFile(t, dir, "last.tlog-proof", []byte(proof))
	receiptFile := writeFile(t, dir, "last-receipt.json", r.Canonical())
	if code, out := runBin(t, bin, "verify", "proof", proofFile, "--receipt", receiptFile, "--policy", p1File); code != 0 {
		t.Errorf("memtrail verify proof under the 1-of-1 policy: exit %d, want 0\n%s", code, out)
	}
	if code, out := runBin(t, bin, "verify", "proof", proofFile, "--receipt", receiptFile, "--policy", p2File); code != 1 {
		t.Errorf("memtrail verify proof under the 2-of-2 policy: exit %d, want 1\n%s", code, out)
	}
	return c
}

// checkUnwitnessedProof checks that the tlog-proof of r lacks the quorum of
// p1 but is otherwise sound: it verifies under pNone, the same log with quorum
// none.
func checkUnwitnessedProof(t *testing.T, bin, dir string, r *receipts.ProjectionRecord, proof string, p1 *verifier.Policy, p1File string, pNone *verifier.Policy) {
	t.Helper()
	leaf := verifier.LeafHash(r.Canonical())
	if _, _, err := verifier.VerifyProof(p1, []byte(proof), leaf); !errors.Is(err, verifier.ErrQuorum) {
		t.Errorf("VerifyProof of a fail-open proof under the 1-of-1 policy: %v, want ErrQuorum", err)
	}
	if _, _, err := verifier.VerifyProof(pNone, []byte(proof), leaf); err != nil {
		t.Errorf("VerifyProof of a fail-open proof without a quorum: %v; the log signature and inclusion should verify", err)
	}
	proofFile := writeFile(t, dir, "last.tlog-proof", []byte(proof))
	receiptFile := writeFile(t, dir, "last-receipt.json", r.Canonical())
	if code, out := runBin(t, bin, "verify", "proof", proofFile, "--receipt", receiptFile, "--policy", p1File); code != 1 {
		t.Errorf("memtrail verify proof of a fail-open proof under the 1-of-1 policy: exit %d, want 1\n%s", code, out)
	}
}

// servedCheckpoint fetches /checkpoint and opens it under p.
func servedCheckpoint(t *testing.T, base string, p *verifier.Policy) *verifier.Checkpoint {
	t.Helper()
	raw := httpGet(t, base+"/checkpoint")
	c, err := verifier.OpenCheckpoint(p, []byte(raw))
	if err != nil {
		t.Fatalf("/checkpoint does not open under the policy: %v\n%s", err, raw)
	}
	return c
}

// submitWait submits r with ?wait=proof and returns the answer, which must
// come within timeout.
func submitWait(t *testing.T, base string, r *receipts.ProjectionRecord, timeout time.Duration) *api.Accepted {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	acc, status, err := post(ctx, http.DefaultClient, base+"/v1/projections?wait=proof", r.Canonical())
	if err != nil || status != http.StatusCreated {
		t.Fatalf("submit %s with ?wait=proof: status %d, error %v", r.ProjectionID, status, err)
	}
	if want := base64.StdEncoding.EncodeToString(verifier.LeafHash(r.Canonical())); acc.LeafHash != want {
		t.Fatalf("leaf hash %s, want %s (the receipt's canonical bytes)", acc.LeafHash, want)
	}
	if acc.Proof == "" {
		t.Fatalf("?wait=proof answer without a proof: %+v", acc)
	}
	return acc
}

func mustPolicy(t *testing.T, text string) *verifier.Policy {
	t.Helper()
	p, err := verifier.ParsePolicy([]byte(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return p
}

func writeTestTrust(t *testing.T, dir string, s *gen.Signers) string {
	t.Helper()
	return writeFile(t, dir, "trust.json", receipts.MarshalTrust(s.Trust(time.Now().Add(-time.Hour).UTC().Truncate(time.Second))))
}

// keygenInto runs "memtrail keygen" for a log or witness key, writing it to
// dir/file as the serving command expects it, and returns the verifier key.
func keygenInto(t *testing.T, bin, kind, name, dir, file string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "keygen", "--kind", kind, "--name", name, "--out", filepath.Join(dir, file)).Output()
	if err != nil {
		t.Fatalf("memtrail keygen --kind %s: %v", kind, err)
	}
	return strings.TrimSpace(string(out))
}

// runBin runs the built binary and returns its exit status and output.
func runBin(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &exit):
		return exit.ExitCode(), string(out)
	}
	t.Fatalf("%s %s: %v", bin, strings.Join(args, " "), err)
	return -1, ""
}

func httpGet(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	return string(b)
}

// httpStatus returns the status of a GET of u.
func httpStatus(t *testing.T, u string) int {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// httpGetAny returns the body of a GET of u, whatever its status.
func httpGetAny(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hangOn listens on addr and holds every connection open without reading
// or answering, as a witness that has stopped responding would.
func hangOn(t *testing.T, addr string) io.Closer {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	h := &hungServer{ln: ln}
	go h.serve()
	t.Cleanup(func() { h.Close() })
	return h
}

type hungServer struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	once  sync.Once
}

func (h *hungServer) serve() {
	for {
		c, err := h.ln.Accept()
		if err != nil {
			return
		}
		h.mu.Lock()
		h.conns = append(h.conns, c)
		h.mu.Unlock()
	}
}

func (h *hungServer) Close() error {
	h.once.Do(func() {
		h.ln.Close()
		h.mu.Lock()
		for _, c := range h.conns {
			c.Close()
		}
		h.mu.Unlock()
	})
	return nil
}

// testProc is a server process started by a test: its standard output is
// read line by line, its standard error kept for failure messages.
type testProc struct {
	name   string
	cmd    *exec.Cmd
	url    string // scheme and host
	lines  chan string
	stderr *syncBuffer
	done   chan struct{}
}

// startTestProc starts bin with args and waits until GET ready gets an HTTP
// answer (200 for paths under memtrail, anything for omniwitness, which
// serves no GET).
func startTestProc(t *testing.T, name, bin, ready string, args ...string) *testProc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &testProc{name: name, cmd: cmd, lines: make(chan string, 16), stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			select {
			case p.lines <- s.Text():
			default:
			}
		}
		cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.kill() })
	u, err := url.Parse(ready)
	if err != nil {
		t.Fatal(err)
	}
	p.url = u.Scheme + "://" + u.Host
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(ready)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || !strings.HasPrefix(name, "memtrail") {
				return p
			}
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited at start:\n%s", name, p.stderr.tail(4000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not start:\n%s", name, p.stderr.tail(4000))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// firstLine returns the first line the process printed.
func (p *testProc) firstLine(t *testing.T) string {
	t.Helper()
	select {
	case l := <-p.lines:
		return l
	case <-time.After(10 * time.Second):
		t.Fatalf("%s printed nothing:\n%s", p.name, p.stderr.tail(4000))
		return ""
	}
}

// metric returns the value of series (name and labels, as written) in the
// process's /metrics, or -1 if it is absent.
func (p *testProc) metric(t *testing.T, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(httpGet(t, p.url+"/metrics"), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %q", series, line)
			}
			return f
		}
	}
	return -1
}

// stop sends SIGTERM and waits for a clean exit.
func (p *testProc) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		p.kill()
		t.Fatalf("%s did not stop within a minute:\n%s", p.name, p.stderr.tail(4000))
	}
	if !p.cmd.ProcessState.Success() {
		t.Errorf("%s did not stop cleanly: %v\n%s", p.name, p.cmd.ProcessState, p.stderr.tail(4000))
	}
}

func (p *testProc) kill() {
	select {
	case <-p.done:
	default:
		p.cmd.Process.Kill()
		<-p.done
	}
}

// syncBuffer is a bytes.Buffer safe for a process's writes while a test
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) tail(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.b.Bytes()
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
