package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// authCmd signs in to OAuth-protected upstreams (login), signs out
// (logout), and shows the sign-ins (status).
func authCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const usageText = "usage: dynamic-mcp auth login <server> | logout <server> [--user SUBJECT] | logout --user SUBJECT | status [--user SUBJECT] [-c FILE]"
	if len(args) == 0 || isHelp(args[0]) {
		return helpOrUsage(args, stdout, usageText)
	}
	var c common
	var noBrowser bool
	var timeout time.Duration
	fs := flag.NewFlagSet("auth "+args[0], flag.ContinueOnError)
	c.register(fs)
	var user string
	if args[0] == "login" { // each subcommand has only its own flags, in its -h too
		fs.BoolVar(&noBrowser, "no-browser", false, "print the sign-in URL without opening a browser")
		fs.DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the sign-in")
	} else {
		fs.StringVar(&user, "user", "", "the per-user sign-ins (auth: per-user) of this user only: a `subject`, a static token's name, or a caller's key (jwt:SUBJECT)")
	}
	if err := c.parse(fs, args[1:]); err != nil {
		return err
	}
	cfg, err := c.load()
	if err != nil {
		return err
	}
	store, closeStore, err := tokenStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeStore()
	switch args[0] {
	case "status":
		return authStatus(store, user, stdout)
	case "logout":
		if user != "" {
			return userLogout(cfg, store, user, fs.Args(), stdout)
		}
	case "login":
		if user != "" {
			return usageError{"auth login signs in the hub's shared sign-in; a user signs in through the hub (auth: per-user)"}
		}
	default:
		return usageError{usageText}
	}
	if fs.NArg() != 1 {
		return usageError{usageText}
	}
	server := findServer(cfg, fs.Arg(0))
	if server == nil {
		return fmt.Errorf("no server %q in %s (servers are named GROUP, or GROUP/SERVER in a group of several)", fs.Arg(0), cfg.Path)
	}
	if server.URL == "" {
		if u := mcpRemoteURL(server.Args); u != "" {
			return fmt.Errorf("%s runs mcp-remote, which signs in by itself; for the hub to sign in, once for every client, replace its command: and args: with url: %s", server.ID(), u)
		}
		return fmt.Errorf("%s is started as a process (command:); only url: servers sign in", server.ID())
	}
	if args[0] == "logout" {
		if err := store.Delete(server.ID()); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: signed out\n", server.ID())
		return nil
	}
	open := openBrowser
	if noBrowser {
		open = nil
	}
	// The sign-in on file, if any, for its registration: reused with the
	// same authorization server, replaced with another.
	previous, _ := store.Load(server.ID(), server.URL)
	rec, err := auth.Login(ctx, server.ID(), server.URL, auth.LoginOptions{
		ClientID: server.OAuth.ClientID, ClientSecret: server.OAuth.ClientSecret, AuthMethod: server.OAuth.AuthMethod, Scopes: server.OAuth.Scopes,
		ClientMetadataURL: server.OAuth.ClientMetadataURL, ExpectedIssuer: server.OAuth.ExpectedIssuer,
		Previous: previous, Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
		RedirectPort: server.OAuth.RedirectPort, Headers: server.Headers, Open: open, Out: stderr, Timeout: timeout,
	})
	if err != nil {
		return fmt.Errorf("sign in to %s: %w", server.ID(), err)
	}
	if err := store.Save(rec); err != nil {
		return fmt.Errorf("save the sign-in: %w", err)
	}
	fmt.Fprintf(stdout, "%s: signed in (issuer %s; client %s; %s)\n", server.ID(), rec.Issuer, rec.Registration, expiry(rec))
	return nil
}

// mcpRemoteURL is the URL a stdio server's args give mcp-remote, the
// proxy clients use to reach a remote server ("npx -y mcp-remote URL"),
// or "" when they run no mcp-remote.
func mcpRemoteURL(args []string) string {
	for i, a := range args {
		if a == "mcp-remote" || strings.HasPrefix(a, "mcp-remote@") {
			for _, u := range args[i+1:] {
				if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
					return u
				}
			}
		}
	}
	return ""
}

func findServer(cfg *config.Config, id string) *config.Server {
	for _, g := range cfg.Groups {
		for _, s := range g.Servers {
			if s.ID() == id {
				return s
			}
		}
	}
	return nil
}

func authStatus(store *auth.Store, user string, stdout io.Writer) error {
	var recs []*auth.Record
	if user == "" {
		var err error
		if recs, err = store.List(); err != nil {
			return err
		}
	}
	users, err := store.ListUsers()
	if err != nil {
		return err
	}
	if user != "" {
		users = slices.DeleteFunc(users, func(u auth.UserRecord) bool { return !u.MatchUser(user) })
	}
	if len(recs) == 0 && len(users) == 0 {
		if user != "" {
			fmt.Fprintf(stdout, "no sign-ins of user %s\n", user)
			return nil
		}
		fmt.Fprintln(stdout, "no sign-ins")
		return nil
	}
	if len(recs) == 0 {
		return userStatus(users, stdout)
	}
	w := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SERVER\tISSUER\tCLIENT\tSCOPES\tEXPIRES\tCAN REFRESH")
	for _, r := range recs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%v\n", r.Server, orDash(r.Issuer), orDash(r.Registration), orDash(strings.Join(r.Scopes, " ")), expiry(r), r.CanRefresh())
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return userStatus(users, stdout)
}

func expiry(r *auth.Record) string {
	if r.Expiry.IsZero() {
		return "no expiry"
	}
	if left := time.Until(r.Expiry); left < 0 {
		return "expired " + r.Expiry.Format(time.RFC3339)
	}
	return r.Expiry.Format(time.RFC3339) // under EXPIRES
}

// openBrowser opens url in the user's browser, where there is one.
func openBrowser(url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		if _, err := exec.LookPath("xdg-open"); err != nil {
			return errors.New("no xdg-open")
		}
		cmd = exec.Command("xdg-open", url)
	}
	return cmd.Start()
}
