package inspect

import (
	"crypto/sha256"
	"encoding/hex"
)

// sessionLabel is how the inspector names a client session: the stdio
// client's "stdio" as it is, any other id as the first 8 hex digits of
// its SHA-256. An HTTP session's id lets whoever holds it address the
// session; the label tells sessions apart on the page and in exports
// without it (issue 20, finding 1).
func sessionLabel(id string) string {
	if id == "" || id == "stdio" {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:4])
}

// labels are the labels of the sessions whose traffic is recorded, by
// id, so that a session's id is hashed once, not for each of its calls.
// Past maxLabels sessions it starts again. Its owner locks.
type labels map[string]string

const maxLabels = 1024

// of is id's sessionLabel, kept in *l.
func (l *labels) of(id string) string {
	if s, ok := (*l)[id]; ok {
		return s
	}
	if *l == nil || len(*l) >= maxLabels {
		*l = labels{}
	}
	s := sessionLabel(id)
	(*l)[id] = s
	return s
}
