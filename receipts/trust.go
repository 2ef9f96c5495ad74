package receipts

import (
	"strconv"
	"time"
)

// Trust says whose receipts are accepted and under which rules. Its JSON
// form, the trust file:
//
//	{"adapters":   [<adapter_pin>, …],
//	 "compactors": [{"name": "…", "public_key_hex": "…", "valid_from": "<RFC 3339>",
//	                 "valid_to": null | "<RFC 3339>", "revoked_at": null | "<RFC 3339>"}, …],
//	 "issuers":    [same shape as compactors],
//	 "freshness":  {"max_projection_age_sec": 300, "max_trust_age_sec": 300, "max_clock_skew_sec": 60},
//	 "sensitivity_lattice": ["PUBLIC", "INTERNAL", "CONFIDENTIAL", "CONFIDENTIAL_RESTRICTED", "HIGHLY_CONFIDENTIAL"]}
//
// adapters, compactors and issuers are required (possibly empty);
// freshness and its members and sensitivity_lattice are optional and take
// the defaults shown; "name" is optional. Unknown members are refused, as
// a typo in a trust file must not silently widen it.
type Trust struct {
	Adapters   []*AdapterPin
	Compactors Keyring
	Issuers    Keyring
	Freshness  Freshness
	Lattice    *Lattice
}

// Freshness bounds the age of receipts at ingest and verification time.
type Freshness struct {
	MaxProjectionAge time.Duration
	MaxTrustAge      time.Duration
	MaxClockSkew     time.Duration
}

// DefaultFreshness is used for members the trust file leaves out.
var DefaultFreshness = Freshness{MaxProjectionAge: 300 * time.Second, MaxTrustAge: 300 * time.Second, MaxClockSkew: 60 * time.Second}

var (
	trustMembers     = []string{"adapters", "compactors", "issuers"}
	trustOptional    = []string{"freshness", "sensitivity_lattice"}
	keyMembers       = []string{"public_key_hex", "valid_from", "valid_to", "revoked_at"}
	keyOptional      = []string{"name"}
	freshnessMembers = []string{"max_projection_age_sec", "max_trust_age_sec", "max_clock_skew_sec"}
)

// maxAgeSec bounds freshness settings (one year).
const maxAgeSec = 365 * 24 * 3600

// ParseTrust parses a trust file. Problems are reported as errors naming
// the member; public keys are checked with CheckPublicKey.
func ParseTrust(data []byte) (*Trust, error) {
	if len(data) > maxPinFile {
		return nil, refuse(CodeTooLarge, "", "trust file is larger than %d bytes", maxPinFile)
	}
	tree, err := parseJSON(data, 1<<16)
	if err != nil {
		return nil, &Error{Code: CodeRecordInvalid, Reason: "trust file is not strict I-JSON", Err: err}
	}
	d := &decoder{code: CodeRecordInvalid}
	top := d.object(&tree, "", trustMembers, trustOptional)
	if d.err != nil {
		return nil, d.err
	}
	t := &Trust{Freshness: DefaultFreshness, Lattice: DefaultLattice, Compactors: Keyring{}, Issuers: Keyring{}}

	ad := d.member(top, "adapters")
	if ad.kind != kindArray {
		return nil, refuse(CodeRecordInvalid, "adapters", "must be an array of adapter pins")
	}
	for i := range ad.elems {
		p, err := adapterPinFromTree(&ad.elems[i], "adapters["+strconv.Itoa(i)+"]")
		if err != nil {
			return nil, err
		}
		for _, q := range t.Adapters {
			if q.AdapterID == p.AdapterID && q.KeyID == p.KeyID {
				return nil, refuse(CodeRecordInvalid, "adapters["+strconv.Itoa(i)+"]", "pins adapter %q key %q twice", p.AdapterID, p.KeyID)
			}
		}
		t.Adapters = append(t.Adapters, p)
	}
	for _, list := range []struct {
		name string
		ring Keyring
	}{{"compactors", t.Compactors}, {"issuers", t.Issuers}} {
		v := d.member(top, list.name)
		if v.kind != kindArray {
			return nil, refuse(CodeRecordInvalid, list.name, "must be an array of keys")
		}
		for i := range v.elems {
			path := list.name + "[" + strconv.Itoa(i) + "]"
			k, err := keyFromTree(&v.elems[i], path)
			if err != nil {
				return nil, err
			}
			if _, dup := list.ring[k.KID]; dup {
				return nil, refuse(CodeRecordInvalid, path, "lists key %s twice", k.KID)
			}
			list.ring[k.KID] = k
		}
	}
	if fv, ok := top.get("freshness"); ok {
		fo := d.object(fv, "freshness", nil, freshnessMembers)
		for _, f := range []struct {
			name string
			dst  *time.Duration
		}{{"max_projection_age_sec", &t.Freshness.MaxProjectionAge}, {"max_trust_age_sec", &t.Freshness.MaxTrustAge}, {"max_clock_skew_sec", &t.Freshness.MaxClockSkew}} {
			if _, ok := fo.get(f.name); ok && d.err == nil {
				*f.dst = time.Duration(d.integer(fo, "freshness", f.name, 0, maxAgeSec)) * time.Second
			}
		}
		if d.err != nil {
			return nil, d.err
		}
	}
	if lv, ok := top.get("sensitivity_lattice"); ok {
		if lv.kind != kindArray {
			return nil, refuse(CodeRecordInvalid, "sensitivity_lattice", "must be an array of labels, lowest first")
		}
		labels := make([]string, len(lv.elems))
		for i := range lv.elems {
			if lv.elems[i].kind != kindString {
				return nil, refuse(CodeRecordInvalid, "sensitivity_lattice["+strconv.Itoa(i)+"]", "must be a string")
			}
			labels[i] = lv.elems[i].str
		}
		l, err := NewLattice(labels)
		if err != nil {
			return nil, &Error{Code: CodeRecordInvalid, Member: "sensitivity_lattice", Err: err}
		}
		t.Lattice = l
	}
	return t, nil
}

func keyFromTree(v *value, path string) (*Key, error) {
	d := &decoder{code: CodeRecordInvalid}
	o := d.object(v, path, keyMembers, keyOptional)
	k := &Key{}
	if _, ok := o.get("name"); ok && d.err == nil {
		k.Name = d.boundedString(o, path, "name", maxShortString)
	}
	hexKey := d.str(o, path, "public_key_hex")
	k.ValidFrom, _ = d.timestamp(o, path, "valid_from")
	k.ValidTo = d.optionalTimestamp(o, path, "valid_to")
	k.RevokedAt = d.optionalTimestamp(o, path, "revoked_at")
	if d.err != nil {
		return nil, d.err
	}
	if len(hexKey) != 64 {
		return nil, refuse(CodeKeyInvalid, path+".public_key_hex", "must be 64 lowercase hex digits")
	}
	pub, err := ParsePublicKey(hexKey)
	if err != nil {
		e := err.(*Error)
		e.Member = path + ".public_key_hex"
		return nil, e
	}
	k.PublicKey = pub
	k.KID = KeyID(pub)
	if k.ValidTo != nil && !k.ValidTo.After(k.ValidFrom) {
		return nil, refuse(CodeRecordInvalid, path+".valid_to", "must be later than valid_from")
	}
	return k, nil
}

// MarshalTrust writes t as a trust file (indented JSON, members in
// canonical order).
func MarshalTrust(t *Trust) []byte {
	var adapters []value
	for _, p := range t.Adapters {
		adapters = append(adapters, p.value())
	}
	keys := func(ring Keyring) value {
		var out []value
		for _, k := range sortedKeys(ring) {
			out = append(out, k.value())
		}
		return varr(out)
	}
	labels := make([]value, 0)
	for _, l := range t.Lattice.Labels() {
		labels = append(labels, vstr(l))
	}
	top := vobj(
		m("adapters", varr(adapters)),
		m("compactors", keys(t.Compactors)),
		m("issuers", keys(t.Issuers)),
		m("freshness", vobj(
			m("max_projection_age_sec", vint(int64(t.Freshness.MaxProjectionAge/time.Second))),
			m("max_trust_age_sec", vint(int64(t.Freshness.MaxTrustAge/time.Second))),
			m("max_clock_skew_sec", vint(int64(t.Freshness.MaxClockSkew/time.Second))),
		)),
		m("sensitivity_lattice", varr(labels)),
	)
	return appendIndented(nil, &top, "")
}

func sortedKeys(ring Keyring) []*Key {
	out := make([]*Key, 0, len(ring))
	for _, k := range ring {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].KID < out[j-1].KID; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func optionalTime(t *time.Time) value {
	if t == nil {
		return vnull()
	}
	return vstr(FormatTimestamp(*t))
}

func (p *AdapterPin) value() value {
	return vobj(
		m("adapter_id", vstr(p.AdapterID)),
		m("key_id", vstr(p.KeyID)),
		m("alg", vstr("Ed25519")),
		m("public_key_spki_b64u", vstr(PublicKeySPKI(p.PublicKey))),
		m("status", vstr(p.Status)),
		m("valid_from", vstr(FormatTimestamp(p.ValidFrom))),
		m("valid_to", optionalTime(p.ValidTo)),
		m("revoked_at", optionalTime(p.RevokedAt)),
	)
}

// MarshalAdapterPin writes p in the interop adapter_pin shape.
func MarshalAdapterPin(p *AdapterPin) []byte {
	v := p.value()
	return appendIndented(nil, &v, "")
}

func (k *Key) value() value {
	members := []member{
		m("public_key_hex", vstr(PublicKeyHex(k.PublicKey))),
		m("valid_from", vstr(FormatTimestamp(k.ValidFrom))),
		m("valid_to", optionalTime(k.ValidTo)),
		m("revoked_at", optionalTime(k.RevokedAt)),
	}
	if k.Name != "" {
		members = append([]member{m("name", vstr(k.Name))}, members...)
	}
	return vobj(members...)
}

// appendIndented writes v as readable JSON: canonical member order and
// escaping, two-space indentation, a final newline at the top level.
func appendIndented(buf []byte, v *value, indent string) []byte {
	switch v.kind {
	case kindArray:
		if len(v.elems) == 0 {
			buf = append(buf, "[]"...)
			break
		}
		buf = append(buf, "[\n"...)
		for i := range v.elems {
			buf = append(buf, indent+"  "...)
			buf = appendIndented(buf, &v.elems[i], indent+"  ")
			if i < len(v.elems)-1 {
				buf = append(buf, ',')
			}
			buf = append(buf, '\n')
		}
		buf = append(buf, indent+"]"...)
	case kindObject:
		if len(v.members) == 0 {
			buf = append(buf, "{}"...)
			break
		}
		buf = append(buf, "{\n"...)
		for n, i := range sortedMembers(v.members, nil) {
			buf = append(buf, indent+"  "...)
			buf = appendCanonicalString(buf, v.members[i].name)
			buf = append(buf, ": "...)
			buf = appendIndented(buf, &v.members[i].val, indent+"  ")
			if n < len(v.members)-1 {
				buf = append(buf, ',')
			}
			buf = append(buf, '\n')
		}
		buf = append(buf, indent+"}"...)
	default:
		buf = appendCanonical(buf, v)
	}
	if indent == "" {
		buf = append(buf, '\n')
	}
	return buf
}
