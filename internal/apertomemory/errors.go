package apertomemory

import (
	"errors"
	"fmt"
)

// Class says which exclusion counter of the projection draft (§4.4) a
// refusal belongs to.
type Class int

const (
	// ClassAuthentication is a refusal by source authentication: the AEAD,
	// a key unwrap, the signature, the author binding or the version
	// binding failed, or the object cannot be authenticated without the
	// explicit opt-in. The projection draft counts these as
	// authentication_failed.
	ClassAuthentication Class = iota + 1
	// ClassSchema is a refusal of an object that is not a well-formed
	// object of this format (or is over a size cap, or is ambiguous inside
	// its container). The projection draft counts these as schema_invalid.
	ClassSchema
)

func (c Class) String() string {
	switch c {
	case ClassAuthentication:
		return "authentication_failed"
	case ClassSchema:
		return "schema_invalid"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// A Refusal is why one object was not opened. Every refusal the package
// returns for an object wraps exactly one of the Err* values below, so
// callers match with [errors.Is] (or [errors.As] to a *Refusal to read its
// Code and Class). The codes are a closed set; each is documented at its
// value.
type Refusal struct {
	// Code is the stable machine-readable name, e.g. "author_key_mismatch".
	Code string
	// Class is the projection exclusion counter the refusal maps to.
	Class Class
	text  string
}

func (r *Refusal) Error() string { return "apertomemory: " + r.text }

func refusal(code string, class Class, text string) *Refusal {
	return &Refusal{Code: code, Class: class, text: text}
}

// Refusals of one sealed object. Vector numbers are those of the
// format_version 2 vector set (draft-ferro-apertomemory-02, Appendix A).
var (
	// ErrObjectTooLarge: the sealed object is over Limits.MaxObjectBytes.
	ErrObjectTooLarge = refusal("object_too_large", ClassSchema, "sealed object over the size cap")
	// ErrMalformedObject: the sealed-object map, its COSE_Encrypt0 or the
	// inner COSE_Sign1 is not of the format's shape (not deterministic-
	// compatible CBOR, duplicate map keys, missing or mistyped fields).
	ErrMalformedObject = refusal("malformed_object", ClassSchema, "malformed sealed object")
	// ErrUnsupportedVersion: format_version is neither 2 nor the legacy 1.
	ErrUnsupportedVersion = refusal("unsupported_format_version", ClassSchema, "unsupported format_version")
	// ErrUnsupportedAlgorithm: the COSE_Encrypt0 algorithm is not
	// AES-256-GCM (3), or the COSE_Sign1 algorithm is not EdDSA (-8).
	// ChaCha20/Poly1305 (24), which the draft makes optional, is refused
	// here by design: no producer or vector uses it (docs/profile.md §10).
	ErrUnsupportedAlgorithm = refusal("unsupported_algorithm", ClassSchema, "unsupported COSE algorithm")
	// ErrEnvelopeBinding: the AES-256-GCM tag does not verify with the
	// envelope-aad rebuilt from the cleartext envelope: the DEK is wrong,
	// or id, scope_id or the ciphertext was rewritten (vector 005).
	ErrEnvelopeBinding = refusal("aead_tag_mismatch", ClassAuthentication, "AEAD tag mismatch (envelope binding)")
	// ErrVersionDowngrade: the envelope says format_version 1, but the
	// ciphertext authenticates only under the format_version 2
	// envelope-aad: format_version was rewritten from 2 to 1 to strip the
	// bindings (vector 006). The version is inside external_aad.
	ErrVersionDowngrade = refusal("version_downgrade", ClassAuthentication, "format_version rewritten from 2 to 1 (version is inside external_aad)")
	// ErrLegacyUnverified: a format_version 1 object, which carries no
	// binding and is never reported as verified; it is read only under
	// OpenOptions.AllowUnverified, as trust "unverified" (vector 009).
	ErrLegacyUnverified = refusal("legacy_v1_unverified", ClassAuthentication, "format_version 1 object: no envelope or author binding, not verified")
	// ErrInconsistentKid: the kid of the COSE protected header differs
	// from the payload's author_key_id; both are signed, so the object is
	// self-inconsistent and refused under every key (vector 010).
	ErrInconsistentKid = refusal("inconsistent_kid", ClassAuthentication, "header kid != payload author_key_id")
	// ErrAuthorMismatch: the signature verifies under an accepted key
	// other than the one the payload's author_key_id names: forged
	// authorship (vector 004, with the signer's key in the keyring).
	ErrAuthorMismatch = refusal("author_key_mismatch", ClassAuthentication, "author_key_id does not match the verifying key")
	// ErrBadSignature: the payload's author_key_id names an accepted key
	// (the owner's or a keyring key) and the signature does not verify
	// under it: a forgery in that key's name or a corrupted signature
	// (vector 004 under the owner's key alone). Never readable, not even
	// with AllowUnverified.
	ErrBadSignature = refusal("signature_invalid", ClassAuthentication, "signature does not verify under the key its author_key_id names")
	// ErrNotAuthenticated: the payload's author_key_id names no key the
	// reader accepts, so nothing can authenticate the object. It is read
	// only under OpenOptions.AllowUnverified, as trust "unverified".
	ErrNotAuthenticated = refusal("author_not_accepted", ClassAuthentication, "object not authenticated: its author_key_id names no accepted key")
	// ErrMalformedPayload: the signed memory-payload is not a map with
	// unsigned-integer keys, or has no text content (key 2).
	ErrMalformedPayload = refusal("malformed_payload", ClassSchema, "malformed memory payload")
)

// Refusals that only arise when an object is read out of an .amem
// container.
var (
	// ErrDuplicateObjectID: two sealed objects in the container carry the
	// same id, or two wrapped DEKs are filed under it. Every object with
	// that id is refused: which one is genuine cannot be told.
	ErrDuplicateObjectID = refusal("duplicate_object_id", ClassSchema, "object id is not unique in the container")
	// ErrUnknownScope: the object's scope_id is not one of the container's
	// scopes.
	ErrUnknownScope = refusal("unknown_scope", ClassSchema, "object in a scope the container does not list")
	// ErrScopeKeyUnavailable: the object's scope is listed but its KEK did
	// not unwrap (a malformed, transplanted or ambiguous scope entry).
	ErrScopeKeyUnavailable = refusal("scope_key_unavailable", ClassAuthentication, "the object's scope KEK did not unwrap")
	// ErrMissingDEK: the container has no wrapped DEK for the object id.
	ErrMissingDEK = refusal("dek_missing", ClassSchema, "no wrapped DEK for the object")
	// ErrDEKUnwrap: the wrapped DEK does not unwrap under the scope's KEK
	// (AES-KW integrity check): a DEK of another scope, or a rewritten one.
	ErrDEKUnwrap = refusal("dek_unwrap_failed", ClassAuthentication, "wrapped DEK does not unwrap under the scope KEK")
)

// Errors of a whole container. A container that cannot be read at all
// fails with one of these, wrapped with a short detail; objects inside a
// container that can be read are never reported this way.
var (
	// ErrContainerTooLarge: the container is over a cap of its Limits.
	ErrContainerTooLarge = errors.New("apertomemory: container over the size cap")
	// ErrMalformedContainer: the bytes are not an .amem export container.
	ErrMalformedContainer = errors.New("apertomemory: malformed .amem container")
	// ErrUnsupportedExport: export_version is not 1.
	ErrUnsupportedExport = errors.New("apertomemory: unsupported export_version")
	// ErrWrongPassphrase: the identity derived from the passphrase and the
	// container's salt does not match the container's sign_pub (or
	// ka_pub): a wrong passphrase, or a container whose public keys were
	// replaced.
	ErrWrongPassphrase = errors.New("apertomemory: passphrase does not derive the container's identity")
)

// refuse wraps a refusal with detail; detail must never contain secrets or
// object content.
func refuse(r *Refusal, format string, args ...any) error {
	if format == "" {
		return r
	}
	return fmt.Errorf("%w: %s", r, fmt.Sprintf(format, args...))
}

// RefusalOf returns the Refusal an error wraps, or nil.
func RefusalOf(err error) *Refusal {
	var r *Refusal
	if errors.As(err, &r) {
		return r
	}
	return nil
}
