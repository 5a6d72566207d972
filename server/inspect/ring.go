package inspect

// ring is the history: the newest rows, at most len(rows) of them and
// about maxBytes of bodies, whichever bound comes first. Its owner locks.
type ring struct {
	rows     []*row // circular; rows[head] is the oldest of n
	head, n  int
	bytes    int // of the bodies of the rows in it
	maxBytes int
}

// push adds r as the newest row, dropping the oldest to stay in bounds.
func (g *ring) push(r *row) {
	if g.n == len(g.rows) {
		g.dropOldest()
	}
	g.rows[(g.head+g.n)%len(g.rows)] = r
	g.n++
	r.inRing = true
	g.bytes += r.bytes
	g.trim()
}

// trim drops the oldest rows while the bodies kept are over the budget;
// the newest row stays, however big (each body is capped).
func (g *ring) trim() {
	for g.bytes > g.maxBytes && g.n > 1 {
		g.dropOldest()
	}
}

func (g *ring) dropOldest() {
	r := g.rows[g.head]
	g.rows[g.head] = nil
	g.head = (g.head + 1) % len(g.rows)
	g.n--
	g.bytes -= r.bytes
	r.release()
}

func (g *ring) clear() {
	for g.n > 0 {
		g.dropOldest()
	}
	g.head = 0
}

// snapshots are copies of the rows, oldest first (see row.snapshot).
func (g *ring) snapshots() []*row {
	out := make([]*row, 0, g.n)
	for k := range g.n {
		out = append(out, g.rows[(g.head+k)%len(g.rows)].snapshot())
	}
	return out
}
