package sqliteindex

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func testHash(i uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], i)
	h := sha256.Sum256(b[:])
	return h[:16]
}

func TestIDTable(t *testing.T) {
	defer func(old uint64) { idTableInitial = old }(idTableInitial)
	idTableInitial = 64
	path := filepath.Join(t.TempDir(), "ids")
	tbl, err := openIDTable(path)
	if err != nil {
		t.Fatal(err)
	}
	// Several growths.
	const n = 1000
	for start := uint64(0); start < n; start += 100 {
		var rows []idRow
		for i := start; i < start+100; i++ {
			rows = append(rows, idRow{hash: testHash(i), idx: i})
		}
		if err := tbl.insert(rows, start+100); err != nil {
			t.Fatal(err)
		}
	}
	if tbl.capacity < n*100/idTableMaxLoadPc || tbl.count != n || tbl.watermark != n {
		t.Errorf("capacity %d count %d watermark %d", tbl.capacity, tbl.count, tbl.watermark)
	}
	for i := uint64(0); i < n; i++ {
		if idx, ok, err := tbl.lookup(testHash(i)); err != nil || !ok || idx != i {
			t.Fatalf("lookup(%d) = %d %v %v", i, idx, ok, err)
		}
	}
	if _, ok, _ := tbl.lookup(testHash(n + 1)); ok {
		t.Errorf("absent id found")
	}
	// Re-inserting at the same index is a no-op; at another index the run
	// is refused and nothing of it is written.
	if err := tbl.insert([]idRow{{hash: testHash(5), idx: 5}}, n); err != nil {
		t.Errorf("idempotent insert: %v", err)
	}
	err = tbl.insert([]idRow{{hash: testHash(n + 7), idx: n}, {hash: testHash(3), idx: n + 1}}, n+2)
	if err == nil {
		t.Fatal("an id at a second index was accepted")
	}
	if _, ok, _ := tbl.lookup(testHash(n + 7)); ok || tbl.watermark != n {
		t.Errorf("a refused run left traces")
	}
	err = tbl.insert([]idRow{{hash: testHash(n + 8), idx: n}, {hash: testHash(n + 8), idx: n + 1}}, n+2)
	if err == nil {
		t.Error("one id twice in a run was accepted")
	}
	var seen uint64
	if got, err := tbl.each(func([]byte) { seen++ }); err != nil || got != n || seen != n {
		t.Errorf("each = %d, %v (%d calls)", got, err, seen)
	}
	tbl.close()
	// Persistent across reopening.
	tbl, err = openIDTable(path)
	if err != nil {
		t.Fatal(err)
	}
	if idx, ok, _ := tbl.lookup(testHash(999)); !ok || idx != 999 || tbl.getWatermark() != n {
		t.Errorf("after reopening: %d %v watermark %d", idx, ok, tbl.getWatermark())
	}
	if err := tbl.reset(); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := tbl.lookup(testHash(1)); ok || tbl.getWatermark() != 0 {
		t.Errorf("reset kept entries")
	}
	tbl.close()
	// A damaged header or size is detected.
	b, _ := os.ReadFile(path)
	b[20] ^= 1
	os.WriteFile(path, b, 0o644)
	if _, err := openIDTable(path); !errors.Is(err, errIDTableCorrupt) {
		t.Errorf("damaged header: %v", err)
	}
	b[20] ^= 1
	os.WriteFile(path, b[:len(b)-1], 0o644)
	if _, err := openIDTable(path); !errors.Is(err, errIDTableCorrupt) {
		t.Errorf("truncated table: %v", err)
	}
}
