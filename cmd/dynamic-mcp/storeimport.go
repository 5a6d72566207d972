package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

const storeUsage = "usage: dynamic-mcp store import -c FILE [--from STATE_DIR] [--dry-run] [--force]"

// storeCmd works on the config's shared store (store: postgres://...):
// import copies a state directory into it.
func storeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "import" {
		return helpOrUsage(args, stdout, storeUsage)
	}
	var c common
	var o importOptions
	fs := flag.NewFlagSet("store import", flag.ContinueOnError)
	c.register(fs)
	fs.StringVar(&o.from, "from", "", "the state `directory` to copy (default: the config's state_dir)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "say what would be copied, and write nothing")
	fs.BoolVar(&o.force, "force", false, "replace what the store holds that is newer than the state directory's")
	if err := c.parse(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError{storeUsage}
	}
	// The config is scanned, not loaded: its ${secret:NAME} are to be
	// read from the store, which may not hold them yet.
	stateDir, uses, err := config.ScanSecrets(c.config)
	if err != nil {
		return err
	}
	for name, at := range uses {
		if slices.Equal(at, []string{"store"}) {
			o.storeOwn = append(o.storeOwn, name)
		}
	}
	url, err := configs.ScanStore(c.config, stateDir)
	if err != nil {
		return err
	}
	if url == "" {
		return fmt.Errorf("%s has no store: to import into (store: postgres://...)", c.config)
	}
	if o.from == "" {
		o.from = stateDir
	}
	if o.from, err = filepath.Abs(o.from); err != nil {
		return err
	}
	if fi, err := os.Stat(o.from); err != nil || !fi.IsDir() {
		return fmt.Errorf("no state directory at %s", o.from)
	}
	db, err := pgstore.Open(ctx, url)
	if err != nil {
		return err
	}
	defer db.Close()
	return storeImport(ctx, db, o, stdout)
}

// importOptions are store import's flags.
type importOptions struct {
	from          string
	dryRun, force bool
	// storeOwn are the secrets only store: itself uses (the database's
	// password): they stay in the state directory, which is where store:
	// reads them from, since the store cannot hold what opens it.
	storeOwn []string
}

// stateSnapshot is what a state directory holds that the store keeps.
type stateSnapshot struct {
	tokens  *auth.Store
	signIns []*auth.Record
	users   []auth.UserRecord
	secrets map[string]vault.Entry
}

// readState reads the state directory dir with the vault v.
func readState(dir string, v *vault.Vault) (*stateSnapshot, error) {
	s := &stateSnapshot{tokens: auth.NewStore((&config.Config{StateDir: dir}).TokenDir())}
	s.tokens.UseVault(v)
	var err error
	if s.signIns, err = s.tokens.List(); err != nil {
		return nil, err
	}
	if s.users, err = s.tokens.ListUsers(); err != nil {
		return nil, err
	}
	if s.secrets, err = vault.NewSecrets(dir, v).Entries(); err != nil {
		return nil, err
	}
	return s, nil
}

// openState reads dir with the key it was sealed with: its own (key file
// or keychain item), else DYNAMIC_MCP_VAULT_KEY's (env).
func openState(ctx context.Context, dir string, env *vault.Vault) (*stateSnapshot, error) {
	var errs []error
	if own, err := vault.Find(ctx, vault.Options{Dir: dir}); err == nil {
		s, err := readState(dir, own)
		if err == nil {
			return s, nil
		}
		errs = append(errs, err)
	} else if !errors.Is(err, vault.ErrNoKey) {
		errs = append(errs, err)
	}
	s, err := readState(dir, env)
	if err == nil {
		return s, nil
	}
	errs = append(errs, err)
	return nil, fmt.Errorf("the state directory %s does not open with its own key nor %s's: %w", dir, vault.EnvKey, errors.Join(errs...))
}

// storeImport copies o.from's sign-ins (the shared ones and the users'
// own), secrets and pins into db, and says what it did with each.
func storeImport(ctx context.Context, db shared.Store, o importOptions, stdout io.Writer) error {
	v, err := vault.OpenShared(ctx, db, vault.Options{Dir: o.from})
	if err != nil {
		return err
	}
	src, err := openState(ctx, o.from, v)
	if err != nil {
		return err
	}
	if o.dryRun {
		fmt.Fprintln(stdout, "dry run: what would be done; nothing is written")
	}
	counts := map[shared.Outcome]int{}
	say := func(what string, out shared.Outcome) {
		counts[out]++
		fmt.Fprintf(stdout, "%s: %s\n", what, out)
	}
	dst := auth.NewSharedStore(filepath.Join(o.from, "oauth-servers"), db)
	for _, r := range src.signIns {
		out, err := dst.Import(r, o.force, o.dryRun)
		if err != nil {
			return fmt.Errorf("sign-in %s: %w", r.Server, err)
		}
		say("sign-in "+r.Server, out)
	}
	for _, u := range src.users {
		out, err := dst.ForUserHash(u.Hash).Import(u.Record, o.force, o.dryRun)
		if err != nil {
			return fmt.Errorf("sign-in %s of %s: %w", u.Server, userName(u), err)
		}
		say("sign-in "+u.Server+" of "+userName(u), out)
	}
	for _, name := range slices.Sorted(slices.Values(o.storeOwn)) {
		if _, ok := src.secrets[name]; ok {
			delete(src.secrets, name)
			fmt.Fprintf(stdout, "secret %s: left in the state directory (store: itself uses it)\n", name)
		}
	}
	secrets, err := vault.NewSharedSecrets(db, v).Import(src.secrets, o.force, o.dryRun)
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	for _, name := range slices.Sorted(maps.Keys(secrets)) {
		say("secret "+name, secrets[name])
	}
	pins := upstream.NewPins(filepath.Join(o.from, "pins"))
	pins.UseSharedStore(db)
	pinned, err := pins.Import(upstream.NewPins(filepath.Join(o.from, "pins")), o.force, o.dryRun)
	if err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	for _, server := range slices.Sorted(maps.Keys(pinned)) {
		say("tool pins of "+server, pinned[server])
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	if total == 0 {
		fmt.Fprintf(stdout, "nothing to import in %s\n", o.from)
	}
	fmt.Fprintf(stdout, "%d copied, %d updated, %d unchanged, %d skipped as newer in the store, %d replaced\n",
		counts[shared.Copied], counts[shared.Updated], counts[shared.Unchanged], counts[shared.KeptNewer], counts[shared.Replaced])
	if counts[shared.KeptNewer] > 0 {
		fmt.Fprintln(stdout, "what the store holds newer was kept: --force replaces it with the state directory's")
	}
	fmt.Fprintf(stdout, "the files in %s are left as they were (nothing is deleted); approval grants, pending approvals and rate counters are not kept in a state directory, so there are none to import\n", o.from)
	return nil
}
