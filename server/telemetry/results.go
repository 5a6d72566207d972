package telemetry

// gatherResults reads, at each scrape, the counts of the results cut to
// fit max_result and kept whole.
func gatherResults(g *gatherer, opts MetricsOptions) {
	if opts.Results == nil {
		return
	}
	cut, kept, bytes, evicted := opts.Results()
	g.counter("dynamic_mcp_results_cut_total", "Tool results cut to fit a client's max_result.", float64(cut), nil)
	g.gauge("dynamic_mcp_results_kept", "Whole tool results kept now for their sessions to read in pages (dynamic-mcp://results/<id>).", float64(kept), nil)
	g.gauge("dynamic_mcp_results_kept_bytes", "Bytes the kept tool results take, counted against the store's bound (64 MiB).", float64(bytes), nil)
	g.counter("dynamic_mcp_results_evicted_total", "Kept tool results dropped before their time, oldest first, to stay within the store's bounds.", float64(evicted), nil)
}
