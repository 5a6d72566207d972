package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// nginxBinary is Debian's nginx (.ci/run installs it). Without it a test
// skips, but not in CI, where it must run.
func nginxBinary(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx"
	}
	if os.Getenv("CI") == "" {
		t.Skip("no nginx (apt-get install nginx-light); in CI this test must run")
	}
	t.Fatal("no nginx in CI: .ci/run installs nginx-light")
	return ""
}

// nginx is a running nginx with examples/nginx/dynamic-mcp.conf in front
// of a hub.
type nginx struct {
	https  string // base URL of the TLS server block
	http   string // base URL of the plain server block, which redirects
	caFile string // the certificate nginx serves, to trust (PEM)
	client *http.Client
}

// startNginx starts nginx, in a prefix directory of its own under a
// temporary directory and as the current user, with the example config
// in front of the hub at hubAddr: the example's directives as they are,
// but for its ports, its upstream server's address and its certificate
// paths, which must each be in the example exactly once. It is stopped
// when the test ends.
func startNginx(t testing.TB, hubAddr string) *nginx {
	t.Helper()
	return startNginxReplicas(t, []string{hubAddr}, false)
}

// startNginxReplicas is startNginx in front of the replicas at hubAddrs,
// each a server of the example's upstream block as its one server is;
// roundRobin drops the example's least_conn, so that nginx sends each
// request to the next replica in turn.
func startNginxReplicas(t testing.TB, hubAddrs []string, roundRobin bool) *nginx {
	t.Helper()
	bin := nginxBinary(t)
	dir := t.TempDir()
	certFile, keyFile, pool := testCertificate(t, dir)
	example, err := os.ReadFile(filepath.Join(repoDir, "examples", "nginx", "dynamic-mcp.conf"))
	if err != nil {
		t.Fatal(err)
	}
	// The test keeps both listeners and hands them to nginx (below), so
	// no other process can take a port between its choice and nginx's
	// start, and the two can never be the same.
	httpsLn, httpsPort := loopbackListener(t)
	httpLn, httpPort := loopbackListener(t)
	conf := string(example)
	for _, r := range [][2]string{
		{"listen 443 ssl;", fmt.Sprintf("listen 127.0.0.1:%d ssl;", httpsPort)},
		{"listen 80;", fmt.Sprintf("listen 127.0.0.1:%d;", httpPort)},
		{"server 127.0.0.1:8080 max_fails=3 fail_timeout=10s;", upstreamServers(hubAddrs)},
		{"/etc/letsencrypt/live/mcp.example.com/fullchain.pem", certFile},
		{"/etc/letsencrypt/live/mcp.example.com/privkey.pem", keyFile},
	} {
		if n := strings.Count(conf, r[0]); n != 1 {
			t.Fatalf("examples/nginx/dynamic-mcp.conf has %q %d times, want once: update this test with the example", r[0], n)
		}
		conf = strings.Replace(conf, r[0], r[1], 1)
	}
	if roundRobin {
		if n := strings.Count(conf, "    least_conn;\n"); n != 1 {
			t.Fatalf("examples/nginx/dynamic-mcp.conf has least_conn %d times, want once: update this test with the example", n)
		}
		conf = strings.Replace(conf, "    least_conn;\n", "", 1)
	}
	user := ""
	if os.Geteuid() == 0 { // else nginx's workers would run as nobody, who cannot read dir
		user = "user root;"
	}
	main := fmt.Sprintf(`%s
worker_processes 1;
events { worker_connections 512; }
http {
    access_log %[2]s/access.log;
    client_body_temp_path %[2]s/body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    include %[2]s/dynamic-mcp.conf;
}
`, user, dir)
	for name, text := range map[string]string{"nginx.conf": main, "dynamic-mcp.conf": conf} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	errorLog := filepath.Join(dir, "error.log")
	cmd := exec.Command(bin, "-p", dir+"/", "-c", filepath.Join(dir, "nginx.conf"), "-e", errorLog,
		"-g", fmt.Sprintf("daemon off; master_process on; pid %s/nginx.pid; error_log %s info;", dir, errorLog))
	// nginx takes listening sockets from its parent as its binary upgrade
	// does: their fds in the NGINX variable, each used for the listen
	// directive of its address.
	cmd.ExtraFiles = []*os.File{httpsLn, httpLn}
	cmd.Env = append(os.Environ(), "NGINX=3;4;")
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	httpsLn.Close() // nginx holds them now
	httpLn.Close()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt) // nginx's fast shutdown (SIGINT, as SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second * await.Slow):
			cmd.Process.Kill()
			<-exited
			t.Error("nginx did not stop on SIGINT")
		}
		if t.Failed() {
			b, _ := os.ReadFile(errorLog)
			t.Logf("nginx's output:\n%s\nits error log:\n%s", out, b)
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", httpsPort)
	await.Costly(t, 10*time.Second, "nginx to listen on "+addr, func() bool {
		select {
		case <-exited:
			b, _ := os.ReadFile(errorLog)
			t.Fatalf("nginx exited: %s\n%s", out, b)
		default:
		}
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	n := &nginx{https: "https://" + addr, http: fmt.Sprintf("http://127.0.0.1:%d", httpPort), caFile: certFile}
	n.client = &http.Client{
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: 64, DisableCompression: true},
		// The plain server block's redirect is checked, not followed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	t.Cleanup(n.client.CloseIdleConnections)
	return n
}

// upstreamServers are the server lines of an upstream block for addrs
// (each "host:port", and parameters such as backup), with the example's
// failure settings.
func upstreamServers(addrs []string) string {
	lines := make([]string, len(addrs))
	for i, a := range addrs {
		lines[i] = "server " + a + " max_fails=3 fail_timeout=10s;"
	}
	return strings.Join(lines, "\n    ")
}

// loopbackListener is a listening loopback TCP socket, as a file to hand
// to a child process, and its port. The socket is closed when the test ends.
func loopbackListener(t testing.TB) (*os.File, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, ln.Addr().(*net.TCPAddr).Port
}

// testCertificate writes a self-signed certificate for 127.0.0.1 and
// localhost, and its key, into dir, and returns their paths and a pool
// that trusts it.
func testCertificate(t testing.TB, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "dynamic-mcp test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return certFile, keyFile, pool
}

// TestNginxExample puts Debian's nginx, configured by
// examples/nginx/dynamic-mcp.conf, in front of serve --http, and drives
// the hub through it over TLS: the official TypeScript SDK client
// (initialize, tools/list, tools/call, a notification on its GET stream),
// and raw requests for what the SDK does not show: the probes, a refusal
// without a token with its WWW-Authenticate, the redirect to https, and
// an event on the GET stream arriving as the hub sends it, not when a
// buffer fills.
func TestNginxExample(t *testing.T) {
	t.Parallel()
	base, _ := startHTTPHub(t, fmt.Sprintf("mode: flat\ngroups:\n  f: { description: fake, command: %q, args: [\"-grow\"] }\n", fakeBin))
	n := startNginx(t, strings.TrimPrefix(base, "http://"))

	// raw first: the SDK's check calls mutate, after which the hub
	// withholds the changed echo until its pin is accepted.
	t.Run("raw", func(t *testing.T) {
		get := func(url string) *http.Response {
			t.Helper()
			resp, err := n.client.Get(url)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp
		}
		await.Costly(t, 20*time.Second, "/readyz through nginx to answer 200", func() bool { return get(n.https+"/readyz").StatusCode == http.StatusOK })
		if resp := get(n.https + "/healthz"); resp.StatusCode != http.StatusOK {
			t.Errorf("/healthz through nginx: %s", resp.Status)
		}
		if resp := get(n.http + "/mcp"); resp.StatusCode != http.StatusMovedPermanently || !strings.HasPrefix(resp.Header.Get("Location"), "https://") {
			t.Errorf("plain HTTP: %s to %q, want 301 to https", resp.Status, resp.Header.Get("Location"))
		}

		s := &httpSession{url: n.https + "/mcp", hc: n.client}
		if _, _, err := s.post("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}); err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("initialize without a token through nginx: %v, want 401", err)
		}
		// The 401's challenge comes through, for clients that sign in.
		req, _ := http.NewRequest(http.MethodPost, n.https+"/mcp", strings.NewReader(`{}`))
		if resp, err := n.client.Do(req); err != nil {
			t.Fatal(err)
		} else {
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("without a token: %s, WWW-Authenticate %q", resp.Status, resp.Header.Get("WWW-Authenticate"))
			}
		}

		s.hc = &http.Client{Transport: authorized{n.client.Transport}}
		_, header, err := s.post("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
		if err != nil {
			t.Fatal(err)
		}
		if s.id = header.Get("Mcp-Session-Id"); s.id == "" {
			t.Fatal("no Mcp-Session-Id through nginx")
		}
		if _, _, err := s.post("notifications/initialized", nil); err != nil {
			t.Fatal(err)
		}
		await.Costly(t, 20*time.Second, "f__echo through nginx", func() bool { return s.caller("f__echo")() == nil })
		// The hub tells a session of a change to a list it has seen.
		if _, _, err := s.post("tools/list", nil); err != nil {
			t.Fatal(err)
		}

		// The stream's header must come (a buffering proxy may hold it
		// back), within a bound for a busy machine; its body is read
		// until the end of the test.
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		req, _ = http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		headerDue := time.AfterFunc(10*time.Second*await.Slow, cancel)
		resp, err := s.hc.Do(req)
		headerDue.Stop()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			resp.Body.Close()
			t.Fatalf("GET stream through nginx: %s %s", resp.Status, resp.Header.Get("Content-Type"))
		}
		events := make(chan string, 16)
		done := make(chan struct{})
		go func() { // ends when the body is closed below
			defer close(done)
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
					select {
					case events <- string(bytes.TrimSpace(data)):
					default:
					}
				}
			}
		}()
		defer func() { resp.Body.Close(); <-done }()
		// grow's server answers, then says its tools changed (sprout is
		// new): the hub tells the session on its GET stream.
		res, _, err := s.post("tools/call", map[string]any{"name": "f__grow", "arguments": map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		answered := time.Now()
		for {
			select {
			case data := <-events:
				var msg struct{ Method string }
				if json.Unmarshal([]byte(data), &msg) != nil || msg.Method != "notifications/tools/list_changed" {
					continue
				}
				if took := time.Since(answered); took > 2*time.Second*await.Slow {
					t.Errorf("the notification took %s through nginx after the call's answer (%s)", took, res)
				}
				return
			case <-time.After(time.Minute): // bounds a hang, not a timing
				t.Fatal("no notifications/tools/list_changed on the GET stream through nginx")
			}
		}
	})

	t.Run("sdk", func(t *testing.T) {
		npmTestTool(t, "@modelcontextprotocol", "sdk", "package.json")
		script := filepath.Join(repoDir, "testdata", "sdkclient", "balancer.mjs")
		runSDKClientEnv(t, []string{"NODE_EXTRA_CA_CERTS=" + n.caFile}, []string{script, "--url", n.https + "/mcp", "--token", testToken, "--group", "f"})
	})
}

// authorized sends the tests' bearer token with every request.
type authorized struct{ rt http.RoundTripper }

func (a authorized) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+testToken)
	return a.rt.RoundTrip(r)
}
