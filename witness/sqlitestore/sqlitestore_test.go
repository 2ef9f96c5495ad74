package sqlitestore_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memtrail/memtrail/witness"
	"github.com/memtrail/memtrail/witness/sqlitestore"
)

func TestContract(t *testing.T) {
	path := filepath.Join(t.TempDir(), "witness.db")
	witness.TestStore(t, context.Background(), func() (witness.Store, error) {
		return sqlitestore.Open(path)
	})
}

func TestExclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "witness.db")
	s, err := sqlitestore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s2, err := sqlitestore.Open(path)
	if err == nil {
		s2.Close()
		t.Fatalf("second Open of an open database succeeded, want an error")
	}
	if !strings.Contains(err.Error(), "in use") {
		t.Errorf("second Open error = %v, want it to say the database is in use", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s3, err := sqlitestore.Open(path)
	if err != nil {
		t.Fatalf("Open after Close = %v", err)
	}
	s3.Close()
}

func TestBadPath(t *testing.T) {
	for _, p := range []string{"file:x.db", "x.db?mode=memory", filepath.Join(t.TempDir(), "missing", "dir", "x.db")} {
		if s, err := sqlitestore.Open(p); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded, want an error", p)
		}
	}
}
