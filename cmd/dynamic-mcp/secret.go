package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"golang.org/x/term"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

const secretUsage = "usage: dynamic-mcp secret set NAME [-c FILE] (value from a prompt or stdin) | secret list [-c FILE] | secret rm NAME [-c FILE]"

// secretName is what a secret's name must be; compiled at first use, not at every start.
var secretName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// secretCmd keeps the secrets the config's ${secret:NAME} references, in
// the vault of the config's state directory. A value is never taken from
// the command line, where other users and shell history see it.
func secretCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "set" && args[0] != "list" && args[0] != "rm") {
		return helpOrUsage(args, stdout, secretUsage)
	}
	var c common
	fs := flag.NewFlagSet("secret "+args[0], flag.ContinueOnError)
	c.register(fs)
	if err := c.parse(fs, args[1:]); err != nil {
		return err
	}
	want := 1
	if args[0] == "list" {
		want = 0
	}
	cli := config.CLIFor(c.config)
	if fs.NArg() != want {
		// The names to choose from, where the config can be read.
		if _, uses, err := config.ScanSecrets(c.config); err == nil && want == 1 && fs.NArg() == 0 && len(uses) > 0 {
			return usageError{fmt.Sprintf("secret %s needs the secret's NAME: the config uses %s (%s says which are set)\n%s",
				args[0], strings.Join(slices.Sorted(maps.Keys(uses)), ", "), cli.Command("secret", "list"), secretUsage)}
		}
		return usageError{secretUsage}
	}
	name := fs.Arg(0)
	if want == 1 && !secretName().MatchString(name) {
		msg := fmt.Sprintf("secret name %q: use letters, digits and _, not starting with a digit", name)
		if _, uses, err := config.ScanSecrets(c.config); err == nil {
			if near := nearestSecret(name, slices.Collect(maps.Keys(uses))); near != "" {
				msg += fmt.Sprintf("; did you mean %s, which the config uses?", near)
			}
		}
		return usageError{msg}
	}
	// The config is scanned, not loaded: it may name the secret being set.
	stateDir, uses, err := config.ScanSecrets(c.config)
	if err != nil {
		return err
	}
	// A name the config does not use, near one it does, is a typo: set, it
	// would leave the config waiting for the one it uses.
	if args[0] == "set" && len(uses[name]) == 0 {
		if near := nearestSecret(name, slices.Collect(maps.Keys(uses))); near != "" {
			return fmt.Errorf("the config uses no secret %s: did you mean %s? (nothing was set: run %s; to keep %s for later, write ${secret:%s} in the config first)",
				name, near, cli.Command("secret", "set", near), name, name)
		}
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	secrets, v, closeStore, err := openSecrets(c.config, stateDir, name, uses, logger)
	if err != nil {
		return err
	}
	defer closeStore()
	switch args[0] {
	case "set":
		value, err := readSecret(name, stdin, stderr)
		if err != nil {
			return err
		}
		if err := secrets.Set(name, value); err != nil {
			return err
		}
		where := inStore(secrets)
		if where == "" && slices.Equal(uses[name], []string{"store"}) {
			where = " in the state directory (store: itself uses it)"
		}
		fmt.Fprintf(stdout, "secret %s set%s (vault key in the %s)\n", name, where, keyPlace(v))
		if len(uses[name]) == 0 {
			fmt.Fprintf(stdout, "the config does not use it yet: write ${secret:%s}\n", name)
		}
	case "rm":
		had, err := secrets.Delete(name)
		if err != nil {
			return err
		}
		if !had {
			names, _ := secrets.Names()
			if near := nearestSecret(name, names); near != "" {
				return fmt.Errorf("secret %s is not set: did you mean %s?", name, near)
			}
			return fmt.Errorf("secret %s is not set (%s lists those that are)", name, cli.Command("secret", "list"))
		}
		fmt.Fprintf(stdout, "secret %s removed%s\n", name, inStore(secrets))
		if len(uses[name]) > 0 {
			fmt.Fprintf(stdout, "the config still uses it at %s\n", strings.Join(uses[name], ", "))
		}
	case "list":
		names, err := secrets.Names()
		if err != nil {
			return err
		}
		set := map[string]bool{}
		for _, n := range names {
			set[n] = true
			where := "not used by the config"
			if len(uses[n]) > 0 {
				where = "used at " + strings.Join(uses[n], ", ")
			}
			fmt.Fprintf(stdout, "%s\t%s\n", n, where)
		}
		for n, at := range uses {
			if !set[n] && inStore(secrets) != "" && slices.Equal(at, []string{"store"}) {
				fmt.Fprintf(stdout, "%s\tkept in the state directory (store: itself uses it)\n", n)
			} else if !set[n] {
				fmt.Fprintf(stdout, "%s\tNOT SET, used at %s\n", n, strings.Join(at, ", "))
			}
		}
	}
	return nil
}

// nearestSecret is the name of names that name, mistyped, most likely
// meant, or "": secret names are upper case, compared here as config.Nearest
// compares words, in lower case.
func nearestSecret(name string, names []string) string {
	lower := make([]string, len(names))
	for i, n := range names {
		lower[i] = strings.ToLower(n)
	}
	near := config.Nearest(strings.ToLower(name), lower)
	if i := slices.Index(lower, near); near != "" && i >= 0 {
		return names[i]
	}
	return ""
}

func keyPlace(v *vault.Vault) string {
	switch v.Source {
	case "keychain":
		return "OS keychain"
	case "env":
		return vault.EnvKey + " environment variable"
	}
	return vault.KeyFile + " file beside it"
}

// readSecret reads the value from the terminal without echo, or the first
// line of stdin when it is not a terminal.
func readSecret(name string, stdin io.Reader, stderr io.Writer) (string, error) {
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(stderr, "value of %s: ", name)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			return "", fmt.Errorf("reading the secret: %w", err)
		}
		return string(b), nil
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("reading the secret from stdin: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("no value on stdin: pipe it in, or run in a terminal to be asked")
	}
	return line, nil
}
