// Package datadir is the layout of a memtrail data directory, the
// directory "memtrail serve --data" runs on: where the embedded storage
// (log/posixstore, log/sqliteindex) keeps each part. The verifier's
// data-directory backend reads the same layout through it.
//
//	DIR/log/            Tessera's POSIX tiles: the tlog-tiles tree as served
//	DIR/log/.state/     Tessera's private tree state
//	DIR/index.db*       the SQLite index (index.db, -wal, -shm, -ids)
//	DIR/manifests/      manifests, DIR/manifests/<2 hex>/<64 hex>.json
//	DIR/checkpoints/    the checkpoint archive's segment files
//	DIR/memtrail.lock   the file whose lock one process at a time holds
package datadir

import (
	"path/filepath"

	"github.com/memtrail/memtrail/receipts"
)

// Names of the parts, under the data directory.
const (
	Tiles       = "log"
	Index       = "index.db"
	Manifests   = "manifests"
	Checkpoints = "checkpoints"
	Lock        = "memtrail.lock"
)

// ManifestPath returns the file of the manifest of source tree root root
// in the manifest directory dir ("sha256:<64 hex>" is dir/<first two hex
// digits>/<64 hex digits>.json), and false when root is not a sha256
// digest.
func ManifestPath(dir, root string) (string, bool) {
	if !receipts.IsDigest(root) {
		return "", false
	}
	h := root[len("sha256:"):]
	return filepath.Join(dir, h[:2], h+".json"), true
}
