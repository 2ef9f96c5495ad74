// Package projector is the Memory Projection Record producer over an
// ApertoMemory vault: the producer algorithm of
// draft-ferro-schrock-memory-projection-record-01, §7, with the ApertoMemory
// source profile of its §5, and the native source verifier that
// re-derives a record's source results from the sealed bytes (§8, step 5).
//
// # Producing a projection
//
// [Project] takes an .amem container, the owner's identity (derived once,
// with Argon2id, from the passphrase), the exact recall-request bytes and
// the exact selection-policy bytes, and:
//
//  1. evaluates trust: it notes trust_evaluated_at, opens every object of
//     the container natively with [apertomemory.Container.OpenWithIdentity]
//     against the keyring the container carries (the owner and its
//     known_keys), and encodes that keyring's trust snapshot (-01 §5.1);
//  2. commits to the request, the policy and the snapshot by their
//     SHA-256 digests;
//  3. counts every object it does not deliver under exactly one reason:
//     an object the source profile refuses counts under the class of its
//     refusal ([apertomemory.Refusal.Class]: authentication_failed or
//     schema_invalid); an opened object the policy does not admit (trust
//     level, scope, mem-type) is policy_filtered; an eligible object that
//     does not fit the policy's limits is context_limit;
//  4. ranks the eligible objects by confidence, highest first (an absent
//     confidence, which includes one outside [0, 1], ranks below every
//     present one), then by recency (updated, or else created, latest
//     first), then by sealed_object_digest in ascending byte order, and
//     takes them in that order while they fit: an object whose fragment
//     does not fit in the bytes left, or that comes after max_objects
//     were taken, is omitted, and a smaller one after it may still fit;
//  5. frames each delivered object with context-frame v0 (-01 §5.2), from
//     the labels the source profile derived, never recomputed here;
//  6. signs the record with [receipts.NewProjection] (created_at is taken
//     after trust_evaluated_at) and returns it with the projection bytes
//     and the verification material.
//
// The recall request is committed to, not interpreted: which objects are
// selected is the policy's alone, so a relying party that holds the policy
// bytes knows every rule that chose them.
//
// # Data, not instructions
//
// The projection carries memory content from the vault owner (trust self)
// and from others (trusted, unverified). Content that is not self is data
// written by someone other than the owner, or by nobody anyone can prove;
// whoever places a projection in a model's context must keep it delimited
// as data and never give it instruction-level privilege (ApertoMemory
// §8.3, §15.2). Each fragment's first line names its trust so that this
// stays possible after the bytes leave the producer; the delimiters are
// labels, not a boundary a body cannot imitate, and only the digests bind.
package projector

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/memtrail/memtrail/internal/apertomemory"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
)

// MaxRequestSize caps the recall request.
const MaxRequestSize = 1 << 20

// The exclusion reasons of the record (draft §4.4).
const (
	ReasonAuthenticationFailed = "authentication_failed"
	ReasonSchemaInvalid        = "schema_invalid"
	ReasonPolicyFiltered       = "policy_filtered"
	ReasonContextLimit         = "context_limit"
)

// Input is what [Project] works on.
type Input struct {
	// Container is the vault, parsed.
	Container *apertomemory.Container
	// Identity is the vault owner's identity, derived from the passphrase
	// and the container's salt (apertomemory.DeriveIdentity): the one
	// Argon2id run of a projection.
	Identity *apertomemory.Identity
	// Request is the exact recall-request bytes (at most MaxRequestSize).
	Request []byte
	// Policy is the exact selection-policy bytes (see [Policy]).
	Policy []byte

	// AdapterID, KeyID and Key are the adapter's identity and signing key;
	// ProjectionID is the record's projection_id (a URI).
	AdapterID    string
	KeyID        string
	Key          ed25519.PrivateKey
	ProjectionID string

	// Clock returns the current time; nil means time.Now. It is read
	// twice: for trust_evaluated_at, before the vault is opened, and for
	// created_at, before signing.
	Clock func() time.Time
}

// Exclusion is one object that was not delivered, and why. The record
// carries only the counts (draft §4.4, §10); this list is for the
// producer's own report and must not be disclosed with the record.
type Exclusion struct {
	// Index is the object's position in the container.
	Index  int
	Digest string
	Reason string
	// Detail is the refusal code (for the first two reasons) or the rule
	// that excluded the object.
	Detail string
}

// Result is one projection: the signed record, the projection bytes and
// the verification material, which belong together.
type Result struct {
	Record     *receipts.ProjectionRecord
	Projection []byte
	// Material is the verification material of the record: the request,
	// policy and trust-snapshot bytes, the sealed source objects, the
	// fragments, the projection and the native source results, by
	// position.
	Material *verifier.Material
	// Delivered are the container indexes of the delivered objects, in
	// projection order.
	Delivered []int
	// Excluded lists every object not delivered, in container order.
	Excluded []Exclusion
	// TrustEvaluatedAt is when the trust state was read.
	TrustEvaluatedAt time.Time
}

// Project runs the producer algorithm (see the package documentation).
func Project(in *Input) (*Result, error) {
	if in.Container == nil || in.Identity == nil {
		return nil, errors.New("projector: no vault")
	}
	if len(in.Request) > MaxRequestSize {
		return nil, fmt.Errorf("projector: recall request is %d bytes, more than %d", len(in.Request), MaxRequestSize)
	}
	pol, err := ParsePolicy(in.Policy)
	if err != nil {
		return nil, err
	}
	clock := in.Clock
	if clock == nil {
		clock = time.Now
	}

	// 1. Trust, evaluated now, and every object opened against it.
	trustAt := clock().UTC().Truncate(time.Millisecond)
	vault, err := in.Container.OpenWithIdentity(in.Identity, &apertomemory.OpenOptions{AllowUnverified: pol.AllowsUnverified()})
	if err != nil {
		return nil, fmt.Errorf("projector: %w", err)
	}
	snapshot := vault.Keyring.TrustSnapshot()

	// 3. One reason for each object not delivered.
	res := &Result{TrustEvaluatedAt: trustAt}
	type candidate struct {
		e      *apertomemory.Entry
		digest string
	}
	var eligible []candidate
	for i := range vault.Entries {
		e := &vault.Entries[i]
		d := e.Digest()
		if e.Err != nil {
			reason, code := ReasonSchemaInvalid, "refused"
			if r := apertomemory.RefusalOf(e.Err); r != nil {
				code = r.Code
				if r.Class == apertomemory.ClassAuthentication {
					reason = ReasonAuthenticationFailed
				}
			}
			res.Excluded = append(res.Excluded, Exclusion{Index: e.Index, Digest: d, Reason: reason, Detail: code})
			continue
		}
		if why := pol.filters(e.Object, e.Scope); why != "" {
			res.Excluded = append(res.Excluded, Exclusion{Index: e.Index, Digest: d, Reason: ReasonPolicyFiltered, Detail: why})
			continue
		}
		eligible = append(eligible, candidate{e, d})
	}

	// 4. Rank, then take what fits.
	slices.SortStableFunc(eligible, func(a, b candidate) int {
		if c := compareConfidence(a.e.Object.Confidence, b.e.Object.Confidence); c != 0 {
			return c
		}
		if ra, rb := recency(a.e.Object), recency(b.e.Object); ra != rb {
			if ra > rb {
				return -1
			}
			return 1
		}
		return bytes.Compare([]byte(a.digest), []byte(b.digest))
	})
	var (
		frags []receipts.Fragment
		used  int64
		m     = &verifier.Material{
			RecallRequest:   nonNil(in.Request),
			SelectionPolicy: nonNil(in.Policy),
			TrustSnapshot:   snapshot,
			SourceObjects:   [][]byte{},
			Fragments:       [][]byte{},
			NativeResults:   []verifier.NativeResult{},
		}
		limited []Exclusion
	)
	for _, c := range eligible {
		o := c.e.Object
		// 5. The frame, from the labels the source profile derived.
		frag := o.ContextFragment()
		switch {
		case len(frags) >= pol.maxObjects():
			limited = append(limited, Exclusion{Index: c.e.Index, Digest: c.digest, Reason: ReasonContextLimit, Detail: "max_objects reached"})
			continue
		case used+int64(len(frag)) > pol.MaxBytes:
			limited = append(limited, Exclusion{Index: c.e.Index, Digest: c.digest, Reason: ReasonContextLimit,
				Detail: fmt.Sprintf("its %d-byte fragment does not fit in the %d bytes left of max_bytes", len(frag), pol.MaxBytes-used)})
			continue
		}
		used += int64(len(frag))
		nr := NativeResult(o, c.e.Sealed)
		frags = append(frags, receipts.Fragment{FormatVersion: nr.FormatVersion, SealedObjectDigest: c.digest, Bytes: frag,
			DerivedTrust: nr.DerivedTrust, Authorship: nr.Authorship, AuthorKeyIDB64u: nr.AuthorKeyIDB64u, CustodyPresent: nr.CustodyPresent})
		res.Delivered = append(res.Delivered, c.e.Index)
		m.SourceObjects = append(m.SourceObjects, c.e.Sealed)
		m.Fragments = append(m.Fragments, frag)
		m.NativeResults = append(m.NativeResults, nr)
	}
	res.Excluded = append(res.Excluded, limited...)
	slices.SortFunc(res.Excluded, func(a, b Exclusion) int { return a.Index - b.Index })
	counts := map[string]int64{}
	for _, x := range res.Excluded {
		counts[x.Reason]++
	}

	// 6. Sign, strictly after trust was evaluated.
	createdAt := clock().UTC().Truncate(time.Millisecond)
	if createdAt.Before(trustAt) {
		createdAt = trustAt
	}
	r, projection, err := receipts.NewProjection(&receipts.ProjectionInput{
		SourceProfile:         receipts.SourceProfileApertoMemory,
		ProjectionID:          in.ProjectionID,
		CreatedAt:             createdAt,
		AdapterID:             in.AdapterID,
		KeyID:                 in.KeyID,
		RecallRequestDigest:   receipts.Digest(in.Request),
		SelectionPolicyDigest: receipts.Digest(in.Policy),
		TrustSnapshotDigest:   apertomemory.TrustSnapshotDigest(snapshot),
		TrustEvaluatedAt:      trustAt,
		ContextFrameProfile:   receipts.ContextFrameApertoMemory,
		Fragments:             frags,
		Exclusions:            counts,
	}, in.Key)
	if err != nil {
		return nil, fmt.Errorf("projector: %w", err)
	}
	m.Projection = nonNil(projection)
	res.Record, res.Projection, res.Material = r, m.Projection, m
	return res, nil
}

// NativeResult is the source result of one opened object, in the interop
// shape the verification material carries.
func NativeResult(o *apertomemory.Object, sealed []byte) verifier.NativeResult {
	var author *string
	if o.Author != nil {
		s := o.Author.B64u()
		author = &s
	}
	return verifier.NativeResult{
		Valid:              true,
		FormatVersion:      int64(o.FormatVersion),
		SealedObjectDigest: apertomemory.SealedDigest(sealed),
		DerivedTrust:       string(o.Trust),
		Authorship:         string(o.Authorship),
		AuthorKeyIDB64u:    author,
		CustodyPresent:     o.CustodyPresent(),
	}
}

// compareConfidence orders higher confidence first, and an absent one
// after every present one.
func compareConfidence(a, b *float64) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	case *a > *b:
		return -1
	case *a < *b:
		return 1
	}
	return 0
}

// recency is an object's updated time, or its created time when it was
// never updated (epoch seconds; 0 when neither is known).
func recency(o *apertomemory.Object) uint64 {
	return max(o.Updated, o.Created)
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
