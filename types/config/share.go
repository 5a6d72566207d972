package config

import (
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// share reads a part of a whole: a fraction such as 0.5, or a percent
// such as "50%"; above zero and at most the whole.
func (p *parser) share(n *yaml.Node, key string, f *float64) {
	s, ok := p.strOK(n, key)
	if !ok {
		return
	}
	num, percent := strings.CutSuffix(strings.TrimSpace(s), "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if percent {
		v /= 100
	}
	if err != nil || !(v > 0 && v <= 1) {
		p.fail(n, key, "must be a part of the whole above zero, such as 0.5 or \"50%%\", not %q", s)
		return
	}
	*f = v
}

// ShareOf is a client's share of limit: part of it rounded down, at
// least 1.
func ShareOf(limit int, part float64) int {
	if part <= 0 || part >= 1 {
		return limit
	}
	return max(1, int(float64(limit)*part))
}
