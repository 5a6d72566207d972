package filelock

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain runs the test binary as the child of TestDeadHolderDoesNotBlock
// when it is asked to: it takes the lock, says so, and waits to be killed.
func TestMain(m *testing.M) {
	if path := os.Getenv("FILELOCK_TEST_HOLD"); path != "" {
		if _, err := Acquire(context.Background(), path, 10*time.Second); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("locked\n")
		select {}
	}
	os.Exit(m.Run())
}

// Two handles of one file exclude each other, even in one process (flock
// belongs to the open file), and the second gets the lock once the first
// lets go.
func TestTwoHandlesExclude(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	f1, f2 := open(), open()
	a, err := File(t.Context(), f1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := File(t.Context(), f2, 0); !errors.Is(err, ErrTimeout) {
		t.Fatalf("second handle while the first holds it: %v, want ErrTimeout", err)
	}
	got := make(chan error, 1)
	go func() {
		b, err := File(t.Context(), f2, 10*time.Second)
		if err == nil {
			err = b.Unlock()
		}
		got <- err
	}()
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiting handle after the first let go: %v", err)
	}
	if err := a.Unlock(); err != nil {
		t.Fatalf("second Unlock: %v", err)
	}
}

// Callers of Acquire in one process take turns by path before the file
// lock, so they exclude each other even where the file lock belongs to
// the process (NFS); the turn is given back by Unlock.
func TestAcquireTakesTurnsInProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	a, err := Acquire(t.Context(), path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(cwd, path) // the same file by another name
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(t.Context(), rel, 0); !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "in this process") {
		t.Fatalf("second Acquire while the first holds it: %v, want ErrTimeout in this process", err)
	}
	got := make(chan error, 1)
	go func() {
		b, err := Acquire(t.Context(), path, 10*time.Second)
		if err == nil {
			err = b.Unlock()
		}
		got <- err
	}()
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiting Acquire after the first let go: %v", err)
	}
}

// A lock held for all of the wait is a clear error, not a wedge; so is a
// context that ends.
func TestWaitIsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	a, err := Acquire(t.Context(), path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Unlock()
	start := time.Now()
	_, err = Acquire(t.Context(), path, 100*time.Millisecond)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d > time.Minute { // bounds a wedge, not a timing
		t.Fatalf("gave up after %s", d)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Acquire(ctx, path, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

// A process that dies holding the lock leaves a file, not a lock: the
// kernel let go when the process died.
func TestDeadHolderDoesNotBlock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FILELOCK_TEST_HOLD="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "locked\n" {
		cmd.Process.Kill()
		t.Fatalf("child: %q, %v", line, err)
	}
	if _, err := Acquire(t.Context(), path, 0); !errors.Is(err, ErrTimeout) {
		t.Fatalf("locked while the child held it: %v", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	l, err := Acquire(t.Context(), path, 5*time.Second)
	if err != nil {
		t.Fatalf("after the holder died: %v", err)
	}
	l.Unlock()
}
