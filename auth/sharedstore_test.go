package auth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/auth/authtest"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// replica is one hub's token store on the database at url, with a state
// directory of its own (the vault's key comes from DYNAMIC_MCP_VAULT_KEY,
// set by TestMain, as on every replica).
func replica(t *testing.T, url string) *Store {
	t.Helper()
	db, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return NewSharedStore(filepath.Join(t.TempDir(), "oauth-servers"), db)
}

// A sign-in saved by one replica is read by another, sealed in the
// database exactly as in a .sealed file (and nothing is written to
// either replica's state directory); a logout on one is seen by the other.
func TestSharedStoreSignInSeenByEveryReplica(t *testing.T) {
	url := pgtest.Start(t)
	a := authtest.NewServer(t)
	rec, err := login(t, a, LoginOptions{})
	if err != nil {
		t.Fatal(err)
	}
	one, two := replica(t, url), replica(t, url)
	if _, err := two.Load("srv", a.URL+"/mcp"); !errors.Is(err, ErrNoToken) {
		t.Fatalf("before the sign-in: %v", err)
	}
	if err := one.Save(rec); err != nil {
		t.Fatal(err)
	}
	got, err := two.Load("srv", a.URL+"/mcp")
	if err != nil || got.AccessToken != rec.AccessToken || got.RefreshToken != rec.RefreshToken {
		t.Fatalf("the other replica reads %v, %v", got, err)
	}
	if _, err := two.Load("srv", "https://elsewhere.example/mcp"); !errors.Is(err, ErrNoToken) {
		t.Fatalf("a sign-in for another URL was taken: %v", err)
	}
	db, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	raw, err := db.Get(t.Context(), tokenNS, "srv")
	if err != nil || !strings.HasPrefix(string(raw), "dmv1") || strings.Contains(string(raw), rec.AccessToken) {
		t.Fatalf("the database holds %q, %v: want a sealed record", raw, err)
	}
	for _, s := range []*Store{one, two} {
		if entries, _ := os.ReadDir(s.Dir()); len(entries) != 0 {
			t.Errorf("files in a replica's token directory: %v", entries)
		}
	}
	if list, err := two.List(); err != nil || len(list) != 1 || list[0].Server != "srv" {
		t.Fatalf("list: %v, %v", list, err)
	}
	if err := two.Delete("srv"); err != nil {
		t.Fatal(err)
	}
	if _, err := one.Load("srv", a.URL+"/mcp"); !errors.Is(err, ErrNoToken) {
		t.Fatalf("after the logout on the other replica: %v", err)
	}
}

// Three hubs on one database, two of them other processes, call a
// resource against an authorization server that rotates refresh tokens,
// lets access tokens lapse in 2 s and revokes the grant when a used
// refresh token comes again: the renewals take turns under the database's
// advisory lock and re-read the record, so each token is renewed once,
// the grant stands and every call is answered.
func TestSharedStoreRenewalSingleFlightAcrossReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for seconds")
	}
	t.Parallel() // it waits out its tokens' lives: others run meanwhile
	const runFor = 6 * time.Second
	url := pgtest.Start(t)
	a := authtest.NewServer(t)
	a.AccessTTL, a.RevokeOnReplay = 2*time.Second, true
	rec, err := login(t, a, LoginOptions{})
	if err != nil {
		t.Fatal(err)
	}
	store := replica(t, url)
	if err := store.Save(rec); err != nil {
		t.Fatal(err)
	}
	ok, refreshed, outs := renewInProcesses(t, a, store, a.URL+"/mcp", runFor, "replica",
		"AUTH_TEST_CALLER_STORE="+filepath.Join(t.TempDir(), "oauth-servers"), "AUTH_TEST_CALLER_DB="+url)
	// A 2 s token is renewed in the second half of its life: about once a
	// second for the three of them together, not once per replica (about
	// three a second). A busy machine delivers a token late in its life,
	// which renews sooner: twice the quiet figure is allowed, below what
	// one renewal per replica gives; the replays the authorization server
	// would punish are what shows single flight beyond doubt.
	if most := 2*int(runFor/time.Second) + 1; refreshed < int(runFor/(2*time.Second)) || refreshed > most {
		t.Errorf("%d renewals in %s of 2 s tokens by three replicas; want at most %d", refreshed, runFor, most)
	}
	t.Logf("in-process replica answered %d; %d renewals; processes: %s", ok, refreshed, outs)
}

// A user's own sign-in (auth: per-user) is kept on the database too,
// apart from the shared one and from every other user's, and read by
// that user on any replica.
func TestSharedStorePerUserRecords(t *testing.T) {
	url := pgtest.Start(t)
	one, two := replica(t, url), replica(t, url)
	base := Record{Server: "srv", URL: "https://srv.example/mcp", TokenEndpoint: "https://id.example/token", ClientID: "hub"}
	shared, alice := base, base
	shared.AccessToken, alice.AccessToken = "shared-token", "alice-token"
	if err := one.Save(&shared); err != nil {
		t.Fatal(err)
	}
	if err := one.ForUser("jwt:alice").Save(&alice); err != nil {
		t.Fatal(err)
	}
	if r, err := two.ForUser("jwt:alice").Load("srv", base.URL); err != nil || r.AccessToken != "alice-token" {
		t.Fatalf("alice's own sign-in on another replica: %v, %v", r, err)
	}
	if r, err := two.Load("srv", base.URL); err != nil || r.AccessToken != "shared-token" {
		t.Fatalf("the shared sign-in: %v, %v", r, err)
	}
	if _, err := two.ForUser("jwt:bob").Load("srv", base.URL); !errors.Is(err, ErrNoToken) {
		t.Fatalf("bob has no sign-in of his own: %v", err)
	}
}
