// Package receipts implements the wire formats memtrail logs and verifies:
// the Memory Projection Record v1, the Ephemeral Context Compaction Receipt
// v1 (ECCR) with this profile's source manifest, sensitivity lattice, Bloom
// filter and supersession member, and the purge tombstone v1. It parses
// strictly, produces canonical bytes, signs and verifies.
//
// Every parser refuses with an [*Error] carrying a closed [Code] and the
// failing member; nothing is accepted that a peer could read differently.
//
// # Strict I-JSON
//
// All inputs are I-JSON (RFC 7493) read strictly: duplicate member names,
// invalid UTF-8, lone surrogates and noncharacters are refused; numbers must
// be integers written without fraction or exponent, not -0, and within
// [-(2^53-1), 2^53-1]; nesting is capped at 32 levels; and each parser caps
// its input size (see the Max* constants). Member sets are closed at every
// level. [ReadJSON] gives the same reader to documents that are not
// receipts but must be read as strictly (the verifier's material, policy and
// state files).
//
// # Canonical bytes and leaves
//
// Canonical bytes are RFC 8785 JCS: members sorted by UTF-16 code units, no
// whitespace, strings escaped only where JCS requires. A receipt's log leaf
// is JCS of the whole signed receipt, so anyone holding a receipt recomputes
// its leaf hash, SHA-256(0x00 || leaf), without help.
//
// # Memory Projection Record v1
//
// A closed object with @version "MEMORY-PROJECTION-RECORD-v1" (see
// [ProjectionRecord]), under the rules of draft -01
// (draft-ferro-schrock-memory-projection-record-01), which tighten -00:
// among them, each delivered entry's source result must be consistent
// ([CheckSourceResult], source_result_invalid). The adapter signs, with
// Ed25519,
//
//	"MEMORY-PROJECTION-RECORD-v1" || 0x00 || JCS(record without "proof")
//
// and writes proof = {"alg": "Ed25519", "key_id": <adapter.key_id>,
// "signature_b64u": <64 bytes, unpadded base64url>}. The key never comes from
// the record: [VerifyProjectionSignature] takes it from an [AdapterPin] (the
// interop adapter_pin shape) whose adapter id and key id match the record,
// valid at created_at and not revoked at the verification time.
//
// # ECCR v1
//
// The envelope of draft-durga-agent-ephemeral-lineage-00 (see [Compaction]),
// with the optional member "supersedes" (the compaction_event_id it
// replaces, inside the signature boundary). The compactor signs, with
// Ed25519 and no domain prefix,
//
//	JCS(envelope without "signature")
//
// and writes signature = {"alg": "Ed25519", "kid": "sha256:" +
// hex(SHA-256(raw public key)), "sig": <unpadded base64url>}. The draft's own
// vector (seed 0x2a×32) checks by hand: its full JCS envelope is 672 bytes
// with SHA-256 fb90df74…3d9f, and the signed bytes are 467 bytes.
//
// A compaction is bound to its [Manifest]: leaf i of the source tree is
// JCS(items[i]) and the tree is RFC 9162's (SHA-256(0x00 || leaf),
// SHA-256(0x01 || left || right)), so source_items_merkle_root is its root,
// source_item_count its size, and every source-item inclusion proof has tree
// size source_item_count ([VerifySourceInclusion]). The ceiling must equal
// the least upper bound of the items' labels in a [Lattice] (unknown labels
// rank top), and retention_purge_epoch may not exceed the earliest
// expires_at ([Manifest.CheckAgainst]). The [BloomFilter] format is strict on
// write and opaque at receipt level.
//
// # Purge tombstone v1
//
// See [Tombstone]: signed like an ECCR, it records that one item digest was
// purged, when and why.
//
// # Example
//
// A minimal tombstone, as a reader can check it by hand:
//
//	{"item_digest":"sha256:<64 hex>","purged_at":1796083200,"reason":"regulatory_erasure",
//	 "signature":{"alg":"Ed25519","kid":"sha256:<hex of SHA-256(pub)>","sig":"<86 chars>"},
//	 "tombstone_id":"urn:uuid:…","tombstone_version":"1.0"}
//
// The signed bytes are the same line without the "signature" member; the
// leaf is the line itself.
package receipts
