package receipts

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
)

// A BloomFilter is the profile's tombstone Bloom filter, carried in an
// ECCR's tombstone_bloom_filter_b64 as the unpadded base64url of
//
//	0x01 (version) || k (1 byte) || m (uint32 big-endian, bits) || bitset (m/8 bytes)
//
// Bit p is bit p mod 8 (least significant first) of byte p div 8. An item
// digest d (its 32 raw bytes) sets, for j = 0 … k−1, bit
//
//	uint64be(SHA-256("eccr-bloom-v1" || byte(j) || d)[0:8]) mod m
//
// The empty filter is k = 0, m = 0 with no bitset ("AQAAAAAA"); otherwise
// 1 ≤ k ≤ 32 and m is a positive multiple of 8, at most 2^24.
type BloomFilter struct {
	K    int
	M    uint32
	Bits []byte
}

const (
	bloomVersion = 0x01
	bloomMaxK    = 32
	bloomMaxM    = 1 << 24
	bloomDomain  = "eccr-bloom-v1"
)

// EmptyBloomFilter is the encoding of the empty filter.
const EmptyBloomFilter = "AQAAAAAA"

// NewBloomFilter returns an empty filter sized for n items at a false
// positive rate near fpRate (clamped to the format's limits).
func NewBloomFilter(n int, fpRate float64) *BloomFilter {
	if n <= 0 {
		return &BloomFilter{}
	}
	if fpRate <= 0 || fpRate >= 1 {
		fpRate = 1e-9
	}
	bits := math.Ceil(-float64(n) * math.Log(fpRate) / (math.Ln2 * math.Ln2))
	bits = math.Max(8, math.Min(bits, bloomMaxM))
	m := uint32(math.Ceil(bits/8)) * 8
	k := int(math.Round(float64(m) / float64(n) * math.Ln2))
	k = max(1, min(k, bloomMaxK))
	return &BloomFilter{K: k, M: m, Bits: make([]byte, m/8)}
}

// ParseBloomFilter decodes s strictly: base64url without padding, version
// 1, k and m within the limits, and exactly m/8 bytes of bitset.
func ParseBloomFilter(s string) (*BloomFilter, error) {
	raw, ok := DecodeB64u(s)
	if !ok {
		return nil, refuse(CodeBloomFilterInvalid, "tombstone_bloom_filter_b64", "not unpadded base64url")
	}
	if len(raw) < 6 || raw[0] != bloomVersion {
		return nil, refuse(CodeBloomFilterInvalid, "tombstone_bloom_filter_b64", "not a version 1 filter (0x01 || k || m || bitset)")
	}
	f := &BloomFilter{K: int(raw[1]), M: binary.BigEndian.Uint32(raw[2:6]), Bits: raw[6:]}
	switch {
	case f.K == 0 && f.M == 0:
		if len(f.Bits) != 0 {
			return nil, refuse(CodeBloomFilterInvalid, "tombstone_bloom_filter_b64", "the empty filter has no bitset")
		}
		f.Bits = nil
	case f.K < 1 || f.K > bloomMaxK:
		return nil, refuse(CodeBloomFilterInvalid, "tombstone_bloom_filter_b64", "k is %d, want 1 to %d", f.K, bloomMaxK)
	case f.M == 0 || f.M%8 != 0 || f.M > bloomMaxM:
		return nil, refuse(CodeBloomFilterInvalid, "tombstone_bloom_filter_b64", "m is %d, want a positive multiple of 8 up to 2^24", f.M)
	case uint32(len(f.Bits)) != f.M/8:
		return nil, refuse(CodeBloomFilterInvalid, "tombstone_bloom_filter_b64", "bitset is %d bytes, want m/8 = %d", len(f.Bits), f.M/8)
	}
	return f, nil
}

// Encode returns the unpadded base64url encoding of f.
func (f *BloomFilter) Encode() string {
	raw := make([]byte, 6, 6+len(f.Bits))
	raw[0] = bloomVersion
	raw[1] = byte(f.K)
	binary.BigEndian.PutUint32(raw[2:6], f.M)
	return EncodeB64u(append(raw, f.Bits...))
}

func (f *BloomFilter) positions(digest [32]byte, fn func(byteIndex uint32, mask byte) bool) bool {
	var in [len(bloomDomain) + 1 + 32]byte
	copy(in[:], bloomDomain)
	copy(in[len(bloomDomain)+1:], digest[:])
	for j := 0; j < f.K; j++ {
		in[len(bloomDomain)] = byte(j)
		h := sha256.Sum256(in[:])
		p := binary.BigEndian.Uint64(h[:8]) % uint64(f.M)
		if !fn(uint32(p/8), 1<<(p%8)) {
			return false
		}
	}
	return true
}

// Add sets the bits of digest. Adding to the empty filter is a no-op; size
// the filter with NewBloomFilter.
func (f *BloomFilter) Add(digest [32]byte) {
	if f.K == 0 || f.M == 0 {
		return
	}
	f.positions(digest, func(i uint32, mask byte) bool { f.Bits[i] |= mask; return true })
}

// Contains reports whether every bit of digest is set: false means the item
// was certainly not added; true means it probably was.
func (f *BloomFilter) Contains(digest [32]byte) bool {
	if f.K == 0 || f.M == 0 {
		return false
	}
	return f.positions(digest, func(i uint32, mask byte) bool { return f.Bits[i]&mask != 0 })
}

// DigestBytes returns the 32 raw bytes of a "sha256:<hex>" digest. The
// digest must be valid (see IsDigest).
func DigestBytes(digest string) [32]byte {
	var b [32]byte
	for i := 0; i < 32; i++ {
		b[i] = unhex(digest[7+2*i])<<4 | unhex(digest[8+2*i])
	}
	return b
}

func unhex(c byte) byte {
	if c >= 'a' {
		return c - 'a' + 10
	}
	return c - '0'
}
