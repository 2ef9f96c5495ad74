package metricshttp

import (
	"context"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/memtrail/memtrail/internal/promtest"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
)

func TestHandler(t *testing.T) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "memtrail_test_total", Help: "A test counter."}, []string{"origin"})
	c.WithLabelValues(`a "quoted" \ origin`).Add(2)
	h := Handler("", c)

	// Instruments made through the global MeterProvider, as Tessera's are,
	// show up named by the Prometheus conventions.
	meter := otel.Meter("github.com/memtrail/memtrail/internal/metricshttp")
	hist, _ := meter.Int64Histogram("memtrail.test.duration", metric.WithUnit("ms"), metric.WithDescription("Test durations"))
	hist.Record(context.Background(), 12)
	cnt, _ := meter.Int64Counter("memtrail.test.publication.counter", metric.WithUnit("{call}"), metric.WithDescription("Test publications"))
	cnt.Add(context.Background(), 3)

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`memtrail_test_total{origin="a \"quoted\" \\ origin"} 2`,
		`memtrail_build_info{goversion="` + runtime.Version() + `",revision="`,
		"# HELP memtrail_test_duration Test durations (milliseconds)\n# TYPE memtrail_test_duration histogram\n",
		"memtrail_test_duration_sum 12\n",
		"memtrail_test_publication_total 3\n",
		"# TYPE go_goroutines gauge",
		"# TYPE process_cpu_seconds_total counter",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", body)
	}
	promtest.Check(t, rec.Body.Bytes())

	// A second handler shares the process's metrics and has its own.
	rec = httptest.NewRecorder()
	Handler("v9.9.9").ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if b := rec.Body.String(); !strings.Contains(b, `version="v9.9.9"} 1`) || strings.Contains(b, "memtrail_test_total") || !strings.Contains(b, "memtrail_test_publication_total 3") {
		t.Errorf("second handler:\n%s", b)
	}
}
