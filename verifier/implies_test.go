package verifier

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestQuorumImplies compares quorums by the witnesses' keys.
func TestQuorumImplies(t *testing.T) {
	sp := newSpecPolicy(t)
	k := func(n string) string { return sp.witnesses[n].vkey }
	pol := func(lines ...string) *Policy {
		return mustPolicy(t, "log "+sp.log.vkey+"\n"+strings.Join(lines, "\n")+"\n")
	}
	w := func(name, key string) string {
		return "witness " + name + " " + k(key) + " https://" + strings.ToLower(key) + ".example/"
	}
	none := pol("quorum none")
	one := pol(w("a", "X1"), "quorum a")
	oneRenamed := pol(w("other-name", "X1"), "quorum other-name")
	oneMoved := mustPolicy(t, "log "+sp.log.vkey+"\nwitness a "+k("X1")+" https://moved.example/\nquorum a\n")
	both := pol(w("a", "X1"), w("b", "X2"), "group g all a b", "quorum g")
	either := pol(w("a", "X1"), w("b", "X2"), "group g any a b", "quorum g")
	twoOfThree := pol(w("a", "X1"), w("b", "X2"), w("c", "X3"), "group g 2 a b c", "quorum g")
	threeOfThree := pol(w("a", "X1"), w("b", "X2"), w("c", "X3"), "group g 3 a b c", "quorum g")
	other := pol(w("a", "Y1"), "quorum a")
	for _, tt := range []struct {
		name string
		p, q *Policy
		want bool
	}{
		{"none implies none", none, none, true},
		{"anything implies none", one, none, true},
		{"none does not imply a witness", none, one, false},
		{"same policy", one, one, true},
		{"another name for the same key", oneRenamed, one, true},
		{"another URL", oneMoved, one, true},
		{"one more required witness", both, one, true},
		{"one required witness less", one, both, false},
		{"any of two does not imply the first", either, one, false},
		{"the first implies any of two", one, either, true},
		{"2 of 3 does not imply the first", twoOfThree, one, false},
		{"3 of 3 implies 2 of 3", threeOfThree, twoOfThree, true},
		{"2 of 3 does not imply 3 of 3", twoOfThree, threeOfThree, false},
		{"2 of 3 implies any of the first two", twoOfThree, either, true},
		{"all of the first two implies 2 of 3", both, twoOfThree, true},
		{"another witness", other, one, false},
		{"the spec's example implies 2 of X", mustPolicy(t, sp.text), twoOfThree, true},
		{"2 of X does not imply the spec's example", twoOfThree, mustPolicy(t, sp.text), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.p.QuorumImplies(tt.q)
			if err != nil || got != tt.want {
				t.Errorf("QuorumImplies = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// TestQuorumImpliesExhaustive checks QuorumImplies against every set of
// cosigners, on random policies over six witnesses.
func TestQuorumImpliesExhaustive(t *testing.T) {
	sp := newSpecPolicy(t)
	rng := rand.New(rand.NewPCG(1, 2))
	random := func() string {
		var b strings.Builder
		fmt.Fprintf(&b, "log %s\n", sp.log.vkey)
		var names []string
		for _, n := range specNames {
			if rng.IntN(3) > 0 {
				fmt.Fprintf(&b, "witness %s %s\n", n, sp.witnesses[n].vkey)
				names = append(names, n)
			}
		}
		if len(names) == 0 {
			b.WriteString("quorum none\n")
			return b.String()
		}
		for g := 0; g < rng.IntN(3); g++ {
			rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
			m := 1 + rng.IntN(len(names))
			fmt.Fprintf(&b, "group g%d %d %s\n", g, 1+rng.IntN(m), strings.Join(names[:m], " "))
			names = append(names, fmt.Sprintf("g%d", g))
		}
		fmt.Fprintf(&b, "quorum %s\n", names[len(names)-1])
		return b.String()
	}
	// met reports whether the witnesses of set (bits over specNames)
	// satisfy p's quorum.
	met := func(p *Policy, set int) bool {
		cosigned := make([]bool, len(p.witnesses))
		for i, w := range p.witnesses {
			for j, n := range specNames {
				if set&(1<<j) != 0 && w.VKey == sp.witnesses[n].vkey {
					cosigned[i] = true
				}
			}
		}
		return p.quorumMet(cosigned)
	}
	for range 300 {
		pt, qt := random(), random()
		p, q := mustPolicy(t, pt), mustPolicy(t, qt)
		want := true
		for set := range 1 << len(specNames) {
			if met(p, set) && !met(q, set) {
				want = false
			}
		}
		if got, err := p.QuorumImplies(q); err != nil || got != want {
			t.Errorf("QuorumImplies = %v, %v; want %v\np:\n%s\nq:\n%s", got, err, want, pt, qt)
		}
	}
}

// TestQuorumImpliesBound: a comparison too large to search is refused,
// not guessed.
func TestQuorumImpliesBound(t *testing.T) {
	text := func(keys []string, k int) string {
		var b strings.Builder
		b.WriteString("log " + newTestLog(t, "example.com/log").vkey + "\n")
		var names []string
		for i, key := range keys {
			fmt.Fprintf(&b, "witness w%d %s\n", i, key)
			names = append(names, fmt.Sprintf("w%d", i))
		}
		fmt.Fprintf(&b, "group g %d %s\nquorum g\n", k, strings.Join(names, " "))
		return b.String()
	}
	var keys []string
	for i := range 40 {
		keys = append(keys, newTestWitness(t, fmt.Sprintf("w%d.example", i)).vkey)
	}
	p := mustPolicy(t, text(keys, 20))
	// The same witnesses in another order: equivalent, but not identical,
	// so the search has to run.
	rev := append([]string(nil), keys...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	q := mustPolicy(t, text(rev, 20))
	if ok, err := p.QuorumImplies(q); ok || !errors.Is(err, ErrPolicyTooComplex) {
		t.Errorf("QuorumImplies of two 20-of-40 quorums = %v, %v; want ErrPolicyTooComplex", ok, err)
	}
	if ok, err := p.QuorumImplies(p); !ok || err != nil {
		t.Errorf("QuorumImplies of a policy and itself = %v, %v", ok, err)
	}
}
