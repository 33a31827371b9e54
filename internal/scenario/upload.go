package scenario

import (
	"net/http"

	"proxybench/internal/manifest"
)

// uploadBytes is upload-64k's request body, echoed back by the origin.
const uploadBytes = 64 << 10

// upload POSTs a body the origin echoes: it moves the body both ways and is
// judged like the payload family, in its table.
var upload = Scenario{
	Name:      "upload-64k",
	About:     "POST /echo with a 64 KiB body, echoed back",
	Rank:      60,
	Groups:    []string{PayloadGroup},
	Method:    http.MethodPost,
	Path:      func(o string, _ Settings) string { return "/" + o + "/echo" },
	Header:    http.Header{"Content-Type": {"application/octet-stream"}},
	Body:      body(uploadBytes),
	BodyBytes: uploadBytes,
	Account: func(sh Shape, n Counts) *manifest.ScenarioData {
		d := bodyAccount(sh, n)
		if d != nil {
			d.UploadBytes = sh.BodyBytes
		}
		return d
	},
	Report: payloadTable,
}

func init() { register(&upload) }

// body is the origins' /bytes pattern, so an echoed upload can be told
// from any other body.
func body(n int) []byte {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[i%len(alphabet)]
	}
	return b
}
