// Package gen makes valid signed receipts for tests, benchmarks, the
// development trust file and the load tool: one adapter, one compactor and
// one tombstone issuer, and receipts of every kind from them.
package gen

import (
	"crypto/ed25519"
	"fmt"
	"strings"
	"time"

	"github.com/memtrail/memtrail/receipts"
)

// Signers holds one key of each role.
type Signers struct {
	AdapterID    string
	AdapterKeyID string
	Adapter      ed25519.PrivateKey
	Compactor    ed25519.PrivateKey
	Issuer       ed25519.PrivateKey
}

// NewSigners generates fresh keys.
func NewSigners() (*Signers, error) {
	s := &Signers{AdapterID: "urn:memtrail:adapter:dev", AdapterKeyID: "dev-adapter-key"}
	var err error
	for _, k := range []*ed25519.PrivateKey{&s.Adapter, &s.Compactor, &s.Issuer} {
		if _, *k, err = receipts.GenerateKey(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Deterministic returns signers whose keys derive from seed, for
// reproducible fixtures.
func Deterministic(seed byte) *Signers {
	key := func(role byte) ed25519.PrivateKey {
		b := make([]byte, 32)
		for i := range b {
			b[i] = seed ^ role ^ byte(i)
		}
		return ed25519.NewKeyFromSeed(b)
	}
	return &Signers{AdapterID: "urn:memtrail:adapter:dev", AdapterKeyID: "dev-adapter-key", Adapter: key(1), Compactor: key(2), Issuer: key(3)}
}

func pub(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

// Trust returns a trust file accepting these signers from validFrom on.
func (s *Signers) Trust(validFrom time.Time) *receipts.Trust {
	cp, ip := pub(s.Compactor), pub(s.Issuer)
	return &receipts.Trust{
		Adapters:   []*receipts.AdapterPin{{AdapterID: s.AdapterID, KeyID: s.AdapterKeyID, PublicKey: pub(s.Adapter), Status: "active", ValidFrom: validFrom}},
		Compactors: receipts.Keyring{receipts.KeyID(cp): {Name: "dev-compactor", PublicKey: cp, KID: receipts.KeyID(cp), ValidFrom: validFrom}},
		Issuers:    receipts.Keyring{receipts.KeyID(ip): {Name: "dev-issuer", PublicKey: ip, KID: receipts.KeyID(ip), ValidFrom: validFrom}},
		Freshness:  receipts.DefaultFreshness,
		Lattice:    receipts.DefaultLattice,
	}
}

// Projection returns a signed projection record with n fragments of about
// fragmentSize bytes each, created at now, and its projection bytes.
func (s *Signers) Projection(id string, now time.Time, n, fragmentSize int) (*receipts.ProjectionRecord, []byte, error) {
	author := "0FMJy9O1Xzs"
	frags := make([]receipts.Fragment, n)
	for i := range frags {
		body := fmt.Sprintf("[memory %d of %s]\n", i, id)
		if len(body) < fragmentSize {
			body += strings.Repeat("x", fragmentSize-len(body)-1) + "\n"
		}
		frags[i] = receipts.Fragment{
			FormatVersion:      2,
			SealedObjectDigest: receipts.Digest([]byte(fmt.Sprint("object", i, id))),
			Bytes:              []byte(body),
			DerivedTrust:       []string{"trusted", "self", "unverified"}[i%3],
			Authorship:         []string{"attested", "signed", "unknown"}[i%3],
			CustodyPresent:     i%3 == 0 || i%2 == 0, // attested authorship needs custody (draft -01 §4.3)
		}
		if i%3 != 2 {
			frags[i].AuthorKeyIDB64u = &author
		}
	}
	return receipts.NewProjection(&receipts.ProjectionInput{
		SourceProfile:         "draft-ferro-apertomemory-02",
		ProjectionID:          id,
		CreatedAt:             now,
		AdapterID:             s.AdapterID,
		KeyID:                 s.AdapterKeyID,
		RecallRequestDigest:   receipts.Digest([]byte("request " + id)),
		SelectionPolicyDigest: receipts.Digest([]byte("policy")),
		TrustSnapshotDigest:   receipts.Digest([]byte("snapshot")),
		TrustEvaluatedAt:      now.Add(-time.Second),
		ContextFrameProfile:   "urn:memtrail:context-frame:dev",
		Fragments:             frags,
		Exclusions:            map[string]int64{"context_limit": 1, "policy_filtered": 2},
	}, s.Adapter)
}

// Items returns n manifest items named by prefix, with labels cycling
// through the default lattice's lower half and no expiry.
func Items(prefix string, n int) []receipts.ManifestItem {
	labels := []string{"PUBLIC", "INTERNAL", "CONFIDENTIAL"}
	out := make([]receipts.ManifestItem, n)
	for i := range out {
		out[i] = receipts.ManifestItem{ItemDigest: receipts.Digest([]byte(fmt.Sprint(prefix, "/", i))), Sensitivity: labels[i%len(labels)]}
	}
	return out
}

// Compaction returns a compaction over items with the ceiling and
// retention the profile requires, superseding supersedes (if not "") and
// holding purged in its Bloom filter.
func (s *Signers) Compaction(id string, items []receipts.ManifestItem, supersedes string, purged []string, lattice *receipts.Lattice) (*receipts.Compaction, *receipts.Manifest, error) {
	mf, err := receipts.NewManifest(items)
	if err != nil {
		return nil, nil, err
	}
	if lattice == nil {
		lattice = receipts.DefaultLattice
	}
	labels := make([]string, len(items))
	for i := range items {
		labels[i] = items[i].Sensitivity
	}
	epoch := NoExpiryEpoch
	if e, ok := mf.MinExpiry(); ok {
		epoch = e
	}
	bloom := receipts.EmptyBloomFilter
	if len(purged) > 0 {
		f := receipts.NewBloomFilter(len(purged), 1e-9)
		for _, p := range purged {
			f.Add(receipts.DigestBytes(p))
		}
		bloom = f.Encode()
	}
	c, err := receipts.SignCompaction(&receipts.Compaction{
		EventID:                     id,
		SourceItemsMerkleRoot:       mf.Root(),
		SourceItemCount:             int64(len(items)),
		CompactedOutputHash:         receipts.Digest([]byte("summary of " + id)),
		InheritedSensitivityCeiling: lattice.LeastUpperBound(labels),
		RetentionPurgeEpoch:         epoch,
		TombstoneBloomFilterB64:     bloom,
		Supersedes:                  supersedes,
	}, s.Compactor)
	return c, mf, err
}

// NoExpiryEpoch is the retention_purge_epoch [Signers.Compaction] writes
// when no item of the manifest expires (the profile sets no bound then):
// 4102444800, 2100-01-01T00:00:00Z.
const NoExpiryEpoch int64 = 4102444800

// Tombstone returns a signed tombstone of item.
func (s *Signers) Tombstone(id, item string, purgedAt time.Time) (*receipts.Tombstone, error) {
	return receipts.SignTombstone(&receipts.Tombstone{TombstoneID: id, ItemDigest: item, PurgedAt: purgedAt.Unix(), Reason: "regulatory_erasure"}, s.Issuer)
}

// CompactionSubmission returns the submission body for a compaction.
func CompactionSubmission(c *receipts.Compaction, mf *receipts.Manifest) []byte {
	b := make([]byte, 0, len(c.Canonical())+len(mf.Canonical())+32)
	b = append(b, `{"eccr":`...)
	b = append(b, c.Canonical()...)
	b = append(b, `,"manifest":`...)
	b = append(b, mf.Canonical()...)
	return append(b, '}')
}
