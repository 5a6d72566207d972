// Package testkeys hands tests RSA keys made ahead of time: making a
// 2048-bit key costs from a tenth of a second to seconds of CPU under
// -race, a prime search of random length, where a test needs only a
// key that signs (and, at times, another that is not it).
//
// The keys are test data, published: nothing but a test trusts them.
package testkeys

import (
	"crypto/rsa"
	"crypto/x509"
	_ "embed"
	"encoding/pem"
	"fmt"
	"sync"
	"sync/atomic"
)

//go:embed rsa.pem
var rsaPEM []byte

// N is how many different keys there are: Next gives each again after N
// calls.
const N = 8

var keys = sync.OnceValue(func() []*rsa.PrivateKey {
	var out []*rsa.PrivateKey
	for rest := rsaPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		k, err := x509.ParsePKCS1PrivateKey(b.Bytes)
		if err != nil {
			panic(fmt.Sprintf("testkeys: key %d: %v", len(out), err))
		}
		out = append(out, k)
	}
	if len(out) != N {
		panic(fmt.Sprintf("testkeys: %d keys in rsa.pem, want %d", len(out), N))
	}
	return out
})

var next atomic.Uint64

// Next returns a 2048-bit RSA key different from the N-1 that the calls
// before it returned: a test that takes fewer than N keys (and runs apart
// from tests that take them at the same time) has keys all different.
func Next() *rsa.PrivateKey {
	return keys()[(next.Add(1)-1)%N]
}
