package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// userStatus prints the users' own sign-ins (auth: per-user), after the
// shared ones; nothing when there are none.
func userStatus(users []auth.UserRecord, stdout io.Writer) error {
	if len(users) == 0 {
		return nil
	}
	fmt.Fprintln(stdout)
	w := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SERVER\tUSER\tISSUER\tCLIENT\tSCOPES\tEXPIRES\tCAN REFRESH")
	for _, u := range users {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%v\n", u.Server, userName(u), orDash(u.Issuer), orDash(u.Registration),
			orDash(strings.Join(u.Scopes, " ")), expiry(u.Record), u.CanRefresh())
	}
	return w.Flush()
}

// userName is how a user's record is shown: the user's key, or for a
// record saved before records named their user, its hash.
func userName(u auth.UserRecord) string {
	if u.User != "" {
		return u.User
	}
	return "user#" + u.Hash
}

// userLogout removes user's own sign-ins: to the servers named in args,
// or to every server when there are none.
func userLogout(cfg *config.Config, store *auth.Store, user string, args []string, stdout io.Writer) error {
	if len(args) > 1 {
		return usageError{"usage: dynamic-mcp auth logout [<server>] --user SUBJECT"}
	}
	if len(args) == 1 && findServer(cfg, args[0]) == nil {
		return fmt.Errorf("no server %q in %s (servers are named GROUP, or GROUP/SERVER in a group of several)", args[0], cfg.Path)
	}
	users, err := store.ListUsers()
	if err != nil {
		return err
	}
	n := 0
	for _, u := range users {
		if !u.MatchUser(user) || (len(args) == 1 && u.Server != args[0]) {
			continue
		}
		if err := store.ForUserHash(u.Hash).Delete(u.Server); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %s signed out\n", u.Server, userName(u))
		n++
	}
	if n == 0 {
		return fmt.Errorf("no sign-in of user %s to remove", user)
	}
	return nil
}
