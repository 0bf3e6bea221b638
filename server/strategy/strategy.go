// Package strategy groups keywords into pillar and cluster pages.
package strategy
