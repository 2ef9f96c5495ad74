package tlogfmt

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/mod/sumdb/note"
)

// SignatureNames names a note's signature lines as "name+hash" for an error
// message: at most eight, then how many more; a name that is not printable
// is quoted (it is the note's bytes, not ours). No lines is "no key".
func SignatureNames(sigs []note.Signature) string {
	if len(sigs) == 0 {
		return "no key"
	}
	const most = 8
	var names []string
	for i, s := range sigs {
		if i == most {
			names = append(names, fmt.Sprintf("and %d more", len(sigs)-most))
			break
		}
		names = append(names, fmt.Sprintf("%s+%08x", PrintableName(s.Name), s.Hash))
	}
	return strings.Join(names, ", ")
}

// PrintableName is a key name from a note as an error message may show it:
// quoted when it holds a character that is not printable.
func PrintableName(name string) string {
	if strings.ContainsFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return strconv.Quote(name)
	}
	return name
}
