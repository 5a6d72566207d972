package telemetry

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
)

// reference is client_golang's handler as the hub configured it before:
// its own registry with the Go and process collectors.
func reference() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, EnableOpenMetrics: true})
}

// shape is a scrape's runtime and process lines with the values taken
// off the samples (they change between two scrapes).
func shape(body string) string {
	value := regexp.MustCompile(` [^ ]+$`)
	var b strings.Builder
	for l := range strings.SplitSeq(body, "\n") {
		if !isRuntimeLine(l) {
			continue
		}
		if !strings.HasPrefix(l, "#") {
			l = value.ReplaceAllString(l, "")
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

func get(t *testing.T, h http.Handler, url string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	h.ServeHTTP(rec, req)
	return rec
}

// The Go runtime's and the process's metrics have the names, help, types,
// units and labels client_golang's collectors gave them.
func TestMetricsRuntimeAsClientGolang(t *testing.T) {
	ours, ref := goldenMetrics(t).Handler(), reference()
	for _, accept := range []string{"", acceptPrometheus} {
		got := shape(get(t, ours, "/metrics", map[string]string{"Accept": accept}).Body.String())
		want := shape(get(t, ref, "/metrics", map[string]string{"Accept": accept}).Body.String())
		if got != want {
			t.Errorf("Accept %q: runtime metrics differ:\n%s", accept, lineDiff(want, got))
		}
	}
}

// A scrape answers the format, Content-Type, Vary and Content-Encoding
// promhttp answered for the same headers (but protobuf, not offered: the
// next format in the scraper's list), and name[] picks families.
func TestMetricsNegotiationAsClientGolang(t *testing.T) {
	ours, ref := goldenMetrics(t).Handler(), reference()
	for _, accept := range []string{"", "*/*", "text/plain", "text/plain;version=0.0.4", "text/plain;version=1.0.0", "application/openmetrics-text",
		"application/openmetrics-text;version=1.0.0", "application/openmetrics-text; version=0.0.1; escaping=allow-utf-8", acceptPrometheus,
		"text/*;q=0.9, application/openmetrics-text;version=1.0.0;q=0.5", "application/json", "garbage/",
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,application/openmetrics-text;version=1.0.0;q=0.6,text/plain;version=0.0.4;q=0.3",
	} {
		for _, enc := range []string{"", "gzip", "gzip;q=0", "identity, gzip;q=0.5", "br", "*"} {
			hdr := map[string]string{"Accept": accept, "Accept-Encoding": enc}
			g, w := get(t, ours, "/metrics", hdr), get(t, ref, "/metrics", hdr)
			for _, k := range []string{"Content-Type", "Content-Encoding"} {
				if k == "Content-Type" && strings.HasPrefix(w.Header().Get(k), "application/vnd.google.protobuf") {
					// Not offered here: the next format the scraper takes.
					if ct := g.Header().Get(k); !strings.HasPrefix(ct, "application/openmetrics-text") && !strings.HasPrefix(ct, "text/plain") {
						t.Errorf("Accept %q: Content-Type %q", accept, ct)
					}
					continue
				}
				if g.Header().Get(k) != w.Header().Get(k) {
					t.Errorf("Accept %q, Accept-Encoding %q: %s %q, want %q", accept, enc, k, g.Header().Get(k), w.Header().Get(k))
				}
			}
			if gv, wv := strings.Join(g.Header().Values("Vary"), ","), strings.Join(w.Header().Values("Vary"), ","); gv != wv {
				t.Errorf("Vary %q, want %q", gv, wv)
			}
		}
	}
	rec := get(t, ours, "/metrics?name[]=dynamic_mcp_callers&name[]=go_goroutines", map[string]string{"Accept-Encoding": "gzip"})
	zr, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(zr)
	if !strings.HasPrefix(string(body), "# HELP dynamic_mcp_callers ") || strings.Count(string(body), "# TYPE") != 2 || !strings.Contains(string(body), "\ngo_goroutines ") {
		t.Errorf("name[] and gzip:\n%s", body)
	}
}

// The whole scrape parses with Prometheus' own text parser.
func TestMetricsParse(t *testing.T) {
	body := get(t, goldenMetrics(t).Handler(), "/metrics", nil).Body
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(body)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mcp_server_operation_duration_seconds", "go_gc_duration_seconds", "process_cpu_seconds_total", "dynamic_mcp_upstream_state"} {
		if fams[name] == nil {
			t.Errorf("no %s", name)
		}
	}
}

// The format picked for an Accept header is expfmt's (but protobuf, not
// offered), for headers made of the clauses and parameters scrapers and
// clients send, wildcards with a version, and malformed ones.
func TestNegotiateAsExpfmt(t *testing.T) {
	types := []string{"text/plain", "application/openmetrics-text", "*/*", "text/*", "application/*", "*", "application/json",
		"garbage/", "/", "text", "", "TEXT/PLAIN", "a/b/c", " text/plain ", "application/vnd.google.protobuf"}
	params := []string{"version=0.0.4", "version=1.0.0", "version=0.0.1", "version=2.0.0", "q=0.5", "q=0", "q=1", "q=0.9", "q=",
		"escaping=allow-utf-8", "escaping=values", "escaping=dots", "escaping=bogus", "charset=utf-8", "q=abc", "version=", "=",
		"a=b=c", "version=0.0.1=", "q==", " q = 0.3 ", " version = 1.0.0 ", "proto=io.prometheus.client.MetricFamily", "encoding=delimited"}
	r := rand.New(rand.NewPCG(33, 3))
	for range 20000 {
		var clauses []string
		for range r.IntN(4) + 1 {
			c := types[r.IntN(len(types))]
			for range r.IntN(3) {
				c += ";" + params[r.IntN(len(params))]
			}
			clauses = append(clauses, c)
		}
		accept := strings.Join(clauses, ",")
		//lint:ignore SA1019 promhttp chose the format with it: the behaviour the hub keeps
		want := string(expfmt.NegotiateIncludingOpenMetrics(http.Header{"Accept": {accept}}))
		if strings.HasPrefix(want, "application/vnd.google.protobuf") {
			continue // not offered: the next format the scraper takes
		}
		if got := negotiate(accept); got.contentType != want || got.openMetrics != strings.HasPrefix(want, "application/openmetrics-text") {
			t.Fatalf("Accept %q: %q, want %q", accept, got.contentType, want)
		}
	}
}

// A family is written as expfmt wrote it, in both formats, whatever its
// label values (quotes, backslashes, newlines, any character), help text
// and value (NaN, infinities, -0, the extremes of float64).
func TestWriterAsExpfmt(t *testing.T) {
	vals := []string{"", "a", "\\", "\"", "\n", "\r", "\t", "é", "\u2028", "a\\nb", "x\"y\\z\n", "\x7f"}
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 1e21, 1e-7, 123456789, 1.5e300, math.NaN(), math.Inf(1), math.Inf(-1),
		5e-324, 100, 1e6, 12345678901234567}
	helps := []string{"h", "a\\b", "line\nnext", "q\"uote", ""}
	r := rand.New(rand.NewPCG(5, 6))
	for range 5000 {
		lv := vals[r.IntN(len(vals))] + vals[r.IntN(len(vals))]
		v, help := floats[r.IntN(len(floats))], helps[r.IntN(len(helps))]
		name, typ := []string{"m", "m_total"}[r.IntN(2)], []metricType{counterType, gaugeType}[r.IntN(2)]
		f := &family{name: name, help: help, typ: typ, samples: []sample{{labels: []labelPair{{"l", lv}}, value: v}}}
		m := &dto.Metric{Label: []*dto.LabelPair{{Name: proto.String("l"), Value: proto.String(lv)}}}
		mf := &dto.MetricFamily{Name: proto.String(name), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{m}}
		if typ == counterType {
			mf.Type, m.Counter = dto.MetricType_COUNTER.Enum(), &dto.Counter{Value: proto.Float64(v)}
		} else {
			m.Gauge = &dto.Gauge{Value: proto.Float64(v)}
		}
		if help != "" {
			mf.Help = proto.String(help)
		}
		for _, om := range []bool{false, true} {
			var got, want bytes.Buffer
			bw := bufio.NewWriter(&got)
			writeFamily(bw, f, om)
			_ = bw.Flush()
			if om {
				_, _ = expfmt.MetricFamilyToOpenMetrics(&want, mf)
			} else {
				_, _ = expfmt.MetricFamilyToText(&want, mf)
			}
			if got.String() != want.String() {
				t.Fatalf("OpenMetrics %v, label %q, value %v, help %q:\n%q\nwant\n%q", om, lv, v, help, got.String(), want.String())
			}
		}
	}
}
