package gen

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/memtrail/memtrail/receipts"
)

// AuthorKey is the eight-byte author key identifier (b64u) the fixtures
// use: the one of the interop vectors' attested entry.
const AuthorKey = "0FMJy9O1Xzs"

// A SourceResult is what one delivered entry reports of its source object:
// derived_trust, authorship, whether author_key_id_b64u is a key
// ([AuthorKey]) or null, and custody_present.
type SourceResult struct {
	DerivedTrust string
	Authorship   string
	AuthorKey    bool
	Custody      bool
}

func (s SourceResult) String() string {
	key := "null"
	if s.AuthorKey {
		key = "key"
	}
	return fmt.Sprintf("%s/%s/%s/custody=%v", s.DerivedTrust, s.Authorship, key, s.Custody)
}

// SourceResults returns every combination of the draft's value sets:
// derived_trust ∈ {self, trusted, unverified} × authorship ∈ {signed,
// attested, unknown} × author key present or null × custody_present, 36
// in all.
func SourceResults() []SourceResult {
	var out []SourceResult
	for _, trust := range []string{"self", "trusted", "unverified"} {
		for _, authorship := range []string{"signed", "attested", "unknown"} {
			for _, key := range []bool{true, false} {
				for _, custody := range []bool{true, false} {
					out = append(out, SourceResult{trust, authorship, key, custody})
				}
			}
		}
	}
	return out
}

// AllowedByDraft01 is the rule of draft -01, section 4.3, as the
// interoperating verifier applies it, written out here apart from package
// receipts so that tests can hold the parser to it: attested authorship
// requires custody; unverified content has authorship unknown and no author
// key; verified content (self, trusted) has an author key and an authorship
// other than unknown.
func (s SourceResult) AllowedByDraft01() bool {
	if s.Authorship == "attested" && !s.Custody {
		return false
	}
	if s.DerivedTrust == "unverified" {
		return s.Authorship == "unknown" && !s.AuthorKey
	}
	return s.Authorship != "unknown" && s.AuthorKey
}

// Set writes s into a delivered entry decoded from JSON.
func (s SourceResult) Set(entry map[string]any) {
	entry["derived_trust"] = s.DerivedTrust
	entry["authorship"] = s.Authorship
	entry["author_key_id_b64u"] = nil
	if s.AuthorKey {
		entry["author_key_id_b64u"] = AuthorKey
	}
	entry["custody_present"] = s.Custody
}

// Resign decodes a projection record, lets edit change it, and signs it
// again under priv, as a producer that wrote the edited record would:
// Ed25519 over "MEMORY-PROJECTION-RECORD-v1" || 0x00 || JCS(record
// without proof). It returns the record's JCS bytes. Nothing is checked:
// the point is to make records a verifier must judge on their content.
func Resign(record []byte, priv ed25519.PrivateKey, edit func(m map[string]any)) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(record))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	edit(m)
	proof, ok := m["proof"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("gen: the record has no proof object")
	}
	delete(m, "proof")
	body, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if body, err = receipts.Canonicalize(body); err != nil {
		return nil, err
	}
	sig := ed25519.Sign(priv, append([]byte(receipts.ProjectionVersion+"\x00"), body...))
	proof["signature_b64u"] = base64.RawURLEncoding.EncodeToString(sig)
	m["proof"] = proof
	out, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return receipts.Canonicalize(out)
}
