package auth

import (
	"errors"
	"strings"
	"testing"
)

var cheapHasher = Hasher{Time: 1, MemoryKiB: 64, Threads: 1}

func TestHashVerify(t *testing.T) {
	hash, err := cheapHasher.Hash("correct horse")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("Format", func(t *testing.T) {
		if !strings.HasPrefix(hash, "$argon2id$v=19$m=64,t=1,p=1$") || len(strings.Split(hash, "$")) != 6 {
			t.Errorf("hash %q is not a PHC argon2id string with the hasher's parameters", hash)
		}
		if strings.Contains(hash, "correct horse") {
			t.Error("the hash contains the password")
		}
	})

	t.Run("RightPasswordMatches", func(t *testing.T) {
		ok, err := Verify(hash, "correct horse")
		if err != nil || !ok {
			t.Fatalf("Verify = %v, %v; want true", ok, err)
		}
	})

	wrong := []string{"correct horsE", "correct horse ", "", "correct"}
	for _, pw := range wrong {
		t.Run("WrongPasswordFails/"+pw, func(t *testing.T) {
			ok, err := Verify(hash, pw)
			if err != nil || ok {
				t.Fatalf("Verify(%q) = %v, %v; want false, nil", pw, ok, err)
			}
		})
	}

	t.Run("SaltedHashesDiffer", func(t *testing.T) {
		again, err := cheapHasher.Hash("correct horse")
		if err != nil {
			t.Fatal(err)
		}
		if again == hash {
			t.Fatal("two hashes of the same password are equal: no salt")
		}
		if strings.Split(again, "$")[4] == strings.Split(hash, "$")[4] {
			t.Error("two hashes share a salt")
		}
		if ok, _ := Verify(again, "correct horse"); !ok {
			t.Error("the second hash does not verify")
		}
	})

	t.Run("ParametersComeFromTheHash", func(t *testing.T) {
		stronger := Hasher{Time: 2, MemoryKiB: 128, Threads: 2}
		h, err := stronger.Hash("pw-with-other-params")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(h, "$m=128,t=2,p=2$") {
			t.Errorf("hash %q does not record its parameters", h)
		}
		if ok, err := Verify(h, "pw-with-other-params"); err != nil || !ok {
			t.Errorf("Verify = %v, %v; want true", ok, err)
		}
	})
}

func TestVerifyMalformed(t *testing.T) {
	good, err := cheapHasher.Hash("pw")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(good, "$") // "", argon2id, v=19, m=..,t=..,p=.., salt, key
	with := func(i int, v string) string {
		p := append([]string(nil), parts...)
		p[i] = v
		return strings.Join(p, "$")
	}
	tests := []struct{ name, hash string }{
		{"Empty", ""},
		{"Plain", "pw"},
		{"Bcrypt", "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy"},
		{"TooFewParts", strings.Join(parts[:5], "$")},
		{"TooManyParts", good + "$extra"},
		{"Argon2i", with(1, "argon2i")},
		{"OldVersion", with(2, "v=16")},
		{"NoVersion", with(2, "x")},
		{"NoParams", with(3, "")},
		{"TimeZero", with(3, "m=64,t=0,p=1")},
		{"ThreadsZero", with(3, "m=64,t=1,p=0")},
		{"ThreadsOverflow", with(3, "m=64,t=1,p=256")},
		{"SaltNotBase64", with(4, "!!!")},
		{"KeyNotBase64", with(5, "!!!")},
		{"KeyEmpty", with(5, "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, err := Verify(tt.hash, "pw")
			if ok {
				t.Fatalf("Verify(%q) matched", tt.hash)
			}
			if !errors.Is(err, errBadHash) {
				t.Fatalf("Verify(%q) error = %v, want errBadHash", tt.hash, err)
			}
		})
	}
}

func TestCheckPassword(t *testing.T) {
	tests := []struct {
		name string
		pw   string
		ok   bool
	}{
		{"TooShort", "1234567", false},
		{"Shortest", "12345678", true},
		{"RunesNotBytes", strings.Repeat("é", 8), true},
		{"Longest", strings.Repeat("a", MaxPasswordLen), true},
		{"TooLong", strings.Repeat("a", MaxPasswordLen+1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckPassword("password", tt.pw)
			if (err == nil) != tt.ok {
				t.Fatalf("CheckPassword = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "password: ") {
				t.Errorf("error %q does not name the field", err)
			}
		})
	}
}

// The decoy a sign-in for an unknown address verifies against must cost
// what a real hash costs (same parameters, same key length) and match no
// password, the empty one included.
func TestDecoy(t *testing.T) {
	genuine, err := cheapHasher.Hash("pw")
	if err != nil {
		t.Fatal(err)
	}
	decoy, err := cheapHasher.Decoy()
	if err != nil {
		t.Fatal(err)
	}
	rp, dp := strings.Split(genuine, "$"), strings.Split(decoy, "$")
	if len(dp) != 6 || dp[1] != rp[1] || dp[2] != rp[2] || dp[3] != rp[3] {
		t.Fatalf("decoy %q does not carry the hasher's parameters like %q", decoy, genuine)
	}
	if len(dp[4]) != len(rp[4]) || len(dp[5]) != len(rp[5]) {
		t.Errorf("decoy salt/key lengths %d/%d, real %d/%d", len(dp[4]), len(dp[5]), len(rp[4]), len(rp[5]))
	}
	for _, pw := range []string{"", "pw", "copydesk-timing-equaliser"} {
		if ok, err := Verify(decoy, pw); err != nil || ok {
			t.Errorf("Verify(decoy, %q) = %v, %v; want false, nil", pw, ok, err)
		}
	}
	if again, _ := cheapHasher.Decoy(); again == decoy {
		t.Error("two decoys are equal")
	}
}
