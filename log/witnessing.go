package log

import (
	"net/http"
	"strconv"

	"github.com/transparency-dev/tessera"
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

// witnessTransport is the HTTP transport of Tessera's witness requests. It
// counts them in the metrics by witness key name and HTTP status.
type witnessTransport struct {
	base    http.RoundTripper
	names   map[string]string // add-checkpoint URL → witness key name
	metrics *Metrics
}

func newWitnessClient(wg *tessera.WitnessGroup, m *Metrics) *http.Client {
	names := make(map[string]string)
	for u, v := range wg.Endpoints() {
		names[u] = v.Name()
	}
	return &http.Client{Transport: &witnessTransport{base: http.DefaultTransport, names: names, metrics: m}}
}

func (t *witnessTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	name, ok := t.names[req.URL.String()]
	if !ok {
		name = "other" // not an endpoint of the policy; keeps the label set bounded
	}
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	t.metrics.witnessRequest(name, code)
	return resp, err
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
		return
	}
	l.Metrics.witnessed.Store(0)
	if isNew {
		l.Metrics.withoutQuorum.Add(1)
		l.logger.Warn("published a checkpoint without the witness quorum; clients requiring the policy refuse its proofs",
			"size", size, "fail_open", l.cfg.WitnessFailOpen)
	}
}
