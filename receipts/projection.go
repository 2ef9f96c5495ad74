package receipts

import (
	"crypto/ed25519"
	"strconv"
	"time"
)

// ProjectionVersion is the @version of a Memory Projection Record v1.
const ProjectionVersion = "MEMORY-PROJECTION-RECORD-v1"

// projectionDomain is prefixed, with one zero octet, to the canonical record
// (without proof) to form the signed bytes.
const projectionDomain = "MEMORY-PROJECTION-RECORD-v1"

// MaxProjectionRecordSize caps the input to ParseProjectionRecord. A logged
// record must also have a canonical form of at most MaxLeafSize bytes.
const MaxProjectionRecordSize = 1 << 20

// MaxDelivered caps the delivered entries of one record, as the v1 schema
// does.
const MaxDelivered = 65535

// Closed enumerations of MEMORY-PROJECTION-RECORD-v1.
var (
	DerivedTrustValues = []string{"self", "trusted", "unverified"}
	AuthorshipValues   = []string{"signed", "attested", "unknown"}
	ExclusionReasons   = []string{"authentication_failed", "schema_invalid", "policy_filtered", "context_limit"}
	NonclaimNames      = []string{"model_use", "action_linkage", "action_authorization", "execution_outcome"}
)

// Source and context-frame profiles whose rules the parser knows.
const (
	// SourceProfileApertoMemory is the ApertoMemory source profile of
	// draft -01, section 5. Its author key identifiers are eight bytes:
	// the first eight bytes of SHA-256 of the author's Ed25519 key.
	SourceProfileApertoMemory = "draft-ferro-apertomemory-02"
	// ContextFrameApertoMemory is its context-frame profile (section 5.2).
	ContextFrameApertoMemory = "urn:apertomemory:context-frame:v0"
	// SourceProfilePlain is this profile's source profile for plain files
	// (docs/profile.md): a source object is a file's exact bytes, its
	// format_version is 1, and since nothing authenticates a plain file
	// every entry is unverified, with authorship unknown, no author key
	// and no custody. memtrail sign projection writes it.
	SourceProfilePlain = "urn:memtrail:source-profile:plain"
	// ContextFramePlain is the context frame of plain files: the fragment
	// is the file's exact bytes, unframed.
	ContextFramePlain = "urn:memtrail:context-frame:plain"
)

// apertoMemoryKeyIDSize is the length of an ApertoMemory key identifier.
const apertoMemoryKeyIDSize = 8

// NotEstablished is the only value a nonclaim may take.
const NotEstablished = "NOT_ESTABLISHED"

// A ProjectionRecord is a parsed, structurally valid Memory Projection
// Record v1. Times are kept both parsed and as written, because the signed
// bytes carry the text.
type ProjectionRecord struct {
	SourceProfile    string
	ProjectionID     string
	CreatedAt        time.Time
	CreatedAtText    string
	Adapter          AdapterRef
	SelectionContext SelectionContext
	Delivered        []DeliveredEntry
	Exclusions       Exclusions
	Projection       ProjectionCommitment
	Nonclaims        map[string]string // the four nonclaims as written
	Proof            ProjectionProof

	signed    []byte // the signed bytes: domain || 0x00 || JCS(record without proof)
	canonical []byte // JCS(record), the log leaf
}

// AdapterRef names the producing adapter and its key.
type AdapterRef struct {
	ID    string
	KeyID string
}

// SelectionContext holds the commitments to the selection inputs.
type SelectionContext struct {
	RecallRequestDigest   string
	SelectionPolicyDigest string
	TrustSnapshotDigest   string
	TrustEvaluatedAt      time.Time
	TrustEvaluatedAtText  string
	ContextFrameProfile   string
}

// DeliveredEntry is one selected source object and its context fragment.
type DeliveredEntry struct {
	Position              int64
	FormatVersion         int64
	SealedObjectDigest    string
	ContextFragmentDigest string
	DerivedTrust          string
	Authorship            string
	AuthorKeyIDB64u       *string // nil when the source profile resolved no author
	CustodyPresent        bool
}

// Exclusions counts the excluded candidates by closed reason.
type Exclusions struct {
	Total    int64
	ByReason map[string]int64
}

// ProjectionCommitment commits to the complete projection bytes.
type ProjectionCommitment struct {
	Encoding   string
	ByteLength int64
	Digest     string
}

// ProjectionProof is the record's signature.
type ProjectionProof struct {
	Alg          string
	KeyID        string
	Signature    []byte
	SignatureB64 string
}

// SignedBytes returns the bytes the adapter signed:
// "MEMORY-PROJECTION-RECORD-v1" || 0x00 || JCS(record without proof).
func (r *ProjectionRecord) SignedBytes() []byte { return r.signed }

// Canonical returns JCS(record), proof included: the record's log leaf.
func (r *ProjectionRecord) Canonical() []byte { return r.canonical }

var (
	projectionMembers = []string{"@version", "source_profile", "projection_id", "created_at", "adapter",
		"selection_context", "delivered", "exclusions", "projection", "nonclaims", "proof"}
	adapterMembers          = []string{"id", "key_id"}
	selectionContextMembers = []string{"recall_request_digest", "selection_policy_digest", "trust_snapshot_digest",
		"trust_evaluated_at", "context_frame_profile"}
	deliveredMembers = []string{"position", "object", "context_fragment_digest", "derived_trust", "authorship",
		"author_key_id_b64u", "custody_present"}
	objectMembers           = []string{"format_version", "sealed_object_digest"}
	exclusionsMembers       = []string{"total", "by_reason"}
	projectionCommitMembers = []string{"encoding", "byte_length", "digest"}
	proofMembers            = []string{"alg", "key_id", "signature_b64u"}
)

// maxShortString caps the free-text members (profiles, key ids).
const maxShortString = 1024

// ParseProjectionRecord parses data as a Memory Projection Record v1 and
// checks everything that needs no key, material or clock, in this order:
//
//  1. strict I-JSON, exact member sets at every level, member types, the
//     closed enumerations, timestamps, digests and base64url
//     (CodeRecordInvalid);
//  2. delivered positions are 0, 1, 2, ... in order (CodeDeliveredOrderInvalid);
//  3. every delivered entry's source result is one draft -01 allows
//     (CodeSourceResultInvalid; see [CheckSourceResult]);
//  4. exclusions.total is the sum of the reasons (CodeExclusionCountMismatch);
//  5. every nonclaim is NOT_ESTABLISHED (CodeNonclaimInvalid).
//
// Step 1 includes one rule across members: trust_evaluated_at may not be
// later than created_at, since the producer evaluates trust before it
// selects and signs (section 6, steps 1 and 5).
//
// The signature is checked by VerifyProjectionSignature.
func ParseProjectionRecord(data []byte) (*ProjectionRecord, error) {
	if len(data) > MaxProjectionRecordSize {
		return nil, refuse(CodeTooLarge, "", "record is %d bytes, more than the %d allowed", len(data), MaxProjectionRecordSize)
	}
	doc, err := parseDocument(data, MaxDelivered, receiptValues(MaxDelivered))
	if err != nil {
		return nil, &Error{Code: CodeRecordInvalid, Reason: "not strict I-JSON", Err: err}
	}
	return projectionFromTree(&doc.value, doc, len(data))
}

// projectionFromTree decodes tree; doc, if not nil, is the document tree
// was parsed from, whose bytes may already be canonical.
func projectionFromTree(tree *value, doc *document, sizeHint int) (*ProjectionRecord, error) {
	d := &decoder{code: CodeRecordInvalid}
	r := &ProjectionRecord{}
	top := d.object(tree, "", projectionMembers, nil)
	d.constant(top, "", "@version", ProjectionVersion)
	r.SourceProfile = d.boundedString(top, "", "source_profile", maxShortString)
	r.ProjectionID = d.uri(top, "", "projection_id")
	r.CreatedAt, r.CreatedAtText = d.timestamp(top, "", "created_at")

	ad := d.object(d.member(top, "adapter"), "adapter", adapterMembers, nil)
	r.Adapter.ID = d.uri(ad, "adapter", "id")
	r.Adapter.KeyID = d.boundedString(ad, "adapter", "key_id", maxShortString)

	sc := d.object(d.member(top, "selection_context"), "selection_context", selectionContextMembers, nil)
	r.SelectionContext.RecallRequestDigest = d.digest(sc, "selection_context", "recall_request_digest")
	r.SelectionContext.SelectionPolicyDigest = d.digest(sc, "selection_context", "selection_policy_digest")
	r.SelectionContext.TrustSnapshotDigest = d.digest(sc, "selection_context", "trust_snapshot_digest")
	r.SelectionContext.TrustEvaluatedAt, r.SelectionContext.TrustEvaluatedAtText = d.timestamp(sc, "selection_context", "trust_evaluated_at")
	r.SelectionContext.ContextFrameProfile = d.boundedString(sc, "selection_context", "context_frame_profile", maxShortString)

	dl := d.member(top, "delivered")
	if d.err == nil && dl.kind != kindArray {
		d.fail("delivered", "must be an array, not %s", dl.kind)
	}
	if d.err == nil {
		r.Delivered = make([]DeliveredEntry, len(dl.elems))
		for i := range dl.elems {
			path := "delivered[" + strconv.Itoa(i) + "]"
			decodeDelivered(d, &dl.elems[i], path, &r.Delivered[i])
			if d.err != nil {
				break
			}
		}
	}

	ex := d.object(d.member(top, "exclusions"), "exclusions", exclusionsMembers, nil)
	r.Exclusions.Total = d.integer(ex, "exclusions", "total", 0, maxSafeInteger)
	br := d.object(d.member(ex, "by_reason"), "exclusions.by_reason", ExclusionReasons, nil)
	if d.err == nil {
		r.Exclusions.ByReason = make(map[string]int64, len(ExclusionReasons))
		for _, reason := range ExclusionReasons {
			r.Exclusions.ByReason[reason] = d.integer(br, "exclusions.by_reason", reason, 0, maxSafeInteger)
		}
	}

	pc := d.object(d.member(top, "projection"), "projection", projectionCommitMembers, nil)
	d.constant(pc, "projection", "encoding", "utf-8")
	r.Projection.Encoding = "utf-8"
	r.Projection.ByteLength = d.integer(pc, "projection", "byte_length", 0, maxSafeInteger)
	r.Projection.Digest = d.digest(pc, "projection", "digest")

	nc := d.object(d.member(top, "nonclaims"), "nonclaims", NonclaimNames, nil)
	if d.err == nil {
		r.Nonclaims = make(map[string]string, len(NonclaimNames))
		for _, name := range NonclaimNames {
			r.Nonclaims[name] = d.str(nc, "nonclaims", name)
		}
	}

	pf := d.object(d.member(top, "proof"), "proof", proofMembers, nil)
	r.Proof.Alg = d.str(pf, "proof", "alg")
	if d.err == nil && r.Proof.Alg != "Ed25519" {
		d.fail("proof.alg", "must be \"Ed25519\"")
	}
	r.Proof.KeyID = d.boundedString(pf, "proof", "key_id", maxShortString)
	r.Proof.SignatureB64 = d.str(pf, "proof", "signature_b64u")
	if d.err == nil {
		sig, ok := DecodeB64u(r.Proof.SignatureB64)
		if !ok || len(sig) != ed25519.SignatureSize {
			d.fail("proof.signature_b64u", "must be the unpadded base64url of a 64-byte Ed25519 signature")
		}
		r.Proof.Signature = sig
	}
	if d.err == nil && r.Proof.KeyID != r.Adapter.KeyID {
		d.fail("proof.key_id", "must equal adapter.key_id")
	}
	if d.err != nil {
		return nil, d.err
	}

	if r.SelectionContext.TrustEvaluatedAt.After(r.CreatedAt) {
		d.fail("selection_context.trust_evaluated_at", "is after created_at; trust is evaluated before the record is made")
		return nil, d.err
	}

	// Rules over the whole record, each with its own code.
	for i := range r.Delivered {
		if r.Delivered[i].Position != int64(i) {
			return nil, refuse(CodeDeliveredOrderInvalid, "delivered["+strconv.Itoa(i)+"].position",
				"is %d; positions must be 0, 1, 2, ... in order", r.Delivered[i].Position)
		}
	}
	for i := range r.Delivered {
		if err := CheckSourceResult(r.SourceProfile, &r.Delivered[i], "delivered["+strconv.Itoa(i)+"]"); err != nil {
			return nil, err
		}
	}
	var sum int64
	for _, reason := range ExclusionReasons {
		sum += r.Exclusions.ByReason[reason]
	}
	if sum != r.Exclusions.Total {
		return nil, refuse(CodeExclusionCountMismatch, "exclusions.total", "is %d but the reasons sum to %d", r.Exclusions.Total, sum)
	}
	for _, name := range NonclaimNames {
		if r.Nonclaims[name] != NotEstablished {
			return nil, refuse(CodeNonclaimInvalid, "nonclaims."+name, "must be %q", NotEstablished)
		}
	}

	r.canonical, r.signed = canonicalPair(doc, tree, projectionDomain+"\x00", "proof", sizeHint)
	return r, nil
}

// CheckSourceResult checks that entry e, at path in a record of the given
// source profile, reports a source result draft -01 allows
// (CodeSourceResultInvalid otherwise):
//
//   - attested authorship requires custody_present true (section 4.3);
//   - unverified content has authorship unknown and a null author key
//     (section 4.3);
//   - verified content (self, trusted) reports an author: a non-null
//     author key and an authorship other than unknown (trust is derived
//     from the key that verified the object, so a verified object always
//     has one; section 10 keeps unverified content distinguishable);
//   - under the ApertoMemory source profile, an author key is the b64u of
//     eight bytes (sections 5.1 and 5.2);
//   - under this profile's plain-file source profile, every entry is
//     unverified, without custody, of format_version 1.
//
// The record does not carry the source objects, so this is what can be
// checked of the source results without them; with them, the verifier
// also compares the native results.
func CheckSourceResult(sourceProfile string, e *DeliveredEntry, path string) error {
	switch {
	case e.Authorship == "attested" && !e.CustodyPresent:
		return refuse(CodeSourceResultInvalid, path+".custody_present", "is false, but attested authorship requires custody (draft -01 section 4.3)")
	case e.DerivedTrust == "unverified" && e.Authorship != "unknown":
		return refuse(CodeSourceResultInvalid, path+".authorship", "is %q, but unverified content has authorship \"unknown\" (draft -01 section 4.3)", e.Authorship)
	case e.DerivedTrust == "unverified" && e.AuthorKeyIDB64u != nil:
		return refuse(CodeSourceResultInvalid, path+".author_key_id_b64u", "is not null, but unverified content reports no author key (draft -01 section 4.3)")
	case e.DerivedTrust != "unverified" && e.Authorship == "unknown":
		return refuse(CodeSourceResultInvalid, path+".authorship", "is \"unknown\", but %s content was verified under an author's key and reports its authorship", e.DerivedTrust)
	case e.DerivedTrust != "unverified" && e.AuthorKeyIDB64u == nil:
		return refuse(CodeSourceResultInvalid, path+".author_key_id_b64u", "is null, but %s content was verified under an author's key and reports it", e.DerivedTrust)
	}
	switch sourceProfile {
	case SourceProfileApertoMemory:
		if e.AuthorKeyIDB64u != nil {
			if b, _ := DecodeB64u(*e.AuthorKeyIDB64u); len(b) != apertoMemoryKeyIDSize {
				return refuse(CodeSourceResultInvalid, path+".author_key_id_b64u", "is %d bytes; an ApertoMemory author key identifier is %d (draft -01 section 5.2)", len(b), apertoMemoryKeyIDSize)
			}
		}
	case SourceProfilePlain:
		switch {
		case e.DerivedTrust != "unverified":
			return refuse(CodeSourceResultInvalid, path+".derived_trust", "is %q, but nothing authenticates a plain file: its entries are \"unverified\" (%s)", e.DerivedTrust, SourceProfilePlain)
		case e.CustodyPresent:
			return refuse(CodeSourceResultInvalid, path+".custody_present", "is true, but a plain file has no custody record (%s)", SourceProfilePlain)
		case e.FormatVersion != 1:
			return refuse(CodeSourceResultInvalid, path+".object.format_version", "is %d; the only format of %s is 1", e.FormatVersion, SourceProfilePlain)
		}
	}
	return nil
}

func decodeDelivered(d *decoder, v *value, path string, e *DeliveredEntry) {
	o := d.object(v, path, deliveredMembers, nil)
	e.Position = d.integer(o, path, "position", 0, maxSafeInteger)
	obj := d.object(d.member(o, "object"), path+".object", objectMembers, nil)
	e.FormatVersion = d.integer(obj, path+".object", "format_version", 1, maxSafeInteger)
	e.SealedObjectDigest = d.digest(obj, path+".object", "sealed_object_digest")
	e.ContextFragmentDigest = d.digest(o, path, "context_fragment_digest")
	e.DerivedTrust = d.str(o, path, "derived_trust")
	if d.err == nil && !contains(DerivedTrustValues, e.DerivedTrust) {
		d.fail(path+".derived_trust", "must be one of \"self\", \"trusted\", \"unverified\"")
	}
	e.Authorship = d.str(o, path, "authorship")
	if d.err == nil && !contains(AuthorshipValues, e.Authorship) {
		d.fail(path+".authorship", "must be one of \"signed\", \"attested\", \"unknown\"")
	}
	ak := d.member(o, "author_key_id_b64u")
	if d.err == nil {
		switch {
		case ak.kind == kindNull:
			e.AuthorKeyIDB64u = nil
		case ak.kind == kindString && len(ak.str) >= 2 && len(ak.str) <= maxShortString && isB64u(ak.str):
			s := ak.str
			e.AuthorKeyIDB64u = &s
		default:
			d.fail(path+".author_key_id_b64u", "must be null or unpadded base64url of at least 2 characters")
		}
	}
	e.CustodyPresent = d.boolean(o, path, "custody_present")
}
