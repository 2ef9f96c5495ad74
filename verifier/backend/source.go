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

	"github.com/memtrail/memtrail/internal/atomicfile"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
	"github.com/transparency-dev/tessera/client"
)

// Dir reads a log from its data directory, as "memtrail serve" writes it:
// the tlog-tiles resources under DIR/log (Tessera's POSIX layout) and the
// manifests under DIR/manifests/<first two hex digits>/<64 hex digits>.json.
// Consistency proofs are built from the directory's own hash tiles.
type Dir struct {
	dir   string
	tiles client.FileFetcher
}

var _ verifier.LogSource = (*Dir)(nil)

// NewDir returns the source for the data directory dir, which must hold a
// log/checkpoint.
func NewDir(dir string) (*Dir, error) {
	tiles := filepath.Join(dir, "log")
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
	if !receipts.IsDigest(root) {
		return nil, fmt.Errorf("manifest root %q: %w", root, fs.ErrNotExist)
	}
	h := root[len("sha256:"):]
	b, err := os.ReadFile(filepath.Join(d.dir, "manifests", h[:2], h+".json"))
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
// /v1/consistency?from=&to=.
type HTTP struct {
	base   *url.URL
	client *http.Client
	tiles  *client.HTTPFetcher
}

var _ verifier.LogSource = (*HTTP)(nil)

// maxAnswer caps an answer that is not a tile or a bundle.
const maxAnswer = receipts.MaxManifestSize + 1<<20

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
	f, err := client.NewHTTPFetcher(u, c)
	if err != nil {
		return nil, err
	}
	return &HTTP{base: u, client: c, tiles: f}, nil
}

func (h *HTTP) ReadCheckpoint(ctx context.Context) ([]byte, error) {
	return h.tiles.ReadCheckpoint(ctx)
}

func (h *HTTP) ReadTile(ctx context.Context, level, index uint64, p uint8) ([]byte, error) {
	return h.tiles.ReadTile(ctx, level, index, p)
}

func (h *HTTP) ReadEntryBundle(ctx context.Context, index uint64, p uint8) ([]byte, error) {
	return h.tiles.ReadEntryBundle(ctx, index, p)
}

// get fetches path under the log's URL; a 404 wraps fs.ErrNotExist.
func (h *HTTP) get(ctx context.Context, path string) ([]byte, error) {
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
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("GET %s: %s: %w", u, refusalText(body), fs.ErrNotExist)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET %s: %s: %s", u, resp.Status, refusalText(body))
	case len(body) > maxAnswer:
		return nil, fmt.Errorf("GET %s: answer larger than %d bytes", u, maxAnswer)
	}
	return body, nil
}

// refusal is the JSON body of a memtrail log's 4xx and 5xx answers.
type refusal struct {
	Code       string  `json:"code"`
	Detail     string  `json:"detail"`
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

// WriteFileAtomic replaces path with data; see atomicfile.Write.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return atomicfile.Write(path, data, perm)
}
