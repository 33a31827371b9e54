package scenario

import (
	"net/http"
	"strings"
	"testing"

	"proxybench/internal/manifest"
)

func TestAuthSupportAndShape(t *testing.T) {
	t.Parallel()
	if sk := auth.Skip("traefik"); sk == nil || sk.Kind != manifest.SkipNotApplicable || !strings.Contains(sk.Reason, "plugin") {
		t.Errorf("traefik: %+v, want not applicable for want of a plugin", sk)
	}
	if sk := auth.Skip("nginx"); sk != nil {
		t.Errorf("nginx: %+v", sk)
	}
	sh := auth.Resolve(Settings{AuthInvalid: 0.2})
	if auth.Path("fast", defaults) != "/auth/fast/" || len(sh.Variants) != 3 {
		t.Fatalf("path %s, variants %+v", auth.Path("fast", defaults), sh.Variants)
	}
	v := sh.Variants
	if v[0].Name != "valid" || v[0].Share != 0.8 || v[0].Want != 200 || v[0].Header.Get(APIKeyHeader) != ValidAPIKeys[1] ||
		v[1].Name != "missing" || v[1].Share != 0.1 || v[1].Want != 401 || v[1].Header.Get(APIKeyHeader) != "" ||
		v[2].Name != "wrong" || v[2].Want != 401 || v[2].Header.Get(APIKeyHeader) != WrongAPIKey {
		t.Errorf("variants %+v", v)
	}
	if sh := auth.Resolve(Settings{}); len(sh.Variants) != 0 {
		t.Errorf("all keys valid is one variant, not a mix: %+v", sh.Variants)
	}
	if !Matches("401", auth.Statuses()) || Matches("403", auth.Statuses()) {
		t.Errorf("auth expects %v", auth.Statuses())
	}
}

func TestAuthAccountAndJudging(t *testing.T) {
	t.Parallel()
	sh := auth.Resolve(Settings{AuthInvalid: 0.2})
	n := Counts{WindowS: 1, Variants: map[string]VariantCounts{
		"valid":   {Requests: 80, Codes: map[int]int64{200: 79, 401: 1}},
		"missing": {Requests: 10, Errors: 1, Codes: map[int]int64{401: 10}},
		"wrong":   {Requests: 10, Codes: map[int]int64{401: 9, 204: 1}},
	}}
	d := authAccount(sh, n)
	if d == nil || d.AuthWrong == nil || *d.AuthWrong != 2 || d.Variants["missing"].Errors != 1 || d.Variants["wrong"].Codes["204"] != 1 ||
		d.Variants["valid"].Share != 0.8 || d.Variants["valid"].Want != 200 {
		t.Fatalf("account %+v", d)
	}
	fs, ok := row(t, authTable, ReportCell{Name: "c", Data: d})
	if !ok || strings.Join(texts(fs), "|") != "c|101|79 / 80|10 / 11|9 / 10|2|20.8 %|no" || fs[7].Class != "fail" {
		t.Errorf("row %q", texts(fs))
	}
	exact := *d
	zero := int64(0)
	exact.AuthWrong = &zero
	if fs, _ := row(t, authTable, ReportCell{Name: "c", Data: &exact}); fs[7] != (Field{Text: "yes", Class: "pass"}) {
		t.Errorf("an exact proxy judged %+v", fs[7])
	}
	if d := authAccount(auth.Resolve(Settings{}), n); d != nil {
		t.Errorf("one variant has no account: %+v", d)
	}
	if _, ok := row(t, authTable, ReportCell{Data: &manifest.ScenarioData{}}); ok {
		t.Error("a row without variants")
	}
	if auth.Method != http.MethodGet {
		t.Errorf("method %s", auth.Method)
	}
}
