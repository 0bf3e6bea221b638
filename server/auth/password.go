package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Hasher hashes passwords with argon2id and encodes them in the PHC string
// format ($argon2id$v=19$m=...,t=...,p=...$salt$hash), so the parameters can
// be raised later without invalidating stored hashes.
type Hasher struct {
	Time      uint32
	MemoryKiB uint32
	Threads   uint8
}

// DefaultHasher follows the OWASP recommendation for argon2id (19 MiB, 2
// passes, 1 lane): about 20-40 ms on a small VPS core.
var DefaultHasher = Hasher{Time: 2, MemoryKiB: 19 * 1024, Threads: 1}

const (
	saltLen = 16
	keyLen  = 32
)

// Hash returns the encoded hash of password.
func (h Hasher) Hash(password string) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	return h.encode(salt, argon2.IDKey([]byte(password), salt, h.Time, h.MemoryKiB, h.Threads, keyLen)), nil
}

// Decoy returns a hash in h's parameters that no password matches: a
// random salt and a random key. Verifying against it costs exactly what
// verifying against a real hash costs, which is what a sign-in for an
// unknown address needs, and making it costs nothing. (Hashing a dummy
// password instead took 100 ms and 19 MiB at every start.)
func (h Hasher) Decoy() (string, error) {
	b := make([]byte, saltLen+keyLen)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return h.encode(b[:saltLen], b[saltLen:]), nil
}

func (h Hasher) encode(salt, key []byte) string {
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, h.MemoryKiB, h.Time, h.Threads,
		b64.EncodeToString(salt), b64.EncodeToString(key))
}

var errBadHash = errors.New("auth: malformed password hash")

// Verify reports whether password matches encoded, using the parameters
// stored in encoded. The comparison takes constant time.
func Verify(encoded, password string) (bool, error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errBadHash
	}
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || t == 0 || p == 0 {
		return false, errBadHash
	}
	b64 := base64.RawStdEncoding
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return false, errBadHash
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) == 0 {
		return false, errBadHash
	}
	got := argon2.IDKey([]byte(password), salt, t, m, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}
