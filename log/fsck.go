package log

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/memtrail/memtrail/receipts"
	fmtlog "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera/api"
	"github.com/transparency-dev/tessera/api/layout"
	"golang.org/x/mod/sumdb/note"
)

// A Problem is one thing fsck found wrong with a data directory.
type Problem struct {
	// Kind is one of: tree_state_unreadable, entry_bundle_unreadable,
	// entry_not_a_receipt, entries_do_not_match_tree (the entries do not
	// hash to the tree root: the log content is damaged and fsck cannot
	// repair it), entry_mismatch (an entry does not hash to the leaf hash
	// its tile holds, while the entries do not hash to the tree root: that
	// entry bundle is the damaged file), checkpoint_invalid, checkpoint_mismatch, tile_mismatch,
	// tile_missing, duplicate_id, manifest_missing, manifest_corrupt,
	// manifest_unreferenced, index_damaged, index_missing, index_ahead, index_behind,
	// index_mismatch.
	Kind       string  `json:"kind"`
	Index      *uint64 `json:"index,omitempty"`
	Detail     string  `json:"detail"`
	Repairable bool    `json:"repairable"`
	Repaired   bool    `json:"repaired"`
}

// FsckReport is what Fsck found and did.
type FsckReport struct {
	TreeSize       uint64            `json:"tree_size"`       // integrated entries
	PublishedSize  uint64            `json:"published_size"`  // of the published checkpoint
	IndexWatermark uint64            `json:"index_watermark"` // before any repair
	Entries        map[string]uint64 `json:"entries"`
	Problems       []Problem         `json:"problems"`
}

// OK reports whether nothing is wrong (after repairs).
func (r *FsckReport) OK() bool {
	for _, p := range r.Problems {
		if !p.Repaired && p.Kind != "index_behind" && p.Kind != "manifest_unreferenced" {
			return false
		}
	}
	return true
}

func (r *FsckReport) add(p Problem) { r.Problems = append(r.Problems, p) }

// FsckOptions configures Fsck.
type FsckOptions struct {
	// VerifierKey verifies the published checkpoint; by default it is
	// derived from DIR/log.key when that file is readable.
	VerifierKey string
	// Repair rebuilds a damaged, ahead or inconsistent index from the log,
	// rewrites tiles that disagree with the entries (only when the entries
	// hash to the signed tree root), and removes unreferenced manifests.
	Repair bool
	// Progress, if set, is called as entries are checked.
	Progress func(done, total uint64)
}

// Fsck checks the data directory of a log that is not running: every entry
// bundle against the tiles, the tree state root and the published
// checkpoint; every entry is a receipt; the index agrees with the log (every
// id at the index of its entry, no id twice); every compaction's manifest is
// present and intact. With Repair it fixes what can be fixed from the log.
//
// Fsck takes the directory's lock, so it refuses (ErrDirInUse) while
// memtrail serve runs on it; a directory it cannot write is checked
// without the lock, but not repaired.
func Fsck(ctx context.Context, dir string, opts FsckOptions) (*FsckReport, error) {
	lock, err := lockDir(dir)
	switch {
	case errors.Is(err, ErrDirInUse):
		return nil, fmt.Errorf("%w: stop memtrail serve before checking its directory", err)
	case err != nil && opts.Repair:
		return nil, err
	}
	defer lock.Release()
	tiles := filepath.Join(dir, tilesDir)
	rep := &FsckReport{Entries: map[string]uint64{}, Problems: []Problem{}}
	size, root, err := readTreeState(tiles)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s holds no log (no %s): %w", dir, filepath.Join(tilesDir, ".state", "treeState"), err)
		}
		rep.add(Problem{Kind: "tree_state_unreadable", Detail: err.Error()})
		return rep, nil
	}
	rep.TreeSize = size

	// The published checkpoint.
	var cp *fmtlog.Checkpoint
	vkey := opts.VerifierKey
	if vkey == "" {
		if b, err := receipts.ReadSecretFile(filepath.Join(dir, "log.key")); err == nil {
			vkey, _ = VerifierKey(string(bytes.TrimSpace(b)))
		}
	}
	if raw, err := os.ReadFile(filepath.Join(tiles, layout.CheckpointPath)); err == nil {
		if v, verr := note.NewVerifier(vkey); verr == nil {
			c, _, _, err := fmtlog.ParseCheckpoint(raw, v.Name(), v)
			if err != nil {
				rep.add(Problem{Kind: "checkpoint_invalid", Detail: "the published checkpoint does not verify under the log key: " + err.Error()})
			} else {
				cp = c
				rep.PublishedSize = c.Size
			}
		} else if opts.VerifierKey != "" {
			rep.add(Problem{Kind: "checkpoint_invalid", Detail: "the checkpoint was not checked: the verifier key given is not a signed-note verifier key (" + verr.Error() + ")"})
		} else {
			rep.add(Problem{Kind: "checkpoint_invalid", Detail: "the checkpoint was not checked: no log key in the directory to verify it with (pass the verifier key)"})
		}
	}
	if cp != nil && cp.Size > size {
		rep.add(Problem{Kind: "checkpoint_mismatch", Detail: fmt.Sprintf("published checkpoint has size %d but the tree state only %d", cp.Size, size)})
		cp = nil
	}

	// The index, opened only if it is sound.
	idxPath := filepath.Join(dir, "index.db")
	var index Index
	if _, err := os.Stat(idxPath); errors.Is(err, fs.ErrNotExist) {
		// Not created here: a check writes nothing.
		rep.add(Problem{Kind: "index_missing", Repairable: true, Detail: "the index database " + idxPath + " is missing: " +
			"memtrail serve (or fsck --repair) rebuilds it from the log"})
	} else if x, err := OpenSQLiteIndex(idxPath); err != nil {
		rep.add(Problem{Kind: "index_damaged", Detail: err.Error(), Repairable: true})
	} else {
		index = x
		defer func() { index.Close() }()
		rep.IndexWatermark, _ = x.Watermark(ctx)
		if rep.IndexWatermark > size {
			rep.add(Problem{Kind: "index_ahead", Detail: fmt.Sprintf("index watermark %d is beyond the tree size %d", rep.IndexWatermark, size), Repairable: true})
		} else if rep.IndexWatermark < size {
			rep.add(Problem{Kind: "index_behind", Detail: fmt.Sprintf("index watermark %d, tree size %d: the next start indexes the rest", rep.IndexWatermark, size), Repairable: true})
		}
	}
	// The checkpoint archive is created (empty) only to repair: a check
	// writes nothing.
	archive := &FileCheckpointArchive{dir: filepath.Join(dir, checkpointsDir)}
	if opts.Repair {
		if archive, err = NewFileCheckpointArchive(archive.dir); err != nil {
			return nil, err
		}
	}
	manifests, err := NewFileManifestStore(filepath.Join(dir, "manifests"))
	if err != nil {
		return nil, err
	}

	// Walk every entry once.
	tc := &tileCheck{dir: tiles, size: size, rep: rep}
	rf := compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
	rng := rf.NewEmptyRange(0)
	referenced := map[string]bool{}
	entriesOK := true
	var cpRoot []byte
	if cp != nil && cp.Size == 0 {
		cpRoot = rfc6962.DefaultHasher.EmptyRoot()
	}
	ac := newArchiveCheck(archive, vkey, rep)
	ac.at(0, func() []byte { return rfc6962.DefaultHasher.EmptyRoot() })
	indexBad := false
	for b := uint64(0); b*layout.EntryBundleWidth < size; b++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		partial := layout.PartialTileSize(0, b, size)
		want := uint64(layout.EntryBundleWidth)
		if partial > 0 {
			want = uint64(partial)
		}
		raw, err := os.ReadFile(filepath.Join(tiles, filepath.FromSlash(layout.EntriesPath(b, partial))))
		var bundle api.EntryBundle
		if err == nil {
			err = bundle.UnmarshalText(raw)
		}
		if err == nil && uint64(len(bundle.Entries)) != want {
			err = fmt.Errorf("holds %d entries, want %d", len(bundle.Entries), want)
		}
		if err != nil {
			first := b * layout.EntryBundleWidth
			rep.add(Problem{Kind: "entry_bundle_unreadable", Index: &first, Detail: fmt.Sprintf(
				"entry bundle %d (entries %d to %d, file %s): %v; the entries are the log's content and cannot be re-derived from anything else in the directory: "+
					"restore that file from a backup, or from a mirror of the log (tiles are public, and a mirror serves them byte for byte), then run fsck again",
				b, first, first+want-1, filepath.Join(tilesDir, filepath.FromSlash(layout.EntriesPath(b, layout.PartialTileSize(0, b, size)))), err)})
			entriesOK = false
			break
		}
		for i, leaf := range bundle.Entries {
			idx := b*layout.EntryBundleWidth + uint64(i)
			if err := rng.Append(rfc6962.DefaultHasher.HashLeaf(leaf), tc.visit); err != nil {
				return nil, err
			}
			if cp != nil && rng.End() == cp.Size {
				cpRoot, _ = rng.GetRootHash(nil)
			}
			ac.at(rng.End(), func() []byte { r, _ := rng.GetRootHash(nil); return r })
			r, err := receipts.ParseReceipt(leaf)
			if err != nil {
				at := idx
				rep.add(Problem{Kind: "entry_not_a_receipt", Index: &at, Detail: err.Error()})
				continue
			}
			rep.Entries[string(r.Kind())]++
			if c, ok := r.(*receipts.Compaction); ok {
				referenced[c.SourceItemsMerkleRoot] = true
				if _, err := manifests.Get(ctx, c.SourceItemsMerkleRoot); err != nil {
					kind := "manifest_missing"
					if errors.Is(err, ErrManifestCorrupt) {
						kind = "manifest_corrupt"
					}
					at := idx
					rep.add(Problem{Kind: kind, Index: &at, Detail: fmt.Sprintf("compaction %s: manifest %s: %v; restore it from a backup or from the compactor (its root is in the log, so any copy can be checked)", c.EventID, c.SourceItemsMerkleRoot, err)})
				}
			}
			if index != nil && idx < rep.IndexWatermark {
				got, err := index.LookupID(ctx, r.Kind(), r.ID())
				switch {
				case err != nil:
					at := idx
					rep.add(Problem{Kind: "index_mismatch", Index: &at, Detail: fmt.Sprintf("%s %q is not in the index: %v", r.Kind(), r.ID(), err), Repairable: true})
					indexBad = true
				case got != idx:
					at := idx
					if got < idx && sameID(ctx, tiles, size, got, r) {
						rep.add(Problem{Kind: "duplicate_id", Index: &at, Detail: fmt.Sprintf("%s %q was logged at %d and again at %d", r.Kind(), r.ID(), got, idx)})
					} else {
						rep.add(Problem{Kind: "index_mismatch", Index: &at, Detail: fmt.Sprintf("the index maps %s %q to %d", r.Kind(), r.ID(), got), Repairable: true})
						indexBad = true
					}
				}
			}
		}
		if opts.Progress != nil {
			opts.Progress(min((b+1)*layout.EntryBundleWidth, size), size)
		}
	}

	if entriesOK {
		gotRoot := rfc6962.DefaultHasher.EmptyRoot()
		if size > 0 {
			gotRoot, _ = rng.GetRootHash(nil)
		}
		if !bytes.Equal(gotRoot, root) {
			entriesOK = false
			rep.add(Problem{Kind: "entries_do_not_match_tree", Detail: fmt.Sprintf("the %d entries hash to %x, the tree state says %x", size, gotRoot, root)})
		}
		if cp != nil && cpRoot != nil && !bytes.Equal(cpRoot, cp.Hash) {
			entriesOK = false
			rep.add(Problem{Kind: "entries_do_not_match_tree", Detail: fmt.Sprintf("the first %d entries hash to %x, the signed checkpoint says %x", cp.Size, cpRoot, cp.Hash)})
		}
		ac.beyond(size)
	}
	// Tiles the walk has not compared yet (those at the right edge), now,
	// so that damaged entries there are located too. A tile the walk did
	// not fill (it stopped at an unreadable bundle) is not compared.
	tc.flushAll()
	tc.explain(entriesOK)

	// Tiles: rewrite from the entries only when the entries are right.
	if opts.Repair && entriesOK {
		for i := range rep.Problems {
			p := &rep.Problems[i]
			if (p.Kind == "tile_mismatch" || p.Kind == "tile_missing") && tc.fix[i] != nil {
				if err := writeFileAtomic(tc.fix[i].path, tc.fix[i].data, 0o644); err == nil {
					p.Repaired = true
				} else {
					p.Detail += "; repair failed: " + err.Error()
				}
			}
		}
	}

	// Unreferenced manifests.
	if roots, err := manifests.Roots(ctx); err == nil {
		sort.Strings(roots)
		for _, r := range roots {
			if !referenced[r] && entriesOK {
				p := Problem{Kind: "manifest_unreferenced", Detail: "manifest " + r + " belongs to no logged compaction (a refused or interrupted submission)", Repairable: true}
				if opts.Repair && manifests.Remove(r) == nil {
					p.Repaired = true
				}
				rep.add(p)
			}
		}
	}

	// The index: rebuild it from the log when it is wrong.
	if opts.Repair && entriesOK {
		rebuild := index == nil || indexBad || rep.IndexWatermark > size
		catchUp := !rebuild && rep.IndexWatermark < size
		if rebuild || catchUp {
			// The checkpoint archive is not in the index (it is in
			// checkpoints/, which fsck never changes), but an index written
			// by an earlier memtrail may still hold the checkpoints it
			// archived: they are moved out before the index is touched.
			if index != nil {
				if _, err := migrateCheckpoints(ctx, index, archive); err != nil {
					return rep, err
				}
			}
			closing := index != nil // the deferred Close closes whatever index holds
			if rebuild && index != nil && index.Reset(ctx) != nil {
				index.Close()
				index = nil
			}
			if rebuild && index == nil {
				for _, suffix := range []string{"", "-wal", "-shm", "-ids"} {
					os.Remove(idxPath + suffix)
				}
				x, err := OpenSQLiteIndex(idxPath)
				if err != nil {
					return rep, fmt.Errorf("couldn't recreate the index: %w", err)
				}
				index = x
				if !closing {
					defer x.Close()
				}
				if _, _, err := archive.Latest(ctx); errors.Is(err, ErrNotFound) && size > 0 {
					for i := range rep.Problems {
						if p := &rep.Problems[i]; p.Kind == "index_damaged" {
							p.Detail += "; recreated from the log. The checkpoint archive (" + checkpointsDir + "/) holds no checkpoint: " +
								"an index written by an earlier memtrail kept them, and they went with it; to keep them, restore index.db from a backup " +
								"before the next start, which moves them into the archive"
						}
					}
				}
			}
			err := rebuildIndex(ctx, dir, index, size)
			for i := range rep.Problems {
				p := &rep.Problems[i]
				if p.Repairable && (p.Kind == "index_damaged" || p.Kind == "index_missing" || p.Kind == "index_ahead" || p.Kind == "index_behind" || p.Kind == "index_mismatch") {
					if err == nil {
						p.Repaired = true
					} else {
						p.Detail += "; rebuild failed: " + err.Error()
					}
				}
			}
		}
	}
	if opts.Repair && !entriesOK {
		for i := range rep.Problems {
			if p := &rep.Problems[i]; p.Repairable && !p.Repaired {
				p.Detail += "; not repaired: fsck repairs nothing from entries that do not hash to the tree root"
			}
		}
	}
	return rep, nil
}

// sameID reports whether the entry at idx has r's kind and id.
func sameID(ctx context.Context, tiles string, size, idx uint64, r receipts.Receipt) bool {
	b := idx / layout.EntryBundleWidth
	raw, err := os.ReadFile(filepath.Join(tiles, filepath.FromSlash(layout.EntriesPath(b, layout.PartialTileSize(0, b, size)))))
	if err != nil {
		return false
	}
	var bundle api.EntryBundle
	if bundle.UnmarshalText(raw) != nil || uint64(len(bundle.Entries)) <= idx%layout.EntryBundleWidth {
		return false
	}
	other, err := receipts.ParseReceipt(bundle.Entries[idx%layout.EntryBundleWidth])
	return err == nil && other.Kind() == r.Kind() && other.ID() == r.ID()
}

// rebuildIndex applies every entry of the log in dir to index.
func rebuildIndex(ctx context.Context, dir string, index Index, size uint64) error {
	ms, err := NewFileManifestStore(filepath.Join(dir, "manifests"))
	if err != nil {
		return err
	}
	reader := fileReader{dir: filepath.Join(dir, tilesDir), size: size}
	l := &Log{index: index, manifests: ms}
	for {
		wm, err := index.Watermark(ctx)
		if err != nil {
			return err
		}
		if wm >= size {
			return nil
		}
		n := min(size-wm, maxApply)
		entries, err := l.readEntriesFrom(ctx, reader, wm, n, size)
		if err != nil {
			return err
		}
		if err := index.Apply(ctx, wm, entries); err != nil {
			return err
		}
	}
}

// fileReader reads entry bundles from a tiles directory.
type fileReader struct {
	dir  string
	size uint64
}

func (f fileReader) ReadEntryBundle(ctx context.Context, index uint64, p uint8) ([]byte, error) {
	return os.ReadFile(filepath.Join(f.dir, filepath.FromSlash(layout.EntriesPath(index, p))))
}

func readTreeState(tiles string) (uint64, []byte, error) {
	raw, err := os.ReadFile(filepath.Join(tiles, ".state", "treeState"))
	if err != nil {
		return 0, nil, err
	}
	var ts struct {
		Size uint64 `json:"size"`
		Root []byte `json:"root"`
	}
	if err := json.Unmarshal(raw, &ts); err != nil || len(ts.Root) != sha256.Size {
		return 0, nil, fmt.Errorf("tree state file is malformed: %v", err)
	}
	return ts.Size, ts.Root, nil
}

// tileCheck compares the tiles on disk with the nodes recomputed from the
// entries, one tile per level at a time.
type tileCheck struct {
	dir  string
	size uint64
	rep  *FsckReport
	cur  map[uint64]*tileBuf // by tile level
	fix  map[int]*tileFix    // problem index → the correct tile
}

type tileBuf struct {
	level, index uint64
	hashes       []byte
}

type tileFix struct {
	path         string
	data         []byte // the tile recomputed from the entries
	got          []byte // the tile on disk (nil when missing)
	level, index uint64
}

func (tc *tileCheck) visit(id compact.NodeID, hash []byte) {
	if id.Level%layout.TileHeight != 0 {
		return
	}
	level := uint64(id.Level / layout.TileHeight)
	index := id.Index / layout.TileWidth
	if tc.cur == nil {
		tc.cur = map[uint64]*tileBuf{}
	}
	b := tc.cur[level]
	if b != nil && b.index != index {
		tc.flush(b)
		b = nil
	}
	if b == nil {
		b = &tileBuf{level: level, index: index, hashes: make([]byte, 0, layout.TileWidth*sha256.Size)}
		tc.cur[level] = b
	}
	b.hashes = append(b.hashes, hash...)
}

func (tc *tileCheck) flushAll() {
	levels := make([]uint64, 0, len(tc.cur))
	for l := range tc.cur {
		levels = append(levels, l)
	}
	sort.Slice(levels, func(i, j int) bool { return levels[i] < levels[j] })
	for _, l := range levels {
		tc.flush(tc.cur[l])
	}
}

func (tc *tileCheck) flush(b *tileBuf) {
	partial := layout.PartialTileSize(b.level, b.index, tc.size)
	width := uint64(layout.TileWidth)
	if partial > 0 {
		width = uint64(partial)
	}
	if uint64(len(b.hashes)) < width*sha256.Size {
		return // only a tile the tree size covers in full is checked
	}
	want := b.hashes[:width*sha256.Size]
	path := filepath.Join(tc.dir, filepath.FromSlash(layout.TilePath(b.level, b.index, partial)))
	got, err := os.ReadFile(path)
	kind := ""
	switch {
	case errors.Is(err, fs.ErrNotExist):
		kind = "tile_missing"
	case err != nil || !bytes.Equal(got, want):
		kind = "tile_mismatch"
	default:
		return
	}
	name := layout.TilePath(b.level, b.index, partial)
	var detail string
	switch {
	case kind == "tile_missing":
		detail = "tile " + name + " is missing"
	case len(got) != len(want):
		detail = fmt.Sprintf("tile %s is %d bytes, but the entries make a tile of %d", name, len(got), len(want))
	default:
		i := firstDifferentHash(got, want)
		detail = fmt.Sprintf("tile %s differs from the tile the entries make at hash %d (%s): it holds %x, the entries give %x",
			name, i, tc.nodeName(b.level, b.index, i), got[i*sha256.Size:(i+1)*sha256.Size], want[i*sha256.Size:(i+1)*sha256.Size])
	}
	if tc.fix == nil {
		tc.fix = map[int]*tileFix{}
	}
	tc.fix[len(tc.rep.Problems)] = &tileFix{path: path, data: append([]byte(nil), want...), got: got, level: b.level, index: b.index}
	tc.rep.add(Problem{Kind: kind, Detail: detail, Repairable: true})
}

// nodeName says what hash i of a tile is.
func (tc *tileCheck) nodeName(level, index uint64, i int) string {
	if level == 0 {
		return fmt.Sprintf("the leaf hash of entry %d", index*layout.TileWidth+uint64(i))
	}
	return fmt.Sprintf("node %d of tree level %d", index*layout.TileWidth+uint64(i), level*layout.TileHeight)
}

func firstDifferentHash(got, want []byte) int {
	for i := 0; (i+1)*sha256.Size <= len(want); i++ {
		if !bytes.Equal(got[i*sha256.Size:(i+1)*sha256.Size], want[i*sha256.Size:(i+1)*sha256.Size]) {
			return i
		}
	}
	return 0
}

// explain finishes the tile problems once it is known whether the entries
// hash to the tree root. When they do, a tile that disagrees with them is
// damaged and can be rewritten from them. When they do not, the entries
// are what is damaged: the tiles hold what the log committed to, so none is
// rewritten, and each level-0 tile that disagrees names the entry, and the
// entry bundle, that no longer hashes to its leaf hash.
func (tc *tileCheck) explain(entriesOK bool) {
	n := len(tc.rep.Problems)
	for i := 0; i < n; i++ {
		f := tc.fix[i]
		if f == nil {
			continue
		}
		p := &tc.rep.Problems[i]
		if entriesOK {
			p.Detail += "; it can be rewritten from the entries"
			continue
		}
		p.Repairable = false
		p.Detail += "; not rewritten: the entries do not hash to the tree root, so they, not the tile, are damaged"
		if f.level != 0 || len(f.got) != len(f.data) {
			continue
		}
		for j := 0; (j+1)*sha256.Size <= len(f.data); j++ {
			if bytes.Equal(f.got[j*sha256.Size:(j+1)*sha256.Size], f.data[j*sha256.Size:(j+1)*sha256.Size]) {
				continue
			}
			idx := f.index*layout.TileWidth + uint64(j)
			bundle := idx / layout.EntryBundleWidth
			file := filepath.Join(tilesDir, filepath.FromSlash(layout.EntriesPath(bundle, layout.PartialTileSize(0, bundle, tc.size))))
			tc.rep.add(Problem{Kind: "entry_mismatch", Index: &idx, Detail: fmt.Sprintf(
				"entry %d, in entry bundle %d (file %s), hashes to %x, but tile %s holds %x, the leaf hash the log committed to: that entry bundle is damaged. "+
					"The entries are the log's content and cannot be re-derived from anything else in the directory: restore that file from a backup, or from a mirror of the log "+
					"(tiles are public, and a mirror serves them byte for byte), then run fsck again",
				idx, bundle, file, f.data[j*sha256.Size:(j+1)*sha256.Size], layout.TilePath(0, f.index, layout.PartialTileSize(0, f.index, tc.size)), f.got[j*sha256.Size:(j+1)*sha256.Size])})
		}
	}
}

// archiveCheck compares the archived checkpoints with the tree fsck
// recomputes from the entries, size by size as the walk reaches them (in
// increasing order, so each segment is read once).
type archiveCheck struct {
	a      *FileCheckpointArchive
	v      note.Verifier // nil: no key to check with, and nothing is checked
	rep    *FsckReport
	seg    *segment // the segment of the sizes being walked
	loaded bool
}

// newArchiveCheck returns the check of archive a under the verifier key
// vkey. Without one there is nothing to check the checkpoints with (fsck
// reports that already), and the check does nothing.
func newArchiveCheck(a *FileCheckpointArchive, vkey string, rep *FsckReport) *archiveCheck {
	ac := &archiveCheck{a: a, rep: rep}
	if v, err := note.NewVerifier(vkey); err == nil {
		ac.v = v
	}
	return ac
}

// at checks the archived checkpoint of size, if there is one, against the
// tree's root at that size.
func (ac *archiveCheck) at(size uint64, root func() []byte) {
	if ac.v == nil {
		return
	}
	if g := size / segmentSpan; !ac.loaded || ac.seg.group != g {
		seg, err := ac.a.readSegment(g)
		if err != nil {
			ac.rep.add(Problem{Kind: "checkpoint_archive_invalid", Detail: err.Error() + "; the checkpoints after the damage cannot be read: restore the file from a backup"})
		}
		if seg == nil {
			seg = &segment{group: g}
		}
		ac.seg, ac.loaded = seg, true
	}
	raw, ok := ac.seg.last[size]
	if !ok {
		return
	}
	path := ac.a.segmentPath(ac.seg.group)
	c, _, _, err := fmtlog.ParseCheckpoint(raw, ac.v.Name(), ac.v)
	switch {
	case err != nil:
		ac.rep.add(Problem{Kind: "checkpoint_archive_invalid", Detail: fmt.Sprintf("the checkpoint of size %d in %s does not verify under the log key (%v); restore the file from a backup", size, path, err)})
	case c.Size != size:
		ac.rep.add(Problem{Kind: "checkpoint_archive_invalid", Detail: fmt.Sprintf("the record of size %d in %s holds a checkpoint of size %d", size, path, c.Size)})
	case !bytes.Equal(c.Hash, root()):
		ac.rep.add(Problem{Kind: "checkpoint_archive_invalid", Detail: fmt.Sprintf(
			"the checkpoint of size %d in %s, signed by the log, has root %x, but the first %d entries hash to %x: the entries or the log's history differ from what it published (a restored backup of another time, or a fork)", size, path, c.Hash, size, root())})
	}
}

// beyond reports archived checkpoints of sizes greater than the tree.
func (ac *archiveCheck) beyond(size uint64) {
	if latest, _, err := ac.a.Latest(context.Background()); err == nil && latest > size {
		ac.rep.add(Problem{Kind: "checkpoint_archive_ahead", Detail: fmt.Sprintf(
			"the checkpoint archive holds checkpoints beyond the tree size %d (up to size %d): the tiles are older than the archive; restore log/ from the same backup as %s/, or a later one", size, latest, checkpointsDir)})
	}
}
