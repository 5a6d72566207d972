// Package approve puts a call that a `prompt` rule leaves to a person to
// one: the approval inbox (the calls waiting, approved or denied in the
// inspector or on the command line), the grants an approval leaves, kept
// on the hub or on the store every replica shares, and one call.Asker per
// way of asking: a grant that covers the call (Grant), the client's form
// elicitation (Elicit), the inbox (Wait). Ways chooses among them, with
// the 2026-07-28 input_required round the hub gives it. The Askers reach
// the client session through Client, never the hub's session; the package
// imports the call contract and types/*, never server.
package approve
