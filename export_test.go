package gateway

// RoutePatterns returns "METHOD /path" of every route of g's table, in the
// table's order, for the tests of package gateway_test.
func RoutePatterns(g *Gateway) []string {
	var out []string
	for _, rt := range g.routes() {
		out = append(out, rt.method+" "+rt.path)
	}
	return out
}
