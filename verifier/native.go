package verifier

import (
	"bytes"
	"fmt"

	"github.com/memtrail/memtrail/receipts"
)

// nativeRun is step 5 run by a SourceVerifier: the results it derived
// from the material's source objects.
type nativeRun struct {
	src SourceVerifier
	// profileErr is set when the record is not of the verifier's source
	// profile; nothing was derived then.
	profileErr string
	// results and fragments are by position; nil when the material has no
	// source objects, or not one for each delivered entry.
	results   []SourceResult
	fragments [][]byte
}

func runNative(src SourceVerifier, r *receipts.ProjectionRecord, m *Material) *nativeRun {
	n := &nativeRun{src: src}
	if r.SourceProfile != src.SourceProfile() {
		n.profileErr = fmt.Sprintf("the record's source_profile is %q; the native verifier opens %q objects", r.SourceProfile, src.SourceProfile())
		return n
	}
	if m.SourceObjects == nil || len(m.SourceObjects) != len(r.Delivered) {
		return n
	}
	n.results = make([]SourceResult, len(m.SourceObjects))
	frame := true
	for i, o := range m.SourceObjects {
		n.results[i] = src.VerifySource(o)
		if n.results[i].Fragment == nil || n.results[i].FrameProfile != r.SelectionContext.ContextFrameProfile {
			frame = false
		}
	}
	if frame {
		n.fragments = make([][]byte, len(n.results))
		for i := range n.results {
			n.fragments[i] = n.results[i].Fragment
		}
	}
	return n
}

// checkNativeTrustSnapshot checks the record's trust_snapshot_digest
// against the snapshot of the native verifier's trust state, and the
// material's snapshot bytes, when given, against the same bytes.
func checkNativeTrustSnapshot(l *checklist, r *receipts.ProjectionRecord, material, native []byte) {
	const member = "selection_context.trust_snapshot_digest"
	switch d := digestOf(native); {
	case d != r.SelectionContext.TrustSnapshotDigest:
		l.fail(CheckTrustSnapshot, 4, receipts.CodeTrustSnapshotDigestMismatch, member,
			fmt.Sprintf("the native verifier's trust state encodes to a snapshot with digest %s: the record's trust was evaluated under another keyring", d))
	case material != nil && !bytes.Equal(material, native):
		l.fail(CheckTrustSnapshot, 4, receipts.CodeTrustSnapshotDigestMismatch, member,
			fmt.Sprintf("the material's trust-snapshot bytes hash to %s, not to the snapshot of the native verifier's trust state", digestOf(material)))
	default:
		l.pass(CheckTrustSnapshot, 4, fmt.Sprintf("%d bytes, encoded natively from the trust state the objects were opened under", len(native)))
	}
}

// check is the native_source_results check: each object's result, derived
// from its sealed bytes, against the record's entry.
func (n *nativeRun) check(l *checklist, r *receipts.ProjectionRecord, m *Material) {
	switch {
	case n.profileErr != "":
		l.fail(CheckNativeResults, 5, receipts.CodeProfileMismatch, "source_profile", n.profileErr)
		return
	case m.SourceObjects == nil:
		l.skip(CheckNativeResults, 5, "no source objects in the material for the native verifier to open")
		return
	case n.results == nil:
		l.fail(CheckNativeResults, 5, receipts.CodeNativeSourceResultMismatch, "delivered",
			fmt.Sprintf("the material has %d source objects for %d delivered entries", len(m.SourceObjects), len(r.Delivered)))
		return
	}
	for i, sr := range n.results {
		if !sr.Valid {
			l.fail(CheckNativeResults, 5, receipts.CodeNativeSourceResultMismatch, position(i),
				fmt.Sprintf("the native verifier refused the source object at position %d (%s), which the record delivers", i, sr.Refusal))
			return
		}
	}
	results := make([]NativeResult, len(n.results))
	for i := range n.results {
		results[i] = n.results[i].NativeResult
	}
	var sub checklist
	checkNativeResults(&sub, r, results)
	c := sub[0]
	if c.Outcome == Passed {
		c.Detail = fmt.Sprintf("%d results re-derived natively from the sealed bytes, each preserved by the record", len(results))
		if m.NativeResults != nil {
			c.Detail += " (the material's own native results were not used)"
		}
	}
	l.add(c)
}

// checkFragments checks each fragment the native verifier framed from its
// object against the record. It reports true when the material's
// fragments are still to be checked, false when it has recorded the
// fragment_digests check itself.
func (n *nativeRun) checkFragments(l *checklist, r *receipts.ProjectionRecord) bool {
	if n.fragments == nil {
		return true
	}
	for i, f := range n.fragments {
		if d := digestOf(f); d != r.Delivered[i].ContextFragmentDigest {
			l.fail(CheckFragments, 6, receipts.CodeFragmentDigestMismatch, position(i)+".context_fragment_digest",
				fmt.Sprintf("the %s fragment the native verifier frames from the source object at position %d hashes to %s",
					r.SelectionContext.ContextFrameProfile, i, d))
			return false
		}
	}
	return true
}
