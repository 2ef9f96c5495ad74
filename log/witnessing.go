package log

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/transparency-dev/tessera"
	"golang.org/x/mod/sumdb/note"
)

// Witnessing is done by Tessera: before it publishes a checkpoint, its
// publisher posts the signed checkpoint to every witness of the policy
// (c2sp.org/tlog-witness add-checkpoint) and appends the cosignatures that
// come back, until the quorum is met. Without a quorum by
// Config.WitnessTimeout the checkpoint is not published, and the log keeps
// serving the previous one (with its cosignatures) until a later attempt
// succeeds; with Config.WitnessFailOpen it is published with whatever
// cosignatures arrived.
//
// Tessera reports neither outcome to us, so the log observes both from the
// outside: witnessTransport counts every request to a witness and its answer,
// and checkpointPublished judges each newly published checkpoint against the
// policy's quorum, counting those published without it.
//
// Tessera asks the witnesses again every checkpoint interval while they
// fail; the log says so once, not every time: witnessTransport logs one
// line when a witness stops answering and one when it answers again
// (memtrail_witness_up follows it), and checkpointPublished one when a
// checkpoint is first published without the quorum and one when the quorum
// is back.

// witnessTransport is the HTTP transport of Tessera's witness requests. It
// counts them in the metrics by witness key name and HTTP status, and it
// holds every answer to the rules auditors apply (verifier.OpenCheckpoint),
// which are stricter than Tessera's: an answer is read up to
// maxWitnessAnswer bytes, and a 200 answer must be nothing but signature
// lines of that witness, each a valid cosignature/v1 over the exact
// checkpoint text sent, with a timestamp below 2^63. Any other answer is
// turned into an error, so Tessera counts that witness as failed instead of
// appending a line that would make every proof fail for auditors.
type witnessTransport struct {
	base      http.RoundTripper
	verifiers map[string]note.Verifier // add-checkpoint URL → witness key
	metrics   *Metrics
	logger    *slog.Logger

	mu    sync.Mutex
	state map[string]*witnessState // by witness key name
}

// witnessState is what the log last saw of one witness.
type witnessState struct {
	up    bool
	since time.Time // when it went down or came up
}

// maxWitnessAnswer caps a witness's answer: a few signature lines, or a
// decimal size.
const maxWitnessAnswer = 64 << 10

func newWitnessClient(wg *tessera.WitnessGroup, m *Metrics, logger *slog.Logger) *http.Client {
	return &http.Client{
		Transport: &witnessTransport{base: http.DefaultTransport, verifiers: wg.Endpoints(), metrics: m, logger: logger, state: map[string]*witnessState{}},
		// A witness's redirect is its answer (a failure), not a request
		// for the log to post elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func (t *witnessTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	v, ok := t.verifiers[req.URL.String()]
	name := "other" // not an endpoint of the policy; keeps the label set bounded
	if ok {
		name = v.Name()
	}
	var sent []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		sent = b
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		t.metrics.witnessRequest(name, "error")
		if ok {
			t.observe(name, req, false, "no answer: "+err.Error())
		}
		return nil, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxWitnessAnswer+1))
	resp.Body.Close()
	if err == nil && len(body) > maxWitnessAnswer {
		err = fmt.Errorf("witness %s answered more than %d bytes", name, maxWitnessAnswer)
	}
	if err == nil && resp.StatusCode == http.StatusOK {
		if !ok {
			err = fmt.Errorf("answer from %s, which is not an endpoint of the policy", req.URL.Redacted())
		} else {
			err = checkCosignatures(v, sent, body)
		}
	}
	if err != nil {
		t.metrics.witnessRequest(name, "invalid")
		if ok {
			t.observe(name, req, false, "invalid answer: "+err.Error())
		}
		return nil, err
	}
	t.metrics.witnessRequest(name, strconv.Itoa(resp.StatusCode))
	if ok {
		// 409 names the size the witness holds, and Tessera asks again
		// from it: the witness is answering as the protocol says.
		up := resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusConflict
		t.observe(name, req, up, "answered "+resp.Status)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}

// observe records the outcome of a request to witness name and logs a
// change: one line when it stops answering as the protocol says (why is
// the error, or its status), one when it does again.
func (t *witnessTransport) observe(name string, req *http.Request, up bool, why string) {
	t.mu.Lock()
	was, known := t.state[name]
	if known && was.up == up {
		t.mu.Unlock()
		return
	}
	now := time.Now()
	t.state[name] = &witnessState{up: up, since: now}
	t.metrics.witnessUp(name, up)
	t.mu.Unlock()
	switch {
	case !up:
		t.logger.Warn("witness is not cosigning; checkpoints need its cosignature for the quorum (logged again only once it is back)",
			"witness", name, "url", req.URL.Redacted(), "reason", why)
	case known:
		t.logger.Info("witness is cosigning again", "witness", name, "url", req.URL.Redacted(), "down_for", now.Sub(was.since).Round(time.Millisecond))
	}
}

// checkCosignatures checks a witness's 200 answer to an add-checkpoint
// request: one or more signature lines of witness v, each a cosignature
// over the checkpoint text of the request, timestamped below 2^63.
func checkCosignatures(v note.Verifier, request, answer []byte) error {
	// The request is "old N", the proof lines, a blank line, and the signed
	// checkpoint: its text, a blank line and its signatures.
	_, signed, ok := bytes.Cut(request, []byte("\n\n"))
	if !ok {
		return errors.New("add-checkpoint request without a checkpoint")
	}
	i := bytes.Index(signed, []byte("\n\n"))
	if i < 0 {
		return errors.New("add-checkpoint request with an unsigned checkpoint")
	}
	text := signed[:i+1]
	if len(answer) == 0 || answer[len(answer)-1] != '\n' {
		return fmt.Errorf("witness %s answered no signature line", v.Name())
	}
	for _, line := range bytes.Split(answer[:len(answer)-1], []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("\u2014 "))
		if !ok {
			return fmt.Errorf("witness %s answered a line that is not a signature line: %.80q", v.Name(), line)
		}
		keyName, b64, ok := bytes.Cut(rest, []byte(" "))
		sig, err := base64.StdEncoding.DecodeString(string(b64))
		switch {
		case !ok || err != nil || len(sig) < 4:
			return fmt.Errorf("witness %s answered a malformed signature line", v.Name())
		case string(keyName) != v.Name() || binary.BigEndian.Uint32(sig) != v.KeyHash():
			return fmt.Errorf("witness %s answered a signature of another key (%.80s)", v.Name(), keyName)
		case len(sig) != 4+8+ed25519.SignatureSize:
			return fmt.Errorf("witness %s answered a signature that is not a cosignature/v1", v.Name())
		case binary.BigEndian.Uint64(sig[4:12]) >= 1<<63:
			return fmt.Errorf("witness %s answered a cosignature with an out-of-range timestamp", v.Name())
		case !v.Verify(text, sig[4:]):
			return fmt.Errorf("witness %s answered a cosignature that does not verify over the checkpoint sent", v.Name())
		}
	}
	return nil
}

// checkpointPublished judges the published checkpoint raw, under a witness
// policy, against the policy's quorum. isNew says that the log has just
// published it (it is not the checkpoint found at start): only then is it
// counted. One without the quorum can only come from WitnessFailOpen (or a
// policy whose quorum is "none"): it is counted and logged, so that the
// operator and monitors know that clients requiring the quorum refuse its
// proofs.
func (l *Log) checkpointPublished(raw []byte, size uint64, isNew bool) {
	if isNew {
		l.Metrics.published.Add(1)
	}
	if l.cfg.Witnesses == nil {
		return
	}
	if l.cfg.Witnesses.Satisfied(raw) {
		l.Metrics.witnessed.Store(1)
		if isNew && l.Metrics.quorumLost.Swap(false) {
			l.logger.Info("published a checkpoint with the witness quorum again", "size", size)
		}
		return
	}
	l.Metrics.witnessed.Store(0)
	if isNew {
		l.Metrics.withoutQuorum.Add(1)
		if !l.Metrics.quorumLost.Swap(true) {
			l.logger.Warn("published a checkpoint without the witness quorum; clients requiring the policy refuse its proofs (logged again only once the quorum is back; memtrail_checkpoints_published_without_quorum_total counts them)",
				"size", size, "fail_open", l.cfg.WitnessFailOpen)
		}
	}
}

// republishInterval is how long Tessera lets the published checkpoint of a
// tree that has not grown stand before it signs (and has witnessed) the
// same tree again: Tessera's default, or the checkpoint interval if that is
// longer (the POSIX driver requires it).
func republishInterval(checkpointInterval time.Duration) time.Duration {
	return max(tessera.DefaultCheckpointRepublishInterval, checkpointInterval)
}

// rewitnessAtStart reports whether the first publication pass must publish
// a witnessed checkpoint (store.DriverOptions.Republish), given the
// checkpoint published, raw, as read before the start (err is the read's
// error): it must when that checkpoint lacks the quorum of
// Config.Witnesses, because the log was unwitnessed before, its witness
// policy changed, or it published the last one under WitnessFailOpen.
// Tessera publishes again only when the tree grows, or when the published
// checkpoint is older than the republish interval. An idle log then
// publishes a checkpoint of the same size, signed again and cosigned under
// the policy, at its first checkpoint interval (a tlog-checkpoint may be
// signed, and cosigned, any number of times), and its proofs verify under
// the policy it publishes straight away, instead of after its next entry.
// Without the quorum (the witnesses are down and the log fails closed)
// nothing is published and the driver tries again at every interval, as it
// does for a grown tree.
func (l *Log) rewitnessAtStart(raw []byte, err error) bool {
	if err != nil {
		// A new log: its first checkpoint is witnessed as it is
		// published. (An unreadable one is the driver's to report.)
		return false
	}
	if l.cfg.Witnesses.Satisfied(raw) {
		return false
	}
	size := "unknown"
	if lines := bytes.SplitN(raw, []byte("\n"), 3); len(lines) == 3 {
		size = string(lines[1])
	}
	l.logger.Info("the published checkpoint lacks the witness quorum; the same tree is signed again and sent to the witnesses at the first checkpoint interval", "size", size)
	return true
}

// MeetsQuorum reports whether the signed checkpoint cp carries the
// cosignatures the log's witness policy requires; it is true for every
// checkpoint of a log without one. A checkpoint published under
// Config.WitnessFailOpen may not: clients that require the policy refuse
// the proofs made against it.
func (l *Log) MeetsQuorum(cp []byte) bool {
	return l.cfg.Witnesses == nil || l.cfg.Witnesses.Satisfied(cp)
}
