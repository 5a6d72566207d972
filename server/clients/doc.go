// Package clients is what the hub knows of the clients it serves: what a
// client declares of itself (in initialize, or in each 2026-07-28
// request's _meta), kept bounded; the answers to the handshake and the
// protocol's own methods; which mode and view a client is shown (mode:
// auto, profiles, clients: rules); and the tools/list a clients: rule
// shapes for it. It knows the session only as the small interface the
// handshake needs (Session), and the view not at all.
package clients
