package conformance

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
	"github.com/memtrail/memtrail/receipts"
)

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("vectors", path))
	if err != nil {
		t.Fatalf("vector missing: %v", err)
	}
	return b
}

// decode parses JSON keeping numbers exact.
func decode(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func encode(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// clone deep-copies a decoded document.
func clone(t *testing.T, v any) any { return decode(t, encode(t, v)) }

// TestECCRDraft: the ECCR draft's own envelope verifies, its JCS form has
// the length and hash of the draft's §7, and every single-member mutation
// of it — removed, changed, retyped, duplicated, or a member added — is
// refused, by the strict parser or by the signature.
func TestECCRDraft(t *testing.T) {
	var vec struct {
		Pub      string          `json:"public_key_hex"`
		KID      string          `json:"kid"`
		Envelope json.RawMessage `json:"envelope"`
	}
	if err := json.Unmarshal(read(t, "eccr-draft/eccr-v1-draft-vector.json"), &vec); err != nil {
		t.Fatal(err)
	}
	pub, err := receipts.ParsePublicKey(vec.Pub)
	if err != nil {
		t.Fatal(err)
	}
	if receipts.KeyID(pub) != vec.KID {
		t.Errorf("kid = %s, want %s", receipts.KeyID(pub), vec.KID)
	}
	seed := bytes.Repeat([]byte{0x2a}, 32)
	if !ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey).Equal(pub) {
		t.Error("the public key is not the one of seed 0x2a×32")
	}
	check := func(raw []byte) error {
		r, err := receipts.ParseReceipt(raw)
		if err != nil {
			return err
		}
		c, ok := r.(*receipts.Compaction)
		if !ok {
			return fmt.Errorf("parsed as a %s", r.Kind())
		}
		return c.VerifySignatureWithKey(pub)
	}
	c, err := receipts.ParseCompaction(vec.Envelope)
	if err != nil {
		t.Fatal(err)
	}
	canon := c.Canonical()
	sum := sha256.Sum256(canon)
	if len(canon) != 672 || hex.EncodeToString(sum[:]) != "fb90df742a9b5bb44e844884790f042c334e881a0b04320fa842e0d652b33d9f" {
		t.Errorf("JCS form: %d bytes, SHA-256 %x; the draft says 672 and fb90df74…", len(canon), sum)
	}
	if ref, err := jcs.Transform(vec.Envelope); err != nil || !bytes.Equal(ref, canon) {
		t.Errorf("JCS form differs from the reference library's: %v", err)
	}
	if err := check(vec.Envelope); err != nil {
		t.Fatalf("the draft envelope: %v", err)
	}

	doc := decode(t, vec.Envelope).(map[string]any)
	if err := check(encode(t, doc)); err != nil {
		t.Fatalf("the draft envelope, re-encoded: %v", err)
	}
	type mutant struct {
		name string
		raw  []byte
	}
	var mutants []mutant
	add := func(name string, f func(m map[string]any)) {
		m := clone(t, doc).(map[string]any)
		f(m)
		mutants = append(mutants, mutant{name, encode(t, m)})
	}
	// Each member at every level, in a stable order.
	type path struct{ outer, inner string }
	var paths []path
	for k, v := range doc {
		paths = append(paths, path{k, ""})
		if sub, ok := v.(map[string]any); ok {
			for kk := range sub {
				paths = append(paths, path{k, kk})
			}
		}
	}
	sort.Slice(paths, func(i, j int) bool {
		return paths[i].outer+"."+paths[i].inner < paths[j].outer+"."+paths[j].inner
	})
	at := func(m map[string]any, p path) (map[string]any, string) {
		if p.inner == "" {
			return m, p.outer
		}
		return m[p.outer].(map[string]any), p.inner
	}
	for _, p := range paths {
		name := p.outer
		if p.inner != "" {
			name += "." + p.inner
		}
		add("remove "+name, func(m map[string]any) { o, k := at(m, p); delete(o, k) })
		switch v := func() any { o, k := at(doc, p); return o[k] }().(type) {
		case string:
			add("change "+name, func(m map[string]any) {
				o, k := at(m, p)
				b := []byte(v)
				i := len(b) / 2
				if b[i] == 'a' {
					b[i] = 'b'
				} else {
					b[i] = 'a'
				}
				o[k] = string(b)
			})
			add("extend "+name, func(m map[string]any) { o, k := at(m, p); o[k] = v + "0" })
			add("retype "+name+" as a number", func(m map[string]any) { o, k := at(m, p); o[k] = json.Number("1") })
			add("pad "+name+" with a space", func(m map[string]any) { o, k := at(m, p); o[k] = " " + v })
		case json.Number:
			n, _ := v.Int64()
			add("increment "+name, func(m map[string]any) { o, k := at(m, p); o[k] = json.Number(fmt.Sprint(n + 1)) })
			add("retype "+name+" as a string", func(m map[string]any) { o, k := at(m, p); o[k] = string(v) })
			add("write "+name+" as a fraction", func(m map[string]any) { o, k := at(m, p); o[k] = json.Number(string(v) + ".5") })
			add("make "+name+" unsafe", func(m map[string]any) { o, k := at(m, p); o[k] = json.Number("9007199254740993") })
			add("make "+name+" negative", func(m map[string]any) { o, k := at(m, p); o[k] = json.Number("-" + string(v)) })
			add("retype "+name+" as a boolean", func(m map[string]any) { o, k := at(m, p); o[k] = true })
		case map[string]any:
			add("retype "+name+" as a string", func(m map[string]any) { o, k := at(m, p); o[k] = "x" })
			add("add a member to "+name, func(m map[string]any) { o, k := at(m, p); o[k].(map[string]any)["extension"] = "x" })
		}
	}
	add("add a top-level member", func(m map[string]any) { m["extension"] = "x" })
	// Duplicated members cannot be built from a map: edit the text.
	for _, member := range []string{"inherited_sensitivity_ceiling", "retention_purge_epoch", "source_item_count"} {
		v := doc[member]
		dup := fmt.Sprintf(`{"%s":%s,`, member, encode(t, v))
		mutants = append(mutants, mutant{"duplicate " + member + " (same value)", append([]byte(dup), vec.Envelope[bytes.IndexByte(vec.Envelope, '{')+1:]...)})
	}
	mutants = append(mutants, mutant{"duplicate inherited_sensitivity_ceiling, lower label first", append([]byte(`{"inherited_sensitivity_ceiling":"PUBLIC",`), vec.Envelope[bytes.IndexByte(vec.Envelope, '{')+1:]...)})

	codes := map[receipts.Code]int{}
	for _, mu := range mutants {
		err := check(mu.raw)
		if err == nil {
			t.Errorf("mutation %q accepted:\n%s", mu.name, mu.raw)
			continue
		}
		code := receipts.ErrorCode(err)
		if code == "" {
			t.Errorf("mutation %q refused without a code: %v", mu.name, err)
		}
		codes[code]++
	}
	t.Logf("eccr-draft: the envelope verifies (672 bytes, fb90df74…); %d single-member mutations, all refused: %v", len(mutants), codes)
}

// interop is the interop projection vector file.
type interop struct {
	Pin    json.RawMessage `json:"adapter_pin"`
	Policy struct {
		VerificationTime string `json:"verification_time"`
	} `json:"verification_policy"`
	Projection struct {
		Record json.RawMessage `json:"record"`
	} `json:"projection"`
	Cases []struct {
		ID       string  `json:"id"`
		Mutation *string `json:"mutation"`
		Expect   struct {
			Result string `json:"result"`
		} `json:"expect"`
	} `json:"cases"`
}

// TestProjectionRecordInterop: the interop MEMORY-PROJECTION-RECORD-v1
// verifies under its pin, and each hostile case that needs only the record
// and the pin gives exactly its expected code. (The cases over the
// verification material — source objects, fragments, digests, trust
// snapshot age, native results, replay — need the §7 verifier and run in
// verifier.TestInteropVectors.)
// loadInterop reads the interop vector file and returns it with its
// adapter pins, its verification time and the adapter's private key (its
// seed is published with the file), checked against the pin.
func loadInterop(t *testing.T) (interop, []*receipts.AdapterPin, time.Time, ed25519.PrivateKey) {
	t.Helper()
	var v interop
	if err := json.Unmarshal(read(t, "emilia-amem/memory-projection-record.v1.vectors.json"), &v); err != nil {
		t.Fatal(err)
	}
	pins, err := receipts.ParseAdapterPins(v.Pin)
	if err != nil {
		t.Fatal(err)
	}
	now, err := receipts.ParseTimestamp(v.Policy.VerificationTime)
	if err != nil {
		t.Fatal(err)
	}
	seed := sha256.Sum256([]byte("apertomemory-emilia/v0/adapter"))
	adapterKey := ed25519.NewKeyFromSeed(seed[:])
	if !adapterKey.Public().(ed25519.PublicKey).Equal(pins[0].PublicKey) {
		t.Fatal("the adapter seed does not give the pinned key")
	}
	return v, pins, now, adapterKey
}

func TestProjectionRecordInterop(t *testing.T) {
	v, pins, now, adapterKey := loadInterop(t)
	verify := func(raw []byte, pins []*receipts.AdapterPin) receipts.Code {
		r, err := receipts.ParseProjectionRecord(raw)
		if err == nil {
			err = receipts.VerifyProjectionSignature(r, pins, now)
		}
		if err == nil {
			return "VALID"
		}
		return receipts.ErrorCode(err)
	}
	mutate := func(f func(m map[string]any)) []byte {
		m := decode(t, v.Projection.Record).(map[string]any)
		f(m)
		return encode(t, m)
	}
	pinWith := func(f func(p *receipts.AdapterPin)) []*receipts.AdapterPin {
		p := *pins[0]
		f(&p)
		return []*receipts.AdapterPin{&p}
	}
	type input struct {
		record []byte
		pins   []*receipts.AdapterPin
	}
	mutations := map[string]func() input{
		"add_unknown_top_level_member": func() input {
			return input{mutate(func(m map[string]any) { m["extension"] = "x" }), pins}
		},
		"sign_with_legacy_v0_domain": func() input {
			// Re-sign the record's JCS body (without proof) under the v0
			// domain string instead of MEMORY-PROJECTION-RECORD-v1.
			m := decode(t, v.Projection.Record).(map[string]any)
			proof := m["proof"].(map[string]any)
			delete(m, "proof")
			body, err := receipts.Canonicalize(encode(t, m))
			if err != nil {
				t.Fatal(err)
			}
			sig := ed25519.Sign(adapterKey, append([]byte("AMEM-EMILIA-PROJECTION-RECORD-v0\x00"), body...))
			proof["signature_b64u"] = base64.RawURLEncoding.EncodeToString(sig)
			m["proof"] = proof
			return input{encode(t, m), pins}
		},
		"swap_delivered_entries": func() input {
			return input{mutate(func(m map[string]any) {
				d := m["delivered"].([]any)
				d[0], d[1] = d[1], d[0]
			}), pins}
		},
		"omit_delivered_entry": func() input {
			return input{mutate(func(m map[string]any) { m["delivered"] = m["delivered"].([]any)[:1] }), pins}
		},
		"duplicate_delivered_position": func() input {
			return input{mutate(func(m map[string]any) {
				m["delivered"].([]any)[1].(map[string]any)["position"] = json.Number("0")
			}), pins}
		},
		"increment_exclusions_total": func() input {
			return input{mutate(func(m map[string]any) {
				e := m["exclusions"].(map[string]any)
				n, _ := e["total"].(json.Number).Int64()
				e["total"] = json.Number(fmt.Sprint(n + 1))
			}), pins}
		},
		"set_model_use_established": func() input {
			return input{mutate(func(m map[string]any) {
				m["nonclaims"].(map[string]any)["model_use"] = "ESTABLISHED"
			}), pins}
		},
		"remove_adapter_pin": func() input { return input{v.Projection.Record, nil} },
		"revoke_adapter_key": func() input {
			return input{v.Projection.Record, pinWith(func(p *receipts.AdapterPin) {
				p.Status = "revoked"
				at := now.Add(-time.Second)
				p.RevokedAt = &at
			})}
		},
	}
	ran := 0
	var material []string
	for _, c := range v.Cases {
		if c.Mutation == nil {
			if got := verify(v.Projection.Record, pins); got != receipts.Code(c.Expect.Result) {
				t.Errorf("%s: %s, want %s", c.ID, got, c.Expect.Result)
			}
			ran++
			continue
		}
		f, ok := mutations[*c.Mutation]
		if !ok {
			material = append(material, *c.Mutation)
			continue
		}
		in := f()
		if got := verify(in.record, in.pins); got != receipts.Code(c.Expect.Result) {
			t.Errorf("%s (%s): %s, want %s", c.ID, *c.Mutation, got, c.Expect.Result)
		}
		ran++
	}
	if ran != len(mutations)+1 {
		t.Errorf("ran %d cases, want %d: the vector file changed", ran, len(mutations)+1)
	}
	// The rest are exactly the cases over the verification material.
	wantMaterial := []string{"advance_verification_time", "mutate_fragment_bytes", "mutate_recall_request_bytes", "mutate_selection_policy_bytes",
		"mutate_source_object_bytes", "mutate_trust_snapshot_bytes", "register_projection_twice", "relabel_native_source_result", "substitute_projection_bytes_only"}
	slices.Sort(material)
	if !slices.Equal(material, wantMaterial) {
		t.Errorf("cases left to the §7 verifier: %v, want %v", material, wantMaterial)
	}
	t.Logf("emilia-amem: %d of %d cases at receipt level give exactly their expected code; %d material cases run in verifier.TestInteropVectors", ran, len(v.Cases), len(material))
}

// TestJCSCyberphone: every input of the RFC 8785 reference corpus that
// strict I-JSON admits canonicalizes to the reference output byte for
// byte; the others are refused for their non-integral numbers (the
// profile's receipts carry integers only), and the reference library
// reproduces every output, so the corpus itself is checked.
func TestJCSCyberphone(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("vectors", "jcs-cyberphone", "input", "*.json"))
	if len(files) == 0 {
		t.Fatal("no JCS vectors")
	}
	var ok, refused []string
	for _, f := range files {
		name := filepath.Base(f)
		in := read(t, filepath.Join("jcs-cyberphone", "input", name))
		want := read(t, filepath.Join("jcs-cyberphone", "output", name))
		if ref, err := jcs.Transform(in); err != nil || !bytes.Equal(ref, want) {
			t.Errorf("%s: the reference library disagrees with the corpus: %v", name, err)
		}
		got, err := receipts.Canonicalize(in)
		if err != nil {
			if !strings.Contains(err.Error(), "number") {
				t.Errorf("%s: refused for a reason other than a non-integral number: %v", name, err)
			}
			refused = append(refused, name)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: canonical form\n%s\nwant\n%s", name, got, want)
		}
		ok = append(ok, name)
	}
	if len(ok) < 4 {
		t.Errorf("only %d inputs admitted", len(ok))
	}
	t.Logf("jcs-cyberphone: %d byte-identical (%s); %d refused for non-integral numbers (%s)", len(ok), strings.Join(ok, ", "), len(refused), strings.Join(refused, ", "))
}

// TestTraceSpecJCS: records whose key order differs between UTF-16 and
// code-point sorting verify over our canonical bytes.
func TestTraceSpecJCS(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("vectors", "trace-spec-jcs-ed25519", "0*.json"))
	if len(files) != 4 {
		t.Fatalf("found %d trace-spec vectors, want 4", len(files))
	}
	for _, f := range files {
		var vec struct {
			TrustedKey struct{ X string }         `json:"trusted_key"`
			Record     map[string]json.RawMessage `json:"record"`
		}
		if err := json.Unmarshal(read(t, filepath.Join("trace-spec-jcs-ed25519", filepath.Base(f))), &vec); err != nil {
			t.Fatal(err)
		}
		var sigText string
		if err := json.Unmarshal(vec.Record["signature"], &sigText); err != nil {
			t.Fatal(err)
		}
		delete(vec.Record, "signature")
		body, err := receipts.Canonicalize(encode(t, vec.Record))
		if err != nil {
			t.Fatal(err)
		}
		// A JWK "x": the raw key, unpadded base64url.
		pub, err := base64.RawURLEncoding.DecodeString(vec.TrustedKey.X)
		if err == nil {
			err = receipts.CheckPublicKey(pub)
		}
		if err != nil {
			t.Fatalf("%s: key: %v", f, err)
		}
		sig, err := base64.RawURLEncoding.DecodeString(sigText)
		if err != nil {
			t.Fatal(err)
		}
		if !receipts.VerifyEd25519(pub, body, sig) {
			t.Errorf("%s: the signature does not verify over our canonical bytes %s", filepath.Base(f), body)
		}
	}
	t.Logf("trace-spec-jcs-ed25519: 4 of 4 verify over our JCS bytes")
}

// TestEd25519Wycheproof: our key path loads every Wycheproof key, and our
// signature check gives every expected result.
func TestEd25519Wycheproof(t *testing.T) {
	var file struct {
		TestGroups []struct {
			PublicKey struct{ Pk string } `json:"publicKey"`
			Tests     []struct {
				TcID    int    `json:"tcId"`
				Comment string `json:"comment"`
				Msg     string `json:"msg"`
				Sig     string `json:"sig"`
				Result  string `json:"result"`
			} `json:"tests"`
		} `json:"testGroups"`
	}
	if err := json.Unmarshal(read(t, "wycheproof/ed25519_test.json"), &file); err != nil {
		t.Fatal(err)
	}
	n, valid := 0, 0
	for _, g := range file.TestGroups {
		pub, err := receipts.ParsePublicKey(g.PublicKey.Pk)
		if err != nil {
			t.Errorf("key %s refused: %v", g.PublicKey.Pk, err)
			continue
		}
		for _, tc := range g.Tests {
			n++
			msg, _ := hex.DecodeString(tc.Msg)
			sig, _ := hex.DecodeString(tc.Sig)
			got := receipts.VerifyEd25519(pub, msg, sig)
			if got != (tc.Result == "valid") {
				t.Errorf("tcId %d (%s): verify = %v, want %s", tc.TcID, tc.Comment, got, tc.Result)
			}
			if got {
				valid++
			}
		}
	}
	if n != 151 {
		t.Errorf("ran %d tests, want 151", n)
	}
	t.Logf("wycheproof: %d of %d as expected (%d valid, %d invalid)", n, n, valid, n-valid)
}

// TestEd25519CCTV: keys flagged low order, non-canonical or with a
// low-order component are refused when loaded; every other key loads, and
// no signature with a non-canonical R verifies under a loaded key.
func TestEd25519CCTV(t *testing.T) {
	var vectors []struct {
		Number int      `json:"number"`
		Key    string   `json:"key"`
		Sig    string   `json:"sig"`
		Msg    string   `json:"msg"`
		Flags  []string `json:"flags"`
	}
	if err := json.Unmarshal(read(t, "cctv-ed25519/ed25519vectors.json"), &vectors); err != nil {
		t.Fatal(err)
	}
	refused, loaded, accepted := 0, 0, 0
	for _, v := range vectors {
		weak := slices.Contains(v.Flags, "low_order_A") || slices.Contains(v.Flags, "non_canonical_A") || slices.Contains(v.Flags, "low_order_component_A")
		pub, err := receipts.ParsePublicKey(v.Key)
		if weak != (err != nil) {
			t.Errorf("vector %d, flags %v: ParsePublicKey = %v", v.Number, v.Flags, err)
		}
		if raw, _ := hex.DecodeString(v.Key); (receipts.CheckPublicKey(raw) != nil) != (err != nil) {
			t.Errorf("vector %d: ParsePublicKey and CheckPublicKey disagree", v.Number)
		}
		if err != nil {
			refused++
			continue
		}
		loaded++
		sig, _ := hex.DecodeString(v.Sig)
		if receipts.VerifyEd25519(pub, []byte(v.Msg), sig) {
			accepted++
			if slices.Contains(v.Flags, "non_canonical_R") {
				t.Errorf("vector %d: a non-canonical R verified", v.Number)
			}
		}
	}
	if refused == 0 || loaded == 0 {
		t.Errorf("refused %d, loaded %d", refused, loaded)
	}
	t.Logf("cctv-ed25519: %d vectors; %d keys refused (low order or non-canonical), %d loaded, %d signatures verified under loaded keys", len(vectors), refused, loaded, accepted)
}

// TestEd25519GoSignInput: the RFC 8032 test lines Go's crypto/ed25519 is
// checked against: each key loads, signing is deterministic and gives the
// listed signature, the signature verifies, and a flipped bit does not.
func TestEd25519GoSignInput(t *testing.T) {
	f, err := os.Open(filepath.Join("vectors", "ed25519-go-sign-input", "sign.input.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		parts := strings.Split(sc.Text(), ":")
		if len(parts) != 5 {
			t.Fatalf("line %d: %d fields", n+1, len(parts))
		}
		n++
		priv, _ := hex.DecodeString(parts[0])
		msg, _ := hex.DecodeString(parts[2])
		sigMsg, _ := hex.DecodeString(parts[3])
		pub, err := receipts.ParsePublicKey(parts[1])
		if err != nil {
			t.Errorf("line %d: key refused: %v", n, err)
			continue
		}
		key := ed25519.NewKeyFromSeed(priv[:32])
		if !key.Public().(ed25519.PublicKey).Equal(pub) {
			t.Errorf("line %d: the seed does not give the public key", n)
		}
		sig := ed25519.Sign(key, msg)
		if !bytes.Equal(sig, sigMsg[:ed25519.SignatureSize]) {
			t.Errorf("line %d: signature differs", n)
		}
		if !receipts.VerifyEd25519(pub, msg, sig) {
			t.Errorf("line %d: does not verify", n)
		}
		bad := bytes.Clone(sig)
		bad[n%64] ^= 1 << (n % 8)
		if receipts.VerifyEd25519(pub, msg, bad) {
			t.Errorf("line %d: a flipped bit verifies", n)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 128 {
		t.Errorf("ran %d lines, want 128", n)
	}
	t.Logf("ed25519-go-sign-input: %d of %d lines sign and verify, and fail with a flipped bit", n, n)
}

// TestJCSES6Numbers: the corpus's ES6 number formatting lines (IEEE 754
// bits, expected text). The profile's receipts carry only integers within
// ±(2^53−1): for those values the canonical form must be the expected text;
// every other value must be refused by the strict reader when written as
// the corpus writes it.
func TestJCSES6Numbers(t *testing.T) {
	raw := read(t, "jcs-cyberphone/es6numbers/es6testfile_first10k.txt")
	ints, refused := 0, 0
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		bitsHex, want, ok := strings.Cut(line, ",")
		if !ok {
			t.Fatalf("line %d: %q", i+1, line)
		}
		bits, err := strconv.ParseUint(bitsHex, 16, 64)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		f := math.Float64frombits(bits)
		if f == math.Trunc(f) && math.Abs(f) <= 1<<53-1 {
			ints++
			got, err := receipts.Canonicalize([]byte(strconv.FormatInt(int64(f), 10)))
			if err != nil || string(got) != want {
				t.Errorf("line %d: %s canonicalizes to %s (%v), want %s", i+1, bitsHex, got, err, want)
			}
			continue
		}
		if _, err := receipts.Canonicalize([]byte(want)); err == nil {
			t.Errorf("line %d: %s admitted; only safe integers are", i+1, want)
		}
		refused++
	}
	// (The bits of −0 format as "0"; the text "-0" itself is refused: an
	// integer of the profile has one spelling.)
	if _, err := receipts.Canonicalize([]byte("-0")); err == nil {
		t.Error("-0 admitted")
	}
	t.Logf("jcs-cyberphone es6numbers (first 10,000 lines): %d safe integers formatted as ES6 does; %d other values refused", ints, refused)
}
