package contract

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
)

func TestMainBadConfig(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	env := map[string]string{"PORT": "http"}
	serve := func(context.Context, net.Listener, Config, *slog.Logger) error {
		t.Error("served with a bad config")
		return nil
	}
	if code := Main("fast", func(k string) string { return env[k] }, &stderr, serve); code != 2 {
		t.Errorf("Main = %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), `PORT \"http\": want a port number`) {
		t.Errorf("stderr does not name the bad setting:\n%s", stderr.String())
	}
}
