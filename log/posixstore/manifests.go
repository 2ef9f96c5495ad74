package log

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

	"github.com/memtrail/memtrail/internal/atomicfile"
	"github.com/memtrail/memtrail/receipts"
)

// ManifestStore keeps the source manifests of logged compactions, content
// addressed by their source tree root ("sha256:<hex>"), immutable.
//
// Contract, for every implementation:
//
//   - Put stores the canonical manifest bytes under root and is durable when
//     it returns nil. Putting the same root again is a no-op; Put never
//     replaces stored bytes.
//   - Get returns the stored bytes, or an error wrapping ErrNotFound. It
//     checks that the bytes still hash to the root they are stored under
//     (a manifest's root is the Merkle root of its items, so it parses
//     them) and returns an error wrapping ErrManifestCorrupt otherwise.
//   - Roots lists every stored root (for fsck), in any order.
//   - Methods are safe for concurrent use.
//
// The log calls Put before it appends the compaction, so every logged
// compaction has its manifest; a crash in between leaves an unreferenced
// manifest, which fsck reports and may remove.
//
// Who trusts it: nobody has to. Anyone who fetches a manifest recomputes its
// root and compares it with the logged ECCR. An attacker who can write the
// store can delete or alter manifests (the log then serves errors and fsck
// reports the damage) but cannot make an altered manifest verify.
type ManifestStore interface {
	Put(ctx context.Context, root string, canonical []byte) error
	Get(ctx context.Context, root string) ([]byte, error)
	Roots(ctx context.Context) ([]string, error)
}

// ErrManifestCorrupt is returned when stored manifest bytes do not match
// the root they are stored under.
var ErrManifestCorrupt = errors.New("stored manifest does not match its root")

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
	if !receipts.IsDigest(root) {
		return "", fmt.Errorf("manifest root %q is not a sha256 digest: %w", root, ErrNotFound)
	}
	h := root[len("sha256:"):]
	return filepath.Join(s.dir, h[:2], h+".json"), nil
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
		return nil, fmt.Errorf("manifest %s: %w", root, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("couldn't read manifest %s: %w", root, err)
	}
	mf, err := receipts.ParseManifest(b)
	if err != nil || mf.Root() != root {
		return nil, fmt.Errorf("manifest %s: %w", root, ErrManifestCorrupt)
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

// Remove deletes the manifest stored under root (fsck uses it for
// unreferenced manifests).
func (s *FileManifestStore) Remove(root string) error {
	p, err := s.path(root)
	if err != nil {
		return err
	}
	return os.Remove(p)
}

// writeFileAtomic replaces path with data (see atomicfile.Write),
// creating its directory if needed.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("couldn't create %s: %w", dir, err)
	}
	return atomicfile.Write(path, data, perm)
}
