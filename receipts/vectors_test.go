package receipts

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// vectorsDir holds the vectors, copied with their SOURCES notes.
const vectorsDir = "../conformance/vectors"

func readVector(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorsDir, path))
	if err != nil {
		t.Fatalf("conformance vectors are missing (conformance/vectors): %v", err)
	}
	return b
}

// emiliaVectors is the part of memory-projection-record.v1.vectors.json the
// receipts tests use; the full §7 run lives in the verifier.
type emiliaVectors struct {
	AdapterPin         json.RawMessage `json:"adapter_pin"`
	VerificationPolicy struct {
		VerificationTime string `json:"verification_time"`
	} `json:"verification_policy"`
	Projection struct {
		Record json.RawMessage `json:"record"`
	} `json:"projection"`
}

func loadEmilia(t testing.TB) emiliaVectors {
	var v emiliaVectors
	if err := json.Unmarshal(readVector(t, "emilia-amem/memory-projection-record.v1.vectors.json"), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// draftEnvelope returns the canonical bytes of the ECCR draft's envelope.
func draftEnvelope(t testing.TB) []byte {
	t.Helper()
	full, err := parseJSON(readVector(t, "eccr-draft/eccr-v1-draft-vector.json"), 100)
	if err != nil {
		t.Fatal(err)
	}
	env, ok := full.get("envelope")
	if !ok {
		t.Fatal("the draft vector has no envelope")
	}
	return appendCanonical(nil, env)
}
