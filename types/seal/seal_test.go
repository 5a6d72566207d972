package seal

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"testing"
	"time"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, KeySize) }

func mustNew(t *testing.T, f Format, keys ...[]byte) *Sealer {
	t.Helper()
	s, err := New(keys, f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// formats are every layout a caller uses, and one with all options.
var formats = map[string]Format{
	"session id":   {KeyID: true, Text: true},
	"requestState": {Expiry: true, Text: true},
	"vault":        {Magic: "dmv1"},
	"all":          {Magic: "x1", KeyID: true, Expiry: true, Text: true},
}

func TestRoundTrip(t *testing.T) {
	for name, f := range formats {
		t.Run(name, func(t *testing.T) {
			s := mustNew(t, f, key(1))
			for _, plain := range [][]byte{nil, []byte("x"), bytes.Repeat([]byte("abc"), 1000)} {
				sealed, err := s.Seal(plain, []byte("ad"), time.Time{})
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Contains(sealed, []byte("abcabc")) {
					t.Fatal("the plaintext shows in the sealed value")
				}
				if _, err := base64.RawURLEncoding.DecodeString(string(sealed)); f.Text && err != nil {
					t.Fatalf("text value %q: %v", sealed, err)
				}
				got, k, err := s.Open(sealed, []byte("ad"), time.Now())
				if err != nil || k != 0 || !bytes.Equal(got, plain) {
					t.Fatalf("Open = %q, %d, %v; want %q", got, k, err, plain)
				}
			}
			a, _ := s.Seal([]byte("same"), nil, time.Time{})
			b, _ := s.Seal([]byte("same"), nil, time.Time{})
			if bytes.Equal(a, b) {
				t.Fatal("two seals of one value are equal: the nonce is not fresh")
			}
		})
	}
}

func TestRotation(t *testing.T) {
	for name, f := range formats {
		t.Run(name, func(t *testing.T) {
			old := mustNew(t, f, key(1))
			sealed, err := old.Seal([]byte("v"), []byte("ad"), time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			rotated := mustNew(t, f, key(2), key(1)) // the new key first, the old one kept
			got, k, err := rotated.Open(sealed, []byte("ad"), time.Now())
			if err != nil || k != 1 || string(got) != "v" {
				t.Fatalf("Open of the old key's value = %q, %d, %v; want v under key 1", got, k, err)
			}
			fresh, _ := rotated.Seal([]byte("w"), []byte("ad"), time.Time{})
			if _, _, err := old.Open(fresh, []byte("ad"), time.Now()); !errors.Is(err, ErrForged) {
				t.Fatalf("the old list opened a value of the new key: %v", err)
			}
			dropped := mustNew(t, f, key(2))
			if _, _, err := dropped.Open(sealed, []byte("ad"), time.Now()); !errors.Is(err, ErrForged) {
				t.Fatalf("a dropped key's value opened: %v", err)
			}
		})
	}
}

func TestExpiry(t *testing.T) {
	s := mustNew(t, formats["requestState"], key(1))
	now := time.Now()
	sealed, err := s.Seal([]byte("v"), nil, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := s.Open(sealed, nil, now.Add(time.Minute-time.Millisecond)); err != nil || string(got) != "v" {
		t.Fatalf("before its expiry: %q, %v", got, err)
	}
	if _, _, err := s.Open(sealed, nil, now.Add(time.Minute)); !errors.Is(err, ErrExpired) {
		t.Fatalf("at its expiry: %v, want ErrExpired", err)
	}
	never, _ := s.Seal([]byte("v"), nil, time.Time{})
	if _, _, err := s.Open(never, nil, now.AddDate(100, 0, 0)); err != nil {
		t.Fatalf("a value without expiry expired: %v", err)
	}
	if _, err := mustNew(t, formats["vault"], key(1)).Seal([]byte("v"), nil, now); err == nil {
		t.Fatal("a format without expiry took one")
	}
}

func TestTamperAndWrongKey(t *testing.T) {
	for name, f := range formats {
		t.Run(name, func(t *testing.T) {
			s := mustNew(t, f, key(1))
			sealed, _ := s.Seal([]byte("value"), []byte("alice"), time.Time{})
			raw := sealed
			if f.Text {
				raw, _ = base64.RawURLEncoding.DecodeString(string(sealed))
			}
			for i := len(f.Magic); i < len(raw); i++ { // every byte after the magic
				bad := bytes.Clone(raw)
				bad[i] ^= 0x01
				if f.Text {
					bad = []byte(base64.RawURLEncoding.EncodeToString(bad))
				}
				if _, _, err := s.Open(bad, []byte("alice"), time.Now()); !errors.Is(err, ErrForged) {
					t.Fatalf("byte %d altered: %v, want ErrForged", i, err)
				}
			}
			if _, _, err := s.Open(sealed, []byte("bob"), time.Now()); !errors.Is(err, ErrForged) {
				t.Fatalf("other associated data: %v, want ErrForged", err)
			}
			if _, _, err := mustNew(t, f, key(9)).Open(sealed, []byte("alice"), time.Now()); !errors.Is(err, ErrForged) {
				t.Fatalf("wrong key: %v, want ErrForged", err)
			}
			for _, junk := range []string{"", "x", "dmv1", "!!not base64!!", string(sealed[:len(sealed)/3])} {
				_, _, err := s.Open([]byte(junk), []byte("alice"), time.Now())
				var e *Error
				if !errors.As(err, &e) || !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrForged) {
					t.Fatalf("Open(%q) = %v, want ErrMalformed or ErrForged", junk, err)
				}
			}
		})
	}
}

func TestKeys(t *testing.T) {
	if _, err := New(nil, Format{}); err == nil {
		t.Fatal("no key: no error")
	}
	if _, err := New([][]byte{key(1), make([]byte, 16)}, Format{}); err == nil {
		t.Fatal("a 16-byte key: no error")
	}
}

// TestOldValues opens values sealed by the code each caller had before
// this package (kept here as the bytes it wrote): a session id and a
// sign-in row of server/mcphttp's sealer, and a record of types/vault, as
// they are in users' state dirs, databases and clients.
func TestOldValues(t *testing.T) {
	vaultRecord, _ := hex.DecodeString("646d7631ea9aa6ed772ab91e4ee0e2f07f9cfa74137d65b5bfc1a6adc28b2b9614163421ee0d256cfb57642272")
	for _, c := range []struct {
		name   string
		format Format
		keys   [][]byte
		sealed []byte
		ad     string
		plain  string
	}{
		{"session id", formats["session id"], [][]byte{key(9), key(1)},
			[]byte("ctF2msEZmY0nGQY_5xtuXJfVQNxn275WT6C5WGuinVMS3cd1amkpHLun0d43ElG0GNunQyHwQQ"),
			"dynamic-mcp session\x00alice", `{"n":"abc","e":4102444800}`},
		{"sign-in row", formats["session id"], [][]byte{key(2)},
			[]byte("dZs_jNXpf4yxrF03sZw_CKegKti-zHf1MRg3BuLXdseIobWveG5S"),
			"dynamic-mcp sign-in\x00k", "signin row"},
		{"vault record", formats["vault"], [][]byte{key(3)}, vaultRecord, "signin/github", `{"token":"x"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := mustNew(t, c.format, c.keys...)
			got, _, err := s.Open(c.sealed, []byte(c.ad), time.Now())
			if err != nil || string(got) != c.plain {
				t.Fatalf("Open = %q, %v; want %q", got, err, c.plain)
			}
		})
	}
}
