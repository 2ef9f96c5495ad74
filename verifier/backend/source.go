// Package backend is the verifier's I/O: where a log audit reads a log
// (a log's data directory, or its URL), where single use of projection ids
// is recorded (a registry file, or a memtrail log), and how state files
// are written. Package verifier itself does no I/O; it takes these through
// its [verifier.LogSource] and [verifier.Registry] seams.
package backend

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/memtrail/memtrail/internal/datadir"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
	"github.com/transparency-dev/tessera/api/layout"
	"github.com/transparency-dev/tessera/client"
)

// Dir reads a log from its data directory, as "memtrail serve" writes it
// (internal/datadir): the tlog-tiles resources under DIR/log (Tessera's
// POSIX layout) and the manifests under DIR/manifests.
// Consistency proofs are built from the directory's own hash tiles.
type Dir struct {
	dir   string
	tiles client.FileFetcher
}

var _ verifier.LogSource = (*Dir)(nil)

// NewDir returns the source for the data directory dir, which must hold a
// log/checkpoint.
func NewDir(dir string) (*Dir, error) {
	tiles := filepath.Join(dir, datadir.Tiles)
	if _, err := os.Stat(filepath.Join(tiles, "checkpoint")); err != nil {
		return nil, fmt.Errorf("%s is not a memtrail data directory (no log/checkpoint): %w", dir, err)
	}
	return &Dir{dir: dir, tiles: client.FileFetcher{Root: tiles}}, nil
}

func (d *Dir) ReadCheckpoint(ctx context.Context) ([]byte, error) { return d.tiles.ReadCheckpoint(ctx) }

func (d *Dir) ReadTile(ctx context.Context, level, index uint64, p uint8) ([]byte, error) {
	return d.tiles.ReadTile(ctx, level, index, p)
}

func (d *Dir) ReadEntryBundle(ctx context.Context, index uint64, p uint8) ([]byte, error) {
	return d.tiles.ReadEntryBundle(ctx, index, p)
}

// ReadManifest reads the manifest stored under root.
func (d *Dir) ReadManifest(ctx context.Context, root string) ([]byte, error) {
	p, ok := datadir.ManifestPath(filepath.Join(d.dir, datadir.Manifests), root)
	if !ok {
		return nil, fmt.Errorf("manifest root %q: %w", root, fs.ErrNotExist)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("couldn't read manifest %s: %w", root, err)
	}
	return b, nil
}

// ConsistencyProof builds the proof from the directory's hash tiles.
func (d *Dir) ConsistencyProof(ctx context.Context, from, to uint64) ([][]byte, error) {
	pb, err := client.NewProofBuilder(ctx, to, d.tiles.ReadTile)
	if err != nil {
		return nil, fmt.Errorf("couldn't read the hash tiles at size %d: %w", to, err)
	}
	p, err := pb.ConsistencyProof(ctx, from, to)
	if err != nil {
		return nil, fmt.Errorf("couldn't build a consistency proof from %d to %d: %w", from, to, err)
	}
	return p, nil
}

// HTTP reads a log from its URL: the tlog-tiles read API (GET /checkpoint,
// /tile/…, /tile/entries/…), GET /v1/manifests/{root} and GET
// /v1/consistency?from=&to=. Every answer is read up to a cap, the most
// the resource can hold; a longer answer is an error, so a hostile log
// cannot make the verifier buffer whatever it sends.
type HTTP struct {
	base   *url.URL
	client *http.Client
}

var _ verifier.LogSource = (*HTTP)(nil)

const (
	// maxAnswer caps an answer that is not a checkpoint, a tile or a
	// bundle.
	maxAnswer = receipts.MaxManifestSize + 1<<20
	// maxTile caps a hash tile: 256 hashes of 32 bytes.
	maxTile = layout.TileWidth * 32
	// maxEntryBundle caps an entry bundle: 256 entries, each a 2-byte
	// length and at most 65,535 bytes.
	maxEntryBundle = layout.EntryBundleWidth * (2 + 65535)
)

// NewHTTP returns the source for the log at rawURL. A nil client means one
// with a one-minute timeout per request.
func NewHTTP(rawURL string, c *http.Client) (*HTTP, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("log URL %q is not an http(s) URL", rawURL)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	if c == nil {
		c = &http.Client{Timeout: time.Minute}
	}
	return &HTTP{base: u, client: c}, nil
}

// ReadCheckpoint fetches GET /checkpoint, at most MaxCheckpointSize bytes.
func (h *HTTP) ReadCheckpoint(ctx context.Context) ([]byte, error) {
	return h.fetch(ctx, layout.CheckpointPath, "checkpoint", verifier.MaxCheckpointSize)
}

// ReadTile fetches a hash tile, at most 256×32 bytes. A partial tile the
// log no longer has is read as the full tile that replaced it.
func (h *HTTP) ReadTile(ctx context.Context, level, index uint64, p uint8) ([]byte, error) {
	return partialOrFull(p, func(p uint8) ([]byte, error) {
		return h.fetch(ctx, layout.TilePath(level, index, p), fmt.Sprintf("tile %d/%d", level, index), maxTile)
	})
}

// ReadEntryBundle fetches an entry bundle, at most 256×(2+65,535) bytes. A
// partial bundle the log no longer has is read as the full bundle that
// replaced it.
func (h *HTTP) ReadEntryBundle(ctx context.Context, index uint64, p uint8) ([]byte, error) {
	return partialOrFull(p, func(p uint8) ([]byte, error) {
		return h.fetch(ctx, layout.EntriesPath(index, p), fmt.Sprintf("entry bundle %d", index), maxEntryBundle)
	})
}

// partialOrFull reads the partial resource of width p, or the full one
// when the log has no partial one any more (the tree grew past it), as
// tessera's fetchers do.
func partialOrFull(p uint8, read func(uint8) ([]byte, error)) ([]byte, error) {
	b, err := read(p)
	if p > 0 && errors.Is(err, fs.ErrNotExist) {
		return read(0)
	}
	return b, err
}

// get fetches path under the log's URL, at most maxAnswer bytes; a 404
// wraps fs.ErrNotExist.
func (h *HTTP) get(ctx context.Context, path string) ([]byte, error) {
	return h.fetch(ctx, path, "answer", maxAnswer)
}

// fetch fetches path under the log's URL, the resource what, reading at
// most limit bytes of the (decoded) body: a longer answer is an error
// naming the resource and the cap. A 404 wraps fs.ErrNotExist.
func (h *HTTP) fetch(ctx context.Context, path, what string, limit int64) ([]byte, error) {
	u, err := h.base.Parse(path)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("couldn't reach the log: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("GET %s: %s: %w", u, refusalText(body), fs.ErrNotExist)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET %s: %s: %s", u, resp.Status, refusalText(body))
	case int64(len(body)) > limit:
		return nil, fmt.Errorf("GET %s: the log's %s is larger than %d bytes, the most it can hold", u, what, limit)
	}
	return body, nil
}

// refusal is the JSON body of a memtrail log's 4xx and 5xx answers.
type refusal struct {
	Code       string  `json:"code"`
	Detail     string  `json:"detail"`
	Member     string  `json:"member"`
	FirstIndex *uint64 `json:"first_index"`
}

func refusalText(body []byte) string {
	var r refusal
	if json.Unmarshal(body, &r) == nil && r.Code != "" {
		return r.Code + ": " + r.Detail
	}
	if len(body) > 200 {
		body = body[:200]
	}
	return strconv.Quote(string(body))
}

// ReadManifest fetches GET /v1/manifests/{root}.
func (h *HTTP) ReadManifest(ctx context.Context, root string) ([]byte, error) {
	return h.get(ctx, "v1/manifests/"+url.PathEscape(root))
}

// ConsistencyProof fetches GET /v1/consistency?from=&to=.
func (h *HTTP) ConsistencyProof(ctx context.Context, from, to uint64) ([][]byte, error) {
	body, err := h.get(ctx, "v1/consistency?from="+strconv.FormatUint(from, 10)+"&to="+strconv.FormatUint(to, 10))
	if err != nil {
		return nil, err
	}
	return ParseConsistencyAnswer(body, from, to)
}

// ParseConsistencyAnswer reads a consistency proof written either as the
// JSON answer of GET /v1/consistency ({"from": A, "to": B, "proof":
// ["<base64>", …]}, whose sizes must be from and to) or as text, one
// standard base64 hash per line.
func ParseConsistencyAnswer(b []byte, from, to uint64) ([][]byte, error) {
	if t := strings.TrimSpace(string(b)); strings.HasPrefix(t, "{") {
		var a struct {
			From  *uint64  `json:"from"`
			To    *uint64  `json:"to"`
			Proof []string `json:"proof"`
		}
		dec := json.NewDecoder(strings.NewReader(t))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil || a.From == nil || a.To == nil || a.Proof == nil {
			return nil, fmt.Errorf("consistency proof: not a {\"from\", \"to\", \"proof\"} answer: %w", verifier.ErrMalformed)
		}
		if *a.From != from || *a.To != to {
			return nil, fmt.Errorf("consistency proof is from %d to %d, not %d to %d: %w", *a.From, *a.To, from, to, verifier.ErrMalformed)
		}
		return decodeHashes(a.Proof)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return decodeHashes(lines)
}

func decodeHashes(in []string) ([][]byte, error) {
	out := make([][]byte, 0, len(in))
	for i, s := range in {
		h, err := base64.StdEncoding.Strict().DecodeString(s)
		if err != nil || len(h) != 32 {
			return nil, fmt.Errorf("consistency proof hash %d is not a base64 SHA-256 hash: %w", i, verifier.ErrMalformed)
		}
		out = append(out, h)
	}
	return out, nil
}
