package clients

import (
	"fmt"
	"maps"
	"strings"
)

// codexHeaderKeys are the keys of a Codex server table that give a url
// server's headers, import's headers: (Codex sends none to a command).
// Those naming a variable become ${VAR}, read from the hub's environment.
var codexHeaderKeys = map[string]bool{"http_headers": true, "bearer_token_env_var": true, "env_http_headers": true}

// codexHeaders are the headers Codex sends to the url server c: its
// http_headers, then its env_http_headers ("X" = "VAR" is X: ${VAR}),
// then its bearer_token_env_var (Authorization: Bearer ${VAR}), each
// replacing a header of the same name (in any case) before it, as in
// Codex. A variable whose name the config cannot refer to is noted
// instead.
func codexHeaders(name string, c codexServer) (map[string]string, []string) {
	headers := maps.Clone(c.Headers)
	var notes []string
	set := func(key, value string) {
		if headers == nil {
			headers = map[string]string{}
		}
		for k := range headers {
			if strings.EqualFold(k, key) {
				delete(headers, k)
			}
		}
		headers[key] = value
	}
	ref := func(what, variable string) (string, bool) {
		if bareRef().MatchString("$" + variable) {
			return "${" + variable + "}", true
		}
		notes = append(notes, fmt.Sprintf("server %s: %s not imported: %q is no variable name the config can refer to; write the header into headers: by hand", name, what, variable))
		return "", false
	}
	for _, k := range sortedKeys(c.EnvHeaders) {
		if v, ok := ref("env_http_headers "+k, c.EnvHeaders[k]); ok {
			set(k, v)
		}
	}
	if c.BearerVar != "" {
		if v, ok := ref("bearer_token_env_var", c.BearerVar); ok {
			set("Authorization", "Bearer "+v)
		}
	}
	return headers, notes
}
