package sqliteindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// An idTable maps single-use id hashes to log indexes: an open-addressing
// hash table kept in memory and written back to a file. A B-tree keyed by
// these random hashes rewrites a page per insert at commit time, which made
// the index the largest cost of ingest and grew with the log; a slot here
// costs a few memory accesses whatever the size. (A shared file mapping
// would fault on the first write to each page after every sync.) The table
// takes 32 bytes a slot at under 70% load: about 46 MB per million ids.
//
// File layout: a 4,096-byte header — "MTIDS001", capacity, count and
// watermark (uint64 big-endian), then a CRC-32 of those 32 bytes — followed
// by capacity slots of 32 bytes: the 16-byte id hash (all zero when the slot
// is empty), the index (uint64 big-endian) and 8 reserved bytes. A slot
// never straddles a page. Slots are found by linear probing from the hash's
// first 8 bytes modulo the capacity, a power of two; the table doubles when
// it is 70% full.
//
// Durability: insert writes slots and advances the watermark in memory;
// sync, called about once a second, writes the changed pages to the file,
// syncs it, and only then writes the synced watermark into the header. Syncing random slots writes a page per
// slot, so syncing per insert would cost as much as a B-tree. After a crash
// the header's watermark is at most what the slots on disk hold, so the
// index re-applies from it; inserting an id again at the same index is a
// no-op.
type idTable struct {
	mu        sync.RWMutex
	f         *os.File
	m         []byte   // the file's contents
	dirtyPage []uint64 // bitmap of pages of m changed since the last sync
	path      string
	capacity  uint64
	count     uint64
	watermark uint64 // applied
	durable   uint64 // applied and synced: the header's
	dirty     bool
}

const (
	idTableMagic     = "MTIDS001"
	idTableHeader    = 4096
	idSlot           = 32
	idTableMaxLoadPc = 70
)

// idTableInitial is the capacity of a new table (32 MiB of slots, a
// sparse file until written); tests lower it.
var idTableInitial uint64 = 1 << 20

// errIDTableCorrupt is returned when the table file cannot be trusted; the
// index rebuilds it from the log.
var errIDTableCorrupt = errors.New("id table is damaged")

func openIDTable(path string) (*idTable, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("couldn't open id table: %w", err)
	}
	t := &idTable{f: f, path: path}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi.Size() == 0 {
		if err := t.init(idTableInitial); err != nil {
			f.Close()
			return nil, err
		}
		return t, nil
	}
	if fi.Size() < idTableHeader {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, errIDTableCorrupt)
	}
	if err := t.mapFile(fi.Size()); err != nil {
		f.Close()
		return nil, err
	}
	if err := t.readHeader(); err != nil {
		t.close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if fi.Size() != int64(idTableHeader+t.capacity*idSlot) {
		t.close()
		return nil, fmt.Errorf("%s is %d bytes, want %d: %w", path, fi.Size(), idTableHeader+t.capacity*idSlot, errIDTableCorrupt)
	}
	return t, nil
}

// mapFile reads the file into memory.
func (t *idTable) mapFile(size int64) error {
	m, err := allocTable(size)
	if err != nil {
		return err
	}
	if _, err := t.f.ReadAt(m, 0); err != nil {
		syscall.Munmap(m)
		return fmt.Errorf("couldn't read id table: %w", err)
	}
	t.m = m
	t.dirtyPage = make([]uint64, (size/pageSize+63)/64+1)
	return nil
}

// allocTable allocates the table's memory outside the Go heap: the table
// is large, holds no pointers, and would otherwise count against the
// runtime's memory limit and make the collector run for nothing.
func allocTable(size int64) ([]byte, error) {
	m, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("couldn't allocate id table: %w", err)
	}
	return m, nil
}

func (t *idTable) free() {
	if t.m != nil {
		syscall.Munmap(t.m)
		t.m = nil
	}
}

const pageSize = 4096

func (t *idTable) markDirty(off uint64) {
	p := off / pageSize
	t.dirtyPage[p/64] |= 1 << (p % 64)
}

// init empties the table with the given capacity.
func (t *idTable) init(capacity uint64) error {
	t.free()
	if err := t.f.Truncate(0); err != nil {
		return fmt.Errorf("couldn't clear id table: %w", err)
	}
	if err := t.f.Truncate(int64(idTableHeader + capacity*idSlot)); err != nil {
		return fmt.Errorf("couldn't size id table: %w", err)
	}
	t.capacity, t.count, t.watermark, t.durable = capacity, 0, 0, 0
	size := int64(idTableHeader + capacity*idSlot)
	m, err := allocTable(size)
	if err != nil {
		return err
	}
	t.m = m
	t.dirtyPage = make([]uint64, (size/pageSize+63)/64+1)
	t.writeHeader()
	return t.writeAt(t.m[:idTableHeader], 0)
}

func (t *idTable) writeAt(b []byte, off int64) error {
	if _, err := t.f.WriteAt(b, off); err != nil {
		return fmt.Errorf("couldn't write id table: %w", err)
	}
	return nil
}

func (t *idTable) readHeader() error {
	h := t.m[:idTableHeader]
	if string(h[:8]) != idTableMagic || crc32.ChecksumIEEE(h[:32]) != binary.BigEndian.Uint32(h[32:36]) {
		return errIDTableCorrupt
	}
	t.capacity = binary.BigEndian.Uint64(h[8:16])
	t.count = binary.BigEndian.Uint64(h[16:24])
	t.watermark = binary.BigEndian.Uint64(h[24:32])
	t.durable = t.watermark
	if t.capacity == 0 || t.capacity&(t.capacity-1) != 0 || t.count > t.capacity {
		return errIDTableCorrupt
	}
	return nil
}

func (t *idTable) writeHeader() {
	h := t.m[:36]
	copy(h[:8], idTableMagic)
	binary.BigEndian.PutUint64(h[8:16], t.capacity)
	binary.BigEndian.PutUint64(h[16:24], t.count)
	binary.BigEndian.PutUint64(h[24:32], t.durable)
	binary.BigEndian.PutUint32(h[32:36], crc32.ChecksumIEEE(h[:32]))
}

func (t *idTable) slotOffset(i uint64) int64 { return int64(idTableHeader + i*idSlot) }

func (t *idTable) slotAt(i uint64) []byte {
	off := idTableHeader + i*idSlot
	return t.m[off : off+idSlot : off+idSlot]
}

// find returns the slot holding h, or the empty slot where it would go.
func (t *idTable) find(h []byte) (slot uint64, idx uint64, found bool, err error) {
	var zero [16]byte
	i := binary.BigEndian.Uint64(h[:8]) & (t.capacity - 1)
	for probes := uint64(0); probes < t.capacity; probes++ {
		buf := t.slotAt(i)
		if bytes.Equal(buf[:16], zero[:]) {
			return i, 0, false, nil
		}
		if bytes.Equal(buf[:16], h) {
			return i, binary.BigEndian.Uint64(buf[16:24]), true, nil
		}
		i = (i + 1) & (t.capacity - 1)
	}
	return 0, 0, false, errIDTableCorrupt
}

// lookup returns the index stored for h.
func (t *idTable) lookup(h []byte) (uint64, bool, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	_, idx, found, err := t.find(h)
	return idx, found, err
}

// An idRow is one id to insert.
type idRow struct {
	hash []byte
	idx  uint64
}

// insert adds rows (all at indexes at or above the watermark) and advances
// the watermark to newWatermark. An id already present at another index is
// refused before anything is written; at the same index it is skipped.
func (t *idTable) insert(rows []idRow, newWatermark uint64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if (t.count+uint64(len(rows)))*100 > t.capacity*idTableMaxLoadPc {
		if err := t.grow(t.count + uint64(len(rows))); err != nil {
			return err
		}
	}
	// Check every row first, so a refused run writes nothing.
	seen := make(map[string]uint64, len(rows))
	for _, r := range rows {
		_, idx, found, err := t.find(r.hash)
		if err != nil {
			return err
		}
		if found && idx != r.idx {
			return fmt.Errorf("id %x is at index %d and again at %d: an id logged twice", r.hash, idx, r.idx)
		}
		if prev, dup := seen[string(r.hash)]; dup && prev != r.idx {
			return fmt.Errorf("id %x is at index %d and again at %d: an id logged twice", r.hash, prev, r.idx)
		}
		seen[string(r.hash)] = r.idx
	}
	for _, r := range rows {
		slot, _, found, err := t.find(r.hash)
		if err != nil {
			return err
		}
		if found {
			continue
		}
		buf := t.slotAt(slot)
		binary.BigEndian.PutUint64(buf[16:24], r.idx)
		copy(buf[:16], r.hash)
		t.markDirty(uint64(t.slotOffset(slot)))
		t.count++
	}
	t.watermark = newWatermark
	t.dirty = true
	return nil
}

// sync makes the applied slots durable, then records their watermark in
// the header.
func (t *idTable) sync() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.dirty {
		return nil
	}
	wm := t.watermark
	// Write back the changed pages, coalescing runs.
	pages := uint64(len(t.m)) / pageSize
	for p := uint64(1); p < pages; {
		if t.dirtyPage[p/64]&(1<<(p%64)) == 0 {
			p++
			continue
		}
		q := p
		for q < pages && t.dirtyPage[q/64]&(1<<(q%64)) != 0 {
			q++
		}
		// On failure the pages stay marked, so the next sync writes them
		// again, and the durable watermark does not move.
		if err := t.writeAt(t.m[p*pageSize:q*pageSize], int64(p*pageSize)); err != nil {
			return err
		}
		p = q
	}
	if err := t.f.Sync(); err != nil {
		return fmt.Errorf("couldn't sync id table: %w", err)
	}
	clear(t.dirtyPage)
	t.durable = wm
	t.writeHeader()
	t.dirty = false
	return t.writeAt(t.m[:idTableHeader], 0)
}

// grow rebuilds the table at a capacity that holds need at under 70% load.
func (t *idTable) grow(need uint64) error {
	capacity := t.capacity
	for need*100 > capacity*idTableMaxLoadPc {
		capacity *= 2
	}
	tmpPath := t.path + ".grow"
	nf, err := os.OpenFile(tmpPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("couldn't create larger id table: %w", err)
	}
	nt := &idTable{f: nf, path: t.path}
	if err := nt.init(capacity); err != nil {
		nf.Close()
		return err
	}
	var zero [16]byte
	for i := uint64(0); i < t.capacity; i++ {
		slot := t.slotAt(i)
		if bytes.Equal(slot[:16], zero[:]) {
			continue
		}
		j, _, _, err := nt.find(slot[:16])
		if err != nil {
			nt.close()
			return err
		}
		copy(nt.slotAt(j), slot)
		nt.count++
	}
	nt.watermark, nt.durable = t.watermark, t.watermark
	nt.writeHeader()
	if err := nt.writeAt(nt.m, 0); err != nil {
		nt.close()
		return err
	}
	if err := nf.Sync(); err != nil {
		nt.close()
		return fmt.Errorf("couldn't sync larger id table: %w", err)
	}
	if err := os.Rename(tmpPath, t.path); err != nil {
		nt.close()
		return fmt.Errorf("couldn't replace id table: %w", err)
	}
	syncDirOf(t.path)
	// The old file is replaced: drop it without syncing.
	t.free()
	t.f.Close()
	t.f, t.m, t.dirtyPage, t.capacity, t.count, t.durable, t.dirty = nt.f, nt.m, nt.dirtyPage, nt.capacity, nt.count, nt.durable, false
	return nil
}

// each calls fn with every stored hash.
func (t *idTable) each(fn func(h []byte)) (uint64, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var zero [16]byte
	var n uint64
	for i := uint64(0); i < t.capacity; i++ {
		if slot := t.slotAt(i); !bytes.Equal(slot[:16], zero[:]) {
			fn(slot[:16])
			n++
		}
	}
	return n, nil
}

func (t *idTable) getWatermark() uint64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.watermark
}

// reset empties the table.
func (t *idTable) reset() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.init(idTableInitial); err != nil {
		return err
	}
	t.dirty = false
	return t.f.Sync()
}

func (t *idTable) close() error {
	var err error
	if t.dirty {
		err = t.sync()
	}
	t.free()
	return errors.Join(err, t.f.Close())
}

func syncDirOf(path string) {
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
}
