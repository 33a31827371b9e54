// Package nginxstatus owns scraping nginx's stub_status page into the
// metric names of nginx-prometheus-exporter (without depending on that
// exporter's module), so dashboards written for it work unchanged.
package nginxstatus

import (
	"bytes"
	"fmt"
	"strconv"
)

// Status is one reading of stub_status.
type Status struct {
	Active, Accepted, Handled, Requests uint64
	Reading, Writing, Waiting           uint64
}

// Parse reads the stub_status body:
//
//	Active connections: 291
//	server accepts handled requests
//	 16630948 16630948 31070465
//	Reading: 6 Writing: 179 Waiting: 106
func Parse(b []byte) (Status, error) {
	var s Status
	f := bytes.Fields(b)
	// Expected tokens: Active connections: N server accepts handled
	// requests A H R Reading: r Writing: w Waiting: x
	want := []string{"Active", "connections:", "", "server", "accepts", "handled", "requests", "", "", "", "Reading:", "", "Writing:", "", "Waiting:", ""}
	if len(f) != len(want) {
		return s, fmt.Errorf("stub_status: %d fields, want %d (is the URL an nginx stub_status page?)", len(f), len(want))
	}
	nums := []*uint64{&s.Active, &s.Accepted, &s.Handled, &s.Requests, &s.Reading, &s.Writing, &s.Waiting}
	for i, w := range want {
		if w != "" {
			if string(f[i]) != w {
				return s, fmt.Errorf("stub_status: field %d is %q, want %q", i+1, f[i], w)
			}
			continue
		}
		v, err := strconv.ParseUint(string(f[i]), 10, 64)
		if err != nil {
			return s, fmt.Errorf("stub_status: field %d: %w", i+1, err)
		}
		*nums[0] = v
		nums = nums[1:]
	}
	return s, nil
}
