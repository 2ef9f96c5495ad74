package log

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"

	"github.com/memtrail/memtrail/internal/datadir"
	"github.com/memtrail/memtrail/log/store"
	"github.com/memtrail/memtrail/receipts"
	fmtlog "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera"
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
	// VerifierKey verifies the published checkpoint and the archived ones.
	// Without it they are not checked (and fsck says so).
	VerifierKey string
	// Repair rebuilds a damaged, ahead or inconsistent index from the log,
	// rewrites tiles that disagree with the entries (only when the entries
	// hash to the signed tree root, and only with a store.TileRepairer
	// driver), and removes unreferenced manifests (with a
	// store.ManifestRemover).
	Repair bool
	// Progress, if set, is called as entries are checked.
	Progress func(done, total uint64)
}

// Fsck checks the storage of a log that is not running, through the same
// parts the log runs on (c, as log/posixstore.OpenCheck opens a data
// directory): every entry bundle against the tiles, the integrated tree's
// root (when the driver's reader is a store.TreeReader) and the published
// checkpoint; every entry is a receipt; the index agrees with the log
// (every id at the index of its entry, no id twice); every compaction's
// manifest is present and intact; every archived checkpoint is the log's,
// of the tree the entries make at its size. With Repair it fixes what can
// be fixed from the log.
//
// Fsck owns c: it closes its index and releases its lease before it
// returns.
func Fsck(ctx context.Context, c store.Check, opts FsckOptions) (*FsckReport, error) {
	index := c.Index
	defer func() {
		if index != nil {
			index.Close()
		}
		if c.Lease != nil {
			c.Lease.Release()
		}
	}()
	reader, err := c.Driver.Reader(ctx)
	if err != nil {
		return nil, fmt.Errorf("couldn't read the log: %w", err)
	}
	rep := &FsckReport{Entries: map[string]uint64{}, Problems: []Problem{}}
	var size uint64
	var root []byte // nil: the reader has no integrated root to check against
	if tr, ok := reader.(store.TreeReader); ok {
		size, root, err = tr.IntegratedTree(ctx)
	} else {
		size, err = reader.IntegratedSize(ctx)
	}
	if err != nil {
		rep.add(Problem{Kind: "tree_state_unreadable", Detail: err.Error()})
		return rep, nil
	}
	rep.TreeSize = size

	// The published checkpoint.
	var cp *fmtlog.Checkpoint
	vkey := opts.VerifierKey
	if raw, err := reader.ReadCheckpoint(ctx); err == nil {
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

	// The index, if it could be opened.
	switch {
	case index == nil && errors.Is(c.IndexErr, fs.ErrNotExist):
		// Not created here: a check writes nothing.
		rep.add(Problem{Kind: "index_missing", Repairable: true, Detail: c.IndexErr.Error()})
	case index == nil:
		detail := "the index could not be opened"
		if c.IndexErr != nil {
			detail = c.IndexErr.Error()
		}
		rep.add(Problem{Kind: "index_damaged", Detail: detail, Repairable: true})
	default:
		rep.IndexWatermark, _ = index.Watermark(ctx)
		if rep.IndexWatermark > size {
			rep.add(Problem{Kind: "index_ahead", Detail: fmt.Sprintf("index watermark %d is beyond the tree size %d", rep.IndexWatermark, size), Repairable: true})
		} else if rep.IndexWatermark < size {
			rep.add(Problem{Kind: "index_behind", Detail: fmt.Sprintf("index watermark %d, tree size %d: the next start indexes the rest", rep.IndexWatermark, size), Repairable: true})
		}
	}
	archive, manifests := c.Checkpoints, c.Manifests

	// Walk every entry once.
	tc := &tileCheck{reader: reader, size: size, rep: rep}
	rf := compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
	rng := rf.NewEmptyRange(0)
	referenced := map[string]bool{}
	entriesOK := true
	var cpRoot []byte
	if cp != nil && cp.Size == 0 {
		cpRoot = rfc6962.DefaultHasher.EmptyRoot()
	}
	ac := newArchiveCheck(ctx, archive, vkey, rep)
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
		raw, err := reader.ReadEntryBundle(ctx, b, partial)
		var bundle api.EntryBundle
		if err == nil {
			err = bundle.UnmarshalText(raw)
		}
		if err == nil && uint64(len(bundle.Entries)) != want && (partial == 0 || uint64(len(bundle.Entries)) != layout.EntryBundleWidth) {
			// (Asked for a partial bundle, the storage may give the
			// full one that replaced it.)
			err = fmt.Errorf("holds %d entries, want %d", len(bundle.Entries), want)
		}
		if err != nil {
			first := b * layout.EntryBundleWidth
			rep.add(Problem{Kind: "entry_bundle_unreadable", Index: &first, Detail: fmt.Sprintf(
				"entry bundle %d (entries %d to %d, %s): %v; the entries are the log's content and cannot be re-derived from anything else in the directory: "+
					"restore that file from a backup, or from a mirror of the log (tiles are public, and a mirror serves them byte for byte), then run fsck again",
				b, first, first+want-1, bundleFile(b, size), err)})
			entriesOK = false
			break
		}
		for i, leaf := range bundle.Entries[:want] {
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
					if got < idx && sameID(ctx, reader, size, got, r) {
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
		if root != nil && !bytes.Equal(gotRoot, root) {
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
		repairer, _ := c.Driver.(store.TileRepairer)
		for i := range rep.Problems {
			p := &rep.Problems[i]
			f := tc.fix[i]
			if (p.Kind != "tile_mismatch" && p.Kind != "tile_missing") || f == nil {
				continue
			}
			if repairer == nil {
				p.Detail += "; not rewritten: the storage driver cannot rewrite tiles"
				continue
			}
			if err := repairer.RepairTile(ctx, f.level, f.index, f.partial, f.data); err == nil {
				p.Repaired = true
			} else {
				p.Detail += "; repair failed: " + err.Error()
			}
		}
	}

	// Unreferenced manifests.
	if roots, err := manifests.Roots(ctx); err == nil {
		sort.Strings(roots)
		remover, _ := manifests.(store.ManifestRemover)
		for _, r := range roots {
			if !referenced[r] && entriesOK {
				p := Problem{Kind: "manifest_unreferenced", Detail: "manifest " + r + " belongs to no logged compaction (a refused or interrupted submission)", Repairable: remover != nil}
				if opts.Repair && remover != nil && remover.Remove(ctx, r) == nil {
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
			var err error
			if rebuild && index != nil && index.Reset(ctx) != nil {
				index.Close()
				index = nil
			}
			if rebuild && index == nil {
				if c.NewIndex == nil {
					err = errors.New("the storage cannot recreate its index")
				} else if index, err = c.NewIndex(ctx); err != nil {
					index = nil
				} else if _, _, aerr := archive.Latest(ctx); errors.Is(aerr, ErrNotFound) && size > 0 {
					for i := range rep.Problems {
						if p := &rep.Problems[i]; p.Kind == "index_damaged" {
							p.Detail += "; recreated from the log. The checkpoint archive (checkpoints/) holds no checkpoint: " +
								"an index written by an earlier memtrail kept them, and they went with it; to keep them, restore index.db from a backup " +
								"before the next start, which moves them into the archive"
						}
					}
				}
			}
			if err == nil {
				err = rebuildIndex(ctx, reader, manifests, index, size)
			}
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

// bundleFile names entry bundle b of a tree of size as the tiles directory
// holds it (the embedded layout: DIR/log/tile/entries/…).
func bundleFile(b, size uint64) string {
	return path.Join(datadir.Tiles, layout.EntriesPath(b, layout.PartialTileSize(0, b, size)))
}

// sameID reports whether the entry at idx has r's kind and id.
func sameID(ctx context.Context, reader tessera.LogReader, size, idx uint64, r receipts.Receipt) bool {
	b := idx / layout.EntryBundleWidth
	raw, err := reader.ReadEntryBundle(ctx, b, layout.PartialTileSize(0, b, size))
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

// rebuildIndex applies every entry of the log below size to index.
func rebuildIndex(ctx context.Context, reader tessera.LogReader, ms ManifestStore, index Index, size uint64) error {
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

// tileCheck compares the tiles on disk with the nodes recomputed from the
// entries, one tile per level at a time.
type tileCheck struct {
	reader tessera.LogReader
	size   uint64
	rep    *FsckReport
	cur    map[uint64]*tileBuf // by tile level
	fix    map[int]*tileFix    // problem index → the correct tile
}

type tileBuf struct {
	level, index uint64
	hashes       []byte
}

type tileFix struct {
	data         []byte // the tile recomputed from the entries
	got          []byte // the tile stored (nil when missing)
	level, index uint64
	partial      uint8
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
	got, err := tc.reader.ReadTile(context.Background(), b.level, b.index, partial)
	if err == nil && partial > 0 && len(got) == layout.TileWidth*sha256.Size {
		// The full tile that replaced the partial one: its first hashes
		// are the partial tile's.
		got = got[:len(want)]
	}
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
	tc.fix[len(tc.rep.Problems)] = &tileFix{data: append([]byte(nil), want...), got: got, level: b.level, index: b.index, partial: partial}
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
			file := bundleFile(bundle, tc.size)
			tc.rep.add(Problem{Kind: "entry_mismatch", Index: &idx, Detail: fmt.Sprintf(
				"entry %d, in entry bundle %d (file %s), hashes to %x, but tile %s holds %x, the leaf hash the log committed to: that entry bundle is damaged. "+
					"The entries are the log's content and cannot be re-derived from anything else in the directory: restore that file from a backup, or from a mirror of the log "+
					"(tiles are public, and a mirror serves them byte for byte), then run fsck again",
				idx, bundle, file, f.data[j*sha256.Size:(j+1)*sha256.Size], layout.TilePath(0, f.index, layout.PartialTileSize(0, f.index, tc.size)), f.got[j*sha256.Size:(j+1)*sha256.Size])})
		}
	}
}

// archiveCheck compares the archived checkpoints with the tree fsck
// recomputes from the entries, size by size as the walk reaches them. It
// reads the archive a window of sizes at a time, in increasing order (a
// window is the embedded archive's segment: each is read once).
type archiveCheck struct {
	ctx    context.Context
	a      CheckpointArchive
	v      note.Verifier // nil: no key to check with, and nothing is checked
	rep    *FsckReport
	window uint64            // the window of the sizes being walked
	held   map[uint64][]byte // its checkpoints
	loaded bool
}

// archiveWindow is how many sizes archiveCheck reads at a time.
const archiveWindow = 1000

// newArchiveCheck returns the check of archive a under the verifier key
// vkey. Without one there is nothing to check the checkpoints with (fsck
// reports that already), and the check does nothing.
func newArchiveCheck(ctx context.Context, a CheckpointArchive, vkey string, rep *FsckReport) *archiveCheck {
	ac := &archiveCheck{ctx: ctx, a: a, rep: rep}
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
	if w := size / archiveWindow; !ac.loaded || ac.window != w {
		ac.window, ac.held, ac.loaded = w, map[uint64][]byte{}, true
		err := ac.a.Range(ac.ctx, w*archiveWindow, (w+1)*archiveWindow, func(size uint64, signed []byte) error {
			ac.held[size] = signed
			return nil
		})
		if err != nil {
			ac.rep.add(Problem{Kind: "checkpoint_archive_invalid", Detail: err.Error() + "; the checkpoints after the damage cannot be read: restore the archive from a backup"})
		}
	}
	raw, ok := ac.held[size]
	if !ok {
		return
	}
	c, _, _, err := fmtlog.ParseCheckpoint(raw, ac.v.Name(), ac.v)
	switch {
	case err != nil:
		ac.rep.add(Problem{Kind: "checkpoint_archive_invalid", Detail: fmt.Sprintf("the archived checkpoint of size %d does not verify under the log key (%v); restore the archive from a backup", size, err)})
	case c.Size != size:
		ac.rep.add(Problem{Kind: "checkpoint_archive_invalid", Detail: fmt.Sprintf("the archived record of size %d holds a checkpoint of size %d", size, c.Size)})
	case !bytes.Equal(c.Hash, root()):
		ac.rep.add(Problem{Kind: "checkpoint_archive_invalid", Detail: fmt.Sprintf(
			"the archived checkpoint of size %d, signed by the log, has root %x, but the first %d entries hash to %x: the entries or the log's history differ from what it published (a restored backup of another time, or a fork)", size, c.Hash, size, root())})
	}
}

// beyond reports archived checkpoints of sizes greater than the tree.
func (ac *archiveCheck) beyond(size uint64) {
	if latest, _, err := ac.a.Latest(ac.ctx); err == nil && latest > size {
		ac.rep.add(Problem{Kind: "checkpoint_archive_ahead", Detail: fmt.Sprintf(
			"the checkpoint archive holds checkpoints beyond the tree size %d (up to size %d): the tiles are older than the archive; restore log/ from the same backup as checkpoints/, or a later one", size, latest)})
	}
}
