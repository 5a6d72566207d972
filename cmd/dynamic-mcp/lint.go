package main

import (
	"cmp"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dynamic-mcp/dynamic-mcp/types/clients"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// commandWarnings are validate's warnings for stdio servers whose command
// is not found here: a warning, not an error, since the client that
// starts the hub may have another PATH (or the hub runs elsewhere).
func commandWarnings(cfg *config.Config) []string {
	var out []string
	for _, g := range cfg.Groups {
		for _, s := range g.Servers {
			if s.Transport != config.TransportStdio || s.Command == "" || !s.Startable() {
				continue
			}
			if _, err := exec.LookPath(s.Command); err != nil {
				where := "not on PATH here"
				if strings.ContainsRune(s.Command, os.PathSeparator) {
					where = "not an executable file"
				}
				ce := config.ConfigError{Path: cfg.Path, Line: cmp.Or(s.CommandLine, s.Line), Key: serverKey(s) + ".command",
					Err: fmt.Errorf("%q is %s (fine if the client that starts the hub finds it; else install it, or give its full path)", s.Command, where)}
				out = append(out, "warning: "+ce.Error())
			}
		}
	}
	return out
}

// serverKey is the dotted key of s in the file.
func serverKey(s *config.Server) string {
	if s.Name == s.Group {
		return "groups." + s.Group
	}
	return "groups." + s.Group + ".servers." + s.Name
}

// secretWarnings are validate's warnings for secrets written literally in
// servers' env, headers, args and url (clients.LiteralSecret, the test
// import uses), read from the file as written: a ${secret:NAME} resolved
// is no literal.
func secretWarnings(cfg *config.Config) ([]string, error) {
	path := cfg.Path
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return nil, err
	}
	var out []string
	warn := func(n *yaml.Node, key, name string) {
		ce := config.ConfigError{Path: path, Line: n.Line, Key: key, Err: fmt.Errorf(
			"looks like a secret written literally: keep it in the vault (%s) and write ${secret:%s} here", cfg.Command("secret", "set", name), name)}
		out = append(out, "warning: "+ce.Error())
	}
	server := func(key, name string, n *yaml.Node) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			switch k {
			case "env", "headers":
				for j := 0; j+1 < len(v.Content); j += 2 {
					if vk, vv := v.Content[j].Value, v.Content[j+1]; clients.LiteralSecret(vk, vv.Value) {
						warn(vv, key+"."+k+"."+vk, vaultName(name, vk))
					}
				}
			case "args":
				for j, a := range v.Content {
					if clients.LiteralSecret("", a.Value) {
						warn(a, fmt.Sprintf("%s.args[%d]", key, j), vaultName(name, "TOKEN"))
					}
				}
			case "url":
				if literalURLSecret(v.Value) {
					warn(v, key+".url", vaultName(name, "TOKEN"))
				}
			}
		}
	}
	groups := mapValue(doc.Content[0], "groups")
	for i := 0; groups != nil && i+1 < len(groups.Content); i += 2 {
		name, g := groups.Content[i].Value, groups.Content[i+1]
		key := "groups." + name
		server(key, name, g)
		servers := mapValue(g, "servers")
		for j := 0; servers != nil && j+1 < len(servers.Content); j += 2 {
			sname := servers.Content[j].Value
			server(key+".servers."+sname, name+"_"+sname, servers.Content[j+1])
		}
	}
	return out, nil
}

// literalURLSecret reports whether a URL carries a literal secret: in its
// text, or in a query parameter named like one (?api_key=...).
func literalURLSecret(raw string) bool {
	if clients.LiteralSecret("", raw) {
		return true
	}
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	for k, vs := range u.Query() {
		for _, v := range vs {
			if clients.LiteralSecret(k, v) {
				return true
			}
		}
	}
	return false
}

// mapValue is the value of key in the mapping n, nil when n is no mapping
// or has no such key.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
