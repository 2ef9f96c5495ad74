package verifier_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/memtrail/memtrail/verifier"
)

// readFile reads an example fixture from testdata.
func readFile(name string) []byte {
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		log.Fatal(err)
	}
	return b
}

func examplePolicy() *verifier.Policy {
	p, err := verifier.ParsePolicy(readFile("example.policy"))
	if err != nil {
		log.Fatal(err)
	}
	return p
}

func ExampleParsePolicy() {
	p, err := verifier.ParsePolicy(readFile("example.policy"))
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range p.Logs() {
		fmt.Println("log", l.Origin, l.URL)
	}
	for _, w := range p.Witnesses() {
		fmt.Println("witness", w.Name, w.KeyName)
	}
	for _, g := range p.Groups() {
		fmt.Println("group", g.Name, g.Threshold, "of", g.Members)
	}
	fmt.Println("quorum", p.Quorum())
	// Output:
	// log example.com/memtrail https://log.example.com/
	// witness w1 witness1.example
	// witness w2 witness2.example
	// witness w3 witness3.example
	// group witnesses 2 of [w1 w2 w3]
	// quorum witnesses
}

func ExampleVerifyProof() {
	policy := examplePolicy()
	proof := readFile("example-5.tlog-proof")

	// The leaf hash comes from the logged bytes the verifier already holds,
	// never from the proof.
	leaf := verifier.LeafHash([]byte("example entry 5\n"))
	p, c, err := verifier.VerifyProof(policy, proof, leaf)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("entry %d of %s is in its tree of %d entries\n", p.Index, c.Origin, c.Size)
	for _, cs := range c.Cosignatures {
		fmt.Println("witnessed by", cs.Witness, "at", cs.Time.Format("2006-01-02T15:04:05Z"))
	}

	// Another entry does not verify with this proof.
	_, _, err = verifier.VerifyProof(policy, proof, verifier.LeafHash([]byte("example entry 6\n")))
	fmt.Println(errors.Is(err, verifier.ErrInclusion), errors.Is(err, verifier.ErrSecurity))
	// Output:
	// entry 5 of example.com/memtrail is in its tree of 8 entries
	// witnessed by w1 at 2026-08-01T00:01:00Z
	// witnessed by w2 at 2026-08-01T00:01:01Z
	// true true
}

func ExampleOpenCheckpoint() {
	c, err := verifier.OpenCheckpoint(examplePolicy(), readFile("example-8.checkpoint"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Origin, c.Size, base64.StdEncoding.EncodeToString(c.Hash[:]))
	fmt.Println(len(c.Cosignatures), "cosignatures")

	// The same checkpoint with its witness cosignatures removed: the log
	// signed it, but the quorum is not met.
	logOnly, _, _ := strings.Cut(string(c.Raw), "— witness1.example")
	_, err = verifier.OpenCheckpoint(examplePolicy(), []byte(logOnly))
	fmt.Println(err)
	// Output:
	// example.com/memtrail 8 OPYi+o2V1pmTMUgSCBndmtuDacXwq1W2LY5Tp9Mtlfw=
	// 2 cosignatures
	// verifier: witness quorum not met: policy quorum "witnesses", valid cosignatures from no witness
}

func ExampleFormatProof() {
	// A log emits a proof from the index of an entry, its inclusion path
	// (as returned by a tlog-tiles client) and the signed checkpoint the
	// path leads to.
	parsed, err := verifier.ParseProof(readFile("example-5.tlog-proof"))
	if err != nil {
		log.Fatal(err)
	}
	proof := verifier.FormatProof(parsed.Index, parsed.Path, parsed.Checkpoint)
	header, _, _ := strings.Cut(string(proof), "\n\n")
	fmt.Println(header)
	// Output:
	// c2sp.org/tlog-proof@v1
	// index 5
	// GNgcj037S5yzdXw7bG4QDOdAwRZQOMs1KrgBzjgmMmc=
	// VlKS5ObAdYITnDGJ3g2487gpz+eBF5wdPkkyjmOUSPw=
	// 0WbOG7xWRm3BpRSBljLpIhu9KyzOUrLOw+GuBR41VzQ=
}

func ExampleCheckConsistency() {
	policy := examplePolicy()
	open := func(name string) *verifier.Checkpoint {
		c, err := verifier.OpenCheckpoint(policy, readFile(name))
		if err != nil {
			log.Fatal(err)
		}
		return c
	}
	older, newer, fork := open("example-3.checkpoint"), open("example-8.checkpoint"), open("example-fork-8.checkpoint")
	var proof [][]byte
	for _, line := range strings.Fields(string(readFile("example-3-8.consistency"))) {
		h, err := base64.StdEncoding.DecodeString(line)
		if err != nil {
			log.Fatal(err)
		}
		proof = append(proof, h)
	}
	fmt.Println(verifier.CheckConsistency(older, newer, proof))

	// Two checkpoints of size 8 with different roots: the log forked, and
	// the error carries both signed checkpoints as evidence.
	err := verifier.CheckConsistency(newer, fork, nil)
	var f *verifier.ForkError
	if errors.As(err, &f) {
		fmt.Println(f.Kind, f.Conclusive(), len(f.Older) > 0 && len(f.Newer) > 0)
	}
	// Output:
	// <nil>
	// same_size_different_root true true
}
