// Package verifier checks memtrail's evidence offline: pure functions over
// bytes and a pinned policy, with no network access and no clock but one
// passed in. Its I/O — where a log audit reads a log, where single use is
// recorded — comes through two seams, [LogSource] and [Registry], which
// package verifier/backend implements over files and HTTP.
//
// It has two halves. The transparency-log half: the policy that says which
// logs and witnesses are trusted, checkpoints, inclusion proofs and
// consistency between checkpoints. The receipts half: projection records in
// full ([VerifyProjection]), compactions against their manifests
// ([VerifyCompaction]), and erasure lineage over a whole log ([AuditLog]).
// Each returns a report: a result that is [Valid] or the closed code of the
// first failing check, and every check with its [Outcome]. docs/verify.md
// describes the reports, their codes, and the registry and state files.
//
// # Projection records
//
// [VerifyProjection] runs the verifier algorithm of the Memory Projection
// Record draft (§7 of -00, §8 of -01, with the record rules -01 adds) on one
// record: structure and consistent source results, the pinned adapter key
// and signature, freshness under a [VerificationPolicy], then, with
// [Material], the digests of the request, policy and trust snapshot, the
// source objects, the native source results, every fragment and the
// projection bytes (which must be UTF-8), and last single use in a
// [Registry] — only for a record that passed everything else, so a refused
// record never uses up its id. Missing material is reported as skipped.
// With a [SourceVerifier] (for ApertoMemory, internal/projector's
// NativeVerifier over a vault) step 5 runs natively: the trust snapshot,
// each source object's result and each fragment are derived from the
// source objects and the verifier's trust state, not taken from the
// material.
//
// # Log audits
//
// [AuditLog] reads every entry a checkpoint covers through the tlog-tiles
// resources, recomputes the tree root from the leaves, re-verifies every
// receipt at its own time, applies the lineage rules in log order (keys
// revoked by the time the log had certainly reached, single
// use of ids, no compaction after a tombstone of one of its items, exact
// supersession, Bloom filters holding the purged items) and lists the open
// erasure obligations with their age. An [AuditState] lets the next audit
// read only what was added, after checking consistency with the saved
// checkpoint.
//
// # Policies
//
// A [Policy] is a [C2SP tlog-policy] file, parsed by [ParsePolicy]. It lists
// the logs whose checkpoints are accepted (by vkey, whose key name is the log's
// origin), the witnesses whose cosignatures count, groups of witnesses with
// thresholds, and the quorum that a checkpoint's cosignatures must satisfy:
//
//	log example.com/memtrail+8fbf0a30+AW7H76wwUm+YQMYLwS9T1KhehkRD6MMrAIyfjaXqA0SL https://log.example.com/
//
//	witness w1 witness1.example+387bad08+BHfqQt2MCuUhNTHjOE+oLtoKRLZo/v6jE4wuXW7Y9lpE https://witness1.example/
//	witness w2 witness2.example+3d66e5a7+BDP/qj2e0KA9p4ju2cmMGnXP3R8QmkHr5YgPriqiYU+a https://witness2.example/
//	witness w3 witness3.example+fb80d0b0+BOvo+VULCBCDWFXJS9ePYrVyXu0VhCsmIZ5rHMVliB+C https://witness3.example/
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
//	example.com/memtrail
//	8
//	OPYi+o2V1pmTMUgSCBndmtuDacXwq1W2LY5Tp9Mtlfw=
//
//	— example.com/memtrail j78KMFTlbB0ZSX8evc3Rj8kmXtbfJ6VmGHhN+6u70UZsIukbzAwl/uWkTpV6Hbv9p0Xydms9AdzuvIyEmH4CWuV02QI=
//	— witness1.example OHutCAAAAABqbTc8ntNuCkqBxm/JY8Xjsql44P9h4st+szgKqwsP6qt9hJE/ERYqBAoxVRcZdQuxZ7Bk+P58dJgImbDZeLdLuSKLAA==
//	— witness2.example PWblpwAAAABqbTc96OOrdugCQxHIEwLKe5iqXLiXlNbPEmiQoYSraPmhxrmJOhAecsIxcag5zFMry0AhymMGv3kVLDDeEiI4nnMvDw==
//
// A cosignature line decodes to the 4-byte key ID, the 8-byte big-endian
// timestamp (here 0x6a6d373c, 2026-08-01T00:01:00Z) and the Ed25519 signature
// of "cosignature/v1\ntime 1785542460\n" followed by the note text.
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
// be checked offline. The proof of entry 5 under the checkpoint above is
//
//	c2sp.org/tlog-proof@v1
//	index 5
//	GNgcj037S5yzdXw7bG4QDOdAwRZQOMs1KrgBzjgmMmc=
//	VlKS5ObAdYITnDGJ3g2487gpz+eBF5wdPkkyjmOUSPw=
//	0WbOG7xWRm3BpRSBljLpIhu9KyzOUrLOw+GuBR41VzQ=
//
//	example.com/memtrail
//	8
//	OPYi+o2V1pmTMUgSCBndmtuDacXwq1W2LY5Tp9Mtlfw=
//
//	— example.com/memtrail j78KMFTlbB0ZSX8evc3Rj8kmXtbfJ6VmGHhN+6u70UZsIukbzAwl/uWkTpV6Hbv9p0Xydms9AdzuvIyEmH4CWuV02QI=
//	— witness1.example OHutCAAAAABqbTc8ntNuCkqBxm/JY8Xjsql44P9h4st+szgKqwsP6qt9hJE/ERYqBAoxVRcZdQuxZ7Bk+P58dJgImbDZeLdLuSKLAA==
//	— witness2.example PWblpwAAAABqbTc96OOrdugCQxHIEwLKe5iqXLiXlNbPEmiQoYSraPmhxrmJOhAecsIxcag5zFMry0AhymMGv3kVLDDeEiI4nnMvDw==
//
// where entry 5 is the bytes "example entry 5\n". An optional line
// "extra <base64>" after the header carries unauthenticated application data.
// These examples are the files in testdata/. The log emits them with [FormatProof]; [VerifyProof]
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
