package log

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	a := &FileCheckpointArchive{dir: filepath.Join(tl.dir, checkpointsDir)}
	sizes, err := a.sizes()
	if err != nil || len(sizes) < 3 {
		t.Fatalf("archived sizes %v, %v; want at least 3", sizes, err)
	}
	held := map[uint64][]byte{}
	for _, s := range sizes {
		b, err := a.Get(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		held[s] = b
	}
	return tl, held
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
			t.Errorf("archive file of size %d = %q, %v", s, got, err)
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
	if err := os.WriteFile(a.path(victim), forged, 0o644); err != nil {
		t.Fatal(err)
	}
	r := fsck(t, tl, true)
	if kinds(r)["checkpoint_archive_invalid"] != 1 || r.OK() {
		t.Errorf("fsck of an archived checkpoint of another tree: %+v", r.Problems)
	}
	if b, _ := os.ReadFile(a.path(victim)); !bytes.Equal(b, forged) {
		t.Errorf("fsck --repair changed the archive")
	}
	// Not signed by the log: fsck reports it, and the log does not serve it.
	unsigned := bytes.Replace(held[victim], []byte(tl.Origin()+" "), []byte("someone.else/log "), 1)
	if err := os.WriteFile(a.path(victim), unsigned, 0o644); err != nil {
		t.Fatal(err)
	}
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
	os.WriteFile(a.path(victim), held[victim], 0o644)

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
	for _, s := range []uint64{3, 1500} {
		if err := a.Put(ctx, s, cp(s, "A")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "1", "1500")); err != nil {
		t.Errorf("size 1500 is not at 1/1500: %v", err)
	}
	// An empty group (a crash after its directory was made), stray files,
	// a temporary file and a file in the wrong group.
	os.Mkdir(filepath.Join(dir, "9"), 0o755)
	os.WriteFile(filepath.Join(dir, "README"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "1", ".1600.tmp-123"), cp(1600, "A"), 0o644)
	os.WriteFile(filepath.Join(dir, "1", "2999"), cp(2999, "A"), 0o644)
	os.WriteFile(filepath.Join(dir, "1", "01700"), cp(1700, "A"), 0o644)
	if s, _, err := a.Latest(ctx); err != nil || s != 1500 {
		t.Errorf("Latest = %d, %v; want 1500", s, err)
	}
	if sizes, err := a.sizes(); err != nil || len(sizes) != 2 {
		t.Errorf("sizes = %v, %v; want [3 1500]", sizes, err)
	}
	// A torn file (storage that ignored a sync) is replaced, not a conflict.
	if err := os.WriteFile(a.path(3), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := a.Put(ctx, 3, cp(3, "B")); err != nil {
		t.Errorf("Put over a torn file = %v", err)
	}
	// A second archive over the same directory sees what the first wrote.
	b, _ := NewFileCheckpointArchive(dir)
	if got, err := b.Get(ctx, 3); err != nil || !bytes.Equal(got, cp(3, "B")) {
		t.Errorf("Get from a reopened archive = %q, %v", got, err)
	}
	if _, err := b.Get(ctx, 4); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(4) = %v, want ErrNotFound", err)
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
