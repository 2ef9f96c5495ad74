package projector

import (
	"fmt"
	"testing"

	"github.com/memtrail/memtrail/internal/apertomemory"
)

// BenchmarkProject10k projects from a vault of 10,000 objects (two
// scopes, confidences spread over [0, 1]) under a policy that delivers at
// most 100 of them in 16 KiB: every object is opened and verified, ranked,
// and the delivered ones framed, then the record is signed. "identity"
// starts from the owner's identity already derived; "passphrase" adds the
// one Argon2id run a projection costs, once for the vault and never per
// object (Project takes the identity, not the passphrase).
func BenchmarkProject10k(b *testing.B) {
	pass := []byte("benchmark vault passphrase")
	w, err := apertomemory.NewWriter(pass)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range []string{"personal", "work"} {
		if _, err := w.AddScope(s); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 10_000 {
		scope := "work"
		if i%2 == 0 {
			scope = "personal"
		}
		m := &apertomemory.Memory{Type: apertomemory.Semantic, Confidence: float64(i%1000) / 1000, Tool: "bench/1",
			Created: uint64(1_750_000_000 + i), Tags: []string{"bench"},
			Content: fmt.Sprintf("memory %d: a memory of ordinary length, about as long as a preference or a fact tends to be", i)}
		if _, err := w.Seal(scope, m); err != nil {
			b.Fatal(err)
		}
	}
	data := w.Bytes()
	policy := []byte(`{"selection_policy":"urn:memtrail:selection-policy:v1","eligible_trust":["self","trusted"],"max_bytes":16384,"max_objects":100}`)
	b.Logf("container: %d bytes", len(data))
	run := func(b *testing.B, identity func(*apertomemory.Container) *apertomemory.Identity) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			c, err := apertomemory.ParseContainer(data)
			if err != nil {
				b.Fatal(err)
			}
			res, err := Project(&Input{Container: c, Identity: identity(c), Request: []byte("{}"), Policy: policy,
				AdapterID: "urn:memtrail:adapter:bench", KeyID: "bench", Key: testKey, ProjectionID: "urn:p:bench"})
			if err != nil {
				b.Fatal(err)
			}
			if len(res.Record.Delivered)+int(res.Record.Exclusions.Total) != 10_000 || res.Record.Exclusions.ByReason[ReasonContextLimit] == 0 {
				b.Fatalf("delivered %d, excluded %v", len(res.Record.Delivered), res.Record.Exclusions.ByReason)
			}
		}
		b.ReportMetric(float64(b.N)*10_000/b.Elapsed().Seconds(), "objects/s")
	}
	b.Run("identity", func(b *testing.B) {
		run(b, func(*apertomemory.Container) *apertomemory.Identity { return w.Identity() })
	})
	b.Run("passphrase", func(b *testing.B) {
		run(b, func(c *apertomemory.Container) *apertomemory.Identity {
			id, err := apertomemory.DeriveIdentity(pass, c.Salt[:])
			if err != nil {
				b.Fatal(err)
			}
			return id
		})
	})
}
