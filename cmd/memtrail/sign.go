package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/receipts"
)

const signUsage = `Usage: memtrail sign projection|compaction|tombstone --key KEY.pem [flags]

Make a signed receipt, for producers and for trying the log out.

	memtrail sign projection --key KEY.pem [--adapter-id URI] [--key-id ID] [--id URI]
		[--request FILE] [--selection-policy FILE] [--trust-snapshot FILE]
		[--source-profile NAME] [--context-frame-profile URI]
		[--material-out FILE] [FRAGMENT...]
	memtrail sign compaction --key KEY.pem --manifest FILE [--id URI] [--output FILE]
		[--trust FILE | --lattice L1,L2,...] [--supersedes ID --purged DIGEST...]
	memtrail sign tombstone --key KEY.pem --item DIGEST [--id URI] [--reason REASON]
		[--purged-at UNIX]

A projection record commits to the FRAGMENT files, in order, as the exact
framed bytes of one context projection (draft section 7): its nonclaims are
NOT_ESTABLISHED and its exclusion counts zero. The files are plain UTF-8
files, not ApertoMemory objects, and the record says so: source profile
urn:memtrail:source-profile:plain, context frame
urn:memtrail:context-frame:plain (each fragment is the file's exact bytes,
and so is its source object), format_version 1, and, since nothing
authenticates a plain file, every entry "unverified", authorship "unknown",
no author key and no custody (docs/profile.md, "Plain files"); a file that
is not UTF-8 is refused, and so are ApertoMemory's profile names. With no
FRAGMENT it records a projection that delivered nothing ("delivered": [],
byte_length 0), which the draft allows. --material-out writes the interop
verification material (request, policy and snapshot bytes, fragments,
projection) for "memtrail verify projection --material". The defaults are
the development adapter of "memtrail serve" (urn:memtrail:adapter:dev,
dev-adapter-key).

A compaction is written as a log submission, {"eccr": ..., "manifest": ...};
the manifest file is {"manifest_version": "1.0", "items": [...]} or a list of
"DIGEST LABEL [EXPIRES_AT]" lines. The ceiling is the least upper bound of the
labels and the retention epoch the earliest expiry; when no item expires
the profile sets no bound, and retention_purge_epoch is 4102444800
(2100-01-01T00:00:00Z), which the command says on standard error. The
labels are ordered
by the log's lattice: pass the log's trust file with --trust (its
sensitivity_lattice, as the log reads it) or the labels, lowest first, with
--lattice; without either, the default lattice
PUBLIC,INTERNAL,CONFIDENTIAL,CONFIDENTIAL_RESTRICTED,HIGHLY_CONFIDENTIAL. A
label that is not in the lattice is refused (the log would rank it top).
A superseding compaction names the compaction it replaces and the purged
items its Bloom filter must hold; its manifest is the superseded one minus
those items, so a --purged item still in the manifest is refused. A
compaction whose every item was purged cannot be superseded: tombstone its
output instead ("memtrail sign tombstone --item" its compacted_output_hash).

Flags may come before or after the FRAGMENT files; "--" ends the flags.
Ids default to fresh urn:uuid values. The receipt is written to standard
output. The command exits 0 if it wrote a receipt, 1 if it could not (a key,
file or manifest that cannot be read, a label not in the lattice, a --purged
item still in the manifest, a value the receipt refuses, a fragment that is
not UTF-8), and 2 on a usage error (an unknown flag or kind, a missing --key,
--manifest or --item, --purged without --supersedes, a malformed --lattice,
an ApertoMemory profile name for a projection).

Example, against a fresh "memtrail serve" in the current directory:

	$ memtrail sign projection --key memtrail-data/dev/adapter.pem notes.txt > p.json
	$ memtrail submit --log http://127.0.0.1:8080 p.json
`

func init() {
	register(&command{name: "sign", synopsis: "make a signed projection record, compaction or tombstone", run: runSign})
}

func runSign(args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fmt.Print(signUsage)
			return nil
		}
		fmt.Fprint(os.Stderr, signUsage)
		return errUsage
	}
	switch args[0] {
	case "projection":
		return signProjection(args[1:])
	case "compaction":
		return signCompaction(args[1:])
	case "tombstone":
		return signTombstone(args[1:])
	}
	fmt.Fprintf(os.Stderr, "memtrail sign: unknown receipt kind %q\n\n%s", args[0], signUsage)
	return errUsage
}

func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return "urn:uuid:" + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func readKey(path string) (ed25519.PrivateKey, error) {
	if path == "" {
		return nil, badUsageError(withHint(errors.New("--key is required"), "the development keys of \"memtrail serve\" are in memtrail-data/dev/"))
	}
	k, err := receipts.ReadPrivateKeyFile(path)
	if errors.Is(err, receipts.ErrKeyFilePermissions) {
		return nil, withHint(err, "run: chmod 600 "+path)
	}
	return k, err
}

func fileDigest(path string) (string, []byte, error) {
	if path == "" {
		return receipts.Digest(nil), nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", nil, err
	}
	return receipts.Digest(b), b, nil
}

func signProjection(args []string) error {
	fs := newFlagSet("sign projection", signUsage)
	keyFlag := fs.String("key", "", "adapter private key (PEM PKCS#8)")
	adapterFlag := fs.String("adapter-id", "urn:memtrail:adapter:dev", "adapter id")
	keyIDFlag := fs.String("key-id", "dev-adapter-key", "adapter key id")
	idFlag := fs.String("id", "", "projection_id (default a fresh urn:uuid)")
	profileFlag := fs.String("source-profile", receipts.SourceProfilePlain, "source profile of the FRAGMENT files (not ApertoMemory's: they are plain files)")
	frameFlag := fs.String("context-frame-profile", receipts.ContextFramePlain, "context frame profile (not ApertoMemory's: each fragment is a file's exact bytes)")
	requestFlag := fs.String("request", "", "file holding the recall request bytes (default empty)")
	policyFlag := fs.String("selection-policy", "", "file holding the selection policy bytes (default empty)")
	snapshotFlag := fs.String("trust-snapshot", "", "file holding the trust snapshot bytes (default empty)")
	materialFlag := fs.String("material-out", "", "write the verification material to this file")
	fragments, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	// The files are not ApertoMemory objects, and this command frames
	// nothing: a record naming ApertoMemory's profiles would claim what
	// nothing here checked.
	if *profileFlag == receipts.SourceProfileApertoMemory || *frameFlag == receipts.ContextFrameApertoMemory {
		return badUsageError(withHint(fmt.Errorf("sign projection signs plain files, not ApertoMemory objects, so it cannot name %s or %s", receipts.SourceProfileApertoMemory, receipts.ContextFrameApertoMemory),
			"leave --source-profile and --context-frame-profile at their defaults, "+receipts.SourceProfilePlain+" and "+receipts.ContextFramePlain+" (docs/profile.md); an ApertoMemory adapter signs its records with receipts.NewProjection"))
	}
	priv, err := readKey(*keyFlag)
	if err != nil {
		return err
	}
	id := *idFlag
	if id == "" {
		id = newUUID()
	}
	reqD, reqB, err := fileDigest(*requestFlag)
	if err != nil {
		return err
	}
	polD, polB, err := fileDigest(*policyFlag)
	if err != nil {
		return err
	}
	snapD, snapB, err := fileDigest(*snapshotFlag)
	if err != nil {
		return err
	}
	var frags []receipts.Fragment
	for _, path := range fragments {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !utf8.Valid(b) {
			return fmt.Errorf("%s is not UTF-8 text, and a projection is UTF-8 bytes only (draft -01 section 4.3)", path)
		}
		// Nothing authenticates a plain file: it is unverified, of
		// unknown authorship, without an author key or custody.
		frags = append(frags, receipts.Fragment{FormatVersion: 1, SealedObjectDigest: receipts.Digest(b), Bytes: b,
			DerivedTrust: "unverified", Authorship: "unknown", AuthorKeyIDB64u: nil, CustodyPresent: false})
	}
	now := time.Now().UTC()
	r, projection, err := receipts.NewProjection(&receipts.ProjectionInput{
		SourceProfile: *profileFlag, ProjectionID: id, CreatedAt: now, AdapterID: *adapterFlag, KeyID: *keyIDFlag,
		RecallRequestDigest: reqD, SelectionPolicyDigest: polD, TrustSnapshotDigest: snapD,
		TrustEvaluatedAt: now, ContextFrameProfile: *frameFlag, Fragments: frags,
	}, priv)
	if err != nil {
		return err
	}
	if *materialFlag != "" {
		if err := os.WriteFile(*materialFlag, verificationMaterial(reqB, polB, snapB, frags, projection), 0o600); err != nil {
			return err
		}
	}
	return writeOut(r.Canonical())
}

// verificationMaterial writes the interop verification_material shape.
func verificationMaterial(req, pol, snap []byte, frags []receipts.Fragment, projection []byte) []byte {
	var sb strings.Builder
	q := strconv.Quote
	sb.WriteString("{\n")
	fmt.Fprintf(&sb, "  \"recall_request_b64u\": %s,\n", q(receipts.EncodeB64u(req)))
	fmt.Fprintf(&sb, "  \"selection_policy_b64u\": %s,\n", q(receipts.EncodeB64u(pol)))
	fmt.Fprintf(&sb, "  \"trust_snapshot_b64u\": %s,\n", q(receipts.EncodeB64u(snap)))
	list := func(name string, f func(receipts.Fragment) string) {
		fmt.Fprintf(&sb, "  %q: [", name)
		for i, fr := range frags {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(q(f(fr)))
		}
		sb.WriteString("],\n")
	}
	list("source_object_b64u_by_position", func(fr receipts.Fragment) string { return receipts.EncodeB64u(fr.Bytes) })
	list("fragment_b64u_by_position", func(fr receipts.Fragment) string { return receipts.EncodeB64u(fr.Bytes) })
	fmt.Fprintf(&sb, "  \"projection_b64u\": %s\n}\n", q(receipts.EncodeB64u(projection)))
	return []byte(sb.String())
}

func writeOut(b []byte) error {
	if _, err := os.Stdout.Write(append(append([]byte{}, b...), '\n')); err != nil {
		return fmt.Errorf("couldn't write the receipt: %w", err)
	}
	return nil
}

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

var _ flag.Value = (*stringList)(nil)

// readManifest reads a manifest file and checks that each item's label is
// in lattice: the log ranks an unknown label top, so a mistyped label would
// silently raise the ceiling.
func readManifest(path string, lattice *receipts.Lattice) (*receipts.Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	unknown := func(where, label string) error {
		return withHint(fmt.Errorf("%s: sensitivity label %q is not in the lattice %s", where, label, strings.Join(lattice.Labels(), ",")),
			"the log orders labels by its trust file's sensitivity_lattice: pass that file with --trust, or the labels with --lattice")
	}
	if t := strings.TrimSpace(string(b)); strings.HasPrefix(t, "{") {
		mf, err := receipts.ParseManifest(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for i, it := range mf.Items {
			if !lattice.Known(it.Sensitivity) {
				return nil, unknown(fmt.Sprintf("%s: items[%d]", path, i), it.Sensitivity)
			}
		}
		return mf, nil
	}
	var items []receipts.ManifestItem
	for n, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) < 2 || len(f) > 3 {
			return nil, fmt.Errorf("%s:%d: want \"DIGEST LABEL [EXPIRES_AT]\"", path, n+1)
		}
		it := receipts.ManifestItem{ItemDigest: f[0], Sensitivity: f[1]}
		if !lattice.Known(it.Sensitivity) {
			return nil, unknown(fmt.Sprintf("%s:%d", path, n+1), it.Sensitivity)
		}
		if len(f) == 3 {
			if it.ExpiresAt, err = strconv.ParseInt(f[2], 10, 64); err != nil || it.ExpiresAt < 1 {
				return nil, fmt.Errorf("%s:%d: EXPIRES_AT must be Unix seconds", path, n+1)
			}
		}
		items = append(items, it)
	}
	return receipts.NewManifest(items)
}

func signCompaction(args []string) error {
	fs := newFlagSet("sign compaction", signUsage)
	keyFlag := fs.String("key", "", "compactor private key (PEM PKCS#8)")
	manifestFlag := fs.String("manifest", "", "source manifest: JSON, or DIGEST LABEL [EXPIRES_AT] lines")
	idFlag := fs.String("id", "", "compaction_event_id (default a fresh urn:uuid)")
	outputFlag := fs.String("output", "", "file holding the compacted output (its digest is compacted_output_hash)")
	supersedesFlag := fs.String("supersedes", "", "compaction_event_id this compaction replaces")
	trustFlag := fs.String("trust", "", "the log's trust file: take its sensitivity_lattice")
	latticeFlag := fs.String("lattice", "", "the sensitivity labels, lowest first, separated by commas")
	var purged stringList
	fs.Var(&purged, "purged", "digest of an item purged since the superseded compaction (repeatable)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	const synopsis = "memtrail sign compaction --key KEY.pem --manifest FILE [--id URI] [--output FILE] [--trust FILE | --lattice L1,L2,...] [--supersedes ID --purged DIGEST...]"
	if err := checkUsage(synopsis, fs, pos, nil, "manifest"); err != nil {
		return err
	}
	if *trustFlag != "" && *latticeFlag != "" {
		return synopsisUsage(synopsis, "--trust and --lattice both give the lattice", "give --trust or --lattice, not both")
	}
	if len(purged) > 0 && *supersedesFlag == "" {
		return badUsageError(withHint(errors.New("--purged needs --supersedes"), "name the compaction this one replaces"))
	}
	lattice := receipts.DefaultLattice
	if *latticeFlag != "" {
		if lattice, err = receipts.NewLattice(strings.Split(*latticeFlag, ",")); err != nil {
			return badUsageError(withHint(fmt.Errorf("--lattice: %w", err), "give the labels lowest first, separated by commas, e.g. PUBLIC,INTERNAL,SECRET"))
		}
	}
	priv, err := readKey(*keyFlag)
	if err != nil {
		return err
	}
	if *trustFlag != "" {
		t, err := readTrust(*trustFlag) // as the log reads it
		if err != nil {
			return err
		}
		lattice = t.Lattice
	}
	mf, err := readManifest(*manifestFlag, lattice)
	if err != nil {
		return err
	}
	for _, p := range purged {
		if !receipts.IsDigest(p) {
			return fmt.Errorf("--purged %q: an item digest is \"sha256:\" followed by 64 lowercase hex digits", p)
		}
		if i := mf.Index(p); i >= 0 {
			return withHint(fmt.Errorf("--purged %s is still item %d of the manifest: a superseding compaction's manifest is the superseded one minus the items purged since (profile 3.5), so the log would refuse it (supersession_invalid)", p, i),
				"remove the purged items from "+*manifestFlag+", or drop --purged for an item that was not purged")
		}
	}
	if _, ok := mf.MinExpiry(); !ok {
		fmt.Fprintf(os.Stderr, "memtrail: note: no item of the manifest expires; retention_purge_epoch is %s\n", receipts.FormatUnixTime(gen.NoExpiryEpoch))
	}
	id := *idFlag
	if id == "" {
		id = newUUID()
	}
	s := &gen.Signers{Compactor: priv}
	c, mf, err := s.Compaction(id, mf.Items, *supersedesFlag, purged, lattice)
	if err != nil {
		return err
	}
	if *outputFlag != "" {
		d, _, err := fileDigest(*outputFlag)
		if err != nil {
			return err
		}
		c.CompactedOutputHash = d
		if c, err = receipts.SignCompaction(c, priv); err != nil {
			return err
		}
	}
	return writeOut(gen.CompactionSubmission(c, mf))
}

func signTombstone(args []string) error {
	fs := newFlagSet("sign tombstone", signUsage)
	keyFlag := fs.String("key", "", "issuer private key (PEM PKCS#8)")
	itemFlag := fs.String("item", "", "digest of the purged item")
	idFlag := fs.String("id", "", "tombstone_id (default a fresh urn:uuid)")
	reasonFlag := fs.String("reason", "regulatory_erasure", "regulatory_erasure, retention_expiry or owner_request")
	atFlag := fs.Int64("purged-at", 0, "purge time in Unix seconds (default now)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := checkUsage("memtrail sign tombstone --key KEY.pem --item DIGEST [--id URI] [--reason REASON] [--purged-at UNIX]", fs, pos, nil, "item"); err != nil {
		return err
	}
	priv, err := readKey(*keyFlag)
	if err != nil {
		return err
	}
	id := *idFlag
	if id == "" {
		id = newUUID()
	}
	at := *atFlag
	if at == 0 {
		at = time.Now().Unix()
	}
	t, err := receipts.SignTombstone(&receipts.Tombstone{TombstoneID: id, ItemDigest: *itemFlag, PurgedAt: at, Reason: *reasonFlag}, priv)
	if err != nil {
		return err
	}
	return writeOut(t.Canonical())
}
