// Package seotest writes keyword exports as the tools write them, for the
// import's tests and benchmarks: Google Keyword Planner (UTF-16 with a
// byte order mark, tabs, two title lines), Ahrefs Keywords Explorer (UTF-8
// with commas, or UTF-16 with tabs) and Semrush Keyword Magic Tool (commas,
// or semicolons with decimal commas).
package seotest

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strings"
	"unicode/utf16"
)

// Row is one keyword of an export, its values as the tool writes them.
type Row struct {
	Keyword    string
	Volume     string // "2400", or Keyword Planner's "1K – 10K"
	Difficulty string
	CPC        string // Ahrefs and Semrush; Keyword Planner writes BidLow and BidHigh
	BidLow     string
	BidHigh    string
	Currency   string // Keyword Planner's per-row currency
	Intents    string // "Commercial, Transactional"
	Parent     string // Ahrefs' parent keyword
}

// GoogleHeader is Keyword Planner's header ("Keyword Stats" export).
var GoogleHeader = []string{"Keyword", "Currency", "Segmentation", "Avg. monthly searches", "Three month change", "YoY change",
	"Competition", "Competition (indexed value)", "Top of page bid (low range)", "Top of page bid (high range)",
	"Ad impression share", "Organic impression share", "Organic average position", "In account?", "In plan?",
	"Searches: Mar 2024", "Searches: Apr 2024", "Searches: May 2024"}

// GoogleKeywordPlanner writes a Keyword Planner export: UTF-16 little
// endian with its byte order mark, tab-separated, the report's name and
// date range as two title lines, then the header and the rows.
func GoogleKeywordPlanner(rows []Row) []byte {
	var b strings.Builder
	b.WriteString("Keyword Stats 2024-06-01 at 09_15_42\r\n")
	b.WriteString("June 1, 2023 - May 31, 2024\r\n")
	b.WriteString(strings.Join(GoogleHeader, "\t") + "\r\n")
	for _, r := range rows {
		cur := r.Currency
		if cur == "" {
			cur = "USD"
		}
		b.WriteString(strings.Join([]string{r.Keyword, cur, "", r.Volume, "0%", "0%", "Low", "12", r.BidLow, r.BidHigh,
			"", "", "", "", "", "1000", "1000", "1000"}, "\t") + "\r\n")
	}
	return UTF16LE(b.String())
}

// AhrefsHeader is Keywords Explorer's header.
var AhrefsHeader = []string{"#", "Keyword", "Country", "Difficulty", "Volume", "CPC", "CPS", "Parent Keyword", "Last Update",
	"SERP Features", "Global volume", "Traffic potential", "Global traffic potential", "First seen", "Intents"}

func ahrefsRecords(rows []Row) [][]string {
	out := [][]string{AhrefsHeader}
	for i, r := range rows {
		out = append(out, []string{fmt.Sprint(i + 1), r.Keyword, "us", r.Difficulty, r.Volume, r.CPC, "1.02", r.Parent,
			"2024-05-28 10:11:12", "Sitelinks, Top stories, Image pack", "312000", "146000", "512000", "2015-09-01", r.Intents})
	}
	return out
}

// AhrefsCSV writes a Keywords Explorer export as UTF-8 with its byte
// order mark, comma-separated.
func AhrefsCSV(rows []Row) []byte {
	return append([]byte("\xEF\xBB\xBF"), records(ahrefsRecords(rows), ',')...)
}

// AhrefsUTF16 writes a Keywords Explorer export "for Excel": UTF-16 with
// its byte order mark, tab-separated.
func AhrefsUTF16(rows []Row) []byte { return UTF16LE(string(records(ahrefsRecords(rows), '\t'))) }

// Semrush writes a Keyword Magic Tool export, UTF-8, separated by sep
// (',' or ';'); with ';' decimals are written with a comma, as that export
// does for the locales that use it. The CPC column is in currency.
func Semrush(rows []Row, sep rune, currency string) []byte {
	recs := [][]string{{"Keyword", "Intent", "Volume", "Trend", "Keyword Difficulty", "CPC (" + currency + ")", "Competitive Density",
		"SERP Features", "Number of Results"}}
	dec := func(s string) string {
		if sep == ';' {
			return strings.ReplaceAll(s, ".", ",")
		}
		return s
	}
	for _, r := range rows {
		recs = append(recs, []string{r.Keyword, r.Intents, r.Volume, dec("0.81,0.81,1.00,0.66,0.54,0.54,0.44,0.44,0.54,0.66,0.81,1.00"),
			r.Difficulty, dec(r.CPC), dec("0.98"), "Sitelinks, Reviews, People also ask", "1230000000"})
	}
	return records(recs, sep)
}

func records(recs [][]string, sep rune) []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Comma, w.UseCRLF = sep, true
	_ = w.WriteAll(recs) // a bytes.Buffer does not fail
	return buf.Bytes()
}

// UTF16LE encodes s as UTF-16 little endian with a byte order mark.
func UTF16LE(s string) []byte { return utf16Bytes(s, false) }

// UTF16BE encodes s as UTF-16 big endian with a byte order mark.
func UTF16BE(s string) []byte { return utf16Bytes(s, true) }

func utf16Bytes(s string, big bool) []byte {
	units := utf16.Encode([]rune("\ufeff" + s))
	out := make([]byte, 0, 2*len(units))
	for _, u := range units {
		if big {
			out = append(out, byte(u>>8), byte(u))
		} else {
			out = append(out, byte(u), byte(u>>8))
		}
	}
	return out
}

// Many makes n distinct rows with realistic values, for benchmarks.
func Many(n int) []Row {
	words := []string{"running", "trail", "shoes", "best", "cheap", "women", "men", "waterproof", "review", "vs", "how", "to", "clean",
		"size", "guide", "sale", "2024", "near", "me", "for", "flat", "feet", "wide", "lightweight"}
	out := make([]Row, n)
	for i := range out {
		var kw []string
		for j, x := 0, i; j < 4; j++ {
			kw = append(kw, words[x%len(words)])
			x /= len(words)
		}
		out[i] = Row{Keyword: fmt.Sprintf("%s %d", strings.Join(kw, " "), i), Volume: fmt.Sprint((i * 7919) % 100000),
			Difficulty: fmt.Sprint(i % 101), CPC: fmt.Sprintf("%d.%02d", i%12, i%100), Intents: []string{"Informational",
				"Commercial, Transactional", "Navigational", ""}[i%4], Parent: kw[0] + " " + kw[2]}
	}
	return out
}
