package projector

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/memtrail/memtrail/internal/apertomemory"
	"github.com/memtrail/memtrail/receipts"
)

// PolicyProfile is the value of a selection policy's "selection_policy"
// member: the version of the format and of the rules it selects by.
const PolicyProfile = "urn:memtrail:selection-policy:v1"

// MaxPolicySize caps a selection policy document.
const MaxPolicySize = 64 << 10

// MaxProjectionBytes caps a policy's max_bytes: a projection is at most
// 64 MiB, the size of the largest container.
const MaxProjectionBytes = 64 << 20

// ErrPolicy is wrapped by every error of [ParsePolicy].
var ErrPolicy = errors.New("projector: selection policy invalid")

// A Policy is a parsed selection policy (docs/profile.md, "Selection
// policy"): the strict I-JSON object
//
//	{"selection_policy": "urn:memtrail:selection-policy:v1",
//	 "eligible_trust": ["self", "trusted"],
//	 "max_bytes": 8192,
//	 "max_objects": 20,
//	 "scopes": ["work"],
//	 "mem_types": ["semantic", "procedural"]}
//
// selection_policy, eligible_trust and max_bytes are required; the member
// set is closed, so a misspelt filter is an error and never a filter
// silently not applied. The producer commits to the exact bytes of the
// policy (selection_policy_digest), so the ordering rule, which the profile
// fixes, is committed to as well.
type Policy struct {
	// EligibleTrust are the derived trust levels that may be delivered.
	// Listing "unverified" is the explicit opt-in of ApertoMemory §12:
	// objects that cannot be authenticated (format_version 1 objects,
	// objects by an author the keyring does not accept) are then opened
	// as unverified instead of refused.
	EligibleTrust []apertomemory.Trust
	// MaxBytes bounds the projection: the sum of the delivered
	// fragments' lengths, framing included (1 to 64 MiB).
	MaxBytes int64
	// MaxObjects bounds the delivered entries; 0 (absent) means
	// receipts.MaxDelivered.
	MaxObjects int
	// Scopes, when not nil, are the only scope names eligible.
	Scopes []string
	// MemTypes, when not nil, are the only mem-types eligible.
	MemTypes []apertomemory.MemType
}

var (
	policyRequired = []string{"selection_policy", "eligible_trust", "max_bytes"}
	policyOptional = []string{"max_objects", "scopes", "mem_types"}
	memTypeNames   = map[string]apertomemory.MemType{"episodic": apertomemory.Episodic, "semantic": apertomemory.Semantic, "procedural": apertomemory.Procedural}
)

// ParsePolicy parses a selection policy strictly. Every error wraps
// [ErrPolicy] and names the member at fault.
func ParsePolicy(data []byte) (*Policy, error) {
	bad := func(member, format string, args ...any) error {
		if member != "" {
			member += ": "
		}
		return fmt.Errorf("%w: %s%s", ErrPolicy, member, fmt.Sprintf(format, args...))
	}
	if len(data) > MaxPolicySize {
		return nil, bad("", "larger than %d bytes", MaxPolicySize)
	}
	doc, err := receipts.ReadJSON(data, 1024, 8192)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	v := doc.Value()
	if v.Kind() != receipts.JSONObject {
		return nil, bad("", "not a JSON object")
	}
	if name, problem := v.CheckMembers(policyRequired, policyOptional); problem != "" {
		return nil, bad(name, "%s", problem)
	}
	get := func(name string) receipts.JSONValue { x, _ := v.Get(name); return x }
	has := func(name string) bool { _, ok := v.Get(name); return ok }
	str := func(x receipts.JSONValue, member string) (string, error) {
		if x.Kind() != receipts.JSONString {
			return "", bad(member, "must be a string, not %s", x.Kind())
		}
		return x.Str(), nil
	}
	// list reads a non-empty array of distinct strings, each of which
	// check accepts.
	list := func(name string, check func(string) bool, want string) ([]string, error) {
		x := get(name)
		if x.Kind() != receipts.JSONArray || x.Len() == 0 {
			return nil, bad(name, "must be a non-empty array of %s", want)
		}
		var out []string
		for i := 0; i < x.Len(); i++ {
			member := name + "[" + strconv.Itoa(i) + "]"
			s, err := str(x.Elem(i), member)
			if err != nil {
				return nil, err
			}
			if !check(s) {
				return nil, bad(member, "%q is not one of %s", s, want)
			}
			if slices.Contains(out, s) {
				return nil, bad(member, "%q is listed twice", s)
			}
			out = append(out, s)
		}
		return out, nil
	}
	integer := func(name string, lo, hi int64) (int64, error) {
		x := get(name)
		if x.Kind() != receipts.JSONNumber || x.Int() < lo || x.Int() > hi {
			return 0, bad(name, "must be an integer from %d to %d", lo, hi)
		}
		return x.Int(), nil
	}

	p := &Policy{}
	s, err := str(get("selection_policy"), "selection_policy")
	if err != nil {
		return nil, err
	}
	if s != PolicyProfile {
		return nil, bad("selection_policy", "is %q; this producer knows %q", s, PolicyProfile)
	}
	trusts, err := list("eligible_trust", func(s string) bool { return slices.Contains(receipts.DerivedTrustValues, s) }, `"self", "trusted", "unverified"`)
	if err != nil {
		return nil, err
	}
	for _, t := range trusts {
		p.EligibleTrust = append(p.EligibleTrust, apertomemory.Trust(t))
	}
	if p.MaxBytes, err = integer("max_bytes", 1, MaxProjectionBytes); err != nil {
		return nil, err
	}
	if has("max_objects") {
		n, err := integer("max_objects", 1, receipts.MaxDelivered)
		if err != nil {
			return nil, err
		}
		p.MaxObjects = int(n)
	}
	if has("scopes") {
		if p.Scopes, err = list("scopes", func(s string) bool { return s != "" && len(s) <= apertomemory.DefaultLimits.MaxNameBytes }, "scope names"); err != nil {
			return nil, err
		}
	}
	if has("mem_types") {
		names, err := list("mem_types", func(s string) bool { _, ok := memTypeNames[s]; return ok }, `"episodic", "semantic", "procedural"`)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			p.MemTypes = append(p.MemTypes, memTypeNames[n])
		}
	}
	return p, nil
}

// AllowsUnverified reports whether the policy opts in to unverified
// objects (ApertoMemory §12).
func (p *Policy) AllowsUnverified() bool {
	return slices.Contains(p.EligibleTrust, apertomemory.TrustUnverified)
}

// filters reports why an opened object in the named scope is not eligible
// ("" when it is).
func (p *Policy) filters(o *apertomemory.Object, scope string) string {
	switch {
	case !slices.Contains(p.EligibleTrust, o.Trust):
		return "trust " + string(o.Trust) + " is not eligible"
	case p.Scopes != nil && !slices.Contains(p.Scopes, scope):
		return "scope " + strconv.Quote(scope) + " is not eligible"
	case p.MemTypes != nil && !slices.Contains(p.MemTypes, o.Type):
		return "mem-type " + o.Type.String() + " is not eligible"
	}
	return ""
}

func (p *Policy) maxObjects() int {
	if p.MaxObjects == 0 {
		return receipts.MaxDelivered
	}
	return p.MaxObjects
}
