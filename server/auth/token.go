package auth

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Claims are what a copydesk token carries: the user (sub), the session
// (sid), and the standard times. Every request also checks the session and
// the user in the database, so a valid signature alone is not enough.
type Claims struct {
	SessionID int64 `json:"sid"`
	// SessionNonce is the session's random nonce: session ids can be
	// reused (a restore brings back an older id sequence), nonces cannot,
	// so a token of an ended session never matches a new one.
	SessionNonce string `json:"sn,omitempty"`
	jwt.RegisteredClaims
}

// UserID is the subject as an integer.
func (c *Claims) UserID() (int64, error) {
	return strconv.ParseInt(c.Subject, 10, 64)
}

// Tokens issues and checks HS256 JWTs.
type Tokens struct {
	key    []byte
	parser *jwt.Parser
	now    func() time.Time
}

// NewTokens makes a token issuer with key and clock.
func NewTokens(key []byte, now func() time.Time) *Tokens {
	return &Tokens{
		key: key,
		now: now,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithTimeFunc(now),
		),
	}
}

// Issue signs a token for a user's session (with its nonce) that expires
// at exp.
func (t *Tokens) Issue(userID, sessionID int64, nonce string, exp time.Time) (string, error) {
	jti := make([]byte, 12)
	if _, err := rand.Read(jti); err != nil {
		return "", err
	}
	now := t.now()
	c := Claims{
		SessionID:    sessionID,
		SessionNonce: nonce,
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   strconv.FormatInt(userID, 10),
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(exp),
			ID:        base64.RawURLEncoding.EncodeToString(jti),
		},
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(t.key)
}

// ErrExpired distinguishes an expired token so the client can be told to
// refresh or sign in again.
var ErrExpired = errors.New("the token has expired")

// Parse checks a token's signature, algorithm and times.
func (t *Tokens) Parse(token string) (*Claims, error) {
	var c Claims
	_, err := t.parser.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.key, nil })
	if errors.Is(err, jwt.ErrTokenExpired) {
		return nil, ErrExpired
	}
	if err != nil {
		return nil, err
	}
	if c.SessionID <= 0 {
		return nil, errors.New("the token names no session")
	}
	if _, err := c.UserID(); err != nil {
		return nil, errors.New("the token names no user")
	}
	return &c, nil
}
