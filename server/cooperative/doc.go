// Package cooperative serves the cooperative policy tools (checkIntent,
// requestPermission, reportAction, getPolicy), which let an agent take
// part in the hub's security: ask before it acts whether an action will be
// allowed, ask a person for permission, report what it did, and read the
// rules. The tools, their input schemas, answers and rate limits follow
// ClawDefender's MCP server (the project's seed 003, "ClawDefender MCP
// Server"), with keys of the hub's own that name the exact call meant.
//
// The package decides nothing itself: every answer comes from a Host, the
// hub, which decides with the very code that guards real calls (the
// client's view with its deny-lists and pins, the policy, the grants) and
// asks a person through the very path a prompt rule's call takes. The
// package reads the arguments, keeps the tools' rate limits per caller
// through the Host, and words the answers.
package cooperative
