package telemetry

import (
	"compress/gzip"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The exporter reads its endpoint, headers and compression from the
// OTEL_EXPORTER_OTLP_* variables, and what it POSTs is an
// ExportTraceServiceRequest as the collector's own package decodes it; a
// 503 with Retry-After is tried again.
func TestOTLPHTTPExportsFromEnv(t *testing.T) {
	var mu sync.Mutex
	var got []*coltracepb.ExportTraceServiceRequest
	var attempts int
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		attempts++
		if attempts == 1 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		if r.URL.Path != "/base/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" ||
			r.Header.Get("Authorization") != "Bearer a b" || r.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("request %s %v", r.URL.Path, r.Header)
		}
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			t.Error(err)
			return
		}
		body, _ := io.ReadAll(zr)
		var msg coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &msg); err != nil {
			t.Error(err)
		}
		got = append(got, &msg)
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL+"/base")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20a%20b, broken")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "gzip")
	c, err := newOTLPHTTPFromEnv(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c.retry = time.Millisecond
	spans := []*tracepb.ResourceSpans{
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "tools/call echo"}}}}},
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "second"}}}}},
	}
	body, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: spans})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.upload(t.Context(), body); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if attempts != 2 || len(got) != 1 || len(got[0].ResourceSpans) != 2 ||
		got[0].ResourceSpans[0].ScopeSpans[0].Spans[0].Name != "tools/call echo" || got[0].ResourceSpans[1].ScopeSpans[0].Spans[0].Name != "second" {
		t.Fatalf("after %d attempts the collector got %v", attempts, got)
	}
}

// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is the URL as it is; a 400 is not
// tried again.
func TestOTLPHTTPTracesEndpointAndPermanentError(t *testing.T) {
	var attempts int
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempts++
		if r.URL.Path != "/x" {
			t.Errorf("path %s", r.URL.Path)
		}
		http.Error(w, "bad", http.StatusBadRequest)
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", collector.URL+"/x")
	c, err := newOTLPHTTPFromEnv(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c.retry = time.Millisecond
	if err := c.upload(t.Context(), nil); err == nil || attempts != 1 {
		t.Fatalf("err %v after %d attempts", err, attempts)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "soon")
	if c, err := newOTLPHTTPFromEnv(slog.New(slog.DiscardHandler)); err != nil || c.timeout != 10*time.Second {
		t.Fatalf("a timeout that is not a number: %v", err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "localhost:4318")
	if _, err := newOTLPHTTPFromEnv(slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("an endpoint without http:// was taken")
	}
}
