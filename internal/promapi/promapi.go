// Package promapi owns the one small Prometheus HTTP API client (the
// reporter's queries, the loadgen's live view):
// instant and range queries decoded from JSON, floats and native histograms.
// It uses net/http directly so that the reporter depends on the documented
// wire format rather than on a client library's changing Go API.
package promapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client queries one Prometheus server.
type Client struct {
	base string
	http *http.Client
}

// New returns a client for the server at base (e.g. http://127.0.0.1:9090).
func New(base string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("prometheus url %q: want http://host:port", base)
	}
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	return &Client{base: strings.TrimRight(base, "/"), http: hc}, nil
}

// Sample is one series of an instant vector.
type Sample struct {
	Labels map[string]string
	Value  float64 // NaN when the sample is a histogram
	Time   time.Time
}

// Series is one series of a range matrix.
type Series struct {
	Labels map[string]string
	Times  []time.Time
	Values []float64
}

type apiResponse struct {
	Status    string          `json:"status"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Data      json.RawMessage `json:"data"`
	Warnings  []string        `json:"warnings"`
}

type queryData struct {
	ResultType string          `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

type rawSample struct {
	Metric    map[string]string `json:"metric"`
	Value     []json.RawMessage `json:"value"`
	Histogram []json.RawMessage `json:"histogram"`
}

type rawSeries struct {
	Metric map[string]string   `json:"metric"`
	Values [][]json.RawMessage `json:"values"`
}

// Query evaluates expr at t and returns its vector (a scalar becomes one
// unlabelled sample).
func (c *Client) Query(ctx context.Context, expr string, t time.Time) ([]Sample, error) {
	form := url.Values{"query": {expr}, "time": {FormatTime(t)}}
	var d queryData
	if err := c.post(ctx, "/api/v1/query", form, &d); err != nil {
		return nil, fmt.Errorf("query %s: %w", expr, err)
	}
	switch d.ResultType {
	case "vector":
		var raw []rawSample
		if err := json.Unmarshal(d.Result, &raw); err != nil {
			return nil, fmt.Errorf("decode vector of %s: %w", expr, err)
		}
		out := make([]Sample, 0, len(raw))
		for _, r := range raw {
			s := Sample{Labels: r.Metric, Value: math.NaN()}
			pair := r.Value
			if len(pair) == 0 {
				pair = r.Histogram
			}
			ts, v, err := decodePair(pair)
			if err != nil {
				return nil, fmt.Errorf("decode sample of %s: %w", expr, err)
			}
			s.Time = ts
			if len(r.Value) > 0 {
				s.Value = v
			}
			out = append(out, s)
		}
		return out, nil
	case "scalar":
		var pair []json.RawMessage
		if err := json.Unmarshal(d.Result, &pair); err != nil {
			return nil, fmt.Errorf("decode scalar of %s: %w", expr, err)
		}
		ts, v, err := decodePair(pair)
		if err != nil {
			return nil, fmt.Errorf("decode scalar of %s: %w", expr, err)
		}
		return []Sample{{Labels: map[string]string{}, Value: v, Time: ts}}, nil
	default:
		return nil, fmt.Errorf("query %s: unexpected result type %q", expr, d.ResultType)
	}
}

// QueryMatrix evaluates a range-vector expr (a selector with a range, such
// as m[30s] @ t) at t and returns its raw samples, with their own
// timestamps, as Prometheus stored them.
func (c *Client) QueryMatrix(ctx context.Context, expr string, t time.Time) ([]Series, error) {
	form := url.Values{"query": {expr}, "time": {FormatTime(t)}}
	var d queryData
	if err := c.post(ctx, "/api/v1/query", form, &d); err != nil {
		return nil, fmt.Errorf("query %s: %w", expr, err)
	}
	if d.ResultType != "matrix" {
		return nil, fmt.Errorf("query %s: unexpected result type %q, want matrix", expr, d.ResultType)
	}
	return decodeMatrix(expr, d.Result)
}

// QueryRange evaluates expr at every step in [start, end].
func (c *Client) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]Series, error) {
	form := url.Values{"query": {expr}, "start": {FormatTime(start)}, "end": {FormatTime(end)},
		"step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}}
	var d queryData
	if err := c.post(ctx, "/api/v1/query_range", form, &d); err != nil {
		return nil, fmt.Errorf("range query %s: %w", expr, err)
	}
	if d.ResultType != "matrix" {
		return nil, fmt.Errorf("range query %s: unexpected result type %q", expr, d.ResultType)
	}
	return decodeMatrix(expr, d.Result)
}

func decodeMatrix(expr string, result json.RawMessage) ([]Series, error) {
	var raw []rawSeries
	if err := json.Unmarshal(result, &raw); err != nil {
		return nil, fmt.Errorf("decode matrix of %s: %w", expr, err)
	}
	out := make([]Series, 0, len(raw))
	for _, r := range raw {
		s := Series{Labels: r.Metric}
		for _, pair := range r.Values {
			ts, v, err := decodePair(pair)
			if err != nil {
				return nil, fmt.Errorf("decode matrix of %s: %w", expr, err)
			}
			s.Times = append(s.Times, ts)
			s.Values = append(s.Values, v)
		}
		out = append(out, s)
	}
	return out, nil
}

// BuildInfo returns the server's version string.
func (c *Client) BuildInfo(ctx context.Context) (string, error) {
	var d struct {
		Version string `json:"version"`
	}
	if err := c.get(ctx, "/api/v1/status/buildinfo", &d); err != nil {
		return "", fmt.Errorf("buildinfo: %w", err)
	}
	return d.Version, nil
}

func (c *Client) get(ctx context.Context, path string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	return c.do(req, into)
}

func (c *Client) post(ctx context.Context, path string, form url.Values, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(req, into)
}

func (c *Client) do(req *http.Request, into any) error {
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("prometheus unreachable: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("read response: %w", err)
	}
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("http %d, not a Prometheus API response: %.200s", resp.StatusCode, body)
	}
	if r.Status != "success" {
		return fmt.Errorf("prometheus %s: %s", r.ErrorType, r.Error)
	}
	if err := json.Unmarshal(r.Data, into); err != nil {
		return fmt.Errorf("decode data: %w", err)
	}
	return nil
}

// decodePair reads [unix_seconds, "value"]; a histogram value decodes as NaN.
func decodePair(pair []json.RawMessage) (time.Time, float64, error) {
	if len(pair) != 2 {
		return time.Time{}, 0, fmt.Errorf("want [time, value], got %d elements", len(pair))
	}
	var ts float64
	if err := json.Unmarshal(pair[0], &ts); err != nil {
		return time.Time{}, 0, fmt.Errorf("timestamp: %w", err)
	}
	t := time.UnixMilli(int64(math.Round(ts * 1000))).UTC()
	var s string
	if err := json.Unmarshal(pair[1], &s); err != nil {
		return t, math.NaN(), nil // histogram object
	}
	v, err := ParseFloat(s)
	if err != nil {
		return t, 0, err
	}
	return t, v, nil
}

// ParseFloat parses Prometheus' float strings, including +Inf, -Inf and NaN.
func ParseFloat(s string) (float64, error) {
	switch s {
	case "+Inf", "Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	case "NaN":
		return math.NaN(), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("value %q: %w", s, err)
	}
	return v, nil
}

// FormatTime renders t as Prometheus' unix seconds with millisecond precision.
func FormatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// Duration renders d as a PromQL duration in whole milliseconds.
func Duration(d time.Duration) string {
	ms := d.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	return strconv.FormatInt(ms, 10) + "ms"
}
