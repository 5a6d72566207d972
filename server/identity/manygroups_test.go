package identity

import (
	"context"
	"fmt"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// A profiles entry that narrows what a group sees holds however many
// groups its members have: a member who joins (or makes) more groups
// than an identity keeps for display, listed before the narrowing one,
// still sees the narrow profile, not the default (here the whole
// config). Every value of the claim is compared; only those kept for
// display are bounded.
func TestManyGroupsDoNotEscapeAProfile(t *testing.T) {
	is := newIssuer(t)
	auth := config.HTTPAuth{Profiles: []config.AuthProfile{{Claim: "groups", Value: "contractors", Profile: "restricted"}}}
	v := newTestVerifier(is, auth)
	groups := make([]string, 0, 3*MaxValues)
	for i := range 3 * MaxValues {
		groups = append(groups, fmt.Sprintf("aaa-self-made-%03d", i))
	}
	groups = append(groups, "contractors")
	id, err := v.Verify(context.Background(), is.token(t, is.claims(map[string]any{"groups": groups})))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := ChooseProfile(&v.auth, id, ""); err != nil || p != "restricted" {
		t.Errorf("a contractor with %d groups before contractors: profile %q %v, want restricted", 3*MaxValues, p, err)
	}
	if _, err := ChooseProfile(&v.auth, id, "admin"); err == nil {
		t.Error("a contractor with many groups may ask for another profile by URL")
	}
	if len(id.Groups) > MaxValues {
		t.Errorf("%d groups kept for display, want at most %d", len(id.Groups), MaxValues)
	}
}
