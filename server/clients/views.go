package clients

import "github.com/dynamic-mcp/dynamic-mcp/types/config"

// Build makes one view: of the groups only (nil: every group), in mode,
// under pcfg, the config of the view's profile (the whole config's for
// the whole view).
type Build[V any] func(only []*config.Group, mode config.Mode, pcfg *config.Config) V

// Views are the views of cfg's profiles, by name, made by build beside
// the whole view whenever it is: the cost per request stays one map
// lookup. With mode: auto or a clients: rule's mode, they hold each view
// in its other mode too (see modeViews).
func Views[V any](cfg *config.Config, build Build[V]) map[string]V {
	if len(cfg.Profiles) == 0 {
		return modeViews(nil, cfg, build)
	}
	views := make(map[string]V, len(cfg.Profiles))
	for name := range cfg.Profiles {
		pcfg, err := cfg.WithProfile(name)
		if err != nil {
			continue // cannot happen: name is one of cfg's
		}
		views[name] = build(pcfg.Groups, BaseMode(pcfg.Mode), pcfg)
	}
	return modeViews(views, cfg, build)
}

// modeViews adds to views, for the whole config and each profile, its
// view in the mode other than its own when a session may be shown it:
// built with the others, whenever they are, so that a request still looks
// one view up, and a change to either is told (see Hub.announce). A
// config that names its modes and no clients: rule's builds none.
func modeViews[V any](views map[string]V, cfg *config.Config, build Build[V]) map[string]V {
	if !ModesVary(cfg) {
		return views
	}
	if views == nil {
		views = map[string]V{}
	}
	for _, profile := range append([]string{""}, cfg.ProfileNames()...) {
		pcfg, err := cfg.WithProfile(profile)
		if err != nil {
			continue // cannot happen: profile is one of cfg's
		}
		other := config.ModeFlat
		if BaseMode(ownMode(cfg, profile)) == config.ModeFlat {
			other = config.ModeDynamic
		}
		only := pcfg.Groups
		if profile == "" {
			only = nil // every group, as the whole view has them
		}
		views[modeKey(profile, other)] = build(only, other, pcfg)
	}
	return views
}
