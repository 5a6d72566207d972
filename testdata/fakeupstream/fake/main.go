// Command fake is testdata/fakeupstream as a program of its own, which
// fakeupstream.Build builds for the tests (see there why).
package main

import "github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream"

func main() { fakeupstream.Main() }
