// Package verifier checks memtrail's evidence offline: pure functions over
// bytes and a pinned policy, with no network access and no clock but one
// passed in.
//
// This page covers the transparency-log half: the policy that says which logs
// and witnesses are trusted, checkpoints, inclusion proofs and consistency
// between checkpoints.
//
// # Policies
//
// A [Policy] is a [C2SP tlog-policy] file, parsed by [ParsePolicy]. It lists
// the logs whose checkpoints are accepted (by vkey, whose key name is the log's
// origin), the witnesses whose cosignatures count, groups of witnesses with
// thresholds, and the quorum that a checkpoint's cosignatures must satisfy:
//
//	# memtrail production log
//	log log.example.com/memtrail+4a2c1e0b+ASb7...
//
//	witness w1 witness1.example+1f2e3d4c+BFq9... https://witness1.example/
//	witness w2 witness2.example+5a6b7c8d+BKt0... https://witness2.example/
//	witness w3 witness3.example+9e8d7c6b+BN2x... https://witness3.example/
//	group witnesses 2 w1 w2 w3
//	quorum witnesses
//
// The same file configures the log's witnessing, so the log and every
// verifier agree on the quorum. Whoever edits it decides what verifies: a
// policy is trusted input and must come from the verifier's own configuration,
// never from the log or from a proof.
//
// # Checkpoints
//
// A checkpoint ([C2SP tlog-checkpoint]) is a signed note whose text is the
// log's origin, its size and its RFC 6962 root hash, then optional extension
// lines; signature lines follow a blank line, the log's own and witnesses'
// cosignatures ([C2SP tlog-cosignature], Ed25519 type 0x04 or ML-DSA-44 type
// 0x06):
//
//	log.example.com/memtrail
//	8
//	XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=
//
//	— log.example.com/memtrail SiwePKL2Z8Su...
//	— witness1.example Hy49TAAAAABrSG8A...
//
// [OpenCheckpoint] accepts one only if a log of the policy signed it for its
// origin, every signature from a key of the policy verifies, and the valid
// cosignatures meet the quorum. Signatures from unknown keys are ignored, as
// signed notes require, so logs can rotate keys and gather new witnesses
// without breaking old verifiers.
//
// # Inclusion proofs
//
// An [InclusionProof] is a [C2SP tlog-proof]: a leaf index, its inclusion
// path and the signed checkpoint, in one text file (".tlog-proof") that can
// be checked offline. The log emits them with [FormatProof]; [VerifyProof]
// checks one for a leaf hash ([LeafHash] of the logged bytes) under a policy.
// [ParseProof] and [InclusionProof.Format] round-trip byte for byte.
//
// # Consistency and forks
//
// [CheckConsistency] checks that a later checkpoint extends an earlier one of
// the same log with an RFC 6962 consistency proof. When two checkpoints of one
// log cannot both be true (same size and different roots, a proof that fails,
// or a later checkpoint smaller than an earlier one, see [IsRollback]), it
// returns a *[ForkError] that carries both signed checkpoints and the proof as
// evidence.
//
// # Errors
//
// Failures are of two kinds, told apart with [errors.Is]: [ErrMalformed]
// (the bytes are not in the claimed format; nothing was verified) and
// [ErrSecurity] (well-formed, but not to be trusted). The finer
// [ErrLogSignature], [ErrInvalidSignature], [ErrQuorum], [ErrInclusion] and
// [ErrConsistency], and *[ForkError], all match ErrSecurity. Parsers of
// untrusted bytes cap their input and fail with one uniform error.
//
// [C2SP tlog-policy]: https://c2sp.org/tlog-policy
// [C2SP tlog-checkpoint]: https://c2sp.org/tlog-checkpoint
// [C2SP tlog-cosignature]: https://c2sp.org/tlog-cosignature
// [C2SP tlog-proof]: https://c2sp.org/tlog-proof
package verifier
