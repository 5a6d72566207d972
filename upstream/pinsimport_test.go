package upstream

import (
	"encoding/json"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// A pins directory imported into a shared store: a server's pins the
// store lacks are copied; the same again are unchanged; pins a replica
// changed in the store since are kept unless force; a dry run writes
// nothing.
func TestPinsImportIntoASharedStore(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	files := NewPins(filepath.Join(t.TempDir(), "pins"))
	v1 := []Item{{Key: "read", Raw: json.RawMessage(`{"name":"read","description":"Read a file"}`)}}
	if changed, err := files.Check("files", v1); err != nil || changed != nil {
		t.Fatalf("pin on file: %v %v", changed, err)
	}
	store := sharedPins(t, url)
	if out, err := store.Import(files, false, true); err != nil || out["files"] != shared.Copied {
		t.Fatalf("dry run: %v %v", out, err)
	}
	if f, _ := store.load("files"); len(f.Tools) != 0 {
		t.Fatalf("the dry run wrote pins: %v", f.Tools)
	}
	if out, err := store.Import(files, false, false); err != nil || out["files"] != shared.Copied {
		t.Fatalf("import: %v %v", out, err)
	}
	if changed, err := store.Check("files", v1); err != nil || changed != nil {
		t.Fatalf("the imported pins do not hold: %v %v", changed, err)
	}
	if out, _ := store.Import(files, false, false); out["files"] != shared.Unchanged {
		t.Fatalf("again: %v", out)
	}
	// A later first sight: the clock past the imported pins' (a tie
	// would read as not newer), at the microseconds a store may keep.
	imported, _ := store.load("files")
	for !time.Now().Truncate(time.Microsecond).After(latest(imported)) {
		runtime.Gosched()
	}
	if _, err := store.Check("files", append(v1, Item{Key: "write", Raw: json.RawMessage(`{"name":"write"}`)})); err != nil {
		t.Fatal(err)
	}
	if out, _ := store.Import(files, false, false); out["files"] != shared.KeptNewer {
		t.Fatalf("over newer pins: %v", out)
	}
	if f, _ := store.load("files"); len(f.Tools) != 2 {
		t.Fatalf("the store's newer pins were overwritten: %v", f.Tools)
	}
	if out, _ := store.Import(files, true, false); out["files"] != shared.Replaced {
		t.Fatalf("--force: %v", out)
	}
	if f, _ := store.load("files"); len(f.Tools) != 1 {
		t.Fatalf("--force left %v", f.Tools)
	}
}
