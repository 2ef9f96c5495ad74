package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memtrail/memtrail/api"
	"github.com/memtrail/memtrail/internal/gen"
	mlog "github.com/memtrail/memtrail/log"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
)

// verifyMu serializes the tests that capture the verify commands' output.
var verifyMu sync.Mutex

// runVerifyCmd runs "memtrail verify args..." in process and returns its
// exit status, standard output and standard error.
func runVerifyCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	verifyMu.Lock()
	defer verifyMu.Unlock()
	var out, errOut bytes.Buffer
	verifyOut.stdout, verifyOut.stderr = &out, &errOut
	defer func() { verifyOut.stdout, verifyOut.stderr = nil, nil }()
	code := run(append([]string{"verify"}, args...), &errOut)
	return code, out.String(), errOut.String()
}

// writeFile writes a test input file and returns its path (the witness
// end-to-end tests use it too).
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// interopFiles writes the interop vector's record, pin, material and
// policy as the files the command takes.
func vtInteropFiles(t *testing.T) (dir, record, pins, material, policy string) {
	t.Helper()
	raw, err := os.ReadFile("../../conformance/vectors/emilia-amem/memory-projection-record.v1.vectors.json")
	if err != nil {
		t.Fatalf("conformance vectors are missing: %v", err)
	}
	var v struct {
		Pin        json.RawMessage `json:"adapter_pin"`
		Policy     json.RawMessage `json:"verification_policy"`
		Projection struct {
			Record   json.RawMessage `json:"record"`
			Material json.RawMessage `json:"verification_material"`
		} `json:"projection"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	return dir, writeFile(t, dir, "record.json", v.Projection.Record), writeFile(t, dir, "pins.json", v.Pin),
		writeFile(t, dir, "material.json", v.Projection.Material), writeFile(t, dir, "policy.json", v.Policy)
}

func vtResult(t *testing.T, out string) string {
	t.Helper()
	var r struct {
		Result string `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("the JSON report does not parse: %v\n%s", err, out)
	}
	return r.Result
}

func TestVerifyProjectionCommand(t *testing.T) {
	dir, record, pins, material, policy := vtInteropFiles(t)
	reg := filepath.Join(dir, "seen.reg")
	args := []string{"projection", record, "--adapters", pins, "--material", material, "--policy", policy, "--registry", reg}
	code, out, errOut := runVerifyCmd(t, args...)
	if code != 0 || vtResult(t, out) != "VALID" || !strings.Contains(errOut, "VALID") {
		t.Fatalf("first verification: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = runVerifyCmd(t, args...)
	if code != 1 || vtResult(t, out) != "projection_replay" {
		t.Fatalf("second verification: exit %d\n%s", code, out)
	}
	// Flags before the record, no material: record only, still valid.
	code, out, _ = runVerifyCmd(t, "projection", "--adapters", pins, "--at", "2026-07-29T17:01:00Z", record)
	if code != 0 || !strings.Contains(out, `"verification_scope": "RECORD_ONLY"`) {
		t.Fatalf("record only: exit %d\n%s", code, out)
	}
	// A stale trust evaluation is refused.
	code, out, _ = runVerifyCmd(t, "projection", record, "--adapters", pins, "--policy", policy, "--at", "2026-07-29T18:01:00Z")
	if code != 1 || vtResult(t, out) != "trust_snapshot_stale" {
		t.Fatalf("an hour later: exit %d\n%s", code, out)
	}
	for name, c := range map[string]struct {
		args []string
		want int
	}{
		"no pins":               {[]string{"projection", record}, 2},
		"no record":             {[]string{"projection", "--adapters", pins}, 2},
		"registry and log":      {[]string{"projection", record, "--adapters", pins, "--registry", reg, "--log", "http://x"}, 2},
		"bad time":              {[]string{"projection", record, "--adapters", pins, "--at", "yesterday"}, 2},
		"missing record file":   {[]string{"projection", filepath.Join(dir, "none.json"), "--adapters", pins}, 2},
		"material not JSON":     {[]string{"projection", record, "--adapters", pins, "--material", pins + "x"}, 2},
		"malformed material":    {[]string{"projection", record, "--adapters", pins, "--material", policy}, 2},
		"pins are not pins":     {[]string{"projection", record, "--adapters", material}, 2},
		"unknown subcommand":    {[]string{"receipts"}, 2},
		"help":                  {[]string{"projection", "-h"}, 0},
		"record not a record":   {[]string{"projection", pins, "--adapters", pins}, 1},
		"another adapter's key": {[]string{"projection", record, "--adapters", writeFile(t, dir, "other.json", bytes.Replace(vtRead(t, pins), []byte("reference-01"), []byte("reference-02"), 1))}, 1},
	} {
		t.Run(name, func(t *testing.T) {
			if code, out, errOut := runVerifyCmd(t, c.args...); code != c.want {
				t.Errorf("exit %d, want %d\n%s\n%s", code, c.want, out, errOut)
			}
		})
	}
}

func vtRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestVerifyProjectionProcesses runs "memtrail verify projection" in
// several processes at once on one registry: exactly one accepts the id.
func TestVerifyProjectionProcesses(t *testing.T) {
	if args := os.Getenv("MEMTRAIL_TEST_VERIFY_ARGS"); args != "" {
		os.Exit(run(strings.Split(args, "\x1f"), os.Stderr))
	}
	dir, record, pins, material, policy := vtInteropFiles(t)
	reg := filepath.Join(dir, "seen.reg")
	args := strings.Join([]string{"verify", "projection", record, "--adapters", pins, "--material", material, "--policy", policy, "--registry", reg}, "\x1f")
	const procs = 6
	codes := make([]int, procs)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestVerifyProjectionProcesses$")
			cmd.Env = append(os.Environ(), "MEMTRAIL_TEST_VERIFY_ARGS="+args)
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); ok {
				codes[i] = ee.ExitCode()
			} else if err != nil {
				codes[i] = -1
			}
		}()
	}
	wg.Wait()
	valid, replay := 0, 0
	for _, c := range codes {
		switch c {
		case 0:
			valid++
		case 1:
			replay++
		}
	}
	if valid != 1 || replay != procs-1 {
		t.Errorf("exit codes %v: want one 0 and the rest 1", codes)
	}
}

// draftECCR is the ECCR draft's envelope and the public key that signed it.
func draftECCR(t *testing.T) (v struct {
	Pub      string          `json:"public_key_hex"`
	Envelope json.RawMessage `json:"envelope"`
}) {
	t.Helper()
	if err := json.Unmarshal(vtRead(t, "../../conformance/vectors/eccr-draft/eccr-v1-draft-vector.json"), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVerifyCompactionCommand(t *testing.T) {
	dir := t.TempDir()
	v := draftECCR(t)
	eccr := writeFile(t, dir, "eccr.json", v.Envelope)
	if code, out, errOut := runVerifyCmd(t, "compaction", eccr, "--key", v.Pub); code != 0 {
		t.Fatalf("draft vector: exit %d\n%s\n%s", code, out, errOut)
	}

	s := gen.Deterministic(21)
	trust := writeFile(t, dir, "trust.json", receipts.MarshalTrust(s.Trust(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	items := gen.Items("cmd", 5)
	c, mf, err := s.Compaction("urn:c:cmd", items, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sp, _ := receipts.NewSourceProof(c, mf, 3)
	cf := writeFile(t, dir, "c.json", c.Canonical())
	mff := writeFile(t, dir, "m.json", mf.Canonical())
	spf := writeFile(t, dir, "sp.json", sp.Marshal())
	code, out, errOut := runVerifyCmd(t, "compaction", cf, "--trust", trust, "--manifest", mff, "--item", items[3].ItemDigest, "--source-proof", spf)
	if code != 0 || vtResult(t, out) != "VALID" {
		t.Fatalf("valid compaction: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, _ := runVerifyCmd(t, "compaction", cf, "--trust", trust, "--item", items[2].ItemDigest, "--source-proof", spf); code != 1 || vtResult(t, out) != "source_proof_invalid" {
		t.Errorf("proof of another item: exit %d\n%s", code, out)
	}
	if code, out, _ := runVerifyCmd(t, "compaction", eccr, "--trust", trust); code != 1 || vtResult(t, out) != "key_not_pinned" {
		t.Errorf("draft vector under another trust file: exit %d\n%s", code, out)
	}
	for name, args := range map[string][]string{
		"trust and key":      {"compaction", cf, "--trust", trust, "--key", v.Pub},
		"neither":            {"compaction", cf},
		"item without proof": {"compaction", cf, "--trust", trust, "--item", items[3].ItemDigest},
		"bad key":            {"compaction", cf, "--key", "00"},
		"bad item":           {"compaction", cf, "--trust", trust, "--item", "x", "--source-proof", spf},
	} {
		if code, _, _ := runVerifyCmd(t, args...); code != 2 {
			t.Errorf("%s: exit %d, want 2", name, code)
		}
	}
}

// vtLog is a memtrail log with its policy and trust files.
type vtLog struct {
	dir, policy, trust string
	skey               string
	l                  *mlog.Log
	s                  *gen.Signers
}

func newVTLog(t *testing.T) *vtLog {
	t.Helper()
	skey, _, err := mlog.GenerateLogKey("memtrail.test/verify")
	if err != nil {
		t.Fatal(err)
	}
	return newVTLogWithKey(t, skey)
}

// newVTLogWithKey opens a log signing with skey.
func newVTLogWithKey(t *testing.T, skey string) *vtLog {
	t.Helper()
	dir := t.TempDir()
	vkey, err := mlog.VerifierKey(skey)
	if err != nil {
		t.Fatal(err)
	}
	s := gen.Deterministic(23)
	tr := s.Trust(time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Second))
	l, err := mlog.Open(context.Background(), mlog.Config{Storage: openStorage(t, filepath.Join(dir, "data")), SigningKey: skey, Trust: tr,
		BatchMaxAge: 5 * time.Millisecond, CheckpointInterval: 100 * time.Millisecond, Logger: vtQuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	return &vtLog{dir: dir, l: l, s: s, skey: skey,
		policy: writeFile(t, dir, "log.policy", []byte("log "+vkey+"\nquorum none\n")),
		trust:  writeFile(t, dir, "trust.json", receipts.MarshalTrust(tr))}
}

func (tl *vtLog) add(t *testing.T, subs ...*receipts.Submission) uint64 {
	t.Helper()
	var last uint64
	for _, sub := range subs {
		acc, err := tl.l.Submit(context.Background(), sub)
		if err != nil {
			t.Fatal(err)
		}
		last = acc.Index
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := tl.l.WaitPublished(ctx, last); err != nil {
		t.Fatal(err)
	}
	return last
}

func (tl *vtLog) projection(t *testing.T, id string) *receipts.Submission {
	r, _, err := tl.s.Projection(id, time.Now().UTC(), 2, 40)
	if err != nil {
		t.Fatal(err)
	}
	return &receipts.Submission{Receipt: r}
}

func TestVerifyProofAndConsistencyCommands(t *testing.T) {
	tl := newVTLog(t)
	ctx := context.Background()
	p0 := tl.projection(t, "urn:p:0")
	tl.add(t, p0, tl.projection(t, "urn:p:1"))
	old, _, err := tl.l.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := tl.add(t, tl.projection(t, "urn:p:2"), tl.projection(t, "urn:p:3"), tl.projection(t, "urn:p:4"))
	newer, _, _ := tl.l.Checkpoint(ctx)
	proof, err := tl.l.LatestInclusionProof(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	pf := writeFile(t, tl.dir, "p0.tlog-proof", proof)
	rf := writeFile(t, tl.dir, "p0.json", p0.Receipt.Canonical())
	if code, out, errOut := runVerifyCmd(t, "proof", pf, "--receipt", rf, "--policy", tl.policy); code != 0 {
		t.Fatalf("proof: exit %d\n%s\n%s", code, out, errOut)
	}
	other := writeFile(t, tl.dir, "p1.json", tl.projection(t, "urn:p:x").Receipt.Canonical())
	if code, out, _ := runVerifyCmd(t, "proof", pf, "--receipt", other, "--policy", tl.policy); code != 1 || vtResult(t, out) != "inclusion_proof_invalid" {
		t.Errorf("proof of another receipt: exit %d\n%s", code, out)
	}
	if code, _, _ := runVerifyCmd(t, "proof", pf, "--policy", tl.policy); code != 2 {
		t.Errorf("no receipt: exit %d", code)
	}

	of := writeFile(t, tl.dir, "old.checkpoint", old)
	nf := writeFile(t, tl.dir, "new.checkpoint", newer)
	srv := httptest.NewServer(api.New(tl.l, api.Config{Logger: vtQuietLogger()}).Handler())
	defer srv.Close()
	if code, out, errOut := runVerifyCmd(t, "consistency", of, nf, "--policy", tl.policy, "--log", srv.URL); code != 0 {
		t.Fatalf("consistency from the log: exit %d\n%s\n%s", code, out, errOut)
	}
	path, _ := tl.l.ConsistencyProof(ctx, 2, last+1)
	answer, _ := json.Marshal(api.Consistency{From: 2, To: last + 1, Proof: vtB64s(path)})
	cf := writeFile(t, tl.dir, "c.json", answer)
	if code, out, _ := runVerifyCmd(t, "consistency", of, nf, "--policy", tl.policy, "--proof", cf); code != 0 {
		t.Fatalf("consistency from a file: exit %d\n%s", code, out)
	}
	code, out, errOut := runVerifyCmd(t, "consistency", nf, of, "--policy", tl.policy, "--proof", cf)
	if code != 1 || vtResult(t, out) != "log_rollback" || !strings.Contains(errOut, "memtrail.test/verify") {
		t.Errorf("reversed: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, _ := runVerifyCmd(t, "consistency", of, nf, "--policy", tl.policy); code != 2 {
		t.Errorf("no proof source: exit %d", code)
	}
}

func vtB64s(hashes [][]byte) []string {
	var out []string
	for _, h := range hashes {
		out = append(out, base64.StdEncoding.EncodeToString(h))
	}
	return out
}

func TestVerifyLogCommand(t *testing.T) {
	tl := newVTLog(t)
	items := gen.Items("log", 6)
	c, mf, _ := tl.s.Compaction("urn:c:0", items, "", nil, nil)
	ts, _ := tl.s.Tombstone("urn:t:0", items[2].ItemDigest, time.Now().Add(-48*time.Hour))
	var subs []*receipts.Submission
	for i := range 30 {
		subs = append(subs, tl.projection(t, fmt.Sprintf("urn:p:%d", i)))
	}
	subs = append(subs, &receipts.Submission{Receipt: c, Manifest: mf}, &receipts.Submission{Receipt: ts})
	tl.add(t, subs...)
	srv := httptest.NewServer(api.New(tl.l, api.Config{Logger: vtQuietLogger()}).Handler())
	defer srv.Close()

	state := filepath.Join(tl.dir, "audit.state")
	report := filepath.Join(tl.dir, "audit.json")
	// The tombstone is two days old and compaction 0 still includes its
	// item: overdue.
	code, out, errOut := runVerifyCmd(t, "log", "--log", srv.URL, "--policy", tl.policy, "--trust", tl.trust, "--state", state, "--json", report)
	if code != 1 || out != "" || !strings.Contains(errOut, "obligation_overdue") {
		t.Fatalf("audit: exit %d\n%s\n%s", code, out, errOut)
	}
	if vtResult(t, string(vtRead(t, report))) != "obligation_overdue" {
		t.Errorf("report file = %s", vtRead(t, report))
	}
	if _, err := verifier.ParseAuditState(vtRead(t, state)); err != nil {
		t.Fatalf("state file: %v", err)
	}
	// With a grace of three days it is only open; resumed, nothing new.
	code, out, errOut = runVerifyCmd(t, "log", "--log", srv.URL, "--policy", tl.policy, "--trust", tl.trust, "--state", state, "--grace", "72h")
	if code != 0 || !strings.Contains(out, `"resumed_from": 32`) || !strings.Contains(out, `"entries_audited": 0`) {
		t.Fatalf("resumed audit: exit %d\n%s\n%s", code, out, errOut)
	}
	// The data directory, once the log is closed, and altered.
	tl.add(t, tl.projection(t, "urn:p:more"))
	tl.l.Close(context.Background())
	data := filepath.Join(tl.dir, "data")
	code, out, _ = runVerifyCmd(t, "log", "--data", data, "--policy", tl.policy, "--trust", tl.trust, "--state", state, "--grace", "72h")
	if code != 0 || !strings.Contains(out, `"entries_audited": 1`) {
		t.Fatalf("directory audit: exit %d\n%s", code, out)
	}
	os.RemoveAll(filepath.Join(data, "manifests"))
	code, out, _ = runVerifyCmd(t, "log", "--data", data, "--policy", tl.policy, "--trust", tl.trust, "--grace", "72h")
	if code != 1 || vtResult(t, out) != "manifest_missing" {
		t.Errorf("manifests removed: exit %d\n%s", code, out)
	}
	for name, args := range map[string][]string{
		"both sources":   {"log", "--log", srv.URL, "--data", data, "--policy", tl.policy, "--trust", tl.trust},
		"no policy":      {"log", "--data", data, "--trust", tl.trust},
		"not a data dir": {"log", "--data", tl.dir, "--policy", tl.policy, "--trust", tl.trust},
		"bad state":      {"log", "--data", data, "--policy", tl.policy, "--trust", tl.trust, "--state", tl.trust},
		"negative grace": {"log", "--data", data, "--policy", tl.policy, "--trust", tl.trust, "--grace", "-1h"},
	} {
		if code, _, _ := runVerifyCmd(t, args...); code != 2 {
			t.Errorf("%s: exit %d, want 2", name, code)
		}
	}
}

func vtQuietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestVerifyReceiptCommand(t *testing.T) {
	dir, record, pins, _, _ := vtInteropFiles(t)
	at := "2026-07-29T17:01:00Z"
	var rep struct {
		Result, Kind, ID, Member, Detail string
	}
	parse := func(out string) {
		t.Helper()
		rep = struct{ Result, Kind, ID, Member, Detail string }{}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("report: %v\n%s", err, out)
		}
	}
	code, out, errOut := runVerifyCmd(t, "receipt", record, "--adapters", pins, "--at", at)
	parse(out)
	if code != 0 || rep.Result != "VALID" || rep.Kind != "projection" || !strings.Contains(errOut, "VALID") {
		t.Fatalf("interop record: exit %d\n%s\n%s", code, out, errOut)
	}
	// A receipt-level refusal names the code and the member.
	edit := func(path, name string, f func(map[string]any)) string {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal(vtRead(t, path), &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return writeFile(t, dir, name, b)
	}
	swapped := edit(record, "unknown.json", func(m map[string]any) { m["extension"] = "x" })
	code, out, errOut = runVerifyCmd(t, "receipt", swapped, "--adapters", pins, "--at", at)
	parse(out)
	if code != 1 || rep.Result != "record_invalid" || !strings.Contains(errOut, "record_invalid") {
		t.Errorf("unknown member: exit %d\n%s\n%s", code, out, errOut)
	}
	revoked := edit(pins, "revoked.json", func(m map[string]any) {
		m["status"], m["revoked_at"] = "revoked", "2026-07-29T12:00:00.000Z"
	})
	code, out, _ = runVerifyCmd(t, "receipt", record, "--adapters", revoked, "--at", at)
	parse(out)
	if code != 1 || rep.Result != "adapter_key_revoked" {
		t.Errorf("revoked pin: exit %d\n%s", code, out)
	}

	// An ECCR under a raw key, and a tombstone under a trust file.
	v := draftECCR(t)
	eccr := writeFile(t, dir, "eccr.json", v.Envelope)
	code, out, errOut = runVerifyCmd(t, "receipt", eccr, "--key", v.Pub)
	parse(out)
	if code != 0 || rep.Result != "VALID" || rep.Kind != "compaction" {
		t.Errorf("ECCR draft vector: exit %d\n%s\n%s", code, out, errOut)
	}
	other, _, _ := receipts.GenerateKey()
	code, out, _ = runVerifyCmd(t, "receipt", eccr, "--key", receipts.PublicKeyHex(other))
	parse(out)
	if code != 1 || rep.Result != "key_not_pinned" {
		t.Errorf("ECCR under another key: exit %d\n%s", code, out)
	}
	s := gen.Deterministic(22)
	trust := writeFile(t, dir, "trust.json", receipts.MarshalTrust(s.Trust(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	ts, err := s.Tombstone("urn:t:cmd", gen.Items("cmd", 1)[0].ItemDigest, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tf := writeFile(t, dir, "ts.json", ts.Canonical())
	code, out, _ = runVerifyCmd(t, "receipt", tf, "--trust", trust)
	parse(out)
	if code != 0 || rep.Result != "VALID" || rep.Kind != "tombstone" || rep.ID != "urn:t:cmd" {
		t.Errorf("tombstone: exit %d\n%s", code, out)
	}
	tampered := writeFile(t, dir, "ts2.json", bytes.Replace(ts.Canonical(), []byte("urn:t:cmd"), []byte("urn:t:cmx"), 1))
	code, out, _ = runVerifyCmd(t, "receipt", tampered, "--trust", trust)
	parse(out)
	if code != 1 || rep.Result != "signature_invalid" {
		t.Errorf("tampered tombstone: exit %d\n%s", code, out)
	}
	notJSON := writeFile(t, dir, "x.json", []byte("{\"a\":1,\"a\":2}"))
	code, out, _ = runVerifyCmd(t, "receipt", notJSON, "--trust", trust)
	parse(out)
	if code != 1 || rep.Result != "record_invalid" {
		t.Errorf("duplicate keys: exit %d\n%s", code, out)
	}
	for name, args := range map[string][]string{
		"no file":                {"receipt"},
		"projection, no pins":    {"receipt", record},
		"compaction, no keys":    {"receipt", eccr},
		"bad key":                {"receipt", eccr, "--key", "zz"},
		"missing file":           {"receipt", filepath.Join(dir, "none.json"), "--trust", trust},
		"pins that are not pins": {"receipt", record, "--adapters", trust},
	} {
		if code, out, errOut := runVerifyCmd(t, args...); code != 2 {
			t.Errorf("%s: exit %d, want 2\n%s\n%s", name, code, out, errOut)
		}
	}
}

// vtPins writes the adapters of the log's trust file as an --adapters file.
func (tl *vtLog) pins(t *testing.T) string {
	t.Helper()
	var tr struct {
		Adapters json.RawMessage `json:"adapters"`
	}
	if err := json.Unmarshal(vtRead(t, tl.trust), &tr); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, tl.dir, "pins.json", tr.Adapters)
}

// TestVerifyProjectionLogProof: single use against a log is accepted only
// with an inclusion proof under the log's tlog-policy; a log that merely
// says so registers nothing.
func TestVerifyProjectionLogProof(t *testing.T) {
	tl := newVTLog(t)
	pins := tl.pins(t)
	sub := tl.projection(t, "urn:p:once")
	record := writeFile(t, tl.dir, "once.json", sub.Receipt.Canonical())

	// A fake log that answers the lookup with this record's leaf hash.
	leaf := base64.StdEncoding.EncodeToString(verifier.LeafHash(sub.Receipt.Canonical()))
	liar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/projections" {
			fmt.Fprintf(w, `{"index":0,"leaf_hash":%q}`, leaf)
			return
		}
		http.NotFound(w, r)
	}))
	defer liar.Close()
	code, out, errOut := runVerifyCmd(t, "projection", record, "--adapters", pins, "--log", liar.URL, "--log-policy", tl.policy)
	if code != 1 || vtResult(t, out) != "single_use_unproven" || strings.Contains(out, `"existing"`) {
		t.Fatalf("lying log: exit %d\n%s\n%s", code, out, errOut)
	}
	// --log without its tlog-policy is a usage error that says why.
	code, _, errOut = runVerifyCmd(t, "projection", record, "--adapters", pins, "--log", liar.URL)
	if code != 2 || !strings.Contains(errOut, "--log-policy") || !strings.Contains(errOut, "inclusion proof") {
		t.Fatalf("no --log-policy: exit %d\n%s", code, errOut)
	}

	// The real log: submitted and proven, then found and proven.
	srv := httptest.NewServer(api.New(tl.l, api.Config{Logger: vtQuietLogger()}).Handler())
	defer srv.Close()
	code, out, errOut = runVerifyCmd(t, "projection", record, "--adapters", pins, "--log", srv.URL, "--log-policy", tl.policy)
	if code != 0 || vtResult(t, out) != "VALID" || !strings.Contains(out, `"proof": "c2sp.org/tlog-proof@v1`) {
		t.Fatalf("real log: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runVerifyCmd(t, "projection", record, "--adapters", pins, "--log", srv.URL, "--log-policy", tl.policy)
	if code != 0 || !strings.Contains(out, `"existing": true`) {
		t.Fatalf("real log, again: exit %d\n%s\n%s", code, out, errOut)
	}
	// Another record with the id: a replay, proven.
	other := tl.projection(t, "urn:p:once")
	of := writeFile(t, tl.dir, "other.json", other.Receipt.Canonical())
	code, out, errOut = runVerifyCmd(t, "projection", of, "--adapters", pins, "--log", srv.URL, "--log-policy", tl.policy)
	if code != 1 || vtResult(t, out) != "projection_replay" {
		t.Fatalf("other record: exit %d\n%s\n%s", code, out, errOut)
	}
	// The real log under another log's policy proves nothing.
	_, vkey, _ := mlog.GenerateLogKey("memtrail.test/verify")
	foreign := writeFile(t, tl.dir, "foreign.policy", []byte("log "+vkey+"\nquorum none\n"))
	code, out, errOut = runVerifyCmd(t, "projection", record, "--adapters", pins, "--log", srv.URL, "--log-policy", foreign)
	if code != 1 || vtResult(t, out) != "checkpoint_invalid" {
		t.Fatalf("another log's policy: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestVerifyOutputPathsCheckedFirst: an output file that cannot be
// written is an error before any work, not after it.
func TestVerifyOutputPathsCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	var requests int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer srv.Close()
	_, vkey, _ := mlog.GenerateLogKey("memtrail.test/verify")
	policy := writeFile(t, dir, "log.policy", []byte("log "+vkey+"\nquorum none\n"))
	s := gen.Deterministic(24)
	trust := writeFile(t, dir, "trust.json", receipts.MarshalTrust(s.Trust(time.Now().Add(-time.Hour))))
	missing := filepath.Join(dir, "nonexistent", "a.state")
	for name, args := range map[string][]string{
		"state in a missing directory": {"log", "--log", srv.URL, "--policy", policy, "--trust", trust, "--state", missing},
		"json in a missing directory":  {"log", "--log", srv.URL, "--policy", policy, "--trust", trust, "--json", missing},
		"json is a directory":          {"log", "--log", srv.URL, "--policy", policy, "--trust", trust, "--json", dir},
	} {
		code, out, errOut := runVerifyCmd(t, args...)
		if code != 2 || out != "" || !strings.Contains(errOut, "cannot be written") && !strings.Contains(errOut, "is a directory") {
			t.Errorf("%s: exit %d\n%s\n%s", name, code, out, errOut)
		}
	}
	if requests != 0 {
		t.Errorf("the log was read %d times before the output paths were checked", requests)
	}
	_, record, pins, _, _ := vtInteropFiles(t)
	code, out, errOut := runVerifyCmd(t, "projection", record, "--adapters", pins, "--at", "2026-07-29T17:01:00Z", "--registry", missing)
	if code != 2 || out != "" || !strings.Contains(errOut, "--registry") || !strings.Contains(errOut, "directory that exists") {
		t.Errorf("registry in a missing directory: exit %d\n%s\n%s", code, out, errOut)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the checks left files behind: %v", entries)
	}
}

// TestVerifyCompactionSubmission: the file "memtrail sign compaction"
// writes, {"eccr": …, "manifest": …}, is accepted by verify compaction
// (with its manifest) and verify receipt.
func TestVerifyCompactionSubmission(t *testing.T) {
	dir := t.TempDir()
	s := gen.Deterministic(25)
	trust := writeFile(t, dir, "trust.json", receipts.MarshalTrust(s.Trust(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	items := gen.Items("sub", 4)
	c, mf, err := s.Compaction("urn:c:sub", items, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sub := writeFile(t, dir, "sub.json", gen.CompactionSubmission(c, mf))
	code, out, errOut := runVerifyCmd(t, "compaction", sub, "--trust", trust)
	if code != 0 || vtResult(t, out) != "VALID" || !strings.Contains(errOut, "ok   source_merkle_root") {
		t.Fatalf("submission: exit %d\n%s\n%s", code, out, errOut)
	}
	mff := writeFile(t, dir, "m.json", mf.Canonical())
	if code, out, errOut := runVerifyCmd(t, "compaction", sub, "--trust", trust, "--manifest", mff); code != 0 {
		t.Fatalf("submission and its manifest: exit %d\n%s\n%s", code, out, errOut)
	}
	_, other, _ := s.Compaction("urn:c:other", gen.Items("other", 2), "", nil, nil)
	of := writeFile(t, dir, "other.json", other.Canonical())
	code, out, errOut = runVerifyCmd(t, "compaction", sub, "--trust", trust, "--manifest", of)
	if code != 2 || !strings.Contains(errOut, "is not the manifest in") {
		t.Errorf("submission and another manifest: exit %d\n%s\n%s", code, out, errOut)
	}
	// The lines "sign compaction --manifest" reads are not a manifest.
	lines := writeFile(t, dir, "m.txt", []byte(items[0].ItemDigest+" "+items[0].Sensitivity+"\n"))
	code, out, errOut = runVerifyCmd(t, "compaction", writeFile(t, dir, "c.json", c.Canonical()), "--trust", trust, "--manifest", lines)
	if code != 2 || !strings.Contains(errOut, "--manifest takes the manifest as JSON") || !strings.Contains(errOut, "DIGEST LABEL") {
		t.Errorf("a line manifest: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runVerifyCmd(t, "receipt", sub, "--trust", trust)
	if code != 0 || vtResult(t, out) != "VALID" || !strings.Contains(out, `"kind": "compaction"`) {
		t.Errorf("verify receipt of the submission: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestVerifyBadFlagValues: a bad flag value prints the error and a hint
// for the format, not the whole usage text.
func TestVerifyBadFlagValues(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"log", "--at", "2026-12-01"}, []string{`invalid value "2026-12-01" for --at`, "RFC 3339 time such as 2026-12-01T00:00:00Z"}},
		{[]string{"log", "--grace", "2d"}, []string{`invalid value "2d" for --grace`, "Go durations such as 48h or 90m"}},
		{[]string{"projection", "r.json", "--at", "yesterday"}, []string{"for --at", "RFC 3339"}},
		{[]string{"receipt", "--at", "x", "r.json"}, []string{"for --at", "RFC 3339"}},
		{[]string{"log", "--workers", "many"}, []string{"for --workers", "whole number"}},
		{[]string{"compaction", "--bogus"}, []string{"not defined: -bogus"}},
	} {
		code, out, errOut := runVerifyCmd(t, c.args...)
		if code != 2 || out != "" || strings.Contains(errOut, "Usage:") || strings.Count(errOut, "\n") > 4 ||
			!strings.Contains(errOut, `-h" for its flags`) {
			t.Errorf("%v: exit %d\n%s", c.args, code, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: %q missing from\n%s", c.args, w, errOut)
			}
		}
	}
	// -h still prints the usage, and succeeds.
	if code, _, errOut := runVerifyCmd(t, "log", "-h"); code != 0 || !strings.Contains(errOut, "Usage:") {
		t.Errorf("-h: exit %d\n%s", code, errOut)
	}
}

// TestVerifyPolicyHints: a tlog-policy that does not parse gets the
// minimal policy as an example, and a bare vkey is named as one.
func TestVerifyPolicyHints(t *testing.T) {
	dir := t.TempDir()
	_, vkey, _ := mlog.GenerateLogKey("memtrail.test/verify")
	x := writeFile(t, dir, "x", []byte("x"))
	for name, c := range map[string]struct {
		policy string
		want   []string
	}{
		"bare vkey":     {vkey + "\n", []string{"bare verifier key (vkey), not a tlog-policy", "hint:     log " + vkey + "\n", "hint:     quorum none\n"}},
		"no quorum":     {"log " + vkey + "\n", []string{"no quorum line", "hint:     log " + vkey + "\n", "hint:     quorum none\n"}},
		"unknown words": {"frobnicate\n", []string{"one quorum line", "hint:     quorum none\n"}},
	} {
		p := writeFile(t, dir, strings.ReplaceAll(name, " ", "_"), []byte(c.policy))
		for _, args := range [][]string{
			{"proof", x, "--receipt", x, "--policy", p},
			{"consistency", x, x, "--policy", p, "--proof", x},
			{"log", "--data", dir, "--policy", p, "--trust", x},
		} {
			code, _, errOut := runVerifyCmd(t, args...)
			if code != 2 {
				t.Errorf("%s, %s: exit %d\n%s", name, args[0], code, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("%s, %s: %q missing from\n%s", name, args[0], w, errOut)
				}
			}
		}
	}
}

// TestVerifyConsistencyInputs: a tlog-proof given as a checkpoint is named
// as such, swapped arguments get a hint, and equal sizes need no proof.
func TestVerifyConsistencyInputs(t *testing.T) {
	tl := newVTLog(t)
	ctx := context.Background()
	tl.add(t, tl.projection(t, "urn:p:a"), tl.projection(t, "urn:p:b"))
	old, _, _ := tl.l.Checkpoint(ctx)
	tl.add(t, tl.projection(t, "urn:p:c"))
	newer, _, _ := tl.l.Checkpoint(ctx)
	proof, err := tl.l.LatestInclusionProof(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	of := writeFile(t, tl.dir, "old.checkpoint", old)
	nf := writeFile(t, tl.dir, "new.checkpoint", newer)
	pf := writeFile(t, tl.dir, "p.tlog-proof", proof)
	srv := httptest.NewServer(api.New(tl.l, api.Config{Logger: vtQuietLogger()}).Handler())
	defer srv.Close()

	code, out, errOut := runVerifyCmd(t, "consistency", of, pf, "--policy", tl.policy, "--log", srv.URL)
	if code != 2 || !strings.Contains(errOut, "is a tlog-proof, not a checkpoint") || strings.Contains(out, "checkpoint_invalid") {
		t.Errorf("tlog-proof as NEW_CHECKPOINT: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runVerifyCmd(t, "consistency", nf, of, "--policy", tl.policy, "--log", srv.URL)
	if code != 1 || vtResult(t, out) != "log_rollback" || !strings.Contains(errOut, "arguments are swapped") {
		t.Errorf("swapped: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := runVerifyCmd(t, "consistency", of, nf, "--policy", tl.policy, "--log", srv.URL); code != 0 || strings.Contains(errOut, "swapped") {
		t.Errorf("in order: exit %d\n%s", code, errOut)
	}
	// Equal sizes: no proof needed; the same root is consistent.
	code, out, errOut = runVerifyCmd(t, "consistency", nf, nf, "--policy", tl.policy)
	if code != 0 || vtResult(t, out) != "VALID" {
		t.Errorf("equal checkpoints: exit %d\n%s\n%s", code, out, errOut)
	}
	// A proof is still needed when the old tree is smaller.
	if code, _, errOut := runVerifyCmd(t, "consistency", of, nf, "--policy", tl.policy); code != 2 || !strings.Contains(errOut, "consistency proof is needed") {
		t.Errorf("no proof source: exit %d\n%s", code, errOut)
	}
	// Equal sizes, different roots: a fork, with both checkpoints. The
	// log's key signs a checkpoint of another tree of the same size.
	skey := tl.skey
	fork := newVTLogWithKey(t, skey)
	fork.add(t, fork.projection(t, "urn:p:x"), fork.projection(t, "urn:p:y"), fork.projection(t, "urn:p:z"))
	forked, _, _ := fork.l.Checkpoint(ctx)
	ff := writeFile(t, tl.dir, "fork.checkpoint", forked)
	code, out, errOut = runVerifyCmd(t, "consistency", nf, ff, "--policy", tl.policy)
	if code != 1 || vtResult(t, out) != "log_fork" || !strings.Contains(out, `"same_size_different_root"`) {
		t.Errorf("same size, other root: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestVerifyRegistryFileErrors: a registry that does not parse, even an
// empty one, is an error with a hint that fits, and is left as it was.
func TestVerifyRegistryFileErrors(t *testing.T) {
	dir, record, pins, _, _ := vtInteropFiles(t)
	at := "2026-07-29T17:01:00Z"
	for name, c := range map[string]struct {
		content string
		want    []string
	}{
		"malformed": {"not a registry\n", []string{"is not a projection registry", "never reset", "path that does not exist yet"}},
		"empty":     {"", []string{"is empty", "path that does not exist yet"}},
	} {
		reg := writeFile(t, dir, name+".reg", []byte(c.content))
		code, out, errOut := runVerifyCmd(t, "projection", record, "--adapters", pins, "--at", at, "--registry", reg)
		if code != 2 || out != "" || strings.Contains(errOut, "once the registry answers") {
			t.Errorf("%s: exit %d\n%s\n%s", name, code, out, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%s: %q missing from\n%s", name, w, errOut)
			}
		}
		if string(vtRead(t, reg)) != c.content {
			t.Errorf("%s: the registry was rewritten: %q", name, vtRead(t, reg))
		}
	}
	// A path that does not exist yet starts a new registry.
	reg := filepath.Join(dir, "new.reg")
	if code, out, errOut := runVerifyCmd(t, "projection", record, "--adapters", pins, "--at", at, "--registry", reg); code != 0 {
		t.Errorf("new registry: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestVerifyReceiptReportShape: verify receipt's report has checks, as
// every report does, and keeps its result, kind and id.
func TestVerifyReceiptReportShape(t *testing.T) {
	_, record, pins, _, _ := vtInteropFiles(t)
	type check struct{ Check, Outcome, Code string }
	var rep struct {
		Result, Kind, ID string
		Checks           []check
	}
	code, out, _ := runVerifyCmd(t, "receipt", record, "--adapters", pins, "--at", "2026-07-29T17:01:00Z")
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("exit %d, %v\n%s", code, err, out)
	}
	if rep.Result != "VALID" || rep.Kind != "projection" || rep.ID == "" || len(rep.Checks) != 2 ||
		rep.Checks[0] != (check{"structure", "passed", ""}) || rep.Checks[1] != (check{"signature", "passed", ""}) {
		t.Errorf("valid record: %+v", rep)
	}
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.json", []byte(`{"a":1}`))
	code, out, _ = runVerifyCmd(t, "receipt", bad, "--adapters", pins)
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 {
		t.Fatalf("exit %d, %v\n%s", code, err, out)
	}
	if len(rep.Checks) != 2 || rep.Checks[0].Outcome != "failed" || rep.Checks[0].Code != rep.Result || rep.Checks[1].Outcome != "not_run" {
		t.Errorf("unparsable receipt: %+v", rep)
	}
	revoked := writeFile(t, dir, "revoked.json", bytes.Replace(vtRead(t, pins), []byte(`"status": "active"`), []byte(`"status": "revoked"`), 1))
	code, out, _ = runVerifyCmd(t, "receipt", record, "--adapters", revoked, "--at", "2026-07-29T17:01:00Z")
	rep.Checks = nil
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 {
		t.Fatalf("exit %d, %v\n%s", code, err, out)
	}
	if len(rep.Checks) != 2 || rep.Checks[0].Outcome != "passed" || rep.Checks[1] != (check{"signature", "failed", rep.Result}) {
		t.Errorf("revoked key: %+v", rep)
	}
}

// TestVerifyHelpSynopses: each synopsis in "memtrail verify -h" and in a
// subcommand's usage error names every flag the subcommand defines.
func TestVerifyHelpSynopses(t *testing.T) {
	code, out, _ := runVerifyCmd(t, "-h")
	if code != 0 {
		t.Fatalf("verify -h: exit %d", code)
	}
	for _, c := range []struct {
		name     string
		synopsis string
		flags    []string
	}{
		{"log", logSynopsis, []string{"--log", "--data", "--policy", "--trust", "--at", "--grace", "--state", "--json", "--workers N"}},
		{"consistency", consistencySynopsis, []string{"--policy", "--proof", "--log"}},
		{"compaction", compactionSynopsis, []string{"--trust", "--key", "--manifest", "--at", "--item", "--source-proof"}},
		{"proof", proofSynopsis, []string{"--receipt", "--policy"}},
		{"projection", projectionSynopsis, []string{"--adapters", "--trust", "--material", "--policy", "--at", "--registry", "--log", "--log-policy"}},
		{"receipt", receiptSynopsis, []string{"--adapters", "--trust", "--key", "--at"}},
	} {
		var usage string
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "memtrail verify "+c.name+" ") {
				usage = line
			} else if usage != "" && strings.HasPrefix(line, "\t        ") {
				usage += line
			} else if usage != "" {
				break
			}
		}
		for _, f := range c.flags {
			if !strings.Contains(usage, f) {
				t.Errorf("verify -h, %s: %q missing from %q", c.name, f, usage)
			}
			if !strings.Contains(c.synopsis, f) {
				t.Errorf("%s synopsis: %q missing from %q", c.name, f, c.synopsis)
			}
		}
	}
}

// TestVerifyProjectionTrust: verify projection takes the log's trust file
// for its adapter pins, as verify receipt does.
func TestVerifyProjectionTrust(t *testing.T) {
	tl := newVTLog(t)
	record := writeFile(t, tl.dir, "p.json", tl.projection(t, "urn:p:trust").Receipt.Canonical())
	code, out, errOut := runVerifyCmd(t, "projection", record, "--trust", tl.trust)
	if code != 0 || vtResult(t, out) != "VALID" {
		t.Fatalf("--trust: exit %d\n%s\n%s", code, out, errOut)
	}
	// Another trust file pins another key under the same adapter and kid.
	other := writeFile(t, tl.dir, "other.json", receipts.MarshalTrust(gen.Deterministic(40).Trust(time.Now().Add(-time.Hour))))
	code, out, _ = runVerifyCmd(t, "projection", record, "--trust", other)
	if code != 1 || vtResult(t, out) != "signature_invalid" {
		t.Errorf("another trust file: exit %d\n%s", code, out)
	}
	// With --adapters as well, both sets of pins count.
	_, _, pins, _, _ := vtInteropFiles(t)
	if code, out, errOut := runVerifyCmd(t, "projection", record, "--trust", tl.trust, "--adapters", pins); code != 0 {
		t.Errorf("--trust and --adapters: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := runVerifyCmd(t, "projection", record); code != 2 || !strings.Contains(errOut, "--trust") {
		t.Errorf("no pins: exit %d\n%s", code, errOut)
	}
	if code, _, _ := runVerifyCmd(t, "projection", record, "--trust", pins); code != 2 {
		t.Errorf("pins given as a trust file: exit %d", code)
	}
}

// TestVerifyDuplicatePins: a key pinned twice, in the --trust file and in
// --adapters or twice in one --adapters file, is judged under the most
// restrictive pin, whatever the order; two public keys under one adapter
// id and key id are refused as ambiguous.
func TestVerifyDuplicatePins(t *testing.T) {
	dir, record, pins, _, _ := vtInteropFiles(t)
	at := "2026-07-29T17:01:00Z"
	pin := vtRead(t, pins)
	var m map[string]any
	if err := json.Unmarshal(pin, &m); err != nil {
		t.Fatal(err)
	}
	m["status"], m["revoked_at"] = "revoked", "2026-07-29T12:00:00.000Z"
	revokedPin, _ := json.Marshal(m)
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	m["status"], m["revoked_at"], m["public_key_spki_b64u"] = "active", nil, receipts.PublicKeySPKI(pub)
	otherKeyPin, _ := json.Marshal(m)
	trustWith := func(name string, pins ...[]byte) string {
		return writeFile(t, dir, name, []byte(`{"adapters": [`+string(bytes.Join(pins, []byte(",")))+`], "compactors": [], "issuers": []}`))
	}
	activeTrust := trustWith("active-trust.json", pin)
	revoked := writeFile(t, dir, "revoked.json", revokedPin)
	bothInOne := writeFile(t, dir, "both.json", []byte("["+string(pin)+","+string(revokedPin)+"]"))
	otherKey := writeFile(t, dir, "other-key.json", otherKeyPin)

	for _, cmd := range []string{"projection", "receipt"} {
		if code, out, errOut := runVerifyCmd(t, cmd, record, "--trust", activeTrust, "--at", at); code != 0 || vtResult(t, out) != "VALID" {
			t.Fatalf("%s: the active pin alone: exit %d\n%s\n%s", cmd, code, out, errOut)
		}
		for name, args := range map[string][]string{
			"--trust active, --adapters revoked": {"--trust", activeTrust, "--adapters", revoked},
			"--adapters [active, revoked]":       {"--adapters", bothInOne},
			"--trust revoked, --adapters active": {"--trust", trustWith("revoked-trust.json", revokedPin), "--adapters", pins},
		} {
			code, out, errOut := runVerifyCmd(t, append([]string{cmd, record, "--at", at}, args...)...)
			if code != 1 || vtResult(t, out) != "adapter_key_revoked" {
				t.Errorf("%s, %s: exit %d\n%s\n%s", cmd, name, code, out, errOut)
			}
		}
		code, out, errOut := runVerifyCmd(t, cmd, record, "--at", at, "--trust", activeTrust, "--adapters", otherKey)
		if code != 2 || !strings.Contains(errOut, "public key") {
			t.Errorf("%s, another key under the same adapter and key id: exit %d\n%s\n%s", cmd, code, out, errOut)
		}
	}
}
