package verifier_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
	"github.com/memtrail/memtrail/verifier/backend"
)

// interopSeeds returns the interop vector's material and policy.
func interopSeeds(f *testing.F) (material, policy []byte) {
	raw, err := os.ReadFile(interopFile)
	if err != nil {
		f.Fatalf("shared vectors are missing: %v", err)
	}
	var v struct {
		Policy     json.RawMessage `json:"verification_policy"`
		Projection struct {
			Material json.RawMessage `json:"verification_material"`
		} `json:"projection"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		f.Fatal(err)
	}
	return v.Projection.Material, v.Policy
}

func FuzzParseMaterial(f *testing.F) {
	material, _ := interopSeeds(f)
	f.Add(material)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"fragment_b64u_by_position":[],"projection_b64u":""}`))
	f.Add([]byte(`{"native_source_results_by_position":[{"valid":false,"formatVersion":1,"sealedObjectDigest":"x","derivedTrust":"self","authorship":"unknown","authorKeyIdB64u":null,"custodyPresent":false}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := verifier.ParseMaterial(data)
		if err != nil {
			return
		}
		back, err := verifier.ParseMaterial(m.Marshal())
		if err != nil {
			t.Fatalf("Marshal output does not parse: %v\n%s", err, m.Marshal())
		}
		if !reflect.DeepEqual(m, back) {
			t.Fatalf("round trip changed the material:\n%#v\n%#v", m, back)
		}
	})
}

func FuzzParseVerificationPolicy(f *testing.F) {
	_, policy := interopSeeds(f)
	f.Add(policy)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"max_clock_skew_sec":0,"verification_time":"2026-07-29T17:01:00.123456789Z"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := verifier.ParseVerificationPolicy(data)
		if err != nil {
			return
		}
		back, err := verifier.ParseVerificationPolicy(p.Marshal())
		if err != nil {
			t.Fatalf("Marshal output does not parse: %v\n%s", err, p.Marshal())
		}
		// Times are written with milliseconds, as receipts write them.
		if p.VerificationTime != nil {
			tr := p.VerificationTime.Truncate(time.Millisecond)
			p.VerificationTime = &tr
		}
		if !reflect.DeepEqual(p, back) {
			t.Fatalf("round trip changed the policy:\n%#v\n%#v", p, back)
		}
	})
}

func FuzzParseRegistry(f *testing.F) {
	d := receipts.Digest([]byte("seed"))
	f.Add([]byte(verifier.RegistryHeader + "\n"))
	f.Add([]byte(verifier.RegistryHeader + "\n2026-07-29T17:01:00.000Z " + d + " urn:memory-projection:apertomemory:composition-01\n"))
	f.Add([]byte(verifier.RegistryHeader + "\n2026-07-29T17:01:00.000Z " + d + " urn:p:1\n2026-07-29T17:01:00.001Z " + d + " urn:p:2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := verifier.ParseRegistry(data)
		if err != nil || len(data) == 0 {
			return
		}
		// The format is canonical: what parses is written back exactly.
		if out := r.Format(); !bytes.Equal(out, data) {
			t.Fatalf("Format = %q, want the input %q", out, data)
		}
	})
}

func FuzzParseAuditState(f *testing.F) {
	// Seeds: states of small logs with every kind of entry and finding.
	key := newLogKey(f)
	sc := newScenario(f)
	dir := f.TempDir()
	items := benchItemsOf(0, 0)
	writeRaw(f, dir, key, [][]byte{sc.proj("urn:p:0"), sc.comp(dir, "urn:c:0", items, ""), sc.tomb("urn:t:0", items[0].ItemDigest, sc.now()),
		[]byte("not a receipt"), sc.proj("urn:p:0"), sc.comp(dir, "urn:c:1", items[1:], "urn:c:0", items[0].ItemDigest)})
	src, err := backend.NewDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	_, st, err := verifier.AuditLog(context.Background(), src, verifier.AuditOptions{Policy: key.policy, Trust: sc.trust, At: sc.base})
	if err != nil || st == nil {
		f.Fatalf("seed audit: %v", err)
	}
	f.Add(st.Marshal())
	f.Add([]byte(strings.Replace(string(st.Marshal()), `"time_floor":"`, `"time_floor":null,"x":"`, 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := verifier.ParseAuditState(data)
		if err != nil {
			return
		}
		out := s.Marshal()
		back, err := verifier.ParseAuditState(out)
		if err != nil {
			t.Fatalf("Marshal output does not parse: %v\n%s", err, out)
		}
		if !bytes.Equal(back.Marshal(), out) {
			t.Fatalf("Marshal is not stable:\n%s\n%s", out, back.Marshal())
		}
	})
}

// FuzzVerifyProjectionMaterial verifies the interop record against
// arbitrary material: it must never fail to give a result.
func FuzzVerifyProjectionMaterial(f *testing.F) {
	material, policy := interopSeeds(f)
	f.Add(material)
	f.Add([]byte(`{"fragment_b64u_by_position":["AA"],"projection_b64u":"AA"}`))
	f.Add([]byte(`{"fragment_b64u_by_position":["w6k","_w"],"projection_b64u":"w6n_"}`)) // UTF-8, then not
	raw, _ := os.ReadFile(interopFile)
	var v struct {
		Pin        json.RawMessage `json:"adapter_pin"`
		Projection struct {
			Record json.RawMessage `json:"record"`
		} `json:"projection"`
	}
	json.Unmarshal(raw, &v)
	pins, _ := receipts.ParseAdapterPins(v.Pin)
	pol, _ := verifier.ParseVerificationPolicy(policy)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := verifier.ParseMaterial(data)
		if err != nil {
			return
		}
		rep, err := verifier.VerifyProjection(context.Background(), v.Projection.Record, verifier.ProjectionOptions{Pins: pins, Material: m, Policy: pol})
		if err != nil || rep.Result == "" {
			t.Fatalf("VerifyProjection = %v, %v", rep, err)
		}
		if rep.Valid() != (rep.VerificationScope != "" && !strings.Contains(string(rep.JSON()), `"failed"`)) {
			t.Fatalf("result %s disagrees with the checks", rep.Result)
		}
	})
}
