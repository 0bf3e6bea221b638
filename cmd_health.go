package main

// The command healthcheck asks a running server whether it is healthy.

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// healthCmd asks a running server whether it is healthy: the container
// image's HEALTHCHECK, which has no curl to do it.
func healthCmd() *cobra.Command {
	var addr string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:     "healthcheck",
		Short:   "Ask a running server's /api/health; exit 0 when it answers healthy (for container health checks)",
		Example: "  copydesk healthcheck\n  copydesk healthcheck --http 127.0.0.1:9000 --timeout 2s",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u := healthURL(addr)
			client := &http.Client{Timeout: timeout}
			resp, err := client.Get(u)
			if err != nil {
				return fmt.Errorf("%s: %w", u, err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s: %s %s", u, resp.Status, strings.TrimSpace(string(body)))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "healthy: %s\n", strings.TrimSpace(string(body)))
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "http", "127.0.0.1:8080", "the address serve listens on (COPYDESK_HTTP, as for serve)")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answer")
	return cmd
}

// healthURL is the health address of a server listening on addr: one
// that listens on every interface is asked on loopback.
func healthURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/api/health"
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/api/health"
}
