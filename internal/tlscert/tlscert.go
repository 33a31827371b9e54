// Package tlscert owns the lab's TLS certificates: its own certificate
// authority and the one server certificate every proxy presents on its TLS
// port, made with Go's crypto on first use and kept under .cache/tls/
// (git-ignored). Ensure reuses the files while they are whole, valid and of
// the asked key algorithm, and makes a new CA and certificate otherwise.
// The private keys are written 0600 and are only ever mounted read-only
// into the proxies at run time, never committed or baked into an image;
// clients (the loadgen, the e2e tests) trust the lab CA alone (CAPool).
package tlscert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"proxybench/internal/atomicfile"
	"proxybench/internal/stack"
)

// Algorithm is the key type of the CA and the server certificate.
type Algorithm string

const (
	ECDSA Algorithm = "ecdsa" // ECDSA P-256, the default
	RSA   Algorithm = "rsa"   // RSA 2048
)

// ParseAlgorithm accepts "ecdsa" and "rsa"; "" is ECDSA.
func ParseAlgorithm(s string) (Algorithm, error) {
	switch Algorithm(s) {
	case "", ECDSA:
		return ECDSA, nil
	case RSA:
		return RSA, nil
	}
	return "", fmt.Errorf("key algorithm %q: want ecdsa (P-256, the default) or rsa (2048 bits)", s)
}

// DefaultDir is where the files live, relative to the repository root; the
// compose file mounts it read-only into every proxy at MountDir.
const DefaultDir = ".cache/tls"

// MountDir is where the proxies find the files inside their containers
// (beside /etc/proxybench, which Traefik's and the custom proxy's
// read-only configuration mounts take whole).
const MountDir = "/etc/proxybench-tls"

// The file names inside the directory.
const (
	CAFile    = "ca.crt"     // the lab CA's certificate: what clients trust
	CAKeyFile = "ca.key"     // the lab CA's key (0600), used only to sign
	CertFile  = "server.crt" // the server certificate every proxy presents
	KeyFile   = "server.key" // its key (0600)
)

const (
	// lifetime is how long a new CA and certificate are valid.
	lifetime = 365 * 24 * time.Hour
	// renewBefore: files this close to expiry are made anew, so that no
	// run, however long, crosses the expiry.
	renewBefore = 30 * 24 * time.Hour
	keyMode     = 0o600
)

// IPs are the certificate's IP SANs: every proxy listens on loopback.
var IPs = []net.IP{net.IPv4(127, 0, 0, 1).To4(), net.IPv6loopback}

// DNSNames are the certificate's DNS SANs: localhost and every proxy's
// compose service name (the names containers reach each other by).
func DNSNames() []string {
	out := []string{"localhost"}
	for _, p := range stack.Proxies {
		out = append(out, p.Name)
	}
	return out
}

// Result says what Ensure found or made.
type Result struct {
	Dir       string
	Algorithm Algorithm
	// Generated is true when Ensure made new files; Reason says why.
	Generated bool
	Reason    string
	// Fingerprint is the hex SHA-256 of the server certificate's DER: a
	// change of certificate changes it (the stack recreates the proxies).
	Fingerprint string
	NotAfter    time.Time
}

// Path is the path of one of the files in dir.
func Path(dir, name string) string { return filepath.Join(dir, name) }

// Ensure makes sure dir holds a valid CA and server certificate of the
// algorithm alg at time now, and makes both anew when one is missing,
// unreadable, of another algorithm, expired or close to it, signed by
// another CA, lacking a SAN, or when a key file is readable by others.
func Ensure(dir string, alg Algorithm, now time.Time) (Result, error) {
	res := Result{Dir: dir, Algorithm: alg}
	leaf, err := check(dir, alg, now)
	if err == nil {
		res.Fingerprint, res.NotAfter = Fingerprint(leaf), leaf.NotAfter
		return res, nil
	}
	res.Generated, res.Reason = true, err.Error()
	if leaf, err = generate(dir, alg, now); err != nil {
		return res, err
	}
	res.Fingerprint, res.NotAfter = Fingerprint(leaf), leaf.NotAfter
	return res, nil
}

// CAPool is a pool holding the lab CA of dir alone.
func CAPool(dir string) (*x509.CertPool, error) {
	ca, err := ReadCert(Path(dir, CAFile))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool, nil
}

// Fingerprint is the hex SHA-256 of a certificate's DER.
func Fingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	return hex.EncodeToString(sum[:])
}

// check returns the server certificate when every file in dir is fit for
// reuse, else why not.
func check(dir string, alg Algorithm, now time.Time) (*x509.Certificate, error) {
	ca, err := ReadCert(Path(dir, CAFile))
	if err != nil {
		return nil, err
	}
	leaf, err := ReadCert(Path(dir, CertFile))
	if err != nil {
		return nil, err
	}
	for _, c := range []struct {
		cert      *x509.Certificate
		file, key string
	}{{ca, CAFile, CAKeyFile}, {leaf, CertFile, KeyFile}} {
		if got := algorithmOf(c.cert.PublicKey); got != alg {
			return nil, fmt.Errorf("%s: a %s key, want %s", Path(dir, c.key), got, alg)
		}
		if err := checkKey(Path(dir, c.key), c.cert.PublicKey); err != nil {
			return nil, err
		}
		if now.Before(c.cert.NotBefore) || now.Add(renewBefore).After(c.cert.NotAfter) {
			return nil, fmt.Errorf("%s: valid %s to %s, want at least %s left", Path(dir, c.file),
				c.cert.NotBefore.Format(time.RFC3339), c.cert.NotAfter.Format(time.RFC3339), renewBefore)
		}
	}
	if !ca.IsCA {
		return nil, fmt.Errorf("%s is no CA certificate", Path(dir, CAFile))
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	for _, name := range append(DNSNames(), ipStrings()...) {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool, CurrentTime: now,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			return nil, fmt.Errorf("%s for %s: %w", Path(dir, CertFile), name, err)
		}
	}
	return leaf, nil
}

func ipStrings() []string {
	out := make([]string, len(IPs))
	for i, ip := range IPs {
		out[i] = ip.String()
	}
	return out
}

func algorithmOf(pub any) Algorithm {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve == elliptic.P256() {
			return ECDSA
		}
		return Algorithm("ecdsa-" + k.Curve.Params().Name)
	case *rsa.PublicKey:
		if k.N.BitLen() == 2048 {
			return RSA
		}
		return Algorithm(fmt.Sprintf("rsa-%d", k.N.BitLen()))
	}
	return Algorithm(fmt.Sprintf("%T", pub))
}

// ReadCert reads the PEM certificate at path.
func ReadCert(path string) (*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s: no PEM certificate", path)
	}
	return x509.ParseCertificate(blk.Bytes)
}

// checkKey wants the key file private to its owner and matching pub.
func checkKey(path string, pub any) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.Mode().Perm() != keyMode {
		return fmt.Errorf("%s: mode %v, want %v", path, st.Mode().Perm(), os.FileMode(keyMode))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return fmt.Errorf("%s: no PEM PKCS #8 private key", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return fmt.Errorf("%s: a %T, not a signing key", path, k)
	}
	if eq, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !eq.Equal(pub) {
		return fmt.Errorf("%s does not match its certificate", path)
	}
	return nil
}

func newKey(alg Algorithm) (crypto.Signer, error) {
	switch alg {
	case ECDSA:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case RSA:
		return rsa.GenerateKey(rand.Reader, 2048)
	}
	return nil, fmt.Errorf("unknown key algorithm %q", alg)
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// generate makes a new CA and server certificate in dir. Every file is
// written beside its final name and renamed into place, the certificates
// last, so a crash leaves no half-written file that check would accept.
func generate(dir string, alg Algorithm, now time.Time) (*x509.Certificate, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	caKey, err := newKey(alg)
	if err != nil {
		return nil, err
	}
	leafKey, err := newKey(alg)
	if err != nil {
		return nil, err
	}
	start := now.Add(-time.Hour).Truncate(time.Second) // a little clock skew between host and containers
	caSerial, err := serial()
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          caSerial,
		Subject:               pkix.Name{Organization: []string{"proxybench lab"}, CommonName: "proxybench lab CA"},
		NotBefore:             start,
		NotAfter:              start.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	leafSerial, err := serial()
	if err != nil {
		return nil, err
	}
	usage := x509.KeyUsageDigitalSignature
	if alg == RSA {
		usage |= x509.KeyUsageKeyEncipherment // TLS 1.2's RSA key exchange is not offered, but clients may look for it
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: leafSerial,
		Subject:      pkix.Name{Organization: []string{"proxybench lab"}, CommonName: "localhost"},
		NotBefore:    start,
		NotAfter:     start.Add(lifetime),
		KeyUsage:     usage,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     DNSNames(),
		IPAddresses:  slices.Clone(IPs),
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, leafKey.Public(), caKey)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(leafDER)
	if err != nil {
		return nil, err
	}
	caKeyDER, err := x509.MarshalPKCS8PrivateKey(caKey)
	if err != nil {
		return nil, err
	}
	leafKeyDER, err := x509.MarshalPKCS8PrivateKey(leafKey)
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		der  []byte
		typ  string
		mode os.FileMode
	}{
		{CAKeyFile, caKeyDER, "PRIVATE KEY", keyMode},
		{KeyFile, leafKeyDER, "PRIVATE KEY", keyMode},
		{CAFile, caDER, "CERTIFICATE", 0o644},
		{CertFile, leafDER, "CERTIFICATE", 0o644},
	} {
		if err := atomicfile.WriteFile(Path(dir, f.name), pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), f.mode); err != nil {
			return nil, err
		}
	}
	return leaf, nil
}
