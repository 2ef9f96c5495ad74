package receipts

import (
	"errors"
	"fmt"
)

// A Code is one of the closed refusal codes. The first seventeen are the codes
// of the interoperating MEMORY-PROJECTION-RECORD-v1 implementations and are
// spelled exactly as they spell them; the rest cover cases those codes do not
// (compactions, tombstones, key windows, freshness, size) and are defined by
// this profile. docs/profile.md lists each with the rule that produces it.
type Code string

// Codes shared with the interoperating MEMORY-PROJECTION-RECORD-v1
// implementations.
const (
	CodeRecordInvalid                   Code = "record_invalid"
	CodeSignatureInvalid                Code = "signature_invalid"
	CodeDeliveredOrderInvalid           Code = "delivered_order_invalid"
	CodeSourceObjectDigestMismatch      Code = "source_object_digest_mismatch"
	CodeFragmentDigestMismatch          Code = "fragment_digest_mismatch"
	CodeProjectionConcatenationMismatch Code = "projection_fragment_concatenation_mismatch"
	CodeRecallRequestDigestMismatch     Code = "recall_request_digest_mismatch"
	CodeSelectionPolicyDigestMismatch   Code = "selection_policy_digest_mismatch"
	CodeTrustSnapshotDigestMismatch     Code = "trust_snapshot_digest_mismatch"
	CodeExclusionCountMismatch          Code = "exclusion_count_mismatch"
	CodeNonclaimInvalid                 Code = "nonclaim_invalid"
	CodeAdapterKeyNotPinned             Code = "adapter_key_not_pinned"
	CodeAdapterKeyRevoked               Code = "adapter_key_revoked"
	CodeTrustSnapshotStale              Code = "trust_snapshot_stale"
	CodeNativeSourceResultMismatch      Code = "native_source_result_mismatch"
	CodeProjectionReplay                Code = "projection_replay"
	// CodeSourceResultInvalid: a delivered entry reports a source result
	// that draft -01 rules out (section 4.3: attested authorship without
	// custody, unverified content with an author, verified content
	// without one) or that its source profile cannot produce (an
	// ApertoMemory author key that is not eight bytes; a plain file
	// reported as anything but unverified).
	CodeSourceResultInvalid Code = "source_result_invalid"
)

// Codes this profile adds.
const (
	// CodeAdapterKeyExpired: the pinned adapter key was not valid at the
	// record's created_at (before valid_from, or at or after valid_to).
	CodeAdapterKeyExpired Code = "adapter_key_expired"
	// CodeRecordStale: created_at is older than the freshness policy allows.
	CodeRecordStale Code = "record_stale"
	// CodeRecordFromFuture: created_at or trust_evaluated_at is later than
	// the verification time plus the allowed clock skew.
	CodeRecordFromFuture Code = "record_from_future"
	// CodeProfileMismatch: source_profile or context_frame_profile is not
	// the one the verification policy expects.
	CodeProfileMismatch Code = "profile_mismatch"
	// CodeProjectionDigestMismatch: the projection bytes do not have the
	// length or digest the record commits to.
	CodeProjectionDigestMismatch Code = "projection_digest_mismatch"
	// CodeProjectionEncodingInvalid: the projection bytes are not UTF-8,
	// the only encoding draft -01 supports (section 4.3).
	CodeProjectionEncodingInvalid Code = "projection_encoding_invalid"

	// CodeKeyNotPinned, CodeKeyRevoked and CodeKeyExpired are the
	// compactor and tombstone-issuer equivalents of the adapter key codes.
	CodeKeyNotPinned Code = "key_not_pinned"
	CodeKeyRevoked   Code = "key_revoked"
	CodeKeyExpired   Code = "key_expired"
	// CodeKeyInvalid: a public key is malformed, non-canonical or weak
	// (small order or outside the prime-order subgroup).
	CodeKeyInvalid Code = "key_invalid"

	// CodeManifestInvalid: a source manifest is malformed.
	CodeManifestInvalid Code = "manifest_invalid"
	// CodeMerkleRootMismatch: source_items_merkle_root is not the root of
	// the manifest's source tree.
	CodeMerkleRootMismatch Code = "merkle_root_mismatch"
	// CodeSourceCountMismatch: source_item_count is not the number of
	// manifest items.
	CodeSourceCountMismatch Code = "source_count_mismatch"
	// CodeSensitivityCeilingMismatch: inherited_sensitivity_ceiling is not
	// the least upper bound of the manifest's labels.
	CodeSensitivityCeilingMismatch Code = "sensitivity_ceiling_mismatch"
	// CodeRetentionCeilingExceeded: retention_purge_epoch is later than the
	// earliest expires_at in the manifest.
	CodeRetentionCeilingExceeded Code = "retention_ceiling_exceeded"
	// CodeBloomFilterInvalid: tombstone_bloom_filter_b64 is not in the
	// profile's Bloom filter format, or lacks an item it must hold.
	CodeBloomFilterInvalid Code = "bloom_filter_invalid"
	// CodeSourceProofInvalid: a source-item inclusion proof does not verify
	// against source_items_merkle_root with tree size source_item_count.
	CodeSourceProofInvalid Code = "source_proof_invalid"
	// CodeItemPurged: a compaction includes an item already tombstoned.
	CodeItemPurged Code = "item_purged"
	// CodeSupersessionInvalid: a superseding compaction does not match the
	// compaction it claims to supersede minus the items purged since.
	CodeSupersessionInvalid Code = "supersession_invalid"
	// CodeCompactionReplay and CodeTombstoneReplay are the equivalents of
	// projection_replay for compaction_event_id and tombstone_id.
	CodeCompactionReplay Code = "compaction_replay"
	CodeTombstoneReplay  Code = "tombstone_replay"
	// CodeTooLarge: the input is larger than the cap for its kind, or its
	// canonical form is larger than a log leaf may be (65,535 bytes).
	CodeTooLarge Code = "too_large"
)

// An Error is a refusal: a closed code, the member or rule that failed, and
// a sentence for humans.
type Error struct {
	Code   Code
	Member string // the failing member as a path, e.g. "delivered[1].position"; empty for the whole input
	Reason string
	Err    error // an underlying error, if any
}

func (e *Error) Error() string {
	s := string(e.Code)
	if e.Member != "" {
		s += ": " + e.Member
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, &Error{Code: c}) match any Error with code c.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Member == "" && t.Reason == "" && t.Err == nil
}

// ErrorCode returns the code of the first *Error in err's chain, or "" when
// there is none.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func refuse(code Code, member, format string, args ...any) *Error {
	return &Error{Code: code, Member: member, Reason: fmt.Sprintf(format, args...)}
}
