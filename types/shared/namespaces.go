package shared

import "context"

// Namespaces is a Store that lists its namespaces: what lists the records
// kept in a namespace each (a user's sign-ins, say) needs.
type Namespaces interface {
	// Namespaces are the namespaces that start with prefix and hold a
	// value, sorted.
	Namespaces(ctx context.Context, prefix string) ([]string, error)
}
