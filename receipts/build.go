package receipts

// Tree constructors used to build receipts for signing. Building the same
// tree the parser produces means one canonical encoder serves both paths.

func vobj(members ...member) value { return value{kind: kindObject, members: members} }
func vstr(s string) value          { return value{kind: kindString, str: s} }
func vint(n int64) value           { return value{kind: kindNumber, num: n} }
func vbool(b bool) value           { return value{kind: kindBool, b: b} }
func vnull() value                 { return value{kind: kindNull} }
func varr(elems []value) value {
	if elems == nil {
		elems = []value{}
	}
	return value{kind: kindArray, elems: elems}
}
func m(name string, v value) member { return member{name: name, val: v} }
