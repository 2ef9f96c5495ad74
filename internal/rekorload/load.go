package rekorload

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memtrail/memtrail/internal/tlogfmt"
)

// EntriesPath is the write endpoint under a server's URL.
const EntriesPath = "/api/v2/log/entries"

// RequestTimeout bounds one submission, from sending it to reading the
// whole answer.
const RequestTimeout = 2 * time.Minute

// keyDetails names the signing algorithm of the submitted entries in
// Rekor's PublicKeyDetails enum: ECDSA on P-256 over a SHA-256 digest.
const keyDetails = "PKIX_ECDSA_P256_SHA_256"

// Result summarises one [Load] run.
type Result struct {
	// Entries is the number of submissions answered 201 with an inclusion
	// proof that verified against the answer's checkpoint.
	Entries int
	// Duration runs from the first submission to the last answer.
	Duration time.Duration
	// PerSecond is Entries / Duration.
	PerSecond float64
	// P50, P90 and P99 are latency percentiles of the successful
	// submissions, each measured from sending the request to having read
	// the whole answer.
	P50, P90, P99 time.Duration
	// Max is the slowest successful submission.
	Max time.Duration
	// Errors counts submissions that failed in transport, were refused, or
	// whose answer lacked or failed its proof.
	Errors int
	// FirstError describes the first failure, if any.
	FirstError string
}

func (r Result) String() string {
	s := fmt.Sprintf("%d entries in %s: %.0f entries/s, p50 %s, p90 %s, p99 %s, max %s, %d errors",
		r.Entries, r.Duration.Round(time.Millisecond), r.PerSecond,
		r.P50.Round(time.Millisecond), r.P90.Round(time.Millisecond), r.P99.Round(time.Millisecond),
		r.Max.Round(time.Millisecond), r.Errors)
	if r.FirstError != "" {
		s += " (first: " + r.FirstError + ")"
	}
	return s
}

// Load submits total unique hashedrekord entries to the Rekor server at url
// from clients concurrent clients. Each client sends one entry at a time
// and waits for its full answer before sending the next, so clients is the
// number of requests in flight. Every answer must be a 201 whose
// TransparencyLogEntry carries the entry (matching the submitted digest),
// an inclusion proof, and a checkpoint that names the proof's tree size and
// root; the proof is verified from the entry's leaf hash to that root.
// Anything else counts as an error in the result.
//
// The requests (a fresh artifact digest each, signed with one of the
// clients' ECDSA P-256 keys) are built before the clock starts, so signing
// does not compete with the server for CPU during the measurement.
//
// Load returns an error only if it cannot run, or if ctx ends first; the
// result then covers what was answered until then.
func Load(ctx context.Context, url string, clients, total int) (Result, error) {
	if clients <= 0 || total <= 0 {
		return Result{}, fmt.Errorf("rekorload: load: clients (%d) and total (%d) must be positive", clients, total)
	}
	clients = min(clients, total)
	endpoint := strings.TrimRight(url, "/") + EntriesPath

	subs, err := prepare(clients, total)
	if err != nil {
		return Result{}, err
	}

	transport := &http.Transport{
		MaxIdleConns:        clients,
		MaxIdleConnsPerHost: clients,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: RequestTimeout}

	var (
		next      atomic.Int64
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, total)
		errs      int
		firstErr  string
		lastDone  time.Time
		wg        sync.WaitGroup
	)
	start := time.Now()
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= total {
					return
				}
				lat, err := submit(ctx, client, endpoint, &subs[i])
				done := time.Now()
				mu.Lock()
				if err != nil {
					if ctx.Err() == nil {
						errs++
						if firstErr == "" {
							firstErr = fmt.Sprintf("entry %d: %v", i, err)
						}
					}
				} else {
					latencies = append(latencies, lat)
				}
				if done.After(lastDone) {
					lastDone = done
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()

	res := Result{Entries: len(latencies), Errors: errs, FirstError: firstErr}
	if !lastDone.IsZero() {
		res.Duration = lastDone.Sub(start)
	}
	if res.Duration > 0 {
		res.PerSecond = float64(res.Entries) / res.Duration.Seconds()
	}
	slices.Sort(latencies)
	res.P50 = percentile(latencies, 50)
	res.P90 = percentile(latencies, 90)
	res.P99 = percentile(latencies, 99)
	if n := len(latencies); n > 0 {
		res.Max = latencies[n-1]
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("rekorload: load interrupted: %w", err)
	}
	return res, nil
}

// percentile is the nearest-rank p-th percentile of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := (p*n + 99) / 100 // ceil(p/100 · n)
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

// A submission is one prepared request and what its answer must match.
type submission struct {
	body   []byte
	digest []byte
}

// The request in the protobuf JSON mapping of rekor.v2.CreateEntryRequest.
type createEntryRequest struct {
	HashedRekordRequestV002 hashedRekordRequest `json:"hashedRekordRequestV002"`
}

type hashedRekordRequest struct {
	Digest    []byte         `json:"digest"`
	Signature entrySignature `json:"signature"`
}

type entrySignature struct {
	Content  []byte        `json:"content"`
	Verifier entryVerifier `json:"verifier"`
}

type entryVerifier struct {
	PublicKey  entryPublicKey `json:"publicKey"`
	KeyDetails string         `json:"keyDetails"`
}

type entryPublicKey struct {
	RawBytes []byte `json:"rawBytes"`
}

// prepare builds total requests: one ECDSA P-256 key per client, and for
// entry i the SHA-256 digest of an artifact name unique to this run and i,
// signed (ASN.1 DER) by key i mod clients.
func prepare(clients, total int) ([]submission, error) {
	type signer struct {
		key *ecdsa.PrivateKey
		der []byte
	}
	signers := make([]signer, clients)
	for i := range signers {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("rekorload: generating client key: %w", err)
		}
		der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
		if err != nil {
			return nil, fmt.Errorf("rekorload: encoding client key: %w", err)
		}
		signers[i] = signer{k, der}
	}
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("rekorload: run nonce: %w", err)
	}
	run := hex.EncodeToString(nonce[:])

	subs := make([]submission, total)
	for i := range subs {
		s := signers[i%clients]
		artifact := "memtrail rekorload artifact " + run + " " + strconv.Itoa(i)
		d := sha256.Sum256([]byte(artifact))
		sig, err := ecdsa.SignASN1(rand.Reader, s.key, d[:])
		if err != nil {
			return nil, fmt.Errorf("rekorload: signing entry %d: %w", i, err)
		}
		body, err := json.Marshal(createEntryRequest{hashedRekordRequest{
			Digest: d[:],
			Signature: entrySignature{
				Content: sig,
				Verifier: entryVerifier{
					PublicKey:  entryPublicKey{RawBytes: s.der},
					KeyDetails: keyDetails,
				},
			},
		}})
		if err != nil {
			return nil, fmt.Errorf("rekorload: encoding entry %d: %w", i, err)
		}
		subs[i] = submission{body: body, digest: d[:]}
	}
	return subs, nil
}

// submit sends one prepared request and checks its answer. The latency
// covers sending the request and reading the whole answer, not checking it.
func submit(ctx context.Context, client *http.Client, endpoint string, s *submission) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(s.body))
	if err != nil {
		return 0, fmt.Errorf("building request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("post: %w", err)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	lat := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("reading answer: %w", err)
	}
	if resp.StatusCode != http.StatusCreated {
		return 0, fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(tail(string(body), 200)))
	}
	if err := CheckEntry(body, s.digest); err != nil {
		return 0, err
	}
	return lat, nil
}

// The answer: rekor.v1.TransparencyLogEntry in the protobuf JSON mapping,
// where 64-bit integers are strings and bytes are standard base64.
type transparencyLogEntry struct {
	LogIndex          json.Number     `json:"logIndex"`
	KindVersion       *kindVersion    `json:"kindVersion"`
	InclusionProof    *inclusionProof `json:"inclusionProof"`
	CanonicalizedBody []byte          `json:"canonicalizedBody"`
}

type kindVersion struct {
	Kind    string `json:"kind"`
	Version string `json:"version"`
}

type inclusionProof struct {
	LogIndex   json.Number `json:"logIndex"`
	RootHash   []byte      `json:"rootHash"`
	TreeSize   json.Number `json:"treeSize"`
	Hashes     [][]byte    `json:"hashes"`
	Checkpoint *struct {
		Envelope string `json:"envelope"`
	} `json:"checkpoint"`
}

// The canonicalized body: rekor.v2.Entry holding a hashedrekord v0.0.2.
type canonicalEntry struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Spec       struct {
		HashedRekordV002 *struct {
			Data struct {
				Algorithm string `json:"algorithm"`
				Digest    []byte `json:"digest"`
			} `json:"data"`
		} `json:"hashedRekordV002"`
	} `json:"spec"`
}

// CheckEntry checks a CreateEntry answer for an entry with the given
// artifact digest: it must hold the hashedrekord v0.0.2 entry for that
// digest as its canonicalized body, an RFC 6962 inclusion proof of that
// body's leaf hash at its log index, and a signed-note checkpoint whose tree
// size and root hash are the proof's, with the proof leading from the leaf
// to that root. The checkpoint's signature is not verified.
func CheckEntry(answer, digest []byte) error {
	var tle transparencyLogEntry
	if err := json.Unmarshal(answer, &tle); err != nil {
		return fmt.Errorf("decoding answer: %w", err)
	}
	if tle.KindVersion == nil || tle.KindVersion.Kind != "hashedrekord" || tle.KindVersion.Version != "0.0.2" {
		return errors.New("answer is not a hashedrekord 0.0.2 entry")
	}
	var entry canonicalEntry
	if err := json.Unmarshal(tle.CanonicalizedBody, &entry); err != nil {
		return fmt.Errorf("decoding canonicalized body: %w", err)
	}
	hr := entry.Spec.HashedRekordV002
	if entry.Kind != "hashedrekord" || entry.APIVersion != "0.0.2" || hr == nil {
		return errors.New("canonicalized body is not a hashedrekord 0.0.2 entry")
	}
	if !bytes.Equal(hr.Data.Digest, digest) || hr.Data.Algorithm != "SHA2_256" {
		return errors.New("canonicalized body is not the submitted entry")
	}
	p := tle.InclusionProof
	if p == nil {
		return errors.New("answer has no inclusion proof")
	}
	index, err := strconv.ParseUint(tle.LogIndex.String(), 10, 64)
	if err != nil {
		return fmt.Errorf("log index: %w", err)
	}
	if p.LogIndex.String() != tle.LogIndex.String() {
		return fmt.Errorf("proof is for index %s, entry has %s", p.LogIndex, tle.LogIndex)
	}
	size, err := strconv.ParseUint(p.TreeSize.String(), 10, 64)
	if err != nil {
		return fmt.Errorf("proof tree size: %w", err)
	}
	if len(p.RootHash) != sha256.Size {
		return fmt.Errorf("proof root hash has %d bytes", len(p.RootHash))
	}
	if p.Checkpoint == nil || p.Checkpoint.Envelope == "" {
		return errors.New("answer has no checkpoint")
	}
	cpSize, cpRoot, err := ParseCheckpoint(p.Checkpoint.Envelope)
	if err != nil {
		return err
	}
	if cpSize != size || !bytes.Equal(cpRoot, p.RootHash) {
		return fmt.Errorf("checkpoint (size %d) does not match the proof (size %d)", cpSize, size)
	}
	root, err := RootFromInclusionProof(index, size, LeafHash(tle.CanonicalizedBody), p.Hashes)
	if err != nil {
		return err
	}
	if !bytes.Equal(root, p.RootHash) {
		return fmt.Errorf("inclusion proof of index %d in size %d does not lead to the root", index, size)
	}
	return nil
}

// ParseCheckpoint reads a C2SP signed-note checkpoint: the origin line, the
// decimal tree size, the base64 root hash, optional extension lines, a blank
// line and at least one signature line ("— name base64"). It returns the
// size and root hash; the signatures are not verified.
func ParseCheckpoint(envelope string) (size uint64, root []byte, err error) {
	text, sigs, ok := strings.Cut(envelope, "\n\n")
	if !ok {
		return 0, nil, errors.New("checkpoint has no signature block")
	}
	c, ok := tlogfmt.ParseCheckpoint(text + "\n")
	if !ok {
		return 0, nil, errors.New("malformed checkpoint text")
	}
	if !strings.HasPrefix(sigs, "\u2014 ") {
		return 0, nil, errors.New("checkpoint is not signed")
	}
	return c.Size, c.Hash[:], nil
}

// LeafHash is the RFC 6962 hash of a log entry: SHA-256(0x00 || entry).
func LeafHash(entry []byte) []byte {
	h := tlogfmt.LeafHash(entry)
	return h[:]
}

func nodeHash(left, right []byte) []byte {
	h := sha256.New()
	h.Write([]byte{1})
	h.Write(left)
	h.Write(right)
	return h.Sum(nil)
}

// RootFromInclusionProof computes the root of a tree of the given size from
// the leaf hash at index and its RFC 6962 (RFC 9162 §2.1.3) inclusion proof,
// after checking the proof has exactly the length that index and size call
// for.
func RootFromInclusionProof(index, size uint64, leaf []byte, proof [][]byte) ([]byte, error) {
	if index >= size {
		return nil, fmt.Errorf("index %d is outside a tree of size %d", index, size)
	}
	// The path splits where index and the last index first differ: below
	// that level the siblings alternate sides by the bits of index; above
	// it every sibling is a complete subtree to the left.
	inner := bits.Len64(index ^ (size - 1))
	border := bits.OnesCount64(index >> uint(inner))
	if len(proof) != inner+border {
		return nil, fmt.Errorf("inclusion proof for index %d in size %d has %d hashes, want %d", index, size, len(proof), inner+border)
	}
	for _, h := range proof {
		if len(h) != sha256.Size {
			return nil, fmt.Errorf("inclusion proof hash has %d bytes", len(h))
		}
	}
	h := leaf
	for i := 0; i < inner; i++ {
		if index>>uint(i)&1 == 0 {
			h = nodeHash(h, proof[i])
		} else {
			h = nodeHash(proof[i], h)
		}
	}
	for _, sib := range proof[inner:] {
		h = nodeHash(sib, h)
	}
	return h, nil
}
