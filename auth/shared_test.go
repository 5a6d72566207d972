package auth

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/auth/authtest"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// TestMain runs the test binary as one of the callers of
// TestRenewalSharedAcrossProcesses when it is asked to.
func TestMain(m *testing.M) {
	// The tests keep their vault's key out of the OS keychain of the
	// machine that runs them (types/vault tests the keychain).
	if os.Getenv(vault.EnvKey) == "" {
		os.Setenv(vault.EnvKey, base64.StdEncoding.EncodeToString(make([]byte, vault.KeySize)))
	}
	if dir := os.Getenv("AUTH_TEST_CALLER_STORE"); dir != "" {
		os.Exit(callerProcess(dir))
	}
	os.Exit(pgtest.Shared(m).Run()) // one PostgreSQL cluster for the tests
}

// callerProcess calls the protected resource for AUTH_TEST_CALLER_FOR on
// the sign-in in the store at dir, and prints how many calls were answered.
func callerProcess(dir string) int {
	d, err := time.ParseDuration(os.Getenv("AUTH_TEST_CALLER_FOR"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	store := NewStore(dir)
	if url := os.Getenv("AUTH_TEST_CALLER_DB"); url != "" { // a replica on a shared store
		db, err := pgstore.Open(context.Background(), url)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		defer db.Close()
		store = NewSharedStore(dir, db)
	}
	ok, failed, err := callFor(context.Background(), store, os.Getenv("AUTH_TEST_CALLER_URL"), d)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	fmt.Printf("answered %d failed %d\n", ok, failed)
	return 0
}

// callFor calls the resource at url for d as the hub calls an upstream:
// the source's header on each call, and on a 401 one renewal and one more
// try. It returns how many calls were answered and how many were not, with
// the first failure.
func callFor(ctx context.Context, store *Store, url string, d time.Duration) (ok, failed int, first error) {
	src, err := NewSource(store, "srv", url)
	if err != nil {
		return 0, 1, err
	}
	call := func() (int, error) {
		h, err := src.Header(ctx)
		if err != nil {
			return 0, err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Authorization", h)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		code, err := call()
		if err == nil && code == http.StatusUnauthorized {
			if err = src.Renew(ctx, ""); err == nil {
				code, err = call()
			}
		}
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("HTTP %d", code)
		}
		if err != nil {
			failed++
			if first == nil {
				first = err
			}
			continue
		}
		ok++
	}
	return ok, failed, first
}

// Three callers on one token store, two of them other processes, against
// an authorization server that rotates refresh tokens, lets access tokens
// lapse in 2 s and revokes the grant when a used refresh token comes
// again (ory/hydra, Notion): the renewals take turns, so no refresh token
// is used twice, the grant stands and every call is answered. Without the
// lock and the re-read, two callers renew with the same refresh token and
// the user is signed out (issue 22).
func TestRenewalSharedAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for seconds")
	}
	t.Parallel() // it waits out its tokens' lives: others run meanwhile
	const runFor = 7 * time.Second
	a := authtest.NewServer(t)
	a.AccessTTL, a.RevokeOnReplay = 2*time.Second, true
	rec, err := login(t, a, LoginOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	store := NewStore(dir)
	if err := store.Save(rec); err != nil {
		t.Fatal(err)
	}
	url := a.URL + "/mcp"
	ok, refreshed, outs := renewInProcesses(t, a, store, url, runFor, "caller", "AUTH_TEST_CALLER_STORE="+dir)
	// The tokens lapsed every 2 s: the callers renewed them, a few times,
	// not on every call.
	if refreshed < int(runFor/(2*time.Second)) || refreshed > 4*int(runFor/time.Second) {
		t.Errorf("%d renewals in %s of 2 s tokens", refreshed, runFor)
	}
	t.Logf("in-process caller answered %d; %d renewals; processes: %s", ok, refreshed, outs)
}

// renewInProcesses calls url for runFor from store here and from two
// other processes of this test binary (callerMain, with env added),
// against a, whose grant a refresh token used twice revokes; each is
// a "<who> process" or the "in-process <who>" in what it reports. It
// fails t when the grant was revoked or any of the three had a call
// fail or none answered, and returns how many calls here were answered,
// how many renewals a saw, and the processes' output.
func renewInProcesses(t *testing.T, a *authtest.Server, store *Store, url string, runFor time.Duration, who string, env ...string) (ok, refreshed int, outs string) {
	t.Helper()
	out := make([]strings.Builder, 2)
	cmds := make([]*exec.Cmd, 2)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(append(os.Environ(), env...), "AUTH_TEST_CALLER_URL="+url, "AUTH_TEST_CALLER_FOR="+runFor.String())
		cmd.Stdout, cmd.Stderr = &out[i], &out[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	var wg sync.WaitGroup
	var failed int
	var first error
	wg.Go(func() { ok, failed, first = callFor(t.Context(), store, url, runFor) })
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("%s process %d: %v\n%s", who, i, err, out[i].String())
		}
	}
	wg.Wait()
	a.Lock()
	revoked, refreshed := a.Revoked, a.Refreshed
	a.Unlock()
	if revoked {
		t.Error("the authorization server revoked the grant: a refresh token was used twice")
	}
	if failed > 0 || ok == 0 {
		t.Errorf("in-process %s: %d answered, %d failed (first: %v)", who, ok, failed, first)
	}
	for i := range out {
		var pok, pfailed int
		o := out[i].String()
		if j := strings.LastIndex(o, "answered "); j < 0 {
			t.Errorf("%s process %d: %s", who, i, o)
		} else if _, err := fmt.Sscanf(o[j:], "answered %d failed %d", &pok, &pfailed); err != nil || pfailed > 0 || pok == 0 {
			t.Errorf("%s process %d: %s", who, i, o)
		}
	}
	return ok, refreshed, out[0].String() + out[1].String()
}

// A source whose token was refused re-reads the record before renewing:
// when another source (another hub) renewed it meanwhile, it takes that
// token and sends no refresh of its own, whose refresh token is spent.
func TestRenewTakesWhatAnotherRenewed(t *testing.T) {
	a := authtest.NewServer(t)
	a.RevokeOnReplay = true
	store := savedSignIn(t, a)
	first, err := NewSource(store, "srv", a.URL+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	second, err := NewSource(store, "srv", a.URL+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Renew(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	if err := second.Renew(t.Context(), ""); err != nil {
		t.Fatalf("second renewal: %v", err)
	}
	h1, _ := first.Header(t.Context())
	h2, _ := second.Header(t.Context())
	a.Lock()
	defer a.Unlock()
	if a.Refreshed != 1 || a.Revoked || h1 != h2 || h2 != "Bearer "+a.Access {
		t.Errorf("renewals %d, revoked %v, headers %q %q, current token %q", a.Refreshed, a.Revoked, h1, h2, a.Access)
	}
}

// A token of seconds is renewed in the second half of its life, not on
// every call; a token of hours a minute before it expires.
func TestDue(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name   string
		issued time.Time
		expiry time.Time
		want   bool
	}{
		{"no expiry", now, time.Time{}, false},
		{"2 s token, fresh", now, now.Add(2 * time.Second), false},
		{"2 s token, half gone", now.Add(-1100 * time.Millisecond), now.Add(900 * time.Millisecond), true},
		{"hour token, fresh", now, now.Add(time.Hour), false},
		{"hour token, last minute", now.Add(-59 * time.Minute), now.Add(59 * time.Second), true},
		{"no issue time, last minute", time.Time{}, now.Add(59 * time.Second), true},
		{"no issue time, two minutes", time.Time{}, now.Add(2 * time.Minute), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := due(&Record{Issued: tc.issued, Expiry: tc.expiry}, now); got != tc.want {
				t.Errorf("due = %v, want %v", got, tc.want)
			}
		})
	}
}
