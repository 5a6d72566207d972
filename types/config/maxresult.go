package config

import (
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// MaxResultOff, as a client rule's or a profile's MaxResult, means no cap
// on that client's tool results, whatever settings.max_result says.
const MaxResultOff = -1

// MinMaxResult is the smallest cap on a tool result: a cut answer holds
// the note on where the whole result is and a link to it, which take
// about 700 bytes.
const MinMaxResult = 2000

// BytesPerToken is how many bytes of a tool result max_result counts as
// one token ("25k tokens"): an approximation (English text and JSON run
// about 4 bytes a token), not a tokenizer's count.
const BytesPerToken = 4

// maxResult reads a cap on a tool result: a byte count ("20000", "20KB"
// = 20,000 bytes, "20KiB" = 20,480, "1MB", "1MiB"), or approximate tokens
// ("25000 tokens", "25k tokens", BytesPerToken bytes each); "off" is
// MaxResultOff where off is allowed (a client rule, a profile), 0 in
// settings (no cap). 0 is no cap too.
func (p *parser) maxResult(n *yaml.Node, key string, offAllowed bool) int {
	s, ok := p.strOK(n, key)
	if !ok {
		return 0
	}
	s = strings.TrimSpace(s)
	if s == "off" {
		if offAllowed {
			return MaxResultOff
		}
		return 0
	}
	v, ok := ParseMaxResult(s)
	if !ok {
		p.fail(n, key, "must be a size such as 20KB, 20KiB or 20000 (bytes), or approximate tokens such as 25k tokens, at least %d bytes (0 or off for no cap), not %q", MinMaxResult, s)
		return 0
	}
	return v
}

// ParseMaxResult reads a max_result value other than "off": bytes or
// approximate tokens, as maxResult documents. ok is false for anything
// else, or for a cap under MinMaxResult bytes (but 0) or over 1 GiB.
func ParseMaxResult(s string) (int, bool) {
	s = strings.TrimSpace(s)
	mult := 1
	if t, ok := strings.CutSuffix(s, "tokens"); ok {
		s, mult = strings.TrimSpace(t), BytesPerToken
		if t, ok := strings.CutSuffix(s, "k"); ok {
			s, mult = strings.TrimSpace(t), 1000*BytesPerToken
		}
	} else {
		for _, u := range []struct {
			suffix string
			mult   int
		}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"KB", 1000}, {"MB", 1000 * 1000}} {
			if t, ok := strings.CutSuffix(s, u.suffix); ok {
				s, mult = strings.TrimSpace(t), u.mult
				break
			}
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 || v > (1<<30)/mult {
		return 0, false
	}
	v *= mult
	if v != 0 && v < MinMaxResult {
		return 0, false
	}
	return v, true
}

// MaxResultFor is the cap on the tool results of a client named client in
// profile ("" for none): its clients: rule's max_result, else its
// profile's, else settings.max_result; 0 is no cap.
func (c *Config) MaxResultFor(client, profile string) int {
	if _, r := c.ClientRuleFor(client); r != nil && r.MaxResult != 0 {
		return max(r.MaxResult, 0)
	}
	if pr := c.Profiles[profile]; pr != nil && pr.MaxResult != 0 {
		return max(pr.MaxResult, 0)
	}
	return c.Settings.MaxResult
}

// CapsResults reports whether any client's tool results have a cap under
// c: settings.max_result, or a profile's or a clients: rule's. Without
// one, no result is ever cut.
func (c *Config) CapsResults() bool {
	if c.Settings.MaxResult > 0 {
		return true
	}
	for _, p := range c.Profiles {
		if p.MaxResult > 0 {
			return true
		}
	}
	for _, r := range c.Clients {
		if r.MaxResult > 0 {
			return true
		}
	}
	return false
}
