package receipts

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// A Fragment is one selected source object and the exact framed bytes it
// contributes to a projection.
type Fragment struct {
	FormatVersion      int64
	SealedObjectDigest string
	Bytes              []byte
	DerivedTrust       string
	Authorship         string
	AuthorKeyIDB64u    *string
	CustodyPresent     bool
}

// A ProjectionInput is everything a producer decided before signing: the
// selection context, the ordered fragments and the exclusion counts.
type ProjectionInput struct {
	SourceProfile         string
	ProjectionID          string
	CreatedAt             time.Time
	AdapterID             string
	KeyID                 string
	RecallRequestDigest   string
	SelectionPolicyDigest string
	TrustSnapshotDigest   string
	TrustEvaluatedAt      time.Time
	ContextFrameProfile   string
	Fragments             []Fragment
	Exclusions            map[string]int64 // by reason; missing reasons count 0
}

// NewProjection is the producer algorithm of section 6 of the draft, from
// step 4 on: it hashes each fragment in order, concatenates them into the
// projection, commits to its length and digest, fixes the four nonclaims to
// NOT_ESTABLISHED, counts the exclusions and signs the closed record. It
// refuses to sign what a verifier would refuse: a projection that is not
// UTF-8, or an entry whose source result draft -01 rules out
// ([CheckSourceResult]). It
// returns the parsed record and the projection bytes, which the caller must
// deliver together as one result.
func NewProjection(in *ProjectionInput, priv ed25519.PrivateKey) (*ProjectionRecord, []byte, error) {
	var projection []byte
	delivered := make([]value, len(in.Fragments))
	for i, f := range in.Fragments {
		author := vnull()
		if f.AuthorKeyIDB64u != nil {
			author = vstr(*f.AuthorKeyIDB64u)
		}
		delivered[i] = vobj(
			m("position", vint(int64(i))),
			m("object", vobj(m("format_version", vint(f.FormatVersion)), m("sealed_object_digest", vstr(f.SealedObjectDigest)))),
			m("context_fragment_digest", vstr(Digest(f.Bytes))),
			m("derived_trust", vstr(f.DerivedTrust)),
			m("authorship", vstr(f.Authorship)),
			m("author_key_id_b64u", author),
			m("custody_present", vbool(f.CustodyPresent)),
		)
		projection = append(projection, f.Bytes...)
	}
	if !utf8.Valid(projection) {
		// Draft -01 section 4.3: the projection is UTF-8, and only UTF-8.
		for i, f := range in.Fragments {
			if !utf8.Valid(f.Bytes) {
				return nil, nil, fmt.Errorf("receipts: fragment %d is not UTF-8, and a projection is UTF-8 bytes only", i)
			}
		}
		return nil, nil, errors.New("receipts: the fragments concatenate to bytes that are not UTF-8, and a projection is UTF-8 bytes only")
	}
	var total int64
	reasons := make([]member, len(ExclusionReasons))
	for i, r := range ExclusionReasons {
		n := in.Exclusions[r]
		total += n
		reasons[i] = m(r, vint(n))
	}
	for r := range in.Exclusions {
		if !contains(ExclusionReasons, r) {
			return nil, nil, fmt.Errorf("receipts: unknown exclusion reason %q", r)
		}
	}
	nonclaims := make([]member, len(NonclaimNames))
	for i, n := range NonclaimNames {
		nonclaims[i] = m(n, vstr(NotEstablished))
	}
	record := vobj(
		m("@version", vstr(ProjectionVersion)),
		m("source_profile", vstr(in.SourceProfile)),
		m("projection_id", vstr(in.ProjectionID)),
		m("created_at", vstr(FormatTimestamp(in.CreatedAt))),
		m("adapter", vobj(m("id", vstr(in.AdapterID)), m("key_id", vstr(in.KeyID)))),
		m("selection_context", vobj(
			m("recall_request_digest", vstr(in.RecallRequestDigest)),
			m("selection_policy_digest", vstr(in.SelectionPolicyDigest)),
			m("trust_snapshot_digest", vstr(in.TrustSnapshotDigest)),
			m("trust_evaluated_at", vstr(FormatTimestamp(in.TrustEvaluatedAt))),
			m("context_frame_profile", vstr(in.ContextFrameProfile)),
		)),
		m("delivered", varr(delivered)),
		m("exclusions", vobj(m("total", vint(total)), m("by_reason", vobj(reasons...)))),
		m("projection", vobj(m("encoding", vstr("utf-8")), m("byte_length", vint(int64(len(projection)))), m("digest", vstr(Digest(projection))))),
		m("nonclaims", vobj(nonclaims...)),
	)
	signed := append([]byte(projectionDomain+"\x00"), appendCanonical(nil, &record)...)
	sig := ed25519.Sign(priv, signed)
	record.members = append(record.members, m("proof", vobj(
		m("alg", vstr("Ed25519")),
		m("key_id", vstr(in.KeyID)),
		m("signature_b64u", vstr(EncodeB64u(sig))),
	)))
	r, err := projectionFromTree(&record, nil, 1024+len(projection)+len(in.Fragments)*400)
	if err != nil {
		return nil, nil, fmt.Errorf("receipts: producer built an invalid record: %w", err)
	}
	return r, projection, nil
}
