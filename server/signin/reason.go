package signin

import (
	"errors"
	"strconv"
	"strings"

	"golang.org/x/oauth2"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
)

// maxReason caps the reason a sign-in's page gives for a failure.
const maxReason = 400

// briefly is why a sign-in failed, for its page: err's text without what
// an endpoint answered (a token endpoint's or registration endpoint's
// body: the endpoints are named by the upstream's metadata and may be
// services of the hub's own network, which the page must not show to
// whoever signs in), its status and OAuth error code kept; one line,
// capped. The log keeps err whole.
func briefly(err error) string {
	msg := err.Error()
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		brief := "the token endpoint answered"
		if re.Response != nil {
			brief += " " + re.Response.Status
		}
		if re.ErrorCode != "" {
			brief = "the token endpoint said " + re.ErrorCode
			if re.ErrorDescription != "" {
				brief += ": " + re.ErrorDescription
			}
		}
		msg = strings.Replace(msg, re.Error(), brief, 1)
	}
	var ae *auth.AnswerError
	if errors.As(err, &ae) {
		msg = strings.Replace(msg, ae.Error(), "HTTP status "+strconv.Itoa(ae.Status), 1)
	}
	msg, _, _ = strings.Cut(msg, "\n")
	return clip.Marked(msg, maxReason, "…")
}
