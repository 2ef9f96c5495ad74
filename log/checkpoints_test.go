package log

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	fmtlog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
)

// archivedLog builds a closed log that published checkpoints at two sizes
// at least, and returns it with the sizes and checkpoints its archive holds.
func archivedLog(t *testing.T) (*testLog, map[uint64][]byte) {
	t.Helper()
	tl := newTestLog(t)
	ctx := context.Background()
	for round := 0; round < 3; round++ {
		var last *Accepted
		for i := 0; i < 5; i++ {
			last = tl.mustSubmit(tl.projection(fmt.Sprintf("urn:p:%d:%d", round, i)))
		}
		if _, err := tl.WaitPublished(ctx, last.Index); err != nil {
			t.Fatal(err)
		}
		waitArchived(t, tl.Log, last.Index+1)
	}
	if err := tl.Close(ctx); err != nil {
		t.Fatal(err)
	}
	held := archiveContents(t, &FileCheckpointArchive{dir: filepath.Join(tl.dir, checkpointsDir)})
	if len(held) < 3 {
		t.Fatalf("archived sizes %v; want at least 3", held)
	}
	return tl, held
}

// archiveContents returns every checkpoint the archive holds, by size.
func archiveContents(t *testing.T, a *FileCheckpointArchive) map[uint64][]byte {
	t.Helper()
	groups, err := a.groups()
	if err != nil {
		t.Fatal(err)
	}
	held := map[uint64][]byte{}
	for _, g := range groups {
		seg, err := a.readSegment(g)
		if err != nil {
			t.Fatal(err)
		}
		for s, b := range seg.last {
			held[s] = b
		}
	}
	return held
}

// writeSegment replaces the segment of group with records of the
// checkpoints of held in that group, as an attacker or a restore could.
func writeSegment(t *testing.T, a *FileCheckpointArchive, group uint64, held map[uint64][]byte) {
	t.Helper()
	var b []byte
	for s, cp := range held {
		if s/segmentSpan == group {
			b = fmt.Appendf(b, "%d %d\n%s\n", s, len(cp), cp)
		}
	}
	if err := os.WriteFile(a.segmentPath(group), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitArchived waits until the archive holds a checkpoint of at least size.
func waitArchived(t *testing.T, l *Log, size uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if s, _, err := l.checkpoints.Latest(context.Background()); err == nil && s >= size {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint of size %d archived", size)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkArchive checks that the reopened log serves every checkpoint of held.
func checkArchive(t *testing.T, l *Log, held map[uint64][]byte) {
	t.Helper()
	for s, want := range held {
		got, err := l.CheckpointAt(context.Background(), s)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("CheckpointAt(%d) = %q, %v; want the checkpoint archived before", s, got, err)
		}
	}
}

// TestCheckpointArchiveSurvivesIndexLoss: the index is derived and may be
// lost (deleted, or damaged and recreated by fsck --repair); the
// checkpoints the log published are not, and survive both.
func TestCheckpointArchiveSurvivesIndexLoss(t *testing.T) {
	tl, held := archivedLog(t)
	db := filepath.Join(tl.dir, "index.db")

	// Damaged, then repaired by fsck.
	if err := os.WriteFile(db, bytes.Repeat([]byte("garbage!"), 512), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(db + "-wal")
	os.Remove(db + "-shm")
	if r := fsck(t, tl, true); !r.OK() || kinds(r)["index_damaged"] != 1 {
		t.Fatalf("fsck --repair of a damaged index: %+v", r.Problems)
	}
	tl2 := openTestLog(t, tl.dir, tl.skey, tl.s)
	checkArchive(t, tl2.Log, held)
	if err := tl2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Deleted: the next start rebuilds the index.
	for _, suffix := range []string{"", "-wal", "-shm", "-ids"} {
		os.Remove(db + suffix)
	}
	tl3 := openTestLog(t, tl.dir, tl.skey, tl.s)
	defer tl3.Close(context.Background())
	checkArchive(t, tl3.Log, held)
}

// TestCheckpointArchiveMigration: a data directory of an earlier memtrail
// kept the archive in index.db's checkpoints table. Opening it moves them
// into the archive and drops the table, so that a later loss of the index
// loses none.
func TestCheckpointArchiveMigration(t *testing.T) {
	tl, held := archivedLog(t)
	// The layout of an earlier memtrail: the checkpoints in the index.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(tl.dir, "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE checkpoints (size INTEGER PRIMARY KEY, note BLOB NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	for s, b := range held {
		if _, err := db.Exec("INSERT INTO checkpoints (size, note) VALUES (?, ?)", int64(s), b); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	if err := os.RemoveAll(filepath.Join(tl.dir, checkpointsDir)); err != nil {
		t.Fatal(err)
	}

	tl2 := openTestLog(t, tl.dir, tl.skey, tl.s)
	checkArchive(t, tl2.Log, held)
	var n int
	if err := tl2.index.(*SQLiteIndex).db.QueryRow("SELECT count(*) FROM sqlite_master WHERE name = 'checkpoints'").Scan(&n); err != nil || n != 0 {
		t.Errorf("the checkpoints table is still in the index (%d, %v)", n, err)
	}
	if err := tl2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	a := &FileCheckpointArchive{dir: filepath.Join(tl.dir, checkpointsDir)}
	for s, want := range held {
		if got, err := a.Get(context.Background(), s); err != nil || !bytes.Equal(got, want) {
			t.Errorf("archived checkpoint of size %d = %q, %v", s, got, err)
		}
	}
	// And the index can now go.
	for _, suffix := range []string{"", "-wal", "-shm", "-ids"} {
		os.Remove(filepath.Join(tl.dir, "index.db"+suffix))
	}
	tl3 := openTestLog(t, tl.dir, tl.skey, tl.s)
	defer tl3.Close(context.Background())
	checkArchive(t, tl3.Log, held)
}

// TestCheckpointArchiveChecks: fsck checks the archive against the entries
// and never changes it; the log refuses to start on an archive ahead of
// its tiles (tiles restored from an older backup), and does not serve an
// archived checkpoint that is not signed by its key.
func TestCheckpointArchiveChecks(t *testing.T) {
	tl, held := archivedLog(t)
	ctx := context.Background()
	a := &FileCheckpointArchive{dir: filepath.Join(tl.dir, checkpointsDir)}
	if r := fsck(t, tl, false); !r.OK() || len(r.Problems) != 0 {
		t.Fatalf("fsck of a sound archive: %+v", r.Problems)
	}
	var sizes []uint64
	for s := range held {
		if s > 0 {
			sizes = append(sizes, s)
		}
	}
	// The victim is not the latest size: the log serves its latest
	// checkpoint from the tiles, not from the archive.
	slices.Sort(sizes)
	if len(sizes) < 2 {
		t.Fatalf("archived sizes %v: want at least two above 0", sizes)
	}
	victim := sizes[0]
	c, _, _, err := fmtlog.ParseCheckpoint(held[victim], tl.Origin(), tl.Verifier())
	if err != nil {
		t.Fatal(err)
	}

	// Another root under the log's signature: what a fork, or a backup of
	// another history, looks like.
	forged, err := signCheckpoint(tl.skey, victim, bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	with := func(cp []byte) map[uint64][]byte {
		m := map[uint64][]byte{}
		for s, b := range held {
			m[s] = b
		}
		m[victim] = cp
		return m
	}
	seg := a.segmentPath(victim / segmentSpan)
	writeSegment(t, a, victim/segmentSpan, with(forged))
	before, _ := os.ReadFile(seg)
	r := fsck(t, tl, true)
	if kinds(r)["checkpoint_archive_invalid"] != 1 || r.OK() {
		t.Errorf("fsck of an archived checkpoint of another tree: %+v", r.Problems)
	}
	if b, _ := os.ReadFile(seg); !bytes.Equal(b, before) {
		t.Errorf("fsck --repair changed the archive")
	}
	// Not signed by the log: fsck reports it, and the log does not serve it.
	writeSegment(t, a, victim/segmentSpan, with(bytes.Replace(held[victim], []byte(tl.Origin()+" "), []byte("someone.else/log "), 1)))
	if r := fsck(t, tl, false); kinds(r)["checkpoint_archive_invalid"] != 1 {
		t.Errorf("fsck of an archived checkpoint not signed by the log: %+v", r.Problems)
	}
	tl2 := openTestLog(t, tl.dir, tl.skey, tl.s)
	if _, err := tl2.CheckpointAt(ctx, victim); err == nil {
		t.Errorf("the log served an archived checkpoint that does not verify")
	}
	if err := tl2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	writeSegment(t, a, victim/segmentSpan, held)
	// Bytes that are not records: reported, and what comes before is read.
	if err := os.WriteFile(seg, append(append([]byte(nil), before...), "this is not a record\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := fsck(t, tl, false); kinds(r)["checkpoint_archive_invalid"] < 1 {
		t.Errorf("fsck of a damaged segment: %+v", r.Problems)
	}
	writeSegment(t, a, victim/segmentSpan, held)

	// Ahead of the tiles.
	ahead := c.Size + 5000
	cp, err := signCheckpoint(tl.skey, ahead, c.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Put(ctx, ahead, cp); err != nil {
		t.Fatal(err)
	}
	if r := fsck(t, tl, false); kinds(r)["checkpoint_archive_ahead"] != 1 || r.OK() {
		t.Errorf("fsck of an archive ahead of the log: %+v", r.Problems)
	}
	_, err = Open(ctx, Config{Dir: tl.dir, SigningKey: tl.skey, Trust: tl.s.Trust(tl.now)})
	if !errors.Is(err, ErrArchiveAhead) {
		t.Errorf("Open with the archive ahead of the log = %v, want ErrArchiveAhead", err)
	}
}

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
	if _, err := a.Get(ctx, 1502); !errors.Is(err, ErrNotFound) {
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

// signCheckpoint signs a checkpoint of size and root with the log key skey.
func signCheckpoint(skey string, size uint64, root []byte) ([]byte, error) {
	signer, err := note.NewSigner(skey)
	if err != nil {
		return nil, err
	}
	text := fmtlog.Checkpoint{Origin: signer.Name(), Size: size, Hash: root}.Marshal()
	return note.Sign(&note.Note{Text: string(text)}, signer)
}
