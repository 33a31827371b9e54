// Package fleet owns several loadgens as one instrument: `loadgen worker`,
// a process that runs its segment of a cell's load (load.Segment) when a
// coordinator asks, and the Coordinator, which starts the workers, measures
// each one's clock offset, gives them one start barrier, merges their
// results exactly (attack.Merge: the HdrHistograms add bucket by bucket)
// and keeps each worker's part. The control API is HTTP/JSON on the
// worker's listen address: GET /clock, POST /cell (its progress and its
// result streamed back as JSON lines), POST /cancel, GET /metrics (the
// worker's series with the constant label worker), GET /scraped (once
// Prometheus has scraped it). The coordinator also tells Prometheus where
// the workers are (a file_sd targets file) and waits for their scrapes
// before their first window and after their last. Where a worker runs and
// how it is reached is the Launcher's: local processes today.
package fleet

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/load"
)

// Command is the loadgen subcommand of a worker.
const Command = "worker"

// The control API's paths.
const (
	PathClock   = "/clock"
	PathCell    = "/cell"
	PathCancel  = "/cancel"
	PathMetrics = "/metrics"
	// PathScraped answers once Prometheus has scraped the worker: GET
	// /scraped?in=D (a duration, default 0) returns 204 once a scrape of
	// /metrics began at or after the worker's now + D (every value as of
	// then has reached Prometheus); a client that stops waiting closes its
	// request.
	PathScraped = "/scraped"
)

// Hello is the one JSON line a worker prints on stdout once it listens.
type Hello struct {
	Addr  string `json:"addr"`
	Index int    `json:"index"`
	Pid   int    `json:"pid"`
	Host  string `json:"host"`
}

// Clock is a worker's answer to GET /clock: its wall clock when it read it.
type Clock struct {
	UnixNano int64 `json:"unix_nano"`
}

// CellRequest is one attack for a worker: its segment of the load, when
// to start (on the worker's own clock: the coordinator adds the offset it
// measured to its barrier) and what to send.
type CellRequest struct {
	ID      string       `json:"id"` // the coordinator's name for it, for POST /cancel?id=
	Segment load.Segment `json:"segment"`
	Barrier time.Time    `json:"barrier"`
	Spec    Spec         `json:"spec"`
}

// Spec is attack.Spec written down to travel: the load as its settings
// (load.SettingsOf), the CAs as PEM. Edges, a clock and a progress
// callback do not travel; the worker keeps its own.
type Spec struct {
	URL               string        `json:"url"`
	Method            string        `json:"method,omitempty"`
	Body              []byte        `json:"body,omitempty"`
	Header            http.Header   `json:"header,omitempty"`
	Load              load.Settings `json:"load"`
	Timeout           time.Duration `json:"timeout"`
	MaxHeaderBytes    int           `json:"max_header_bytes,omitempty"`
	MaxBodyBytes      int64         `json:"max_body_bytes,omitempty"`
	NewConnPerRequest bool          `json:"new_conn_per_request,omitempty"`
	Proto             attack.Proto  `json:"proto,omitempty"`
	Streams           int           `json:"streams,omitempty"`
	TLS               TLS           `json:"tls"`
	ExpectOrigin      string        `json:"expect_origin,omitempty"`
	MaxRate           float64       `json:"max_rate,omitempty"`
	Labels            attack.Labels `json:"labels"`
}

// TLS is attack.TLSSettings written down: the CAs to trust as PEM (none:
// the default of attack.TLSSettings).
type TLS struct {
	CAPEM             []byte `json:"ca_pem,omitempty"`
	MinVersion        uint16 `json:"min_version,omitempty"`
	MaxVersion        uint16 `json:"max_version,omitempty"`
	ServerName        string `json:"server_name,omitempty"`
	DisableResumption bool   `json:"disable_resumption,omitempty"`
}

// SpecOf writes s down. A spec that trusts an in-memory pool names the file
// it came from in caFile (its CAFile, else caFile): a pool cannot be
// written down.
func SpecOf(s attack.Spec, caFile string) (Spec, error) {
	ls, err := load.SettingsOf(s.Load)
	if err != nil {
		return Spec{}, err
	}
	out := Spec{URL: s.URL, Method: s.Method, Body: s.Body, Header: s.Header, Load: ls, Timeout: s.Timeout,
		MaxHeaderBytes: s.MaxHeaderBytes, MaxBodyBytes: s.MaxBodyBytes, NewConnPerRequest: s.NewConnPerRequest,
		Proto: s.Proto, Streams: s.Streams, ExpectOrigin: s.ExpectOrigin, MaxRate: s.MaxRate, Labels: s.Labels,
		TLS: TLS{MinVersion: s.TLS.MinVersion, MaxVersion: s.TLS.MaxVersion, ServerName: s.TLS.ServerName, DisableResumption: s.TLS.DisableResumption}}
	file := s.TLS.CAFile
	if file == "" && s.TLS.RootCAs != nil {
		if file = caFile; file == "" {
			return Spec{}, errors.New("the attack trusts an in-memory CA pool and no CA file names it: the workers cannot be given it")
		}
	}
	if file != "" {
		pem, err := os.ReadFile(file)
		if err != nil {
			return Spec{}, fmt.Errorf("the CA the workers trust: %w", err)
		}
		out.TLS.CAPEM = pem
	}
	return out, nil
}

// Attack is the spec to run: its model is seg's share of the load.
func (s Spec) Attack(seg load.Segment) (attack.Spec, error) {
	m, err := s.Load.Model()
	if err != nil {
		return attack.Spec{}, err
	}
	if m, err = seg.Of(m); err != nil {
		return attack.Spec{}, err
	}
	out := attack.Spec{URL: s.URL, Method: s.Method, Body: s.Body, Header: s.Header, Load: m, Timeout: s.Timeout,
		MaxHeaderBytes: s.MaxHeaderBytes, MaxBodyBytes: s.MaxBodyBytes, NewConnPerRequest: s.NewConnPerRequest,
		Proto: s.Proto, Streams: s.Streams, ExpectOrigin: s.ExpectOrigin, MaxRate: s.MaxRate / float64(seg.Workers()), Labels: s.Labels,
		TLS: attack.TLSSettings{MinVersion: s.TLS.MinVersion, MaxVersion: s.TLS.MaxVersion, ServerName: s.TLS.ServerName, DisableResumption: s.TLS.DisableResumption}}
	if len(s.TLS.CAPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(s.TLS.CAPEM) {
			return attack.Spec{}, errors.New("the CA the coordinator sent holds no certificate")
		}
		out.TLS.RootCAs = pool
	}
	return out, nil
}

// Message is one JSON line of a worker's answer to POST /cell: progress
// about once a second, then the end: the result (nil when the attack never
// began), what its process used over the window and, when the attack
// failed, why.
type Message struct {
	Progress *attack.Progress `json:"progress,omitempty"`
	End      *End             `json:"end,omitempty"`
}

// End is the last message of a cell.
type End struct {
	Result  *Result              `json:"result,omitempty"`
	Error   string               `json:"error,omitempty"`
	Loadgen *manifest.LoadgenCPU `json:"loadgen,omitempty"`
	// CPU is the worker process's role loadgen over its window: its CPU,
	// its CPUs' busy and steal time (co-tenants and foreign time are the
	// coordinator's to attribute: it knows the other roles).
	CPU *manifest.RoleContention `json:"cpu,omitempty"`
}

// Result is attack.Result written down: its exact HdrHistogram in the
// HdrHistogram V2 compressed encoding (lossless: every bucket's count).
type Result struct {
	*attack.Result
	Hist []byte `json:"Hist,omitempty"`
}

// ResultOf writes r down.
func ResultOf(r *attack.Result) (*Result, error) {
	if r == nil {
		return nil, nil
	}
	out := &Result{Result: r}
	if r.Hist != nil {
		b, err := r.Hist.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		if err != nil {
			return nil, fmt.Errorf("encode the histogram: %w", err)
		}
		out.Hist = b
	}
	return out, nil
}

// Decode is the result it holds, its histogram decoded.
func (r *Result) Decode() (*attack.Result, error) {
	if r == nil || r.Result == nil {
		return nil, nil
	}
	out := *r.Result
	out.Hist = nil
	if len(r.Hist) > 0 {
		h, err := hdrhistogram.Decode(r.Hist)
		if err != nil {
			return nil, fmt.Errorf("decode the histogram: %w", err)
		}
		out.Hist = h
	}
	return &out, nil
}
