package shared

// Outcome is what copying one value of a state directory into the store
// (`dynamic-mcp store import`) did, or would do in a dry run.
type Outcome string

// The outcomes of an import of one value.
const (
	Copied    Outcome = "copied"                               // the store had none
	Updated   Outcome = "updated"                              // the store's was older
	Unchanged Outcome = "unchanged"                            // the store holds the same
	KeptNewer Outcome = "skipped: the store's is newer"        // --force replaces it
	Replaced  Outcome = "replaced the store's newer (--force)" // it was newer
)

// Decide is the outcome for a value the store has (exists) or not, the
// same as the state directory's (same) or not, newer there (storeNewer)
// or not, with --force or not.
func Decide(exists, same, storeNewer, force bool) Outcome {
	switch {
	case !exists:
		return Copied
	case same:
		return Unchanged
	case storeNewer && force:
		return Replaced
	case storeNewer:
		return KeptNewer
	}
	return Updated
}

// Writes reports whether the outcome writes the store.
func (o Outcome) Writes() bool { return o == Copied || o == Updated || o == Replaced }
