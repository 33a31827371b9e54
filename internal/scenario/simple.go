package scenario

import "net/http"

// simple is the baseline: GET / over keep-alive connections. It has no
// account of its own and adds nothing to the report.
var simple = Scenario{
	Name:   "simple",
	About:  "GET / through the proxy over keep-alive connections",
	Rank:   10,
	Method: http.MethodGet,
	Path:   func(o string, _ Settings) string { return "/" + o + "/" },
}

func init() { register(&simple) }
