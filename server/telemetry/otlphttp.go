package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// otlpExporterVersion is the version of otlptrace the User-Agent names,
// as its exporter did ("OTel OTLP Exporter Go/" and the version; a test
// holds it to the module's).
const otlpExporterVersion = "1.47.0"

// otlpHTTP POSTs spans (an ExportTraceServiceRequest, otlpspans.go) over OTLP/HTTP with
// protobuf, configured by the OTEL_EXPORTER_OTLP_* variables as the
// OpenTelemetry exporter specification has them ("OpenTelemetry Protocol
// Exporter"): the endpoint, headers, timeout, compression and TLS files,
// each with its _TRACES_ variant first.
//
// It stands in for otlptracehttp, which marshals its request with the
// collector package of go.opentelemetry.io/proto/otlp: that package also
// holds the gRPC service, so importing it links gRPC and grpc-gateway
// (about a hundred packages, and their initialisers run at every start,
// the shared hub's bridges included) into a binary that never speaks
// gRPC. An ExportTraceServiceRequest is one repeated field, written here
// by hand.
type otlpHTTP struct {
	url      string
	headers  http.Header
	timeout  time.Duration
	gzip     bool
	client   *http.Client
	retry    time.Duration // the first wait before another try (5 s)
	maxRetry time.Duration // the time spent retrying one batch, at most (1 min)
}

// otlpEnv reads the exporter's variable name (ENDPOINT, HEADERS, ...): the
// traces' own OTEL_EXPORTER_OTLP_TRACES_name first, then the general one.
func otlpEnv(name string) (value, key string) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_" + name, "OTEL_EXPORTER_OTLP_" + name} {
		if v := strings.TrimSpace(os.Getenv(k)); v != "" {
			return v, k
		}
	}
	return "", ""
}

// newOTLPHTTPFromEnv returns the client the environment configures. An
// endpoint that is not an http(s) URL is an error; a timeout, compression
// or TLS file it cannot use is logged and left at its default, as the
// SDK's exporter did, so that the hub still starts.
func newOTLPHTTPFromEnv(logger *slog.Logger) (*otlpHTTP, error) {
	c := &otlpHTTP{headers: http.Header{}, timeout: 10 * time.Second, retry: 5 * time.Second, maxRetry: time.Minute}
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is the URL as it is (with "/" for
	// an empty path); OTEL_EXPORTER_OTLP_ENDPOINT is a base to which
	// v1/traces is added.
	if v := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); v != "" {
		u, err := url.Parse(v)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: %w", err)
		}
		if u.Path == "" {
			u.Path = "/"
		}
		c.url = u.String()
	} else if v := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); v != "" {
		u, err := url.Parse(v)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT: %w", err)
		}
		u.Path = path.Join(u.Path, "/v1/traces")
		c.url = u.String()
	}
	if u, err := url.Parse(c.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the OTLP endpoint %q is not an http:// or https:// URL", c.url)
	}
	if v, _ := otlpEnv("HEADERS"); v != "" {
		for pair := range strings.SplitSeq(v, ",") {
			k, val, ok := strings.Cut(pair, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				continue
			}
			if dec, err := url.PathUnescape(val); err == nil {
				val = dec
			}
			c.headers.Set(k, strings.TrimSpace(val))
		}
	}
	if v, k := otlpEnv("TIMEOUT"); v != "" {
		if ms, err := strconv.Atoi(v); err != nil || ms < 0 {
			logger.Warn("OTLP: not a number of milliseconds, the timeout stays 10s", "env", k, "value", v)
		} else {
			c.timeout = time.Duration(ms) * time.Millisecond
		}
	}
	if v, k := otlpEnv("COMPRESSION"); v != "" {
		switch strings.ToLower(v) {
		case "gzip":
			c.gzip = true
		case "none":
		default:
			logger.Warn("OTLP: compression is gzip or none; sending uncompressed", "env", k, "value", v)
		}
	}
	tlsConfig, err := otlpTLS()
	if err != nil {
		logger.Warn("OTLP: TLS files not used", "err", err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone() // proxies from the environment, as the SDK's
	transport.TLSClientConfig = tlsConfig
	c.client = &http.Client{Transport: transport}
	return c, nil
}

// otlpTLS is the TLS configuration of the CERTIFICATE (the collector's
// CA), CLIENT_CERTIFICATE and CLIENT_KEY files, or nil for the defaults.
func otlpTLS() (*tls.Config, error) {
	ca, caKey := otlpEnv("CERTIFICATE")
	cert, certKey := otlpEnv("CLIENT_CERTIFICATE")
	key, keyKey := otlpEnv("CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", caKey, err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no certificate in %s", caKey, ca)
		}
	}
	if cert != "" || key != "" {
		if cert == "" || key == "" {
			return nil, errors.New("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY go together")
		}
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("%s, %s: %w", certKey, keyKey, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// CloseIdleConnections closes the idle connections; a batch in flight
// ends with its context (the exporter's shutdown deadline).
func (c *otlpHTTP) CloseIdleConnections() { c.client.CloseIdleConnections() }

// upload sends one ExportTraceServiceRequest, retrying what the
// specification says is retryable (429, 502, 503, 504, and a connection
// that failed) with exponential backoff and the server's Retry-After,
// for a minute at most.
func (c *otlpHTTP) upload(ctx context.Context, body []byte) error {
	encoding := ""
	if c.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(body)
		if err := zw.Close(); err != nil {
			return err
		}
		body, encoding = b.Bytes(), "gzip"
	}
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = c.retry, 6*c.retry, c.maxRetry
	for {
		err := c.post(ctx, body, encoding)
		var again *retryAfter
		if err == nil || !errors.As(err, &again) {
			return err
		}
		wait := b.NextBackOff()
		if wait == backoff.Stop {
			return again.err
		}
		t := time.NewTimer(max(wait, again.wait))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return errors.Join(again.err, ctx.Err())
		}
	}
}

// retryAfter is a failure worth another try, after wait at the soonest
// (the server's Retry-After).
type retryAfter struct {
	err  error
	wait time.Duration
}

func (e *retryAfter) Error() string { return e.err.Error() }
func (e *retryAfter) Unwrap() error { return e.err }

// post makes one attempt; a *retryAfter error is worth another.
func (c *otlpHTTP) post(ctx context.Context, body []byte, encoding string) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = c.headers.Clone()
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "OTel OTLP Exporter Go/"+otlpExporterVersion)
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		// A connection refused or reset: the collector may be back soon.
		return &retryAfter{err: err}
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return nil
	}
	err = fmt.Errorf("failed to send to %s: %s (body: %s)", c.url, resp.Status, strings.TrimSpace(string(msg)))
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		r := &retryAfter{err: err}
		if v := resp.Header.Get("Retry-After"); v != "" {
			if s, perr := strconv.Atoi(v); perr == nil && s > 0 {
				r.wait = time.Duration(s) * time.Second
			} else if t, perr := http.ParseTime(v); perr == nil {
				r.wait = time.Until(t)
			}
		}
		return r
	}
	return err
}
