package scenario

import (
	"fmt"
	"math"
	"net/http"
	"strconv"

	"proxybench/internal/manifest"
)

// The payload family: GET /bytes/<n> for three body sizes. Every 2xx must
// carry the body, and the bytes moved must match body x 2xx/s.
var (
	payload1k  = payloadScenario("payload-1k", 50, 1<<10)
	payload64k = payloadScenario("payload-64k", 51, 64<<10)
	payload1m  = payloadScenario("payload-1m", 52, 1<<20)
)

func init() {
	register(&payload1k)
	register(&payload64k)
	register(&payload1m)
}

// PayloadGroup is the group of the payload scenarios (and upload-64k).
const PayloadGroup = "payload"

func payloadScenario(name string, rank int, n int64) Scenario {
	return Scenario{
		Name:      name,
		About:     fmt.Sprintf("GET /bytes/%d: a %s response body", n, humanBytes(n)),
		Rank:      rank,
		Groups:    []string{PayloadGroup},
		Method:    http.MethodGet,
		Path:      func(o string, _ Settings) string { return "/" + o + "/bytes/" + strconv.FormatInt(n, 10) },
		BodyBytes: n,
		Account:   bodyAccount,
		Report:    payloadTable,
	}
}

// bodyAccount is the body size and the bytes moved per second of the window.
func bodyAccount(sh Shape, n Counts) *manifest.ScenarioData {
	if sh.BodyBytes <= 0 {
		return nil
	}
	return &manifest.ScenarioData{BodyBytes: sh.BodyBytes, BytesPerSec: n.Rate(n.Bytes)}
}

// BytesConsistent says whether the response bytes per second are within
// 2 % of body x 2xx/s: every 2xx carried the whole body.
func BytesConsistent(bytesPerSec, want float64) bool {
	return want > 0 && math.Abs(bytesPerSec-want) <= 0.02*want
}

// payloadTable is shared by the payload family, upload-64k and h2-payload.
var payloadTable = &Table{
	Caption: "payload: response (and upload) bodies",
	Header:  []string{"cell", "body", "req/s", "MB/s", "body × 2xx/s MB/s", "consistent", "protocol"},
	Right:   []bool{false, true, true, true, true, false, false},
	Row: func(c ReportCell, f Format) ([]Field, bool) {
		sd := c.Data
		if sd == nil || sd.BodyBytes == 0 {
			return nil, false
		}
		want := nan
		if !math.IsNaN(c.DurationS) && c.DurationS > 0 {
			want = float64(sd.BodyBytes) * float64(c.S2xx) / c.DurationS
		}
		body := humanBytes(sd.BodyBytes)
		if sd.UploadBytes > 0 {
			body = "POST " + body + " echoed"
		}
		return []Field{text(c.Name), text(body), text(f.Num(c.RPS, 0)),
			text(f.Num(sd.BytesPerSec/1e6, 1)), text(f.Num(want/1e6, 1)), verdict(!math.IsNaN(want) && BytesConsistent(sd.BytesPerSec, want)),
			text(ProtocolText(c.Protocol, c.TLS))}, true
	},
}
