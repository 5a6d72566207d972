//go:build !linux

package jsonrpc

import "syscall"

func rawPipe(any) syscall.RawConn { return nil }

// TryWrite writes nothing: only Linux pipes are tried.
func (s *lineStream) TryWrite([]byte) (bool, error) { return false, nil }
