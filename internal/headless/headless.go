// Package headless owns driving Debian's Chromium for the tests that look
// at a rendered page (report.html, the loadgen's live view): finding the
// binary (reporter/scripts/ensure-chromium.sh installs it), one-shot runs
// (--dump-dom, --screenshot), and a Browser kept open over the DevTools
// protocol, for a page watched while something changes under it.
package headless

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/websocket"
)

// Find is the Chromium to run: $PROXYBENCH_CHROMIUM, else chromium on the
// PATH; the error says how to install it.
func Find() (string, error) {
	if p := os.Getenv("PROXYBENCH_CHROMIUM"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		return "", errors.New("chromium not installed: run reporter/scripts/ensure-chromium.sh (make prepare does)")
	}
	return p, nil
}

// flags are every run's: headless, as root, nothing fetched from outside.
func flags(profile string) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--hide-scrollbars", "--user-data-dir=" + profile}
}

// Run runs Chromium once with args after the common flags, its profile in
// the folder profile, and returns its stdout (--dump-dom's DOM).
func Run(ctx context.Context, bin, profile string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, append(flags(profile), args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("chromium %v: %w\n%s", args, err, stderr.String())
	}
	return out, nil
}

// Browser is a headless Chromium with one page, driven over the DevTools
// protocol on loopback.
type Browser struct {
	cmd  *exec.Cmd
	ws   *websocket.Conn
	next atomic.Int64
}

var devtoolsRE = regexp.MustCompile(`DevTools listening on (ws://127\.0\.0\.1:(\d+)/\S+)`)

// Open starts Chromium at a window of w x h showing url and connects to its
// page.
func Open(ctx context.Context, bin, profile, url string, w, h int) (*Browser, error) {
	args := append(flags(profile), "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
		"--remote-allow-origins=http://127.0.0.1", fmt.Sprintf("--window-size=%d,%d", w, h), url)
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // Close ends its helper processes too
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start chromium: %w", err)
	}
	b := &Browser{cmd: cmd}
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := devtoolsRE.FindStringSubmatch(sc.Text()); m != nil {
				port <- m[2]
				break
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case p := <-port:
		if err := b.attach(ctx, p); err != nil {
			b.Close()
			return nil, err
		}
		return b, nil
	case <-time.After(30 * time.Second):
	case <-ctx.Done():
	}
	b.Close()
	return nil, errors.New("chromium printed no DevTools address within 30 s")
}

// attach connects to the page target of the DevTools endpoint on port.
func (b *Browser) attach(ctx context.Context, port string) error {
	for deadline := time.Now().Add(10 * time.Second); ; {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+port+"/json/list", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var targets []struct{ Type, WebSocketDebuggerURL string }
			err = json.NewDecoder(resp.Body).Decode(&targets)
			resp.Body.Close()
			for _, t := range targets {
				if t.Type == "page" && t.WebSocketDebuggerURL != "" {
					b.ws, err = websocket.Dial(t.WebSocketDebuggerURL, "", "http://127.0.0.1")
					return err
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no page target on the DevTools port %s: %v", port, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// call sends one DevTools command and decodes its result into out.
func (b *Browser) call(method string, params, out any) error {
	id := b.next.Add(1)
	if err := websocket.JSON.Send(b.ws, map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	_ = b.ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var msg struct {
			ID     int64           `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := websocket.JSON.Receive(b.ws, &msg); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		if msg.ID != id { // an event
			continue
		}
		if msg.Error != nil {
			return fmt.Errorf("%s: %s", method, msg.Error.Message)
		}
		if out == nil {
			return nil
		}
		return json.Unmarshal(msg.Result, out)
	}
}

// Eval evaluates a JavaScript expression in the page and decodes its value
// (returned by value: JSON-able) into out.
func (b *Browser) Eval(expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := b.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r); err != nil {
		return err
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("evaluate %.60q...: %s %s", expr, r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
	if out == nil || len(r.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(r.Result.Value, out)
}

// Screenshot is a PNG of the page as it is now.
func (b *Browser) Screenshot() ([]byte, error) {
	var r struct {
		Data string `json:"data"`
	}
	if err := b.call("Page.captureScreenshot", map[string]any{"format": "png"}, &r); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(r.Data)
}

// Close ends the browser.
func (b *Browser) Close() {
	if b.ws != nil {
		b.ws.Close()
	}
	if b.cmd.Process != nil {
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		_ = b.cmd.Wait()
	}
}

// Ink is the share of img's pixels (every second one each way) that are
// not white, and of those with a colour (not grey): a blank page has
// neither.
func Ink(img image.Image) (inked, colored float64) {
	n, in, co := 0, 0, 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			n++
			if r < 0xf000 || g < 0xf000 || bl < 0xf000 {
				in++
			}
			if max(r, g, bl)-min(r, g, bl) > 0x3000 {
				co++
			}
		}
	}
	if n == 0 {
		return 0, 0
	}
	return float64(in) / float64(n), float64(co) / float64(n)
}
