package verifier

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"

	"github.com/memtrail/memtrail/receipts"
)

// Material is what a relying party holds besides a projection record: the
// bytes the record commits to, in the interop "verification_material"
// shape, every member optional and each base64url without padding:
//
//	{"recall_request_b64u": "…",
//	 "selection_policy_b64u": "…",
//	 "trust_snapshot_b64u": "…",
//	 "source_object_b64u_by_position": ["…", …],
//	 "fragment_b64u_by_position": ["…", …],
//	 "projection_b64u": "…",
//	 "native_source_results_by_position": [
//	   {"valid": true, "formatVersion": 2, "sealedObjectDigest": "sha256:…",
//	    "derivedTrust": "trusted", "authorship": "attested",
//	    "authorKeyIdB64u": "0FMJy9O1Xzs", "custodyPresent": true}, …]}
//
// What is supplied is checked against the record; what is missing is
// reported as skipped. A nil field is absent; a present member decodes to
// a non-nil value, even when empty.
type Material struct {
	RecallRequest   []byte
	SelectionPolicy []byte
	TrustSnapshot   []byte
	SourceObjects   [][]byte
	Fragments       [][]byte
	Projection      []byte
	// NativeResults are the results of the source profile's own verifier
	// (for ApertoMemory, its open-sealed run) for each delivered object.
	// The verifier checks that the record preserved these results
	// exactly; with ProjectionOptions.Source it derives them itself from
	// the source objects instead and does not use these.
	NativeResults []NativeResult
}

// NativeResult is one source object's result from its native verifier, in
// the interop shape.
type NativeResult struct {
	Valid              bool
	FormatVersion      int64
	SealedObjectDigest string
	DerivedTrust       string
	Authorship         string
	AuthorKeyIDB64u    *string // nil when the source profile resolved no author
	CustodyPresent     bool
}

// Caps on material documents: a record has at most receipts.MaxDelivered
// entries, and the material as a whole is at most MaxMaterialSize bytes.
const MaxMaterialSize = 256 << 20

var (
	materialMembers = []string{"recall_request_b64u", "selection_policy_b64u", "trust_snapshot_b64u",
		"source_object_b64u_by_position", "fragment_b64u_by_position", "projection_b64u",
		"native_source_results_by_position"}
	nativeMembers = []string{"valid", "formatVersion", "sealedObjectDigest", "derivedTrust", "authorship",
		"authorKeyIdB64u", "custodyPresent"}
)

const docMaterial = "verification material"

// ParseMaterial parses a verification_material document strictly: closed
// member set, strict base64url, native results with exactly their seven
// members. Errors are *[InputError] and match [ErrMalformed].
func ParseMaterial(data []byte) (*Material, error) {
	if len(data) > MaxMaterialSize {
		return nil, &InputError{Document: docMaterial, Reason: "larger than " + strconv.Itoa(MaxMaterialSize) + " bytes"}
	}
	_, v, err := parseStrictJSON(docMaterial, data)
	if err != nil {
		return nil, err
	}
	d := &jdec{doc: docMaterial}
	o := d.object(v, "", nil, materialMembers)
	m := &Material{}
	opt := func(name string, dst *[]byte) {
		if x := d.member(o, name); x != nil {
			*dst = d.b64u(x, name)
		}
	}
	optList := func(name string, dst *[][]byte) {
		x := d.member(o, name)
		if x == nil {
			return
		}
		elems := d.array(x, name, receipts.MaxDelivered)
		out := make([][]byte, len(elems))
		for i := range elems {
			out[i] = d.b64u(&elems[i], name+"["+strconv.Itoa(i)+"]")
		}
		*dst = out
	}
	opt("recall_request_b64u", &m.RecallRequest)
	opt("selection_policy_b64u", &m.SelectionPolicy)
	opt("trust_snapshot_b64u", &m.TrustSnapshot)
	optList("source_object_b64u_by_position", &m.SourceObjects)
	optList("fragment_b64u_by_position", &m.Fragments)
	opt("projection_b64u", &m.Projection)
	if x := d.member(o, "native_source_results_by_position"); x != nil {
		elems := d.array(x, "native_source_results_by_position", receipts.MaxDelivered)
		m.NativeResults = make([]NativeResult, len(elems))
		for i := range elems {
			path := "native_source_results_by_position[" + strconv.Itoa(i) + "]"
			no := d.object(&elems[i], path, nativeMembers, nil)
			r := &m.NativeResults[i]
			r.Valid = d.boolean(d.member(no, "valid"), path+".valid")
			r.FormatVersion = d.integer(d.member(no, "formatVersion"), path+".formatVersion", 0, 1<<53-1)
			r.SealedObjectDigest = d.str(d.member(no, "sealedObjectDigest"), path+".sealedObjectDigest")
			r.DerivedTrust = d.str(d.member(no, "derivedTrust"), path+".derivedTrust")
			r.Authorship = d.str(d.member(no, "authorship"), path+".authorship")
			if a := d.member(no, "authorKeyIdB64u"); a != nil && a.Kind() != receipts.JSONNull {
				s := d.str(a, path+".authorKeyIdB64u")
				r.AuthorKeyIDB64u = &s
			}
			r.CustodyPresent = d.boolean(d.member(no, "custodyPresent"), path+".custodyPresent")
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	return m, nil
}

type nativeJSON struct {
	Valid              bool    `json:"valid"`
	FormatVersion      int64   `json:"formatVersion"`
	SealedObjectDigest string  `json:"sealedObjectDigest"`
	DerivedTrust       string  `json:"derivedTrust"`
	Authorship         string  `json:"authorship"`
	AuthorKeyIDB64u    *string `json:"authorKeyIdB64u"`
	CustodyPresent     bool    `json:"custodyPresent"`
}

// Marshal writes the material in the interop shape, members in a fixed
// order; ParseMaterial reads it back to an equal value.
func (m *Material) Marshal() []byte {
	enc := func(b []byte) *string {
		if b == nil {
			return nil
		}
		s := base64.RawURLEncoding.EncodeToString(b)
		return &s
	}
	encList := func(list [][]byte) []string {
		if list == nil {
			return nil
		}
		out := make([]string, len(list))
		for i, b := range list {
			out[i] = base64.RawURLEncoding.EncodeToString(b)
		}
		return out
	}
	// Empty lists must still be written: build the object by hand so that
	// a present, empty list survives a round trip.
	members := []jsonMember{}
	add := func(name string, v any) { members = append(members, jsonMember{name, v}) }
	if s := enc(m.RecallRequest); s != nil {
		add("recall_request_b64u", *s)
	}
	if s := enc(m.SelectionPolicy); s != nil {
		add("selection_policy_b64u", *s)
	}
	if s := enc(m.TrustSnapshot); s != nil {
		add("trust_snapshot_b64u", *s)
	}
	if l := encList(m.SourceObjects); l != nil {
		add("source_object_b64u_by_position", l)
	}
	if l := encList(m.Fragments); l != nil {
		add("fragment_b64u_by_position", l)
	}
	if s := enc(m.Projection); s != nil {
		add("projection_b64u", *s)
	}
	if m.NativeResults != nil {
		out := make([]nativeJSON, len(m.NativeResults))
		for i, r := range m.NativeResults {
			out[i] = nativeJSON(r)
		}
		add("native_source_results_by_position", out)
	}
	return marshalMembers(members)
}

type jsonMember struct {
	name string
	val  any
}

// marshalMembers writes an object with members in the given order,
// indented, with a final newline.
func marshalMembers(members []jsonMember) []byte {
	if len(members) == 0 {
		return []byte("{}\n")
	}
	b := []byte("{\n")
	for i, mem := range members {
		name, _ := json.Marshal(mem.name)
		val, err := json.MarshalIndent(mem.val, "  ", "  ")
		if err != nil {
			panic("verifier: member does not encode: " + err.Error())
		}
		b = append(b, "  "...)
		b = append(b, name...)
		b = append(b, ": "...)
		b = append(b, val...)
		if i < len(members)-1 {
			b = append(b, ',')
		}
		b = append(b, '\n')
	}
	return append(b, "}\n"...)
}

// VerificationPolicy is a relying party's policy for projection records, in
// the interop "verification_policy" shape:
//
//	{"verification_time": "2026-07-29T17:01:00.000Z",
//	 "max_projection_age_sec": 300,
//	 "max_trust_age_sec": 300,
//	 "expected_source_profile": "draft-ferro-apertomemory-02",
//	 "expected_context_frame_profile": "urn:apertomemory:context-frame:v0"}
//
// plus the optional "max_clock_skew_sec" (default 60) of this profile. Every
// member is optional, and what is absent is not checked: without
// max_trust_age_sec the trust evaluation's freshness is not judged, and so
// on. Unknown members are refused, so that a misspelt bound is an error and
// not a silently skipped check. Ages are whole seconds in [0, 10 years].
type VerificationPolicy struct {
	VerificationTime            *time.Time
	MaxProjectionAge            *time.Duration
	MaxTrustAge                 *time.Duration
	MaxClockSkew                *time.Duration
	ExpectedSourceProfile       string // "" when not checked
	ExpectedContextFrameProfile string // "" when not checked
}

// DefaultClockSkew is how far in the future of the verification time a
// created_at or trust_evaluated_at may lie when the policy sets no
// max_clock_skew_sec (the ECCR draft's 60 seconds).
const DefaultClockSkew = 60 * time.Second

var policyMembers = []string{"verification_time", "max_projection_age_sec", "max_trust_age_sec", "max_clock_skew_sec",
	"expected_source_profile", "expected_context_frame_profile"}

const (
	docPolicy     = "verification policy"
	maxPolicyAge  = 10 * 366 * 24 * 3600
	maxProfileLen = 1024
)

// ParseVerificationPolicy parses a verification_policy document strictly.
// Errors are *[InputError] and match [ErrMalformed].
func ParseVerificationPolicy(data []byte) (*VerificationPolicy, error) {
	if len(data) > maxPolicySize {
		return nil, &InputError{Document: docPolicy, Reason: "larger than 64 KiB"}
	}
	_, v, err := parseStrictJSON(docPolicy, data)
	if err != nil {
		return nil, err
	}
	d := &jdec{doc: docPolicy}
	o := d.object(v, "", nil, policyMembers)
	p := &VerificationPolicy{}
	if x := d.member(o, "verification_time"); x != nil {
		t := d.timestamp(x, "verification_time")
		p.VerificationTime = &t
	}
	for _, f := range []struct {
		name string
		dst  **time.Duration
	}{{"max_projection_age_sec", &p.MaxProjectionAge}, {"max_trust_age_sec", &p.MaxTrustAge}, {"max_clock_skew_sec", &p.MaxClockSkew}} {
		if x := d.member(o, f.name); x != nil {
			s := time.Duration(d.integer(x, f.name, 0, maxPolicyAge)) * time.Second
			*f.dst = &s
		}
	}
	if x := d.member(o, "expected_source_profile"); x != nil {
		p.ExpectedSourceProfile = d.text(x, "expected_source_profile", maxProfileLen)
	}
	if x := d.member(o, "expected_context_frame_profile"); x != nil {
		p.ExpectedContextFrameProfile = d.text(x, "expected_context_frame_profile", maxProfileLen)
	}
	if d.err != nil {
		return nil, d.err
	}
	return p, nil
}

// Marshal writes the policy in the interop shape; ParseVerificationPolicy
// reads it back to an equal value.
func (p *VerificationPolicy) Marshal() []byte {
	var members []jsonMember
	if p.VerificationTime != nil {
		members = append(members, jsonMember{"verification_time", receipts.FormatTimestamp(*p.VerificationTime)})
	}
	for _, f := range []struct {
		name string
		d    *time.Duration
	}{{"max_projection_age_sec", p.MaxProjectionAge}, {"max_trust_age_sec", p.MaxTrustAge}, {"max_clock_skew_sec", p.MaxClockSkew}} {
		if f.d != nil {
			members = append(members, jsonMember{f.name, int64(*f.d / time.Second)})
		}
	}
	if p.ExpectedSourceProfile != "" {
		members = append(members, jsonMember{"expected_source_profile", p.ExpectedSourceProfile})
	}
	if p.ExpectedContextFrameProfile != "" {
		members = append(members, jsonMember{"expected_context_frame_profile", p.ExpectedContextFrameProfile})
	}
	return marshalMembers(members)
}
