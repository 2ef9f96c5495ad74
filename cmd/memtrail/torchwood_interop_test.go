package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/memtrail/memtrail/api"
	"github.com/memtrail/memtrail/witness"
)

// TestTorchwoodInterop checks what a running memtrail log and witness emit
// with filippo.io/torchwood v0.6.1, an implementation of the C2SP tlog specs
// independent of memtrail and of Tessera. Nothing of memtrail's own parsing or
// verification is used on the reading side.
//
// A log witnessed by "memtrail witness serve" (1-of-1 policy) is filled with
// 300 projection records (a full tile and a partial one), then with 250 more
// (two full tiles and a partial one); at each size:
//
//   - checkpoint: /checkpoint, read with torchwood's TileFetcher, opens with
//     the log's key from GET /v1/log and with torchwood's Ed25519 verifier,
//     and with torchwood's cosignature/v1 verifier for the witness, and
//     parses with torchwood.ParseCheckpoint;
//   - entries: torchwood's Client reads every entry through the tlog-tiles
//     API, authenticating each against the checkpoint's root, and each equals
//     what the log acknowledged at that index; Client.Entry's inclusion
//     proofs equal the ones the log serves;
//   - tlog-proof: /v1/proof/{index} proofs, whose checkpoint and path are
//     checked with torchwood (v0.6.1 has no tlog-proof parser: the test
//     splits the text), and /v1/consistency, checked against a proof built
//     from torchwood's tile hash reader;
//   - witness: a second memtrail witness, driven with add-checkpoint
//     requests whose consistency proofs come from torchwood's tile hash
//     reader (v0.6.1 has no witness client), answers with cosignatures that
//     torchwood's cosignature/v1 verifier accepts, and refuses a bad proof.
func TestTorchwoodInterop(t *testing.T) {
	f := newFaultLog(t)
	const origin = "memtrail.test/torchwood"
	const wName = "witness.test/torchwood-w1"
	logVKey := keygenInto(t, f.bin, "log", origin, f.data, logKeyFile)
	wdata := filepath.Join(f.dir, "witness")
	wVKey := keygenInto(t, f.bin, "witness", wName, wdata, witnessKeyFile)
	logsFile := writeFile(t, f.dir, "witness-logs", witness.FormatLogs([]witness.Log{{Origin: origin, VKey: logVKey}}))
	wAddr := "127.0.0.1:" + freePort(t)
	w := startTestProc(t, "memtrail witness", f.bin, "http://"+wAddr+"/metrics",
		"witness", "serve", "--data", wdata, "--logs", logsFile, "--listen", wAddr)
	if got := w.firstLine(t); got != wVKey {
		t.Fatalf("memtrail witness serve printed %q, want its key %q", got, wVKey)
	}
	// The key was made with keygen; serve still keeps witness.vkey.
	if b, err := os.ReadFile(filepath.Join(wdata, "witness.vkey")); err != nil || string(b) != wVKey+"\n" {
		t.Errorf("witness.vkey beside a keygen key = %q, %v; want %q", b, err, wVKey)
	}
	policy := writeFile(t, f.dir, "log.policy", []byte(fmt.Sprintf("log %s\nwitness w1 %s http://%s\nquorum w1\n", logVKey, wVKey, wAddr)))
	port := freePort(t)
	l := startTestProc(t, "memtrail serve", f.bin, "http://127.0.0.1:"+port+"/healthz",
		"serve", "--data", f.data, "--trust", f.trust, "--witness-policy", policy, "--listen", "127.0.0.1:"+port,
		"--batch-age", "10ms", "--checkpoint-interval", "200ms")
	if got := l.firstLine(t); got != logVKey {
		t.Fatalf("memtrail serve printed %q, want its key %q", got, logVKey)
	}
	// The key was made with keygen; serve still keeps log.vkey.
	if b, err := os.ReadFile(filepath.Join(f.data, "log.vkey")); err != nil || string(b) != logVKey+"\n" {
		t.Errorf("log.vkey beside a keygen key = %q, %v; want %q", b, err, logVKey)
	}

	// The verifiers. torchwood v0.6.1 has no parser for verifier keys: it
	// makes its Ed25519 verifier from the signing key
	// (NewVerifierFromSigner) and its cosignature/v1 verifier from a signer
	// (NewCosignatureSigner(...).Verifier()). Each must be the very key the
	// log and the witness publish.
	var info api.LogInfo
	if err := json.Unmarshal([]byte(httpGet(t, l.url+"/v1/log")), &info); err != nil {
		t.Fatal(err)
	}
	if info.Origin != origin || info.VerifierKey != logVKey {
		t.Fatalf("GET /v1/log: origin %q, key %q; want %q, %q", info.Origin, info.VerifierKey, origin, logVKey)
	}
	vkeyV, err := note.NewVerifier(info.VerifierKey)
	if err != nil {
		t.Fatalf("the verifier key of GET /v1/log: %v", err)
	}
	logSKey, err := os.ReadFile(filepath.Join(f.data, logKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	logV, err := torchwood.NewVerifierFromSigner(strings.TrimSpace(string(logSKey)))
	if err != nil {
		t.Fatalf("torchwood.NewVerifierFromSigner of the log key: %v", err)
	}
	if logV.Name() != vkeyV.Name() || logV.KeyHash() != vkeyV.KeyHash() {
		t.Fatalf("torchwood's verifier %s+%08x is not the key of GET /v1/log %s", logV.Name(), logV.KeyHash(), info.VerifierKey)
	}
	wV := cosignatureVerifier(t, wName, filepath.Join(wdata, witnessKeyFile))
	if wV.String() != wVKey {
		t.Fatalf("torchwood encodes the witness key as %s, memtrail as %s", wV.String(), wVKey)
	}
	cv := &cpVerifier{vkey: vkeyV, log: logV, witness: wV}

	tr := &tileRecorder{}
	fetcher, err := torchwood.NewTileFetcher(l.url, torchwood.WithUserAgent("memtrail-torchwood-interop"))
	if err != nil {
		t.Fatal(err)
	}
	tr.TileReader = fetcher
	client, err := torchwood.NewClient(tr, torchwood.WithTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	acked := make(map[int64]api.Accepted)
	fill := func(n int) torchwood.Checkpoint {
		t.Helper()
		f.batch(l.url, n)
		f.mu.Lock()
		for _, a := range f.acked {
			acked[int64(a.Index)] = a
		}
		f.mu.Unlock()
		waitFor(t, 15*time.Second, fmt.Sprintf("a published checkpoint of size %d", len(acked)), func() bool {
			var i api.LogInfo
			return json.Unmarshal([]byte(httpGet(t, l.url+"/v1/log")), &i) == nil && i.TreeSize >= uint64(len(acked))
		})
		raw, err := fetcher.ReadEndpoint(ctx, "checkpoint")
		if err != nil {
			t.Fatalf("torchwood TileFetcher.ReadEndpoint(checkpoint): %v", err)
		}
		cp := cv.open(t, raw)
		if cp.N != int64(len(acked)) {
			t.Fatalf("checkpoint of size %d, want %d (every acknowledged entry, nothing else)", cp.N, len(acked))
		}
		return cp
	}

	cp1 := fill(300)
	cp1Raw := []byte(httpGet(t, l.url+"/v1/checkpoints/"+strconv.FormatInt(cp1.N, 10)))
	if got := cv.open(t, cp1Raw); got != cp1 {
		t.Fatalf("GET /v1/checkpoints/%d is %+v, not the checkpoint /checkpoint served (%+v)", cp1.N, got, cp1)
	}
	if !t.Run("checkpoint", func(t *testing.T) {
		cv.checkRefusals(t, cp1Raw)
		t.Logf("the checkpoint opens with the key of GET /v1/log, torchwood's Ed25519 and cosignature/v1 verifiers, and parses with torchwood; torchwood refuses it altered:\n%s", cp1Raw)
	}) {
		return
	}
	entriesRead := 0
	if !t.Run("entries/300", func(t *testing.T) { checkEntries(t, ctx, client, cp1.Tree, 0, acked); entriesRead++ }) {
		return
	}
	if !t.Run("proofs/300", func(t *testing.T) { checkProofs(t, ctx, client, l.url, cv, cp1, acked) }) {
		return
	}

	cp2 := fill(250)
	if !t.Run("entries/550", func(t *testing.T) { checkEntries(t, ctx, client, cp2.Tree, cp1.N, acked); entriesRead++ }) {
		return
	}
	if !t.Run("proofs/550", func(t *testing.T) { checkProofs(t, ctx, client, l.url, cv, cp2, acked) }) {
		return
	}
	var tp tlog.TreeProof
	t.Run("consistency", func(t *testing.T) { tp = checkConsistency(t, ctx, tr, l.url, cp1, cp2) })

	// Full and partial tiles, of entries and of hashes, both went through
	// torchwood (unless -run left the entries out).
	for _, want := range []struct {
		level int
		full  bool
	}{{-1, true}, {-1, false}, {0, true}, {0, false}, {1, false}} {
		if entriesRead == 2 && !tr.sawTile(want.level, want.full) {
			t.Errorf("torchwood read no %s tile at level %d; read %v", map[bool]string{true: "full", false: "partial"}[want.full], want.level, tr.paths())
		}
	}
	t.Logf("torchwood read %d tiles: %v", len(tr.paths()), tr.paths())

	t.Run("witness", func(t *testing.T) {
		if tp == nil {
			// The consistency subtest did not run (-run): prove it here.
			tp = checkConsistency(t, ctx, tr, l.url, cp1, cp2)
		}
		checkWitness(t, f.bin, f.dir, logsFile, cp1Raw, []byte(httpGet(t, l.url+"/v1/checkpoints/"+strconv.FormatInt(cp2.N, 10))), cp1, tp)
	})
}

// cpVerifier opens the log's signed checkpoints with torchwood: the log's
// signature with torchwood's Ed25519 verifier and with the verifier key of
// GET /v1/log, the witness's with torchwood's cosignature/v1 verifier.
type cpVerifier struct {
	vkey, log note.Verifier
	witness   *torchwood.CosignatureVerifier
}

func (cv *cpVerifier) open(t *testing.T, raw []byte) torchwood.Checkpoint {
	t.Helper()
	if _, err := note.Open(raw, note.VerifierList(cv.vkey)); err != nil {
		t.Fatalf("the checkpoint does not open with the key of GET /v1/log: %v\n%s", err, raw)
	}
	n, err := note.Open(raw, note.VerifierList(cv.log, cv.witness))
	if err != nil {
		t.Fatalf("the checkpoint does not open with torchwood's verifiers: %v\n%s", err, raw)
	}
	if len(n.Sigs) != 2 || len(n.UnverifiedSigs) != 0 {
		t.Fatalf("the checkpoint has %d signatures that verify with torchwood and %d that do not; want the log's and the witness's\n%s", len(n.Sigs), len(n.UnverifiedSigs), raw)
	}
	var cosigned bool
	for _, s := range n.Sigs {
		if s.Name != cv.witness.Name() || s.Hash != cv.witness.KeyHash() {
			continue
		}
		cosigned = true
		ts, err := torchwood.CosignatureTimestamp(s)
		if err != nil {
			t.Fatalf("torchwood.CosignatureTimestamp: %v", err)
		}
		if d := time.Since(time.Unix(ts, 0)); d < -time.Minute || d > 5*time.Minute {
			t.Errorf("the cosignature's timestamp %d is %v from now", ts, d)
		}
	}
	if !cosigned {
		t.Fatalf("the checkpoint carries no cosignature of %s\n%s", cv.witness.Name(), raw)
	}
	cp, err := torchwood.ParseCheckpoint(n.Text)
	if err != nil {
		t.Fatalf("torchwood.ParseCheckpoint: %v\n%q", err, n.Text)
	}
	if cp.Origin != cv.vkey.Name() {
		t.Fatalf("checkpoint origin %q, want %q", cp.Origin, cv.vkey.Name())
	}
	if cp.String() != n.Text {
		t.Fatalf("torchwood formats the checkpoint as %q, the log signed %q", cp.String(), n.Text)
	}
	return cp
}

// checkRefusals checks that torchwood's verifiers do refuse a checkpoint the
// log did not sign and a cosignature the witness did not make: the checks
// above would see a wrong signature.
func (cv *cpVerifier) checkRefusals(t *testing.T, raw []byte) {
	text, sigs, ok := bytes.Cut(raw, []byte("\n\n"))
	if !ok {
		t.Fatalf("the checkpoint has no signature block\n%s", raw)
	}
	lines := bytes.Split(text, []byte("\n"))
	lines[1] = []byte(strconv.Itoa(mustAtoi(t, string(lines[1])) + 1))
	forged := append(append(bytes.Join(lines, []byte("\n")), "\n\n"...), sigs...)
	if _, err := note.Open(forged, note.VerifierList(cv.log)); err == nil {
		t.Errorf("torchwood's Ed25519 verifier accepted a checkpoint with another size")
	}
	if _, err := note.Open(forged, note.VerifierList(cv.witness)); err == nil {
		t.Errorf("torchwood's cosignature verifier accepted a checkpoint with another size")
	}
	// Another timestamp in the cosignature: the signed message changes.
	var out []byte
	for _, line := range bytes.SplitAfter(sigs, []byte("\n")) {
		if p := []byte("— " + cv.witness.Name() + " "); bytes.HasPrefix(line, p) {
			sig, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(line[len(p):])))
			if err != nil || len(sig) != 4+8+64 {
				t.Fatalf("malformed cosignature line %q", line)
			}
			sig[4+7]++
			line = []byte(string(p) + base64.StdEncoding.EncodeToString(sig) + "\n")
		}
		out = append(out, line...)
	}
	forged = append(append(text, "\n\n"...), out...)
	if _, err := note.Open(forged, note.VerifierList(cv.witness)); err == nil {
		t.Errorf("torchwood's cosignature verifier accepted a cosignature with another timestamp")
	}
	if _, err := note.Open(forged, note.VerifierList(cv.log)); err != nil {
		t.Errorf("the log's signature no longer verifies once the cosignature is changed: %v", err)
	}
}

// checkEntries reads every entry of tree from start with torchwood's Client,
// which authenticates each against the tree's root, and compares it with
// what the log acknowledged at that index.
func checkEntries(t *testing.T, ctx context.Context, client *torchwood.Client, tree tlog.Tree, start int64, acked map[int64]api.Accepted) {
	next, calls := start, 0
	for next < tree.N {
		// Client.Entries may stop before a trailing partial tile; calling
		// it again from there reads it.
		calls++
		before := next
		for i, entry := range client.Entries(ctx, tree, next) {
			if i != next {
				t.Fatalf("torchwood yielded entry %d, want %d", i, next)
			}
			checkEntry(t, i, entry, acked)
			next++
		}
		if err := client.Err(); err != nil {
			t.Fatalf("torchwood Client.Entries from %d in a tree of size %d: %v", before, tree.N, err)
		}
		if next == before {
			t.Fatalf("torchwood Client.Entries yielded nothing from %d in a tree of size %d", next, tree.N)
		}
	}
	t.Logf("torchwood's Client read entries %d to %d of the tree of size %d in %d calls, each authenticated against the checkpoint's root and equal to the acknowledged one", start, tree.N-1, tree.N, calls)
}

// checkEntry checks that entry is what the log acknowledged at index i: the
// same leaf hash, and the receipt of the same projection id.
func checkEntry(t *testing.T, i int64, entry []byte, acked map[int64]api.Accepted) {
	t.Helper()
	a, ok := acked[i]
	if !ok {
		t.Fatalf("entry %d was never acknowledged", i)
	}
	rh := tlog.RecordHash(entry)
	if got := base64.StdEncoding.EncodeToString(rh[:]); got != a.LeafHash {
		t.Fatalf("entry %d has leaf hash %s, the log acknowledged %s", i, got, a.LeafHash)
	}
	var r struct {
		ProjectionID string `json:"projection_id"`
	}
	if err := json.Unmarshal(entry, &r); err != nil || r.ProjectionID != a.ID {
		t.Fatalf("entry %d is the receipt of %q (%v), the log acknowledged %q", i, r.ProjectionID, err, a.ID)
	}
}

// checkProofs reads single entries with torchwood's Client.Entry, which
// builds and checks their inclusion proofs from the tiles, and checks the
// log's tlog-proofs of the same entries against the same checkpoint with
// torchwood.
func checkProofs(t *testing.T, ctx context.Context, client *torchwood.Client, base string, cv *cpVerifier, cp torchwood.Checkpoint, acked map[int64]api.Accepted) {
	for _, idx := range []int64{0, 1, 255, 256, 257, cp.N / 2, cp.N - 2, cp.N - 1} {
		entry, rp, err := client.Entry(ctx, cp.Tree, idx)
		if err != nil {
			t.Fatalf("torchwood Client.Entry(%d) in a tree of size %d: %v", idx, cp.N, err)
		}
		checkEntry(t, idx, entry, acked)

		raw := httpGet(t, fmt.Sprintf("%s/v1/proof/%d?size=%d", base, idx, cp.N))
		pIdx, path, pcp := splitTLogProof(t, raw)
		if pIdx != idx {
			t.Fatalf("the tlog-proof of %d names index %d", idx, pIdx)
		}
		if got := cv.open(t, pcp); got != cp {
			t.Fatalf("the tlog-proof of %d is against %+v, want %+v", idx, got, cp)
		}
		rh := tlog.RecordHash(entry)
		if err := torchwood.CheckHash(torchwood.HashProof(path), cp.N, cp.Hash, tlog.StoredHashIndex(0, idx), rh); err != nil {
			t.Fatalf("torchwood.CheckHash of the tlog-proof of %d: %v\n%s", idx, err, raw)
		}
		if err := tlog.CheckRecord(path, cp.N, cp.Hash, idx, rh); err != nil {
			t.Fatalf("tlog.CheckRecord of the tlog-proof of %d: %v", idx, err)
		}
		if len(path) != len(rp) {
			t.Fatalf("the tlog-proof of %d has %d hashes, torchwood's %d", idx, len(path), len(rp))
		}
		for j := range path {
			if path[j] != rp[j] {
				t.Fatalf("hash %d of the tlog-proof of %d is %s, torchwood's is %s", j, idx, path[j], rp[j])
			}
		}
		// The same path must not prove another leaf, or the leaf elsewhere.
		if idx+1 < cp.N {
			other, _, err := client.Entry(ctx, cp.Tree, idx+1)
			if err != nil {
				t.Fatal(err)
			}
			if torchwood.CheckHash(torchwood.HashProof(path), cp.N, cp.Hash, tlog.StoredHashIndex(0, idx), tlog.RecordHash(other)) == nil {
				t.Fatalf("torchwood.CheckHash accepted the proof of %d for entry %d", idx, idx+1)
			}
			if torchwood.CheckHash(torchwood.HashProof(path), cp.N, cp.Hash, tlog.StoredHashIndex(0, idx+1), rh) == nil {
				t.Fatalf("torchwood.CheckHash accepted the proof of %d at index %d", idx, idx+1)
			}
		}
	}
	t.Logf("tlog-proofs of 8 entries against the checkpoint of size %d verify with torchwood and equal the inclusion proofs torchwood builds from the tiles", cp.N)
}

// checkConsistency checks the log's consistency proof from cp1 to cp2, and
// returns it, against the one torchwood's tile hash reader builds.
func checkConsistency(t *testing.T, ctx context.Context, tr torchwood.TileReader, base string, cp1, cp2 torchwood.Checkpoint) tlog.TreeProof {
	var c api.Consistency
	if err := json.Unmarshal([]byte(httpGet(t, fmt.Sprintf("%s/v1/consistency?from=%d&to=%d", base, cp1.N, cp2.N))), &c); err != nil {
		t.Fatal(err)
	}
	served := make(tlog.TreeProof, len(c.Proof))
	for i, h := range c.Proof {
		b, err := base64.StdEncoding.DecodeString(h)
		if err != nil || len(b) != tlog.HashSize {
			t.Fatalf("consistency proof hash %d: %q", i, h)
		}
		copy(served[i][:], b)
	}
	if err := tlog.CheckTree(served, cp2.N, cp2.Hash, cp1.N, cp1.Hash); err != nil {
		t.Fatalf("the log's consistency proof %d→%d does not verify: %v", cp1.N, cp2.N, err)
	}
	hr := torchwood.TileHashReaderWithContext(ctx, cp2.Tree, tr)
	built, err := tlog.ProveTree(cp2.N, cp1.N, hr)
	if err != nil {
		t.Fatalf("consistency proof %d→%d from torchwood's tile hash reader: %v", cp1.N, cp2.N, err)
	}
	if fmt.Sprint(built) != fmt.Sprint(served) {
		t.Fatalf("the log's consistency proof %d→%d is %v, the one from the tiles %v", cp1.N, cp2.N, served, built)
	}
	if h, err := tlog.TreeHash(cp1.N, hr); err != nil || h != cp1.Hash {
		t.Fatalf("the root of the first %d entries, from the tiles of the tree of size %d: %v %v; the checkpoint says %v", cp1.N, cp2.N, h, err, cp1.Hash)
	}
	t.Logf("consistency %d→%d: the log's proof (%d hashes) verifies and equals the one built from the tiles through torchwood", cp1.N, cp2.N, len(served))
	return served
}

// checkWitness drives a second "memtrail witness serve" of the log (one the
// log does not use) with add-checkpoint requests: the log's checkpoint of
// size cp1.N, then that of cp2 with the consistency proof tp, which was
// checked against one built by torchwood's tile hash reader. Its
// cosignatures must verify with torchwood's cosignature/v1 verifier; a
// tampered proof must be refused. torchwood v0.6.1 has no witness client,
// so the requests are framed here.
func checkWitness(t *testing.T, bin, dir, logsFile string, cp1Raw, cp2Raw []byte, cp1 torchwood.Checkpoint, tp tlog.TreeProof) {
	const name = "witness.test/torchwood-w2"
	data := filepath.Join(dir, "witness2")
	vkey := keygenInto(t, bin, "witness", name, data, witnessKeyFile)
	addr := "127.0.0.1:" + freePort(t)
	w := startTestProc(t, "memtrail witness 2", bin, "http://"+addr+"/metrics",
		"witness", "serve", "--data", data, "--logs", logsFile, "--listen", addr)
	if got := w.firstLine(t); got != vkey {
		t.Fatalf("memtrail witness serve printed %q, want its key %q", got, vkey)
	}
	v := cosignatureVerifier(t, name, filepath.Join(data, witnessKeyFile))
	if v.String() != vkey {
		t.Fatalf("torchwood encodes the witness key as %s, memtrail as %s", v.String(), vkey)
	}
	add := func(old int64, proof tlog.TreeProof, signed []byte) (int, []byte) {
		t.Helper()
		var b bytes.Buffer
		fmt.Fprintf(&b, "old %d\n", old)
		for _, h := range proof {
			b.WriteString(base64.StdEncoding.EncodeToString(h[:]) + "\n")
		}
		b.WriteString("\n")
		b.Write(signed)
		resp, err := http.Post("http://"+addr+"/add-checkpoint", "text/plain", &b)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, body
	}
	cosigned := func(signed, cosig []byte) {
		t.Helper()
		n, err := note.Open(append(append([]byte(nil), signed...), cosig...), note.VerifierList(v))
		if err != nil {
			t.Fatalf("the witness's cosignature does not verify with torchwood: %v\n%s", err, cosig)
		}
		if len(n.Sigs) != 1 || n.Sigs[0].Name != name {
			t.Fatalf("the witness answered %q: want one cosignature of %s", cosig, name)
		}
		if _, err := torchwood.CosignatureTimestamp(n.Sigs[0]); err != nil {
			t.Fatalf("torchwood.CosignatureTimestamp: %v", err)
		}
	}
	code, body := add(0, nil, cp1Raw)
	if code != http.StatusOK {
		t.Fatalf("add-checkpoint old 0 → %d: %d %s", cp1.N, code, body)
	}
	cosigned(cp1Raw, body)
	if len(tp) > 0 {
		bad := append(tlog.TreeProof(nil), tp...)
		bad[0][0] ^= 1
		if code, body := add(cp1.N, bad, cp2Raw); code != http.StatusUnprocessableEntity {
			t.Errorf("add-checkpoint with a tampered consistency proof: %d %s, want 422", code, body)
		}
	}
	code, body = add(cp1.N, tp, cp2Raw)
	if code != http.StatusOK {
		t.Fatalf("add-checkpoint old %d with the consistency proof: %d %s", cp1.N, code, body)
	}
	cosigned(cp2Raw, body)
	t.Logf("memtrail witness cosigned both checkpoints (consistency proof of %d hashes); torchwood verified the cosignatures", len(tp))
}

// cosignatureVerifier makes torchwood's cosignature/v1 verifier for the
// witness key in path: torchwood v0.6.1 makes one only from a signer.
func cosignatureVerifier(t *testing.T, name, path string) *torchwood.CosignatureVerifier {
	t.Helper()
	skey, err := witness.ReadKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// PRIVATE+KEY+<name>+<key id>+<base64(0x04 || seed)>
	parts := strings.SplitN(strings.TrimSpace(skey), "+", 5)
	if len(parts) != 5 {
		t.Fatalf("%s does not hold a signed-note private key", path)
	}
	raw, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(raw) != 1+ed25519.SeedSize || raw[0] != 0x04 {
		t.Fatalf("%s does not hold a cosignature/v1 key", path)
	}
	s, err := torchwood.NewCosignatureSigner(name, ed25519.NewKeyFromSeed(raw[1:]))
	if err != nil {
		t.Fatalf("torchwood.NewCosignatureSigner: %v", err)
	}
	return s.Verifier()
}

// splitTLogProof takes a c2sp.org/tlog-proof@v1 apart into its index,
// inclusion path and signed checkpoint, for torchwood to check; torchwood
// v0.6.1 has no parser for the format.
func splitTLogProof(t *testing.T, proof string) (int64, tlog.RecordProof, []byte) {
	t.Helper()
	header, rest, _ := strings.Cut(proof, "\n")
	if header != "c2sp.org/tlog-proof@v1" {
		t.Fatalf("not a tlog-proof: %q", proof)
	}
	line, rest, _ := strings.Cut(rest, "\n")
	if strings.HasPrefix(line, "extra ") {
		line, rest, _ = strings.Cut(rest, "\n")
	}
	idx, ok := strings.CutPrefix(line, "index ")
	if !ok {
		t.Fatalf("tlog-proof without an index line: %q", proof)
	}
	var path tlog.RecordProof
	for {
		line, rest, ok = strings.Cut(rest, "\n")
		if !ok {
			t.Fatalf("tlog-proof without a checkpoint: %q", proof)
		}
		if line == "" {
			break
		}
		b, err := base64.StdEncoding.DecodeString(line)
		if err != nil || len(b) != tlog.HashSize {
			t.Fatalf("tlog-proof hash %q", line)
		}
		path = append(path, tlog.Hash(b))
	}
	return int64(mustAtoi(t, idx)), path, []byte(rest)
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

// tileRecorder is a torchwood.TileReader that notes which tiles torchwood
// reads.
type tileRecorder struct {
	torchwood.TileReader
	mu   sync.Mutex
	read []tlog.Tile
}

func (r *tileRecorder) ReadTiles(ctx context.Context, tiles []tlog.Tile) ([][]byte, error) {
	r.mu.Lock()
	r.read = append(r.read, tiles...)
	r.mu.Unlock()
	return r.TileReader.ReadTiles(ctx, tiles)
}

func (r *tileRecorder) sawTile(level int, full bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, tl := range r.read {
		if tl.L == level && (tl.W == torchwood.TileWidth) == full {
			return true
		}
	}
	return false
}

func (r *tileRecorder) paths() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := make(map[string]bool)
	var p []string
	for _, tl := range r.read {
		if s := torchwood.TilePath(tl); !seen[s] {
			seen[s] = true
			p = append(p, s)
		}
	}
	return p
}
