package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRunBadConfig(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	env := map[string]string{"PORT": "http"}
	if code := run(func(k string) string { return env[k] }, &stderr); code != 2 {
		t.Errorf("run = %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), `PORT \"http\": want a port number`) {
		t.Errorf("stderr does not name the bad setting:\n%s", stderr.String())
	}
}
