package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	for _, content := range []string{"first", "second, longer"} {
		if err := Write(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != content {
			t.Fatalf("read %q, %v; want %q", b, err, content)
		}
		if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
			t.Errorf("mode %v", fi.Mode())
		}
	}
	// Nothing but the file is left in the directory.
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("directory holds %d entries", len(es))
	}
	// A missing directory is an error, and creates nothing.
	if err := Write(filepath.Join(dir, "no", "f"), []byte("x"), 0o600); err == nil {
		t.Error("Write into a missing directory succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "no")); !os.IsNotExist(err) {
		t.Errorf("Write created the missing directory: %v", err)
	}
}

func TestWriteIfChanged(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	for i, c := range []struct {
		data  string
		wrote bool
	}{{"a", true}, {"a", false}, {"b", true}} {
		wrote, err := WriteIfChanged(p, []byte(c.data), 0o644)
		if err != nil || wrote != c.wrote {
			t.Errorf("write %d (%q): wrote %v, %v; want %v", i, c.data, wrote, err, c.wrote)
		}
		if b, _ := os.ReadFile(p); string(b) != c.data {
			t.Errorf("write %d: file holds %q", i, b)
		}
	}
}
