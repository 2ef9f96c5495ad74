package log

import (
	"context"
	"encoding/binary"
	"sync"

	"github.com/memtrail/memtrail/receipts"
)

// seenFilter is an in-memory Bloom filter over the ids the index holds. A
// submission whose id the filter has never seen skips the index lookup: on
// the ingest hot path nearly every id is new, and an index query costs more
// than the rest of the single-use check. A false positive only costs that
// query. The filter is built from the index at start and fed by the indexer
// before it drops the in-memory claims, so an id is always in the claims
// table or in the filter.
type seenFilter struct {
	mu   sync.RWMutex
	bits []uint64
	mask uint64
}

// seenBitsPerID gives about a 1% false-positive rate with 7 probes.
const seenBitsPerID = 10

func newSeenFilter(expected uint64) *seenFilter {
	n := max(expected*2, 1<<20) * seenBitsPerID
	size := uint64(1)
	for size < n {
		size <<= 1
	}
	return &seenFilter{bits: make([]uint64, size/64), mask: size - 1}
}

// probes derives 7 bit positions from the id hash by double hashing.
func (f *seenFilter) probes(h []byte, fn func(bit uint64) bool) bool {
	a := binary.LittleEndian.Uint64(h[0:8])
	b := binary.LittleEndian.Uint64(h[8:16]) | 1
	for i := uint64(0); i < 7; i++ {
		if !fn((a + i*b) & f.mask) {
			return false
		}
	}
	return true
}

func (f *seenFilter) add(kind receipts.Kind, id string) {
	h := idHash(kind, id)
	f.mu.Lock()
	f.probes(h, func(bit uint64) bool { f.bits[bit/64] |= 1 << (bit % 64); return true })
	f.mu.Unlock()
}

func (f *seenFilter) addHash(h []byte) {
	f.probes(h, func(bit uint64) bool { f.bits[bit/64] |= 1 << (bit % 64); return true })
}

// mayContain is false when the id was certainly never added.
func (f *seenFilter) mayContain(kind receipts.Kind, id string) bool {
	h := idHash(kind, id)
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.probes(h, func(bit uint64) bool { return f.bits[bit/64]&(1<<(bit%64)) != 0 })
}

// idHasher is implemented by indexes that can list the hashes of every id
// they hold (to fill the filter at start).
type idHasher interface {
	IDHashes(ctx context.Context, fn func(h []byte)) (uint64, error)
}
