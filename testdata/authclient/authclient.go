// Package authclient is the client the MCP conformance suite's auth
// scenarios drive: it signs in with dynamic-mcp's auth package, playing the
// browser itself, then connects with dynamic-mcp's upstream package as the
// hub would, and lists and calls the server's tools.
//
//	authclient <server-url>
//
// MCP_CONFORMANCE_CONTEXT may carry a pre-registered client_id and
// client_secret.
//
// Nothing builds it on its own: a test binary whose TestMain calls Run
// runs it in place of its tests when started with EnvVar set to "1".
package authclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// EnvVar, set to "1", makes a test binary whose TestMain calls Run run
// the auth client instead of its tests.
const EnvVar = "TEST_AUTH_CLIENT"

// Run runs the auth client and exits, when the environment asks for it
// (EnvVar is "1"); else it returns at once. Call it first thing in a
// TestMain.
func Run() {
	if os.Getenv(EnvVar) != "1" {
		return
	}
	if err := run(os.Args[len(os.Args)-1]); err != nil {
		fmt.Fprintln(os.Stderr, "authclient:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// patience bounds each wait of the client (the sign-in's redirect,
// connecting, a list, a call): a wait ends as soon as its answer comes, so
// the bound only ends a hang. The suite runs its scenarios at once, and on
// a loaded machine its servers took more than the hub's 10 s defaults to
// answer initialize or tools/list; the suite's own --timeout (the tests
// give it 4 minutes) ends a client that hangs first.
const patience = 3 * time.Minute

func run(serverURL string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*patience)
	defer cancel()
	var cc struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	_ = json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &cc)
	home, err := os.MkdirTemp("", "authclient")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	cfg, err := config.Parse("authclient", strings.NewReader(fmt.Sprintf(`
state_dir: %q
groups:
  server:
    description: the server under test
    url: %q
    transport: streamable-http
    retry: { attempts: 1 }
settings: { connect_timeout: %s, list_timeout: %s, call_timeout: %s }
`, home, serverURL, patience, patience, patience)))
	if err != nil {
		return err
	}
	var scopes []string
	// Sign in, connect and call every tool; a call refused for want of a
	// scope signs in again with the scope the server asks for (step-up),
	// once.
	for attempt := 1; ; attempt++ {
		err := signInAndCall(ctx, cfg, serverURL, cc.ClientID, cc.ClientSecret, scopes)
		var need *needScope
		if attempt == 1 && errors.As(err, &need) {
			scopes = need.scopes
			continue
		}
		if err == nil {
			fmt.Println("signed in, connected and called every tool")
		}
		return err
	}
}

// clientMetadataURL is this client's ID where servers take client ID
// metadata documents: the URL the conformance suite expects a client to be
// configured with.
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

type needScope struct {
	scopes []string
	err    error
}

func (n *needScope) Error() string { return n.err.Error() }

func signInAndCall(ctx context.Context, cfg *config.Config, serverURL, clientID, clientSecret string, scopes []string) error {
	rec, err := auth.Login(ctx, "server", serverURL, auth.LoginOptions{
		ClientID: clientID, ClientSecret: clientSecret, Scopes: scopes, Out: os.Stderr, Timeout: patience,
		ClientMetadataURL: clientMetadataURL,
		Open: func(u string) error {
			go func() {
				if resp, err := http.Get(u); err == nil {
					resp.Body.Close()
				}
			}()
			return nil
		},
	})
	if err != nil {
		return err
	}
	if err := auth.NewStore(cfg.TokenDir()).Save(rec); err != nil {
		return err
	}
	mgr := upstream.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	mgr.SetClientCapabilities(mcp.ClientCapabilities{})
	mgr.Start(ctx)
	defer mgr.Close()
	mgr.WaitSettled(ctx)
	s := mgr.Servers()[0]
	if st := s.Status(); st.State != upstream.StateReady {
		return fmt.Errorf("connect with the token: %v", st.Err)
	}
	for _, t := range s.Lists().Tools {
		params := map[string]any{"name": t.Key, "arguments": map[string]any{}}
		if _, err := s.Request(ctx, nil, "tools/call", params, patience); err != nil {
			// The scopes to add are those of the refusal itself: a
			// second request to ask again may be lost, and a sign-in at
			// the same scope would be refused again.
			if se, ok := errors.AsType[*upstream.ScopeError](err); ok {
				scopes, serr := auth.StepUpScopes(rec.Scopes, se.Challenge)
				if serr != nil {
					return fmt.Errorf("call %s: %w: %w", t.Key, err, serr)
				}
				return &needScope{scopes: scopes, err: err}
			}
			return fmt.Errorf("call %s: %w", t.Key, err)
		}
	}
	return nil
}
