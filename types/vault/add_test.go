package vault

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// Add sets a free name and leaves a taken one as it is, returning what it
// holds; of writers adding one name at once (two processes' handles of
// one file, two replicas of one store), one sets it and every other is
// told that one's value.
func TestSecretsAdd(t *testing.T) {
	key := bytes.Repeat([]byte{9}, KeySize)
	for _, backend := range []string{"file", "store"} {
		t.Run(backend, func(t *testing.T) {
			var open func() *Secrets
			if backend == "file" {
				dir := t.TempDir()
				v, err := New(key, "test")
				if err != nil {
					t.Fatal(err)
				}
				open = func() *Secrets { return NewSecrets(dir, v) }
			} else {
				url := pgtest.Start(t)
				open = func() *Secrets {
					s, _ := openSharedSecrets(t, url, key)
					return s
				}
			}
			a, b := open(), open()
			if held, taken, err := a.Add("TOKEN", "first"); err != nil || taken || held != "" {
				t.Fatalf("Add of a free name = %q, %v, %v", held, taken, err)
			}
			if held, taken, err := b.Add("TOKEN", "second"); err != nil || !taken || held != "first" {
				t.Fatalf("Add of a taken name = %q, %v, %v", held, taken, err)
			}
			if m, err := a.All(); err != nil || m["TOKEN"] != "first" {
				t.Fatalf("after Add of a taken name the secrets are %v, %v", m, err)
			}

			const writers = 4
			type result struct {
				value, held string
				taken       bool
			}
			results := make([]result, writers)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range writers {
				s := a
				if i%2 == 1 {
					s = b
				}
				wg.Go(func() {
					<-start
					r := result{value: fmt.Sprint("value-", i)}
					var err error
					r.held, r.taken, err = s.Add("RACE", r.value)
					if err != nil {
						t.Error(err)
					}
					results[i] = r
				})
			}
			close(start)
			wg.Wait()
			m, err := b.All()
			if err != nil {
				t.Fatal(err)
			}
			set := 0
			for _, r := range results {
				if !r.taken {
					set++
					if m["RACE"] != r.value {
						t.Errorf("RACE is %q, not the value of the writer that set it (%q)", m["RACE"], r.value)
					}
				} else if r.held != m["RACE"] {
					t.Errorf("a writer was told RACE holds %q; it holds %q", r.held, m["RACE"])
				}
			}
			if set != 1 {
				t.Errorf("%d writers set RACE, want 1: %+v", set, results)
			}
		})
	}
}

// In a store, Set waits for the lock of the name, which Add holds from
// its look to its write: a Set never lands between the two, where the
// Add would overwrite it.
func TestSharedSetTakesTheNamesLock(t *testing.T) {
	url := pgtest.Start(t)
	s, db := openSharedSecrets(t, url, bytes.Repeat([]byte{9}, KeySize))
	unlock, err := db.Lock(t.Context(), SecretNS, "TOKEN", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	set := make(chan error, 1)
	go func() { set <- s.Set("TOKEN", "x") }()
	// Until the Set is seen waiting for an advisory lock; a Set that
	// returns first did not wait.
	// Polled every 10 ms, not in a tight loop that keeps a core and the
	// database busy on a shared machine.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for waiting := 0; waiting == 0; {
		select {
		case err := <-set:
			t.Fatalf("Set returned (%v) while another held the lock of the name", err)
		case <-tick.C:
		}
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	unlock()
	if err := <-set; err != nil {
		t.Fatal(err)
	}
}
