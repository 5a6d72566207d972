//go:build race

package fakeupstream

// raceBuilt: this package, and so the tests that import it, are built with
// the race detector; Build builds the fake with it too.
const raceBuilt = true
