package main

// The command license holds the vendor tools that make a signing key and issue license keys.

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/copydesk/copydesk/server/auth"
)

func licenseCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "license", Short: "Vendor tools: make a signing key and issue license keys"}

	var out string
	keygen := &cobra.Command{
		Use:     "keygen",
		Short:   "Create an Ed25519 signing key pair for issuing license keys",
		Example: "  copydesk license keygen --out license-signing.pem",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pub, priv, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				return err
			}
			privPEM, pubB64, err := auth.MarshalKeyPair(pub, priv)
			if err != nil {
				return err
			}
			f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return err
			}
			if _, err := f.Write(privPEM); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "private key written to %s (keep it secret)\npublic key: %s\n"+
				"start servers with --license-public-key %s\n", out, pubB64, pubB64)
			return nil
		},
	}
	keygen.Flags().StringVar(&out, "out", "license-signing.pem", "file to write the private key to (must not exist)")

	var keyFile, licensee, plan, id string
	var seats, days int
	var expires string
	issue := &cobra.Command{
		Use:     "issue",
		Short:   "Sign a license key with a private key file",
		Example: "  copydesk license issue --licensee \"Acme Content\" --seats 5 --days 365",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pemBytes, err := os.ReadFile(keyFile)
			if err != nil {
				return err
			}
			priv, err := auth.ParsePrivateKey(pemBytes)
			if err != nil {
				return err
			}
			now := time.Now().UTC()
			p := auth.LicensePayload{ID: id, Licensee: licensee, Plan: plan, Seats: seats, IssuedAt: now}
			if p.ID == "" {
				b := make([]byte, 9)
				if _, err := rand.Read(b); err != nil {
					return err
				}
				p.ID = fmt.Sprintf("lic_%x", b)
			}
			switch {
			case expires != "" && days > 0:
				return errors.New("give --expires or --days, not both")
			case expires != "":
				t, err := time.Parse("2006-01-02", expires)
				if err != nil {
					return fmt.Errorf("--expires: want YYYY-MM-DD: %w", err)
				}
				p.ExpiresAt = &t
			case days > 0:
				t := now.AddDate(0, 0, days)
				p.ExpiresAt = &t
			}
			key, err := auth.SignLicense(priv, p)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), key)
			return nil
		},
	}
	f := issue.Flags()
	f.StringVar(&keyFile, "private-key", "license-signing.pem", "`FILE` holding the PEM private key that copydesk license keygen wrote")
	f.StringVar(&licensee, "licensee", "", "who the license is for (required)")
	f.StringVar(&plan, "plan", "team", "plan name, a lower-case word")
	f.IntVar(&seats, "seats", 1, "number of seats")
	f.StringVar(&expires, "expires", "", "expiry date YYYY-MM-DD (UTC); none: perpetual")
	f.IntVar(&days, "days", 0, "expire this many days from now")
	f.StringVar(&id, "id", "", "license id; default: random")
	_ = issue.MarkFlagRequired("licensee")
	cmd.AddCommand(keygen, issue)
	return cmd
}
