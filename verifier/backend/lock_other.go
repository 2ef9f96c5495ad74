//go:build !unix

package backend

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"time"
)

// lockFile creates path exclusively, waiting while it exists. A crash
// leaves the file behind; remove it once no verifier runs.
func lockFile(ctx context.Context, path string) (func(), error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			f.Close()
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(lockRetry):
		}
	}
}
