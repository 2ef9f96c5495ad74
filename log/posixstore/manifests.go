package posixstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/memtrail/memtrail/internal/datadir"
	"github.com/memtrail/memtrail/log/store"
	"github.com/memtrail/memtrail/receipts"
)

// FileManifestStore stores manifests as files DIR/<first two hex digits>/<64
// hex digits>.json, written to a temporary file, synced and renamed into
// place, with the directory synced.
type FileManifestStore struct {
	dir string
}

// NewFileManifestStore returns a store rooted at dir, creating it.
func NewFileManifestStore(dir string) (*FileManifestStore, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("couldn't create manifest directory: %w", err)
	}
	return &FileManifestStore{dir: dir}, nil
}

func (s *FileManifestStore) path(root string) (string, error) {
	p, ok := datadir.ManifestPath(s.dir, root)
	if !ok {
		return "", fmt.Errorf("manifest root %q is not a sha256 digest: %w", root, store.ErrNotFound)
	}
	return p, nil
}

func (s *FileManifestStore) Put(ctx context.Context, root string, canonical []byte) error {
	p, err := s.path(root)
	if err != nil {
		return err
	}
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	return writeFileAtomic(p, canonical, 0o644)
}

func (s *FileManifestStore) Get(ctx context.Context, root string) ([]byte, error) {
	p, err := s.path(root)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("manifest %s: %w", root, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("couldn't read manifest %s: %w", root, err)
	}
	mf, err := receipts.ParseManifest(b)
	if err != nil || mf.Root() != root {
		return nil, fmt.Errorf("manifest %s: %w", root, store.ErrManifestCorrupt)
	}
	return b, nil
}

func (s *FileManifestStore) Roots(ctx context.Context) ([]string, error) {
	var roots []string
	err := filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() || !strings.HasSuffix(name, ".json") {
			return nil
		}
		h := strings.TrimSuffix(name, ".json")
		if _, err := hex.DecodeString(h); err == nil && len(h) == 2*sha256.Size {
			roots = append(roots, "sha256:"+h)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("couldn't list manifests: %w", err)
	}
	return roots, nil
}

// Remove deletes the manifest stored under root (fsck --repair removes
// unreferenced manifests).
func (s *FileManifestStore) Remove(ctx context.Context, root string) error {
	p, err := s.path(root)
	if err != nil {
		return err
	}
	return os.Remove(p)
}
