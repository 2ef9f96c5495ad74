// Package store is the storage seam of memtrail's log: the parts a log is
// built from, each an interface whose contract says what it guarantees
// (durability, atomicity, concurrency, sentinels) and what the log relies
// on, with an exported suite that checks it (TestIndex, TestManifestStore,
// TestCheckpointArchive, TestDriver, TestLease), which every implementation
// runs.
//
// The parts ([Parts]) are:
//
//   - a [Driver]: a Tessera driver, on which the log starts Tessera's
//     appender, and a reader of the tree that appends nothing;
//   - an [Index], derived from the log and rebuilt from it at will;
//   - a [ManifestStore] of the compactions' source manifests;
//   - a [CheckpointArchive] of the checkpoints the log published, which is
//     not derived data;
//   - a [Lease] (a single writer's hold) where the storage needs one, and
//     a [Health] reading of the storage's failures.
//
// The package links no driver and no database. The embedded default, a
// data directory of files (Tessera's POSIX driver, manifests, checkpoints, a
// lock) with a SQLite index, is in log/posixstore and log/sqliteindex.
// docs/design/storage.md says what a new driver must provide.
package store
