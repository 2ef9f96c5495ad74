package api

import (
	"compress/gzip"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"strconv"
	"strings"

	"github.com/memtrail/memtrail/log/store"
	"github.com/transparency-dev/tessera/api/layout"
)

// The tlog-tiles read API, served through the log's reader (Tessera's
// LogReader over its storage, whatever the driver). Paths are parsed and
// re-formatted before anything is read, so nothing outside the tile layout
// can be reached.

func (s *Server) serveCheckpoint(w http.ResponseWriter, r *http.Request) {
	b, err := s.log.Reader().ReadCheckpoint(r.Context())
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
	s.serveStatic(w, r, layout.TilePath(level, index, partial), partial, false, func(ctx context.Context) ([]byte, error) {
		return s.log.Reader().ReadTile(ctx, level, index, partial)
	})
}

func (s *Server) serveEntries(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.Path, "/tile/entries/")
	index, partial, err := layout.ParseTileIndexPartial(p)
	if err != nil || layout.EntriesPath(index, partial) != "tile/entries/"+p {
		writeJSON(w, http.StatusNotFound, Refusal{Code: codeNotFound, Detail: "not an entry bundle path: /tile/entries/" + p})
		return
	}
	s.serveStatic(w, r, layout.EntriesPath(index, partial), partial, true, func(ctx context.Context) ([]byte, error) {
		return s.log.Reader().ReadEntryBundle(ctx, index, partial)
	})
}

// serveStatic serves the tile or entry bundle at rel (entries says which),
// as read. A resource whose bytes cannot be what the log wrote (see
// store.ErrTileDamaged) is not served: clients would reject it anyway, and
// the operator needs to know. Asked for a partial resource, the reader may
// give the full one that replaced it: its first hashes or entries are the
// partial one's, which is what is served.
func (s *Server) serveStatic(w http.ResponseWriter, r *http.Request, rel string, partial uint8, entries bool, read func(context.Context) ([]byte, error)) {
	b, err := read(r.Context())
	if errors.Is(err, fs.ErrNotExist) {
		writeJSON(w, http.StatusNotFound, Refusal{Code: codeNotFound, Detail: "no such resource: /" + rel})
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if entries {
		b, err = store.TrimEntryBundle(b, partial)
	} else {
		b, err = store.TrimTile(b, partial)
	}
	if err != nil {
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
	if entries && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
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
