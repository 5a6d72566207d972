package main

import (
	"flag"
	"fmt"
	"io"
)

// validateCmd checks a config without starting anything.
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
	fmt.Fprintf(stdout, "%s: OK (%s mode, %d groups, %d servers)\n", cfg.Path, cfg.Mode, len(cfg.Groups), servers)
	return nil
}
