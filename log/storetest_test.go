package log

import (
	"path/filepath"
	"testing"
)

func TestSQLiteIndexContract(t *testing.T) {
	TestIndex(t, func(t *testing.T) Index {
		x, err := OpenSQLiteIndex(filepath.Join(t.TempDir(), "index.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		return x
	})
}

func TestFileManifestStoreContract(t *testing.T) {
	TestManifestStore(t, func(t *testing.T) ManifestStore {
		s, err := NewFileManifestStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestFileCheckpointArchiveContract(t *testing.T) {
	TestCheckpointArchive(t, func(t *testing.T) CheckpointArchive {
		a, err := NewFileCheckpointArchive(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return a
	})
}
