package scenario

import "testing"

func TestMatches(t *testing.T) {
	for _, c := range []struct {
		name, code string
		want       bool
	}{
		{"simple", "200", true}, {"simple", "204", true}, {"simple", "404", false}, {"simple", "429", false},
		{"auth", "401", true}, {"auth", "403", false}, {"auth", "200", true},
		{"ratelimit", "429", true}, {"ratelimit", "503", false},
		{"payload-1k", "200", true}, {"payload-1k", "301", false}, {"simple", "2000", false},
	} {
		if got := Matches(c.code, Expected(c.name)); got != c.want {
			t.Errorf("%s %s: got %v, want %v", c.name, c.code, got, c.want)
		}
	}
}
