package log

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/metricshttp"
	"github.com/memtrail/memtrail/internal/promtest"
	"github.com/memtrail/memtrail/receipts"
	"github.com/transparency-dev/tessera"
)

// TestMetricsExposition serves every metric of the log, those of witnessing
// included, with label values that need escaping, and checks the text.
func TestMetricsExposition(t *testing.T) {
	m := newMetrics()
	m.witnessing = true
	m.observeSubmit(receipts.KindProjection, nil, 3*time.Millisecond)
	m.observeSubmit(receipts.KindProjection, nil, 2*time.Second)
	m.observeSubmit(receipts.KindProjection, &receipts.Error{Code: receipts.CodeProjectionReplay}, time.Millisecond)
	m.observeSubmit(receipts.KindTombstone, tessera.ErrPushback, time.Millisecond)
	m.observeSubmit(receipts.KindCompaction, errors.New("disk on fire"), time.Millisecond)
	m.Refused(receipts.KindProjection, receipts.CodeRecordInvalid)
	m.witnessRequest(`witness "one" \ two`, "200")
	m.witnessRequest("w2\nnewline", "error")
	m.checkpointSeen(7)
	m.published.Add(2)
	m.witnessed.Store(1)
	m.treeSize.Store(9)

	rec := httptest.NewRecorder()
	metricshttp.Handler("v0-test", m).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`memtrail_submissions_accepted_total{kind="projection"} 2`,
		`memtrail_submissions_accepted_total{kind="compaction"} 0`,
		`memtrail_submissions_refused_total{code="projection_replay",kind="projection"} 1`,
		`memtrail_submissions_refused_total{code="pushback",kind="tombstone"} 1`,
		`memtrail_submissions_refused_total{code="internal",kind="compaction"} 1`,
		`memtrail_submissions_refused_total{code="record_invalid",kind="projection"} 1`,
		`memtrail_ingest_seconds_bucket{le="0.005"} 1`,
		`memtrail_ingest_seconds_bucket{le="2.5"} 2`,
		`memtrail_ingest_seconds_count 2`,
		`memtrail_witness_requests_total{code="200",witness="witness \"one\" \\ two"} 1`,
		`memtrail_witness_requests_total{code="error",witness="w2\nnewline"} 1`,
		`memtrail_checkpoint_size 7`,
		`memtrail_checkpoint_witnessed 1`,
		`memtrail_checkpoints_published_total 2`,
		`memtrail_checkpoints_published_without_quorum_total 0`,
		`memtrail_tree_size 9`,
		`memtrail_storage_writable 1`,
		`memtrail_build_info{goversion=`,
		"# TYPE memtrail_checkpoint_age_seconds gauge",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", body)
	}
	promtest.Check(t, rec.Body.Bytes())
}
