package receipts

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// A Manifest is the ordered list of source items an ECCR compacted:
//
//	{"manifest_version": "1.0",
//	 "items": [{"item_digest": "sha256:…", "sensitivity": "CONFIDENTIAL", "expires_at": 1796083200}, …]}
//
// items is non-empty and ordered; item digests are unique; expires_at is an
// integer in [1, 2^53−1] or absent when the item never expires. Leaf i of
// the source tree is JCS(items[i]); the tree is the RFC 9162 tree over those
// leaves, so the ECCR's source_items_merkle_root is its root and
// source_item_count its size.
type Manifest struct {
	Items []ManifestItem

	leafHashes [][]byte
	root       []byte
	canonical  []byte
}

// A ManifestItem is one source item.
type ManifestItem struct {
	ItemDigest  string
	Sensitivity string
	ExpiresAt   int64 // 0 when the item never expires
}

// ManifestVersion is the manifest_version of this profile.
const ManifestVersion = "1.0"

// Manifest caps: a compaction may cite up to MaxManifestItems source items,
// and a manifest document may be up to MaxManifestSize bytes.
const (
	MaxManifestItems = 1 << 16
	MaxManifestSize  = 16 << 20
)

var (
	manifestMembers      = []string{"manifest_version", "items"}
	manifestItemMembers  = []string{"item_digest", "sensitivity"}
	manifestItemOptional = []string{"expires_at"}
)

// ParseManifest parses a source manifest strictly (CodeManifestInvalid) and
// computes its leaves and source tree root.
func ParseManifest(data []byte) (*Manifest, error) {
	if len(data) > MaxManifestSize {
		return nil, refuse(CodeTooLarge, "manifest", "manifest is %d bytes, more than the %d allowed", len(data), MaxManifestSize)
	}
	tree, err := parseJSON(data, MaxManifestItems)
	if err != nil {
		return nil, &Error{Code: CodeManifestInvalid, Member: "manifest", Reason: "not strict I-JSON", Err: err}
	}
	return manifestFromTree(&tree, "manifest")
}

func manifestFromTree(tree *value, path string) (*Manifest, error) {
	d := &decoder{code: CodeManifestInvalid}
	top := d.object(tree, path, manifestMembers, nil)
	d.constant(top, path, "manifest_version", ManifestVersion)
	items := d.member(top, "items")
	if d.err == nil && (items.kind != kindArray || len(items.elems) == 0) {
		d.fail(MemberPath(path, "items"), "must be a non-empty array")
	}
	if d.err != nil {
		return nil, d.err
	}
	mf := &Manifest{Items: make([]ManifestItem, len(items.elems))}
	seen := make(map[string]int, len(items.elems))
	for i := range items.elems {
		ipath := MemberPath(path, "items["+strconv.Itoa(i)+"]")
		o := d.object(&items.elems[i], ipath, manifestItemMembers, manifestItemOptional)
		it := &mf.Items[i]
		it.ItemDigest = d.digest(o, ipath, "item_digest")
		it.Sensitivity = d.str(o, ipath, "sensitivity")
		if d.err == nil && !IsLabel(it.Sensitivity) {
			d.fail(MemberPath(ipath, "sensitivity"), "must match ^[A-Z][A-Z0-9_]*$")
		}
		if _, ok := o.get("expires_at"); ok && d.err == nil {
			it.ExpiresAt = d.integer(o, ipath, "expires_at", 1, maxSafeInteger)
		}
		if d.err != nil {
			return nil, d.err
		}
		if j, dup := seen[it.ItemDigest]; dup {
			return nil, refuse(CodeManifestInvalid, MemberPath(ipath, "item_digest"), "repeats items[%d]; item digests are unique within a manifest", j)
		}
		seen[it.ItemDigest] = i
	}
	mf.finish()
	return mf, nil
}

// NewManifest builds a manifest from items (validated as ParseManifest
// would).
func NewManifest(items []ManifestItem) (*Manifest, error) {
	if len(items) == 0 || len(items) > MaxManifestItems {
		return nil, refuse(CodeManifestInvalid, "manifest.items", "must hold 1 to %d items", MaxManifestItems)
	}
	mf := &Manifest{Items: make([]ManifestItem, len(items))}
	seen := make(map[string]bool, len(items))
	for i, it := range items {
		path := "manifest.items[" + strconv.Itoa(i) + "]"
		switch {
		case !IsDigest(it.ItemDigest):
			return nil, refuse(CodeManifestInvalid, path+".item_digest", "must be \"sha256:\" followed by 64 lowercase hex digits")
		case !IsLabel(it.Sensitivity):
			return nil, refuse(CodeManifestInvalid, path+".sensitivity", "must match ^[A-Z][A-Z0-9_]*$")
		case it.ExpiresAt < 0 || it.ExpiresAt > maxSafeInteger:
			return nil, refuse(CodeManifestInvalid, path+".expires_at", "must be in [1, 2^53-1], or 0 for never")
		case seen[it.ItemDigest]:
			return nil, refuse(CodeManifestInvalid, path+".item_digest", "repeats an earlier item")
		}
		seen[it.ItemDigest] = true
		mf.Items[i] = ManifestItem{ItemDigest: it.ItemDigest, Sensitivity: it.Sensitivity, ExpiresAt: it.ExpiresAt}
	}
	mf.finish()
	return mf, nil
}

func (it *ManifestItem) value() value {
	members := []member{m("item_digest", vstr(it.ItemDigest)), m("sensitivity", vstr(it.Sensitivity))}
	if it.ExpiresAt != 0 {
		members = append(members, m("expires_at", vint(it.ExpiresAt)))
	}
	return vobj(members...)
}

// Leaf returns JCS(item), the item's leaf in the source tree.
func (it *ManifestItem) Leaf() []byte {
	v := it.value()
	return appendCanonical(nil, &v)
}

// LeafHash returns the RFC 9162 leaf hash of the item.
func (it *ManifestItem) LeafHash() []byte { return rfc6962.DefaultHasher.HashLeaf(it.Leaf()) }

// finish computes leaves, the root and the canonical bytes.
func (mf *Manifest) finish() {
	mf.leafHashes = make([][]byte, len(mf.Items))
	rf := compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
	r := rf.NewEmptyRange(0)
	items := make([]value, len(mf.Items))
	for i := range mf.Items {
		it := &mf.Items[i]
		items[i] = it.value()
		mf.leafHashes[i] = rfc6962.DefaultHasher.HashLeaf(appendCanonical(nil, &items[i]))
		if err := r.Append(mf.leafHashes[i], nil); err != nil {
			panic(err) // appending to a range that starts at 0 cannot fail
		}
	}
	root, err := r.GetRootHash(nil)
	if err != nil {
		panic(err)
	}
	mf.root = root
	top := vobj(m("manifest_version", vstr(ManifestVersion)), m("items", varr(items)))
	mf.canonical = appendCanonical(nil, &top)
}

// Root returns the source tree root as "sha256:<hex>", the value
// source_items_merkle_root must hold.
func (mf *Manifest) Root() string { return "sha256:" + hex.EncodeToString(mf.root) }

// RootHash returns the raw 32-byte source tree root.
func (mf *Manifest) RootHash() []byte { return mf.root }

// Canonical returns JCS(manifest), the bytes the log stores and serves.
func (mf *Manifest) Canonical() []byte { return mf.canonical }

// Index returns the position of the item with the given digest, or -1.
func (mf *Manifest) Index(itemDigest string) int {
	for i := range mf.Items {
		if mf.Items[i].ItemDigest == itemDigest {
			return i
		}
	}
	return -1
}

// InclusionProof returns the RFC 9162 inclusion proof of item index in the
// source tree, whose size is len(mf.Items).
func (mf *Manifest) InclusionProof(index int) ([][]byte, error) {
	size := uint64(len(mf.Items))
	if index < 0 || uint64(index) >= size {
		return nil, fmt.Errorf("receipts: item index %d out of range [0, %d)", index, size)
	}
	nodes, err := proof.Inclusion(uint64(index), size)
	if err != nil {
		return nil, fmt.Errorf("receipts: %w", err)
	}
	hashes := make([][]byte, len(nodes.IDs))
	for i, id := range nodes.IDs {
		hashes[i] = mf.nodeHash(id)
	}
	return nodes.Rehash(hashes, rfc6962.DefaultHasher.HashChildren)
}

// nodeHash returns the hash of the perfect subtree id, which lies within
// the tree.
func (mf *Manifest) nodeHash(id compact.NodeID) []byte {
	begin, end := id.Coverage()
	rf := compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
	r := rf.NewEmptyRange(begin)
	for i := begin; i < end; i++ {
		if err := r.Append(mf.leafHashes[i], nil); err != nil {
			panic(err)
		}
	}
	return r.Hashes()[0]
}

// CheckAgainst applies the profile rules that bind an ECCR to its manifest:
// the root (CodeMerkleRootMismatch), the count (CodeSourceCountMismatch),
// the ceiling equal to the least upper bound of the labels under lattice
// (CodeSensitivityCeilingMismatch; the ceiling itself must be a label of the
// lattice), and the retention ceiling (CodeRetentionCeilingExceeded).
func (mf *Manifest) CheckAgainst(c *Compaction, lattice *Lattice) error {
	if int64(len(mf.Items)) != c.SourceItemCount {
		return refuse(CodeSourceCountMismatch, "source_item_count", "is %d but the manifest has %d items", c.SourceItemCount, len(mf.Items))
	}
	if mf.Root() != c.SourceItemsMerkleRoot {
		return refuse(CodeMerkleRootMismatch, "source_items_merkle_root", "is %s but the manifest's source tree root is %s", c.SourceItemsMerkleRoot, mf.Root())
	}
	labels := make([]string, len(mf.Items))
	for i := range mf.Items {
		labels[i] = mf.Items[i].Sensitivity
	}
	lub := lattice.LeastUpperBound(labels)
	if !lattice.Known(c.InheritedSensitivityCeiling) {
		return refuse(CodeSensitivityCeilingMismatch, "inherited_sensitivity_ceiling", "%q is not a label of the sensitivity lattice", c.InheritedSensitivityCeiling)
	}
	if c.InheritedSensitivityCeiling != lub {
		return refuse(CodeSensitivityCeilingMismatch, "inherited_sensitivity_ceiling", "is %s but the least upper bound of the sources' labels is %s", c.InheritedSensitivityCeiling, lub)
	}
	if minExp, ok := mf.MinExpiry(); ok && c.RetentionPurgeEpoch > minExp {
		item := ""
		for _, it := range mf.Items {
			if it.ExpiresAt == minExp {
				item = it.ItemDigest
				break
			}
		}
		return refuse(CodeRetentionCeilingExceeded, "retention_purge_epoch", "is %s, later than the earliest source expiry %s (item %s)",
			FormatUnixTime(c.RetentionPurgeEpoch), FormatUnixTime(minExp), item)
	}
	return nil
}

// FormatUnixTime writes Unix seconds as the integer and its RFC 3339 UTC
// time: "1796083200 (2026-12-01T00:00:00Z)".
func FormatUnixTime(sec int64) string {
	return fmt.Sprintf("%d (%s)", sec, time.Unix(sec, 0).UTC().Format(time.RFC3339))
}

// MinExpiry returns the earliest expires_at, and false when no item
// expires.
func (mf *Manifest) MinExpiry() (int64, bool) {
	var min int64
	for _, it := range mf.Items {
		if it.ExpiresAt != 0 && (min == 0 || it.ExpiresAt < min) {
			min = it.ExpiresAt
		}
	}
	return min, min != 0
}

// VerifySourceInclusion checks that leaf (an item's JCS bytes) is at index
// in the source tree committed to by c, with the tree size bound to
// c.SourceItemCount.
func VerifySourceInclusion(c *Compaction, leaf []byte, index uint64, path [][]byte) error {
	root, err := hex.DecodeString(c.SourceItemsMerkleRoot[len("sha256:"):])
	if err != nil {
		return refuse(CodeSourceProofInvalid, "source_items_merkle_root", "not a digest")
	}
	size := uint64(c.SourceItemCount)
	if index >= size {
		return refuse(CodeSourceProofInvalid, "index", "%d is not below source_item_count %d", index, size)
	}
	leafHash := rfc6962.DefaultHasher.HashLeaf(leaf)
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, index, size, leafHash, path, root); err != nil {
		return &Error{Code: CodeSourceProofInvalid, Member: "path", Reason: "inclusion proof does not verify with tree size source_item_count", Err: err}
	}
	return nil
}
