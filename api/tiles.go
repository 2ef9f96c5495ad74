package api

import (
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	mlog "github.com/memtrail/memtrail/log"
	"github.com/transparency-dev/tessera/api/layout"
)

// The tlog-tiles read API, served from the tiles directory. Paths are
// parsed and re-formatted before any file is opened, so nothing outside the
// tile layout (and nothing under .state/) can be reached.

func (s *Server) serveCheckpoint(w http.ResponseWriter, r *http.Request) {
	b, err := os.ReadFile(filepath.Join(s.log.TilesDir(), layout.CheckpointPath))
	if errors.Is(err, fs.ErrNotExist) {
		writeJSON(w, http.StatusNotFound, Refusal{Code: codeNotPublished, Detail: "no checkpoint has been published yet"})
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache, max-age=0")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}

// parseTilePath parses "<L>/<N>[.p/<W>]".
func parseTilePath(p string) (level, index uint64, partial uint8, ok bool) {
	slash := strings.IndexByte(p, '/')
	if slash < 0 {
		return 0, 0, 0, false
	}
	level, index, partial, err := layout.ParseTileLevelIndexPartial(p[:slash], p[slash+1:])
	if err != nil || level > 63 {
		return 0, 0, 0, false
	}
	// Only canonical spellings: re-format and compare.
	if layout.TilePath(level, index, partial) != "tile/"+p {
		return 0, 0, 0, false
	}
	return level, index, partial, true
}

func (s *Server) serveTile(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.Path, "/tile/")
	level, index, partial, ok := parseTilePath(p)
	if !ok {
		writeJSON(w, http.StatusNotFound, Refusal{Code: codeNotFound, Detail: "not a tile path: /tile/" + p})
		return
	}
	s.serveStatic(w, r, layout.TilePath(level, index, partial), partial, false)
}

// checkStatic refuses to serve a tile or bundle whose bytes cannot be what
// the log wrote (see mlog.ErrTileDamaged): clients would reject it anyway,
// and the operator needs to know.
func checkStatic(b []byte, partial uint8, entries bool) error {
	if entries {
		return mlog.CheckEntryBundle(b, partial)
	}
	want := layout.TileWidth
	if partial > 0 {
		want = int(partial)
	}
	if len(b) != want*sha256.Size {
		return fmt.Errorf("%w: a tile of width %d is %d bytes", mlog.ErrTileDamaged, want, len(b))
	}
	return nil
}

func (s *Server) serveEntries(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.Path, "/tile/entries/")
	index, partial, err := layout.ParseTileIndexPartial(p)
	if err != nil || layout.EntriesPath(index, partial) != "tile/entries/"+p {
		writeJSON(w, http.StatusNotFound, Refusal{Code: codeNotFound, Detail: "not an entry bundle path: /tile/entries/" + p})
		return
	}
	s.serveStatic(w, r, layout.EntriesPath(index, partial), partial, true)
}

func (s *Server) serveStatic(w http.ResponseWriter, r *http.Request, rel string, partial uint8, compress bool) {
	b, err := os.ReadFile(filepath.Join(s.log.TilesDir(), filepath.FromSlash(rel)))
	if errors.Is(err, fs.ErrNotExist) {
		writeJSON(w, http.StatusNotFound, Refusal{Code: codeNotFound, Detail: "no such resource: /" + rel})
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := checkStatic(b, partial, compress); err != nil {
		s.logger.Error("not serving a damaged tile: memtrail fsck --repair rewrites tiles from the entries", "path", rel, "error", err)
		writeJSON(w, http.StatusInternalServerError, Refusal{Code: codeTileDamaged, Detail: "the stored /" + rel + " is damaged, so it is not served; the operator must repair it (memtrail fsck)"})
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if partial == 0 {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		// A partial tile stays valid for its tree size but is replaced by
		// the full tile; keep it briefly.
		w.Header().Set("Cache-Control", "public, max-age=60")
	}
	if compress && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Vary", "Accept-Encoding")
		zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
		zw.Write(b)
		zw.Close()
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}
