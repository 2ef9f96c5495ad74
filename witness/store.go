package witness

import (
	"context"
	"errors"
)

// A Store persists, for each log origin, the latest checkpoint the witness
// cosigned. It is the only state of the witness, and the whole of its
// security rests on it: a Store that loses an acknowledged write, or that
// applies two compare-and-swaps on stale values, lets the witness cosign two
// inconsistent checkpoints.
//
// The values are opaque to the Store: the witness stores the signed note of
// the checkpoint (the log's signatures and its own cosignature). Keys are
// origin lines, arbitrary UTF-8 strings without newlines.
//
// Implementations must provide:
//
//   - Durability. Once CompareAndSwap returns nil, the new value survives a
//     crash of the process (including SIGKILL) and, for stores on disk, a
//     power loss. The witness sends the cosignature only after that return.
//   - Atomicity. CompareAndSwap checks the current value and replaces it as
//     one step with respect to every other call on the same Store, from any
//     goroutine. Concurrent calls for different origins must not fail because
//     of each other.
//   - Linearizability. Load reflects every CompareAndSwap that returned nil
//     before Load was called.
//   - Exclusivity. A store on disk should refuse to be opened twice at the
//     same time (from this or another process), because the witness caches the
//     latest value of each origin in memory. A second writer could not make
//     the witness cosign inconsistent checkpoints (its compare-and-swap would
//     fail) but would make it refuse every request for the affected origins.
//
// All methods are safe for concurrent use.
//
// Errors: Load returns [ErrNotFound] when no value was ever stored for the
// origin. CompareAndSwap returns [ErrConflict] when the current value is not
// old, in which case nothing was written. Any other error from
// CompareAndSwap leaves the outcome unknown: the value may or may not have
// been replaced, and the caller must Load it again before relying on it.
//
// [TestStore] checks these properties; every implementation runs it.
type Store interface {
	// Load returns the value stored for origin, or ErrNotFound.
	Load(ctx context.Context, origin string) ([]byte, error)

	// CompareAndSwap replaces the value stored for origin with new if and only
	// if the current value is byte-for-byte equal to old. An old of nil means
	// that no value is stored yet. new must not be nil or empty. The caller
	// must not modify old or new while the call is in progress.
	CompareAndSwap(ctx context.Context, origin string, old, new []byte) error

	// Close releases the store. Calls made after Close return errors.
	Close() error
}

var (
	// ErrNotFound is returned by [Store.Load] for an origin that has no stored
	// value.
	ErrNotFound = errors.New("witness: no checkpoint stored for origin")

	// ErrConflict is returned by [Store.CompareAndSwap] when the stored value
	// is not the expected old value. Nothing was written.
	ErrConflict = errors.New("witness: stored checkpoint changed concurrently")
)
