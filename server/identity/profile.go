package identity

import (
	"errors"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// ErrProfileNotAllowed is the error of a caller that asks (by URL,
// /mcp/p/NAME) for a profile its claims do not allow.
var ErrProfileNotAllowed = errors.New("the caller's claims do not allow this profile")

// ChooseProfile is the profile a caller sees who asked for asked ("" at
// /mcp): for a caller signed in with a JWT, under auth's profiles
// entries. The first entry whose claim holds its value is the caller's
// profile, else auth's default_profile ("" the whole config). At /mcp the
// caller sees that profile. At /mcp/p/NAME: a caller whose profile is the
// whole config may narrow it to any profile; any other, only to a profile
// an entry matching its claims names; else ErrProfileNotAllowed. A caller
// with a static token, or any caller when auth is off, sees what it asks.
func ChooseProfile(auth *config.HTTPAuth, who *Identity, asked string) (string, error) {
	if !auth.Enabled() || who == nil || who.Kind != KindJWT {
		return asked, nil
	}
	chosen, allowed := auth.DefaultProfile, map[string]bool{}
	matched := false
	for _, p := range auth.Profiles {
		if who.Has(p.Claim, p.Value) {
			if !matched {
				chosen, matched = p.Profile, true
			}
			allowed[p.Profile] = true
		}
	}
	allowed[chosen] = true
	switch {
	case asked == "":
		return chosen, nil
	case chosen == "" || allowed[asked]:
		return asked, nil
	}
	return "", ErrProfileNotAllowed
}
