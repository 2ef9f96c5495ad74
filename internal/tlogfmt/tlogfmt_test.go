package tlogfmt

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/transparency-dev/merkle/rfc6962"
)

func TestLeafHash(t *testing.T) {
	// SHA-256 of the single byte 0x00: the RFC 6962 hash of the empty leaf.
	const empty = "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"
	if h := LeafHash(nil); hex.EncodeToString(h[:]) != empty {
		t.Errorf("LeafHash(nil) = %x, want %s", h, empty)
	}
	entry := []byte(`{"tombstone_version":"1.0"}`)
	if h := LeafHash(entry); !bytes.Equal(h[:], rfc6962.DefaultHasher.HashLeaf(entry)) {
		t.Errorf("LeafHash(%q) = %x, want %x", entry, h, rfc6962.DefaultHasher.HashLeaf(entry))
	}
}

func TestParseDecimal(t *testing.T) {
	for _, tt := range []struct {
		s  string
		n  uint64
		ok bool
	}{
		{"0", 0, true},
		{"7", 7, true},
		{"18446744073709551615", 1<<64 - 1, true},
		{"18446744073709551616", 0, false},
		{"", 0, false},
		{"00", 0, false},
		{"07", 0, false},
		{"+7", 0, false},
		{"-1", 0, false},
		{"0x10", 0, false},
		{"1 ", 0, false},
		{" 1", 0, false},
	} {
		if n, ok := ParseDecimal(tt.s); n != tt.n || ok != tt.ok {
			t.Errorf("ParseDecimal(%q) = %d, %v, want %d, %v", tt.s, n, ok, tt.n, tt.ok)
		}
	}
}

func TestParseHash(t *testing.T) {
	h := sha256.Sum256([]byte("x"))
	good := base64.StdEncoding.EncodeToString(h[:])
	if got, ok := ParseHash(good); !ok || got != h {
		t.Errorf("ParseHash(%q) = %x, %v, want %x", good, got, ok, h)
	}
	// The last character carries two unused bits: setting one is another
	// spelling of the same bytes, which is refused.
	last := strings.IndexByte(base64Alphabet, good[42])
	nonCanonical := good[:42] + string(base64Alphabet[last|1]) + "="
	if last&1 == 1 {
		nonCanonical = good[:42] + string(base64Alphabet[last&^1|2]) + "="
	}
	for _, s := range []string{
		"",
		strings.TrimRight(good, "="),
		good + "=",
		nonCanonical,
		good[:20] + "\r" + good[21:],
		good[:20] + "\n" + good[21:],
		base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)),
		base64.StdEncoding.EncodeToString(h[:31]) + "AA",
		" " + good[1:],
	} {
		if got, ok := ParseHash(s); ok {
			t.Errorf("ParseHash(%q) = %x, want refusal", s, got)
		}
	}
}

const base64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

func TestParseCheckpoint(t *testing.T) {
	h := sha256.Sum256([]byte("root"))
	b64 := base64.StdEncoding.EncodeToString(h[:])
	for _, tt := range []struct {
		text string
		ok   bool
	}{
		{"example.com/log\n3\n" + b64 + "\n", true},
		{"example.com/log with spaces+plus\n3\n" + b64 + "\n", true},
		{"o\n18446744073709551615\n" + b64 + "\n", true},
		{"o\n3\n" + b64 + "\next one\next two\n", true},
		// Size 0 with any root parses: callers judge it.
		{"o\n0\n" + b64 + "\n", true},
		{"o\n3\n" + b64, false},
		{"o\n3\n" + b64 + "\n\n", false},
		{"o\n00\n" + b64 + "\n", false},
		{"o\n-3\n" + b64 + "\n", false},
		{"o\n\n" + b64 + "\n", false},
		{"o\n3\n\n", false},
		{"\n3\n" + b64 + "\n", false},
		{"o\n3\n" + b64 + "\r\n", false},
		{"o\n3\n" + b64[:20] + "\r" + b64[21:] + "\n", false},
		{"o\n3\n" + b64 + "\n\nx\n", false},
		{"o\n3\n" + b64 + "\nx\n\n", false},
		{"o\n3\n" + strings.Repeat("x", MaxCheckpointSize) + "\n", false},
		{"", false},
	} {
		c, ok := ParseCheckpoint(tt.text)
		if ok != tt.ok {
			t.Errorf("ParseCheckpoint(%.60q) = %+v, %v, want ok %v", tt.text, c, ok, tt.ok)
			continue
		}
		if ok {
			if got := c.String(); got != tt.text {
				t.Errorf("ParseCheckpoint(%q).String() = %q", tt.text, got)
			}
		}
	}
	c, _ := ParseCheckpoint("example.com/log\n3\n" + b64 + "\next\n")
	if c.Origin != "example.com/log" || c.Size != 3 || c.Hash != h || len(c.Extensions) != 1 || c.Extensions[0] != "ext" {
		t.Errorf("ParseCheckpoint() = %+v", c)
	}
}

func TestProofRoundTrip(t *testing.T) {
	h := sha256.Sum256([]byte("sibling"))
	cp := []byte("example.com/log\n2\n" + base64.StdEncoding.EncodeToString(h[:]) + "\n\n\u2014 example.com/log AAAA\n")
	for _, p := range []*Proof{
		{Index: 1, Path: [][]byte{h[:]}, Checkpoint: cp},
		{Extra: []byte{}, Index: 0, Checkpoint: cp},
		{Extra: []byte("context"), Index: 1, Path: [][]byte{h[:]}, Checkpoint: cp},
	} {
		b := p.Format()
		got, ok := ParseProof(b)
		if !ok || !bytes.Equal(got.Format(), b) || got.Index != p.Index || (got.Extra == nil) != (p.Extra == nil) {
			t.Errorf("ParseProof(%q) = %+v, %v", b, got, ok)
		}
	}
	want := "c2sp.org/tlog-proof@v1\nindex 1\n" + base64.StdEncoding.EncodeToString(h[:]) + "\n\n" + string(cp)
	if got := FormatProof(1, [][]byte{h[:]}, cp); string(got) != want {
		t.Errorf("FormatProof() = %q, want %q", got, want)
	}
	for _, bad := range []string{
		"",
		"c2sp.org/tlog-proof@v1\nindex 1\n\n",
		"c2sp.org/tlog-proof@v1\r\nindex 1\n\n" + string(cp),
		"c2sp.org/tlog-proof@v2\nindex 1\n\n" + string(cp),
		"c2sp.org/tlog-proof@v1\nindex 01\n\n" + string(cp),
		"c2sp.org/tlog-proof@v1\nextra YR==\nindex 1\n\n" + string(cp),
		"c2sp.org/tlog-proof@v1\nindex 1\n" + strings.Repeat(base64.StdEncoding.EncodeToString(h[:])+"\n", MaxInclusionPath+1) + "\n" + string(cp),
		"c2sp.org/tlog-proof@v1\nindex 1\n\n" + strings.TrimSuffix(string(cp), "\n"),
		"c2sp.org/tlog-proof@v1\nextra " + base64.StdEncoding.EncodeToString(make([]byte, MaxProofSize)) + "\nindex 1\n\n" + string(cp),
	} {
		if p, ok := ParseProof([]byte(bad)); ok {
			t.Errorf("ParseProof(%.60q) = %+v, want refusal", bad, p)
		}
	}
}

// FuzzParseCheckpoint checks that what parses formats back to itself.
func FuzzParseCheckpoint(f *testing.F) {
	f.Add("example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n")
	f.Add("o\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\next\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, ok := ParseCheckpoint(text)
		if !ok {
			return
		}
		if got := c.String(); got != text {
			t.Fatalf("ParseCheckpoint(%q).String() = %q", text, got)
		}
		again, ok := ParseCheckpoint(c.String())
		if !ok || again.Origin != c.Origin || again.Size != c.Size || again.Hash != c.Hash {
			t.Fatalf("ParseCheckpoint(String()) = %+v, %v, want %+v", again, ok, c)
		}
	})
}

// FuzzParseProof checks that what parses formats back to itself.
func FuzzParseProof(f *testing.F) {
	h := sha256.Sum256([]byte("sibling"))
	cp := []byte("example.com/log\n2\n" + base64.StdEncoding.EncodeToString(h[:]) + "\n\n\u2014 example.com/log AAAA\n")
	f.Add(FormatProof(1, [][]byte{h[:]}, cp))
	f.Add((&Proof{Extra: []byte("x"), Index: 0, Checkpoint: cp}).Format())
	f.Fuzz(func(t *testing.T, b []byte) {
		p, ok := ParseProof(b)
		if !ok {
			return
		}
		if got := p.Format(); !bytes.Equal(got, b) {
			t.Fatalf("ParseProof(%q).Format() = %q", b, got)
		}
		for _, h := range p.Path {
			if len(h) != HashSize {
				t.Fatalf("ParseProof(%q) has a path hash of %d bytes", b, len(h))
			}
		}
	})
}
