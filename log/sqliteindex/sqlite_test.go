package sqliteindex

import (
	"path/filepath"
	"testing"

	"github.com/memtrail/memtrail/log/store"
)

func TestSQLiteIndexContract(t *testing.T) {
	store.TestIndex(t, func(t *testing.T) store.Index {
		x, err := OpenSQLiteIndex(filepath.Join(t.TempDir(), "index.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		return x
	})
}
