package log

import (
	"context"
	"fmt"

	"github.com/memtrail/memtrail/log/store"
	"github.com/transparency-dev/tessera/api/layout"
)

// readTile reads a hash tile for the proof builder, refusing a damaged one
// rather than building a wrong proof from it.
func (l *Log) readTile(ctx context.Context, level, index uint64, p uint8) ([]byte, error) {
	raw, err := l.reader.ReadTile(ctx, level, index, p)
	if err != nil {
		return nil, err
	}
	if err := store.CheckTile(raw, p); err != nil {
		return nil, fmt.Errorf("%s: %w", layout.TilePath(level, index, p), err)
	}
	return raw, nil
}
