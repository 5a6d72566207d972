// Package audit is the audit trail: one JSON line per tools/call,
// prompts/get and resources/read (Record, its strings and arguments
// bounded), written by one goroutine from a bounded queue (Trail), with
// audit.required failing calls closed while it cannot write; and its
// stage of the call chain (Stage), which admits a call and builds its
// record. It imports the call contract and types/*, never the hub.
package audit
