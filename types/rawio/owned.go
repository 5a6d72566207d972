package rawio

import (
	"os"
	"runtime"
	"sync"
	"weak"
)

// owned is the files Own was given, by a weak pointer: an entry keeps
// its file from no collection, and goes with it.
var owned sync.Map // weak.Pointer[os.File] -> struct{}

// Own marks f as a file whose open file description no other process
// holds (a pipe end this process made, a pipe opened a second time), and
// returns f. Only such a file is read and written with raw system calls:
// O_NONBLOCK belongs to the open file description, and another holder
// of it (a parent that shares an inherited stdin, a bridge that passed
// its stdin and stdout) may make it blocking again at any time (a shell
// before it reads a command, node restoring its stdio at exit); a raw
// read or write of a blocking file sleeps in the kernel unknown to the
// scheduler, and the next collection's stop of the world waits for it,
// with every goroutine of the process.
func Own(f *os.File) *os.File {
	if f == nil {
		return nil
	}
	wp := weak.Make(f)
	if _, loaded := owned.LoadOrStore(wp, struct{}{}); !loaded {
		runtime.AddCleanup(f, func(wp weak.Pointer[os.File]) { owned.Delete(wp) }, wp)
	}
	return f
}

// Owned reports whether Own was given f.
func Owned(f *os.File) bool {
	_, ok := owned.Load(weak.Make(f))
	return ok
}
