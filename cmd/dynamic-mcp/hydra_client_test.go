package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestOutsiderClientTokenRefusedWithHydra: ory/hydra with dynamic client
// registration open (as MCP clients need it) lets anyone register a
// client. An outsider with no account registers one for the client
// credentials grant, names the hub as its audience and gets a JWT that
// hydra signs; the hub refuses it (its sub is its client_id: no user
// signed in), 401 invalid_token, rather than take it for a user of the
// default profile.
func TestOutsiderClientTokenRefusedWithHydra(t *testing.T) {
	t.Parallel() // hydra, the hub and their ports are its own
	bin, hub, audience := hydraAndHub(t)
	h := startHydraJWT(t, bin, nil, "")
	base, stderr := startHTTPHub(t, fmt.Sprintf(`mode: flat
http:
  auth:
    issuer: %s/
    audience: %s
groups:
  f: { description: fake, command: %q }
`, h.public, audience, fakeBin))
	hub.behind(base)

	body, _ := json.Marshal(map[string]any{"client_name": "outsider", "grant_types": []string{"client_credentials"},
		"response_types": []string{"token"}, "token_endpoint_auth_method": "client_secret_post", "audience": []string{audience}})
	resp, err := testClient.Post(h.public+"/oauth2/register", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var client struct {
		ID     string `json:"client_id"`
		Secret string `json:"client_secret"`
	}
	json.NewDecoder(resp.Body).Decode(&client)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || client.ID == "" {
		t.Fatalf("dynamic registration: %s %+v", resp.Status, client)
	}
	resp, err = http.PostForm(h.public+"/oauth2/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {client.ID},
		"client_secret": {client.Secret}, "audience": {audience}})
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || tok.AccessToken == "" {
		t.Fatalf("client credentials grant: %s", resp.Status)
	}
	if c := claimsOf(t, tok.AccessToken); c["sub"] != client.ID || c["client_id"] != client.ID {
		t.Fatalf("hydra's client credentials token: %v, want sub and client_id %s", c, client.ID)
	}
	code, header := (&bearerSession{t: t, url: audience, token: tok.AccessToken}).refused()
	if code != http.StatusUnauthorized || !strings.Contains(header, `error="invalid_token"`) || !strings.Contains(header, "client's own") {
		t.Errorf("the outsider's token: %d %q, want 401 invalid_token, a client's own\n%s", code, header, stderr.String())
	}
}
