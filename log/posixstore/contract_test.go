package posixstore

import (
	"testing"

	"github.com/memtrail/memtrail/log/store"
)

func TestFileManifestStoreContract(t *testing.T) {
	store.TestManifestStore(t, func(t *testing.T) store.ManifestStore {
		s, err := NewFileManifestStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestFileCheckpointArchiveContract(t *testing.T) {
	store.TestCheckpointArchive(t, func(t *testing.T) store.CheckpointArchive {
		a, err := NewFileCheckpointArchive(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return a
	})
}
