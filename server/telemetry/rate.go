package telemetry

const (
	rateLimitedHelp   = "Calls over a policy rule's rate limit (refused, or asked about with then: prompt), by the rule's group (empty for a global rule) and name."
	rateBucketsHelp   = "Counters the policy rules' rate limits keep now (one per rule and session, profile or hub)."
	rateEvictionsHelp = "Rate limit counters dropped, least recently used first, to keep their number bounded."
)

var rateLimitedLabels = []string{"group", "rule"}

// gatherRate reads, at each scrape, what the loop guards (policy rate:)
// counted. The rule label takes rule names from the config: a bounded set.
func gatherRate(g *gatherer, opts MetricsOptions) {
	if opts.RateLimited != nil {
		for group, rules := range opts.RateLimited() {
			for rule, n := range rules {
				g.counter("dynamic_mcp_rate_limited_total", rateLimitedHelp, float64(n), rateLimitedLabels, group, rule)
			}
		}
	}
	if opts.RateBuckets != nil {
		buckets, evictions := opts.RateBuckets()
		g.gauge("dynamic_mcp_rate_buckets", rateBucketsHelp, float64(buckets), nil)
		g.counter("dynamic_mcp_rate_buckets_evicted_total", rateEvictionsHelp, float64(evictions), nil)
	}
}
