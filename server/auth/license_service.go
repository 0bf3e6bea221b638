package auth

import (
	"context"
	"time"

	"github.com/copydesk/copydesk/store"
)

// LicenseStatus is what GET /api/auth/license shows.
type LicenseStatus struct {
	State       string
	Reason      string // why a stored key is invalid
	Payload     *LicensePayload
	ActivatedAt *time.Time
	SeatsInUse  int
}

// License reports the license state of an account. A stored key is judged
// again on every read, so expiry and a changed public key show up.
func (s *Service) License(ctx context.Context, userID int64) (*LicenseStatus, error) {
	l, err := s.db.LicenseByUser(ctx, userID)
	if store.IsNotFound(err) {
		return &LicenseStatus{State: LicenseInactive}, nil
	}
	if err != nil {
		return nil, err
	}
	st := &LicenseStatus{ActivatedAt: &l.ActivatedAt}
	p, err := ParseLicense(s.cfg.LicensePublicKey, l.Key)
	if err != nil {
		st.State, st.Reason = LicenseInvalid, "the stored key does not verify: "+err.Error()
		return st, nil
	}
	st.Payload, st.State = p, LicenseState(p, s.now())
	if st.SeatsInUse, err = s.db.CountActiveUsers(ctx); err != nil {
		return nil, err
	}
	return st, nil
}

// ActivateLicense verifies a key offline and puts it on the account.
func (s *Service) ActivateLicense(ctx context.Context, userID int64, key string) (*LicenseStatus, error) {
	p, err := ParseLicense(s.cfg.LicensePublicKey, key)
	if err != nil {
		return nil, store.Invalid("license_key: the key is not valid: %s", err.Error())
	}
	if LicenseState(p, s.now()) == LicenseExpired {
		return nil, store.Invalid("license_key: this license expired on %s", p.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if _, err := s.db.ActivateLicense(ctx, userID, p.ID, key); err != nil {
		return nil, err
	}
	return s.License(ctx, userID)
}

// DeactivateLicense frees the account's key so it can be used elsewhere.
func (s *Service) DeactivateLicense(ctx context.Context, userID int64) (*LicenseStatus, error) {
	if _, err := s.db.DeactivateLicense(ctx, userID); err != nil {
		return nil, err
	}
	return &LicenseStatus{State: LicenseInactive}, nil
}
