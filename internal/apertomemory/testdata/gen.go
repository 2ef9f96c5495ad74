//go:build ignore

// Command gen writes testdata/memtrail-written.amem, the container the
// reference implementation is asked to read (see testdata/reference/README.md).
//
//	go run testdata/gen.go
package main

import (
	"crypto/ed25519"
	"crypto/sha256"
	"log"
	"os"

	"github.com/fxamacker/cbor/v2"
	"github.com/memtrail/memtrail/internal/apertomemory"
)

const passphrase = "memtrail written vault"

func key(label string) ed25519.PrivateKey {
	s := sha256.Sum256([]byte(label))
	return ed25519.NewKeyFromSeed(s[:])
}

func main() {
	w, err := apertomemory.NewWriter([]byte(passphrase))
	if err != nil {
		log.Fatal(err)
	}
	third := key("memtrail interop: accepted third party")
	stranger := key("memtrail interop: stranger")
	for _, s := range []string{"personal", "work"} {
		if _, err := w.AddScope(s); err != nil {
			log.Fatal(err)
		}
	}
	thirdID, err := w.Accept(third.Public().(ed25519.PublicKey))
	if err != nil {
		log.Fatal(err)
	}
	strangerID := apertomemory.KeyIDOf(stranger.Public().(ed25519.PublicKey))
	add := func(scope string, signer ed25519.PrivateKey, m *apertomemory.Memory) {
		if m.Type == 0 {
			m.Type = apertomemory.Semantic
		}
		m.Tool, m.Created = "memtrail/gen", 1750000000
		if _, err := w.SealBy(scope, m, signer); err != nil {
			log.Fatal(err)
		}
	}
	owner := w.Identity().SigningKey()
	add("work", owner, &apertomemory.Memory{Content: "prefers formal B2B emails", Confidence: 0.9, Tags: []string{"preferences", "email"}})
	add("personal", owner, &apertomemory.Memory{Type: apertomemory.Episodic, Content: "flew to Lisbon on 3 May\nback on the 9th", Confidence: 1, Session: "s-42", Updated: 1750000100})
	add("work", owner, &apertomemory.Memory{Type: apertomemory.Procedural, Content: "release: tag, build, push", Confidence: 0.25,
		Extra: map[uint64]cbor.RawMessage{30: {0x6b, 'n', 'e', 'w', 'e', 'r', ' ', 'f', 'i', 'e', 'l', 'd'}}})
	add("work", third, &apertomemory.Memory{Content: "the team standup is at 9:30", Confidence: 0.8})
	add("work", owner, &apertomemory.Memory{Content: "attested: the third party's legacy memory", Confidence: 0.7,
		Custody: &apertomemory.CustodyRecord{FromVersion: 1, ClaimedAuthor: thirdID, ResealedAt: 1755000000, ProvenAuthor: &thirdID}})
	add("personal", owner, &apertomemory.Memory{Content: "quarantined: origin unknown", Confidence: 0.5,
		Custody: &apertomemory.CustodyRecord{FromVersion: 1, ClaimedAuthor: strangerID, ResealedAt: 1755000000}})
	add("personal", stranger, &apertomemory.Memory{Content: "from a key the vault does not accept", Confidence: 0.6})
	if err := os.WriteFile("testdata/memtrail-written.amem", w.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}
