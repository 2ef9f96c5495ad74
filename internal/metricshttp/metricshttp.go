// Package metricshttp serves the /metrics endpoint of the log and of the
// witness with github.com/prometheus/client_golang: a server's own
// collectors, and the metrics of the process they run in.
//
// The process's metrics are the Go runtime's (go_*), the process's
// (process_*), memtrail_build_info{version,revision,goversion} (always 1),
// and those the libraries memtrail runs report through OpenTelemetry —
// Tessera's appender and storage metrics (tessera_*, named as
// conventionalNames says). For the last, the
// first [Handler] sets the global OpenTelemetry MeterProvider of the process
// to one whose reader is the OpenTelemetry Prometheus exporter, registered
// in the process's registry. Tessera creates its instruments when its
// package is initialised and they report to the first MeterProvider the
// process sets, so nothing else in the process may set one.
package metricshttp

import (
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Handler returns an http.Handler that serves the metrics of cs, of the
// process and memtrail_build_info with the given version, in the format the
// scraper asks for (the Prometheus text format by default). An empty
// version is the main module's version from the build information, or
// "(devel)".
//
// It panics if two collectors describe the same metric, as registering
// them does.
func Handler(version string, cs ...prometheus.Collector) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newBuildInfo(version))
	reg.MustRegister(cs...)
	return promhttp.HandlerFor(prometheus.Gatherers{process(), reg}, promhttp.HandlerOpts{})
}

var (
	processOnce     sync.Once
	processRegistry *prometheus.Registry
)

// process returns the registry of the process's metrics, made on first use.
func process() *prometheus.Registry {
	processOnce.Do(func() {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		// The exporter's own target_info and scope labels would describe
		// OpenTelemetry's resource model rather than memtrail: left out.
		exporter, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutTargetInfo(), otelprom.WithoutScopeInfo())
		if err != nil {
			// New fails only when registering in reg fails, which a new
			// registry never does.
			panic("metricshttp: couldn't bridge OpenTelemetry metrics: " + err.Error())
		}
		otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter), sdkmetric.WithView(conventionalNames)))
		processRegistry = reg
	})
	return processRegistry
}

// conventionalNames keeps the names of the OpenTelemetry instruments within
// the Prometheus conventions that promtool checks. A duration recorded in
// milliseconds (as Tessera's are) would be named …_milliseconds, but
// Prometheus names units in seconds, and the values are not scaled: the
// unit goes from the name to the help text instead. A counter named
// ….counter (Tessera's tessera.appender.checkpoint.publication.counter)
// loses the word, which the _total suffix says already.
func conventionalNames(i sdkmetric.Instrument) (sdkmetric.Stream, bool) {
	s := sdkmetric.Stream{Name: i.Name, Description: i.Description, Unit: i.Unit}
	changed := false
	if i.Unit == "ms" {
		s.Unit, s.Description, changed = "", i.Description+" (milliseconds)", true
	}
	if name, ok := strings.CutSuffix(i.Name, ".counter"); ok && i.Kind == sdkmetric.InstrumentKindCounter {
		s.Name, changed = name, true
	}
	return s, changed
}

// newBuildInfo returns the collector of memtrail_build_info.
func newBuildInfo(version string) prometheus.Collector {
	revision := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if version == "" && bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				revision = s.Value
			}
		}
	}
	if version == "" {
		version = "(devel)"
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "memtrail_build_info",
		Help:        "Always 1; its labels name the version and VCS revision of the running memtrail and the Go release that built it.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": runtime.Version()},
	})
	g.Set(1)
	return g
}
