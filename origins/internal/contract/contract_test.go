package contract

import (
	"path"
	"strconv"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p    Param
		in   string
		want int
		ok   bool
	}{
		{BytesN, "0", 0, true},
		{BytesN, "1", 1, true},
		{BytesN, "16777216", MaxBytes, true},
		{BytesN, "16777217", 0, false},
		{BytesN, "", 0, false},
		{BytesN, "-1", 0, false},
		{BytesN, "+1", 0, false},
		{BytesN, "01", 0, false},
		{BytesN, "00", 0, false},
		{BytesN, " 1", 0, false},
		{BytesN, "1_0", 0, false},
		{BytesN, "١", 0, false}, // Arabic-Indic one: a digit to some parsers
		{BytesN, "999999999999", 0, false},
		{BytesN, "9999999999", 0, false},
		{DelayMS, "60000", MaxDelayMS, true},
		{DelayMS, "60001", 0, false},
		{StatusCode, "200", 200, true},
		{StatusCode, "599", 599, true},
		{StatusCode, "199", 0, false},
		{StatusCode, "600", 0, false},
		{StatusCode, "42", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.p.Name+"="+tt.in, func(t *testing.T) {
			t.Parallel()
			got, ok := Parse(tt.p, tt.in)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Parse(%q) = %d, %v, want %d, %v", tt.in, got, ok, tt.want, tt.ok)
			}
			if gotB, okB := Parse(tt.p, []byte(tt.in)); gotB != got || okB != ok {
				t.Errorf("Parse([]byte %q) = %d, %v, differs from the string form", tt.in, gotB, okB)
			}
		})
	}
}

func TestReason(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p    Param
		in   string
		want string
	}{
		{BytesN, "abc", `bad n "abc": want an integer 0..16777216` + "\n"},
		{DelayMS, "-5", `bad ms "-5": want an integer 0..60000` + "\n"},
		{StatusCode, "42", `bad code "42": want an integer 200..599` + "\n"},
		{BytesN, `a"b\c d` + "\xff\n", `bad n "a?b?c?d??": want an integer 0..16777216` + "\n"},
		{BytesN, strings.Repeat("x", 33), `bad n "` + strings.Repeat("x", 32) + `...": want an integer 0..16777216` + "\n"},
		{BytesN, strings.Repeat("x", 32), `bad n "` + strings.Repeat("x", 32) + `": want an integer 0..16777216` + "\n"},
	}
	for _, tt := range tests {
		if got := tt.p.Reason(tt.in); got != tt.want {
			t.Errorf("Reason(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCleanPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		"/": true, "/healthz": true, "/bytes/5": true, "/a.b/c..d/.e": true,
		"": false, "healthz": false, "*": false, "http://x/": false,
		"//": false, "//healthz": false, "/healthz/": false, "/bytes//5": false,
		"/.": false, "/..": false, "/./x": false, "/x/..": false, "/x/../y": false,
		"/he%61lthz": false, "/%2e": false,
	} {
		if got := CleanPath(in); got != want {
			t.Errorf("CleanPath(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestBytes(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 35, 36, 37, 1000, MaxBytes} {
		b := Bytes(n)
		if len(b) != n {
			t.Fatalf("len(Bytes(%d)) = %d", n, len(b))
		}
		for i, c := range b {
			if c != Alphabet[i%36] {
				t.Fatalf("Bytes(%d)[%d] = %q, want %q", n, i, c, Alphabet[i%36])
			}
		}
	}
}

func TestBodies(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ got, want string }{
		{string(AppendDelayBody(nil, 50)), "delayed 50 ms\n"},
		{string(AppendStatusBody(nil, 503)), "status 503\n"},
		{string(AppendStatusBody(nil, 204)), ""},
		{string(AppendStatusBody(nil, 205)), ""},
		{string(AppendStatusBody(nil, 304)), ""},
		{TooLargeBody, "body too large: want at most 16777216 bytes\n"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		want    Config
		wantErr string
	}{
		{"defaults", nil, Config{Name: "fast", Addr: "127.0.0.1:9104"}, ""},
		{"all set", map[string]string{"ORIGIN_NAME": "fast-2", "PORT": "8080", "LISTEN_ADDR": "127.0.0.1"}, Config{Name: "fast-2", Addr: "127.0.0.1:8080"}, ""},
		{"ipv6", map[string]string{"LISTEN_ADDR": "::1"}, Config{Name: "fast", Addr: "[::1]:9104"}, ""},
		{"bad port", map[string]string{"PORT": "http"}, Config{}, `PORT "http": want a port number 0..65535`},
		{"port too big", map[string]string{"PORT": "70000"}, Config{}, `PORT "70000"`},
		{"bad name", map[string]string{"ORIGIN_NAME": "a b"}, Config{}, `ORIGIN_NAME "a b": want 1..64 characters`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := LoadConfig(func(k string) string { return tt.env[k] }, "fast")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v, want %+v", got, err, tt.want)
			}
		})
	}
	if _, err := LoadConfig(func(string) string { return "" }, "nope"); err == nil {
		t.Error("an unknown default origin must be an error")
	}
}

// FuzzParse: whatever the input, an accepted value is the canonical
// spelling of an in-range integer, and a refusal's reason is one bounded line.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0", "16777216", "-1", "abc", "05", "999999999999", "\xff\"\\", "1 2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range []Param{BytesN, DelayMS, StatusCode} {
			v, ok := Parse(p, s)
			if ok {
				if strconv.Itoa(v) != s || v < p.Min || v > p.Max {
					t.Fatalf("Parse(%s, %q) accepted %d", p.Name, s, v)
				}
				continue
			}
			r := p.Reason(s)
			if strings.Count(r, "\n") != 1 || !strings.HasSuffix(r, "\n") || len(r) > 100 {
				t.Fatalf("Reason(%q) = %q: not one bounded line", s, r)
			}
			for i := 0; i < len(r)-1; i++ {
				if r[i] < 0x20 || r[i] > 0x7e {
					t.Fatalf("Reason(%q) = %q carries byte %#x", s, r, r[i])
				}
			}
		}
	})
}

// FuzzCleanPath checks CleanPath against path.Clean: a routable path is
// exactly a rooted, unescaped path that cleaning leaves unchanged.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"/", "/healthz", "//x", "/a/../b", "/a/./b", "/a/", "/%41", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := strings.HasPrefix(s, "/") && !strings.Contains(s, "%") && path.Clean(s) == s
		if got := CleanPath(s); got != want {
			t.Fatalf("CleanPath(%q) = %v, want %v", s, got, want)
		}
	})
}

func BenchmarkParse(b *testing.B) {
	in := []byte("16777216")
	for b.Loop() {
		if _, ok := Parse(BytesN, in); !ok {
			b.Fatal("refused")
		}
	}
}
