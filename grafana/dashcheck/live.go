package dashcheck

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Prom is a minimal client of the Prometheus HTTP API, enough to run the
// dashboards' queries the way Grafana does.
type Prom struct {
	Base   string // e.g. http://127.0.0.1:9090
	Client *http.Client
}

// Result is what one query returned.
type Result struct {
	Series   int // series (vector/matrix) or 1 for a scalar/string
	Samples  int // float samples + histogram samples
	Warnings []string
	Infos    []string
}

type apiResponse struct {
	Status    string   `json:"status"`
	ErrorType string   `json:"errorType"`
	Error     string   `json:"error"`
	Warnings  []string `json:"warnings"`
	Infos     []string `json:"infos"`
	Data      struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

type series struct {
	Values     []json.RawMessage `json:"values"`
	Histograms []json.RawMessage `json:"histograms"`
	Value      json.RawMessage   `json:"value"`
	Histogram  json.RawMessage   `json:"histogram"`
}

// Range runs expr over [start, end] at step.
func (p Prom) Range(ctx context.Context, expr string, start, end time.Time, step time.Duration) (Result, error) {
	v := url.Values{
		"query": {expr},
		"start": {ts(start)},
		"end":   {ts(end)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}
	return p.do(ctx, "/api/v1/query_range", v)
}

// Instant runs expr at t.
func (p Prom) Instant(ctx context.Context, expr string, t time.Time) (Result, error) {
	return p.do(ctx, "/api/v1/query", url.Values{"query": {expr}, "time": {ts(t)}})
}

// LabelValues lists the values of label on series matching selector in
// [start, end], as Grafana's label_values() variable does.
func (p Prom) LabelValues(ctx context.Context, label, selector string, start, end time.Time) ([]string, error) {
	v := url.Values{"match[]": {selector}, "start": {ts(start)}, "end": {ts(end)}}
	body, err := p.get(ctx, "/api/v1/label/"+url.PathEscape(label)+"/values", v)
	if err != nil {
		return nil, err
	}
	var r struct {
		Status string   `json:"status"`
		Error  string   `json:"error"`
		Data   []string `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("label values %s: decode: %w", label, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("label values %s: %s", label, r.Error)
	}
	return r.Data, nil
}

func ts(t time.Time) string { return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64) }

func (p Prom) get(ctx context.Context, path string, v url.Values) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.Base+path+"?"+v.Encode(), nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	c := p.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("prometheus at %s: %w", p.Base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	return body, nil
}

func (p Prom) do(ctx context.Context, path string, v url.Values) (Result, error) {
	body, err := p.get(ctx, path, v)
	if err != nil {
		return Result{}, err
	}
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return Result{}, fmt.Errorf("decode %s response: %w", path, err)
	}
	if r.Status != "success" {
		return Result{}, fmt.Errorf("prometheus %s: %s", r.ErrorType, r.Error)
	}
	res := Result{Warnings: r.Warnings, Infos: r.Infos}
	switch r.Data.ResultType {
	case "matrix", "vector":
		var ss []series
		if err := json.Unmarshal(r.Data.Result, &ss); err != nil {
			return Result{}, fmt.Errorf("decode %s result: %w", r.Data.ResultType, err)
		}
		res.Series = len(ss)
		for _, s := range ss {
			res.Samples += len(s.Values) + len(s.Histograms)
			if len(s.Value) > 0 || len(s.Histogram) > 0 {
				res.Samples++
			}
		}
	case "scalar", "string":
		res.Series, res.Samples = 1, 1
	default:
		return Result{}, fmt.Errorf("unexpected result type %q", r.Data.ResultType)
	}
	return res, nil
}

// Scalar runs expr at t and returns the value of its first float sample.
func (p Prom) Scalar(ctx context.Context, expr string, t time.Time) (float64, error) {
	body, err := p.get(ctx, "/api/v1/query", url.Values{"query": {expr}, "time": {ts(t)}})
	if err != nil {
		return 0, err
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return 0, fmt.Errorf("decode: %w", err)
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("prometheus: %s", r.Error)
	}
	if len(r.Data.Result) == 0 {
		return 0, fmt.Errorf("%s: no data", expr)
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: value %q: %w", expr, s, err)
	}
	return v, nil
}
