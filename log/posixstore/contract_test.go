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

func TestDriverContract(t *testing.T) {
	store.TestDriver(t, func(t *testing.T) func() store.Driver {
		dir := t.TempDir()
		return func() store.Driver { return NewDriver(dir) }
	})
}

func TestDirLockContract(t *testing.T) {
	dir := t.TempDir()
	store.TestLease(t, func() (store.Lease, error) {
		l, err := LockDir(dir)
		if err != nil {
			return nil, err
		}
		return l, nil
	})
}
