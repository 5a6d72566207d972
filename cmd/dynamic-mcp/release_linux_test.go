package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
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

// releaseMemory also registers the program file's read-only mappings
// with userfaultfd (write-protect, async), which keeps the kernel from
// mapping 64 KB around each fault there: smaps shows the mapping's
// VmFlags with "uw". Where the kernel refuses (before Linux 6.7, a seccomp
// filter), nothing changes and the test is skipped.
func TestReleaseMemoryStopsFaultAround(t *testing.T) {
	releaseMemory()
	if !stopFaultAround(toDrop()) {
		t.Skip("userfaultfd write-protect (async) refused here")
	}
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	code := false // in the program file's executable mapping
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			code = len(f) >= 6 && f[5] == exe && f[1] == "r-xp"
			continue
		}
		if code && len(f) > 0 && f[0] == "VmFlags:" {
			if !slices.Contains(f, "uw") {
				t.Fatalf("the program file's code is not registered: %s", line)
			}
			return
		}
	}
	t.Fatal("no executable mapping of the program file in smaps")
}

// A position-independent build (what distributions package) keeps working
// after releaseMemory: the loader wrote its relocations into read-only
// pages (RELRO), which must not be dropped back to the file's bytes. A
// small program of releaseFiles and pieMain is built with
// -buildmode=pie (an overlay puts them in a package of their own), calls
// releaseMemory, then goes on using what the relocations point at; with
// the RELRO pages dropped it dies of SIGSEGV. (Building this package's
// whole test binary as a PIE took minutes of the suite.)
func TestReleaseMemoryKeepsAPIEBuildWorking(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pkg := filepath.Join(here, "piecheck") // in no tree: only in the overlay
	main, overlay := filepath.Join(dir, "main.go"), filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(main, []byte(pieMain), 0o600); err != nil {
		t.Fatal(err)
	}
	replace := map[string]string{filepath.Join(pkg, "main.go"): main}
	for _, f := range releaseFiles {
		replace[filepath.Join(pkg, f)] = filepath.Join(here, f)
	}
	o, _ := json.Marshal(map[string]map[string]string{"Replace": replace})
	if err := os.WriteFile(overlay, o, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "pie")
	build := exec.Command("go", "build", "-overlay", overlay, "-buildmode=pie", "-o", bin, pkg)
	var out bytes.Buffer
	build.Stdout, build.Stderr = &out, &out
	// Started before t.Parallel: the build runs while the package's serial
	// tests do (a parallel test resumes only once they all have ended),
	// not as one of them.
	if err := build.Start(); err != nil {
		t.Fatalf("go build -buildmode=pie: %v", err)
	}
	t.Parallel()
	if err := build.Wait(); err != nil {
		t.Fatalf("go build -buildmode=pie: %v\n%s", err, out.Bytes())
	}
	if out, err := exec.Command(bin).CombinedOutput(); err != nil || string(out) != "42!!\n" {
		t.Fatalf("the PIE build after releaseMemory: %v\n%s", err, out)
	}
}

// releaseFiles are the files of releaseMemory and what it calls: the PIE
// program is built of them and pieMain.
var releaseFiles = []string{"release_linux.go", "faultaround_linux.go"}

// pieMain is the PIE program's main: interface tables and function values
// live in the relocated pages, and formatting and a map of funcs go
// through them.
const pieMain = `package main

import (
	"fmt"
	"strconv"
	"strings"
)

func main() {
	releaseMemory()
	fs := map[string]func(int) string{"itoa": strconv.Itoa}
	fmt.Println(fs["itoa"](42) + strings.Repeat("!", 2))
}
`

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

// Of the files' mappings, releaseMemory drops only the read-only ones
// that hold no page of the process's own: not one with a page copied on
// write (a PIE's or a library's relocated RELRO), resident or swapped out
// (dropped, either would read back as the file's unrelocated bytes), not
// a writable one, not one of no file; another file's (libc's, with cgo)
// as the program file's.
func TestReleaseMemoryDropsOnlyTheFilesOwnPages(t *testing.T) {
	const exe = "/opt/dynamic-mcp"
	mapping := func(r, perms, file, anonymous, swap string) string {
		return r + " " + perms + " 00000000 fd:00 1234   " + file + "\nRss: 8 kB\nAnonymous: " + anonymous +
			" kB\nSwap: " + swap + " kB\nVmFlags: rd mr mw me\n"
	}
	smaps := mapping("1000-2000", "r-xp", exe, "0", "0") + // code: dropped
		mapping("2000-3000", "r--p", exe, "4", "0") + // RELRO, relocated: kept
		mapping("3000-4000", "r--p", exe, "0", "4") + // RELRO, relocated and swapped out: kept
		mapping("4000-5000", "rw-p", exe, "0", "0") + // data: kept
		mapping("5000-6000", "r--p", "/lib/other.so", "0", "0") + // another file: dropped
		mapping("6000-7000", "r--p", exe, "0", "0") + // constants: dropped
		mapping("7000-8000", "r--p", "[vvar]", "0", "0") // no file: kept
	found, err := droppable(strings.NewReader(smaps))
	if err != nil {
		t.Fatal(err)
	}
	want := []fileMapping{{[2]uint64{0x1000, 0x2000}, exe}, {[2]uint64{0x5000, 0x6000}, "/lib/other.so"}, {[2]uint64{0x6000, 0x7000}, exe}}
	if !slices.Equal(found, want) {
		t.Fatalf("droppable %v, want %v", found, want)
	}
	// The program file's at once; another file's once it was there at the
	// last look too (a library being loaded is not yet settled).
	drop, seen := settled(found, exe, nil)
	if want := [][2]uint64{{0x1000, 0x2000}, {0x6000, 0x7000}}; !slices.Equal(drop, want) {
		t.Fatalf("first look dropped %x, want %x", drop, want)
	}
	if drop, _ = settled(found, exe, seen); !slices.Equal(drop, [][2]uint64{{0x1000, 0x2000}, {0x5000, 0x6000}, {0x6000, 0x7000}}) {
		t.Fatalf("second look dropped %x", drop)
	}
}

// processResident reads the resident size the kernel reports: the second
// field of /proc/self/statm, in pages (within a megabyte: the test's own
// reading moves it).
func TestProcessResidentIsStatmsSecondField(t *testing.T) {
	got := processResident()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip(err)
	}
	pages, err := strconv.ParseUint(strings.Fields(string(b))[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	want := pages * uint64(os.Getpagesize())
	if got == 0 || max(got, want)-min(got, want) > 1<<20 {
		t.Fatalf("processResident() = %d, statm says %d", got, want)
	}
}

// The libraries the loader mapped before the program ran (with cgo, the C
// library) are dropped by the start's release when serve took its first
// look (noteMappings) at its start; without that look, only at the next
// release, as a library another thread dlopens is. Skipped where the
// test binary maps no read-only page of another file.
func TestReleaseMemoryDropsTheLoadersLibrariesAtTheFirstRelease(t *testing.T) {
	exe, _ := os.Executable()
	found, err := fileMappings()
	if err != nil {
		t.Fatal(err)
	}
	var lib [2]uint64
	for _, m := range found {
		if m.path != exe {
			lib = m.r
			break
		}
	}
	if lib == ([2]uint64{}) {
		t.Skip("no read-only mapping of another file than the program (CGO_ENABLED=0?)")
	}
	lastLook.Lock()
	saved := lastLook.seen
	lastLook.seen = nil
	lastLook.Unlock()
	t.Cleanup(func() {
		lastLook.Lock()
		lastLook.seen = saved
		lastLook.Unlock()
	})
	if drop := toDrop(); slices.Contains(drop, lib) {
		t.Fatalf("a first look without noteMappings drops %x", lib)
	}
	lastLook.Lock()
	lastLook.seen = nil
	lastLook.Unlock()
	noteMappings()
	if drop := toDrop(); !slices.Contains(drop, lib) {
		t.Fatalf("the first release after noteMappings keeps %x: drops %x", lib, drop)
	}
}

// A read-only file mapping that appears after the first release (a
// library dlopened later) is registered when a later release drops it:
// the registration is not once.
func TestStopFaultAroundRegistersAtEachRelease(t *testing.T) {
	releaseMemory() // the first release, the descriptor opened
	if !stopFaultAround(toDrop()) {
		t.Skip("userfaultfd write-protect (async) refused here")
	}
	f, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := unix.Mmap(int(f.Fd()), 0, 4*os.Getpagesize(), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	start := uint64(uintptr(unsafe.Pointer(&b[0])))
	if !stopFaultAround([][2]uint64{{start, start + uint64(len(b))}}) {
		t.Fatal("the later mapping was not registered")
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	ours := false
	for line := range strings.SplitSeq(string(smaps), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			ours = strings.HasPrefix(f[0], strconv.FormatUint(start, 16)+"-")
			continue
		}
		if ours && len(f) > 0 && f[0] == "VmFlags:" {
			if !slices.Contains(f, "uw") {
				t.Fatalf("the later mapping is not registered: %s", line)
			}
			return
		}
	}
	t.Fatal("the later mapping is not in smaps")
}
