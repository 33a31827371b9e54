package tlscert

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func mustEnsure(t *testing.T, dir string, alg Algorithm, now time.Time) Result {
	t.Helper()
	r, err := Ensure(dir, alg, now)
	if err != nil {
		t.Fatalf("Ensure(%s, %s): %v", dir, alg, err)
	}
	return r
}

// TestChain: the server certificate verifies against the lab CA alone for
// every SAN, with a key pair crypto/tls loads, of the asked algorithm.
func TestChain(t *testing.T) {
	for _, alg := range []Algorithm{ECDSA, RSA} {
		t.Run(string(alg), func(t *testing.T) {
			dir := t.TempDir()
			r := mustEnsure(t, dir, alg, t0)
			if !r.Generated || r.Fingerprint == "" {
				t.Fatalf("first Ensure: %+v, want new files with a fingerprint", r)
			}
			pool, err := CAPool(dir)
			if err != nil {
				t.Fatal(err)
			}
			leaf, err := ReadCert(Path(dir, CertFile))
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"localhost", "127.0.0.1", "::1", "nginx", "haproxy", "traefik", "caddy", "custom"} {
				if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool, CurrentTime: t0}); err != nil {
					t.Errorf("verify for %s: %v", name, err)
				}
			}
			if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "example.com", Roots: pool, CurrentTime: t0}); err == nil {
				t.Error("verifies for example.com, a name it must not hold")
			}
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: x509.NewCertPool(), CurrentTime: t0}); err == nil {
				t.Error("verifies without the lab CA")
			}
			if !slices.Equal(leaf.DNSNames, DNSNames()) || len(leaf.IPAddresses) != 2 ||
				!leaf.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) || !leaf.IPAddresses[1].Equal(net.IPv6loopback) {
				t.Errorf("SANs %v %v, want %v and 127.0.0.1, ::1", leaf.DNSNames, leaf.IPAddresses, DNSNames())
			}
			if got := algorithmOf(leaf.PublicKey); got != alg {
				t.Errorf("key %s, want %s", got, alg)
			}
			pair, err := tls.LoadX509KeyPair(Path(dir, CertFile), Path(dir, KeyFile))
			if err != nil {
				t.Fatalf("crypto/tls cannot load the pair: %v", err)
			}
			if pair.Leaf == nil || pair.Leaf.SerialNumber.Cmp(leaf.SerialNumber) != 0 {
				t.Error("the loaded pair is not the certificate")
			}
		})
	}
}

// TestModes: keys are 0600, certificates 0644, whatever the umask.
func TestModes(t *testing.T) {
	dir := t.TempDir()
	mustEnsure(t, dir, ECDSA, t0)
	for name, want := range map[string]os.FileMode{CAKeyFile: 0o600, KeyFile: 0o600, CAFile: 0o644, CertFile: 0o644} {
		st, err := os.Stat(Path(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", name, st.Mode().Perm(), want)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 4 {
		t.Errorf("dir holds %d files, want the 4 (no temporary left): %v", len(entries), entries)
	}
}

// TestReuse: valid files are kept as they are.
func TestReuse(t *testing.T) {
	dir := t.TempDir()
	a := mustEnsure(t, dir, ECDSA, t0)
	before, _ := os.ReadFile(Path(dir, KeyFile))
	b := mustEnsure(t, dir, ECDSA, t0.Add(100*24*time.Hour))
	after, _ := os.ReadFile(Path(dir, KeyFile))
	if b.Generated || b.Fingerprint != a.Fingerprint || string(before) != string(after) {
		t.Fatalf("second Ensure made new files (%q): %+v", b.Reason, b)
	}
}

// TestRegenerate: every reason to make new files does, and says why.
func TestRegenerate(t *testing.T) {
	cases := []struct {
		name   string
		alg    Algorithm
		now    time.Time
		break_ func(t *testing.T, dir string)
		reason string
	}{
		{"missing key", ECDSA, t0, func(t *testing.T, dir string) { os.Remove(Path(dir, KeyFile)) }, KeyFile},
		{"missing CA", ECDSA, t0, func(t *testing.T, dir string) { os.Remove(Path(dir, CAFile)) }, CAFile},
		{"other algorithm", RSA, t0, nil, "want rsa"},
		{"expired", ECDSA, t0.Add(lifetime + time.Hour), nil, "left"},
		{"close to expiry", ECDSA, t0.Add(lifetime - renewBefore/2), nil, "left"},
		{"key readable by others", ECDSA, t0, func(t *testing.T, dir string) { os.Chmod(Path(dir, KeyFile), 0o644) }, "mode"},
		{"key of another certificate", ECDSA, t0, func(t *testing.T, dir string) {
			b, _ := os.ReadFile(Path(dir, CAKeyFile))
			os.WriteFile(Path(dir, KeyFile), b, 0o600)
		}, "does not match"},
		{"signed by another CA", ECDSA, t0, func(t *testing.T, dir string) {
			other := t.TempDir()
			mustEnsure(t, other, ECDSA, t0)
			for _, f := range []string{CAFile, CAKeyFile} {
				b, _ := os.ReadFile(Path(other, f))
				os.WriteFile(Path(dir, f), b, 0o600)
			}
		}, "unknown authority"},
		{"not PEM", ECDSA, t0, func(t *testing.T, dir string) { os.WriteFile(Path(dir, CertFile), []byte("junk"), 0o644) }, "no PEM"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			a := mustEnsure(t, dir, ECDSA, t0)
			if c.break_ != nil {
				c.break_(t, dir)
			}
			b := mustEnsure(t, dir, c.alg, c.now)
			if !b.Generated || b.Fingerprint == a.Fingerprint {
				t.Fatalf("kept the files: %+v", b)
			}
			if !strings.Contains(b.Reason, c.reason) {
				t.Errorf("reason %q, want it to mention %q", b.Reason, c.reason)
			}
			// What was made is whole and reused from then on.
			if r := mustEnsure(t, dir, c.alg, c.now); r.Generated {
				t.Errorf("new files not reused: %s", r.Reason)
			}
		})
	}
}

func TestParseAlgorithm(t *testing.T) {
	for in, want := range map[string]Algorithm{"": ECDSA, "ecdsa": ECDSA, "rsa": RSA} {
		if got, err := ParseAlgorithm(in); err != nil || got != want {
			t.Errorf("ParseAlgorithm(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	if _, err := ParseAlgorithm("ed25519"); err == nil {
		t.Error("ed25519 accepted")
	}
}
