package admission

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// issue is a certificate for name signed by parent (self-signed when nil),
// and its key.
func issue(t *testing.T, name string, parent *tls.Certificate, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{name}, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	signer, signerKey := tpl, any(key)
	if parent == nil {
		tpl.IsCA, tpl.BasicConstraintsValid, tpl.KeyUsage = true, true, x509.KeyUsageCertSign
	} else {
		signer, signerKey = parent.Leaf, parent.PrivateKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// With --admission-client-ca, a caller without a client certificate, or
// with one another CA signed, is refused at the handshake; the API
// server's, signed by the CA, is answered.
func TestClientCertificateAsked(t *testing.T) {
	ca, other := issue(t, "api-server-ca", nil, x509.ExtKeyUsageAny), issue(t, "someone", nil, x509.ExtKeyUsageAny)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Leaf.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	auth, err := ClientAuth(caFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("verdict")) }))
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	auth(srv.TLS)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	defer srv.Close()
	call := func(certs ...tls.Certificate) error {
		tr := srv.Client().Transport.(*http.Transport).Clone()
		// Sent whatever CAs the server names: a forger sends what it has.
		tr.TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if len(certs) == 0 {
				return &tls.Certificate{}, nil
			}
			return &certs[0], nil
		}
		resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	if err := call(); err == nil {
		t.Error("a caller without a client certificate was answered")
	}
	if err := call(issue(t, "forger", &other, x509.ExtKeyUsageClientAuth)); err == nil {
		t.Error("a caller whose certificate another CA signed was answered")
	}
	if err := call(issue(t, "kube-apiserver", &ca, x509.ExtKeyUsageClientAuth)); err != nil {
		t.Errorf("the API server's certificate: %v", err)
	}
}

// A client CA file that is missing or holds no certificate is refused at
// start, naming the flag.
func TestClientCAFileRefused(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(empty, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(t.TempDir(), "missing.pem"), empty} {
		if _, err := ClientAuth(path); err == nil || !strings.Contains(err.Error(), "--admission-client-ca") {
			t.Errorf("%s: error %v, want one naming --admission-client-ca", path, err)
		}
	}
}
