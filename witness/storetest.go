package witness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestStore checks that a [Store] implementation keeps the contract written
// on the interface. Every implementation calls it from its tests.
//
// open is called several times. Each call must return a Store over the same
// persistent state; the suite closes the previous Store before opening the
// next one. The state must be empty on the first call.
func TestStore(t *testing.T, ctx context.Context, open func() (Store, error)) {
	t.Helper()
	s, err := open()
	if err != nil {
		t.Fatalf("opening store: %v", err)
	}
	closed := false
	defer func() {
		if !closed {
			s.Close()
		}
	}()

	load := func(origin string) []byte {
		t.Helper()
		v, err := s.Load(ctx, origin)
		if err != nil {
			t.Fatalf("Load(%q) = %v, want a value", origin, err)
		}
		return v
	}
	mustCAS := func(origin string, old, new []byte) {
		t.Helper()
		if err := s.CompareAndSwap(ctx, origin, old, new); err != nil {
			t.Fatalf("CompareAndSwap(%q, %q, %q) = %v, want nil", origin, old, new, err)
		}
	}
	mustConflict := func(origin string, old, new []byte) {
		t.Helper()
		if err := s.CompareAndSwap(ctx, origin, old, new); !errors.Is(err, ErrConflict) {
			t.Fatalf("CompareAndSwap(%q, %q, %q) = %v, want ErrConflict", origin, old, new, err)
		}
	}

	// An origin never written is not found.
	if v, err := s.Load(ctx, "example.com/none"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Load of a new origin = %q, %v, want ErrNotFound", v, err)
	}

	// First write, then the sequence of swaps.
	a, b, c := []byte("checkpoint A\n"), []byte("checkpoint B\n"), []byte("checkpoint C\n")
	const o = "example.com/log"
	mustCAS(o, nil, a)
	if got := load(o); !bytes.Equal(got, a) {
		t.Fatalf("Load = %q, want %q", got, a)
	}
	mustConflict(o, nil, b)                       // already created
	mustConflict(o, b, c)                         // wrong old value
	mustConflict(o, a[:len(a)-1], c)              // a prefix of the current value
	mustConflict(o, append(bytes.Clone(a), 0), c) // an extension of the current value
	if got := load(o); !bytes.Equal(got, a) {
		t.Fatalf("Load after refused swaps = %q, want %q", got, a)
	}
	mustCAS(o, a, b)
	mustConflict(o, a, c) // the old value is stale now
	if got := load(o); !bytes.Equal(got, b) {
		t.Fatalf("Load = %q, want %q", got, b)
	}
	// Swapping to the same value is allowed and changes nothing.
	mustCAS(o, b, b)

	// new must not be empty.
	if err := s.CompareAndSwap(ctx, o, b, nil); err == nil {
		t.Fatalf("CompareAndSwap to a nil value = nil, want an error")
	}
	if err := s.CompareAndSwap(ctx, "example.com/empty", nil, []byte{}); err == nil {
		t.Fatalf("CompareAndSwap to an empty value = nil, want an error")
	}
	if got := load(o); !bytes.Equal(got, b) {
		t.Fatalf("Load after refused empty writes = %q, want %q", got, b)
	}

	// Keys and values are opaque: unusual origins do not collide, and values
	// keep every byte.
	odd := []string{
		"example.com/log/", "Example.com/log", "example.com/log ", "example.com/lo%67",
		"日本語/ログ", "a'b\"c;--", strings.Repeat("x", 1000),
	}
	for i, origin := range odd {
		mustCAS(origin, nil, []byte(fmt.Sprintf("value %d\x00\xff\n", i)))
	}
	for i, origin := range odd {
		if got, want := load(origin), []byte(fmt.Sprintf("value %d\x00\xff\n", i)); !bytes.Equal(got, want) {
			t.Fatalf("Load(%q) = %q, want %q", origin, got, want)
		}
	}
	if got := load(o); !bytes.Equal(got, b) {
		t.Fatalf("Load(%q) after writing other origins = %q, want %q", o, got, b)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10/16)
	mustCAS("example.com/big", nil, big)
	if got := load("example.com/big"); !bytes.Equal(got, big) {
		t.Fatalf("Load of a 64 KiB value returned %d bytes", len(got))
	}

	// Racing swaps from one old value: exactly one wins each round, and the
	// stored value is the winner's.
	const racers = 16
	cur := b
	for round := range 20 {
		var wg sync.WaitGroup
		var wins atomic.Int32
		winner := make(chan []byte, racers)
		for i := range racers {
			wg.Go(func() {
				v := []byte(fmt.Sprintf("round %d racer %d\n", round, i))
				err := s.CompareAndSwap(ctx, o, cur, v)
				switch {
				case err == nil:
					wins.Add(1)
					winner <- v
				case errors.Is(err, ErrConflict):
				default:
					t.Errorf("racing CompareAndSwap = %v, want nil or ErrConflict", err)
				}
			})
		}
		wg.Wait()
		if n := wins.Load(); n != 1 {
			t.Fatalf("round %d: %d racing swaps succeeded, want exactly 1", round, n)
		}
		cur = <-winner
		if got := load(o); !bytes.Equal(got, cur) {
			t.Fatalf("round %d: Load = %q, want the winner %q", round, got, cur)
		}
	}

	// Swaps on different origins never conflict with each other, and each
	// success is visible to Load at once.
	const origins, steps = 32, 25
	var wg sync.WaitGroup
	for i := range origins {
		wg.Go(func() {
			origin := fmt.Sprintf("example.com/parallel/%d", i)
			var prev []byte
			for j := range steps {
				v := []byte(fmt.Sprintf("%s %d\n", origin, j))
				if err := s.CompareAndSwap(ctx, origin, prev, v); err != nil {
					t.Errorf("CompareAndSwap(%q, step %d) = %v, want nil", origin, j, err)
					return
				}
				got, err := s.Load(ctx, origin)
				if err != nil || !bytes.Equal(got, v) {
					t.Errorf("Load(%q) after step %d = %q, %v, want %q", origin, j, got, err, v)
					return
				}
				prev = v
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// A cancelled context may fail the call, but never leaves a state that
	// disagrees with the result: nil means written, ErrConflict means not.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	d := []byte("written with a cancelled context\n")
	err = s.CompareAndSwap(cctx, o, cur, d)
	switch got := load(o); {
	case err == nil && !bytes.Equal(got, d):
		t.Fatalf("CompareAndSwap with cancelled context = nil but Load = %q", got)
	case errors.Is(err, ErrConflict):
		t.Fatalf("CompareAndSwap with cancelled context and the right old value = ErrConflict")
	case bytes.Equal(got, d):
		cur = d
	case !bytes.Equal(got, cur):
		t.Fatalf("Load after a cancelled CompareAndSwap = %q, want %q or %q", got, cur, d)
	}

	// Everything survives closing and reopening.
	if err := s.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	closed = true
	if err := s.CompareAndSwap(ctx, o, cur, a); err == nil {
		t.Fatalf("CompareAndSwap after Close = nil, want an error")
	}
	s, err = open()
	if err != nil {
		t.Fatalf("reopening store: %v", err)
	}
	closed = false
	if got := load(o); !bytes.Equal(got, cur) {
		t.Fatalf("Load(%q) after reopening = %q, want %q", o, got, cur)
	}
	for i := range origins {
		origin := fmt.Sprintf("example.com/parallel/%d", i)
		if got, want := load(origin), []byte(fmt.Sprintf("%s %d\n", origin, steps-1)); !bytes.Equal(got, want) {
			t.Fatalf("Load(%q) after reopening = %q, want %q", origin, got, want)
		}
	}
	if v, err := s.Load(ctx, "example.com/none"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Load of a new origin after reopening = %q, %v, want ErrNotFound", v, err)
	}
	mustConflict(o, a, c)
	mustCAS(o, cur, c)
	if got := load(o); !bytes.Equal(got, c) {
		t.Fatalf("Load after reopening and swapping = %q, want %q", got, c)
	}
}
