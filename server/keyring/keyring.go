// Package keyring holds copydesk's secret key and the keys derived from it:
// the JWT signing key, the key that seals stored secrets (API credentials,
// TOTP secrets) and the key of recovery code MACs. No derived key is ever
// written anywhere, so a copy of the database alone reveals no secret and
// lets nobody try recovery codes offline.
package keyring

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/hkdf"
)

// FileName is the key file inside the data directory.
const FileName = "secret.key"

// MinSecretLen is the shortest secret accepted from COPYDESK_SECRET_KEY.
const MinSecretLen = 32

// Keyring holds the derived keys.
type Keyring struct {
	jwt      []byte
	seal     []byte
	recovery []byte
	check    []byte
}

// New derives the keys from a secret.
func New(secret []byte) (*Keyring, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("keyring: the secret key must be at least %d bytes", MinSecretLen)
	}
	return &Keyring{jwt: derive(secret, "copydesk jwt v1"), seal: derive(secret, "copydesk seal v1"),
		recovery: derive(secret, "copydesk recovery codes v1"), check: derive(secret, "copydesk key check v1")[:16]}, nil
}

func derive(secret []byte, info string) []byte {
	out := make([]byte, 32)
	if _, err := io.ReadFull(hkdf.New(sha256.New, secret, nil, []byte(info)), out); err != nil {
		panic(err) // cannot happen for 32 bytes of SHA-256 HKDF
	}
	return out
}

// LoadOrCreate returns the keyring for a data directory. An explicit secret
// (from COPYDESK_SECRET_KEY) wins; otherwise DATA_DIR/secret.key is read, or
// created with 32 random bytes and mode 0600 when missing.
func LoadOrCreate(dataDir, explicit string) (kr *Keyring, created bool, err error) {
	if explicit != "" {
		kr, err := New([]byte(explicit))
		return kr, false, err
	}
	path := filepath.Join(dataDir, FileName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		raw := make([]byte, 32)
		if _, err := rand.Read(raw); err != nil {
			return nil, false, err
		}
		text := hex.EncodeToString(raw) + "\n"
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, false, fmt.Errorf("keyring: create %s: %w", path, err)
		}
		if _, err := f.WriteString(text); err != nil {
			f.Close()
			return nil, false, fmt.Errorf("keyring: write %s: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, false, err
		}
		if err := f.Close(); err != nil {
			return nil, false, err
		}
		kr, err := New([]byte(strings.TrimSpace(text)))
		return kr, true, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("keyring: read %s: %w", path, err)
	}
	if info, err := os.Stat(path); err == nil && info.Mode().Perm()&0o077 != 0 {
		// Tighten rather than refuse: the file was probably copied from a backup.
		_ = os.Chmod(path, 0o600)
	}
	kr, err = New([]byte(strings.TrimSpace(string(b))))
	if err != nil {
		return nil, false, fmt.Errorf("keyring: %s: %w", path, err)
	}
	return kr, false, nil
}

// CheckValue identifies the secret without revealing it: a value derived
// from it as the other keys are, which a database stores to refuse a
// different secret (store.DB.CheckSecretKey).
func (k *Keyring) CheckValue() string { return hex.EncodeToString(k.check) }

// JWTKey is the HS256 signing key.
func (k *Keyring) JWTKey() []byte { return k.jwt }

// RecoveryCodeMAC is HMAC-SHA256 of msg (a recovery code's digest) under a
// key derived from the secret: what is stored of a recovery code, so that
// a copy of the database alone cannot be used to guess codes offline.
func (k *Keyring) RecoveryCodeMAC(msg []byte) []byte {
	m := hmac.New(sha256.New, k.recovery)
	m.Write(msg)
	return m.Sum(nil)
}

// Seal encrypts plaintext with XChaCha20-Poly1305; the random nonce is
// prepended. aad binds the ciphertext to where it is stored (e.g.
// "user:7:totp"), so a sealed value copied to another row does not open.
func (k *Keyring) Seal(plaintext []byte, aad string) ([]byte, error) {
	aead, err := chacha20poly1305.NewX(k.seal)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return aead.Seal(nonce, nonce, plaintext, []byte(aad)), nil
}

// ErrOpen means a sealed value could not be opened: wrong key or tampering.
var ErrOpen = errors.New("keyring: sealed value does not open with this secret key")

// Open decrypts what Seal produced with the same aad.
func (k *Keyring) Open(sealed []byte, aad string) ([]byte, error) {
	aead, err := chacha20poly1305.NewX(k.seal)
	if err != nil {
		return nil, err
	}
	if len(sealed) < aead.NonceSize()+aead.Overhead() {
		return nil, ErrOpen
	}
	pt, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], []byte(aad))
	if err != nil {
		return nil, ErrOpen
	}
	return pt, nil
}
