package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func TestCheckTile(t *testing.T) {
	for _, tc := range []struct {
		size int
		p    uint8
		ok   bool
	}{
		{256 * 32, 0, true},
		{44 * 32, 44, true},
		{256 * 32, 44, true}, // the full tile that replaced a partial one
		{255 * 32, 0, false},
		{43 * 32, 44, false},
		{44*32 - 1, 44, false},
		{0, 1, false},
		{257 * 32, 0, false},
	} {
		err := CheckTile(make([]byte, tc.size), tc.p)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrTileDamaged) {
			t.Errorf("CheckTile(%d bytes, %d) = %v, want ok %v", tc.size, tc.p, err, tc.ok)
		}
	}
}

func bundle(sizes ...int) []byte {
	var b []byte
	for _, n := range sizes {
		b = binary.BigEndian.AppendUint16(b, uint16(n))
		b = append(b, make([]byte, n)...)
	}
	return b
}

func TestCheckEntryBundle(t *testing.T) {
	three := bundle(10, 0, 300)
	for _, tc := range []struct {
		name string
		raw  []byte
		p    uint8
		ok   bool
	}{
		{"whole", three, 3, true},
		{"more than its width", three, 2, true},
		{"fewer than its width", three, 4, false},
		{"cut inside an entry", three[:len(three)-1], 3, false},
		{"cut inside a length", three[:13], 3, false},
		{"empty", nil, 1, false},
	} {
		err := CheckEntryBundle(tc.raw, tc.p)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrTileDamaged) {
			t.Errorf("CheckEntryBundle(%s) = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// TestTrim: a partial resource is served as its width, also when storage
// gave the full one that replaced it; any other length is damage.
func TestTrim(t *testing.T) {
	full := make([]byte, 256*32)
	for i := range full {
		full[i] = byte(i / 32)
	}
	for _, tc := range []struct {
		size int
		p    uint8
		want int // bytes served, 0 for damaged
	}{
		{256 * 32, 0, 256 * 32},
		{44 * 32, 44, 44 * 32},
		{256 * 32, 44, 44 * 32},
		{45 * 32, 44, 0}, // a partial tile longer than its width
		{43 * 32, 44, 0},
		{255 * 32, 0, 0},
	} {
		got, err := TrimTile(full[:tc.size], tc.p)
		switch {
		case tc.want == 0 && !errors.Is(err, ErrTileDamaged):
			t.Errorf("TrimTile(%d bytes, %d) = %v, want ErrTileDamaged", tc.size, tc.p, err)
		case tc.want != 0 && (err != nil || !bytes.Equal(got, full[:tc.want])):
			t.Errorf("TrimTile(%d bytes, %d) = %d bytes, %v; want the first %d", tc.size, tc.p, len(got), err, tc.want)
		}
	}
	sizes := make([]int, 256)
	for i := range sizes {
		sizes[i] = i % 7
	}
	b := bundle(sizes...)
	if got, err := TrimEntryBundle(b, 5); err != nil || !bytes.Equal(got, bundle(sizes[:5]...)) {
		t.Errorf("TrimEntryBundle(full, 5) = %x, %v; want its first 5 entries", got, err)
	}
	if got, err := TrimEntryBundle(b, 0); err != nil || !bytes.Equal(got, b) {
		t.Errorf("TrimEntryBundle(full, 0) = %d bytes, %v", len(got), err)
	}
	if _, err := TrimEntryBundle(b[:len(b)-1], 0); !errors.Is(err, ErrTileDamaged) {
		t.Errorf("TrimEntryBundle(torn) = %v, want ErrTileDamaged", err)
	}
}
