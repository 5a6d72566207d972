// Package audit is the audit trail: one JSON line per tools/call,
// prompts/get and resources/read (Record, its strings and arguments
// bounded), written by one goroutine from a bounded queue (Trail), with
// audit.required failing calls closed while it cannot write; and its
// stages of the chain (Stage, which admits a call and builds its record,
// and Writer, which completes it once the request is answered and hands
// it to the writer). trail.go is the trail as a request meets it, its one
// file on a call's path; file.go the file and its writer, a goroutine of
// its own, off that path. It imports the call contract and types/*,
// never the hub.
package audit
