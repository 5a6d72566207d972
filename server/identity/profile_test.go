package identity

import (
	"errors"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

func TestChooseProfile(t *testing.T) {
	auth := &config.HTTPAuth{Issuer: "https://id.example/", Profiles: []config.AuthProfile{
		{Claim: "groups", Value: "admins", Profile: "admin"},
		{Claim: "groups", Value: "docs", Profile: "reader"},
		{Claim: "sub", Value: "carol", Profile: "reader"},
	}}
	jwt := func(sub string, groups ...string) *Identity {
		return &Identity{Kind: KindJWT, Subject: sub, Claims: map[string][]string{"groups": groups, "sub": {sub}}}
	}
	for _, c := range []struct {
		name  string
		auth  *config.HTTPAuth
		who   *Identity
		asked string
		want  string
		err   error
	}{
		{"first match wins", auth, jwt("a", "docs", "admins"), "", "admin", nil},
		{"second entry", auth, jwt("b", "docs"), "", "reader", nil},
		{"by subject", auth, jwt("carol"), "", "reader", nil},
		{"no match: whole config", auth, jwt("d", "other"), "", "", nil},
		{"no match: may narrow", auth, jwt("d"), "admin", "admin", nil},
		{"another matching entry's profile", auth, jwt("a", "docs", "admins"), "reader", "reader", nil},
		{"a profile the claims do not allow", auth, jwt("b", "docs"), "admin", "", ErrProfileNotAllowed},
		{"a static token sees what it asks", auth, &Identity{Kind: KindToken, Subject: "ci"}, "admin", "admin", nil},
		{"auth off", nil, jwt("b", "docs"), "", "", nil},
	} {
		got, err := ChooseProfile(c.auth, c.who, c.asked)
		if got != c.want || !errors.Is(err, c.err) {
			t.Errorf("%s: %q, %v; want %q, %v", c.name, got, err, c.want, c.err)
		}
	}
	def := *auth
	def.DefaultProfile = "reader"
	if got, err := ChooseProfile(&def, jwt("d"), ""); got != "reader" || err != nil {
		t.Errorf("default_profile: %q %v", got, err)
	}
	if _, err := ChooseProfile(&def, jwt("d"), "admin"); !errors.Is(err, ErrProfileNotAllowed) {
		t.Errorf("default_profile, asking for another: %v", err)
	}
}
