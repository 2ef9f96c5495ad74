package main

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memtrail/memtrail/internal/apertomemory"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
)

// The containers the ApertoMemory reference implementation wrote
// (internal/apertomemory/testdata/reference/README.md).
const (
	referenceDir  = "../../internal/apertomemory/testdata/reference"
	referencePass = "memtrail reference vault"
)

const (
	projectPolicyVerified = `{"selection_policy":"urn:memtrail:selection-policy:v1","eligible_trust":["self","trusted"],"max_bytes":65536}`
	projectPolicyAll      = `{"selection_policy":"urn:memtrail:selection-policy:v1","eligible_trust":["self","trusted","unverified"],"max_bytes":65536}`
	projectVerifyPolicy   = `{"max_projection_age_sec":600,"max_trust_age_sec":600,"expected_source_profile":"draft-ferro-apertomemory-02","expected_context_frame_profile":"urn:apertomemory:context-frame:v0"}`
)

// projectEnv is a directory holding an adapter key, its pin, a request,
// the selection policies and a verification policy, and the memtrail
// binary to run there with the reference vaults' passphrase.
type projectEnv struct {
	t   *testing.T
	bin string
	dir string
	key ed25519.PrivateKey
	pub ed25519.PublicKey
}

func newProjectEnv(t *testing.T) *projectEnv {
	t.Helper()
	e := &projectEnv{t: t, bin: buildMemtrail(t), dir: t.TempDir()}
	var err error
	if e.pub, e.key, err = receipts.GenerateKey(); err != nil {
		t.Fatal(err)
	}
	if err := receipts.WritePrivateKeyFile(filepath.Join(e.dir, "adapter.pem"), e.key); err != nil {
		t.Fatal(err)
	}
	pin := fmt.Sprintf(`{"adapter_id":"urn:memtrail:adapter:dev","key_id":"dev-adapter-key","alg":"Ed25519","public_key_spki_b64u":%q,"status":"active","valid_from":"2020-01-01T00:00:00Z","valid_to":"2100-01-01T00:00:00Z","revoked_at":null}`,
		receipts.PublicKeySPKI(e.pub))
	for name, body := range map[string]string{"pin.json": pin, "request.json": `{"query":"what do I know about this user?"}`,
		"verified.json": projectPolicyVerified, "all.json": projectPolicyAll, "vpolicy.json": projectVerifyPolicy} {
		if err := os.WriteFile(filepath.Join(e.dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// run runs memtrail in the directory and returns its exit status, standard
// output and standard error.
func (e *projectEnv) run(args ...string) (int, string, string) {
	e.t.Helper()
	c := exec.Command(e.bin, args...)
	c.Dir = e.dir
	c.Env = append(os.Environ(), "AMEM_PASSPHRASE="+referencePass)
	var out, errb strings.Builder
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func (e *projectEnv) copyVault(name string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(referenceDir, name+".amem"))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, name+".amem"), b, 0o600); err != nil {
		e.t.Fatal(err)
	}
	return name + ".amem"
}

// verifyNative runs verify projection --vault on out/record.json and
// returns its exit status and report.
func (e *projectEnv) verifyNative(out, vault string, extra ...string) (int, *verifier.ProjectionReport, string) {
	e.t.Helper()
	args := append([]string{"verify", "projection", filepath.Join(out, "record.json"), "--adapters", "pin.json",
		"--material", filepath.Join(out, "material.json"), "--vault", vault, "--policy", "vpolicy.json", "--json", "-"}, extra...)
	code, stdout, stderr := e.run(args...)
	var rep verifier.ProjectionReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		e.t.Fatalf("verify projection: exit %d, no report: %v\n%s%s", code, err, stdout, stderr)
	}
	return code, &rep, stderr
}

// TestProjectReferenceVaults is the acceptance test of the producer over
// vaults memtrail did not write: for each container of the reference
// implementation, "memtrail project" delivers the eligible objects and
// counts the rest under the right reasons; "memtrail verify projection
// --vault" verifies the record natively with every step run (freshness,
// profiles and single use included); and, when MEMTRAIL_INTEROP_VERIFIER
// names EMILIA's packages/verify dist/memory-projection.js, the interop
// verifier accepts the same record and material.
func TestProjectReferenceVaults(t *testing.T) {
	e := newProjectEnv(t)
	interop := os.Getenv("MEMTRAIL_INTEROP_VERIFIER")
	for _, tc := range []struct {
		vault, policy string
		// delivered of objects, then authentication_failed,
		// schema_invalid, policy_filtered, context_limit
		summary, excluded string
	}{
		{"self", "verified", "delivered 4 of 4", "0, schema_invalid 0, policy_filtered 0, context_limit 0"},
		{"attested", "verified", "delivered 4 of 5", "0, schema_invalid 0, policy_filtered 1, context_limit 0"},
		{"attested", "all", "delivered 5 of 5", "0, schema_invalid 0, policy_filtered 0, context_limit 0"},
		{"unverified", "verified", "delivered 1 of 4", "2, schema_invalid 0, policy_filtered 1, context_limit 0"},
		{"unverified", "all", "delivered 4 of 4", "0, schema_invalid 0, policy_filtered 0, context_limit 0"},
		{"forged", "verified", "delivered 2 of 8", "4, schema_invalid 0, policy_filtered 2, context_limit 0"},
		{"forged", "all", "delivered 4 of 8", "4, schema_invalid 0, policy_filtered 0, context_limit 0"},
		{"legacy-v1", "verified", "delivered 0 of 2", "2, schema_invalid 0, policy_filtered 0, context_limit 0"},
		{"legacy-v1", "all", "delivered 2 of 2", "0, schema_invalid 0, policy_filtered 0, context_limit 0"},
	} {
		t.Run(tc.vault+"/"+tc.policy, func(t *testing.T) {
			vault := e.copyVault(tc.vault)
			out := "out-" + tc.vault + "-" + tc.policy
			code, stdout, stderr := e.run("project", "--vault", vault, "--key", "adapter.pem", "--request", "request.json",
				"--selection-policy", tc.policy+".json", "--out", out)
			if code != 0 {
				t.Fatalf("project: exit %d\n%s%s", code, stdout, stderr)
			}
			if !strings.Contains(stdout, ": "+tc.summary+" objects, ") || !strings.Contains(stdout, "authentication_failed "+tc.excluded+"\n") {
				t.Errorf("project said\n%s\nwant %q and authentication_failed %s", stdout, tc.summary, tc.excluded)
			}
			code, rep, stderr := e.verifyNative(out, vault, "--registry", "seen-"+tc.vault+"-"+tc.policy+".reg")
			if code != 0 || !rep.Valid() || rep.VerificationScope != verifier.ScopeFull || !strings.HasPrefix(rep.NativeSource, receipts.SourceProfileApertoMemory+": ") {
				t.Fatalf("verify projection --vault: exit %d, %s, scope %s, native %q\n%s", code, rep.Result, rep.VerificationScope, rep.NativeSource, stderr)
			}
			if len(rep.Checks) != 18 {
				t.Errorf("%d checks, want 18", len(rep.Checks))
			}
			for _, c := range rep.Checks {
				if c.Outcome != verifier.Passed {
					t.Errorf("check %s: %s (%s)", c.Check, c.Outcome, c.Detail)
				}
			}
			t.Run("interop", func(t *testing.T) {
				if interop == "" {
					t.Skip(interopSkip)
				}
				res := runInteropVerifier(t, interop, e.dir, out, e.pub)
				if !res.Valid || res.VerificationScope != verifier.ScopeFull {
					t.Errorf("interop verifier: %+v", res)
				}
			})
		})
	}
}

const interopSkip = "MEMTRAIL_INTEROP_VERIFIER is not set: the cross-check with the interop verifier did not run (set it to the path of EMILIA's packages/verify/dist/memory-projection.js; node must be on PATH)"

// TestProjectHostile alters what a record says of its vault and signs it
// again with the adapter's key, and changes the vault's keyring after the
// projection: the native verification refuses both, and so does the
// interop verifier when it is available, fed the native results.
func TestProjectHostile(t *testing.T) {
	e := newProjectEnv(t)
	vault := e.copyVault("attested")
	if code, stdout, stderr := e.run("project", "--vault", vault, "--key", "adapter.pem", "--request", "request.json",
		"--selection-policy", "verified.json", "--out", "out"); code != 0 {
		t.Fatalf("project: exit %d\n%s%s", code, stdout, stderr)
	}
	recordBytes, err := os.ReadFile(filepath.Join(e.dir, "out", "record.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := receipts.ParseProjectionRecord(recordBytes[:len(recordBytes)-1])
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := os.ReadFile(filepath.Join(e.dir, "out", "material.json"))
	m, err := verifier.ParseMaterial(mb)
	if err != nil {
		t.Fatal(err)
	}

	// A trusted third party's memory relabelled as the owner's own, a
	// consistent source result under a valid signature.
	t.Run("native result altered and re-signed", func(t *testing.T) {
		i := -1
		for j, d := range r.Delivered {
			if d.DerivedTrust == "trusted" && d.Authorship == "signed" {
				i = j
			}
		}
		if i < 0 {
			t.Fatal("no trusted, signed entry")
		}
		frags := make([]receipts.Fragment, len(r.Delivered))
		for j, d := range r.Delivered {
			frags[j] = receipts.Fragment{FormatVersion: d.FormatVersion, SealedObjectDigest: d.SealedObjectDigest, Bytes: m.Fragments[j],
				DerivedTrust: d.DerivedTrust, Authorship: d.Authorship, AuthorKeyIDB64u: d.AuthorKeyIDB64u, CustodyPresent: d.CustodyPresent}
		}
		frags[i].DerivedTrust = "self"
		sc := r.SelectionContext
		altered, _, err := receipts.NewProjection(&receipts.ProjectionInput{SourceProfile: r.SourceProfile, ProjectionID: r.ProjectionID + ":altered",
			CreatedAt: r.CreatedAt, AdapterID: r.Adapter.ID, KeyID: r.Adapter.KeyID, RecallRequestDigest: sc.RecallRequestDigest,
			SelectionPolicyDigest: sc.SelectionPolicyDigest, TrustSnapshotDigest: sc.TrustSnapshotDigest, TrustEvaluatedAt: sc.TrustEvaluatedAt,
			ContextFrameProfile: sc.ContextFrameProfile, Fragments: frags, Exclusions: r.Exclusions.ByReason}, e.key)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(e.dir, "altered"), 0o755)
		os.WriteFile(filepath.Join(e.dir, "altered", "record.json"), altered.Canonical(), 0o644)
		os.WriteFile(filepath.Join(e.dir, "altered", "material.json"), mb, 0o644)
		code, rep, _ := e.verifyNative("altered", vault)
		if code != 1 || rep.Result != string(receipts.CodeNativeSourceResultMismatch) {
			t.Errorf("verify --vault: exit %d, %s, want 1, native_source_result_mismatch", code, rep.Result)
		}
		t.Run("interop", func(t *testing.T) {
			interop := os.Getenv("MEMTRAIL_INTEROP_VERIFIER")
			if interop == "" {
				t.Skip(interopSkip)
			}
			res := runInteropVerifier(t, interop, e.dir, "altered", e.pub)
			if res.Valid || res.Code != string(receipts.CodeNativeSourceResultMismatch) {
				t.Errorf("interop verifier: %+v, want native_source_result_mismatch", res)
			}
		})
	})

	// The third party's key is no longer accepted: the vault's keyring is
	// not the one the record's trust was evaluated under.
	t.Run("keyring changed", func(t *testing.T) {
		c, err := apertomemory.ReadContainerFile(filepath.Join(e.dir, vault))
		if err != nil {
			t.Fatal(err)
		}
		c.KnownKeys = nil
		os.WriteFile(filepath.Join(e.dir, "changed.amem"), c.Marshal(), 0o600)
		code, rep, _ := e.verifyNative("out", "changed.amem")
		if code != 1 || rep.Result != string(receipts.CodeTrustSnapshotDigestMismatch) {
			t.Errorf("verify --vault: exit %d, %s, want 1, trust_snapshot_digest_mismatch", code, rep.Result)
		}
	})

	// Another vault's passphrase: a clear error, exit 2, no report.
	t.Run("wrong passphrase", func(t *testing.T) {
		os.WriteFile(filepath.Join(e.dir, "wrong.txt"), []byte("not the passphrase\n"), 0o600)
		code, stdout, stderr := e.run("verify", "projection", "out/record.json", "--adapters", "pin.json", "--material", "out/material.json",
			"--vault", vault, "--passphrase-file", "wrong.txt")
		if code != 2 || stdout != "" || !strings.Contains(stderr, "passphrase does not derive the container's identity") || strings.Contains(stderr, "not the passphrase") {
			t.Errorf("exit %d\n%s%s", code, stdout, stderr)
		}
	})
}

type interopResult struct {
	Valid             bool   `json:"valid"`
	VerificationScope string `json:"verification_scope"`
	Code              string `json:"code"`
	Message           string `json:"message"`
}

// interopScript runs EMILIA's verifyMemoryProjectionRecordV1 on a record
// and memtrail's verification material: the bytes the record commits to,
// and, as the native source verifier it delegates step 5 to, the native
// results memtrail derived from the vault.
const interopScript = `
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
const [verifierPath, recordPath, materialPath, spki] = process.argv.slice(2);
const { verifyMemoryProjectionRecordV1 } = await import(pathToFileURL(verifierPath).href);
const record = JSON.parse(readFileSync(recordPath, 'utf8'));
const m = JSON.parse(readFileSync(materialPath, 'utf8'));
const b = (s) => new Uint8Array(Buffer.from(s, 'base64url'));
const material = {
  recallRequestBytes: b(m.recall_request_b64u),
  selectionPolicyBytes: b(m.selection_policy_b64u),
  trustSnapshotBytes: b(m.trust_snapshot_b64u),
  sourceObjectBytesByPosition: m.source_object_b64u_by_position.map(b),
  fragmentBytesByPosition: m.fragment_b64u_by_position.map(b),
  projectionBytes: b(m.projection_b64u),
  verifySourceEntry: ({ position }) => m.native_source_results_by_position[position],
};
const policy = {
  verificationTime: new Date().toISOString(),
  maxProjectionAgeSec: 600,
  maxTrustAgeSec: 600,
  expectedSourceProfile: 'draft-ferro-apertomemory-02',
  expectedContextFrameProfile: 'urn:apertomemory:context-frame:v0',
  adapterKeys: { [record.adapter.key_id]: { public_key_spki_b64u: spki, status: 'active',
    valid_from: '2020-01-01T00:00:00Z', valid_to: '2100-01-01T00:00:00Z', revoked_at: null } },
};
try {
  console.log(JSON.stringify(verifyMemoryProjectionRecordV1(record, material, policy)));
} catch (e) {
  console.log(JSON.stringify({ valid: false, code: e.code ?? 'exception', message: String(e.message) }));
}
`

func runInteropVerifier(t *testing.T, verifierPath, dir, out string, pub ed25519.PublicKey) interopResult {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("MEMTRAIL_INTEROP_VERIFIER is set but there is no node: %v", err)
	}
	script := filepath.Join(t.TempDir(), "interop.mjs")
	if err := os.WriteFile(script, []byte(interopScript), 0o644); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(node, script, verifierPath, filepath.Join(dir, out, "record.json"), filepath.Join(dir, out, "material.json"), receipts.PublicKeySPKI(pub))
	b, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, b)
	}
	var res interopResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("node said %s", b)
	}
	t.Logf("interop verifier on %s: %s", out, strings.TrimSpace(string(b)))
	return res
}

// TestVaultListReference lists a vault the reference implementation wrote,
// with hostile objects in it: each refused object is named with its code
// and exclusion class, the rest with their derived trust, and the opt-in
// reads only what cannot be authenticated.
func TestVaultListReference(t *testing.T) {
	e := newProjectEnv(t)
	vault := e.copyVault("forged")
	code, stdout, stderr := e.run("vault", "list", vault)
	if code != 0 {
		t.Fatalf("vault list: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"8 objects", "refused: aead_tag_mismatch (authentication_failed)", "refused: version_downgrade (authentication_failed)",
		"refused: inconsistent_kid (authentication_failed)", "refused: author_key_mismatch (authentication_failed)", " self signed author=", "confidence=absent",
		" unverified unknown author=none "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("vault list: no %q in\n%s", want, stdout)
		}
	}
	if n := strings.Count(stdout, "refused:"); n != 4 {
		t.Errorf("%d refused, want 4\n%s", n, stdout)
	}
	_, stdout, _ = e.run("vault", "list", e.copyVault("legacy-v1"))
	if n := strings.Count(stdout, "refused: legacy_v1_unverified (authentication_failed)"); n != 2 {
		t.Errorf("legacy-v1 fail-closed:\n%s", stdout)
	}
	_, stdout, _ = e.run("vault", "list", "legacy-v1.amem", "--allow-unverified")
	if n := strings.Count(stdout, " unverified unknown author=none "); n != 2 {
		t.Errorf("legacy-v1 under the opt-in:\n%s", stdout)
	}
}
