package receipts

// The strict I-JSON reader of json.go, for documents that are not receipts
// but must be read as strictly: the verifier's verification material and
// policy files, its audit state, and the log's answers it checks.

// ReadJSON reads data, which must hold exactly one strict I-JSON value, with
// the reader every receipt parser uses (see the package documentation):
// valid UTF-8 with no lone surrogate or noncharacter, escaped or not; no
// duplicate member names; integers only, within ±(2^53−1); nesting of at
// most 32 levels. maxMembers caps the members of any one object and the
// elements of any one array; maxValues, when not 0, caps the values of the
// whole document. The caller caps the size of data.
//
// Errors say where the input stopped being strict I-JSON ("byte 12: lone
// surrogate in a \u escape").
func ReadJSON(data []byte, maxMembers, maxValues int) (*JSONDocument, error) {
	d, err := parseLimited(data, maxMembers, maxMembers, maxValues)
	if err != nil {
		return nil, err
	}
	return &JSONDocument{d: d}, nil
}

// A JSONDocument is a document read by [ReadJSON].
type JSONDocument struct{ d *document }

// Value returns the document's value.
func (d *JSONDocument) Value() JSONValue { return JSONValue{&d.d.value} }

// MemberBytes returns the bytes of the value of the top-level object's
// member name exactly as they stand in the input, for a member that is
// itself a document to be read by another parser.
func (d *JSONDocument) MemberBytes(name string) ([]byte, bool) {
	for i := range d.d.members {
		if d.d.members[i].name == name && i < len(d.d.spans) {
			sp := d.d.spans[i]
			return d.d.raw[sp.value:sp.end], true
		}
	}
	return nil, false
}

// A JSONKind is the kind of a [JSONValue].
type JSONKind uint8

// The kinds of JSON values.
const (
	JSONNull   = JSONKind(kindNull)
	JSONBool   = JSONKind(kindBool)
	JSONNumber = JSONKind(kindNumber)
	JSONString = JSONKind(kindString)
	JSONArray  = JSONKind(kindArray)
	JSONObject = JSONKind(kindObject)
)

// String returns "null", "boolean", "number", "string", "array" or "object".
func (k JSONKind) String() string { return kind(k).String() }

// A JSONValue is one value of a [JSONDocument].
type JSONValue struct{ v *value }

// Kind returns the value's kind.
func (j JSONValue) Kind() JSONKind { return JSONKind(j.v.kind) }

// Bool returns a boolean's value.
func (j JSONValue) Bool() bool { return j.v.b }

// Int returns a number's value: every number [ReadJSON] accepts is an
// integer.
func (j JSONValue) Int() int64 { return j.v.num }

// Str returns a string's value.
func (j JSONValue) Str() string { return j.v.str }

// Len returns the number of an array's elements or of an object's members.
func (j JSONValue) Len() int {
	if j.v.kind == kindObject {
		return len(j.v.members)
	}
	return len(j.v.elems)
}

// Elem returns an array's element i.
func (j JSONValue) Elem(i int) JSONValue { return JSONValue{&j.v.elems[i]} }

// Member returns an object's member i, in input order.
func (j JSONValue) Member(i int) (string, JSONValue) {
	m := &j.v.members[i]
	return m.name, JSONValue{&m.val}
}

// Get returns an object's member name.
func (j JSONValue) Get(name string) (JSONValue, bool) {
	v, ok := j.v.get(name)
	return JSONValue{v}, ok
}

// CheckMembers checks that an object's members are all of required plus any
// of optional. When they are not, it returns the first required member
// missing, or else the first member of neither list, and a problem saying
// which ("required member is missing", "unknown member (the member set is
// closed)"); otherwise problem is "".
func (j JSONValue) CheckMembers(required, optional []string) (name, problem string) {
	return checkMembers(j.v, required, optional)
}
