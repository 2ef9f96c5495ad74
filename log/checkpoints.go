package log

import (
	"context"
	"errors"
	"fmt"

	"github.com/transparency-dev/tessera"
)

// ErrArchiveAhead is returned by Open when the checkpoint archive holds a
// checkpoint of a size beyond the log's tree: the tiles are older than the
// archive (restored from an older backup, say). Appending to such a log
// would sign a different tree at a size it published before, a fork.
var ErrArchiveAhead = errors.New("the checkpoint archive is ahead of the log")

// checkArchiveBehind checks that the archive holds no checkpoint beyond the
// integrated tree.
func checkArchiveBehind(ctx context.Context, a CheckpointArchive, r tessera.LogReader) error {
	asize, _, err := a.Latest(ctx)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	size, err := r.IntegratedSize(ctx)
	if err != nil {
		return fmt.Errorf("couldn't read the tree size: %w", err)
	}
	if asize > size {
		return fmt.Errorf("%w: it holds a checkpoint of size %d, the log has %d entries", ErrArchiveAhead, asize, size)
	}
	return nil
}
