package keyring_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/keyring"
)

func mustLoad(t *testing.T, dir, explicit string) (*keyring.Keyring, bool) {
	t.Helper()
	kr, created, err := keyring.LoadOrCreate(dir, explicit)
	if err != nil {
		t.Fatalf("LoadOrCreate: %v", err)
	}
	return kr, created
}

// sameKeys proves two keyrings hold the same derived keys: one opens what
// the other sealed, and both sign with the same JWT key.
func sameKeys(t *testing.T, a, b *keyring.Keyring) {
	t.Helper()
	sealed, err := a.Seal([]byte("api-key"), "configuration:1")
	if err != nil {
		t.Fatal(err)
	}
	pt, err := b.Open(sealed, "configuration:1")
	if err != nil || string(pt) != "api-key" {
		t.Fatalf("the second keyring cannot open what the first sealed: %q, %v", pt, err)
	}
	if !bytes.Equal(a.JWTKey(), b.JWTKey()) {
		t.Fatal("the JWT keys differ")
	}
}

func TestLoadOrCreate(t *testing.T) {
	t.Run("CreatesPrivateKeyFile", func(t *testing.T) {
		dir := t.TempDir()
		first, created := mustLoad(t, dir, "")
		if !created {
			t.Error("created = false for a new data directory")
		}
		path := filepath.Join(dir, keyring.FileName)
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s has mode %#o, want 0600", keyring.FileName, perm)
		}
		b, _ := os.ReadFile(path)
		if secret := strings.TrimSpace(string(b)); len(secret) < keyring.MinSecretLen {
			t.Errorf("the key file holds %d characters, want at least %d", len(secret), keyring.MinSecretLen)
		}

		again, created := mustLoad(t, dir, "")
		if created {
			t.Error("created = true when the key file already existed")
		}
		sameKeys(t, first, again)
		sameKeys(t, again, first)
	})

	t.Run("EachDirectoryGetsItsOwnKey", func(t *testing.T) {
		a, _ := mustLoad(t, t.TempDir(), "")
		b, _ := mustLoad(t, t.TempDir(), "")
		if bytes.Equal(a.JWTKey(), b.JWTKey()) {
			t.Fatal("two new data directories share a JWT key")
		}
		sealed, _ := a.Seal([]byte("x"), "aad")
		if _, err := b.Open(sealed, "aad"); !errors.Is(err, keyring.ErrOpen) {
			t.Errorf("another directory's key opened the value: %v", err)
		}
	})

	t.Run("ExplicitSecretWins", func(t *testing.T) {
		dir := t.TempDir()
		secret := strings.Repeat("s", keyring.MinSecretLen)
		kr, created := mustLoad(t, dir, secret)
		if created {
			t.Error("created = true with an explicit secret")
		}
		if _, err := os.Stat(filepath.Join(dir, keyring.FileName)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("an explicit secret still wrote a key file: %v", err)
		}
		direct, err := keyring.New([]byte(secret))
		if err != nil {
			t.Fatal(err)
		}
		sameKeys(t, kr, direct)
	})

	t.Run("ShortExplicitSecretRefused", func(t *testing.T) {
		_, _, err := keyring.LoadOrCreate(t.TempDir(), strings.Repeat("s", keyring.MinSecretLen-1))
		if err == nil {
			t.Fatal("a 31-byte secret was accepted")
		}
		if _, err := keyring.New(make([]byte, keyring.MinSecretLen-1)); err == nil {
			t.Fatal("New accepted a 31-byte secret")
		}
	})

	t.Run("ExistingFileUsed", func(t *testing.T) {
		dir := t.TempDir()
		secret := strings.Repeat("k", 40)
		if err := os.WriteFile(filepath.Join(dir, keyring.FileName), []byte(secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		kr, created := mustLoad(t, dir, "")
		if created {
			t.Error("created = true for an existing key file")
		}
		direct, _ := keyring.New([]byte(secret))
		sameKeys(t, kr, direct)
	})

	t.Run("ShortKeyFileRefused", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, keyring.FileName), []byte("short\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := keyring.LoadOrCreate(dir, ""); err == nil {
			t.Fatal("a key file with a 5-byte secret was accepted")
		}
	})

	t.Run("LooseModeTightened", func(t *testing.T) {
		for _, mode := range []os.FileMode{0o640, 0o604, 0o666} {
			dir := t.TempDir()
			path := filepath.Join(dir, keyring.FileName)
			if err := os.WriteFile(path, []byte(strings.Repeat("m", 64)), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, mode); err != nil { // WriteFile's mode is subject to umask
				t.Fatal(err)
			}
			mustLoad(t, dir, "")
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if perm := info.Mode().Perm(); perm != 0o600 {
				t.Errorf("a key file with mode %#o was left at %#o, want 0600", mode, perm)
			}
		}
	})

	t.Run("MissingDirectoryFails", func(t *testing.T) {
		if _, _, err := keyring.LoadOrCreate(filepath.Join(t.TempDir(), "missing"), ""); err == nil {
			t.Fatal("LoadOrCreate succeeded in a directory that does not exist")
		}
	})
}

func TestSealOpen(t *testing.T) {
	kr, err := keyring.New([]byte(strings.Repeat("a", 32)))
	if err != nil {
		t.Fatal(err)
	}
	other, err := keyring.New([]byte(strings.Repeat("b", 32)))
	if err != nil {
		t.Fatal(err)
	}
	const aad = "user:7:totp"
	plaintext := []byte("JBSWY3DPEHPK3PXP")
	sealed, err := kr.Seal(plaintext, aad)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("RoundTrip", func(t *testing.T) {
		got, err := kr.Open(sealed, aad)
		if err != nil || !bytes.Equal(got, plaintext) {
			t.Fatalf("Open = %q, %v", got, err)
		}
		if bytes.Contains(sealed, plaintext) {
			t.Error("the sealed value contains the plaintext")
		}
	})

	t.Run("EmptyPlaintext", func(t *testing.T) {
		s, err := kr.Seal(nil, aad)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := kr.Open(s, aad); err != nil || len(got) != 0 {
			t.Fatalf("Open = %q, %v", got, err)
		}
	})

	t.Run("FreshNonceEachTime", func(t *testing.T) {
		again, _ := kr.Seal(plaintext, aad)
		if bytes.Equal(again, sealed) {
			t.Error("sealing the same value twice gave the same bytes")
		}
	})

	flip := func(i int) []byte {
		b := bytes.Clone(sealed)
		b[i] ^= 0x01
		return b
	}
	refused := []struct {
		name   string
		kr     *keyring.Keyring
		sealed []byte
		aad    string
	}{
		{"WrongAAD", kr, sealed, "user:8:totp"},
		{"EmptyAAD", kr, sealed, ""},
		{"OtherSecret", other, sealed, aad},
		{"Empty", kr, nil, aad},
		{"NonceOnly", kr, sealed[:24], aad},
		{"TruncatedByOne", kr, sealed[:len(sealed)-1], aad},
		{"ShorterThanOverhead", kr, sealed[:24+15], aad},
		{"TamperedNonce", kr, flip(0), aad},
		{"TamperedCiphertext", kr, flip(24), aad},
		{"TamperedTag", kr, flip(len(sealed) - 1), aad},
		{"Extended", kr, append(bytes.Clone(sealed), 0), aad},
	}
	for _, tt := range refused {
		t.Run(tt.name+"Refused", func(t *testing.T) {
			got, err := tt.kr.Open(tt.sealed, tt.aad)
			if !errors.Is(err, keyring.ErrOpen) {
				t.Fatalf("Open = %q, %v; want ErrOpen", got, err)
			}
			if got != nil {
				t.Errorf("Open returned %q along with the error", got)
			}
		})
	}
}

func TestJWTKeyIsDerived(t *testing.T) {
	secret := []byte(strings.Repeat("z", 32))
	kr, _ := keyring.New(secret)
	same, _ := keyring.New(secret)
	other, _ := keyring.New([]byte(strings.Repeat("y", 32)))
	switch {
	case len(kr.JWTKey()) != 32:
		t.Errorf("JWT key has %d bytes, want 32", len(kr.JWTKey()))
	case bytes.Equal(kr.JWTKey(), secret):
		t.Error("the JWT key is the raw secret, not a derived key")
	case !bytes.Equal(kr.JWTKey(), same.JWTKey()):
		t.Error("the same secret gave two JWT keys")
	case bytes.Equal(kr.JWTKey(), other.JWTKey()):
		t.Error("different secrets gave the same JWT key")
	}
}

func TestRecoveryCodeMAC(t *testing.T) {
	secret := []byte(strings.Repeat("z", 32))
	kr, _ := keyring.New(secret)
	same, _ := keyring.New(secret)
	other, _ := keyring.New([]byte(strings.Repeat("y", 32)))
	msg := []byte("digest of a recovery code")
	// HMAC-SHA256 with the JWT key would be a key shared between purposes.
	jwtMAC := hmac.New(sha256.New, kr.JWTKey())
	jwtMAC.Write(msg)
	switch got := kr.RecoveryCodeMAC(msg); {
	case len(got) != sha256.Size:
		t.Errorf("MAC has %d bytes, want %d", len(got), sha256.Size)
	case !bytes.Equal(got, same.RecoveryCodeMAC(msg)):
		t.Error("the same secret gave two MACs")
	case bytes.Equal(got, other.RecoveryCodeMAC(msg)):
		t.Error("different secrets gave the same MAC")
	case bytes.Equal(got, kr.RecoveryCodeMAC([]byte("another digest"))):
		t.Error("different messages gave the same MAC")
	case bytes.Equal(got, jwtMAC.Sum(nil)):
		t.Error("the recovery code key is the JWT key")
	}
}

// The check value is the same for one secret, differs for another, and is
// none of the keys.
func TestCheckValue(t *testing.T) {
	a, err := keyring.New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	again, _ := keyring.New([]byte("0123456789abcdef0123456789abcdef"))
	other, _ := keyring.New([]byte("fedcba9876543210fedcba9876543210"))
	if a.CheckValue() != again.CheckValue() || len(a.CheckValue()) != 32 {
		t.Errorf("check value %q, again %q: want the same 32 hex digits", a.CheckValue(), again.CheckValue())
	}
	if a.CheckValue() == other.CheckValue() {
		t.Error("two secrets have the same check value")
	}
	if strings.Contains(hex.EncodeToString(a.JWTKey()), a.CheckValue()) {
		t.Error("the check value is part of the JWT key")
	}
}
