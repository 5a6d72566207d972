package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// releaseMemory drops the process's mappings of the program file's pages
// that start-up touched: the resident pages of the file fall to a
// fraction (those read again at once come back).
func TestReleaseMemoryDropsTheBinarysPages(t *testing.T) {
	before := fileResidentKB(t)
	releaseMemory()
	after := fileResidentKB(t)
	if after > before/2 {
		t.Fatalf("resident pages of the program file: %d kB before, %d kB after", before, after)
	}
}

// fileResidentKB is the resident size of the process's file-backed
// pages: Rss less Anonymous in /proc/self/smaps_rollup.
func fileResidentKB(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		t.Skip(err)
	}
	kB := map[string]int{}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[2] == "kB" {
			kB[strings.TrimSuffix(f[0], ":")], _ = strconv.Atoi(f[1])
		}
	}
	return kB["Rss"] - kB["Anonymous"]
}
