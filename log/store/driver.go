package store

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/transparency-dev/tessera"
)

// A Driver is the Tessera storage a log appends its entries to and reads
// its tree from: one of Tessera's drivers (storage/posix, storage/aws, …)
// and what the log needs of it beyond Tessera's interfaces. The log starts
// Tessera's appender on it itself (tessera.NewAppender), with its own
// signer, witnesses, batching and intervals, so a driver package only
// builds the storage.
//
// Contract, for every implementation (TestDriver checks it):
//
//   - Reader returns a reader of the storage as it stands that writes
//     nothing, usable before, without, or beside an appender: the log
//     reads the tree through it before it starts appending, and fsck reads
//     everything through it. ReadCheckpoint fails with an error wrapping
//     os.ErrNotExist while no checkpoint is published; IntegratedSize is 0
//     for new storage; ReadTile and ReadEntryBundle of a partial resource
//     give the full one once it replaced it, and an error wrapping
//     os.ErrNotExist for one that does not exist.
//   - Open returns the tessera.Driver the log starts its appender on, once.
//     ctx is the appender's: it ends when the log closes, and any
//     background work of the driver ends with it. Open may refuse storage
//     it finds damaged (an error wrapping ErrTileDamaged).
//
// What the log relies on from the appender and reader Tessera builds on
// the driver, beyond Tessera's own documentation:
//
//   - Sequencing is first in, first out: each Add is given one index, and
//     an Add called after another (the caller orders them: one goroutine,
//     or a lock) gets a greater one, whether or not the earlier one's
//     future has resolved. The log hands each lineage entry to Add under
//     its lineage lock, so the log's order is the order of its decisions.
//     A future that resolves to an index means the entry is durably
//     sequenced: it is integrated at that index eventually, crash or not.
//     One that resolves to tessera.ErrPushback wrote nothing.
//   - An Add that fails otherwise may or may not have sequenced its entry
//     (the outcome is unknown), but its fate is sealed when its future
//     resolves: if the entry was sequenced, its index is below NextIndex
//     read afterwards, and below the index of any Add called afterwards.
//     Nothing retries it later in the background.
//   - IntegratedSize n means that every entry below n is integrated: its
//     entry bundle and the tiles of the tree of size n are readable. It
//     never decreases, and it reaches every sequenced index eventually.
//     Integration may happen within Add (the POSIX driver) or after it
//     (drivers with a sequencing queue, such as Tessera's AWS driver).
//   - ReadCheckpoint returns the checkpoint last published, of a size at
//     most IntegratedSize; a later one is never of a smaller size.
//
// The log settles an Add of unknown outcome against the integrated tree
// only, never against what an Add returned, and indexes integrated entries
// only (docs/design/storage.md).
type Driver interface {
	Reader(ctx context.Context) (tessera.LogReader, error)
	Open(ctx context.Context, opts DriverOptions) (tessera.Driver, error)
}

// DriverOptions are what a driver is given by the log that opens it.
type DriverOptions struct {
	// HTTPClient carries Tessera's requests to the log's witnesses (nil
	// without witnesses). The log counts and checks every answer through
	// it, so the driver must hand this client, not its own, to Tessera.
	HTTPClient *http.Client
	// Republish asks that the first publication pass of the appender sign
	// and publish the tree again even if it has not grown since the
	// checkpoint published last (so that the witnesses of a new policy
	// cosign it at once), instead of after the republish interval.
	Republish bool
	// Logger receives the driver's operational logs.
	Logger *slog.Logger
}

// A TreeReader is a reader that can also give the root hash of its
// integrated tree, not only its size (the POSIX driver keeps both in its
// tree state). fsck then checks the entries against it, beyond the signed
// checkpoint, which may be smaller.
type TreeReader interface {
	IntegratedTree(ctx context.Context) (size uint64, root []byte, err error)
}

// A TileRepairer is a Driver that can replace a hash tile, for fsck
// --repair: the tile tile (of partial width p, 0 for a full one) was
// recomputed from entries that hash to the signed tree root, so it is what
// the log wrote. Without one, fsck reports damaged tiles and repairs none.
type TileRepairer interface {
	RepairTile(ctx context.Context, level, index uint64, p uint8, tile []byte) error
}

// A Lease is one writer's exclusive hold on a log's storage, for storage
// that needs a single writer. The POSIX driver does: two processes
// appending to one directory would assign the same indexes twice. And the
// log takes its single-use claims and lineage decisions in its own process
// before it calls Add, so they hold only while it is the one writer; a
// driver for several writers has to provide those across processes as
// well (docs/design/storage.md).
//
// Contract, for every implementation (TestLease checks it):
//
//   - While a lease is held, acquiring another of the same storage fails
//     at once with an error wrapping ErrLeaseHeld.
//   - Release drops the hold, after which it may be acquired again. It is
//     safe to call more than once.
//   - Lost returns a channel that is closed if the hold ends before
//     Release (a lease that expires, or whose connection drops), or nil
//     for a hold that lasts until Release or the end of the process (a
//     kernel file lock). Once it is closed the log refuses every
//     submission: it can no longer know that it is the only writer.
type Lease interface {
	Lost() <-chan struct{}
	Release()
}

// ErrLeaseHeld is wrapped by the error of acquiring a Lease that another
// writer holds.
var ErrLeaseHeld = errors.New("the log's storage is held by another writer")

// Health is a storage's own reading of its failures, for the log's refusal
// of submissions while its storage cannot take writes (see
// ErrStorageUnavailable). Without one, the log refuses no submission for
// the storage's sake: each failure is returned as it is.
//
// Contract:
//
//   - Unavailable reports whether err, returned by the appender, the
//     index, the manifest store or the archive, means that the storage
//     cannot take writes now (it is full, read-only, failing), rather than
//     that this write was wrong. It is called with any error; errors
//     wrapping ErrStorageUnavailable count as unavailable whatever it says.
//   - Probe checks that the storage takes a write of about size bytes now,
//     and leaves nothing behind. The log probes every second while the
//     storage is healthy (size 0) and four times a second while it is
//     not (size 1 MiB), and accepts submissions again once a probe
//     succeeds. A Probe error for which Unavailable is true makes the
//     storage unavailable.
type Health interface {
	Unavailable(err error) bool
	Probe(ctx context.Context, size int) error
}

// ErrStorageUnavailable is returned while the log cannot write to its
// storage: the disk is full, the directory or its file system was made
// read-only, or a write failed with an I/O error. Submissions are refused,
// and nothing is acknowledged that was not written; reads, lookups and
// proofs go on. The log probes the storage and accepts submissions again
// once it is writable.
var ErrStorageUnavailable = errors.New("the log cannot write to its data directory")
