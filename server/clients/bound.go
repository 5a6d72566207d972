package clients

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
)

// What a client declares in initialize is kept for the session's life, so
// it is kept bounded: a client may send megabytes under the message limit,
// and the hub holds every session's declaration (and lists them all to the
// inspector on every poll).
const (
	// MaxClientText bounds each string of clientInfo kept.
	MaxClientText = 256
	// MaxCapabilityBytes bounds the members of capabilities.experimental
	// and of capabilities.extensions kept, each as encoded.
	MaxCapabilityBytes = 4 << 10
)

// BoundCapabilities is caps with experimental and extensions clipped to
// MaxCapabilityBytes each: members in key order, each kept as its encoded
// bytes, while they fit. The capabilities the hub acts on (roots,
// sampling, elicitation, tasks) are small fixed structures, kept whole.
func BoundCapabilities(caps mcp.ClientCapabilities) mcp.ClientCapabilities {
	caps.Experimental = clipMembers(caps.Experimental)
	caps.Extensions = clipMembers(caps.Extensions)
	return caps
}

// clipMembers is m with the members that fit in MaxCapabilityBytes, in key
// order, each as its encoding; nil when none fits.
func clipMembers(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	var out map[string]any
	size := 0
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if size+len(k) > MaxCapabilityBytes {
			break
		}
		b, err := json.Marshal(m[k])
		if err != nil || size+len(k)+len(b) > MaxCapabilityBytes {
			continue
		}
		if out == nil {
			out = map[string]any{}
		}
		out[k] = json.RawMessage(b)
		size += len(k) + len(b)
	}
	return out
}

// BoundImplementation is info with its strings clipped to MaxClientText
// and without icons (the hub shows none).
func BoundImplementation(info mcp.Implementation) mcp.Implementation {
	return mcp.Implementation{Name: ClipText(info.Name), Version: ClipText(info.Version), Title: ClipText(info.Title),
		Description: ClipText(info.Description), WebsiteURL: ClipText(info.WebsiteURL)}
}

// ClipText is s cut to at most MaxClientText bytes, on a rune boundary,
// copied so that it does not pin the message it came from.
func ClipText(s string) string {
	return strings.Clone(clip.String(s, MaxClientText))
}
