package verifier

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memtrail/memtrail/receipts"
)

// Verification scopes of a projection report: how much of the record's
// commitments the material let the verifier recompute.
const (
	// ScopeFull: every commitment was recomputed from supplied bytes and
	// every native source result compared.
	ScopeFull = "FULL_PROJECTION_AND_NATIVE_SOURCE_RESULTS"
	// ScopePartial: some material was supplied, not all.
	ScopePartial = "PARTIAL"
	// ScopeRecordOnly: no material; the record's structure, key and
	// signature (and the policy, if any) were checked.
	ScopeRecordOnly = "RECORD_ONLY"
)

// Names of the checks of a projection report, in their order of
// precedence: a report's result is the code of the first one that failed.
const (
	CheckStructure         = "structure"
	CheckDeliveredOrder    = "delivered_order"
	CheckSourceResults     = "source_results"
	CheckExclusionCount    = "exclusion_count"
	CheckNonclaims         = "nonclaims"
	CheckAdapterKey        = "adapter_key"
	CheckSignature         = "signature"
	CheckTrustFreshness    = "trust_freshness"
	CheckRecordFreshness   = "record_freshness"
	CheckProfiles          = "profiles"
	CheckRecallRequest     = "recall_request_digest"
	CheckSelectionPolicy   = "selection_policy_digest"
	CheckTrustSnapshot     = "trust_snapshot_digest"
	CheckSourceObjects     = "source_object_digests"
	CheckNativeResults     = "native_source_results"
	CheckFragments         = "fragment_digests"
	CheckProjectionBytes   = "projection_bytes"
	CheckSingleUse         = "single_use"
	projectionReportFormat = "projection"
)

// ProjectionOptions configures [VerifyProjection].
type ProjectionOptions struct {
	// Pins are the relying party's pinned adapter keys. None pinned means
	// every record is refused with adapter_key_not_pinned.
	Pins []*receipts.AdapterPin
	// Material holds the bytes the record commits to; nil means none.
	Material *Material
	// Policy is the verification policy; nil means none, and freshness
	// and profiles are then not judged.
	Policy *VerificationPolicy
	// Time is the verification time. When zero, Policy.VerificationTime
	// is used; one of the two must be set. Revocation of the adapter key
	// and freshness are judged at this time.
	Time time.Time
	// Registry, when set, enforces single use of projection_id: the
	// record is registered there after every other check passed. Nil
	// means single use is not checked.
	Registry Registry
	// Source, when set, is the source profile's own verifier: step 5 is
	// then run natively. The trust snapshot is checked against the bytes
	// Source derives from its trust state, each source object of the
	// material is opened by Source and its result compared with the
	// record (the material's native results are not used), and each
	// fragment Source derives from an object must be the fragment the
	// record commits to. Nil means the material's native results are
	// compared, as the interop vectors do.
	Source SourceVerifier
}

// A SourceVerifier is a source profile's native verifier (draft §8, step
// 5): it opens source objects itself, under the trust state it holds,
// instead of taking their results from the material. Its methods are
// called from one goroutine.
type SourceVerifier interface {
	// SourceProfile is the source_profile whose objects it opens.
	SourceProfile() string
	// Describe says, for the report, what it verifies with (for
	// example which vault); it must not carry secrets.
	Describe() string
	// TrustSnapshot returns the exact trust-snapshot bytes of the trust
	// state it opens objects under.
	TrustSnapshot() []byte
	// VerifySource opens one source object's exact bytes and returns its
	// native result. An object the profile refuses has Valid false and
	// its reason in Refusal.
	VerifySource(sealed []byte) SourceResult
}

// SourceResult is what a [SourceVerifier] derived from one source object.
type SourceResult struct {
	NativeResult
	// Refusal is why the profile refused the object ("" when Valid).
	Refusal string
	// FrameProfile and Fragment are the context-frame profile the
	// verifier frames under and the fragment it derives from the object
	// under it; Fragment is nil when the object was refused.
	FrameProfile string
	Fragment     []byte
}

// ProjectionReport is the outcome of [VerifyProjection].
type ProjectionReport struct {
	Kind              string `json:"kind"` // "projection"
	Result            string `json:"result"`
	ProjectionID      string `json:"projection_id,omitempty"`
	VerificationTime  string `json:"verification_time"`
	VerificationScope string `json:"verification_scope"`
	// NativeSource, when step 5 ran natively (ProjectionOptions.Source),
	// names the source profile and what it verified with.
	NativeSource   string        `json:"native_source,omitempty"`
	DeliveredCount *int          `json:"delivered_count,omitempty"`
	ExcludedCount  *int64        `json:"excluded_count,omitempty"`
	SingleUse      *Registration `json:"single_use,omitempty"`
	Checks         []Check       `json:"checks"`
}

// Valid reports whether the record verified.
func (r *ProjectionReport) Valid() bool { return r.Result == Valid }

// JSON returns the report as indented JSON.
func (r *ProjectionReport) JSON() []byte { return marshalReport(r) }

// Summary returns the report for humans.
func (r *ProjectionReport) Summary() string {
	var b strings.Builder
	id := r.ProjectionID
	if id == "" {
		id = "(unparsed record)"
	}
	fmt.Fprintf(&b, "projection %s: %s\n", id, r.Result)
	fmt.Fprintf(&b, "  verified at %s, scope %s\n", r.VerificationTime, r.VerificationScope)
	if r.NativeSource != "" {
		fmt.Fprintf(&b, "  step 5 natively: %s\n", r.NativeSource)
	}
	summarizeChecks(&b, r.Checks)
	return b.String()
}

// VerifyProjection runs the verifier algorithm of §7 of the Memory
// Projection Record draft on record and reports every step. The order of
// the checks is the order of precedence of their codes:
//
//  1. the record's structure, then sequential positions, each entry's
//     source result against the rules of draft -01 (section 4.3, and
//     the source profile's: receipts.CheckSourceResult), the exclusion
//     total and the four nonclaims (receipts.ParseProjectionRecord);
//  2. the adapter key: pinned for the record's adapter and key id, not
//     revoked at the verification time, valid at created_at; then the
//     Ed25519 signature over the domain-separated canonical bytes;
//  3. with a policy: trust_evaluated_at, then created_at, neither later
//     than the verification time plus the clock skew nor older than the
//     policy allows (trust_snapshot_stale, record_stale), and the trust
//     evaluation no longer before created_at than the trust age allowed
//     (trust_snapshot_stale: draft -01 section 4.1 bounds the interval
//     between all three times); the expected source and context-frame
//     profiles;
//  4. with material: the digests of the recall request, the selection
//     policy and the trust snapshot;
//  5. the source-object digests, then the native trust, authorship and
//     custody results, which the record must have preserved field for
//     field;
//  6. every fragment's digest, then the fragments' concatenation against
//     the projection bytes, then the projection's length and digest, then
//     that it is UTF-8 (projection_encoding_invalid; draft -01 section
//     4.3);
//  7. single use of projection_id in the registry — last, and only when
//     everything else passed, so a refused record never uses up its id.
//
// Checks whose material or policy is missing are skipped; checks after a
// failure still run when they can (so the report shows everything that is
// wrong), except single use. The error is non-nil only when no
// verification time was given or the registry failed (not when it refused
// a replay, which is the projection_replay result).
func VerifyProjection(ctx context.Context, record []byte, opts ProjectionOptions) (*ProjectionReport, error) {
	at := opts.Time
	if at.IsZero() && opts.Policy != nil && opts.Policy.VerificationTime != nil {
		at = *opts.Policy.VerificationTime
	}
	if at.IsZero() {
		return nil, errors.New("verifier: no verification time (set ProjectionOptions.Time or the policy's verification_time)")
	}
	rep := &ProjectionReport{Kind: projectionReportFormat, VerificationTime: receipts.FormatTimestamp(at)}
	var l checklist
	defer func() { rep.Checks = l }()

	r, err := receipts.ParseProjectionRecord(record)
	parseSteps := []struct {
		name string
		code receipts.Code
		step int
	}{
		{CheckStructure, "", 1}, // any other code
		{CheckDeliveredOrder, receipts.CodeDeliveredOrderInvalid, 6},
		{CheckSourceResults, receipts.CodeSourceResultInvalid, 5},
		{CheckExclusionCount, receipts.CodeExclusionCountMismatch, 7},
		{CheckNonclaims, receipts.CodeNonclaimInvalid, 7},
	}
	if err != nil {
		code := receipts.ErrorCode(err)
		failedAt := 0
		for i, s := range parseSteps {
			if s.code != "" && s.code == code {
				failedAt = i
			}
		}
		for i, s := range parseSteps {
			switch {
			case i < failedAt:
				l.pass(s.name, s.step, "")
			case i == failedAt:
				l.failErr(s.name, s.step, err, receipts.CodeRecordInvalid)
			default:
				l.notRun(s.name, s.step, "the record did not parse")
			}
		}
		for _, s := range []struct {
			name string
			step int
		}{{CheckAdapterKey, 2}, {CheckSignature, 2}, {CheckTrustFreshness, 3}, {CheckRecordFreshness, 3}, {CheckProfiles, 3},
			{CheckRecallRequest, 4}, {CheckSelectionPolicy, 4}, {CheckTrustSnapshot, 4}, {CheckSourceObjects, 5},
			{CheckNativeResults, 5}, {CheckFragments, 6}, {CheckProjectionBytes, 6}, {CheckSingleUse, 3}} {
			l.notRun(s.name, s.step, "the record did not parse")
		}
		rep.Result = l.result()
		rep.VerificationScope = ScopeRecordOnly
		return rep, nil
	}
	rep.ProjectionID = r.ProjectionID
	n := len(r.Delivered)
	rep.DeliveredCount = &n
	ex := r.Exclusions.Total
	rep.ExcludedCount = &ex
	for _, s := range parseSteps {
		l.pass(s.name, s.step, "")
	}

	checkSignature(&l, r, opts.Pins, at)
	checkFreshness(&l, r, opts.Policy, at)
	checkProfiles(&l, r, opts.Policy)
	m := opts.Material
	if m == nil {
		m = &Material{}
	}
	checkDigest(&l, CheckRecallRequest, "selection_context.recall_request_digest", r.SelectionContext.RecallRequestDigest,
		m.RecallRequest, receipts.CodeRecallRequestDigestMismatch, "recall request")
	checkDigest(&l, CheckSelectionPolicy, "selection_context.selection_policy_digest", r.SelectionContext.SelectionPolicyDigest,
		m.SelectionPolicy, receipts.CodeSelectionPolicyDigestMismatch, "selection policy")
	var native *nativeRun
	if opts.Source != nil {
		native = runNative(opts.Source, r, m)
		rep.NativeSource = opts.Source.SourceProfile() + ": " + opts.Source.Describe()
	}
	if native != nil && native.profileErr == "" {
		checkNativeTrustSnapshot(&l, r, m.TrustSnapshot, opts.Source.TrustSnapshot())
	} else {
		checkDigest(&l, CheckTrustSnapshot, "selection_context.trust_snapshot_digest", r.SelectionContext.TrustSnapshotDigest,
			m.TrustSnapshot, receipts.CodeTrustSnapshotDigestMismatch, "trust snapshot")
	}
	checkSourceObjects(&l, r, m.SourceObjects)
	fragments := m.Fragments
	if native != nil {
		native.check(&l, r, m)
		if fragments == nil && native.fragments != nil {
			fragments = native.fragments
		}
	} else {
		checkNativeResults(&l, r, m.NativeResults)
	}
	if native == nil || native.checkFragments(&l, r) {
		checkFragments(&l, r, fragments)
		if last := &l[len(l)-1]; native != nil && native.fragments != nil && last.Outcome == Passed {
			last.Detail += ", each the fragment the native verifier frames from its source object"
		}
	}
	checkProjectionBytes(&l, r, fragments, m.Projection)

	materialChecks := 0
	for _, c := range l {
		switch c.Check {
		case CheckRecallRequest, CheckSelectionPolicy, CheckTrustSnapshot, CheckSourceObjects, CheckNativeResults, CheckFragments, CheckProjectionBytes:
			if c.Outcome != Skipped {
				materialChecks++
			}
		}
	}
	switch materialChecks {
	case 0:
		rep.VerificationScope = ScopeRecordOnly
	case 7:
		rep.VerificationScope = ScopeFull
	default:
		rep.VerificationScope = ScopePartial
	}

	switch {
	case opts.Registry == nil:
		l.skip(CheckSingleUse, 3, "no registry: single use of projection_id not checked")
	case l.failed():
		l.notRun(CheckSingleUse, 3, "the record was refused, so its id is not registered")
	default:
		reg, err := opts.Registry.Register(ctx, r.ProjectionID, r.Canonical(), at)
		var re *ReplayError
		var ue *UnprovenError
		var rf *RefusedError
		switch {
		case errors.As(err, &re):
			l.fail(CheckSingleUse, 3, receipts.CodeProjectionReplay, "projection_id", re.Error())
		case errors.As(err, &ue):
			l.fail(CheckSingleUse, 3, ue.Code, "projection_id", ue.Error())
		case errors.As(err, &rf):
			l.fail(CheckSingleUse, 3, rf.Code, rf.Member, rf.Error())
		case err != nil:
			rep.Result = l.result()
			return rep, fmt.Errorf("verifier: single use of %s: %w", r.ProjectionID, err)
		default:
			rep.SingleUse = reg
			l.pass(CheckSingleUse, 3, reg.describe())
		}
	}
	rep.Result = l.result()
	return rep, nil
}

func checkSignature(l *checklist, r *receipts.ProjectionRecord, pins []*receipts.AdapterPin, at time.Time) {
	pin, err := receipts.FindAdapterPin(pins, r.Adapter.ID, r.Adapter.KeyID)
	if err == nil {
		err = pin.CheckCurrent(r.CreatedAt, at)
	}
	if err != nil {
		l.failErr(CheckAdapterKey, 2, err, receipts.CodeAdapterKeyNotPinned)
		l.notRun(CheckSignature, 2, "no usable adapter key")
		return
	}
	l.pass(CheckAdapterKey, 2, fmt.Sprintf("key %q of %s, valid at created_at and not revoked", pin.KeyID, pin.AdapterID))
	err = receipts.VerifyProjectionSignature(r, []*receipts.AdapterPin{pin}, at)
	l.check(CheckSignature, 2, err, receipts.CodeSignatureInvalid, "Ed25519 over \"MEMORY-PROJECTION-RECORD-v1\" || 0x00 || JCS(record without proof)")
}

func checkFreshness(l *checklist, r *receipts.ProjectionRecord, p *VerificationPolicy, at time.Time) {
	skew := DefaultClockSkew
	if p != nil && p.MaxClockSkew != nil {
		skew = *p.MaxClockSkew
	}
	// before is the time the checked time must not be older than, besides
	// the verification time (zero for none).
	one := func(name, member string, t time.Time, max *time.Duration, stale receipts.Code, what string, before time.Time, beforeName string) {
		switch {
		case p == nil:
			l.skip(name, 3, "no verification policy")
		case max == nil:
			l.skip(name, 3, "the policy sets no maximum age for "+what)
		case t.After(at.Add(skew)):
			l.fail(name, 3, receipts.CodeRecordFromFuture, member,
				fmt.Sprintf("%s is later than the verification time %s plus the allowed clock skew of %s", receipts.FormatTimestamp(t), receipts.FormatTimestamp(at), skew))
		case at.Sub(t) > *max:
			l.fail(name, 3, stale, member,
				fmt.Sprintf("%s is %s old at %s; at most %s is allowed", what, at.Sub(t), receipts.FormatTimestamp(at), *max))
		case !before.IsZero() && before.Sub(t) > *max:
			l.fail(name, 3, stale, member,
				fmt.Sprintf("%s is %s older than %s; at most %s is allowed", what, before.Sub(t), beforeName, *max))
		default:
			l.pass(name, 3, fmt.Sprintf("%s old, at most %s allowed", at.Sub(t), *max))
		}
	}
	var maxTrust, maxRecord *time.Duration
	if p != nil {
		maxTrust, maxRecord = p.MaxTrustAge, p.MaxProjectionAge
	}
	one(CheckTrustFreshness, "selection_context.trust_evaluated_at", r.SelectionContext.TrustEvaluatedAt, maxTrust, receipts.CodeTrustSnapshotStale, "the trust evaluation",
		r.CreatedAt, "created_at")
	one(CheckRecordFreshness, "created_at", r.CreatedAt, maxRecord, receipts.CodeRecordStale, "the record", time.Time{}, "")
}

func checkProfiles(l *checklist, r *receipts.ProjectionRecord, p *VerificationPolicy) {
	if p == nil || p.ExpectedSourceProfile == "" && p.ExpectedContextFrameProfile == "" {
		l.skip(CheckProfiles, 3, "the policy expects no source or context-frame profile")
		return
	}
	if p.ExpectedSourceProfile != "" && r.SourceProfile != p.ExpectedSourceProfile {
		l.fail(CheckProfiles, 3, receipts.CodeProfileMismatch, "source_profile",
			fmt.Sprintf("is %q, the policy expects %q", r.SourceProfile, p.ExpectedSourceProfile))
		return
	}
	if p.ExpectedContextFrameProfile != "" && r.SelectionContext.ContextFrameProfile != p.ExpectedContextFrameProfile {
		l.fail(CheckProfiles, 3, receipts.CodeProfileMismatch, "selection_context.context_frame_profile",
			fmt.Sprintf("is %q, the policy expects %q", r.SelectionContext.ContextFrameProfile, p.ExpectedContextFrameProfile))
		return
	}
	l.pass(CheckProfiles, 3, "")
}

// digestOf returns "sha256:" and the lowercase hex SHA-256 of b.
func digestOf(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

func checkDigest(l *checklist, name, member, want string, material []byte, code receipts.Code, what string) {
	switch {
	case material == nil:
		l.skip(name, 4, "no "+what+" bytes in the material")
	case digestOf(material) != want:
		l.fail(name, 4, code, member, fmt.Sprintf("the %s bytes hash to %s", what, digestOf(material)))
	default:
		l.pass(name, 4, fmt.Sprintf("%d bytes", len(material)))
	}
}

func position(i int) string { return "delivered[" + strconv.Itoa(i) + "]" }

func checkSourceObjects(l *checklist, r *receipts.ProjectionRecord, objects [][]byte) {
	switch {
	case objects == nil:
		l.skip(CheckSourceObjects, 5, "no source objects in the material")
		return
	case len(objects) != len(r.Delivered):
		l.fail(CheckSourceObjects, 5, receipts.CodeSourceObjectDigestMismatch, "delivered",
			fmt.Sprintf("the material has %d source objects for %d delivered entries", len(objects), len(r.Delivered)))
		return
	}
	for i, o := range objects {
		if d := digestOf(o); d != r.Delivered[i].SealedObjectDigest {
			l.fail(CheckSourceObjects, 5, receipts.CodeSourceObjectDigestMismatch, position(i)+".object.sealed_object_digest",
				fmt.Sprintf("the source object at position %d hashes to %s", i, d))
			return
		}
	}
	l.pass(CheckSourceObjects, 5, fmt.Sprintf("%d objects", len(objects)))
}

func checkNativeResults(l *checklist, r *receipts.ProjectionRecord, results []NativeResult) {
	switch {
	case results == nil:
		l.skip(CheckNativeResults, 5, "no native source results in the material")
		return
	case len(results) != len(r.Delivered):
		l.fail(CheckNativeResults, 5, receipts.CodeNativeSourceResultMismatch, "delivered",
			fmt.Sprintf("the material has %d native results for %d delivered entries", len(results), len(r.Delivered)))
		return
	}
	for i, nr := range results {
		e := &r.Delivered[i]
		p := position(i)
		mismatch := func(member, native, recorded string) {
			l.fail(CheckNativeResults, 5, receipts.CodeNativeSourceResultMismatch, p+"."+member,
				fmt.Sprintf("the native result at position %d says %s, the record says %s", i, native, recorded))
		}
		switch {
		case !nr.Valid:
			l.fail(CheckNativeResults, 5, receipts.CodeNativeSourceResultMismatch, p,
				fmt.Sprintf("the native verifier refused the source object at position %d, which the record delivers", i))
		case nr.FormatVersion != e.FormatVersion:
			mismatch("object.format_version", strconv.FormatInt(nr.FormatVersion, 10), strconv.FormatInt(e.FormatVersion, 10))
		case nr.SealedObjectDigest != e.SealedObjectDigest:
			mismatch("object.sealed_object_digest", nr.SealedObjectDigest, e.SealedObjectDigest)
		case nr.DerivedTrust != e.DerivedTrust:
			mismatch("derived_trust", strconv.Quote(nr.DerivedTrust), strconv.Quote(e.DerivedTrust))
		case nr.Authorship != e.Authorship:
			mismatch("authorship", strconv.Quote(nr.Authorship), strconv.Quote(e.Authorship))
		case !sameOptional(nr.AuthorKeyIDB64u, e.AuthorKeyIDB64u):
			mismatch("author_key_id_b64u", quoteOptional(nr.AuthorKeyIDB64u), quoteOptional(e.AuthorKeyIDB64u))
		case nr.CustodyPresent != e.CustodyPresent:
			mismatch("custody_present", strconv.FormatBool(nr.CustodyPresent), strconv.FormatBool(e.CustodyPresent))
		default:
			continue
		}
		return
	}
	l.pass(CheckNativeResults, 5, fmt.Sprintf("%d results preserved", len(results)))
}

func sameOptional(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func quoteOptional(s *string) string {
	if s == nil {
		return "null"
	}
	return strconv.Quote(*s)
}

func checkFragments(l *checklist, r *receipts.ProjectionRecord, fragments [][]byte) {
	switch {
	case fragments == nil:
		l.skip(CheckFragments, 6, "no fragments in the material")
		return
	case len(fragments) != len(r.Delivered):
		l.fail(CheckFragments, 6, receipts.CodeFragmentDigestMismatch, "delivered",
			fmt.Sprintf("the material has %d fragments for %d delivered entries", len(fragments), len(r.Delivered)))
		return
	}
	for i, f := range fragments {
		if d := digestOf(f); d != r.Delivered[i].ContextFragmentDigest {
			l.fail(CheckFragments, 6, receipts.CodeFragmentDigestMismatch, position(i)+".context_fragment_digest",
				fmt.Sprintf("the fragment at position %d hashes to %s", i, d))
			return
		}
	}
	l.pass(CheckFragments, 6, fmt.Sprintf("%d fragments", len(fragments)))
}

// checkProjectionBytes checks the complete projection: with fragments and
// projection bytes, that the fragments concatenate to exactly those bytes;
// then that the projection (the bytes, or the concatenation when only
// fragments were given) has the committed length and digest.
func checkProjectionBytes(l *checklist, r *receipts.ProjectionRecord, fragments [][]byte, projection []byte) {
	var concat []byte
	if fragments != nil {
		concat = bytes.Join(fragments, nil)
		if concat == nil {
			concat = []byte{}
		}
	}
	commitment := func(b []byte) error {
		if int64(len(b)) != r.Projection.ByteLength {
			return fmt.Errorf("is %d bytes, the record commits to %d", len(b), r.Projection.ByteLength)
		}
		if d := digestOf(b); d != r.Projection.Digest {
			return fmt.Errorf("hashes to %s, the record commits to %s", d, r.Projection.Digest)
		}
		return nil
	}
	switch {
	case fragments == nil && projection == nil:
		l.skip(CheckProjectionBytes, 6, "neither fragments nor projection bytes in the material")
	case fragments != nil && projection != nil && !bytes.Equal(concat, projection):
		l.fail(CheckProjectionBytes, 6, receipts.CodeProjectionConcatenationMismatch, "projection",
			fmt.Sprintf("the %d fragments concatenate to %d bytes that are not the %d projection bytes", len(fragments), len(concat), len(projection)))
	case projection != nil:
		if err := commitment(projection); err != nil {
			l.fail(CheckProjectionBytes, 6, receipts.CodeProjectionDigestMismatch, "projection", "the projection "+err.Error())
			return
		}
		if !utf8Projection(l, projection) {
			return
		}
		l.pass(CheckProjectionBytes, 6, fmt.Sprintf("%d bytes", len(projection)))
	default:
		if err := commitment(concat); err != nil {
			l.fail(CheckProjectionBytes, 6, receipts.CodeProjectionConcatenationMismatch, "projection", "the concatenated fragments "+err.Error())
			return
		}
		if !utf8Projection(l, concat) {
			return
		}
		l.pass(CheckProjectionBytes, 6, fmt.Sprintf("%d bytes, from the fragments", len(concat)))
	}
}

// utf8Projection checks that the projection bytes are UTF-8, the only
// encoding of this version (draft -01 section 4.3: projection.encoding
// is "utf-8" and nothing else is supported), and records the failure.
func utf8Projection(l *checklist, b []byte) bool {
	if utf8.Valid(b) {
		return true
	}
	off := 0
	for off < len(b) {
		r, n := utf8.DecodeRune(b[off:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		off += n
	}
	l.fail(CheckProjectionBytes, 6, receipts.CodeProjectionEncodingInvalid, "projection.encoding",
		fmt.Sprintf("is \"utf-8\", but the projection bytes are not UTF-8 (the first invalid sequence is at byte %d)", off))
	return false
}
