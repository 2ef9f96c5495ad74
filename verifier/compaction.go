package verifier

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/memtrail/memtrail/receipts"
)

// Names of the checks of a compaction report, in their order of
// precedence.
const (
	CheckCompactionStructure = "structure"
	CheckCompactorKey        = "compactor_key"
	CheckCompactionSignature = "signature"
	CheckManifest            = "manifest"
	CheckSourceCount         = "source_count"
	CheckMerkleRoot          = "source_merkle_root"
	CheckSensitivityCeiling  = "sensitivity_ceiling"
	CheckRetentionCeiling    = "retention_ceiling"
	CheckBloomFilter         = "bloom_filter"
	CheckSourceProof         = "source_proof"
)

// CompactionOptions configures [VerifyCompaction]. Exactly one of Keys and
// RawKeys should be set; with neither, the signature is refused with
// key_not_pinned.
type CompactionOptions struct {
	// Keys are the registered compactor keys (a trust file's compactors),
	// with validity windows judged at Time.
	Keys receipts.Keyring
	// Trust, if set, is the trust file Keys come from: a kid it registers
	// in another role (an issuer or adapter key) is refused as such.
	Trust *receipts.Trust
	// RawKeys are bare public keys: the one whose kid the signature names
	// is used, with no validity window.
	RawKeys []ed25519.PublicKey
	// Time is when the keys' windows and revocations are judged. An ECCR
	// carries no time of its own; the default is the zero time, so set it
	// (the command line uses --at, or now).
	Time time.Time
	// Manifest is the source manifest, if any. With it, the profile rules
	// are checked: count, root, ceiling, retention and the Bloom filter's
	// format.
	Manifest []byte
	// Lattice orders sensitivity labels; nil means the default lattice.
	Lattice *receipts.Lattice
	// SourceProofs are source-item inclusion proofs to check.
	SourceProofs []SourceProofInput
}

// SourceProofInput is one source-item inclusion proof to check: the item
// digest it must prove, and the document — a source proof (see
// receipts.SourceProof) or the answer of GET
// /v1/compactions/{id}/sources/{item}/proof, which wraps one.
type SourceProofInput struct {
	Item     string
	Document []byte
}

// CompactionReport is the outcome of [VerifyCompaction].
type CompactionReport struct {
	Kind              string  `json:"kind"` // "compaction"
	Result            string  `json:"result"`
	CompactionEventID string  `json:"compaction_event_id,omitempty"`
	KID               string  `json:"kid,omitempty"`
	VerificationTime  string  `json:"verification_time,omitempty"`
	SourceItemCount   int64   `json:"source_item_count,omitempty"`
	Checks            []Check `json:"checks"`
}

// Valid reports whether the compaction verified.
func (r *CompactionReport) Valid() bool { return r.Result == Valid }

// JSON returns the report as indented JSON.
func (r *CompactionReport) JSON() []byte { return marshalReport(r) }

// Summary returns the report for humans.
func (r *CompactionReport) Summary() string {
	var b strings.Builder
	id := r.CompactionEventID
	if id == "" {
		id = "(unparsed ECCR)"
	}
	fmt.Fprintf(&b, "compaction %s: %s\n", id, r.Result)
	summarizeChecks(&b, r.Checks)
	return b.String()
}

// VerifyCompaction checks an ECCR envelope: the draft's five parser
// invariants and closed member set, the compactor key and signature; with
// a manifest, the profile's rules (source_item_count, the source tree root,
// the ceiling equal to the least upper bound of the labels with unknown
// labels ranking top, the retention ceiling, and the strict Bloom filter
// format); and each source-item inclusion proof, whose tree size is bound
// to source_item_count.
//
// Without a manifest the Bloom filter is opaque base64url, as the draft's
// own example (a placeholder filter) requires.
func VerifyCompaction(eccr []byte, opts CompactionOptions) *CompactionReport {
	rep := &CompactionReport{Kind: "compaction"}
	if !opts.Time.IsZero() {
		rep.VerificationTime = receipts.FormatTimestamp(opts.Time)
	}
	var l checklist
	defer func() { rep.Checks = l; rep.Result = l.result() }()
	c, err := receipts.ParseCompaction(eccr)
	if err != nil {
		l.failErr(CheckCompactionStructure, 0, err, receipts.CodeRecordInvalid)
		for _, name := range []string{CheckCompactorKey, CheckCompactionSignature, CheckManifest, CheckSourceCount, CheckMerkleRoot,
			CheckSensitivityCeiling, CheckRetentionCeiling, CheckBloomFilter, CheckSourceProof} {
			l.notRun(name, 0, "the ECCR did not parse")
		}
		return rep
	}
	rep.CompactionEventID = c.EventID
	rep.KID = c.Signature.KID
	rep.SourceItemCount = c.SourceItemCount
	l.pass(CheckCompactionStructure, 0, "draft invariants hold")

	checkCompactionSignature(&l, c, opts)
	lattice := opts.Lattice
	if lattice == nil {
		lattice = receipts.DefaultLattice
	}
	checkCompactionManifest(&l, c, opts.Manifest, lattice)
	if len(opts.SourceProofs) == 0 {
		l.skip(CheckSourceProof, 0, "no source-item proof given")
	}
	for _, sp := range opts.SourceProofs {
		checkSourceProof(&l, c, sp)
	}
	return rep
}

func checkCompactionSignature(l *checklist, c *receipts.Compaction, opts CompactionOptions) {
	kid := c.Signature.KID
	var pub ed25519.PublicKey
	switch {
	case opts.Keys != nil:
		k, ok := opts.Keys[kid]
		if !ok {
			reason := "no compactor key of the trust file has kid " + kid
			if opts.Trust != nil {
				var e *receipts.Error
				if errors.As(opts.Trust.NotPinnedError(receipts.RoleCompactor, kid), &e) {
					reason = e.Reason
				}
			}
			l.fail(CheckCompactorKey, 0, receipts.CodeKeyNotPinned, "signature.kid", reason)
			l.notRun(CheckCompactionSignature, 0, "no usable compactor key")
			return
		}
		if err := k.CheckCurrent(opts.Time, opts.Time); err != nil {
			l.failErr(CheckCompactorKey, 0, err, receipts.CodeKeyExpired)
			l.notRun(CheckCompactionSignature, 0, "no usable compactor key")
			return
		}
		pub = k.PublicKey
		l.pass(CheckCompactorKey, 0, fmt.Sprintf("compactor key %s, current at %s", keyName(k), receipts.FormatTimestamp(opts.Time)))
	default:
		for _, k := range opts.RawKeys {
			if receipts.KeyID(k) == kid {
				pub = k
			}
		}
		if pub == nil {
			l.fail(CheckCompactorKey, 0, receipts.CodeKeyNotPinned, "signature.kid", fmt.Sprintf("none of the %d given keys has kid %s", len(opts.RawKeys), kid))
			l.notRun(CheckCompactionSignature, 0, "no usable compactor key")
			return
		}
		l.pass(CheckCompactorKey, 0, "given key "+kid)
	}
	l.check(CheckCompactionSignature, 0, c.VerifySignatureWithKey(pub), receipts.CodeSignatureInvalid, "Ed25519 over JCS(envelope without signature)")
}

func keyName(k *receipts.Key) string {
	if k.Name != "" {
		return k.Name + " (" + k.KID + ")"
	}
	return k.KID
}

func checkCompactionManifest(l *checklist, c *receipts.Compaction, manifest []byte, lattice *receipts.Lattice) {
	rules := []struct {
		name string
		code receipts.Code
	}{
		{CheckSourceCount, receipts.CodeSourceCountMismatch},
		{CheckMerkleRoot, receipts.CodeMerkleRootMismatch},
		{CheckSensitivityCeiling, receipts.CodeSensitivityCeilingMismatch},
		{CheckRetentionCeiling, receipts.CodeRetentionCeilingExceeded},
	}
	if manifest == nil {
		l.skip(CheckManifest, 0, "no manifest given: the profile rules need one")
		for _, r := range rules {
			l.skip(r.name, 0, "no manifest")
		}
		l.skip(CheckBloomFilter, 0, "no manifest: at receipt level the filter is opaque base64url")
		return
	}
	mf, err := receipts.ParseManifest(manifest)
	if err != nil {
		l.failErr(CheckManifest, 0, err, receipts.CodeManifestInvalid)
		for _, r := range rules {
			l.notRun(r.name, 0, "the manifest did not parse")
		}
	} else {
		l.pass(CheckManifest, 0, fmt.Sprintf("%d items, root %s", len(mf.Items), mf.Root()))
		err := mf.CheckAgainst(c, lattice)
		failed := len(rules)
		if err != nil {
			for i, r := range rules {
				if r.code == receipts.ErrorCode(err) {
					failed = i
				}
			}
		}
		for i, r := range rules {
			switch {
			case i < failed:
				l.pass(r.name, 0, "")
			case i == failed:
				l.failErr(r.name, 0, err, r.code)
			default:
				l.notRun(r.name, 0, "an earlier manifest rule failed")
			}
		}
	}
	_, err = receipts.ParseBloomFilter(c.TombstoneBloomFilterB64)
	l.check(CheckBloomFilter, 0, err, receipts.CodeBloomFilterInvalid, "")
}

var sourceProofAnswerMembers = []string{"source_proof", "compaction_index", "eccr"}

// parseSourceProofDocument returns the source proof, unwrapping an API
// answer, and the ECCR the answer names (nil for a bare proof).
func parseSourceProofDocument(doc []byte) (*receipts.SourceProof, []byte, error) {
	jd, v, err := parseStrictJSON("source proof", doc)
	if err != nil {
		return nil, nil, &receipts.Error{Code: receipts.CodeSourceProofInvalid, Reason: "not strict JSON", Err: err}
	}
	if v.Kind() != receipts.JSONObject || get(v, "source_proof") == nil {
		sp, err := receipts.ParseSourceProof(doc)
		return sp, nil, err
	}
	d := &jdec{doc: "source proof answer"}
	o := d.object(v, "", sourceProofAnswerMembers, []string{"compaction_proof"})
	inner := d.member(o, "source_proof")
	eccr := d.member(o, "eccr")
	d.object(inner, "source_proof", nil, []string{"source_proof_version", "compaction_event_id", "source_items_merkle_root", "tree_size", "index", "item", "path"})
	d.object(eccr, "eccr", nil, []string{"eccr_version", "compaction_event_id", "source_items_merkle_root", "source_item_count", "compacted_output_hash",
		"inherited_sensitivity_ceiling", "retention_purge_epoch", "tombstone_bloom_filter_b64", "supersedes", "signature"})
	if d.err != nil {
		return nil, nil, &receipts.Error{Code: receipts.CodeSourceProofInvalid, Member: d.err.Member, Reason: d.err.Reason}
	}
	raw, _ := jd.MemberBytes("source_proof")
	sp, err := receipts.ParseSourceProof(raw)
	if err != nil {
		return nil, nil, err
	}
	raw, _ = jd.MemberBytes("eccr")
	return sp, raw, nil
}

func checkSourceProof(l *checklist, c *receipts.Compaction, in SourceProofInput) {
	name := CheckSourceProof
	sp, eccr, err := parseSourceProofDocument(in.Document)
	if err != nil {
		l.failErr(name, 0, err, receipts.CodeSourceProofInvalid)
		return
	}
	if eccr != nil {
		other, err := receipts.ParseCompaction(eccr)
		if err != nil || !bytes.Equal(other.Canonical(), c.Canonical()) {
			l.fail(name, 0, receipts.CodeSourceProofInvalid, "eccr", "the proof answer is for another ECCR than the one verified")
			return
		}
	}
	if sp.Item.ItemDigest != in.Item {
		l.fail(name, 0, receipts.CodeSourceProofInvalid, "item.item_digest",
			fmt.Sprintf("the proof is for item %s, not %s", sp.Item.ItemDigest, in.Item))
		return
	}
	if err := sp.Verify(c); err != nil {
		l.failErr(name, 0, err, receipts.CodeSourceProofInvalid)
		return
	}
	l.pass(name, 0, fmt.Sprintf("item %s is source item %d of %d", in.Item, sp.Index, c.SourceItemCount))
}

// SplitCompactionSubmission recognizes a compaction submission, the form
// "memtrail sign compaction" writes and POST /v1/compactions takes: an
// object whose members are "eccr" (an object) and "manifest". It returns
// the bytes of each member as they are in the document (manifest is nil
// when the object has no "manifest"), and ok false for anything else —
// a bare ECCR, another receipt, a document that does not parse — which
// the caller then reads as it is.
func SplitCompactionSubmission(b []byte) (eccr, manifest []byte, ok bool) {
	jd, v, err := parseStrictJSON("compaction submission", b)
	if err != nil || v.Kind() != receipts.JSONObject {
		return nil, nil, false
	}
	if e := get(v, "eccr"); e == nil || e.Kind() != receipts.JSONObject {
		return nil, nil, false
	}
	for i := range v.Len() {
		switch name, m := v.Member(i); name {
		case "eccr":
		case "manifest":
			if m.Kind() != receipts.JSONObject {
				return nil, nil, false
			}
			manifest, _ = jd.MemberBytes("manifest")
		default:
			return nil, nil, false
		}
	}
	eccr, _ = jd.MemberBytes("eccr")
	return eccr, manifest, true
}
