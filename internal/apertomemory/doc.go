// Package apertomemory opens and seals ApertoMemory format_version 2 memory
// objects and reads and writes the .amem export container, as
// [draft-ferro-apertomemory-02] defines them, and implements the two
// ApertoMemory profiles that [draft-ferro-schrock-memory-projection-record-01]
// §5 embeds: the trust snapshot and the context frame v0.
//
// It is the native source profile of memtrail's projection records: a
// projection producer or verifier takes an object's derived results from
// [Object] (Trust, Authorship, Author, CustodyPresent, Content,
// [Object.ContextFragment]) and the trust snapshot from [Keyring], and never
// recomputes or upgrades them.
//
// # Data, not instructions
//
// Content whose derived trust is not "self" was written by someone other
// than the vault owner, or by nobody the reader can prove. It is data: a
// consumer must delimit it as such and must never give it instruction-level
// privilege (draft §6, §8.3, §15.2). The context frame labels every fragment
// with its trust so that this holds after the bytes leave the package.
//
// # Key hierarchy (draft §9)
//
//	passphrase --Argon2id(64 MiB, t=3, p=4, 16-byte salt)--> master (32 bytes)
//	master --HKDF-SHA256 "apertomemory/v1/sign"--> Ed25519 seed
//	master --HKDF-SHA256 "apertomemory/v1/ka"-->   X25519 private key
//	scope KEK (32 random bytes) <-- X25519(ephemeral, owner) + HKDF-SHA256
//	    "apertomemory/v1/kek-wrap" || scope_id + AES-256-KW (RFC 3394)
//	object DEK (32 random bytes, one object) <-- AES-256-KW under the KEK
//
// Argon2id runs once per vault ([DeriveIdentity], [Container.Open]); every
// object after that costs a key unwrap, one AES-256-GCM open and one
// Ed25519 verification. An author key id ([KeyID]) is the first 8 bytes of
// SHA-256 over the raw Ed25519 public key.
//
// # Sealed objects (draft §3–§5)
//
// A sealed object is the deterministic-CBOR map
//
//	{1: h'id (16)', 2: h'scope_id (16)', 3: format_version, 4: h'COSE_Encrypt0'}
//
// whose field 4 is a tagged COSE_Encrypt0 (AES-256-GCM, COSE alg 3,
// 12-byte IV in the unprotected header) of a tagged COSE_Sign1 (EdDSA,
// protected kid = the signer's key id) over the deterministic-CBOR
// memory-payload. Both layers take the envelope-aad as external_aad:
// deterministic CBOR of [format_version, id, scope_id]; for vector 003 that
// is
//
//	83 02 50 a0a1a2a3a4a5a6a7a8a9aaabacadaeaf 50 0102030405060708090a0b0c0d0e0f10
//
// so rewriting id, scope_id or format_version breaks the AEAD tag. The
// payload's author_key_id (payload key 4, field 2) and the protected kid
// must both name the key that verifies the signature.
//
// CBOR is encoded with github.com/fxamacker/cbor/v2 in RFC 8949 §4.2.1 core
// deterministic order with the shortest float that keeps the value (what the
// reference's canonical cbor2 writes for these maps); it is decoded
// leniently about encoding but never about duplicates: duplicate map keys,
// indefinite lengths, invalid UTF-8 and trailing bytes are refused.
// COSE_Sign1 uses github.com/veraison/go-cose; COSE_Encrypt0, which go-cose
// does not implement, is built here as RFC 9052 §5.3 defines it (the AEAD's
// associated data is ["Encrypt0", protected, external_aad]). AES key wrap is
// github.com/go-jose/go-jose/v4/cipher; Argon2id is golang.org/x/crypto/argon2;
// HKDF, X25519, AES-GCM and Ed25519 are the standard library's.
//
// # Opening an object
//
// [OpenObject] (and [Container.Open] for each object of a container) runs,
// in order, and stops at the first refusal, which wraps exactly one of the
// Err* [Refusal] values (a stable Code, and a [Class] that maps it to the
// projection draft's authentication_failed or schema_invalid counter):
//
//  1. size cap (ErrObjectTooLarge) and envelope shape (ErrMalformedObject);
//     format_version 2 or 1 (ErrUnsupportedVersion);
//  2. COSE_Encrypt0 shape and alg 3 (ErrMalformedObject,
//     ErrUnsupportedAlgorithm);
//  3. AES-256-GCM under the DEK with the envelope-aad (ErrEnvelopeBinding,
//     vector 005). A format_version 1 envelope whose ciphertext opens only
//     under the version 2 envelope-aad is a downgrade (ErrVersionDowngrade,
//     vector 006);
//  4. COSE_Sign1 shape and alg EdDSA; payload a map with unsigned keys and
//     text content (ErrMalformedObject, ErrUnsupportedAlgorithm,
//     ErrMalformedPayload);
//  5. format_version 1: never verified (ErrLegacyUnverified, vector 009);
//     read only under [OpenOptions.AllowUnverified], as "unverified";
//  6. a protected kid that differs from the payload's author_key_id is
//     refused under every key (ErrInconsistentKid, vector 010);
//  7. the signature is verified under the accepted key whose id the payload
//     names (author binding). If another accepted key verifies it, the
//     authorship is forged (ErrAuthorMismatch, vector 004); if the named key
//     does not, the signature is invalid (ErrBadSignature); if no accepted
//     key is named, nothing authenticates it (ErrNotAuthenticated), and only
//     AllowUnverified reads it, as "unverified". AllowUnverified changes
//     only step 5 and this last case; every other refusal holds with it.
//
// # Trust is derived, never declared (draft §6, §7)
//
// Payload key 5 (trust-level) is reported as DeclaredTrust and never read.
//
//	signature verified by               derived trust   authorship  author
//	the owner's key                     self            signed      signer
//	an accepted key (Keyring)           trusted         signed      signer
//	nobody accepted (opt-in read)       unverified      unknown     none
//
// A custody record (payload key 20) means the signature proves custody, not
// authorship, so the object is never "self":
//
//	custody record                              trust       authorship  author
//	signed by the owner, field 4 accepted now   trusted     attested    field 4
//	field 4 absent or not accepted, or signed
//	  by anyone but the owner                   unverified  unknown     none
//	empty or malformed (vector 014)             unverified  unknown     none
//
// The unproven claim (custody field 2, or an unauthenticated object's
// author_key_id) is reported only as [Object.ClaimedAuthor]. An empty or
// malformed record is not a refusal: the object opens, unverified, with
// ViolationCustody (draft §2). A confidence outside [0.0, 1.0] is reported
// absent with ViolationConfidence (vector 013); other schema slips are
// reported the same way, never by refusing an authentic object. Unknown
// payload keys (and the reserved 8, 9 and 10) are kept verbatim in
// [Object.Extra]; expires_at is not enforced.
//
// # The .amem container (draft §10)
//
// [ParseContainer] reads the container without any key (see [Container]
// for its layout); [Container.Open] derives the identity from the
// passphrase and the container's salt and refuses the container unless it
// matches its sign_pub and ka_pub (ErrWrongPassphrase), unwraps each scope
// KEK (a scope whose KEK does not unwrap, or whose scope_id another scope
// also lists, makes its objects ErrScopeKeyUnavailable), recomputes each
// known_keys id from its public key (an entry whose id does not match, or
// whose key is not 32 bytes, is left out and listed in
// [Vault.KeyringProblems]), and opens each object in isolation: a duplicate
// id (ErrDuplicateObjectID), an unknown scope (ErrUnknownScope), a missing or
// foreign DEK (ErrMissingDEK, ErrDEKUnwrap) or any object refusal refuses
// that object only. A container that cannot be parsed fails with one error
// (ErrMalformedContainer, ErrContainerTooLarge, ErrUnsupportedExport).
// [Writer] builds containers the reference implementation reads, and reads
// the reference's.
//
// # Caps
//
// Every input is capped before it is decoded ([Limits], [DefaultLimits]):
// a container 64 MiB, 100,000 objects and wrapped DEKs, 1,024 scopes and
// 1,024 known_keys; one sealed object 1 MiB (which bounds its content,
// payload and embedding); scope names, tool, session and each tag 1,024
// bytes; 1,024 tags; CBOR nesting 32 levels in an object and 8 in the
// container structure; 65,536 array elements and 4,096 map pairs inside an
// object. A passphrase file is capped at 64 KiB ([ReadPassphrase]).
//
// # Passphrases
//
// [ReadPassphrase] reads the passphrase from a file or the environment
// (AMEM_PASSPHRASE by default), never from a flag; no error or log line
// names it.
//
// # Projection profiles (draft -01 §5)
//
// [EncodeTrustSnapshot] and [Keyring.TrustSnapshot] encode the trust
// snapshot {1: owner key id, 2: [accepted key ids sorted by raw bytes]};
// [TrustSnapshotDigest] is its trust_snapshot_digest. [FrameV0] and
// [Object.ContextFragment] build a context fragment of
// urn:apertomemory:context-frame:v0 byte for byte. [SealedDigest] is a
// delivered entry's sealed_object_digest.
//
// [draft-ferro-apertomemory-02]: https://datatracker.ietf.org/doc/draft-ferro-apertomemory/
// [draft-ferro-schrock-memory-projection-record-01]: https://datatracker.ietf.org/doc/draft-ferro-schrock-memory-projection-record/
package apertomemory
