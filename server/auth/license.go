package auth

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
)

// BuiltinLicensePublicKey is the public half of the copydesk vendor key
// (base64 of the raw 32-byte Ed25519 key). The private half never leaves the
// vendor; installations that issue their own keys pass --license-public-key.
const BuiltinLicensePublicKey = "hqY0eq7y+zq232nb+B6pnORjHhyhOkPw3pIOdQO4XzE="

// License key layout: "CDL1.<payload>.<signature>", both parts unpadded
// base64url; the signature covers licenseContext + the payload part.
const (
	licensePrefix  = "CDL1"
	licenseContext = "copydesk-license-v1\n"
)

// License states.
const (
	LicenseInactive = "inactive"
	LicenseActive   = "active"
	LicenseExpired  = "expired"
	LicenseInvalid  = "invalid"
)

// LicensePayload is what a license key says.
type LicensePayload struct {
	ID        string     `json:"id"`
	Licensee  string     `json:"licensee"`
	Plan      string     `json:"plan"`
	Seats     int        `json:"seats"`
	IssuedAt  time.Time  `json:"issued_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

var licenseIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{6,64}$`) })
var planPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`) })

func (p *LicensePayload) validate() error {
	switch {
	case !licenseIDPattern().MatchString(p.ID):
		return errors.New("id must be 6 to 64 letters, digits, '-' or '_'")
	case strings.TrimSpace(p.Licensee) == "" || len(p.Licensee) > 200:
		return errors.New("licensee must be 1 to 200 characters")
	case !planPattern().MatchString(p.Plan):
		return errors.New("plan must be a lower-case word")
	case p.Seats < 1 || p.Seats > 100000:
		return errors.New("seats must be between 1 and 100000")
	case p.IssuedAt.IsZero():
		return errors.New("issued_at is missing")
	case p.ExpiresAt != nil && !p.ExpiresAt.After(p.IssuedAt):
		return errors.New("expires_at must be after issued_at")
	}
	return nil
}

// SignLicense makes a license key. It is the vendor side of licensing (the
// `copydesk license issue` command).
func SignLicense(priv ed25519.PrivateKey, p LicensePayload) (string, error) {
	p.IssuedAt = p.IssuedAt.UTC().Truncate(time.Second)
	if p.ExpiresAt != nil {
		e := p.ExpiresAt.UTC().Truncate(time.Second)
		p.ExpiresAt = &e
	}
	if err := p.validate(); err != nil {
		return "", fmt.Errorf("license: %w", err)
	}
	body, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	part := base64.RawURLEncoding.EncodeToString(body)
	sig := ed25519.Sign(priv, []byte(licenseContext+part))
	return licensePrefix + "." + part + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// ParseLicense checks a key's form and signature and returns its payload.
// It does not judge expiry: see LicenseState.
func ParseLicense(pub ed25519.PublicKey, key string) (*LicensePayload, error) {
	key = strings.TrimSpace(key)
	parts := strings.Split(key, ".")
	if len(parts) != 3 || parts[0] != licensePrefix {
		return nil, errors.New("it is not a copydesk license key")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil, errors.New("its signature is malformed")
	}
	if !ed25519.Verify(pub, []byte(licenseContext+parts[1]), sig) {
		return nil, errors.New("its signature does not match")
	}
	body, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, errors.New("its payload is malformed")
	}
	var p LicensePayload
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, errors.New("its payload is malformed")
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// LicenseState judges a signed payload at now.
func LicenseState(p *LicensePayload, now time.Time) string {
	if p.ExpiresAt != nil && !now.Before(*p.ExpiresAt) {
		return LicenseExpired
	}
	return LicenseActive
}

// ParsePublicKey reads an Ed25519 public key given as base64 of the raw 32
// bytes or as a PEM "PUBLIC KEY" block.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	if block, _ := pem.Decode([]byte(s)); block != nil {
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("license public key: %w", err)
		}
		pub, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, errors.New("license public key: not an Ed25519 key")
		}
		return pub, nil
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, errors.New("license public key: want base64 of 32 bytes or a PEM public key")
	}
	return ed25519.PublicKey(raw), nil
}

// ParsePrivateKey reads an Ed25519 private key from a PEM "PRIVATE KEY"
// (PKCS #8) block, as `copydesk license keygen` writes it.
func ParsePrivateKey(pemBytes []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("license private key: no PEM block")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("license private key: %w", err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, errors.New("license private key: not an Ed25519 key")
	}
	return priv, nil
}

// MarshalKeyPair encodes a key pair as PEM (private, PKCS #8) and base64
// (public, raw), the forms the CLI and the server read.
func MarshalKeyPair(pub ed25519.PublicKey, priv ed25519.PrivateKey) (privPEM []byte, pubB64 string, err error) {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, "", err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), base64.StdEncoding.EncodeToString(pub), nil
}
