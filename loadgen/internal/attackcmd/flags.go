package attackcmd

import (
	"fmt"
	"net/http"
	"strings"
)

// headerFlag collects repeated -H "Name: value".
type headerFlag struct{ h http.Header }

func (f *headerFlag) String() string { return "" }

func (f *headerFlag) Set(v string) error {
	name, val, ok := strings.Cut(v, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.ContainsAny(name, " \t") {
		return fmt.Errorf("header %q: want \"Name: value\"", v)
	}
	if f.h == nil {
		f.h = http.Header{}
	}
	f.h.Add(name, strings.TrimSpace(val))
	return nil
}
