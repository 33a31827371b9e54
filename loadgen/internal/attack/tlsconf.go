package attack

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"proxybench/internal/tlscert"
)

// DefaultCAFile is the lab CA (internal/tlscert), relative to the
// repository root: trusted when TLSSettings.CAFile is "" and it exists.
var DefaultCAFile = filepath.Join(tlscert.DefaultDir, tlscert.CAFile)

// tlsConfig is the TLS config of an attack of s, shared by its
// connections: the CAs trusted, the versions, the server name and, unless
// resumption is off, one session cache for them all. NextProtos is
// package wire's.
func tlsConfig(s *Spec, conns int) (*tls.Config, error) {
	t := &s.TLS
	c := &tls.Config{RootCAs: t.RootCAs, MinVersion: t.MinVersion, MaxVersion: t.MaxVersion, ServerName: t.ServerName}
	if c.MinVersion == 0 {
		c.MinVersion = tls.VersionTLS12
	}
	if c.RootCAs == nil {
		pool, err := caPool(t.CAFile)
		if err != nil {
			return nil, err
		}
		c.RootCAs = pool
	}
	if !t.DisableResumption {
		c.ClientSessionCache = tls.NewLRUClientSessionCache(max(conns, 64))
	}
	return c, nil
}

// caPool reads the CAs of file; "" is DefaultCAFile when it exists, else
// nil (the system roots).
func caPool(file string) (*x509.CertPool, error) {
	name := file
	if name == "" {
		name = DefaultCAFile
	}
	pem, err := os.ReadFile(name)
	switch {
	case file == "" && errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("spec TLS CAFile: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("spec TLS CAFile %s holds no PEM certificate: give the CA's certificate (e.g. %s, loadgen certs makes it)", name, DefaultCAFile)
	}
	return pool, nil
}
