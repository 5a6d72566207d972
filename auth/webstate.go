package auth

import (
	"errors"
	"log/slog"
)

// WebFlowState is a started WebFlow as plain data, for a face that keeps
// its pending sign-ins where every replica reads them (store:): the
// redirect may reach another replica than the one that sent the browser
// away. It holds the PKCE verifier and the client's secret: whoever keeps
// it seals it.
type WebFlowState struct {
	Server       string   `json:"server"`
	ServerURL    string   `json:"server_url"`
	State        string   `json:"state"`
	Verifier     string   `json:"verifier"`
	Issuer       string   `json:"issuer,omitempty"`
	AuthServer   string   `json:"auth_server,omitempty"`
	AuthURL      string   `json:"authorization_endpoint"`
	TokenURL     string   `json:"token_endpoint"`
	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret,omitempty"`
	AuthMethod   string   `json:"auth_method,omitempty"`
	Registration string   `json:"registration,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
	Resource     string   `json:"resource,omitempty"`
	Redirect     string   `json:"redirect"`
}

// Export is f as plain data (ResumeWeb makes it a flow again).
func (f *WebFlow) Export() WebFlowState {
	return WebFlowState{Server: f.server, ServerURL: f.serverURL, State: f.state, Verifier: f.verifier,
		Issuer: f.pl.md.Issuer, AuthServer: f.pl.md.lookedUp, AuthURL: f.pl.md.AuthorizationEndpoint, TokenURL: f.pl.md.TokenEndpoint,
		ClientID: f.pl.c.id, ClientSecret: f.pl.c.secret, AuthMethod: f.pl.c.method, Registration: f.pl.c.registration,
		Scopes: f.pl.scopes, Resource: f.pl.resource, Redirect: f.conf.RedirectURL}
}

// ResumeWeb is the flow st was exported from, ready to Finish; o gives
// its HTTP client and logger (defaults as for BeginWeb). Its endpoints
// are checked again as BeginWeb checked them.
func ResumeWeb(st WebFlowState, o LoginOptions) (*WebFlow, error) {
	if o.HTTPClient == nil {
		o.HTTPClient = SafeClient()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if st.State == "" || st.Verifier == "" || st.ClientID == "" {
		return nil, errors.New("a sign-in's saved state is incomplete")
	}
	for _, u := range []string{st.ServerURL, st.AuthURL, st.TokenURL} {
		if err := CheckURL(u); err != nil {
			return nil, err
		}
	}
	pl := loginPlan{md: &serverMetadata{Issuer: st.Issuer, AuthorizationEndpoint: st.AuthURL, TokenEndpoint: st.TokenURL, lookedUp: st.AuthServer},
		c: client{id: st.ClientID, secret: st.ClientSecret, method: st.AuthMethod, registration: st.Registration}, scopes: st.Scopes, resource: st.Resource}
	return &WebFlow{server: st.Server, serverURL: st.ServerURL, state: st.State, verifier: st.Verifier,
		conf: pl.oauthConfig(st.Redirect), pl: pl, o: o}, nil
}
