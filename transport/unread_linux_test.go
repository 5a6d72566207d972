package transport

import (
	"bufio"
	"testing"
	"time"
)

// Unread counts what the child has not read of its stdin: all of it while
// the child reads nothing, none once it has read it.
func TestProcessUnread(t *testing.T) {
	// sleep never reads its stdin; head -n 1 reads a line and echoes it.
	idle, err := StartProcess(ProcessSpec{Command: "sleep", Args: []string{"600"}, Grace: 100 * time.Millisecond}, discard)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if _, err := idle.Stdin().Write([]byte("{\"jsonrpc\":\"2.0\"}\n")); err != nil {
		t.Fatal(err)
	}
	if n, ok := idle.Unread(); !ok || n != 18 {
		t.Errorf("a child that reads nothing: Unread = %d, %v; want 18, true", n, ok)
	}

	reader, err := StartProcess(ProcessSpec{Command: "head", Args: []string{"-n", "1"}, Grace: 100 * time.Millisecond}, discard)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if _, err := reader.Stdin().Write([]byte("line\n")); err != nil {
		t.Fatal(err)
	}
	// head has read the line once it has echoed it.
	if line, err := bufio.NewReader(reader.Stdout()).ReadString('\n'); err != nil || line != "line\n" {
		t.Fatalf("head echoed %q, %v", line, err)
	}
	if n, ok := reader.Unread(); !ok || n != 0 {
		t.Errorf("a child that read it all: Unread = %d, %v; want 0, true", n, ok)
	}
}
