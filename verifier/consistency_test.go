package verifier

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/transparency-dev/merkle/rfc6962"
)

// consistencyVector is the shape of
// merkle-transparency-dev/testdata/consistency.
type consistencyVector struct {
	Size1   uint64   `json:"size1"`
	Size2   uint64   `json:"size2"`
	Root1   []byte   `json:"root1"`
	Root2   []byte   `json:"root2"`
	Proof   [][]byte `json:"proof"`
	Desc    string   `json:"desc"`
	WantErr bool     `json:"wantErr"`
}

// TestConsistencyVectors runs every transparency-dev/merkle consistency
// vector through VerifyConsistency, and through CheckConsistency with two
// signed checkpoints carrying the vector's sizes and roots.
func TestConsistencyVectors(t *testing.T) {
	vs := loadVectorDir[consistencyVector](t, "merkle-transparency-dev/testdata/consistency")
	f := newFixture(t)
	open := func(t *testing.T, size uint64, root []byte) (*Checkpoint, error) {
		cp := signNote(t, checkpointText(f.log.origin, size, root), f.log.signer, f.w2.at(testTime), f.w3.at(testTime))
		return OpenCheckpoint(f.policy, cp)
	}
	happy := 0
	for name, v := range vs {
		t.Run(name, func(t *testing.T) {
			if !v.WantErr {
				happy++
			}
			err := VerifyConsistency(v.Size1, v.Size2, v.Proof, v.Root1, v.Root2)
			if got := err != nil; got != v.WantErr {
				t.Errorf("VerifyConsistency(%s) = %v, want error %v", v.Desc, err, v.WantErr)
			}
			if err != nil && errors.Is(err, ErrMalformed) == errors.Is(err, ErrConsistency) {
				t.Errorf("VerifyConsistency() = %v, want exactly one of ErrMalformed and ErrConsistency", err)
			}

			// The same case through checkpoints. A root that is not 32
			// bytes cannot be a checkpoint's, whatever the vector expects of
			// the bare proof: OpenCheckpoint must refuse it as malformed.
			older, err1 := open(t, v.Size1, v.Root1)
			newer, err2 := open(t, v.Size2, v.Root2)
			if len(v.Root1) != 32 || len(v.Root2) != 32 {
				if err1 == nil && err2 == nil {
					t.Fatalf("OpenCheckpoint() accepted a root of %d or %d bytes", len(v.Root1), len(v.Root2))
				}
			}
			// So can a size-0 root other than the empty tree's.
			if err1 != nil || err2 != nil {
				if !v.WantErr && len(v.Root1) == 32 && len(v.Root2) == 32 {
					t.Fatalf("OpenCheckpoint() = %v, %v for a happy path", err1, err2)
				}
				for _, err := range []error{err1, err2} {
					if err != nil && !errors.Is(err, ErrMalformed) {
						t.Errorf("OpenCheckpoint() = %v, want ErrMalformed", err)
					}
				}
				return
			}
			err = CheckConsistency(older, newer, v.Proof)
			if got := err != nil; got != v.WantErr {
				t.Errorf("CheckConsistency(%s) = %v, want error %v", v.Desc, err, v.WantErr)
			}
			var fork *ForkError
			if errors.As(err, &fork) {
				if !bytes.Equal(fork.Older, older.Raw) || !bytes.Equal(fork.Newer, newer.Raw) {
					t.Errorf("ForkError does not carry both checkpoints")
				}
			}
		})
	}
	if len(vs) != 98 || happy != 6 {
		t.Errorf("ran %d consistency vectors with %d happy paths, want 98 with 6", len(vs), happy)
	}
}

// TestArgon2020Consistency verifies a real CT consistency proof (3,654,490 to
// 961,984,013) directly and between two signed checkpoints.
func TestArgon2020Consistency(t *testing.T) {
	a := loadArgon2020(t)
	if len(a.consistency) != 30 {
		t.Fatalf("consistency proof has %d hashes, want 30", len(a.consistency))
	}
	if err := VerifyConsistency(a.oldSize, a.size, a.consistency, a.oldRoot, a.root); err != nil {
		t.Fatalf("VerifyConsistency(Argon2020) = %v", err)
	}
	origin := "ct.googleapis.com/logs/argon2020"
	l := newTestLog(t, origin)
	p := mustPolicy(t, "log "+l.vkey+"\nquorum none\n")
	open := func(size uint64, root []byte) *Checkpoint {
		c, err := OpenCheckpoint(p, signNote(t, checkpointText(origin, size, root), l.signer))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	older, newer := open(a.oldSize, a.oldRoot), open(a.size, a.root)
	if err := CheckConsistency(older, newer, a.consistency); err != nil {
		t.Fatalf("CheckConsistency(Argon2020) = %v", err)
	}

	flipped := cloneHashes(a.consistency)
	flipped[0][0] ^= 1
	err := CheckConsistency(older, newer, flipped)
	var fork *ForkError
	if !errors.As(err, &fork) || fork.Kind != ForkInconsistent || !errors.Is(err, ErrConsistency) {
		t.Fatalf("CheckConsistency(flipped proof) = %v, want a ForkError of kind inconsistent", err)
	}
	if fork.Conclusive() || len(fork.Proof) != 30 || fork.Origin != origin {
		t.Errorf("ForkError = %+v", fork)
	}
	if err := CheckConsistency(newer, older, a.consistency); !errors.As(err, &fork) || fork.Kind != ForkRollback {
		t.Errorf("CheckConsistency(reversed) = %v, want a rollback", err)
	}
}

func TestCheckConsistency(t *testing.T) {
	f := newFixture(t)
	tr := testTree(40)
	forked := testTree(40)
	forked.AppendData([]byte("forked leaf")) // 41 leaves: leaf 40 differs from tr's future
	tr.AppendData([]byte("leaf 40"))
	open := func(size uint64, root []byte, ext ...string) *Checkpoint {
		t.Helper()
		cp := signNote(t, checkpointText(f.log.origin, size, root, ext...), f.log.signer, f.w1.at(testTime), f.w2.at(testTime))
		c, err := OpenCheckpoint(f.policy, cp)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	proof := func(size1, size2 uint64) [][]byte {
		t.Helper()
		p, err := tr.ConsistencyProof(size1, size2)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	empty := open(0, rfc6962.DefaultHasher.EmptyRoot())
	c1, c7, c40, c41 := open(1, tr.HashAt(1)), open(7, tr.HashAt(7)), open(40, tr.HashAt(40)), open(41, tr.HashAt(41))
	c41ext := open(41, tr.HashAt(41), "extension")
	fork41 := open(41, forked.Hash())

	// Every pair of sizes of the honest tree is consistent.
	for _, size1 := range []uint64{1, 2, 3, 7, 8, 9, 16, 31, 40} {
		for _, size2 := range []uint64{size1 + 1, 33, 41} {
			if size2 <= size1 {
				continue
			}
			a, b := open(size1, tr.HashAt(size1)), open(size2, tr.HashAt(size2))
			if err := CheckConsistency(a, b, proof(size1, size2)); err != nil {
				t.Errorf("CheckConsistency(%d, %d) = %v", size1, size2, err)
			}
		}
	}

	for _, tt := range []struct {
		name         string
		older, newer *Checkpoint
		proof        [][]byte
		kind         ForkKind // empty for no fork
		want         error    // nil for success
	}{
		{"extends", c7, c41, proof(7, 41), "", nil},
		{"same checkpoint", c41, c41, nil, "", nil},
		{"same tree, other extensions", c41, c41ext, nil, "", nil},
		{"from empty", empty, c40, nil, "", nil},
		{"empty to empty", empty, empty, nil, "", nil},
		{"same size, other root", c41, fork41, nil, ForkSameSize, ErrSecurity},
		{"same size, other root, with proof", c41, fork41, proof(7, 41), ForkSameSize, ErrSecurity},
		{"fork after the older size", c40, fork41, proof(40, 41), ForkInconsistent, ErrConsistency},
		{"fork, no proof", c40, fork41, nil, ForkInconsistent, ErrConsistency},
		{"proof for other sizes", c7, c41, proof(8, 41), ForkInconsistent, ErrConsistency},
		{"proof too short", c7, c41, proof(7, 41)[1:], ForkInconsistent, ErrConsistency},
		{"rollback", c41, c7, proof(7, 41), ForkRollback, ErrSecurity},
		{"rollback to one", c40, c1, nil, ForkRollback, ErrSecurity},
		{"rollback to empty", c7, empty, nil, ForkRollback, ErrSecurity},
		{"equal, with a proof", c41, c41, proof(7, 41), "", ErrMalformed},
		{"from empty, with a proof", empty, c7, proof(1, 7), "", ErrMalformed},
		{"short proof hash", c7, c41, [][]byte{make([]byte, 31)}, "", ErrMalformed},
		{"too many proof hashes", c7, c41, make([][]byte, 129), "", ErrMalformed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckConsistency(tt.older, tt.newer, tt.proof)
			if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
				t.Fatalf("CheckConsistency() = %v, want %v", err, tt.want)
			}
			var fork *ForkError
			if isFork := errors.As(err, &fork); isFork != (tt.kind != "") {
				t.Fatalf("CheckConsistency() = %v, want fork %q", err, tt.kind)
			}
			if fork == nil {
				if err != nil && errors.Is(err, ErrSecurity) {
					t.Errorf("CheckConsistency() = %v: a security error that is not a ForkError", err)
				}
				return
			}
			if fork.Kind != tt.kind || fork.Origin != f.log.origin || !errors.Is(err, ErrSecurity) || errors.Is(err, ErrMalformed) {
				t.Errorf("CheckConsistency() = %+v, want kind %q, origin %q, ErrSecurity only", fork, tt.kind, f.log.origin)
			}
			if !bytes.Equal(fork.Older, tt.older.Raw) || !bytes.Equal(fork.Newer, tt.newer.Raw) {
				t.Errorf("ForkError evidence differs from the checkpoints")
			}
			if fmt.Sprint(fork.Proof) != fmt.Sprint(tt.proof) {
				t.Errorf("ForkError.Proof = %x, want %x", fork.Proof, tt.proof)
			}
			if fork.Conclusive() != (tt.kind == ForkSameSize) {
				t.Errorf("Conclusive() = %v for kind %q", fork.Conclusive(), tt.kind)
			}
			// The evidence stands on its own: both checkpoints still open
			// under the policy.
			for _, raw := range [][]byte{fork.Older, fork.Newer} {
				if _, err := OpenCheckpoint(f.policy, raw); err != nil {
					t.Errorf("evidence checkpoint does not open: %v", err)
				}
			}
			js, err := json.Marshal(fork)
			if err != nil {
				t.Fatal(err)
			}
			var back ForkError
			if err := json.Unmarshal(js, &back); err != nil || back.Kind != fork.Kind || !bytes.Equal(back.Newer, fork.Newer) {
				t.Errorf("ForkError JSON round trip = %+v, %v", back, err)
			}
		})
	}

	other := newTestLog(t, "example.com/other")
	q := mustPolicy(t, "log "+other.vkey+"\nquorum none\n")
	co, err := OpenCheckpoint(q, signNote(t, checkpointText(other.origin, 7, tr.HashAt(7)), other.signer))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckConsistency(c7, co, nil); err == nil || errors.Is(err, ErrSecurity) || errors.Is(err, ErrMalformed) {
		t.Errorf("CheckConsistency(different logs) = %v, want a plain error", err)
	}
	if err := CheckConsistency(nil, c7, nil); err == nil {
		t.Errorf("CheckConsistency(nil, c) succeeded")
	}
}

func TestIsRollback(t *testing.T) {
	a := &Checkpoint{Origin: "example.com/log", Size: 10}
	for _, tt := range []struct {
		name              string
		previous, current *Checkpoint
		want              bool
	}{
		{"smaller", a, &Checkpoint{Origin: a.Origin, Size: 9}, true},
		{"to empty", a, &Checkpoint{Origin: a.Origin}, true},
		{"same size", a, &Checkpoint{Origin: a.Origin, Size: 10}, false},
		{"larger", a, &Checkpoint{Origin: a.Origin, Size: 11}, false},
		{"other log", a, &Checkpoint{Origin: "example.com/other", Size: 1}, false},
		{"nil", a, nil, false},
	} {
		if got := IsRollback(tt.previous, tt.current); got != tt.want {
			t.Errorf("IsRollback(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// FuzzVerifyConsistency checks consistency proofs of arbitrary shape between
// sizes of a fixed tree: no panic, one error class, and success only for the
// genuine proof.
func FuzzVerifyConsistency(f *testing.F) {
	tr := testTree(50)
	f.Add(uint64(7), uint64(41), []byte{})
	f.Add(uint64(0), uint64(41), []byte{1})
	f.Add(uint64(41), uint64(41), []byte{2, 3})
	f.Fuzz(func(t *testing.T, size1, size2 uint64, mutation []byte) {
		size1, size2 = size1%51, size2%51
		root1, root2 := tr.HashAt(size1), tr.HashAt(size2)
		var p [][]byte
		if size1 <= size2 {
			p, _ = tr.ConsistencyProof(size1, size2)
		}
		genuine := 0 < size1 && size1 <= size2
		// Each mutation byte either drops a hash, duplicates one, flips a
		// bit, or truncates one.
		for _, m := range mutation {
			if len(p) == 0 {
				p = append(p, root2)
				genuine = false
				continue
			}
			i := int(m>>2) % len(p)
			switch m & 3 {
			case 0:
				p = append(p[:i:i], p[i+1:]...)
			case 1:
				p = append(p[:i+1:i+1], p[i:]...)
			case 2:
				p = cloneHashes(p)
				if len(p[i]) > 0 {
					p[i][int(m)%len(p[i])] ^= 1 << (m % 8)
				}
			case 3:
				p = cloneHashes(p)
				p[i] = p[i][:int(m)%(len(p[i])+1)]
			}
			genuine = false
		}
		err := VerifyConsistency(size1, size2, p, root1, root2)
		if err == nil && !genuine {
			// A mutation can still be a valid proof only if it changed
			// nothing that matters; recompute the genuine proof to check.
			want, _ := tr.ConsistencyProof(size1, size2)
			if fmt.Sprint(want) != fmt.Sprint(p) {
				t.Fatalf("VerifyConsistency(%d, %d) accepted a mutated proof %x", size1, size2, p)
			}
		}
		if err != nil && genuine {
			t.Fatalf("VerifyConsistency(%d, %d) = %v for the genuine proof", size1, size2, err)
		}
		if err != nil && errors.Is(err, ErrMalformed) == errors.Is(err, ErrConsistency) {
			t.Fatalf("VerifyConsistency() = %v, want exactly one of ErrMalformed and ErrConsistency", err)
		}
	})
}
