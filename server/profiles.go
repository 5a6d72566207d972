package server

import (
	"errors"
	"fmt"

	"github.com/dynamic-mcp/dynamic-mcp/server/identity"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// ErrUnknownProfile is the error of a session opened in a profile the
// config does not have.
var ErrUnknownProfile = errors.New("no such profile")

// profileViews are the views of cfg's profiles, by name, built beside the
// whole view whenever it is: the cost per request stays one map lookup.
// With mode: auto or a clients: rule's mode, they hold each view in its
// other mode too (see modeViews).
func profileViews(cfg *config.Config, mgr *upstream.Manager, pol *policy.Policy) map[string]*view {
	if len(cfg.Profiles) == 0 {
		return modeViews(nil, cfg, mgr, pol)
	}
	views := make(map[string]*view, len(cfg.Profiles))
	for name := range cfg.Profiles {
		pcfg, err := cfg.WithProfile(name)
		if err != nil {
			continue // cannot happen: name is one of cfg's
		}
		views[name] = withCooperative(buildViewOf(pcfg.Groups, baseMode(pcfg.Mode), pcfg.Settings.Search, pcfg.Settings.MaxTools, mgr, pol), pcfg)
	}
	return modeViews(views, cfg, mgr, pol)
}

// viewOf is the view of the profile named profile ("" is the whole
// config). A profile a reload removed shows nothing but the meta-tools'
// empty list: its sessions are told by list_changed.
func (s *snapshot) viewOf(profile string) *view {
	if profile == "" {
		return s.view
	}
	if v, ok := s.profiles[profile]; ok {
		return v
	}
	return s.empty()
}

// HasProfile reports whether the current config has the profile name.
func (h *Hub) HasProfile(name string) bool {
	_, ok := h.config().Profiles[name]
	return ok
}

// OpenProfile is Open of a session that sees the profile named profile
// only (see config.Profile); "" is the whole config.
func (h *Hub) OpenProfile(id, transport, profile string, peer Peer) (*Session, error) {
	return h.OpenAs(id, transport, profile, nil, peer)
}

// OpenAs is OpenProfile of a session whose caller is who (nil: unknown):
// the caller is on the session for per-user rate limits, the audit
// trail, the inspector and traces.
func (h *Hub) OpenAs(id, transport, profile string, who *identity.Identity, peer Peer) (*Session, error) {
	if profile != "" && !h.HasProfile(profile) {
		return nil, fmt.Errorf("%w: %q", ErrUnknownProfile, profile)
	}
	return h.open(id, transport, profile, who, peer)
}

// profileIn is the key of the view the session sees under cfg (viewOf's
// argument): its profile (see profileName), or, where mode: auto or a
// clients: rule shows its client another mode than the profile's own,
// the profile's view in that mode (see viewKey). What needs the profile
// itself (rate limits, max_result) asks profileName.
func (s *session) profileIn(cfg *config.Config) string {
	return s.viewKey(cfg, s.profileName(cfg))
}

// profileName is the profile the session sees under cfg: the one it was
// opened in (serve --profile, /mcp/p/NAME), else on stdio the one a
// clients: rule gives its client's name, else "" (the whole config). A
// client's name picks its view only where the connection is the client's
// alone: over HTTP the URL does (see config.ClientRule.Profile).
func (s *session) profileName(cfg *config.Config) string {
	if s.profile != "" || s.transport != "stdio" || len(cfg.Clients) == 0 {
		return s.profile
	}
	return cfg.ProfileForClient(s.GetClientInfo().Name)
}
