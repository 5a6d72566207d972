package inspect

import (
	"net/http"
	"sync/atomic"
)

// The login dialog says where the token is, which depends on how the hub
// was started (serve --ui in a client's entry: that client's MCP log;
// serve --http without a terminal: a file; $DYNAMIC_MCP_UI_TOKEN): the
// one who started it sets it (SetTokenHint), and the page reads it from
// Prefix+"token-hint", which needs no token (it is what the dialog shows
// before there is one) and says only where to look, never the token.

// tokenHint is the text the page reads.
type tokenHint struct{ text atomic.Pointer[string] }

// SetTokenHint sets what the login dialog says of where the token is:
// one or two plain sentences.
func (i *Inspector) SetTokenHint(text string) { i.hint.text.Store(&text) }

// serveTokenHint answers the page's question (text/plain, empty for no
// hint: the page then says what it says by default).
func (i *Inspector) serveTokenHint(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if t := i.hint.text.Load(); t != nil {
		_, _ = w.Write([]byte(*t))
	}
}
