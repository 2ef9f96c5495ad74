package posixstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/memtrail/memtrail/log/store"
)

// TestFileCheckpointArchiveLayout: what a crash or an operator can leave
// in the archive directory does not confuse it.
func TestFileCheckpointArchiveLayout(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, err := NewFileCheckpointArchive(dir)
	if err != nil {
		t.Fatal(err)
	}
	cp := func(size uint64, sig string) []byte {
		return fmt.Appendf(nil, "archive.test/log\n%d\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n\n\u2014 archive.test/log %s\n", size, sig)
	}
	for _, s := range []uint64{3, 1500, 1501} {
		if err := a.Put(ctx, s, cp(s, "A")); err != nil {
			t.Fatal(err)
		}
	}
	want := fmt.Sprintf("1500 %d\n%s\n1501 %d\n%s\n", len(cp(1500, "A")), cp(1500, "A"), len(cp(1501, "A")), cp(1501, "A"))
	if b, err := os.ReadFile(filepath.Join(dir, "1")); err != nil || string(b) != want {
		t.Errorf("segment 1 = %q, %v; want %q", b, err, want)
	}
	// An empty segment (a crash before its first record was whole), stray
	// files and directories, and a name with a leading zero.
	os.WriteFile(filepath.Join(dir, "9"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "README"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "07"), fmt.Appendf(nil, "7000 1\nx\n"), 0o644)
	os.Mkdir(filepath.Join(dir, "12"), 0o755)
	if s, _, err := a.Latest(ctx); err != nil || s != 1501 {
		t.Errorf("Latest = %d, %v; want 1501", s, err)
	}

	// A record cut short by a crash is not read, and the next Put
	// replaces it.
	seg := filepath.Join(dir, "1")
	whole, _ := os.ReadFile(seg)
	torn := fmt.Appendf(append([]byte(nil), whole...), "1502 %d\n%s", len(cp(1502, "A")), cp(1502, "A")[:20])
	os.WriteFile(seg, torn, 0o644)
	if s, _, err := a.Latest(ctx); err != nil || s != 1501 {
		t.Errorf("Latest with a torn record = %d, %v; want 1501", s, err)
	}
	if _, err := a.Get(ctx, 1502); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of a torn record = %v, want ErrNotFound", err)
	}
	if err := a.Put(ctx, 1502, cp(1502, "B")); err != nil {
		t.Fatalf("Put after a torn record = %v", err)
	}
	b := uncachedArchive(dir)
	if got, err := b.Get(ctx, 1502); err != nil || !bytes.Equal(got, cp(1502, "B")) {
		t.Errorf("Get after the torn record was replaced = %q, %v", got, err)
	}
	if got, err := b.Get(ctx, 1500); err != nil || !bytes.Equal(got, cp(1500, "A")) {
		t.Errorf("Get(1500) after the torn record was replaced = %q, %v", got, err)
	}

	// Something else than records: what is before is read, Put refuses.
	damaged := append(append([]byte(nil), whole...), "garbage that is no record\n"...)
	os.WriteFile(seg, damaged, 0o644)
	if got, err := a.Get(ctx, 1500); err != nil || !bytes.Equal(got, cp(1500, "A")) {
		t.Errorf("Get before the damage = %q, %v", got, err)
	}
	if _, err := a.Get(ctx, 1502); !errors.Is(err, errSegmentDamaged) {
		t.Errorf("Get after the damage = %v, want errSegmentDamaged", err)
	}
	if err := a.Put(ctx, 1503, cp(1503, "A")); !errors.Is(err, errSegmentDamaged) {
		t.Errorf("Put into a damaged segment = %v, want errSegmentDamaged", err)
	}
	if got, _ := os.ReadFile(seg); !bytes.Equal(got, damaged) {
		t.Errorf("Put changed a damaged segment")
	}
}

// uncachedArchive is an archive over dir, with nothing cached.
func uncachedArchive(dir string) *FileCheckpointArchive { return &FileCheckpointArchive{dir: dir} }

// FuzzParseSegment: parseSegment never panics, returns records that are
// in the input in order, and formatting them again gives back the bytes
// it says are complete.
func FuzzParseSegment(f *testing.F) {
	note := "o\n5\nR=\n\n\u2014 o sig\n"
	f.Add(fmt.Appendf(nil, "5 %d\n%s\n", len(note), note), uint64(0))
	f.Add(fmt.Appendf(nil, "5 %d\n%s\n1005 3\nabc\n", len(note), note), uint64(0))
	f.Add([]byte("12 4\nab"), uint64(0))
	f.Add([]byte("1234567 2\nab\n"), uint64(1234))
	f.Add([]byte("01 1\na\n"), uint64(0))
	f.Fuzz(func(t *testing.T, b []byte, group uint64) {
		sizes, notes, end, err := parseSegment(b, group)
		if end < 0 || end > len(b) || len(sizes) != len(notes) {
			t.Fatalf("end %d of %d bytes, %d sizes, %d notes", end, len(b), len(sizes), len(notes))
		}
		var again []byte
		for i, s := range sizes {
			if s/segmentSpan != group || len(notes[i]) == 0 || len(notes[i]) > maxArchivedCheckpoint {
				t.Fatalf("record %d: size %d in group %d, %d bytes", i, s, group, len(notes[i]))
			}
			again = fmt.Appendf(again, "%d %d\n%s\n", s, len(notes[i]), notes[i])
		}
		if !bytes.Equal(again, b[:end]) {
			t.Fatalf("records formatted again = %q, want %q", again, b[:end])
		}
		if err == nil && end < len(b) && len(b)-end > maxRecordHeader+maxArchivedCheckpoint+1 {
			t.Fatalf("%d bytes after the records taken as a record cut short", len(b)-end)
		}
		if err != nil && !errors.Is(err, errSegmentDamaged) {
			t.Fatalf("error %v does not wrap errSegmentDamaged", err)
		}
	})
}
