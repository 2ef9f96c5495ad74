package posixstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"

	"github.com/memtrail/memtrail/internal/atomicfile"
	"github.com/memtrail/memtrail/log/store"
)

// FileCheckpointArchive is the embedded CheckpointArchive: append-only
// segment files in one directory, DIR/<k> holding the checkpoints of sizes
// 1000k to 1000k+999 (DIR/1234 holds sizes 1,234,000 to 1,234,999; DIR/0
// holds 0 to 999). A segment is a sequence of records, each the signed
// note as published, framed by a header line giving its size and length:
//
//	<size> <n>\n
//	<n bytes: the signed checkpoint>\n
//
// in decimal, without leading zeros; n is at most 64 KiB. A size put again
// (the same tree, with other cosignatures) is a later record of that size,
// which replaces the earlier one. Each Put appends one record in one write
// and syncs the file (and the directory, when the segment is new) before
// it returns.
//
// Why files of records: one file per checkpoint would take a disk block
// and an inode per checkpoint (a log that grows every second publishes
// thirty million a year), and a database file cannot be copied while it is
// written. A segment is only ever appended to, so it can be copied while
// the log runs (cp -a, rsync, any file backup): the copy is a prefix of
// it, at worst ending in a record cut short, which readers ignore and the
// next Put truncates. Restoring is copying the files back. The records are
// the checkpoints as text, which anyone can read and check.
//
// A record cut short at the end of a segment is what a crash during a
// write leaves; anything else that is not a record makes the segment
// damaged: the records before the damage are still read, Put into the
// segment fails, and fsck reports it, to be restored from a backup.
type FileCheckpointArchive struct {
	dir string
	mu  sync.Mutex // serializes Puts, and guards cur
	cur *segment   // the segment last read or written by Put
}

// Limits of the embedded archive.
const (
	segmentSpan = 1000 // sizes per segment
	// maxArchivedCheckpoint bounds a record: a checkpoint cosigned by the
	// 256 witnesses a tlog-policy may name is under 40 KiB.
	maxArchivedCheckpoint = 64 << 10
	// maxSegmentFile bounds what is read of a segment: a thousand records
	// of the greatest size, each put four times.
	maxSegmentFile = 4 * segmentSpan * (maxArchivedCheckpoint + 64)
	// maxRecordHeader is the longest header line: two 20-digit numbers,
	// a space and the newline.
	maxRecordHeader = 42
)

// errSegmentDamaged is wrapped by the errors of a segment that holds
// something other than records.
var errSegmentDamaged = errors.New("checkpoint archive segment is damaged")

// segment is a parsed segment file.
type segment struct {
	group uint64
	end   int64             // length of its complete records, the file's size after a clean write
	last  map[uint64][]byte // the last record of each size
}

// NewFileCheckpointArchive returns the archive rooted at dir, creating it.
func NewFileCheckpointArchive(dir string) (*FileCheckpointArchive, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("couldn't create the checkpoint archive directory: %w", err)
	}
	return &FileCheckpointArchive{dir: dir}, nil
}

// Dir returns the archive's directory.
func (a *FileCheckpointArchive) Dir() string { return a.dir }

func (a *FileCheckpointArchive) segmentPath(group uint64) string {
	return filepath.Join(a.dir, strconv.FormatUint(group, 10))
}

// parseSegment parses the records of the segment file b of group. It
// returns them in file order, and the length of the complete records. A
// record cut short at the end is left out, without error; other bytes
// that are not a record stop the parse with an error wrapping
// errSegmentDamaged, after the records before them.
func parseSegment(b []byte, group uint64) (sizes []uint64, notes [][]byte, end int, err error) {
	off := 0
	damaged := func(why string) error {
		return fmt.Errorf("%w: %s at byte %d", errSegmentDamaged, why, off)
	}
	for off < len(b) {
		rest := b[off:]
		nl := bytes.IndexByte(rest[:min(len(rest), maxRecordHeader)], '\n')
		if nl < 0 {
			if len(rest) < maxRecordHeader && bytes.Count(rest, []byte(" ")) <= 1 && len(bytes.Trim(rest, "0123456789 ")) == 0 {
				return sizes, notes, off, nil // a header cut short
			}
			return sizes, notes, off, damaged("no record header")
		}
		sizeField, lenField, ok := bytes.Cut(rest[:nl], []byte(" "))
		size, okSize := parseUint(sizeField)
		n, okLen := parseUint(lenField)
		switch {
		case !ok || !okSize || !okLen:
			return sizes, notes, off, damaged("a malformed record header")
		case size/segmentSpan != group:
			return sizes, notes, off, damaged(fmt.Sprintf("a checkpoint of size %d, which belongs in segment %d", size, size/segmentSpan))
		case n == 0 || n > maxArchivedCheckpoint:
			return sizes, notes, off, damaged(fmt.Sprintf("a record of %d bytes", n))
		}
		body := nl + 1
		if uint64(len(rest)-body) < n+1 {
			return sizes, notes, off, nil // a record cut short
		}
		if rest[body+int(n)] != '\n' {
			return sizes, notes, off, damaged("a record not followed by a newline")
		}
		sizes = append(sizes, size)
		notes = append(notes, rest[body:body+int(n)])
		off += body + int(n) + 1
	}
	return sizes, notes, off, nil
}

// parseUint parses a decimal without sign or leading zeros.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 1 && b[0] == '0' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b), 10, 64)
	return n, err == nil
}

// readSegment reads and parses the segment of group. A segment that does
// not exist is empty. err reports damage, after what could be read.
func (a *FileCheckpointArchive) readSegment(group uint64) (seg *segment, err error) {
	f, err := os.Open(a.segmentPath(group))
	if errors.Is(err, fs.ErrNotExist) {
		return &segment{group: group, last: map[uint64][]byte{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("couldn't read the checkpoint archive: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSegmentFile+1))
	if err != nil {
		return nil, fmt.Errorf("couldn't read the checkpoint archive: %w", err)
	}
	seg = &segment{group: group, last: map[uint64][]byte{}}
	if len(b) > maxSegmentFile {
		return seg, fmt.Errorf("%s: %w: over %d bytes", a.segmentPath(group), errSegmentDamaged, maxSegmentFile)
	}
	sizes, notes, end, perr := parseSegment(b, group)
	for i, s := range sizes {
		seg.last[s] = notes[i]
	}
	seg.end = int64(end)
	if perr != nil {
		return seg, fmt.Errorf("%s: %w", a.segmentPath(group), perr)
	}
	return seg, nil
}

func (a *FileCheckpointArchive) Put(ctx context.Context, size uint64, signed []byte) error {
	return a.put(size, signed, true)
}

// put is Put; without sync, the record is not synced (migrateCheckpoints
// syncs everything once with syncAll).
func (a *FileCheckpointArchive) put(size uint64, signed []byte, sync bool) error {
	text, err := store.CheckpointText(size, signed)
	if err == nil && len(signed) > maxArchivedCheckpoint {
		err = fmt.Errorf("%w: over %d bytes", store.ErrCheckpointMalformed, maxArchivedCheckpoint)
	}
	if err != nil {
		return fmt.Errorf("couldn't archive the checkpoint of size %d: %w", size, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	group := size / segmentSpan
	path := a.segmentPath(group)
	seg := a.cur
	fi, statErr := os.Stat(path)
	switch {
	case statErr != nil && !errors.Is(statErr, fs.ErrNotExist):
		return fmt.Errorf("couldn't read the checkpoint archive: %w", statErr)
	case seg == nil || seg.group != group || statErr != nil || fi.Size() != seg.end:
		// Not the segment cached, or changed since: read it again.
		a.cur = nil
		if seg, err = a.readSegment(group); err != nil {
			return fmt.Errorf("couldn't archive the checkpoint of size %d: %w", size, err)
		}
		if statErr == nil && fi.Size() > seg.end {
			// A record cut short by a crash: the next one replaces it.
			if err := os.Truncate(path, seg.end); err != nil {
				return fmt.Errorf("couldn't archive the checkpoint of size %d: %w", size, err)
			}
		}
	}
	if old, ok := seg.last[size]; ok {
		if bytes.Equal(old, signed) {
			a.cur = seg
			return nil
		}
		if oldText, err := store.CheckpointText(size, old); err == nil && !bytes.Equal(oldText, text) {
			return fmt.Errorf("couldn't archive the checkpoint of size %d: %w (%s)", size, store.ErrCheckpointConflict, path)
		}
	}
	rec := make([]byte, 0, len(signed)+maxRecordHeader+1)
	rec = fmt.Appendf(rec, "%d %d\n", size, len(signed))
	rec = append(append(rec, signed...), '\n')
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("couldn't archive the checkpoint of size %d: %w", size, err)
	}
	_, werr := f.Write(rec)
	var serr error
	if sync {
		serr = f.Sync()
	}
	if err := errors.Join(werr, serr, f.Close()); err != nil {
		return fmt.Errorf("couldn't archive the checkpoint of size %d: %w", size, err)
	}
	if sync && statErr != nil {
		// A new segment: its name must be as durable as its record.
		if err := atomicfile.SyncDir(a.dir); err != nil {
			return err
		}
	}
	seg.last[size] = append([]byte(nil), signed...)
	seg.end += int64(len(rec))
	a.cur = seg
	return nil
}

// syncAll makes everything put wrote without sync durable.
func (a *FileCheckpointArchive) syncAll() error {
	syscall.Sync()
	return atomicfile.SyncDir(a.dir)
}

func (a *FileCheckpointArchive) Get(ctx context.Context, size uint64) ([]byte, error) {
	seg, err := a.readSegment(size / segmentSpan)
	if seg == nil {
		return nil, err
	}
	if b, ok := seg.last[size]; ok {
		return b, nil
	}
	if err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("checkpoint of size %d: %w", size, store.ErrNotFound)
}

func (a *FileCheckpointArchive) Latest(ctx context.Context) (uint64, []byte, error) {
	groups, err := a.groups()
	if err != nil {
		return 0, nil, err
	}
	// The greatest segment that holds a record; one left empty (a crash
	// before its first record was whole) is skipped.
	for i := len(groups) - 1; i >= 0; i-- {
		seg, err := a.readSegment(groups[i])
		if seg == nil || len(seg.last) == 0 && err != nil {
			return 0, nil, err
		}
		if len(seg.last) > 0 {
			s := slices.Max(slices.Collect(maps.Keys(seg.last)))
			return s, seg.last[s], nil
		}
	}
	return 0, nil, fmt.Errorf("no checkpoint archived: %w", store.ErrNotFound)
}

func (a *FileCheckpointArchive) Range(ctx context.Context, from, to uint64, fn func(size uint64, signed []byte) error) error {
	if from >= to {
		return nil
	}
	groups, err := a.groups()
	if err != nil {
		return err
	}
	var damage []error
	for _, g := range groups {
		if g < from/segmentSpan || g > (to-1)/segmentSpan {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		seg, err := a.readSegment(g)
		if seg == nil {
			return err
		}
		if err != nil {
			damage = append(damage, err)
		}
		sizes := slices.Sorted(maps.Keys(seg.last))
		for _, s := range sizes {
			if s < from || s >= to {
				continue
			}
			if err := fn(s, seg.last[s]); err != nil {
				return err
			}
		}
	}
	return errors.Join(damage...)
}

// groups returns the segments of the archive, in increasing order; names
// that are not a segment's (temporary files, anything put there by hand)
// are ignored.
func (a *FileCheckpointArchive) groups() ([]uint64, error) {
	es, err := os.ReadDir(a.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("couldn't list the checkpoint archive: %w", err)
	}
	var out []uint64
	for _, e := range es {
		if !e.Type().IsRegular() {
			continue
		}
		if n, ok := parseUint([]byte(e.Name())); ok && n <= ^uint64(0)/segmentSpan {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}
