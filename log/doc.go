// Package log is memtrail's log personality: an append-only C2SP
// tlog-tiles Merkle log of signed receipts on Tessera, with verified
// ingest, strict single use of receipt ids, enforced erasure lineage, a
// derived index, a manifest store, an archive of the checkpoints it
// published (not derived: see CheckpointArchive) and proofs.
//
// # Storage
//
// The log takes its parts from its caller (Config.Storage): a Tessera
// driver, the index, the manifest store, the checkpoint archive, and where
// the storage needs them a single writer's lease and a reading of its
// failures. Package store defines them, with the contract each keeps and
// what the log relies on; the package links no driver and no database.
// Everything the log and its HTTP interface read of the tree (tiles, entry
// bundles, checkpoints) they read through Tessera's LogReader. The embedded
// default, a data directory on a POSIX file system with a SQLite index, is
// log/posixstore (docs/design/storage.md).
//
// # What is logged
//
// A leaf is the receipt itself: the JCS bytes of the full signed projection
// record, ECCR or tombstone. Nothing is logged before it verifies: strict
// parse, signature under the trust file's keys (current at the time that
// matters: created_at for projections, purged_at for tombstones, now for
// ECCRs, and not revoked now), freshness and clock skew, for compactions the
// manifest rules (root, count, ceiling, retention, Bloom format) and the
// lineage rules (no purged item; supersession only of a logged, current
// compaction, by exactly its manifest minus the items purged since, with a
// Bloom filter that holds them).
//
// # Single use and ordering
//
// Each projection_id, compaction_event_id and tombstone_id is logged at most
// once. Within the process a claim table makes the check-and-reserve
// atomic: the first submission of an id owns it until it is logged or
// fails; concurrent submissions of the same id wait for that outcome and
// are refused with the index where it was logged. Ids already logged are
// found in the index.
//
// Compactions and tombstones are decided one at a time under a lineage
// lock, against the index plus the lineage entries accepted but not yet
// indexed, and appended to Tessera's FIFO sequencing queue under the same
// lock, so the log's order is the order of the decisions. A decision that
// depends on an entry still waiting to be sequenced waits for it first.
//
// # Crashes
//
// The log (the tree Tessera's driver keeps, durable once Add has given an
// entry its index) is the source of truth; the index is derived from it,
// and holds integrated entries only. The index records a watermark, the
// number of leading log entries it has applied, atomically with their
// lineage effects. On start, before accepting writes, the log applies the
// entries between the watermark and the integrated tree size, reading them
// back from the tiles. So a crash at any point loses no acknowledged
// receipt (it was sequenced durably before the answer), never lets an id be
// logged twice (every logged id is in the index before the next write is
// accepted), and leaves an index that agrees with the log. Manifests are
// stored, durably, before their compaction is appended. A sequencing
// failure that does not say whether the entry was logged holds its id until
// the integrated tree settles it (see store.Driver).
//
// # Views
//
// What the log answers about its entries it computes itself, so that its
// HTTP interface only encodes it: [Log.Entry] (an entry by id, with its leaf
// hash and tlog-proof), [Log.Compaction] and [Log.Item] (an item's erasure
// lineage and state). Its counters are a Prometheus collector, [Metrics].
// The package reads the formats it shares with the verifier and the witness
// (leaf hashes, checkpoint text, tlog-proofs) from internal/tlogfmt and
// imports nothing of the verifier, which stays an independent reading of
// what the log serves.
package log
