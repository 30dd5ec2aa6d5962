package cli

// --metrics-addr: the mount's counters (those of .ctl/stats) as Prometheus
// metrics, with the official client library.

import (
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"

	"github.com/orgfs/orgfs/fs/ctl"
)

// statsCollector turns the mount's counters into metrics at each scrape.
type statsCollector struct {
	stats func() *ctl.Stats
	descs map[string]*prometheus.Desc
}

// metricDefs are the metrics: name → help and labels.
var metricDefs = map[string]struct {
	help   string
	labels []string
}{
	"orgfs_online":                    {"1 while the service can be reached, 0 while the mount is offline", nil},
	"orgfs_pins":                      {"pins: files and folders kept on this desk (orgfs pin)", nil},
	"orgfs_pinned_bytes":              {"bytes the pins cover", nil},
	"orgfs_pinned_missing_bytes":      {"bytes the pins cover that are not in the cache yet", nil},
	"orgfs_pinned_files_failed":       {"files of the pins that could not be fetched in the last pass", nil},
	"orgfs_requests_total":            {"API and object-store requests sent, retries included, by operation", []string{"op"}},
	"orgfs_request_retries_total":     {"attempts after the first, by operation", []string{"op"}},
	"orgfs_request_failures_total":    {"calls that failed after their retries, by operation", []string{"op"}},
	"orgfs_errors_total":              {"failed calls by the service's client_code (or transport, canceled)", []string{"code"}},
	"orgfs_uploaded_bytes_total":      {"bytes accepted by the object store", nil},
	"orgfs_downloaded_bytes_total":    {"object bytes read", nil},
	"orgfs_cache_bytes":               {"bytes in the content cache", nil},
	"orgfs_cache_max_bytes":           {"the content cache's budget (--cache-max-size)", nil},
	"orgfs_cache_files":               {"files with content in the cache", nil},
	"orgfs_cache_evictions_total":     {"cache entries evicted for the budget", nil},
	"orgfs_listing_hit_ratio":         {"share of listings answered from the listing cache", nil},
	"orgfs_listings_ahead_total":      {"folder listings fetched by the listing read-ahead (--dir-read-ahead)", nil},
	"orgfs_listings_ahead_read_total": {"listings of the read-ahead that a reader then asked for", nil},
	"orgfs_range_requests_total":      {"ranged GETs started", nil},
	"orgfs_read_ahead_requests_total": {"ranged GETs started by read-ahead", nil},
	"orgfs_fetched_bytes_total":       {"bytes fetched into the cache", nil},
	"orgfs_uncached_read_bytes_total": {"bytes read past a cache that could not hold them", nil},
	"orgfs_kernel_requests_total":     {"what the kernel asked the daemon for files (lookup, getattr, open, read, write); what it answered itself is not counted", []string{"op"}},
	"orgfs_passthrough_opens_total":   {"opens served in FUSE passthrough: their reads and writes go to the local file without the daemon", nil},
	"orgfs_bundle_jobs_total":         {"bundle (ZIP) jobs started for folders of small files", nil},
	"orgfs_bundle_jobs_failed_total":  {"bundle jobs that failed", nil},
	"orgfs_bundle_files_total":        {"files put in the cache from bundles", nil},
	"orgfs_uploads_pending":           {"files written and not uploaded yet (open, waiting, queued, retrying)", nil},
	"orgfs_uploads_in_flight":         {"uploads running", nil},
	"orgfs_uploads_failed":            {"uploads failed for good, kept staged", nil},
	"orgfs_uploads_total":             {"files uploaded since the start", nil},
	"orgfs_uploads_bytes_total":       {"bytes of the files uploaded since the start", nil},
	"orgfs_conflicts_total":           {"files uploaded as conflict copies beside another writer's version since the start", nil},
	"orgfs_staged_bytes":              {"local bytes of every staged file", nil},
}

// boolMetric is 1 for true, 0 for false.
func boolMetric(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func newStatsCollector(stats func() *ctl.Stats) *statsCollector {
	c := &statsCollector{stats: stats, descs: map[string]*prometheus.Desc{}}
	for name, d := range metricDefs {
		c.descs[name] = prometheus.NewDesc(name, d.help, d.labels, nil)
	}
	return c
}

func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	counter := func(name string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.CounterValue, v, labels...)
	}
	gauge := func(name string, v float64) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.GaugeValue, v)
	}
	for op, o := range s.Requests {
		counter("orgfs_requests_total", float64(o.Requests), op)
		counter("orgfs_request_retries_total", float64(o.Retries), op)
		counter("orgfs_request_failures_total", float64(o.Failures), op)
	}
	for code, n := range s.Errors {
		counter("orgfs_errors_total", float64(n), code)
	}
	counter("orgfs_uploaded_bytes_total", float64(s.BytesUp))
	counter("orgfs_downloaded_bytes_total", float64(s.BytesDown))
	gauge("orgfs_online", boolMetric(s.Service.Online))
	gauge("orgfs_pins", float64(s.Pins.Pins))
	gauge("orgfs_pinned_bytes", float64(s.Pins.Bytes))
	gauge("orgfs_pinned_missing_bytes", float64(s.Pins.Bytes-s.Pins.BytesDone))
	gauge("orgfs_pinned_files_failed", float64(s.Pins.Failed))
	gauge("orgfs_cache_bytes", float64(s.Cache.Bytes))
	gauge("orgfs_cache_max_bytes", float64(s.Cache.MaxBytes))
	gauge("orgfs_cache_files", float64(s.Cache.Files))
	counter("orgfs_cache_evictions_total", float64(s.Cache.Evictions))
	gauge("orgfs_listing_hit_ratio", s.Cache.HitRate)
	counter("orgfs_listings_ahead_total", float64(s.Cache.ListingsAhead))
	counter("orgfs_listings_ahead_read_total", float64(s.Cache.ListingsAheadRead))
	counter("orgfs_range_requests_total", float64(s.Reads.RangeRequests))
	counter("orgfs_read_ahead_requests_total", float64(s.Reads.ReadAhead))
	counter("orgfs_fetched_bytes_total", float64(s.Reads.BytesFetched))
	counter("orgfs_uncached_read_bytes_total", float64(s.Reads.BytesDirect))
	counter("orgfs_kernel_requests_total", float64(s.Kernel.Lookups), "lookup")
	counter("orgfs_kernel_requests_total", float64(s.Kernel.Getattrs), "getattr")
	counter("orgfs_kernel_requests_total", float64(s.Kernel.Opens), "open")
	counter("orgfs_kernel_requests_total", float64(s.Kernel.Reads), "read")
	counter("orgfs_kernel_requests_total", float64(s.Kernel.Writes), "write")
	counter("orgfs_passthrough_opens_total", float64(s.Passthrough.Opens))
	counter("orgfs_bundle_jobs_total", float64(s.Bundles.Jobs))
	counter("orgfs_bundle_jobs_failed_total", float64(s.Bundles.Failed))
	counter("orgfs_bundle_files_total", float64(s.Bundles.Files))
	gauge("orgfs_uploads_pending", float64(s.Uploads.Pending))
	gauge("orgfs_uploads_in_flight", float64(s.Uploads.InFlight))
	gauge("orgfs_uploads_failed", float64(s.Uploads.Failed))
	counter("orgfs_uploads_total", float64(s.Uploads.Uploaded))
	counter("orgfs_uploads_bytes_total", float64(s.Uploads.Bytes))
	counter("orgfs_conflicts_total", float64(s.Uploads.Conflicts))
	gauge("orgfs_staged_bytes", float64(s.Uploads.StagedBytes))
}

// serveMetrics serves /metrics on addr until the returned stop is called.
func serveMetrics(addr string, tree *ctl.Tree, log logrus.FieldLogger) (stop func(), err error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newStatsCollector(tree.Stats), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.WithError(err).Warn("metrics: serving ended")
		}
	}()
	log.WithField("url", "http://"+ln.Addr().String()+"/metrics").Info("metrics served")
	return func() { srv.Close() }, nil
}
