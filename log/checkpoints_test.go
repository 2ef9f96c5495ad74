package log

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/datadir"
	"github.com/memtrail/memtrail/log/posixstore"
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
	held := archiveContents(t, testArchive(t, tl.dir))
	if len(held) < 3 {
		t.Fatalf("archived sizes %v; want at least 3", held)
	}
	return tl, held
}

// testArchive returns the embedded checkpoint archive of the data
// directory dir.
func testArchive(t *testing.T, dir string) *posixstore.FileCheckpointArchive {
	t.Helper()
	a, err := posixstore.NewFileCheckpointArchive(filepath.Join(dir, datadir.Checkpoints))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// archiveContents returns every checkpoint the archive holds, by size.
func archiveContents(t *testing.T, a CheckpointArchive) map[uint64][]byte {
	t.Helper()
	held := map[uint64][]byte{}
	err := a.Range(context.Background(), 0, math.MaxUint64, func(size uint64, signed []byte) error {
		held[size] = signed
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return held
}

// The embedded archive's segments: DIR/checkpoints/<k> holds the
// checkpoints of sizes 1000k to 1000k+999 (see posixstore).
const segmentSpan = 1000

func segmentPath(dir string, group uint64) string {
	return filepath.Join(dir, datadir.Checkpoints, fmt.Sprint(group))
}

// writeSegment replaces the segment of group in the data directory dir with
// records of the checkpoints of held in that group, as an attacker or a
// restore could.
func writeSegment(t *testing.T, dir string, group uint64, held map[uint64][]byte) {
	t.Helper()
	var b []byte
	for s, cp := range held {
		if s/segmentSpan == group {
			b = fmt.Appendf(b, "%d %d\n%s\n", s, len(cp), cp)
		}
	}
	if err := os.WriteFile(segmentPath(dir, group), b, 0o644); err != nil {
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
	if err := os.RemoveAll(filepath.Join(tl.dir, datadir.Checkpoints)); err != nil {
		t.Fatal(err)
	}

	tl2 := openTestLog(t, tl.dir, tl.skey, tl.s)
	checkArchive(t, tl2.Log, held)
	if err := tl2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	db, err = sql.Open("sqlite", "file:"+filepath.Join(tl.dir, "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM sqlite_master WHERE name = 'checkpoints'").Scan(&n); err != nil || n != 0 {
		t.Errorf("the checkpoints table is still in the index (%d, %v)", n, err)
	}
	db.Close()
	a := testArchive(t, tl.dir)
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
	a := testArchive(t, tl.dir)
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
	seg := segmentPath(tl.dir, victim/segmentSpan)
	writeSegment(t, tl.dir, victim/segmentSpan, with(forged))
	before, _ := os.ReadFile(seg)
	r := fsck(t, tl, true)
	if kinds(r)["checkpoint_archive_invalid"] != 1 || r.OK() {
		t.Errorf("fsck of an archived checkpoint of another tree: %+v", r.Problems)
	}
	if b, _ := os.ReadFile(seg); !bytes.Equal(b, before) {
		t.Errorf("fsck --repair changed the archive")
	}
	// Not signed by the log: fsck reports it, and the log does not serve it.
	writeSegment(t, tl.dir, victim/segmentSpan, with(bytes.Replace(held[victim], []byte(tl.Origin()+" "), []byte("someone.else/log "), 1)))
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
	writeSegment(t, tl.dir, victim/segmentSpan, held)
	// Bytes that are not records: reported, and what comes before is read.
	if err := os.WriteFile(seg, append(append([]byte(nil), before...), "this is not a record\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := fsck(t, tl, false); kinds(r)["checkpoint_archive_invalid"] < 1 {
		t.Errorf("fsck of a damaged segment: %+v", r.Problems)
	}
	writeSegment(t, tl.dir, victim/segmentSpan, held)

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
	_, err = Open(ctx, Config{Storage: openStorage(t, tl.dir), SigningKey: tl.skey, Trust: tl.s.Trust(tl.now)})
	if !errors.Is(err, ErrArchiveAhead) {
		t.Errorf("Open with the archive ahead of the log = %v, want ErrArchiveAhead", err)
	}
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
