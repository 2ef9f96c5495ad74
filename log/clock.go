package log

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/transparency-dev/tessera/api/layout"
)

// watchCheckpointTime keeps checkpoint publication independent of the wall
// clock. Tessera's POSIX driver publishes a new checkpoint only once the
// published one is older than the checkpoint interval, and it takes that
// age from the file's modification time: after the system clock is set
// back, the file is "from the future" and nothing would be published until
// the clock catches up with it (an hour set back, an hour without
// checkpoints, and every ?wait=proof failing). A checkpoint file whose time
// is ahead of the clock gets the clock's time.
func (l *Log) watchCheckpointTime(ctx context.Context) {
	path := filepath.Join(l.cfg.Dir, tilesDir, layout.CheckpointPath)
	t := time.NewTicker(l.cfg.CheckpointInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fi, err := os.Stat(path)
		if err != nil {
			continue
		}
		now := time.Now()
		if ahead := fi.ModTime().Sub(now); ahead > l.cfg.CheckpointInterval {
			if err := os.Chtimes(path, now, now); err != nil {
				l.logger.Error("the published checkpoint's file time is ahead of the clock, and couldn't be reset: no checkpoint is published until the clock catches up", "ahead", ahead.Round(time.Second), "error", err)
				continue
			}
			l.logger.Warn("the published checkpoint's file time was ahead of the clock (was the clock set back?); reset it so that publication goes on", "ahead", ahead.Round(time.Second))
		}
	}
}
