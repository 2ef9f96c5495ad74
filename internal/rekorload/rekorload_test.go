package rekorload

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// mth is RFC 6962's Merkle tree hash over leaf hashes, written directly
// from the definition to check the iterative verifier against.
func mth(leaves [][]byte) []byte {
	switch n := len(leaves); n {
	case 0:
		h := sha256.Sum256(nil)
		return h[:]
	case 1:
		return leaves[0]
	default:
		k := splitPoint(n)
		return nodeHash(mth(leaves[:k]), mth(leaves[k:]))
	}
}

// path is RFC 6962's PATH(m, D[n]) over leaf hashes.
func path(m int, leaves [][]byte) [][]byte {
	n := len(leaves)
	if n <= 1 {
		return nil
	}
	k := splitPoint(n)
	if m < k {
		return append(path(m, leaves[:k]), mth(leaves[k:]))
	}
	return append(path(m-k, leaves[k:]), mth(leaves[:k]))
}

// splitPoint is the largest power of two smaller than n.
func splitPoint(n int) int {
	k := 1
	for k<<1 < n {
		k <<= 1
	}
	return k
}

func TestRootFromInclusionProof(t *testing.T) {
	var leaves [][]byte
	for size := 1; size <= 70; size++ {
		leaves = append(leaves, LeafHash([]byte("leaf "+strconv.Itoa(size-1))))
		root := mth(leaves)
		for i := 0; i < size; i++ {
			proof := path(i, leaves)
			got, err := RootFromInclusionProof(uint64(i), uint64(size), leaves[i], proof)
			if err != nil {
				t.Fatalf("size %d index %d: %v", size, i, err)
			}
			if !bytes.Equal(got, root) {
				t.Fatalf("size %d index %d: root mismatch", size, i)
			}
			if len(proof) > 0 {
				bad := make([][]byte, len(proof))
				copy(bad, proof)
				last := append([]byte(nil), bad[len(bad)-1]...)
				last[0] ^= 1
				bad[len(bad)-1] = last
				if got, err := RootFromInclusionProof(uint64(i), uint64(size), leaves[i], bad); err == nil && bytes.Equal(got, root) {
					t.Fatalf("size %d index %d: altered proof still leads to the root", size, i)
				}
				if _, err := RootFromInclusionProof(uint64(i), uint64(size), leaves[i], proof[:len(proof)-1]); err == nil {
					t.Fatalf("size %d index %d: short proof accepted", size, i)
				}
			}
			if _, err := RootFromInclusionProof(uint64(i), uint64(size), leaves[i], append(proof, root)); err == nil {
				t.Fatalf("size %d index %d: long proof accepted", size, i)
			}
		}
	}
	if _, err := RootFromInclusionProof(3, 3, leaves[0], nil); err == nil {
		t.Fatal("index outside the tree accepted")
	}
}

func checkpointText(origin string, size int, root []byte) string {
	return fmt.Sprintf("%s\n%d\n%s\n", origin, size, base64.StdEncoding.EncodeToString(root))
}

// signNote signs a checkpoint text as a C2SP signed note with an Ed25519
// key: "— origin base64(key hash || signature)".
func signNote(text, origin string, priv ed25519.PrivateKey) string {
	sig := ed25519.Sign(priv, []byte(text))
	line := append(noteKeyHash(origin, priv.Public().(ed25519.PublicKey)), sig...)
	return text + "\n\u2014 " + origin + " " + base64.StdEncoding.EncodeToString(line) + "\n"
}

// noteKeyHash is the signed-note key ID of an Ed25519 key: the first four
// bytes of SHA-256(name || "\n" || 0x01 || key).
func noteKeyHash(origin string, pub ed25519.PublicKey) []byte {
	h := sha256.New()
	h.Write([]byte(origin + "\n"))
	h.Write([]byte{0x01})
	h.Write(pub)
	return h.Sum(nil)[:4]
}

// verifyNote checks that envelope carries a valid signature by pub under
// origin.
func verifyNote(envelope, origin string, pub ed25519.PublicKey) error {
	text, sigs, ok := strings.Cut(envelope, "\n\n")
	if !ok {
		return fmt.Errorf("no signature block")
	}
	msg := []byte(text + "\n")
	want := noteKeyHash(origin, pub)
	for _, line := range strings.Split(strings.TrimSuffix(sigs, "\n"), "\n") {
		rest, ok := strings.CutPrefix(line, "\u2014 "+origin+" ")
		if !ok {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(rest)
		if err != nil || len(raw) != 4+ed25519.SignatureSize || !bytes.Equal(raw[:4], want) {
			continue
		}
		if ed25519.Verify(pub, msg, raw[4:]) {
			return nil
		}
	}
	return fmt.Errorf("no valid signature by the log's key")
}

func TestParseCheckpoint(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(nil)
	root := sha256.Sum256([]byte("root"))
	good := signNote(checkpointText("example.test/log", 42, root[:]), "example.test/log", priv)
	size, got, err := ParseCheckpoint(good)
	if err != nil || size != 42 || !bytes.Equal(got, root[:]) {
		t.Fatalf("ParseCheckpoint(good) = %d, %x, %v", size, got, err)
	}
	if err := verifyNote(good, "example.test/log", priv.Public().(ed25519.PublicKey)); err != nil {
		t.Fatalf("verifyNote: %v", err)
	}
	for name, env := range map[string]string{
		"unsigned":   checkpointText("o", 1, root[:]),
		"no sig":     checkpointText("o", 1, root[:]) + "\n",
		"bad size":   "o\nx\n" + base64.StdEncoding.EncodeToString(root[:]) + "\n\n\u2014 o AAAA\n",
		"short root": "o\n1\nAAAA\n\n\u2014 o AAAA\n",
		"two lines":  "o\n1\n\n\u2014 o AAAA\n",
	} {
		if _, _, err := ParseCheckpoint(env); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for p, want := range map[int]time.Duration{50: 50, 90: 90, 99: 99, 100: 100} {
		if got := percentile(d, p); got != want {
			t.Errorf("p%d = %d, want %d", p, got, want)
		}
	}
	if got := percentile(d[:1], 99); got != 1 {
		t.Errorf("p99 of one = %d", got)
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("p50 of none = %d", got)
	}
}

// fakeRekor answers CreateEntry the way Rekor v2 does, from its documented
// JSON, so that Load's requests and answer checks are exercised without
// building Rekor. It reads the request by field name (not through this
// package's types), verifies the ECDSA signature, appends the canonical
// entry, and answers with an inclusion proof against a signed checkpoint.
// corrupt, if set, decides which answers to spoil and how.
type fakeRekor struct {
	mu      sync.Mutex
	leaves  [][]byte
	priv    ed25519.PrivateKey
	corrupt func(n int, tle map[string]any)
}

func (f *fakeRekor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != EntriesPath {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var req map[string]map[string]any
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	hr, ok := req["hashedRekordRequestV002"]
	if !ok || len(req) != 1 {
		http.Error(w, "want exactly hashedRekordRequestV002", http.StatusBadRequest)
		return
	}
	digest, err1 := base64.StdEncoding.DecodeString(str(hr["digest"]))
	sig, _ := hr["signature"].(map[string]any)
	ver, _ := sig["verifier"].(map[string]any)
	pk, _ := ver["publicKey"].(map[string]any)
	content, err2 := base64.StdEncoding.DecodeString(str(sig["content"]))
	raw, err3 := base64.StdEncoding.DecodeString(str(pk["rawBytes"]))
	if err1 != nil || err2 != nil || err3 != nil || len(digest) != sha256.Size || str(ver["keyDetails"]) != "PKIX_ECDSA_P256_SHA_256" {
		http.Error(w, "malformed hashedrekord request", http.StatusBadRequest)
		return
	}
	pub, err := x509.ParsePKIXPublicKey(raw)
	ecPub, ok := pub.(*ecdsa.PublicKey)
	if err != nil || !ok || !ecdsa.VerifyASN1(ecPub, digest, content) {
		http.Error(w, "signature does not verify", http.StatusBadRequest)
		return
	}
	body, _ := json.Marshal(map[string]any{
		"apiVersion": "0.0.2",
		"kind":       "hashedrekord",
		"spec": map[string]any{"hashedRekordV002": map[string]any{
			"data":      map[string]any{"algorithm": "SHA2_256", "digest": digest},
			"signature": sig,
		}},
	})

	f.mu.Lock()
	index := len(f.leaves)
	f.leaves = append(f.leaves, LeafHash(body))
	size := len(f.leaves)
	root := mth(f.leaves)
	proof := path(index, f.leaves)
	f.mu.Unlock()

	const origin = "fake.rekor.test"
	tle := map[string]any{
		"logIndex":    strconv.Itoa(index),
		"logId":       map[string]any{"keyId": noteKeyHash(origin, f.priv.Public().(ed25519.PublicKey))},
		"kindVersion": map[string]any{"kind": "hashedrekord", "version": "0.0.2"},
		"inclusionProof": map[string]any{
			"logIndex":   strconv.Itoa(index),
			"rootHash":   root,
			"treeSize":   strconv.Itoa(size),
			"hashes":     proof,
			"checkpoint": map[string]any{"envelope": signNote(checkpointText(origin, size, root), origin, f.priv)},
		},
		"integratedTime":    "0",
		"inclusionPromise":  nil,
		"canonicalizedBody": body,
	}
	if f.corrupt != nil {
		f.corrupt(index, tle)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(tle)
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func TestLoadAgainstFakeLog(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(nil)
	f := &fakeRekor{priv: priv}
	ts := httptest.NewServer(f)
	defer ts.Close()

	res, err := Load(context.Background(), ts.URL, 8, 120)
	if err != nil {
		t.Fatal(err)
	}
	if res.Entries != 120 || res.Errors != 0 {
		t.Fatalf("Load: %v", res)
	}
	if res.PerSecond <= 0 || res.P50 <= 0 || res.P50 > res.P90 || res.P90 > res.P99 || res.P99 > res.Max {
		t.Fatalf("implausible figures: %+v", res)
	}
	if len(f.leaves) != 120 {
		t.Fatalf("log holds %d entries, want 120", len(f.leaves))
	}
}

func TestLoadCountsBadAnswers(t *testing.T) {
	spoil := map[int]func(tle map[string]any){
		0: func(tle map[string]any) { delete(tle, "inclusionProof") },
		1: func(tle map[string]any) {
			p := tle["inclusionProof"].(map[string]any)
			hs := p["hashes"].([][]byte)
			if len(hs) > 0 {
				h := append([]byte(nil), hs[0]...)
				h[5] ^= 0x80
				hs[0] = h
			} else {
				p["hashes"] = [][]byte{make([]byte, 32)}
			}
		},
		2: func(tle map[string]any) {
			delete(tle["inclusionProof"].(map[string]any), "checkpoint")
		},
		3: func(tle map[string]any) {
			p := tle["inclusionProof"].(map[string]any)
			p["checkpoint"] = map[string]any{"envelope": "fake.rekor.test\n999\n" + base64.StdEncoding.EncodeToString(p["rootHash"].([]byte)) + "\n\n\u2014 fake.rekor.test AAAA\n"}
		},
		4: func(tle map[string]any) {
			tle["canonicalizedBody"] = []byte(`{"apiVersion":"0.0.2","kind":"hashedrekord","spec":{"hashedRekordV002":{"data":{"algorithm":"SHA2_256","digest":"AAAA"}}}}`)
		},
		5: func(tle map[string]any) { tle["inclusionProof"].(map[string]any)["rootHash"] = make([]byte, 32) },
		6: func(tle map[string]any) { tle["inclusionProof"].(map[string]any)["logIndex"] = "100000" },
	}
	_, priv, _ := ed25519.GenerateKey(nil)
	f := &fakeRekor{priv: priv, corrupt: func(n int, tle map[string]any) {
		if s, ok := spoil[n]; ok {
			s(tle)
		}
	}}
	ts := httptest.NewServer(f)
	defer ts.Close()

	// One client, so the log index of the n-th answer is n.
	res, err := Load(context.Background(), ts.URL, 1, 20)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != len(spoil) || res.Entries != 20-len(spoil) {
		t.Fatalf("Load: %v; want %d errors", res, len(spoil))
	}
	if !strings.Contains(res.FirstError, "entry 0:") || !strings.Contains(res.FirstError, "no inclusion proof") {
		t.Fatalf("first error = %q", res.FirstError)
	}

	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "reached max pushback; retry", http.StatusServiceUnavailable)
	}))
	defer refuse.Close()
	res, err = Load(context.Background(), refuse.URL, 4, 10)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 10 || res.Entries != 0 || !strings.Contains(res.FirstError, "status 503") {
		t.Fatalf("Load against a refusing server: %v", res)
	}
}

func TestLoadArguments(t *testing.T) {
	if _, err := Load(context.Background(), "http://127.0.0.1:1", 0, 10); err == nil {
		t.Fatal("zero clients accepted")
	}
	if _, err := Load(context.Background(), "http://127.0.0.1:1", 10, 0); err == nil {
		t.Fatal("zero entries accepted")
	}
}

func TestStartRefusesNonLoopback(t *testing.T) {
	if _, err := Start(context.Background(), "/nonexistent", t.TempDir(), Options{Host: "0.0.0.0"}); err == nil {
		t.Fatal("a non-loopback host was accepted")
	}
}

func TestSigningKeyIsStable(t *testing.T) {
	p := t.TempDir() + "/signer.pem"
	a, err := signingKey(p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := signingKey(p)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Equal(b) {
		t.Fatal("the signing key changed between loads")
	}
}
