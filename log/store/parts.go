package store

import "context"

// Parts are what a log is built from. log.Open takes them in its Config
// and owns them from then on: a failed Open, and Close, close the index and
// release the lease.
type Parts struct {
	Driver      Driver            // required
	Index       Index             // required
	Manifests   ManifestStore     // required
	Checkpoints CheckpointArchive // required
	// Lease is the writer's hold on the storage, for storage that needs a
	// single writer; nil when the caller keeps other writers away itself.
	Lease Lease
	// Health reads the storage's failures; nil: none is taken for the
	// storage's unavailability.
	Health Health
}

// Close closes the index and releases the lease of parts that were not
// handed to a log (or whose log did not open).
func (p Parts) Close() error {
	var err error
	if p.Index != nil {
		err = p.Index.Close()
	}
	if p.Lease != nil {
		p.Lease.Release()
	}
	return err
}

// Check is the parts of a log that is not running, opened for fsck.
type Check struct {
	Parts
	// IndexErr says why Parts.Index is nil: the index could not be opened
	// (it is damaged), or, when it wraps fs.ErrNotExist, there is none.
	IndexErr error
	// NewIndex returns a new, empty index in place of one that could not
	// be opened or reset, for fsck --repair to rebuild from the log; nil
	// when the check may not write.
	NewIndex func(ctx context.Context) (Index, error)
}
