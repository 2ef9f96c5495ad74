package receipts

import "fmt"

// A Lattice is a total order of sensitivity labels, lowest first. Labels it
// does not know rank above every label it knows (fail closed): their least
// upper bound is the top label.
type Lattice struct {
	labels []string
	rank   map[string]int
}

// DefaultLatticeLabels is the default order, lowest first.
var DefaultLatticeLabels = []string{"PUBLIC", "INTERNAL", "CONFIDENTIAL", "CONFIDENTIAL_RESTRICTED", "HIGHLY_CONFIDENTIAL"}

// DefaultLattice is the lattice of DefaultLatticeLabels.
var DefaultLattice = mustLattice(DefaultLatticeLabels)

func mustLattice(labels []string) *Lattice {
	l, err := NewLattice(labels)
	if err != nil {
		panic(err)
	}
	return l
}

// NewLattice returns the lattice of labels, lowest first. Labels must be
// distinct and match ^[A-Z][A-Z0-9_]*$.
func NewLattice(labels []string) (*Lattice, error) {
	if len(labels) == 0 {
		return nil, fmt.Errorf("a sensitivity lattice needs at least one label")
	}
	l := &Lattice{labels: append([]string(nil), labels...), rank: make(map[string]int, len(labels))}
	for i, s := range labels {
		if !IsLabel(s) {
			return nil, fmt.Errorf("sensitivity label %q does not match ^[A-Z][A-Z0-9_]*$", s)
		}
		if _, dup := l.rank[s]; dup {
			return nil, fmt.Errorf("sensitivity label %q is listed twice", s)
		}
		l.rank[s] = i
	}
	return l, nil
}

// Labels returns the labels, lowest first.
func (l *Lattice) Labels() []string { return append([]string(nil), l.labels...) }

// Top returns the highest label.
func (l *Lattice) Top() string { return l.labels[len(l.labels)-1] }

// Known reports whether label is one of the lattice's labels.
func (l *Lattice) Known(label string) bool {
	_, ok := l.rank[label]
	return ok
}

// Rank returns the position of label, lowest 0; an unknown label ranks as
// the top label.
func (l *Lattice) Rank(label string) int {
	if r, ok := l.rank[label]; ok {
		return r
	}
	return len(l.labels) - 1
}

// LeastUpperBound returns the lowest label at or above every one of labels;
// an unknown label makes it the top label.
func (l *Lattice) LeastUpperBound(labels []string) string {
	best := 0
	for _, s := range labels {
		if r := l.Rank(s); r > best {
			best = r
		}
	}
	return l.labels[best]
}

// maxLabel caps a label's length.
const maxLabel = 128

// IsLabel reports whether s matches ^[A-Z][A-Z0-9_]*$ (at most 128 bytes).
func IsLabel(s string) bool {
	if s == "" || len(s) > maxLabel || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
