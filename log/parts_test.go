package log

import (
	"context"
	"testing"

	"github.com/memtrail/memtrail/log/posixstore"
	"github.com/memtrail/memtrail/log/store"
)

// openStorage opens the embedded storage of the data directory dir (see
// log/posixstore), which the log's tests run on.
func openStorage(t testing.TB, dir string) store.Parts {
	t.Helper()
	p, err := posixstore.Open(context.Background(), posixstore.Config{Dir: dir})
	if err != nil {
		t.Fatalf("posixstore.Open(%s): %v", dir, err)
	}
	return p
}
