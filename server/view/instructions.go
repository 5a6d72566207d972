package view

import (
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// The upstreams' instructions (MCP 2025-06-18, lifecycle: "instructions"
// in the initialize result, which clients put in the model's system
// prompt) reach the client in the hub's own initialize result, or its
// server/discover result in 2026-07-28, headed by their group. Each
// client pays for them in every prompt, so they are bounded: each group's
// to MaxGroupInstructions, all of them to MaxInstructions. In dynamic mode
// get_dynamic_tools hands out a group's whole text.
const (
	MaxInstructions      = 8 << 10
	MaxGroupInstructions = 2 << 10
	// CutMark ends a group's text cut to MaxGroupInstructions; CutMarkFlat
	// in flat mode, which has no get_dynamic_tools.
	CutMark     = "\n… (cut; get_dynamic_tools returns the whole text)"
	CutMarkFlat = "\n… (cut)"
)

// groupInstructions are the instructions of g's ready servers, in config
// order; each headed by its server's name when the group has several. A
// server not connected yet has none here: the hub answers initialize at
// once rather than wait for its upstreams (a slow one must not hold up a
// client's start, and clients that start their turn a second after launch
// would miss the hub), and MCP has no notification that instructions
// changed, so a session that initialized before a group was up sees that
// group's text in get_dynamic_tools alone. What is kept is bounded where
// the upstream's answer is read (upstream.MaxInstructions).
func groupInstructions(g *upstream.Group) string {
	var parts []string
	for _, s := range g.Servers {
		st := s.Status()
		text := strings.TrimSpace(st.Instructions)
		if st.State != upstream.StateReady || text == "" {
			continue
		}
		if len(g.Servers) > 1 {
			text = "### server: " + s.Config.Name + "\n" + text
		}
		parts = append(parts, text)
	}
	return strings.Join(parts, "\n\n")
}

// Instructions is the text of the hub's initialize (or server/discover)
// result for a client of v: own (the hub's own, if any), then each
// group's of v that may be called, in config order, headed "## group:
// NAME" and cut to MaxGroupInstructions. The groups that no longer fit in
// MaxInstructions are named in a last line instead.
func (v *View) Instructions(own string) string {
	mark := CutMark
	if v.Mode == config.ModeFlat {
		mark = CutMarkFlat
	}
	var b strings.Builder
	b.WriteString(strings.TrimSpace(own))
	var left []string
	for _, g := range v.Groups {
		if g.Instructions == "" || g.State != upstream.StateReady {
			continue
		}
		text := g.Instructions
		if len(text) > MaxGroupInstructions {
			text = clip.String(text, MaxGroupInstructions-len(mark)) + mark
		}
		section := "## group: " + g.Name + "\n" + text
		if b.Len()+len(section)+2 > MaxInstructions-maxLeftOut {
			left = append(left, g.Name)
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(section)
	}
	if len(left) > 0 {
		line := "… (left out, over 8 KiB: the instructions of " + strings.Join(left, ", ")
		if v.Mode != config.ModeFlat {
			line += "; get_dynamic_tools returns them"
		}
		b.WriteString("\n\n" + clip.String(line, maxLeftOut-8) + ")")
	}
	return b.String()
}

// maxLeftOut is the room kept in MaxInstructions for the line that names
// the groups left out.
const maxLeftOut = 512
