package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// validateCmd checks a config without starting anything. It exits 1 for a
// config the hub would not start on, and 0 with warnings for what only
// holds up a group (an unset variable, a missing secret).
func validateCmd(args []string, stdout, stderr io.Writer) error {
	var c common
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	c.register(fs)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	cfg, err := c.load()
	if err != nil {
		return err
	}
	servers := 0
	for _, g := range cfg.Groups {
		servers += len(g.Servers)
	}
	warnPlaceholders(cfg, stderr)
	// An unset variable or missing secret in a group holds up that group
	// alone (the hub serves the rest): a warning, not a failure.
	for _, u := range unresolvedOf(cfg) {
		fmt.Fprintln(stderr, u.warning())
	}
	for _, w := range commandWarnings(cfg) {
		fmt.Fprintln(stderr, w)
	}
	secrets, err := secretWarnings(cfg)
	if err != nil {
		return err
	}
	for _, w := range secrets {
		fmt.Fprintln(stderr, w)
	}
	fmt.Fprintf(stdout, "%s: OK (%s mode, %s, %s)\n", cfg.Path, cfg.Mode, plural(len(cfg.Groups), "group"), plural(servers, "server"))
	return nil
}

// warnPlaceholders warns of each group whose description is still the
// one import left for it: the LLM reads it to choose a group.
func warnPlaceholders(cfg *config.Config, stderr io.Writer) {
	for _, g := range cfg.Groups {
		if strings.HasPrefix(g.Description, placeholderPrefix) {
			fmt.Fprintf(stderr, "warning: %s: group %s has the description import left for it; say what it is for, the LLM reads it\n", cfg.Path, g.Name)
		}
	}
}
