//go:build !race

package fakeupstream

// raceBuilt: see race.go.
const raceBuilt = false
